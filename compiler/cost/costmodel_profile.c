/*
 * costmodel_profile.c - cost models from measurements: the profile
 * database (costmodel_from_profile) and a hw file on top of measured
 * all-fast times (costmodel_from_hw). See profile.h and hwmodel.h.
 *
 * Kernel times from the database, for a configuration c of a kernel:
 *
 *   rule noise     every c: the all-fast time (the kernel does not care
 *                  where its arguments are, within what we can measure)
 *   rule all       the measured time of c, raised to the largest measured
 *                  time of any configuration with fewer arguments in the
 *                  slow tier: moving an argument to the slow tier never
 *                  makes a kernel faster, and a measurement that says so is
 *                  noise the optimizer must not exploit
 *   rule additive  all-fast + the sum over the slow arguments of
 *                  max(0, t(that argument alone slow) - all-fast)
 *
 * Move times from the measured copies of each direction and mode,
 * interpolated linearly in the size between the sizes measured; below
 * the smallest and above the largest, the bandwidth of the nearest size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwmodel.h"
#include "profile.h"
#include "util.h"

/* The times of one kernel signature. */
typedef struct KernelTimes {
	ProfileRule rule;   /* how its configurations were profiled */
	int nargs;          /* arguments */
	double fast;        /* all-fast seconds */
	double *t;          /* rule all: seconds of each configuration (monotone) */
	double *delta;      /* rule additive: penalty of each argument alone in the slow tier */
} KernelTimes;

/* Measured copy times of one direction and mode, by increasing size. */
typedef struct MoveCurve {
	int n;              /* sizes measured */
	int64_t *bytes;     /* the sizes */
	double *seconds;    /* their times (non-decreasing) */
} MoveCurve;

typedef struct ProfileModel {
	KernelTimes **of_node;  /* node id -> its kernel's times */
	int nnodes;             /* entries in of_node */
	MoveCurve move[2][2];   /* [to slow][async] */
} ProfileModel;

static const KernelTimes *times_of(const ProfileModel *pm, const Node *n)
{
	if (n->id < 0 || n->id >= pm->nnodes || !pm->of_node[n->id])
		ICE("node %s (%d) has no kernel profile: it is not in the schedule the cost model was made for", n->name,
		    n->id);
	return pm->of_node[n->id];
}

static double profile_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	const KernelTimes *kt = times_of(cm->data, n);
	slow &= (uint32_t)((UINT64_C(1) << kt->nargs) - 1);
	switch (kt->rule) {
	case RULE_NOISE:
		return kt->fast;
	case RULE_ALL:
		return kt->t[slow];
	case RULE_ADDITIVE: {
		double t = kt->fast;
		for (int i = 0; i < kt->nargs; i++)
			if (slow >> i & 1)
				t += kt->delta[i];
		return t;
	}
	case RULE_UNDECIDED:
		break;
	}
	unreachable();
}

/* Seconds to copy `bytes` by a measured curve. */
static double curve_time(const MoveCurve *c, int64_t bytes)
{
	if (bytes <= c->bytes[0])
		return c->seconds[0] * (double)bytes / (double)c->bytes[0];
	for (int i = 1; i < c->n; i++)
		if (bytes <= c->bytes[i]) {
			double f = (double)(bytes - c->bytes[i - 1]) / (double)(c->bytes[i] - c->bytes[i - 1]);
			return c->seconds[i - 1] + f * (c->seconds[i] - c->seconds[i - 1]);
		}
	return c->seconds[c->n - 1] * (double)bytes / (double)c->bytes[c->n - 1];
}

static double profile_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	const ProfileModel *pm = cm->data;
	if (bytes <= 0 || from == to)
		return 0;
	return curve_time(&pm->move[to == TIER_SLOW][async], bytes);
}

/* The monotone envelope: t[c] = max over the subsets of c. */
static void make_monotone(double *t, int nargs)
{
	uint32_t n = UINT32_C(1) << nargs;
	for (uint32_t c = 1; c < n; c++)
		for (int i = 0; i < nargs; i++)
			if (c >> i & 1)
				t[c] = fmax(t[c], t[c & ~(UINT32_C(1) << i)]);
}

/* The times of a complete signature; NULL if a measurement it needs is missing. */
static KernelTimes *kernel_times(const ProfileSig *sig, Arena *a)
{
	const ProfileMeas *fast = profile_sig_meas(sig, 0);
	if (!sig->complete || !fast)
		return NULL;
	KernelTimes *kt = arena_alloc(a, sizeof *kt);
	kt->rule = sig->rule;
	kt->nargs = sig->nargs;
	kt->fast = fast->seconds;
	if (sig->rule == RULE_ALL) {
		uint32_t n = UINT32_C(1) << sig->nargs;
		kt->t = arena_array(a, n, sizeof *kt->t);
		for (uint32_t c = 0; c < n; c++) {
			const ProfileMeas *m = profile_sig_meas(sig, c);
			if (!m)
				return NULL;
			kt->t[c] = m->seconds;
		}
		make_monotone(kt->t, sig->nargs);
	} else if (sig->rule == RULE_ADDITIVE) {
		kt->delta = arena_array(a, (size_t)sig->nargs, sizeof *kt->delta);
		for (int i = 0; i < sig->nargs; i++) {
			const ProfileMeas *m = profile_sig_meas(sig, UINT32_C(1) << i);
			if (!m)
				return NULL;
			kt->delta[i] = fmax(0, m->seconds - kt->fast);
		}
	} else if (sig->rule != RULE_NOISE) {
		return NULL;
	}
	return kt;
}

/* node id -> the scratch of its kernel's signature (0 for nodes outside the schedule). */
static int64_t *node_scratch(const Graph *g, const ProfileSigs *sigs, Arena *a)
{
	int64_t *sc = arena_array(a, (size_t)g->nodes.n + 1, sizeof *sc);
	for (int i = 0; i < g->nodes.n; i++)
		if (sigs->of_node[i] >= 0)
			sc[i] = sigs->v[sigs->of_node[i]]->scratch;
	return sc;
}

/* The curve of one direction and mode; false if nothing was measured. */
static bool make_curve(const ProfileMoves *mv, bool to_slow, bool async, MoveCurve *c, Arena *a)
{
	c->bytes = arena_array(a, (size_t)mv->n + 1, sizeof *c->bytes);
	c->seconds = arena_array(a, (size_t)mv->n + 1, sizeof *c->seconds);
	for (int i = 0; i < mv->n; i++) {
		const ProfileMove *m = &mv->v[i];
		if (m->to_slow != to_slow || m->async != async)
			continue;
		int j = c->n++; /* insertion by size */
		while (j > 0 && c->bytes[j - 1] > m->bytes) {
			c->bytes[j] = c->bytes[j - 1];
			c->seconds[j] = c->seconds[j - 1];
			j--;
		}
		c->bytes[j] = m->bytes;
		c->seconds[j] = m->seconds;
	}
	for (int i = 1; i < c->n; i++)
		c->seconds[i] = fmax(c->seconds[i], c->seconds[i - 1]);
	return c->n > 0;
}

/* "run autotmc profile MODEL --threads N ..." for messages. */
static const char *profile_command(const ProfileOptions *o, bool fast_only, Arena *a)
{
	return arena_printf(a, "autotmc profile %s --threads %d%s%s%s", o->model ? o->model : "MODEL", o->threads,
	                    o->db && strcmp(o->db, profile_default_db(a)) != 0 ? arena_printf(a, " --profile-db %s", o->db) : "",
	                    o->slow_dir ? arena_printf(a, " --slow-dir %s", o->slow_dir) : "",
	                    fast_only ? " --fast-only" : "");
}

/* Open the database and load the step's signatures and the moves. */
static bool load(const Graph *g, const Schedule *s, const ProfileOptions *in, ProfileOptions *o,
                 ProfileMachine *mach, ProfileSigs **sigs, ProfileMoves *mv, Arena *a, char *err, size_t errlen)
{
	profile_resolve(in, o, a);
	profile_machine(o, mach);
	ProfileKey key = {mach->key, PROFILE_BACKEND, o->threads};
	*sigs = profile_signatures(g, s, a);
	if (access(o->db, F_OK) != 0) {
		snprintf(err, errlen, "no profile database at %s: run %s", o->db, profile_command(o, mv == NULL, a));
		return false;
	}
	ProfileDb *db = pdb_open(o->db, false, err, errlen);
	bool ok = db && pdb_load_kernels(db, &key, *sigs, a, err, errlen) &&
	          (!mv || pdb_load_moves(db, &key, mv, a, err, errlen));
	pdb_close(db);
	return ok;
}

CostModel *costmodel_from_profile(const Graph *g, const Schedule *s, const ProfileOptions *in, Arena *a, char *err,
                                  size_t errlen)
{
	ProfileOptions o;
	ProfileMachine mach;
	ProfileSigs *sigs;
	ProfileMoves mv = {0};
	if (!load(g, s, in, &o, &mach, &sigs, &mv, a, err, errlen))
		return NULL;
	ProfileModel *pm = arena_alloc(a, sizeof *pm);
	pm->nnodes = g->nodes.n;
	pm->of_node = arena_array(a, (size_t)g->nodes.n + 1, sizeof *pm->of_node);
	KernelTimes **by_sig = arena_array(a, (size_t)sigs->n + 1, sizeof *by_sig);
	int missing = 0;
	const ProfileSig *example = NULL;
	for (int i = 0; i < sigs->n; i++) {
		by_sig[i] = sigs->v[i]->scratch >= 0 ? kernel_times(sigs->v[i], a) : NULL;
		if (!by_sig[i] && missing++ == 0)
			example = sigs->v[i];
	}
	if (missing) {
		snprintf(err, errlen,
		         "the profile database %s lacks %d of the %d kernels of this model on this machine (%s; cpu backend, "
		         "%d threads), %s %s among them; run: %s",
		         o.db, missing, sigs->n, mach.key, o.threads, op_info[example->first->op].name, example->first->name,
		         profile_command(&o, false, a));
		return NULL;
	}
	for (int i = 0; i < g->nodes.n; i++)
		if (sigs->of_node[i] >= 0)
			pm->of_node[i] = by_sig[sigs->of_node[i]];
	for (int to_slow = 0; to_slow < 2; to_slow++)
		for (int async = 0; async < 2; async++)
			if (!make_curve(&mv, to_slow, async, &pm->move[to_slow][async], a)) {
				snprintf(err, errlen,
				         "the profile database %s has no move times for this machine (%s; cpu backend, %d threads); "
				         "run: %s",
				         o.db, mach.key, o.threads, profile_command(&o, false, a));
				return NULL;
			}
	CostModel *cm = arena_alloc(a, sizeof *cm);
	cm->source = arena_printf(a, "profile: %s", o.db);
	cm->modeled = false;
	cm->kernel_time = profile_kernel_time;
	cm->move_time = profile_move_time;
	cm->scratch = node_scratch(g, sigs, a);
	cm->data = pm;
	return cm;
}

double *profile_fast_times(const Graph *g, const Schedule *s, const ProfileOptions *in, int64_t **scratch, Arena *a,
                           char *err, size_t errlen)
{
	ProfileOptions o;
	ProfileMachine mach;
	ProfileSigs *sigs;
	if (!load(g, s, in, &o, &mach, &sigs, NULL, a, err, errlen))
		return NULL;
	double *t = arena_array(a, (size_t)g->nodes.n + 1, sizeof *t);
	int missing = 0;
	const ProfileSig *example = NULL;
	for (int i = 0; i < sigs->n; i++)
		if ((!profile_sig_meas(sigs->v[i], 0) || sigs->v[i]->scratch < 0) && missing++ == 0)
			example = sigs->v[i];
	if (missing) {
		snprintf(err, errlen,
		         "the profile database %s has no all-fast time of %d of the %d kernels of this model on this "
		         "machine (%s; cpu backend, %d threads), %s %s among them; run: %s",
		         o.db, missing, sigs->n, mach.key, o.threads, op_info[example->first->op].name, example->first->name,
		         profile_command(&o, true, a));
		return NULL;
	}
	for (int i = 0; i < g->nodes.n; i++)
		if (sigs->of_node[i] >= 0)
			t[i] = profile_sig_meas(sigs->v[sigs->of_node[i]], 0)->seconds;
	*scratch = node_scratch(g, sigs, a);
	return t;
}

/* ---- a hw file over measured all-fast times ---------------------------------------- */

typedef struct HwData {
	HwModel hw;             /* the description */
	const double *fast;     /* node id -> measured all-fast seconds */
} HwData;

/* Extra seconds per byte in the slow tier instead of the fast one (never negative). */
static double extra(double slow_bw, double fast_bw)
{
	return fmax(0, 1 / slow_bw - 1 / fast_bw);
}

static double hw_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	const HwData *d = cm->data;
	const HwModel *hw = &d->hw;
	double t = d->fast[n->id];
	for (int k = 0; k < n->nin + n->nout; k++) {
		if (!(slow >> k & 1))
			continue;
		const Tensor *x = k < n->nin ? n->in[k] : n->out[k - n->nin];
		bool read = k < n->nin, written = k >= n->nin || (op_info[n->op].inplace >> k & 1);
		if (read)
			t += (double)x->bytes * extra(hw->slow.read_bw, hw->fast.read_bw);
		if (written)
			t += (double)x->bytes * extra(hw->slow.write_bw, hw->fast.write_bw);
	}
	return t;
}

static double hw_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	const HwModel *hw = &((const HwData *)cm->data)->hw;
	if (bytes <= 0 || from == to)
		return 0;
	const HwTier *src = from == TIER_FAST ? &hw->fast : &hw->slow, *dst = to == TIER_FAST ? &hw->fast : &hw->slow;
	double bw = fmin(src->read_bw, dst->write_bw);
	double link = to == TIER_SLOW ? hw->to_slow_bw : hw->to_fast_bw;
	if (link > 0)
		bw = fmin(bw, link);
	if (async)
		bw *= hw->async_fraction;
	return (double)bytes / bw + hw->slow.latency + hw->link_latency;
}

CostModel *costmodel_from_hw(const HwModel *hw, const Graph *g, const double *fast_seconds, Arena *a)
{
	(void)g;
	HwData *d = arena_alloc(a, sizeof *d);
	d->hw = *hw;
	d->fast = fast_seconds;
	const char *slash = strrchr(hw->path, '/');
	CostModel *cm = arena_alloc(a, sizeof *cm);
	cm->source = arena_printf(a, "modeled: hw/%s", slash ? slash + 1 : hw->path);
	cm->modeled = true;
	cm->kernel_time = hw_kernel_time;
	cm->move_time = hw_move_time;
	cm->data = d;
	return cm;
}
