/*
 * test-ilp.c - the placement ILP against brute force, on tiny training graphs.
 *
 * Each case is a small .net program, elaborated from memory, trained
 * (autodiff) and scheduled, with the roofline cost model (slow reads 3x
 * and slow writes 6x slower than fast; compute comparable with memory, so
 * that some kernels are not separable and get configuration binaries), or
 * a variant in which kernels read every input 4 times, so that moves pay
 * off and the optima move tensors. For several fast-tier limits:
 *
 *   - static and sync: the optimum of the ILP, with CBC and with lp_solve,
 *     equals the best of a brute-force search over every placement the
 *     formulation can express (static: every tier for every tensor;
 *     sync: every path of every tensor's flow network, built here into
 *     residencies and moves without the ILP's code), each evaluated by
 *     placement_predict() and memplan_fast_peak() <= limit;
 *   - the placement the ILP returns passes placement_verify and
 *     memplan_verify, its predicted time equals the ILP's objective, and
 *     its live fast bytes stay within the limit; place()'s packed
 *     fast pool fits the limit;
 *   - async is no slower than sync, sync no slower than static;
 *   - an infeasible limit names the smallest feasible one, which is then
 *     feasible; the baselines verify and fit;
 *   - recompute: the optimum equals a brute force over every placement
 *     its rules allow (a tensor stays in one tier, or is dropped after a
 *     point and made again at a later point where a chain exists, the
 *     chain finding its inputs ready: placement_verify), and on the very
 *     slow tier it beats static; auto is no slower than async and than
 *     recompute, nor than itself with moves of one kernel (AutoTM's), and
 *     beats that at some limit; the chunks of every asynchronous move tile
 *     its bytes;
 *   - with kernels_fast (a GPU: kernels read and write fast memory only,
 *     moves of the two directions overlap each other) sync's optimum
 *     equals the brute force over the placements whose
 *     kernels find every argument fast, every argument of the placement
 *     returned is fast at its kernel, async is no slower, and a limit
 *     below the stated lower bound is refused; a limit above it that the
 *     solver proves infeasible for recompute says so, and --ratio there
 *     places at a larger limit that works;
 *   - a solve with a deadline (MipOptions.deadline) gives what it gives
 *     without one when it finishes in time, and one that cannot finish
 *     is stopped there with the bound CBC's log reported, or at its
 *     later deadline where its log reported a better solution.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "costmodel.h"
#include "elaborate.h"
#include "memplan.h"
#include "place.h"
#include "predict.h"
#include "recompute.h"
#include "report.h"
#include "schedule.h"
#include "solver.h"
#include "util.h"
#include "tests/testlib.h"

typedef struct Case {
	const char *name;   /* what it is */
	const char *layers; /* the network's chain */
	const char *input;  /* input dims after the batch */
	int classes;        /* labels [batch, classes] */
	const char *opt;    /* optimizer */
	int64_t tiny;       /* PlaceOptions.tiny: tensors up to this get one decision point (-1: none) */
	bool sync_brute;    /* brute-force the sync optimum too (small path products only) */
	int rereads;        /* cost model: 1: kernels read each input 4 times (moves pay off); 2: and the slow tier
	                       is 100 times slower (recomputing pays off) */
	const int64_t *limits; /* limits to try, 0-terminated; NULL: fractions of the peak */
} Case;

/* limits where the optimum moves tensors (sync and async beat static) */
static const int64_t moving_limits[] = {9600, 9088, 8576, 5504, 4480, 1408, 960, 0};
static const int64_t momentum_limits[] = {7104, 3136, 704, 0};

static const Case cases[] = {
	{"dense", "dense(64 => 16)", "64", 16, "sgd(lr = 0.1)", -1, true, false, NULL},
	{"dense with momentum", "dense(32 => 16)", "32", 16, "sgd(lr = 0.1, momentum = 0.9)", 200, true, false,
	 momentum_limits},
	{"two layers", "dense(32 => 16, relu) dense(16 => 8)", "32", 8, "sgd(lr = 0.1)", 100000, false, false, NULL},
	{"dense, kernels re-reading inputs", "dense(64 => 16)", "64", 16, "sgd(lr = 0.1)", -1, true, true,
	 moving_limits},
	{"two layers, kernels re-reading inputs", "dense(16 => 64, relu) dense(64 => 8)", "16", 8, "sgd(lr = 0.1)",
	 -1, false, true, NULL},
	/* activations far larger than the weights, as on a GPU at large batch: kernels_fast has room below the peak */
	{"activations, kernels re-reading inputs", "tanh tanh tanh dense(256 => 2)", "256", 2, "sgd(lr = 0.1)", -1, false,
	 true, NULL},
	/* recomputing a tanh costs less than reading a very slow tier: the recompute optima drop and recompute */
	{"activations, a very slow tier", "dense(64 => 64) tanh tanh dense(64 => 2)", "64", 2, "sgd(lr = 0.1)", -1, false,
	 2, NULL},
};

/*
 * A cost model in which moves pay off, as they do on Optane, where
 * kernels run far slower from the slow tier than a copy costs: the
 * roofline with every input read 4 times (a kernel without cache
 * blocking), so that reading a tensor back before its user beats leaving
 * it slow.
 */
static double reread_kernel(const CostModel *cm, const Node *n, uint32_t slow)
{
	const Roofline *r = cm->data;
	double mem = 0;
	for (int k = 0; k < n->nin + n->nout; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		bool s = slow >> k & 1;
		if (k < n->nin)
			mem += 4.0 * (double)t->bytes / (s ? r->slow_read : r->fast_read);
		if (k >= n->nin || (op_info[n->op].inplace >> k & 1))
			mem += (double)t->bytes / (s ? r->slow_write : r->fast_write);
	}
	double compute = (double)node_flops(n) / r->flop_rate;
	return compute > mem ? compute : mem;
}

static Graph *build(Arena *a, const Case *c)
{
	char src[1024], input[64], labels[32], opt[128];
	snprintf(input, sizeof input, "4, %s", c->input);
	snprintf(labels, sizeof labels, "%d", c->classes);
	snprintf(opt, sizeof opt, "optimizer = %s", c->opt);
	return test_training_graph(a, c->name, test_chain_source(src, sizeof src, c->layers, input, labels, opt), false);
}

/* ------------------------------------------------------- brute force */

enum { MAXP = 12 };
enum { ST_F, ST_C, ST_S, ST_G };       /* fast (no slow copy), fast with a slow copy, slow, gone (dropped) */
enum { KEEP, WRITE, WRITE_READ, DROP, DROP_READ, READ, /* how a path goes from one point to the next */
       DISCARD, DISCARD_RECOMP, RECOMP };               /* recompute: dropped, made again at the point */

typedef struct Path {
	int state[MAXP]; /* state at each decision point (for its kernel) */
	int how[MAXP];   /* how[j]: the way from point j-1 to j */
} Path;

typedef struct Paths {
	int npts;        /* decision points */
	int step[MAXP];  /* their steps */
	bool recomp[MAXP]; /* recompute: a chain makes the value again at the point */
	bool user[MAXP];   /* the point's kernel uses the tensor */
	Path *v;         /* every path */
	int n, cap;
} Paths;

static bool overwrites(const Node *n, const Tensor *t)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] == t && (op_info[n->op].inplace >> k & 1))
			return true;
	return false;
}

static void push_path(Paths *ps, const Path *p)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 16;
		ps->v = xrealloc(ps->v, sizeof(Path) * (size_t)ps->cap);
	}
	ps->v[ps->n++] = *p;
}

/*
 * The formulation's rules, restated: a tensor starts fast or slow (the
 * loss only fast); a fast copy without a slow one may be written to slow
 * once (never weights or optimizer state), then read back any number of
 * times; a fast copy with a slow one may be dropped; no fast copy with a
 * slow one at the first point or at a kernel that overwrites the tensor.
 * Offloaded weights and state: the kernel that overwrites one may update
 * a fast copy of its slow home (dirty[j]: the copy is then the only
 * valid one), which is written back to the home after it (write_ok[j]:
 * from point j to j + 1); the step ends in the tier it began in.
 */
static void paths_from(Paths *ps, Path *p, int j, const bool *copy_ok, const bool *write_ok, const bool *dirty)
{
	if (j == ps->npts) {
		push_path(ps, p);
		return;
	}
	int prev = p->state[j - 1];
	static const int to[] = {[KEEP] = -1, [WRITE] = ST_S, [WRITE_READ] = ST_C, [DROP] = ST_S,
	                         [DROP_READ] = ST_C, [READ] = ST_C};
	for (int how = KEEP; how <= READ; how++) {
		int st = how == KEEP ? prev : to[how];
		if ((how == WRITE || how == WRITE_READ) && (prev != ST_F || !write_ok[j - 1]))
			continue;
		if ((how == DROP || how == DROP_READ) && prev != ST_C)
			continue;
		if (how == READ && prev != ST_S)
			continue;
		if (st == ST_C && !copy_ok[j])
			continue;
		p->state[j] = st == ST_C && dirty[j] ? ST_F : st;
		p->how[j] = how;
		paths_from(ps, p, j + 1, copy_ok, write_ok, dirty);
	}
}

/*
 * recompute's rules, restated: no moves; a tensor starts fast or slow and
 * stays there, except that a fast one that may be dropped (an activation
 * with a chain) may be freed after a point and made again at a later
 * point where a chain exists; a dropped tensor must be made again before
 * a kernel that uses it.
 */
static void recompute_paths_from(Paths *ps, Path *p, int j)
{
	if (j == ps->npts) {
		push_path(ps, p);
		return;
	}
	int prev = p->state[j - 1];
	for (int how = KEEP; how <= RECOMP; how++) {
		int st;
		if (how == KEEP)
			st = prev;
		else if (how == DISCARD && prev == ST_F)
			st = ST_G;
		else if ((how == DISCARD_RECOMP && prev == ST_F) || (how == RECOMP && prev == ST_G))
			st = ST_F;
		else
			continue;
		if ((how == DISCARD_RECOMP || how == RECOMP) && !ps->recomp[j])
			continue;
		if (st == ST_G && ps->user[j])
			continue;
		p->state[j] = st;
		p->how[j] = how;
		recompute_paths_from(ps, p, j + 1);
	}
}

/* The kernel n reads or writes t. */
static bool uses(const Node *n, const Tensor *t)
{
	for (int k = 0; k < n->nin + n->nout; k++)
		if ((k < n->nin ? n->in[k] : n->out[k - n->nin]) == t)
			return true;
	return false;
}

/* Every path of t's flow network; kernels_fast: only those in which t is fast at every kernel using it. */
static bool droppable(const Graph *g, const Tensor *t, int64_t tiny)
{
	return recompute_candidate(t) && t != g->loss && !(tiny > 0 && t->bytes <= tiny);
}

static void add_point(Paths *ps, int step)
{
	int i = 0;
	while (i < ps->npts && ps->step[i] != step)
		i++;
	if (i == ps->npts && ps->npts < MAXP)
		ps->step[ps->npts++] = step;
}

/*
 * The extra decision points of recompute (one level): the steps before a
 * user of a droppable consumer where the consumer's chain reads t, if a
 * chain for t exists there too.
 */
static void support_points(const Graph *g, const Schedule *s, const Tensor *t, int64_t tiny, Paths *ps, Arena *a)
{
	Chain c;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *y = g->tensors.v[i];
		if (!droppable(g, y, tiny) || !droppable(g, t, tiny))
			continue;
		for (int u = 0; u < y->users.n; u++) {
			int step = s->pos[y->users.v[u]->id];
			if (!recompute_chain(s, y, step, &c, a))
				continue;
			for (int l = 0; l < c.nleaves; l++)
				if (c.leaf[l] == t && recompute_chain(s, t, step, &c, a)) {
					add_point(ps, step);
					break;
				}
		}
	}
}

/* The step of the kernel that overwrites t, or -1 if none does or it is the last (then t is not offloaded). */
static int update_at(const Schedule *s, const Tensor *t)
{
	int at = -1;
	for (int u = 0; u < t->users.n; u++)
		if (overwrites(t->users.v[u], t))
			at = s->pos[t->users.v[u]->id];
	return at == s->n - 1 ? -1 : at;
}

/* tiny_pinned: tiny for activations and gradients (place_ilp.c's single_point); offload: weights and state may
   be updated in fast copies of slow homes */
static Paths tensor_paths_of(const Graph *g, const Schedule *s, const Tensor *t, bool is_static, int64_t tiny,
                             int64_t tiny_pinned, bool kernels_fast, bool recompute, bool offload)
{
	Paths ps = {0};
	Interval iv = s->live[t->id];
	ps.step[ps.npts++] = iv.first;
	Arena ca = {0};
	if (recompute)
		support_points(g, s, t, tiny, &ps, &ca);
	bool persistent = tensor_persists(t);
	bool single = is_static || (tiny > 0 && t->bytes <= (persistent ? tiny : tiny_pinned));
	int updated = offload && persistent && !single && !recompute ? update_at(s, t) : -1;
	if (updated >= 0)
		ps.step[ps.npts++] = iv.last; /* the end: written back by then */
	for (int u = 0; u < t->users.n && !single; u++) {
		int step = s->pos[t->users.v[u]->id];
		int i = 0;
		while (i < ps.npts && ps.step[i] != step)
			i++;
		if (i == ps.npts && ps.npts < MAXP)
			ps.step[ps.npts++] = step;
	}
	for (int i = 1; i < ps.npts; i++) /* sort */
		for (int k = i; k > 0 && ps.step[k - 1] > ps.step[k]; k--) {
			int x = ps.step[k];
			ps.step[k] = ps.step[k - 1];
			ps.step[k - 1] = x;
		}
	for (int j = 0; j < ps.npts; j++)
		ps.user[j] = uses(s->order[ps.step[j]], t);
	if (recompute) { /* which points may make t again: those after the first where a chain exists */
		Chain c;
		bool drop = droppable(g, t, tiny) && !single;
		for (int j = 1; j < ps.npts && drop; j++)
			ps.recomp[j] = recompute_chain(s, t, ps.step[j], &c, &ca);
	}
	arena_free(&ca);
	bool forced = t == g->loss;
	bool copy_ok[MAXP], write_ok[MAXP], dirty[MAXP];
	for (int j = 0; j < ps.npts; j++) {
		bool ow = overwrites(s->order[ps.step[j]], t);
		copy_ok[j] = j > 0 && !forced && (!ow || updated >= 0) && !(updated >= 0 && ps.step[j] == iv.last);
		dirty[j] = ow && updated >= 0;
		write_ok[j] = !forced && (!persistent || (updated >= 0 && ps.step[j] >= updated));
	}
	Path p = {0};
	for (int st = ST_F; st <= ST_S; st += 2) {
		if (forced && st == ST_S)
			continue;
		p.state[0] = st;
		if (recompute)
			recompute_paths_from(&ps, &p, 1);
		else
			paths_from(&ps, &p, 1, copy_ok, write_ok, dirty);
	}
	int kept = 0;
	for (int i = 0; i < ps.n; i++) {
		bool ok = true;
		for (int u = -1; kernels_fast && u < t->users.n; u++) { /* fast at every kernel making or using it */
			if (u < 0 && !t->producer)
				continue;
			int step = s->pos[(u < 0 ? t->producer : t->users.v[u])->id], j = ps.npts - 1;
			while (j > 0 && ps.step[j] > step)
				j--;
			ok &= ps.v[i].state[j] != ST_S;
		}
		if (updated >= 0) /* the step ends in the home's tier */
			ok &= (ps.v[i].state[0] == ST_F) == (ps.v[i].state[ps.npts - 1] == ST_F);
		if (ok)
			ps.v[kept++] = ps.v[i];
	}
	ps.n = kept;
	return ps;
}

static Paths tensor_paths(const Graph *g, const Schedule *s, const Tensor *t, bool is_static, int64_t tiny,
                          bool kernels_fast, bool offload)
{
	/* kernels_fast: the paths at the smallest limits, where no activation or gradient is tiny */
	return tensor_paths_of(g, s, t, is_static, tiny, kernels_fast ? 0 : tiny, kernels_fast, false, offload);
}

/* The residencies, moves and recomputes of one path per tensor. */
static Placement *realize(const Graph *g, const Schedule *s, const Paths *tp, const int *choice, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_SYNC); /* a brute-force placement, made as sync makes them */
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		const Paths *ps = &tp[i];
		const Path *path = &ps->v[choice[i]];
		int first = s->live[i].first, last = s->live[i].last;
		Residency *F = NULL, *S = NULL, *home = NULL;
		if (path->state[0] == ST_F)
			F = placement_add(p, a, t, TIER_FAST, first, last);
		else
			S = placement_add(p, a, t, TIER_SLOW, first, last);
		if (tensor_persists(t))
			home = S; /* an offloaded tensor is written back where the step began */
		for (int j = 1; j < ps->npts; j++) {
			int prev = ps->step[j - 1], cur = ps->step[j];
			switch (path->how[j]) {
			case KEEP:
				break;
			case WRITE:
			case WRITE_READ:
				F->last = prev;
				S = home ? home : placement_add(p, a, t, TIER_SLOW, prev + 1, last);
				placement_move(p, a, F, S, prev + 1);
				F = NULL;
				break;
			case DROP:
			case DROP_READ:
			case DISCARD:
			case DISCARD_RECOMP:
				F->last = prev;
				F = NULL;
				break;
			}
			if (path->how[j] == DISCARD_RECOMP || path->how[j] == RECOMP) {
				F = placement_add(p, a, t, TIER_FAST, cur, last);
				placement_recompute(p, a, t, cur, F);
			}
			if (path->how[j] == WRITE_READ || path->how[j] == DROP_READ || path->how[j] == READ) {
				F = placement_add(p, a, t, TIER_FAST, cur, last);
				placement_move(p, a, S, F, cur);
			}
		}
	}
	placement_finish(p);
	return p;
}

/* Every argument of every kernel is in the fast tier at that kernel. */
static bool args_fast(const Graph *g, const Schedule *s, const Placement *p)
{
	(void)g;
	for (int st = 0; st < s->n; st++) {
		const Node *n = s->order[st];
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Residency *r = placement_at(p, k < n->nin ? n->in[k] : n->out[k - n->nin], st);
			if (!r || r->tier != TIER_FAST)
				return false;
		}
	}
	return true;
}

typedef struct Best {
	double time;   /* best predicted step time, INFINITY if none fits */
	long tried;    /* placements evaluated */
	long fitting;  /* of which within the limit */
} Best;

static Best brute_force_of(const Graph *g, const Schedule *s, const CostModel *cm, bool is_static, int64_t tiny,
                           int64_t limit, bool kernels_fast, bool recompute, bool offload)
{
	int nt = g->tensors.n;
	Paths *tp = xcalloc((size_t)nt, sizeof(Paths));
	int *choice = xcalloc((size_t)nt, sizeof(int));
	int64_t pinned = place_tiny_pinned(tiny, limit, kernels_fast);
	for (int i = 0; i < nt; i++)
		tp[i] = tensor_paths_of(g, s, g->tensors.v[i], is_static, tiny, pinned, kernels_fast, recompute, offload);
	Best b = {INFINITY, 0, 0};
	char err[256];
	Arena a = {0};
	for (;;) {
		Placement *p = realize(g, s, tp, choice, &a);
		b.tried++;
		/* a recompute whose chain finds an input not ready is no placement */
		if ((!recompute || placement_verify(g, p, err, sizeof err)) && memplan_fast_peak(p, &a) <= limit) {
			b.fitting++;
			double t = placement_predict(p, cm, NULL);
			if (t < b.time)
				b.time = t;
		}
		if (b.tried % 512 == 0) {
			arena_free(&a);
			a = (Arena){0};
		}
		int i = 0; /* next combination */
		while (i < nt && ++choice[i] == tp[i].n)
			choice[i++] = 0;
		if (i == nt)
			break;
	}
	arena_free(&a);
	for (int i = 0; i < nt; i++)
		free(tp[i].v);
	free(tp);
	free(choice);
	return b;
}

static Best brute_force(const Graph *g, const Schedule *s, const CostModel *cm, bool is_static, int64_t tiny,
                        int64_t limit, bool kernels_fast, bool offload)
{
	return brute_force_of(g, s, cm, is_static, tiny, limit, kernels_fast, false, offload);
}

static double recompute_combinations(const Graph *g, const Schedule *s, int64_t tiny)
{
	double n = 1;
	for (int i = 0; i < g->tensors.n; i++) {
		Paths ps = tensor_paths_of(g, s, g->tensors.v[i], false, tiny, tiny, false, true, false);
		n *= ps.n;
		free(ps.v);
	}
	return n;
}

static double combinations(const Graph *g, const Schedule *s, bool is_static, int64_t tiny, bool kernels_fast,
                           bool offload)
{
	double n = 1;
	for (int i = 0; i < g->tensors.n; i++) {
		Paths ps = tensor_paths(g, s, g->tensors.v[i], is_static, tiny, kernels_fast, offload);
		n *= ps.n;
		free(ps.v);
	}
	return n;
}

/* ------------------------------------------------------------- checks */

static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b)) + 1e-12;
}

/* The optimizer of that name (this test names them as the command line does). */
static OptimizerId opt_id(const char *name)
{
	OptimizerId o;
	if (!optimizer_find(name, &o))
		ICE("no optimizer %s", name);
	return o;
}

/* Solve, and check what every solution must satisfy; returns the objective (NAN on failure). */
static int spanning_moves; /* moves of auto's placements that span more than one kernel */

/* The chunks of every asynchronous move, one per kernel it overlaps, tile its bytes in order. */
static void check_chunks(const Case *c, const Placement *p)
{
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		if (!m->async)
			continue;
		int64_t next = 0, off, len;
		for (int k = m->start; k < (m->share ? m->at : m->start + 1); k++)
			if (move_chunk(m, k, &off, &len)) {
				test_expect(off == next && len > 0, "%s: a chunk of %s before step %d at %" PRId64 ", not %" PRId64,
				            c->name, m->t->name, k, off, next);
				next = off + len;
			}
		test_expect(next == m->t->bytes, "%s: the chunks of %s copy %" PRId64 " of %" PRId64 " bytes", c->name,
		            m->t->name, next, m->t->bytes);
		if (m->share && m->at > m->start + 1)
			spanning_moves++;
	}
}

static double solve_and_check(const Graph *g, const Schedule *s, const CostModel *cm, const Case *c,
                              const char *optimizer, const char *solver, int64_t limit, bool prove, Arena *a)
{
	/*
	 * prove: exhaustive search, optimal required, and no repair of a
	 * solution that does not pack (whether one is repaired depends on how
	 * long its solve took, so on the machine's load: a loaded machine's
	 * repaired plan is no optimum); else the default gap and 1 s;
	 * "auto-1": spans of one
	 */
	bool one = !strcmp(optimizer, "auto-1");
	PlaceOptions o = {.optimizer = opt_id(one ? "auto" : optimizer), .limit = limit, .cm = cm, .solver = solver,
	                  .time_limit = prove ? 20 : 1, .tiny = c->tiny, .gap = prove ? -1 : 0, .span = one ? -1 : 0,
	                  .repair = prove ? -1 : 0};
	PlaceStats st;
	char err[512];
	Placement *p = place_ilp(g, s, &o, a, &st, err, sizeof err);
	test_expect(p, "%s %s/%s limit %" PRId64 ": %s", c->name, optimizer, solver, limit, err);
	if (!p)
		return NAN;
	test_expect(!prove || !strcmp(st.status, "optimal"), "%s %s/%s limit %" PRId64 ": status %s", c->name,
	            optimizer, solver, limit, st.status);
	test_expect(st.bound <= st.objective * (1 + 1e-9) && st.gap >= 0, "%s: bound %g above objective %g", c->name,
	            st.bound, st.objective);
	test_expect(placement_verify(g, p, err, sizeof err), "%s %s/%s: placement_verify: %s", c->name, optimizer,
	            solver, err);
	check_chunks(c, p);
	memplan(p, a);
	test_expect(memplan_verify(p, a, err, sizeof err), "%s %s/%s: memplan_verify: %s", c->name, optimizer, solver,
	            err);
	int64_t peak = memplan_fast_peak(p, a);
	test_expect(peak <= limit, "%s %s/%s: live fast bytes %" PRId64 " over the limit %" PRId64, c->name, optimizer,
	            solver, peak, limit);
	double pred = placement_predict(p, cm, NULL);
	test_expect(close_to(pred, st.objective), "%s %s/%s limit %" PRId64 ": predicted %.9g s, ILP objective %.9g s",
	            c->name, optimizer, solver, limit, pred, st.objective);
	test_expect(close_to(pred, st.predicted_time), "%s: stats.predicted_time", c->name);

	/* place: the packed pool fits (not repeated for the time-limited runs) */
	PlaceStats st2 = {0};
	PlaceOptions po = o;
	po.repair = 0; /* as the user's */
	Placement *q = prove ? place(g, s, &po, a, &st2, err, sizeof err) : p;
	test_expect(!prove || (q && q->fast_bytes <= limit),
	            "%s %s/%s: place: %s (pool %" PRId64 ", limit %" PRId64 ")", c->name, optimizer, solver,
	            q ? "over" : err, q ? q->fast_bytes : 0, limit);
	if (q && prove) {
		test_expect(memplan_verify(q, a, err, sizeof err), "%s: place memplan_verify: %s", c->name,
		            err);
		/*
		 * its bound is one at this limit (a later attempt's program is
		 * tightened for fragmentation: its bound is none here), so its gap
		 * is never below its plan's distance from the optimum
		 */
		double t = placement_predict(q, cm, NULL);
		test_expect(st2.bound <= st.objective * (1 + 1e-9) && st2.gap >= (t - st.objective) / t - 1e-9,
		            "%s %s/%s: place's bound %.9g, gap %g, against the optimum %.9g at the limit (plan %.9g, "
		            "%d attempts)",
		            c->name, optimizer, solver, st2.bound, st2.gap, st.objective, t, st2.nattempts);
	}
	printf("  %-6s %-8s limit %6" PRId64 ": %.6f us, %s, gap %.2g%%, %d rows, %d cols (%d int), %ld nz, "
	       "kernels %d separable/%d configured, solve %.3f s, %d attempt(s)\n",
	       optimizer, solver, limit, st.objective * 1e6, st.status, st.gap * 100, st.rows, st.cols, st.integers,
	       st.nonzeros, st.separable, st.configured, st.solve_time, q ? st2.nattempts : 0);
	return st.objective;
}

/*
 * A solution that does not pack repaired around its overflow (forced on
 * these small programs, whose solves are too quick for the default rule):
 * place's result packs under the limit, is valid, its prediction is its
 * objective, and it is no faster than the program's optimum. Returns
 * whether a repair made the solution pack.
 */
static bool repair_check(const Graph *g, const Schedule *s, const CostModel *cm, const Case *c,
                         const char *optimizer, int64_t limit, double optimum, Arena *a)
{
	char err[512];
	PlaceOptions o = {.optimizer = opt_id(optimizer), .limit = limit, .cm = cm, .time_limit = 20, .tiny = c->tiny,
	                  .gap = -1, .repair = 1};
	PlaceStats st;
	Placement *p = place(g, s, &o, a, &st, err, sizeof err);
	test_expect(p, "%s %s repaired, limit %" PRId64 ": %s", c->name, optimizer, limit, err);
	if (!p)
		return false;
	test_expect(placement_verify(g, p, err, sizeof err), "%s %s repaired: placement_verify: %s", c->name, optimizer,
	            err);
	test_expect(p->fast_bytes + p->workspace <= limit && memplan_verify(p, a, err, sizeof err),
	            "%s %s repaired, limit %" PRId64 ": pool %" PRId64 " or %s", c->name, optimizer, limit, p->fast_bytes,
	            err);
	double pred = placement_predict(p, cm, NULL);
	test_expect(close_to(pred, st.objective), "%s %s repaired, limit %" PRId64 ": predicted %.9g, objective %.9g",
	            c->name, optimizer, limit, pred, st.objective);
	test_expect(pred >= optimum * (1 - 1e-9), "%s %s repaired, limit %" PRId64 ": %.9g below the optimum %.9g",
	            c->name, optimizer, limit, pred, optimum);
	if (st.repaired)
		printf("  %s repaired around fragmentation: %d re-solve(s), %.6f us (optimum %.6f us)\n", optimizer,
		       st.repairs, pred * 1e6, optimum * 1e6);
	return st.repaired;
}

/*
 * recompute as auto's start (packed by first fit, its repair forced): a
 * solution that packs only squeezed is kept beside the one returned
 * (PlaceStats.squeezed): it is a valid placement, its memory plan
 * (squeezed) fits the limit where first fit alone does not, its time is
 * its prediction, and it is no faster than the program's optimum.
 * Returns whether one was kept.
 */
static bool squeezed_check(const Graph *g, const Schedule *s, const CostModel *cm, const Case *c, int64_t limit,
                           double optimum, Arena *a)
{
	char err[512];
	PlaceOptions o = {.optimizer = OPT_RECOMPUTE, .limit = limit, .cm = cm, .time_limit = 20, .tiny = c->tiny,
	                  .gap = -1, .repair = 1, .first_fit = true};
	PlaceStats st;
	Placement *p = place(g, s, &o, a, &st, err, sizeof err);
	if (!st.squeezed)
		return false;
	Placement *q = st.squeezed;
	test_expect(placement_verify(g, q, err, sizeof err), "%s squeezed, limit %" PRId64 ": placement_verify: %s",
	            c->name, limit, err);
	test_expect(q->fast_bytes + q->workspace <= limit && memplan_verify(q, a, err, sizeof err),
	            "%s squeezed, limit %" PRId64 ": pool %" PRId64 " or %s", c->name, limit, q->fast_bytes, err);
	double t = placement_predict(q, cm, NULL);
	test_expect(close_to(t, st.squeezed_time) && t >= optimum * (1 - 1e-9),
	            "%s squeezed, limit %" PRId64 ": predicted %.9g, kept as %.9g, optimum %.9g", c->name, limit, t,
	            st.squeezed_time, optimum);
	memplan_first_fit(q, a);
	test_expect(q->fast_bytes + q->workspace > limit, "%s squeezed, limit %" PRId64 ": first fit packs it too",
	            c->name, limit);
	printf("  recompute's start packed only squeezed: %.6f us (returned: %.6f us, optimum %.6f us)\n", t * 1e6,
	       p ? placement_predict(p, cm, NULL) * 1e6 : 0.0, optimum * 1e6);
	return true;
}

/*
 * auto improving a start by re-solving neighbourhoods (forced on these
 * small programs): from async's placement, the result is a valid packed
 * placement whose prediction is its objective, no slower than the start
 * and not below the optimum; without spanning moves (spans of one) the
 * whole program is solved after the neighbourhoods, for a valid bound
 * (its optimum is returned only if it packs). With `jobs` > 1 the
 * neighbourhoods are re-solved that many at once, in child processes,
 * their results merged into the plan: the same holds.
 */
static void lns_check(const Graph *g, const Schedule *s, const CostModel *cm, const Case *c, int64_t limit,
                      bool one, int jobs, double optimum, Arena *a)
{
	char err[512];
	/* packed by first fit, as auto's starts are: the neighbourhoods pack their plans so */
	PlaceOptions ao = {.optimizer = OPT_ASYNC, .limit = limit, .cm = cm, .time_limit = 5, .tiny = c->tiny,
	                   .first_fit = true};
	Placement *start = place(g, s, &ao, a, NULL, err, sizeof err);
	if (!start)
		return; /* async cannot place under this limit */
	double t0 = placement_predict(start, cm, NULL);
	PlaceOptions o = {.optimizer = OPT_AUTO, .limit = limit, .cm = cm, .time_limit = 20, .tiny = c->tiny,
	                  .gap = -1, .span = one ? -1 : 0, .start = start, .lns = 1, .jobs = jobs};
	PlaceStats st;
	Placement *p = place_ilp(g, s, &o, a, &st, err, sizeof err);
	test_expect(p, "%s auto%s from async, neighbourhoods, limit %" PRId64 ": %s", c->name, one ? "-1" : "", limit,
	            err);
	if (!p)
		return;
	test_expect(st.lns_solves >= 1 && (st.lns_bound || !one), "%s: neighbourhoods: %d solves, whole program %d",
	            c->name, st.lns_solves, st.lns_bound);
	test_expect(st.lns_jobs == jobs, "%s: neighbourhoods solved %d at once, asked for %d", c->name, st.lns_jobs, jobs);
	test_expect(placement_verify(g, p, err, sizeof err), "%s neighbourhoods: placement_verify: %s", c->name, err);
	memplan(p, a);
	test_expect(p->fast_bytes + p->workspace <= limit, "%s neighbourhoods: pool %" PRId64 " over the limit %" PRId64,
	            c->name, p->fast_bytes, limit);
	double pred = placement_predict(p, cm, NULL);
	test_expect(close_to(pred, st.objective), "%s neighbourhoods limit %" PRId64 ": predicted %.9g, objective %.9g",
	            c->name, limit, pred, st.objective);
	test_expect(pred <= t0 * (1 + 1e-9), "%s neighbourhoods limit %" PRId64 ": %.9g slower than the start %.9g",
	            c->name, limit, pred, t0);
	test_expect(pred >= optimum * (1 - 1e-9), "%s neighbourhoods limit %" PRId64 ": %.9g below the optimum %.9g",
	            c->name, limit, pred, optimum);
	test_expect(st.bound <= optimum * (1 + 1e-9) && st.bound >= 0 && (st.lns_bound || st.bound == 0),
	            "%s neighbourhoods limit %" PRId64 ": bound %.9g, optimum %.9g", c->name, limit, st.bound, optimum);
	/* no bound proved reads as gap 100%, and a gap never hides the plan's distance from the optimum */
	test_expect((st.bound > 0 || st.gap == 1) && st.gap >= (pred - optimum) / pred - 1e-9,
	            "%s neighbourhoods limit %" PRId64 ": gap %g with bound %.9g, plan %.9g, optimum %.9g", c->name, limit,
	            st.gap, st.bound, pred, optimum);
	printf("  auto%s from async's %.6f us, %d neighbourhoods (%d better, %d at once, %d merged): %.6f us, optimum "
	       "%.6f us\n",
	       one ? "-1" : "", t0 * 1e6, st.lns_solves, st.lns_better, jobs, st.lns_merges, pred * 1e6, optimum * 1e6);
}

/*
 * kernels_fast (the GPU's placement) against brute force, at limits from
 * the lower bound to the peak: sync and async as AutoTM's (weights and
 * state in one tier per step), and with offloading, whose lower bound is
 * lower (weights and state need be fast only where used).
 */
static int offload_wins; /* limits at which offloading beats keeping weights and state in one tier */

static void kernels_fast_case(const Graph *g, const Schedule *s, const CostModel *base, const Case *c,
                              int64_t peak, Arena *a)
{
	CostModel duplex = *base; /* as on a GPU: a copy engine per direction */
	duplex.duplex = true;
	const CostModel *cm = &duplex;
	PlaceOptions o = {.optimizer = OPT_SYNC, .limit = 64, .cm = cm, .tiny = c->tiny, .gap = -1, .kernels_fast = true,
	                  .offload = 1};
	char err[512];
	test_expect(!place_ilp(g, s, &o, a, NULL, err, sizeof err) && strstr(err, "at least "),
	            "%s: kernels_fast accepts a 64-byte limit or does not state a bound: %s", c->name, err);
	const char *at = strstr(err, "at least ");
	int64_t bound = at ? strtoll(at + strlen("at least "), NULL, 10) : peak;
	for (int f = 0; f <= 4; f++) {
		int64_t limit = (bound + (peak - bound) * f / 4) / 64 * 64;
		double obj[2][2] = {{NAN, NAN}, {NAN, NAN}}; /* [offload][sync, async] */
		long fit[2];
		for (int off = 0; off < 2; off++) {
			Best b = brute_force(g, s, cm, false, c->tiny, limit, true, off);
			fit[off] = b.fitting;
			static const char *opts[] = {"sync", "async"};
			for (int oi = 0; oi < 2; oi++)
				for (int si = 0; si < 2; si++) {
					o.optimizer = opt_id(opts[oi]);
					o.solver = si ? "lp_solve" : "cbc";
					o.limit = limit;
					o.time_limit = 20;
					o.offload = off ? 1 : -1;
					PlaceStats st;
					Placement *p = place_ilp(g, s, &o, a, &st, err, sizeof err);
					if (!p) {
						test_expect(b.fitting == 0 || (oi == 1 && si == 1),
						            "%s kernels_fast %s/%s%s limit %" PRId64 ": %s, but %ld placements fit",
						            c->name, opts[oi], o.solver, off ? " offload" : "", limit, err, b.fitting);
						continue;
					}
					test_expect(args_fast(g, s, p),
					            "%s kernels_fast %s/%s limit %" PRId64 ": a kernel argument is slow",
					            c->name, opts[oi], o.solver, limit);
					test_expect(placement_verify(g, p, err, sizeof err), "%s kernels_fast %s%s: %s", c->name,
					            opts[oi], off ? " offload" : "", err);
					memplan(p, a);
					test_expect(memplan_fast_peak(p, a) <= limit, "%s kernels_fast %s: over the limit",
					            c->name, opts[oi]);
					test_expect(close_to(placement_predict(p, cm, NULL), st.objective),
					            "%s kernels_fast %s/%s: predicted %.9g, objective %.9g", c->name, opts[oi],
					            o.solver, placement_predict(p, cm, NULL), st.objective);
					if (si == 0)
						obj[off][oi] = st.objective;
					if (oi == 0)
						test_expect(close_to(b.time, st.objective),
						            "%s kernels_fast sync/%s%s limit %" PRId64 ": brute force %.9g, ILP %.9g",
						            c->name, o.solver, off ? " offload" : "", limit, b.time, st.objective);
				}
			if (!isnan(obj[off][0]))
				test_expect(obj[off][1] <= obj[off][0] * (1 + 1e-9),
				            "%s kernels_fast limit %" PRId64 ": async above sync", c->name, limit);
		}
		/* offloading only adds choices */
		test_expect(isnan(obj[0][0]) || obj[1][0] <= obj[0][0] * (1 + 1e-9),
		            "%s kernels_fast limit %" PRId64 ": sync with offloading %.9g above without %.9g", c->name,
		            limit, obj[1][0], obj[0][0]);
		if (!isnan(obj[1][0]) && (isnan(obj[0][0]) || obj[1][0] < obj[0][0] * (1 - 1e-9)))
			offload_wins++;
		printf("  kernels fast (bound %" PRId64 "), limit %6" PRId64 ": brute force %ld / %ld (offload) fit; "
		       "ILP sync %.6f, async %.6f us; offloading: sync %.6f, async %.6f us\n", bound, limit, fit[0],
		       fit[1], obj[0][0] * 1e6, obj[0][1] * 1e6, obj[1][0] * 1e6, obj[1][1] * 1e6);
	}
}

/*
 * checkpoint's lazy placement as recompute's start, on a chain of
 * activations whose segments are made again at one boundary (chains of
 * recomputes deeper than PLACE_RECOMPUTE_DEPTH): the program expresses
 * the start whole (every tensor's life given), and the solution is no
 * slower than it, at the limit of the start's own packed pool.
 */
static void test_checkpoint_start(const CostModel *cm)
{
	Arena a = {0};
	Case c = {"a chain of activations", "dense(64 => 64) tanh tanh tanh tanh tanh tanh tanh tanh dense(64 => 2)",
	          "64", 2, "sgd(lr = 0.1)", -1, false, 0, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", c.name);
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	int deepest = 0;
	for (int k = 2; k <= 3; k++) {
		Placement *p0 = place_checkpoint_segments(g, s, k, true, 0, &a);
		int64_t limit = memplan_fast_peak(p0, &a) + 64;
		/* the most tensors made again at one boundary: how deep its chain is (recomputes come in order of at) */
		for (int i = 0, run = 0; i < p0->recomputes.n; i++) {
			const Recompute *r = &p0->recomputes.v[i], *q = i > 0 ? r - 1 : NULL;
			run = q && q->at == r->at ? run + (q->t != r->t) : 1;
			deepest = run > deepest ? run : deepest;
		}
		PlaceOptions o = {.optimizer = OPT_RECOMPUTE, .limit = limit, .cm = cm, .time_limit = 20, .tiny = c.tiny,
		                  .gap = -1, .start = p0};
		PlaceStats st;
		char err[512];
		Placement *p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
		test_expect(p, "%s: recompute from checkpoint's %d segments: %s", c.name, k, err);
		test_expect(st.start_tensors == g->tensors.n, "%s, %d segments: the start gives %d of %d tensors", c.name, k,
		            st.start_tensors, g->tensors.n);
		double t0 = placement_predict(p0, cm, NULL);
		test_expect(p && st.objective <= t0 * (1 + 1e-9), "%s, %d segments: %.9g slower than the start %.9g", c.name,
		            k, st.objective, t0);
		printf("%s, checkpoint's %d segments (%d recomputes) as recompute's start: %d of %d tensors given; "
		       "%.6f us -> %.6f us\n", c.name, k, p0->recomputes.n, st.start_tensors, g->tensors.n, t0 * 1e6,
		       st.objective * 1e6);
	}
	test_expect(deepest > PLACE_RECOMPUTE_DEPTH + 1,
	            "%s: checkpoint makes at most %d tensors again at one boundary: the check tests nothing",
	            c.name, deepest);
	arena_free(&a);
}

/* Output bytes of the forward kernels before step `end`. */
static double bytes_before(const Schedule *s, int end)
{
	double b = 0;
	for (int st = 0; st < end; st++)
		for (int i = 0; i < s->order[st]->nout; i++)
			b += (double)s->order[st]->out[i]->bytes;
	return b;
}

/*
 * checkpoint's runs, of equal length and balanced by bytes, and auto's
 * start made of checkpoint's lazy plan where it does not fit with swaps
 * of the tensors it keeps (place_ilp_swaps on a base): the placement
 * verifies, its live bytes fit, it keeps every recompute of its base,
 * and the ILP takes it whole as a start and is no slower than it.
 */
static void test_checkpoint_swaps(const CostModel *cm)
{
	Arena a = {0};
	Case c = {"a chain of uneven widths",
	          "tanh tanh tanh tanh dense(4096 => 8) tanh dense(8 => 4096) tanh tanh tanh tanh tanh dense(4096 => 2)",
	          "4096", 2, "sgd(lr = 0.1)", -1, false, 0, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", c.name);
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	int fwd = place_forward_steps(s), differ = 0;
	int *first = arena_array(&a, (size_t)fwd + 1, sizeof(int)), *eq = arena_array(&a, (size_t)fwd + 1, sizeof(int));
	double total = bytes_before(s, fwd);
	for (int k = 1; k <= fwd; k++) {
		place_checkpoint_starts(s, k, false, eq);
		place_checkpoint_starts(s, k, true, first);
		bool ok = first[0] == 0 && first[k] == fwd && eq[0] == 0 && eq[k] == fwd;
		for (int j = 1; j <= k; j++)
			ok = ok && first[j] > first[j - 1] && eq[j] > eq[j - 1] && eq[j] - eq[j - 1] >= fwd / k;
		test_expect(ok, "%s: %d runs of %d forward kernels cover it in order, each at least one (equal runs: "
		            "%d long at least)", c.name, k, fwd, fwd / k);
		for (int j = 0; j < k; j++)
			differ += first[j] != eq[j];
	}
	place_checkpoint_starts(s, 2, true, first); /* the first of two runs ends where it reaches half the bytes */
	test_expect(bytes_before(s, first[1]) >= total / 2 && bytes_before(s, first[1] - 1) < total / 2,
	            "%s: two balanced runs split at step %d: %.0f of %.0f bytes before it", c.name, first[1],
	            bytes_before(s, first[1]), total);
	test_expect(differ > 0, "%s: balanced runs are never other than equal ones: their checks test nothing", c.name);

	int made = 0;
	for (int b = 0; b < 2; b++)
		for (int k = 2; k <= 4; k++)
			for (int pct = 95; pct >= 65; pct -= 15) {
				char err[512];
				Placement *base = place_checkpoint_runs(g, s, k, b, true, 0, &a);
				test_expect(placement_verify(g, base, err, sizeof err), "%s: checkpoint's %d %s runs: %s", c.name,
				            k, b ? "balanced" : "equal", err);
				int64_t limit = memplan_fast_peak(base, &a) * pct / 100;
				PlaceOptions o = {.optimizer = OPT_AUTO, .limit = limit, .cm = cm, .time_limit = 10, .tiny = -1,
				                  .gap = -1};
				bool stuck;
				Placement *p = place_ilp_swaps(g, s, &o, 0.98, base, &stuck, &a);
				if (!p)
					continue;
				made++;
				const char *what = b ? "balanced" : "equal";
				test_expect(placement_verify(g, p, err, sizeof err), "%s, %d %s runs with swaps at %d%%: %s",
				            c.name, k, what, pct, err);
				test_expect(memplan_fast_peak(p, &a) <= limit && p->moves.n > 0,
				            "%s, %d %s runs with swaps at %d%%: %" PRId64 " live bytes, limit %" PRId64 ", %d moves",
				            c.name, k, what, pct, memplan_fast_peak(p, &a), limit, p->moves.n);
				bool kept = p->recomputes.n == base->recomputes.n;
				for (int i = 0; kept && i < base->recomputes.n; i++)
					kept = p->recomputes.v[i].t == base->recomputes.v[i].t &&
					       p->recomputes.v[i].at == base->recomputes.v[i].at &&
					       p->recomputes.v[i].node == base->recomputes.v[i].node;
				test_expect(kept, "%s, %d %s runs with swaps at %d%%: %d recomputes, not its base's %d", c.name, k,
				            what, pct, p->recomputes.n, base->recomputes.n);
				o.start = p;
				PlaceStats st;
				double t0 = placement_predict(p, cm, NULL);
				Placement *q = place_ilp(g, s, &o, &a, &st, err, sizeof err);
				test_expect(q && st.start_tensors == g->tensors.n && st.objective <= t0 * (1 + 1e-9),
				            "%s, %d %s runs with swaps at %d%%: as auto's start %d of %d tensors given, %.9g s "
				            "from %.9g: %s", c.name, k, what, pct, st.start_tensors, g->tensors.n,
				            q ? st.objective : 0.0, t0, q ? st.status : err);
				printf("%s, checkpoint's %d %s runs with swaps at %d%% of their peak: %d recomputes, %d moves, "
				       "%.6f us; auto from it %.6f us\n", c.name, k, what, pct, p->recomputes.n, p->moves.n,
				       t0 * 1e6, q ? st.objective * 1e6 : 0.0);
			}
	test_expect(made > 0, "%s: no checkpoint plan with swaps fits: its checks test nothing", c.name);
	arena_free(&a);
}

/*
 * The greedy swaps offload weights and optimizer state where no gap of an
 * activation frees a step: a chain whose weights and momentum are nearly
 * all its bytes, its kernels reading fast memory and a copy engine per
 * direction, as on a GPU. Without offloading there is no plan at these
 * limits; with it, each plan verifies, fits, and is taken whole as
 * auto's start. Again where each weight gradient's only algorithm needs
 * 6 MiB of workspace (as a deterministic backward-filter convolution):
 * the plans leave room for it (each step's target, and the program's
 * count of the plan beside the region's least workspace), so that they
 * pack with it under the limit and the program completes them; without
 * that room, the plan at 60% of the peak packs 23.8 MB against an 18.0 MB
 * limit.
 */
/* As a deterministic backward-filter convolution: a weight gradient's only algorithm needs 6 MiB of workspace. */
static int big_ws_algos(const CostModel *cm, const Node *n, const KernelAlgo **out)
{
	(void)cm;
	static const KernelAlgo dw[] = {{0, "deterministic", 1e-6, 6 << 20, false}}, other[] = {{0, "plain", 1e-6, 0, false}};
	bool grad = n && n->name && strstr(n->name, ".dweight");
	*out = grad ? dw : other;
	return 1;
}

static void test_offloaded_swaps(const Roofline *r)
{
	Arena a = {0};
	Roofline slow_compute = *r; /* kernels long beside a weight's move, as a GPU's large ones */
	slow_compute.flop_rate /= 10;
	const CostModel *base = costmodel_roofline(&slow_compute, &a);
	Case c = {"wide dense layers with momentum",
	          "dense(64 => 1024) relu dense(1024 => 1024) relu dense(1024 => 1024) relu dense(1024 => 1024) relu "
	          "dense(1024 => 8)", "64", 8,
	          "sgd(lr = 0.1, momentum = 0.9)", -1, false, 0, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", c.name);
	if (!g)
		return;
	CostModel duplex = *base;
	duplex.duplex = true;
	Schedule *s = schedule_graph(g, &a);
	int64_t peak = memplan_fast_peak(place_all_fast(g, s, &a), &a);
	int made = 0, needed = 0, with_ws = 0;
	for (int pct = 90; pct >= 40; pct -= 10) {
		int64_t limit = peak * pct / 100;
		PlaceOptions o = {.optimizer = OPT_AUTO, .limit = limit, .cm = &duplex, .time_limit = 10, .tiny = -1,
		                  .gap = -1, .kernels_fast = true, .offload = -1};
		bool stuck;
		Placement *kept = place_ilp_swaps(g, s, &o, 0.98, NULL, &stuck, &a);
		o.offload = 0;
		Placement *p = place_ilp_swaps(g, s, &o, 0.98, NULL, &stuck, &a);
		if (!p)
			continue;
		made++;
		needed += !kept;
		char err[512];
		test_expect(placement_verify(g, p, err, sizeof err), "%s, swaps at %d%%: %s", c.name, pct, err);
		test_expect(args_fast(g, s, p), "%s, swaps at %d%%: a kernel argument is slow", c.name, pct);
		MoveStats ms = placement_stats(p);
		test_expect(memplan_fast_peak(p, &a) <= limit && ms.noffloaded > 0,
		            "%s, swaps at %d%%: %" PRId64 " live bytes, limit %" PRId64 ", %d offloaded", c.name, pct,
		            memplan_fast_peak(p, &a), limit, ms.noffloaded);
		o.start = p;
		PlaceStats st;
		double t0 = placement_predict(p, &duplex, NULL);
		Placement *q = place_ilp(g, s, &o, &a, &st, err, sizeof err);
		test_expect(q && st.start_tensors == g->tensors.n && st.objective <= t0 * (1 + 1e-9),
		            "%s, swaps at %d%%: as auto's start %d of %d tensors given, %.9g s from %.9g: %s", c.name, pct,
		            st.start_tensors, g->tensors.n, q ? st.objective : 0.0, t0, q ? st.status : err);
		printf("%s, swaps at %d%% of the peak: %d offloaded, %d moves, %.6f us; without offloading %s; auto from it "
		       "%.6f us\n", c.name, pct, ms.noffloaded, p->moves.n, t0 * 1e6, kept ? "a plan" : "none",
		       q ? st.objective * 1e6 : 0.0);
		/* the weight gradients' workspace held beside the plan: a start the program can complete */
		CostModel ws = duplex;
		ws.algos = big_ws_algos;
		PlaceOptions wo = o;
		wo.cm = &ws;
		wo.start = NULL;
		Placement *pw = place_ilp_swaps(g, s, &wo, 0.98, NULL, &stuck, &a);
		if (!pw)
			continue;
		with_ws++;
		memplan(pw, &a);
		test_expect(placement_verify(g, pw, err, sizeof err) && pw->algo &&
		            pw->fast_bytes + pw->workspace <= limit && memplan_fast_peak(pw, &a) <= limit,
		            "%s, swaps at %d%% with 6 MiB workspaces: %" PRId64 " bytes packed, %" PRId64 " live at once, "
		            "limit %" PRId64 " (%s)", c.name, pct, pw->fast_bytes + pw->workspace,
		            memplan_fast_peak(pw, &a), limit, err);
		wo.start = pw;
		t0 = placement_predict(pw, &ws, NULL);
		q = place_ilp(g, s, &wo, &a, &st, err, sizeof err);
		test_expect(q && st.start_tensors == g->tensors.n && st.objective <= t0 * (1 + 1e-9),
		            "%s, swaps at %d%% with 6 MiB workspaces: as auto's start %d of %d tensors given, %.9g s from "
		            "%.9g: %s", c.name, pct, st.start_tensors, g->tensors.n, q ? st.objective : 0.0, t0,
		            q ? st.status : err);
		printf("  with 6 MiB workspaces: %d offloaded, %.6f us; auto from it %.6f us\n",
		       placement_stats(pw).noffloaded, t0 * 1e6, q ? st.objective * 1e6 : 0.0);
	}
	test_expect(with_ws > 0, "%s: no plan with 6 MiB workspaces: their checks test nothing", c.name);
	test_expect(made > 0 && needed > 0, "%s: %d plans with offloading, %d where none without: its checks test nothing",
	            c.name, made, needed);
	arena_free(&a);
}

static int recompute_wins; /* limits at which recompute's optimum beats static's */
static int repaired;       /* placements whose solution a repair made pack */
static int squeezed;       /* starts whose solution packed only squeezed (squeezed_check) */
static int spans_win;      /* limits at which auto's optimum beats its own with spans of one kernel */

static void run_case(const Case *c, const CostModel *cm)
{
	Arena a = {0};
	Graph *g = build(&a, c);
	test_expect(g, "%s: builds", c->name);
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	Placement *fast = place_all_fast(g, s, &a);
	int64_t peak = memplan_fast_peak(fast, &a);
	printf("%s: %d steps, %d tensors, peak %" PRId64 " B; sync combinations %.0f, recompute %.0f\n", c->name, s->n,
	       g->tensors.n, peak, combinations(g, s, false, c->tiny, false, false), recompute_combinations(g, s, c->tiny));

	static const double fractions[] = {1.0, 0.7, 0.45, 0.25, 0.1};
	int nlimits = countof(fractions);
	if (c->limits)
		for (nlimits = 0; c->limits[nlimits]; nlimits++)
			;
	for (int f = 0; f < nlimits; f++) {
		int64_t limit = c->limits ? c->limits[f] : (int64_t)(fractions[f] * (double)peak) / 64 * 64;
		if (limit < 64)
			limit = 64;
		double obj[3][2];
		static const char *opts[] = {"static", "sync", "async"};
		static const char *solvers[] = {"cbc", "lp_solve"};
		/* lp_solve cannot close the LP gap of async on the larger cases: it gets 1 s and its dives */
		bool lp_async_proves = c->sync_brute;
		for (int oi = 0; oi < 3; oi++)
			for (int si = 0; si < 2; si++)
				obj[oi][si] = solve_and_check(g, s, cm, c, opts[oi], solvers[si], limit,
				                              si == 0 || oi < 2 || lp_async_proves, &a);
		for (int oi = 0; oi < 3; oi++)
			if (oi < 2 || lp_async_proves)
				test_expect(close_to(obj[oi][0], obj[oi][1]),
				            "%s %s limit %" PRId64 ": cbc %.9g, lp_solve %.9g", c->name, opts[oi],
				            limit, obj[oi][0], obj[oi][1]);
			else
				test_expect(obj[oi][1] >= obj[oi][0] * (1 - 1e-9),
				            "%s %s limit %" PRId64 ": lp_solve %.9g below the optimum %.9g", c->name,
				            opts[oi], limit, obj[oi][1], obj[oi][0]);
		test_expect(obj[1][0] <= obj[0][0] * (1 + 1e-9), "%s limit %" PRId64 ": sync above static", c->name,
		            limit);
		test_expect(obj[2][0] <= obj[1][0] * (1 + 1e-9), "%s limit %" PRId64 ": async above sync", c->name,
		            limit);

		/* recompute against brute force; auto no slower than async and recompute */
		double rc = solve_and_check(g, s, cm, c, "recompute", "cbc", limit, true, &a);
		double au = solve_and_check(g, s, cm, c, "auto", "cbc", limit, true, &a);
		repaired += repair_check(g, s, cm, c, "recompute", limit, rc, &a);
		repaired += repair_check(g, s, cm, c, "auto", limit, au, &a);
		squeezed += squeezed_check(g, s, cm, c, limit, rc, &a);
		test_expect(au <= obj[2][0] * (1 + 1e-9) && au <= rc * (1 + 1e-9),
		            "%s limit %" PRId64 ": auto %.9g above async %.9g or recompute %.9g", c->name, limit, au,
		            obj[2][0], rc);
		/* moves that span kernels only add choices */
		double a1 = solve_and_check(g, s, cm, c, "auto-1", "cbc", limit, true, &a);
		test_expect(au <= a1 * (1 + 1e-9), "%s limit %" PRId64 ": auto %.9g above auto with spans of one %.9g",
		            c->name, limit, au, a1);
		if (au < a1 * (1 - 1e-9))
			spans_win++;
		lns_check(g, s, cm, c, limit, false, 1, au, &a);
		lns_check(g, s, cm, c, limit, false, 3, au, &a);
		lns_check(g, s, cm, c, limit, true, 2, a1, &a);
		if (rc < obj[0][0] * (1 - 1e-9))
			recompute_wins++;
		if (recompute_combinations(g, s, c->tiny) <= 2e6) {
			Best rb = brute_force_of(g, s, cm, false, c->tiny, limit, false, true, false);
			test_expect(close_to(rb.time, rc), "%s recompute limit %" PRId64 ": brute force %.9g, ILP %.9g",
			            c->name, limit, rb.time, rc);
			printf("  recompute brute force: %ld placements, %ld fit, best %.6f us\n", rb.tried, rb.fitting,
			       rb.time * 1e6);
		}

		Best b = brute_force(g, s, cm, true, c->tiny, limit, false, false);
		test_expect(close_to(b.time, obj[0][0]), "%s static limit %" PRId64 ": brute force %.9g, ILP %.9g",
		            c->name, limit, b.time, obj[0][0]);
		printf("  static brute force: %ld placements, %ld fit, best %.6f us\n", b.tried, b.fitting, b.time * 1e6);
		if (c->sync_brute) {
			b = brute_force(g, s, cm, false, c->tiny, limit, false, false);
			test_expect(close_to(b.time, obj[1][0]),
			            "%s sync limit %" PRId64 ": brute force %.9g, ILP %.9g", c->name, limit, b.time,
			            obj[1][0]);
			printf("  sync brute force: %ld placements, %ld fit, best %.6f us\n", b.tried, b.fitting,
			       b.time * 1e6);
			/* with offloading: weights and state updated in fast copies of slow homes */
			PlaceOptions oo = {.optimizer = OPT_SYNC, .limit = limit, .cm = cm, .time_limit = 20, .tiny = c->tiny,
			                   .gap = -1, .offload = 1};
			PlaceStats ost;
			char oerr[512];
			Placement *op = place_ilp(g, s, &oo, &a, &ost, oerr, sizeof oerr);
			b = brute_force(g, s, cm, false, c->tiny, limit, false, true);
			test_expect(op && close_to(b.time, ost.objective) && placement_verify(g, op, oerr, sizeof oerr),
			            "%s sync with offloading limit %" PRId64 ": brute force %.9g, ILP %.9g (%s)", c->name, limit,
			            b.time, op ? ost.objective : NAN, op ? "" : oerr);
			if (op && ost.objective < obj[1][0] * (1 - 1e-9))
				offload_wins++;
			printf("  sync with offloading: brute force %ld placements, %ld fit, best %.6f us\n", b.tried,
			       b.fitting, b.time * 1e6);
		}
	}

	if (combinations(g, s, false, c->tiny, true, true) <= 2e6)
		kernels_fast_case(g, s, cm, c, peak, &a);

	/* an infeasible limit names the smallest feasible one, which works */
	PlaceOptions o = {.optimizer = OPT_SYNC, .limit = 32, .cm = cm, .tiny = c->tiny};
	char err[512];
	Placement *p = place_ilp(g, s, &o, &a, NULL, err, sizeof err);
	test_expect(!p, "%s: limit 32 accepted", c->name);
	const char *at = strstr(err, "smallest feasible limit is ");
	test_expect(at, "%s: message without the smallest limit: %s", c->name, err);
	if (at) {
		o.limit = strtoll(at + strlen("smallest feasible limit is "), NULL, 10);
		p = place(g, s, &o, &a, NULL, err, sizeof err);
		test_expect(p && p->fast_bytes <= o.limit, "%s: the smallest feasible limit %" PRId64 " fails: %s",
		            c->name, o.limit, p ? "pool over it" : err);
		/*
		 * auto there, through place and its starts (sync's, which cannot be
		 * placed below this limit, PLACE_START_MARGIN, is placed at it): it
		 * has a start and is no slower than sync
		 */
		if (p) {
			PlaceOptions ao = {.optimizer = OPT_AUTO, .limit = o.limit, .cm = cm, .time_limit = 20,
			                   .tiny = c->tiny, .gap = -1};
			PlaceStats ast;
			double ts = placement_predict(p, cm, NULL);
			Placement *q = place(g, s, &ao, &a, &ast, err, sizeof err);
			test_expect(q && q->fast_bytes + q->workspace <= o.limit && ast.start_name &&
			                placement_predict(q, cm, NULL) <= ts * (1 + 1e-9),
			            "%s: auto at sync's smallest feasible limit %" PRId64 ": %s, start %s, %.9g against sync's %.9g",
			            c->name, o.limit, q ? "placed" : err, ast.start_name ? ast.start_name : "none",
			            q ? placement_predict(q, cm, NULL) : NAN, ts);
		}
	}

	/* baselines */
	PlaceOptions fo = {.optimizer = OPT_FIRST_TOUCH, .limit = peak / 2, .cm = cm};
	Placement *ft = place(g, s, &fo, &a, NULL, err, sizeof err);
	test_expect(ft && placement_verify(g, ft, err, sizeof err), "%s: first-touch: %s", c->name, err);
	test_expect(ft && ft->fast_bytes <= peak / 2 && memplan_verify(ft, &a, err, sizeof err), "%s: first-touch pool",
	            c->name);
	Placement *sl = place_all_slow(g, s, &a);
	memplan(sl, &a);
	test_expect(placement_verify(g, sl, err, sizeof err) && sl->fast_bytes == 0, "%s: all-slow", c->name);
	test_expect(placement_predict(sl, cm, NULL) >= placement_predict(fast, cm, NULL),
	            "%s: all-slow faster than all-fast", c->name);
	arena_free(&a);
}

/* mip_broken_row: the check every start given to the solver passes */
static void test_broken_row(void)
{
	Mip *m = mip_new();
	int x0 = mip_add_col(m, 0, 1, 1, true), x1 = mip_add_col(m, 0, 1, 1, true), d = mip_add_col(m, 0, 10, 0, false);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x0, x1}, (double[]){1, 1}, 1, 1);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x1, d}, (double[]){2, -1}, -MIP_INF, 0);
	test_expect(mip_broken_row(m, (double[]){1, 0, 0}, 1e-9) == -1, "a feasible start breaks a row");
	test_expect(mip_broken_row(m, (double[]){0, 0, 0}, 1e-9) == 0, "a start with no flow from the source passes");
	test_expect(mip_broken_row(m, (double[]){0, 1, 1}, 1e-9) == 1, "x1 = 1 with d = 1 < 2 passes");
	test_expect(mip_broken_row(m, (double[]){0, 1, NAN}, 1e-9) == -1, "a row with a column not given is checked");
	mip_free(m);
}

/* A chain of six tanh between two dense layers w wide, and its schedule (*s); NULL if it does not build. */
static Graph *tanh_chain(Arena *a, const char *name, int w, Schedule **s)
{
	char layers[128], input[16];
	snprintf(layers, sizeof layers, "dense(%d => %d) tanh tanh tanh tanh tanh tanh dense(%d => 2)", w, w, w);
	snprintf(input, sizeof input, "%d", w);
	Case c = {name, layers, input, 2, "sgd(lr = 0.1)", -1, false, 1, NULL};
	Graph *g = build(a, &c);
	test_expect(g, "%s: builds", name);
	*s = g ? schedule_graph(g, a) : NULL;
	return g;
}

/*
 * In place: on a chain of four tanh layers (4 x 256 activations) between
 * two small dense layers, every tanh_bwd may write dx over dy, which dies
 * there (schedule_reuse). The schedule's live bytes
 * count the two once; the all-fast placement gives each such dx its dy's
 * memory (placement_reuses, the same offset; memplan_verify) and its
 * live bytes are the schedule's (rounded as memplan rounds); with
 * kernels_fast (a GPU) the stated floor is below the bytes a tanh_bwd's
 * arguments would need apart beside the weights, and the ILP places at
 * that floor, in place (the brute-force checks of run_case check the
 * optimum at every limit); a placement with everything slow writes
 * nothing in place (only the fast pool's copies share a block).
 */
static void test_in_place(const CostModel *cm)
{
	Arena a = {0};
	Case c = {"in place", "dense(4 => 256) tanh tanh tanh tanh dense(256 => 2)", "4", 2, "sgd(lr = 0.1)", -1, false, 0,
	          NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "in place: builds");
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	int nreuse = 0, worst = -1;
	int64_t apart = 0; /* the most bytes a reusing kernel's arguments take apart */
	for (int st = 0; st < s->n; st++) {
		const Tensor *in = schedule_reuse(s, st);
		if (!in)
			continue;
		const Node *n = s->order[st];
		nreuse++;
		test_expect(n->op == OP_TANH_BWD && in == n->in[1] && s->live[in->id].last == st,
		            "in place: step %d (%s) reuses %s", st, n->name, in->name);
		int64_t live = 0, args = 0;
		for (int i = 0; i < g->tensors.n; i++)
			if (live_at(s, g->tensors.v[i], st))
				live += g->tensors.v[i]->bytes;
		test_expect(s->live_bytes[st] == live - n->out[0]->bytes,
		            "in place: live bytes at step %d %" PRId64 ", expected %" PRId64, st, s->live_bytes[st],
		            live - n->out[0]->bytes);
		for (int k = 0; k < n->nin + n->nout; k++)
			args += (k < n->nin ? n->in[k] : n->out[k - n->nin])->bytes;
		if (args > apart)
			apart = args, worst = st;
	}
	test_expect(nreuse == 4, "in place: %d steps reuse an input, expected one per tanh (4)", nreuse);
	int64_t rounded = 0; /* the most bytes live at a kernel, each tensor rounded as memplan rounds it */
	for (int st = 0; st < s->n; st++) {
		int64_t live = 0;
		for (int i = 0; i < g->tensors.n; i++)
			if (live_at(s, g->tensors.v[i], st))
				live += memplan_round(g->tensors.v[i]->bytes);
		if (schedule_reuse(s, st))
			live -= memplan_round(s->order[st]->out[0]->bytes);
		if (live > rounded)
			rounded = live;
	}

	char err[512];
	Placement *p = place_all_fast(g, s, &a);
	memplan(p, &a);
	MoveStats ms = placement_stats(p);
	test_expect(ms.nin_place == nreuse, "in place: all-fast writes %d outputs in place, expected %d", ms.nin_place,
	            nreuse);
	for (int st = 0; st < s->n; st++) {
		const Tensor *in = schedule_reuse(s, st);
		if (in)
			test_expect(placement_at(p, in, st)->offset == placement_at(p, s->order[st]->out[0], st)->offset,
			            "in place: all-fast's %s is not at its input's offset", s->order[st]->out[0]->name);
	}
	test_expect(memplan_verify(p, &a, err, sizeof err), "in place: all-fast: %s", err);
	test_expect(memplan_fast_peak(p, &a) == rounded,
	            "in place: all-fast's live bytes %" PRId64 ", the schedule's (rounded) %" PRId64,
	            memplan_fast_peak(p, &a), rounded);

	CostModel duplex = *cm;
	duplex.duplex = true;
	PlaceOptions o = {.optimizer = OPT_SYNC, .limit = 64, .cm = &duplex, .tiny = -1, .gap = -1, .kernels_fast = true};
	test_expect(!place_ilp(g, s, &o, &a, NULL, err, sizeof err) && strstr(err, "at least "),
	            "in place: kernels_fast states no floor: %s", err);
	const char *at = strstr(err, "at least ");
	int64_t floor = at ? strtoll(at + strlen("at least "), NULL, 10) : 0, weights = 0;
	for (int i = 0; i < g->tensors.n; i++)
		if (tensor_persists(g->tensors.v[i]))
			weights += memplan_round(g->tensors.v[i]->bytes);
	test_expect(floor < apart + weights,
	            "in place: the floor %" PRId64 " is not below step %d's arguments apart (%" PRId64 ") and the weights",
	            floor, worst, apart);
	o.limit = floor;
	o.time_limit = 20;
	PlaceStats st;
	Placement *q = place_ilp(g, s, &o, &a, &st, err, sizeof err);
	test_expect(q, "in place: no placement at the floor %" PRId64 ": %s", floor, err);
	if (q) {
		memplan(q, &a);
		test_expect(memplan_fast_peak(q, &a) <= floor && memplan_verify(q, &a, err, sizeof err),
		            "in place: the placement at the floor does not fit it (%" PRId64 ")", memplan_fast_peak(q, &a));
		test_expect(placement_stats(q).nin_place > 0, "in place: nothing in place at the floor");
	}

	Placement *sp = place_all_slow(g, s, &a);
	memplan(sp, &a);
	test_expect(placement_stats(sp).nin_place == 0 && memplan_verify(sp, &a, err, sizeof err),
	            "in place: all-slow writes %d outputs in place", placement_stats(sp).nin_place);
	printf("in place: %d steps; all-fast %" PRId64 " bytes; kernels_fast floor %" PRId64 " against %" PRId64
	       " apart\n", nreuse, p->fast_bytes, floor, apart + weights);
	arena_free(&a);
}

/*
 * memplan above a limit: an instance whose live peak fits a limit that
 * first fit in its three orders packs above (five blocks, peak 448 bytes,
 * first fit 512), packed again to the peak, also by place_pack as auto's
 * search packs (first fit, squeezed for a plan as small; not for one of
 * more than PLACE_SQUEEZE_SMALL residencies); and seeded random instances
 * packed for their live peak: every packing valid, never above the one
 * without a limit, and some fitted that first fit did not.
 */
/* a seeded linear congruential generator: the same instances on every machine */
static unsigned sq_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

typedef struct SqBlock {
	int first, last;
	int64_t bytes;
} SqBlock;

/* the blocks b[0..n) as fast residencies of g's first tensors (tensor i % ntensors), packed for limit by pack */
static int64_t pack_blocks_by(const Graph *g, const Schedule *s, const SqBlock *b, int n, int64_t limit, Tensor *fake,
                              Arena *a, int64_t *peak, void (*pack)(Placement *, Arena *))
{
	char err[256];
	Placement *p = placement_new(g, s, a, OPT_AUTO);
	for (int i = 0; i < n; i++) {
		fake[i] = *g->tensors.v[i % g->tensors.n];
		fake[i].bytes = b[i].bytes;
		placement_add(p, a, &fake[i], TIER_FAST, b[i].first, b[i].last);
	}
	p->limit = limit;
	pack(p, a);
	test_expect(memplan_verify(p, a, err, sizeof err), "packing %d blocks for %" PRId64 " bytes: %s", n, limit, err);
	*peak = memplan_fast_peak(p, a);
	test_expect(p->fast_bytes >= *peak, "a pool of %" PRId64 " bytes below its live peak %" PRId64, p->fast_bytes,
	            *peak);
	return p->fast_bytes;
}

static int64_t pack_blocks(const Graph *g, const Schedule *s, const SqBlock *b, int n, int64_t limit, Tensor *fake,
                           Arena *a, int64_t *peak)
{
	return pack_blocks_by(g, s, b, n, limit, fake, a, peak, memplan);
}

/* place_pack as auto's starts and neighbourhoods pack (PlaceOptions.first_fit) */
static void pack_first_fit(Placement *p, Arena *a)
{
	place_pack(&(PlaceOptions){.first_fit = true}, p, a);
}

static void test_squeeze(void)
{
	Arena a = {0};
	Schedule *s;
	Graph *g = tanh_chain(&a, "a chain for packing", 8, &s);
	if (!g)
		return;
	enum { MAXB = 12 };
	test_expect(s->n >= 8 && g->tensors.n >= MAXB, "a chain for packing: %d steps, %d tensors", s->n, g->tensors.n);
	if (s->n < 8 || g->tensors.n < MAXB)
		return;
	Tensor fake[MAXB];
	int64_t peak;
	static const SqBlock five[] = {{5, 5, 256}, {2, 2, 320}, {2, 4, 128}, {6, 7, 192}, {4, 5, 128}};
	int64_t free_pool = pack_blocks(g, s, five, 5, 0, fake, &a, &peak);
	test_expect(peak == 448 && free_pool == 512, "five blocks: live peak %" PRId64 ", first fit %" PRId64
	            " (448, 512 expected)", peak, free_pool);
	int64_t pool = pack_blocks(g, s, five, 5, 448, fake, &a, &peak);
	test_expect(pool == 448, "five blocks packed for their peak, 448 bytes: %" PRId64, pool);
	pool = pack_blocks(g, s, five, 5, 447, fake, &a, &peak);
	test_expect(pool == free_pool, "five blocks for a limit below their peak: %" PRId64 ", as without one", pool);
	/*
	 * packed as auto's search packs: a small plan that first fit leaves
	 * above the limit squeezed (memplan); one of more than
	 * PLACE_SQUEEZE_SMALL residencies with the fewest passes (memplan_quick)
	 */
	pool = pack_blocks_by(g, s, five, 5, 448, fake, &a, &peak, pack_first_fit);
	test_expect(pool == 448, "five blocks packed by the search for 448 bytes: %" PRId64 " (squeezed)", pool);
	pool = pack_blocks_by(g, s, five, 5, 512, fake, &a, &peak, pack_first_fit);
	test_expect(pool == free_pool, "five blocks packed by the search for 512 bytes: %" PRId64 " (first fit)", pool);
	enum { MANY = PLACE_SQUEEZE_SMALL + 5 };
	SqBlock *many = arena_array(&a, MANY, sizeof(SqBlock));
	Tensor *mfake = arena_array(&a, MANY, sizeof(Tensor));
	for (int i = 0; i < MANY; i++) /* the five blocks 1024 times larger, and small ones where none of them lives */
		many[i] = i < 5 ? (SqBlock){five[i].first, five[i].last, 1024 * five[i].bytes} : (SqBlock){0, 0, 64};
	int64_t mpeak, first = pack_blocks_by(g, s, many, MANY, 0, mfake, &a, &mpeak, memplan_first_fit);
	int64_t tight_pool = pack_blocks_by(g, s, many, MANY, mpeak, mfake, &a, &mpeak, memplan);
	int64_t quick = pack_blocks_by(g, s, many, MANY, tight_pool, mfake, &a, &mpeak, memplan_quick);
	int64_t searched = pack_blocks_by(g, s, many, MANY, tight_pool, mfake, &a, &mpeak, pack_first_fit);
	test_expect(tight_pool < first && searched == quick && quick <= tight_pool,
	            "%d blocks: first fit %" PRId64 ", squeezed %" PRId64 ", quickly %" PRId64
	            ", packed by the search for the squeezed pool %" PRId64 " (the quick one expected)",
	            MANY, first, tight_pool, quick, searched);
	/* random instances for their live peak */
	unsigned seed = 12345;
	int tight = 0, fitted = 0;
	for (int k = 0; k < 400; k++) {
		SqBlock b[MAXB];
		int n = 5 + (int)(sq_rand(&seed) % (MAXB - 4));
		for (int i = 0; i < n; i++) {
			int x = (int)(sq_rand(&seed) % 8), y = (int)(sq_rand(&seed) % 8);
			b[i] = (SqBlock){x < y ? x : y, x < y ? y : x, 64 * (1 + (int64_t)(sq_rand(&seed) % 5))};
		}
		int64_t unlimited = pack_blocks(g, s, b, n, 0, fake, &a, &peak);
		if (unlimited <= peak)
			continue;
		tight++;
		int64_t limited = pack_blocks(g, s, b, n, peak, fake, &a, &peak);
		test_expect(limited <= unlimited, "instance %d: %" PRId64 " bytes for its peak, %" PRId64 " without a limit", k,
		            limited, unlimited);
		fitted += limited <= peak;
		/* the quick squeeze's passes are memplan's first: where it fits, memplan does */
		int64_t quick_pool = pack_blocks_by(g, s, b, n, peak, fake, &a, &peak, memplan_quick);
		test_expect(quick_pool >= limited && (quick_pool > peak || limited <= peak),
		            "instance %d: quickly %" PRId64 " bytes for its peak %" PRId64 ", fully %" PRId64, k, quick_pool,
		            peak, limited);
	}
	test_expect(tight > 0 && fitted > 0, "random packings: %d of %d above their peak fitted it", fitted, tight);
	printf("packing for the live peak: %d of %d random instances that first fit left above it fitted\n", fitted,
	       tight);
	arena_free(&a);
}

/* Every kernel may run fast with a 512-byte workspace or at twice the time with none. */
static int two_algos(const CostModel *cm, const Node *n, const KernelAlgo **out)
{
	(void)cm, (void)n;
	static const KernelAlgo al[] = {{1, "fast", 1e-6, 512, false}, {0, "slow", 2e-6, 0, false}};
	*out = al;
	return 2;
}

/*
 * place_fit_workspaces: 256 bytes live throughout and 256 more at steps
 * 0-2, every kernel with the 512-byte workspace, under a limit of 768:
 * the residencies fit, the workspaces of steps 0-2 do not (no packing
 * fits them). Those kernels, and only those, get the algorithm without
 * workspace, and the pool fits; under a limit the residencies exceed,
 * nothing changes.
 */
static void test_fit_workspaces(const Graph *g, const Schedule *s, Tensor *fake, Arena *a)
{
	CostModel cm = {.algos = two_algos};
	PlaceOptions o = {.optimizer = OPT_AUTO, .cm = &cm, .kernels_fast = true};
	const KernelAlgo *al;
	two_algos(&cm, NULL, &al);
	char err[256];
	for (int round = 0; round < 2; round++) {
		int64_t limit = round == 0 ? 768 : 448;
		Placement *p = placement_new(g, s, a, OPT_AUTO);
		fake[0] = *g->tensors.v[0], fake[0].bytes = 256;
		fake[1] = *g->tensors.v[1], fake[1].bytes = 256;
		placement_add(p, a, &fake[0], TIER_FAST, 0, s->n - 1);
		placement_add(p, a, &fake[1], TIER_FAST, 0, 2);
		p->algo = arena_array(a, (size_t)s->n + 1, sizeof(KernelAlgo *));
		for (int k = 0; k < s->n; k++)
			p->algo[k] = &al[0];
		p->ws_in_pool = true;
		p->limit = limit;
		memplan(p, a);
		test_expect(p->fast_bytes > limit, "fitting workspaces, limit %" PRId64 ": the pool %" PRId64 " fits already",
		            limit, p->fast_bytes);
		bool fits = place_fit_workspaces(p, s, &o, limit, a);
		int slow = 0, slow_early = 0;
		for (int k = 0; k < s->n; k++) {
			slow += p->algo[k] == &al[1];
			slow_early += k <= 2 && p->algo[k] == &al[1];
		}
		if (round == 0)
			test_expect(fits && p->fast_bytes <= limit && slow == 3 && slow_early == 3 &&
			                memplan_verify(p, a, err, sizeof err),
			            "fitting workspaces under 768 bytes: %s, pool %" PRId64 ", %d kernels without workspace "
			            "(%d of steps 0-2; 3 expected)", fits ? "fits" : "does not fit", p->fast_bytes, slow, slow_early);
		else
			test_expect(!fits && slow == 0, "fitting workspaces under 448 bytes, below the residencies' 512: %s, %d "
			            "kernels changed", fits ? "fits" : "does not fit", slow);
	}
}

/*
 * Workspaces in the pool (memplan.c): random residencies on a chain, each
 * kernel with a workspace. Under a limit of the residencies' pool
 * (rounded up to MEMPLAN_WS_ALIGN) plus the largest workspace the pool
 * always fits (every workspace on top at worst); a workspace as large as the gap memplan_holes reports at
 * its kernel fits beside the same residencies; and memplan_verify finds
 * no overlap. A first case by hand: a workspace goes in the gap beside
 * what lives at its step.
 */
static void test_workspaces(void)
{
	Arena a = {0};
	Schedule *s;
	Graph *g = tanh_chain(&a, "a chain for workspaces", 8, &s);
	if (!g)
		return;
	enum { MAXB = 12 };
	if (s->n < 8 || g->tensors.n < MAXB) {
		test_expect(false, "a chain for workspaces: %d steps, %d tensors", s->n, g->tensors.n);
		return;
	}
	Tensor fake[MAXB];
	KernelAlgo *al = arena_array(&a, (size_t)s->n + 1, sizeof(KernelAlgo));
	char err[256];
	/* by hand: 192 bytes live throughout, 192 more at steps 0-2; a 256-byte workspace at step 3, at the next
	   multiple of MEMPLAN_WS_ALIGN (256) */
	Placement *p = placement_new(g, s, &a, OPT_AUTO);
	fake[0] = *g->tensors.v[0], fake[0].bytes = 192;
	fake[1] = *g->tensors.v[1], fake[1].bytes = 192;
	placement_add(p, &a, &fake[0], TIER_FAST, 0, s->n - 1);
	placement_add(p, &a, &fake[1], TIER_FAST, 0, 2);
	p->algo = arena_array(&a, (size_t)s->n + 1, sizeof(KernelAlgo *));
	al[3].workspace = 256;
	p->algo[3] = &al[3];
	p->ws_in_pool = true;
	p->limit = 512;
	memplan(p, &a);
	test_expect(p->fast_bytes == 512 && p->ws_offset[3] == 256 && p->ws_offset[2] == -1 &&
	                memplan_verify(p, &a, err, sizeof err),
	            "a workspace in the gap at its step: pool %" PRId64 ", at %" PRId64 " (512, 256 expected)",
	            p->fast_bytes, p->ws_offset[3]);
	unsigned seed = 777;
	int fitted = 0, tried = 0;
	for (int k = 0; k < 300; k++) {
		p = placement_new(g, s, &a, OPT_AUTO);
		int n = 5 + (int)(sq_rand(&seed) % (MAXB - 4));
		for (int i = 0; i < n; i++) {
			int x = (int)(sq_rand(&seed) % 8), y = (int)(sq_rand(&seed) % 8);
			fake[i] = *g->tensors.v[i];
			fake[i].bytes = 64 * (1 + (int64_t)(sq_rand(&seed) % 5));
			placement_add(p, &a, &fake[i], TIER_FAST, x < y ? x : y, x < y ? y : x);
		}
		memplan(p, &a); /* the residencies alone */
		int64_t alone = p->fast_bytes, most = 0;
		p->algo = arena_array(&a, (size_t)s->n + 1, sizeof(KernelAlgo *));
		al = arena_array(&a, (size_t)s->n + 1, sizeof(KernelAlgo));
		for (int st = 0; st < s->n; st++) {
			al[st].workspace = 64 * (int64_t)(sq_rand(&seed) % 6);
			most = al[st].workspace > most ? al[st].workspace : most;
			p->algo[st] = &al[st];
		}
		p->ws_in_pool = true;
		p->limit = (alone + MEMPLAN_WS_ALIGN - 1) / MEMPLAN_WS_ALIGN * MEMPLAN_WS_ALIGN + most;
		memplan(p, &a);
		test_expect(p->fast_bytes <= p->limit && memplan_verify(p, &a, err, sizeof err),
		            "instance %d: pool %" PRId64 " over the residencies' %" PRId64 " and the largest workspace %"
		            PRId64 " (%s)", k, p->fast_bytes, alone, most, p->fast_bytes <= p->limit ? err : "");
		/* each workspace as large as the gap at its kernel */
		int64_t *hole = arena_array(&a, (size_t)s->n + 1, sizeof(int64_t));
		memplan_holes(p, p->limit, hole, NULL);
		for (int st = 0; st < s->n; st++)
			al[st].workspace = hole[st] / MEMPLAN_ALIGN * MEMPLAN_ALIGN;
		memplan(p, &a);
		tried++;
		fitted += p->fast_bytes <= p->limit;
		test_expect(p->fast_bytes <= p->limit && memplan_verify(p, &a, err, sizeof err),
		            "instance %d: workspaces as large as their gaps: pool %" PRId64 " over the limit %" PRId64 " (%s)",
		            k, p->fast_bytes, p->limit, p->fast_bytes <= p->limit ? err : "");
	}
	printf("workspaces in the pool: %d of %d random instances fit with every workspace as large as its gap\n", fitted,
	       tried);
	test_fit_workspaces(g, s, fake, &a);
	arena_free(&a);
}

/* mip_restrict: fixed columns leave the program, their part moves into the row bounds */
static void test_restrict(void)
{
	Mip *m = mip_new();
	int x0 = mip_add_col(m, 0, 1, 3, true), x1 = mip_add_col(m, 0, 1, 1, true), d = mip_add_col(m, 0, 10, 0, false);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x0, x1}, (double[]){1, 1}, 1, 1);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x1, d}, (double[]){2, -1}, -MIP_INF, 0);
	int col_of[3];
	double constant;
	Mip *r = mip_restrict(m, (double[]){0, NAN, NAN}, col_of, &constant);
	/* the first row, x1 = 1, becomes x1's bounds */
	test_expect(r && mip_ncols(r) == 2 && mip_nrows(r) == 1 && col_of[0] == -1 && col_of[1] == 0 && col_of[2] == 1 &&
	            constant == 0, "restrict x0 = 0");
	char err[128];
	MipResult res;
	if (r && mip_solve(r, &(MipOptions){0}, &res, err, sizeof err)) { /* x1 = 1 (the first row), d >= 2 */
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, 1) && close_to(res.x[1], 2),
		            "restricted solve: %s %g", mip_status_name(res.status), res.objective);
		mip_result_free(&res);
	}
	mip_free(r);
	r = mip_restrict(m, (double[]){1, 0, NAN}, col_of, &constant);
	test_expect(r && mip_nrows(r) == 0 && constant == 3,
	            "restrict x0 = 1, x1 = 0: the first row holds and goes, the second bounds d");
	mip_free(r);
	test_expect(!mip_restrict(m, (double[]){1, 1, NAN}, col_of, &constant), "x0 = x1 = 1 breaks the first row");
	mip_free(m);

	/* rows that hold whatever the open columns are leave; one that cannot hold, or bounds that cross, give NULL */
	m = mip_new();
	int y0 = mip_add_col(m, 0, 1, -1, true), y1 = mip_add_col(m, 0, 1, -1, true), k = mip_add_col(m, 0, 10, -1, true);
	int z = mip_add_col(m, 0, 1, 0, true);
	mip_add_row(m, MIP_UNTAGGED, 3, (int[]){y0, y1, z}, (double[]){1, 1, 1}, -MIP_INF, 5);  /* at most 3: always holds */
	mip_add_row(m, MIP_UNTAGGED, 3, (int[]){y0, y1, z}, (double[]){1, 1, -4}, -MIP_INF, 1); /* z = 0: y0 + y1 <= 1 */
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){k, z}, (double[]){2, 1}, -MIP_INF, 9);           /* z = 0: k <= 4 (4.5 inwards) */
	int cof[4];
	r = mip_restrict(m, (double[]){NAN, NAN, NAN, 0}, cof, &constant);
	test_expect(r && mip_nrows(r) == 1, "z = 0: one row left of three (%d)", r ? mip_nrows(r) : -1);
	if (r && mip_solve(r, &(MipOptions){0}, &res, err, sizeof err)) { /* y0 + y1 = 1, k = 4 */
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, -5) && close_to(res.x[cof[k]], 4),
		            "restricted with a bound rounded inwards: %s %g", mip_status_name(res.status), res.objective);
		mip_result_free(&res);
	}
	mip_free(r);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){y0, z}, (double[]){3, 1}, 2, MIP_INF);           /* z = 0: y0 >= 2/3, so y0 = 1 */
	r = mip_restrict(m, (double[]){NAN, NAN, NAN, 0}, cof, &constant);
	if (r && mip_solve(r, &(MipOptions){0}, &res, err, sizeof err)) {
		test_expect(res.status == MIP_OPTIMAL && close_to(res.x[cof[y0]], 1) && close_to(res.x[cof[y1]], 0),
		            "a lower bound from a row: %s y0 %g", mip_status_name(res.status), res.x[cof[y0]]);
		mip_result_free(&res);
	}
	test_expect(r != NULL, "z = 0 with y0 >= 2/3");
	mip_free(r);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){y1, z}, (double[]){4, 1}, 5, MIP_INF); /* z = 0: y1 >= 5/4, above its bound */
	test_expect(!mip_restrict(m, (double[]){NAN, NAN, NAN, 0}, cof, &constant), "a row whose column cannot meet it");
	r = mip_restrict(m, (double[]){NAN, NAN, NAN, 1}, cof, &constant); /* z = 1: every row holds or is a bound */
	test_expect(r && mip_nrows(r) == 0, "z = 1: no rows left (%d)", r ? mip_nrows(r) : -1);
	if (r && mip_solve(r, &(MipOptions){0}, &res, err, sizeof err)) { /* y0 = y1 = 1, k = 4 */
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, -6), "z = 1: %s %g",
		            mip_status_name(res.status), res.objective);
		mip_result_free(&res);
	}
	mip_free(r);
	mip_free(m);
}

/* An absolute gap stops both solvers once the best is that close to the bound, and counts as solved */
static void test_abs_gap(void)
{
	Mip *m = mip_new(); /* min -x0 - x1, 2 x0 + 2 x1 <= 3: the root relaxation -1.5, the optimum -1 */
	int x0 = mip_add_col(m, 0, 1, -1, true), x1 = mip_add_col(m, 0, 1, -1, true);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x0, x1}, (double[]){2, 2}, -MIP_INF, 3);
	static const char *backends[] = {"cbc", "lp_solve"};
	for (int b = 0; b < 2; b++) {
		MipResult res;
		char err[128];
		if (!mip_solve(m, &(MipOptions){.backend = backends[b], .gap = 1e-9, .abs_gap = 1}, &res, err, sizeof err)) {
			test_expect(false, "%s: %s", backends[b], err);
			continue;
		}
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, -1), "%s with an absolute gap: %s %g",
		            backends[b], mip_status_name(res.status), res.objective);
		mip_result_free(&res);
	}
	mip_free(m);
}

/*
 * MipOptions.deadline: CBC's log lines read for their bound; a program
 * solved within its deadline gives the result it gives without one; one
 * that CBC cannot finish (a market split, 5 rows of 40 binaries with an
 * integer column fixed at 1 of cost 7: its relaxation is 7, and CBC
 * searches it for minutes) is stopped at the deadline, well before its
 * time limit, with the relaxation, as its log reported it, as the bound.
 */
static void test_deadline(void)
{
	static const struct {
		const char *line;
		double bound; /* NAN: none */
	} lines[] = {
		{"Continuous objective value is 75260.5 - 4.41 seconds", 75260.5},
		{"Cbc0010I After 0 nodes, 1 on tree, 82182.79 best solution, best possible 75766.322 (3.79 seconds)",
		 75766.322},
		{"Cbc0013I At root node, 91 cuts changed objective from 75427.01 to 75766.322 in 15 passes", 75766.322},
		{"Cbc0005I Partial search - best objective 75805.135 (best possible 75260.519), took 0 iterations and 0 "
		 "nodes (21.90 seconds)",
		 75260.519},
		{"Cbc0010I After 0 nodes, 1 on tree, 1e+50 best solution, best possible -1e+50 (0.10 seconds)", NAN},
		{"Cbc0012I Integer solution of 75805.135 found by Reduced search after 0 iterations and 0 nodes (8.41 "
		 "seconds)",
		 NAN},
		{"Cbc0038I Full problem 13511 rows 13626 columns, reduced to 2366 rows 1786 columns", NAN},
	};
	for (size_t i = 0; i < countof(lines); i++) {
		double b = NAN;
		bool got = mip_log_bound(lines[i].line, &b);
		test_expect(got == !isnan(lines[i].bound) && (!got || b == lines[i].bound), "log line %zu: %s %g", i,
		            got ? "bound" : "no bound", b);
	}

	static const struct {
		const char *line;
		double objective; /* NAN: none */
	} sols[] = {
		{"Cbc0012I Integer solution of 9350895.1 found by RINS after 0 iterations and 0 nodes (7.28 seconds)",
		 9350895.1},
		{"Cbc0004I Integer solution of 16 found after 2118 iterations and 615 nodes (0.32 seconds)", 16},
		{"Cbc0016I Integer solution of 15 found by strong branching after 2157 iterations and 671 nodes (0.52 "
		 "seconds)",
		 15},
		{"Cbc0010I After 0 nodes, 1 on tree, 82182.79 best solution, best possible 75766.322 (3.79 seconds)", NAN},
	};
	for (size_t i = 0; i < countof(sols); i++) {
		double v = NAN;
		bool got = mip_log_solution(sols[i].line, &v);
		test_expect(got == !isnan(sols[i].objective) && (!got || v == sols[i].objective), "solution line %zu: %s %g",
		            i, got ? "solution" : "none", v);
	}

	/* a solution better than beat, as the log rounds it: not the start's own plan printed rounded down */
	test_expect(!mip_log_beats(199724.62, 199724.6238) && !mip_log_beats(199724.63, 199724.6238) &&
	                mip_log_beats(199700.5, 199724.6238) && mip_log_beats(15, 16) && !mip_log_beats(16, 16),
	            "mip_log_beats");

	Mip *m = mip_new(); /* test_abs_gap's: the optimum -1 at x0 + x1 = 1 */
	int x0 = mip_add_col(m, 0, 1, -1, true), x1 = mip_add_col(m, 0, 1, -1, true);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x0, x1}, (double[]){2, 2}, -MIP_INF, 3);
	MipResult res;
	char err[128];
	if (mip_solve(m, &(MipOptions){.time_limit = 30, .deadline = 30}, &res, err, sizeof err)) {
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, -1) && !res.stopped && res.x &&
		                close_to(res.x[x0] + res.x[x1], 1),
		            "within its deadline: %s %g", mip_status_name(res.status), res.objective);
		mip_result_free(&res);
	} else {
		test_expect(false, "within its deadline: %s", err);
	}
	mip_free(m);

	m = mip_new();
	enum { ROWS = 5, COLS = 40 };
	int x[COLS];
	for (int j = 0; j < COLS; j++)
		x[j] = mip_add_col(m, 0, 1, 0, true);
	mip_add_col(m, 1, 1, 7, true);
	unsigned seed = 12345;
	for (int i = 0; i < ROWS; i++) {
		int cols[COLS + 2];
		double vals[COLS + 2], sum = 0;
		for (int j = 0; j < COLS; j++) {
			seed = seed * 1103515245u + 12345u;
			cols[j] = x[j];
			vals[j] = (seed >> 16) % 100;
			sum += vals[j];
		}
		cols[COLS] = mip_add_col(m, 0, MIP_INF, 1, false), vals[COLS] = 1; /* above and below the target */
		cols[COLS + 1] = mip_add_col(m, 0, MIP_INF, 1, false), vals[COLS + 1] = -1;
		mip_add_row(m, MIP_UNTAGGED, COLS + 2, cols, vals, floor(sum / 2), floor(sum / 2));
	}
	double t0 = now_seconds();
	if (mip_solve(m, &(MipOptions){.time_limit = 600, .deadline = 2}, &res, err, sizeof err)) {
		double took = now_seconds() - t0;
		test_expect(res.stopped && res.status == MIP_NO_SOLUTION && !res.x && close_to(res.bound, 7) && took < 60,
		            "a market split with a deadline of 2 s: %s, stopped %d, bound %g, after %.1f s",
		            mip_status_name(res.status), res.stopped, res.bound, took);
		mip_result_free(&res);
	} else {
		test_expect(false, "a market split with a deadline: %s", err);
	}
	/* one that has reported a solution better than `beat` by its deadline is stopped at its later one */
	t0 = now_seconds();
	if (mip_solve(m, &(MipOptions){.time_limit = 600, .deadline = 2, .deadline_late = 4, .beat = 1e9}, &res, err,
	              sizeof err)) {
		double took = now_seconds() - t0;
		test_expect(res.stopped && took >= 4 && took < 60, "a market split that found solutions: stopped %d after %.1f s",
		            res.stopped, took);
		mip_result_free(&res);
	} else {
		test_expect(false, "a market split with a late deadline: %s", err);
	}
	mip_free(m);
}

/* tanh_chain 64 wide and its all-fast placement; NULL if either fails. */
static Graph *tanh_chain_fast(Arena *a, const char *name, const CostModel *cm, Schedule **s, Placement **fast)
{
	char err[512];
	Graph *g = tanh_chain(a, name, 64, s);
	if (!g)
		return NULL;
	PlaceOptions fo = {.optimizer = OPT_ALL_FAST, .cm = cm};
	*fast = place(g, *s, &fo, a, NULL, err, sizeof err);
	test_expect(*fast, "%s: all-fast places: %s", name, err);
	return *fast ? g : NULL;
}

/*
 * recompute under a limit the solver proves infeasible though it is
 * above the stated lower bound (kernels read fast memory only, so that
 * bound is only one): the error says so, and --ratio (PlaceOptions.ratio)
 * places at a larger limit that works, as below the bound.
 */
static void test_recompute_ratio(const CostModel *base)
{
	Arena a = {0};
	const char *name = "a chain under recompute's floor";
	Schedule *s;
	Placement *fast;
	CostModel duplex = *base; /* as on a GPU */
	duplex.duplex = true;
	Case c = {name, "dense(2 => 2) tanh tanh tanh tanh tanh tanh tanh tanh dense(2 => 2)", "2", 2, "sgd(lr = 0.1)",
	          -1, false, 1, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", name);
	if (!g)
		return;
	s = schedule_graph(g, &a);
	char err[512];
	PlaceOptions fo = {.optimizer = OPT_ALL_FAST, .cm = &duplex};
	fast = place(g, s, &fo, &a, NULL, err, sizeof err);
	test_expect(fast, "%s: all-fast places: %s", name, err);
	if (!fast)
		return;
	PlaceOptions o = {.optimizer = OPT_RECOMPUTE, .target = TARGET_GPU, .cm = &duplex, .time_limit = 20, .tiny = -1,
	                  .gap = -1};
	o.limit = 64;
	test_expect(!place(g, s, &o, &a, NULL, err, sizeof err) && strstr(err, "at least "),
	            "%s: a 64-byte limit accepted, or no bound stated: %s", name, err);
	const char *at = strstr(err, "at least ");
	int64_t bound = at ? strtoll(at + strlen("at least "), NULL, 10) : 0, top = memplan_fast_peak(fast, &a);
	int64_t worst = 0; /* the largest limit proved infeasible above the bound */
	for (int k = 19; k >= 1 && bound > 0 && worst == 0; k--) {
		o.limit = (bound + (top - bound) * k / 20) / 64 * 64;
		if (!place(g, s, &o, &a, NULL, err, sizeof err) && strstr(err, "the solver proved"))
			worst = o.limit;
	}
	test_expect(worst > 0, "%s: no limit is proved infeasible above the bound: the check tests nothing", name);
	if (worst == 0) {
		arena_free(&a);
		return;
	}
	test_expect(strstr(err, "recompute moves nothing to the slow tier"), "%s: the message: %s", name, err);
	test_expect(strstr(err, "overflows") && strstr(err, " at ") && strstr(err, "by up to"),
	            "%s: the message does not say where the limit binds: %s", name, err);
	printf("%s, limit %" PRId64 " (the bound %" PRId64 ", all-fast %" PRId64 "): %s\n", name, worst, bound, top, err);
	o.ratio = "test";
	o.fast_fraction = (double)worst / (double)(s->peak + place_kernel_scratch(s, &duplex));
	PlaceStats st;
	Placement *p = place(g, s, &o, &a, &st, err, sizeof err);
	test_expect(p, "%s: --ratio at %" PRId64 " places nothing: %s", name, worst, err);
	if (p) {
		test_expect(placement_verify(g, p, err, sizeof err), "%s: --ratio: placement_verify: %s", name, err);
		test_expect(p->limit > worst && p->fast_bytes + p->workspace <= p->limit,
		            "%s: --ratio at %" PRId64 ": placed for %" PRId64 ", pool %" PRId64, name, worst, p->limit,
		            p->fast_bytes);
		printf("%s: --ratio at %" PRId64 " placed for %" PRId64 " bytes\n", name, worst, p->limit);
	}
	arena_free(&a);
}

/*
 * The linear relaxation (MipOptions.relax) on both backends, and a
 * cutoff (auto's starts after the first) through place_ilp: a program
 * whose relaxation is no faster than the cutoff is not solved; one whose
 * relaxation is faster is solved as without a cutoff.
 */
static void test_cutoff(const CostModel *cm)
{
	Mip *m = mip_new(); /* min -x0 - x1, 2 x0 + 2 x1 <= 3: the relaxation -1.5, the optimum -1 */
	int x0 = mip_add_col(m, 0, 1, -1, true), x1 = mip_add_col(m, 0, 1, -1, true);
	mip_add_row(m, MIP_UNTAGGED, 2, (int[]){x0, x1}, (double[]){2, 2}, -MIP_INF, 3);
	static const char *backends[] = {"cbc", "lp_solve"};
	MipResult res;
	char err[512];
	for (int b = 0; b < 2; b++) {
		if (!mip_solve(m, &(MipOptions){.backend = backends[b], .relax = true}, &res, err, sizeof err)) {
			test_expect(false, "%s, the relaxation: %s", backends[b], err);
			continue;
		}
		test_expect(res.status == MIP_OPTIMAL && close_to(res.objective, -1.5) && close_to(res.bound, -1.5),
		            "%s, the relaxation: %s %g (bound %g)", backends[b], mip_status_name(res.status), res.objective,
		            res.bound);
		mip_result_free(&res);
	}
	mip_free(m);

	Arena a = {0};
	const char *name = "a chain with a cutoff";
	Schedule *s;
	Placement *fast;
	Graph *g = tanh_chain_fast(&a, name, cm, &s, &fast);
	if (!g)
		return;
	/* 45%: CBC proves this chain's optimum in under a second there, and takes 5-60 s from 47% to 55% of the peak */
	PlaceOptions o = {.optimizer = OPT_AUTO, .limit = memplan_fast_peak(fast, &a) * 45 / 100, .cm = cm,
	                  .time_limit = 20, .tiny = -1, .gap = -1, .lns = -1};
	PlaceStats st;
	Placement *p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
	test_expect(p && st.gap <= 1e-9, "%s: places at 45%% of the peak: %s", name, p ? st.status : err);
	if (!p)
		return;
	double best = st.objective;
	o.cutoff = placement_predict(fast, cm, NULL) * (1 - 1e-6); /* below all-fast: below any relaxation */
	test_expect(!place_ilp(g, s, &o, &a, &st, err, sizeof err) && strstr(err, "no placement faster"),
	            "%s: a placement below all-fast's time, %.9g s: %s", name, o.cutoff, err);
	o.cutoff = best * (1 + 1e-4);
	p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
	test_expect(p && close_to(st.objective, best), "%s: with a cutoff above the optimum %.9g s: %s %.9g", name, best,
	            p ? st.status : err, p ? st.objective : 0.0);
	arena_free(&a);
}

/* Every kernel may run fast with an 8 KiB workspace or at three times the time with none. */
static int ws_algos(const CostModel *cm, const Node *n, const KernelAlgo **out)
{
	(void)cm, (void)n;
	static const KernelAlgo al[] = {{1, "fast", 1e-6, 8192, false}, {0, "slow", 3e-6, 0, false}};
	*out = al;
	return 2;
}

/*
 * A recompute runs its kernel with the algorithm its step runs (the value
 * made again is bitwise the one it replaces), and the objective charges
 * it that algorithm's time: recompute and auto on a chain whose kernels
 * each have a fast algorithm with a workspace and a slow one without, as
 * on a GPU, at limits from the peak down. Each placement's prediction
 * (which charges every recompute its step's algorithm) equals its
 * objective, and what it holds at once with the workspaces fits the limit; some
 * placement recomputes a kernel that runs the slow algorithm (else the
 * check tests nothing). The workspace regions (PLACE_WS_REGIONS columns,
 * each held in its run of steps) relax the one column of the whole step:
 * each optimum is no slower than with one column, and some faster (the
 * steps where little is live give their kernels the fast algorithm).
 */
static void test_recompute_algos(const CostModel *base)
{
	Arena a = {0};
	const char *name = "a chain with algorithms";
	/* activations of 4 KiB, weights of at most 4 KiB: the activations make the peak */
	Case c = {name, "dense(4 => 256) tanh tanh tanh tanh tanh tanh dense(256 => 2)", "4", 2, "sgd(lr = 0.1)", -1,
	          false, 1, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", name);
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	CostModel cm = *base;
	cm.algos = ws_algos;
	const KernelAlgo *al;
	ws_algos(&cm, NULL, &al);
	char err[512];
	int placed = 0, slow_recomputes = 0, regions_faster = 0;
	static const OptimizerId opts[] = {OPT_RECOMPUTE, OPT_AUTO};
	for (int k = 8; k >= 1; k--) {
		int64_t limit = (s->peak + al[0].workspace) * k / 8 / 64 * 64;
		for (size_t oi = 0; oi < countof(opts); oi++) {
			PlaceOptions o = {.optimizer = opts[oi], .limit = limit, .cm = &cm, .time_limit = 20, .tiny = -1,
			                  .gap = -1, .lns = -1, .kernels_fast = true};
			PlaceStats st;
			Placement *p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
			if (!p)
				continue;
			placed++;
			double t = placement_predict(p, &cm, NULL);
			int slow = 0;
			for (int i = 0; i < p->recomputes.n; i++)
				slow += p->algo && p->algo[p->recomputes.v[i].step] == &al[1];
			slow_recomputes += slow;
			test_expect(close_to(t, st.objective), "%s, %s at %" PRId64 " bytes: predicted %.9g, objective %.9g "
			            "(%d recomputes, %d of them with the slow algorithm)", name, optimizer_info[opts[oi]].name,
			            limit, t, st.objective, p->recomputes.n, slow);
			memplan(p, &a);
			int64_t peak = memplan_fast_peak(p, &a); /* the bytes live at once, workspaces with them */
			test_expect(peak <= limit && memplan_verify(p, &a, err, sizeof err),
			            "%s, %s at %" PRId64 " bytes: %" PRId64 " bytes live at once (%s)", name,
			            optimizer_info[opts[oi]].name, limit, peak, peak <= limit ? err : "");
			printf("%s, %s at %d/8 of the peak: %.6f us, %d recomputes, %d with the slow algorithm\n", name,
			       optimizer_info[opts[oi]].name, k, t * 1e6, p->recomputes.n, slow);
			PlaceOptions one = o;
			one.ws_regions = 1;
			PlaceStats st1;
			Placement *p1 = place_ilp(g, s, &one, &a, &st1, err, sizeof err);
			test_expect(!p1 || st.objective <= st1.objective * (1 + 1e-9),
			            "%s, %s at %" PRId64 " bytes: %.9g with workspace regions, %.9g with one column", name,
			            optimizer_info[opts[oi]].name, limit, st.objective, st1.objective);
			if (p1 && st.objective < st1.objective * (1 - 1e-6)) {
				regions_faster++;
				printf("  with one workspace column: %.6f us\n", st1.objective * 1e6);
			}
		}
	}
	test_expect(placed > 0 && slow_recomputes > 0, "%s: %d placements, no recompute with the slow algorithm: the "
	            "check tests nothing", name, placed);
	test_expect(regions_faster > 0, "%s: the workspace regions gave no placement faster than one column: the check "
	            "tests nothing", name);
	arena_free(&a);
}

/*
 * Neighbourhoods re-solved three at once (child processes): from the
 * all-slow placement of a long chain under a limit that holds everything
 * (every window can improve it), the first three windows are all solved
 * from that start, so the results after the first are merged into a plan
 * that has changed since. The result is a valid packed placement whose
 * prediction is its objective, faster than the start and no faster than
 * all-fast (the optimum here).
 */
static void test_lns_jobs(const CostModel *cm)
{
	Arena a = {0};
	char err[512];
	Case c = {"a long chain", "dense(64 => 64) tanh tanh tanh tanh tanh tanh tanh tanh tanh tanh tanh tanh tanh tanh "
	          "tanh tanh dense(64 => 2)", "64", 2, "sgd(lr = 0.1)", -1, false, 1, NULL};
	Graph *g = build(&a, &c);
	test_expect(g, "%s: builds", c.name);
	if (!g)
		return;
	Schedule *s = schedule_graph(g, &a);
	PlaceOptions fo = {.optimizer = OPT_ALL_FAST, .cm = cm}, so = {.optimizer = OPT_ALL_SLOW, .cm = cm};
	Placement *fast = place(g, s, &fo, &a, NULL, err, sizeof err), *start = place(g, s, &so, &a, NULL, err, sizeof err);
	test_expect(fast && start, "%s: all-fast and all-slow place: %s", c.name, err);
	if (!fast || !start)
		return;
	int64_t limit = memplan_fast_peak(fast, &a) + 64;
	PlaceOptions o = {.optimizer = OPT_AUTO, .limit = limit, .cm = cm, .time_limit = 20, .tiny = c.tiny,
	                  .gap = -1, .start = start, .lns = 1, .jobs = 3};
	PlaceStats st;
	Placement *p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
	test_expect(p, "%s: auto from all-slow, 3 neighbourhoods at once: %s", c.name, err);
	if (!p)
		return;
	test_expect(st.lns_jobs == 3 && st.lns_merges >= 1, "%s: %d at once, %d results merged", c.name, st.lns_jobs,
	            st.lns_merges);
	test_expect(placement_verify(g, p, err, sizeof err), "%s, 3 at once: placement_verify: %s", c.name, err);
	memplan(p, &a);
	test_expect(p->fast_bytes + p->workspace <= limit, "%s, 3 at once: pool %" PRId64 " over the limit %" PRId64,
	            c.name, p->fast_bytes, limit);
	double pred = placement_predict(p, cm, NULL), t0 = placement_predict(start, cm, NULL),
	       best = placement_predict(fast, cm, NULL);
	test_expect(close_to(pred, st.objective), "%s, 3 at once: predicted %.9g, objective %.9g", c.name, pred,
	            st.objective);
	test_expect(pred < t0 && pred >= best * (1 - 1e-9), "%s, 3 at once: %.9g against the start %.9g, all-fast %.9g",
	            c.name, pred, t0, best);
	printf("%s, 3 neighbourhoods at once from all-slow's %.6f us: %d re-solves, %d better, %d merged: %.6f us "
	       "(all-fast %.6f us)\n",
	       c.name, t0 * 1e6, st.lns_solves, st.lns_better, st.lns_merges, pred * 1e6, best * 1e6);
	arena_free(&a);
}

/*
 * Spans only as far as a move needs (span_needed) against every span up
 * to 32, both solved to optimality: on a chain of activations whose moves
 * fit in a few of its kernels, the program is smaller (at some limit) and
 * its optimum no slower, at limits where moves pay off.
 */
static void test_span_needed(const CostModel *cm)
{
	Arena a = {0};
	char err[512];
	const char *name = "a chain of activations";
	Schedule *s;
	Placement *fast;
	Graph *g = tanh_chain_fast(&a, name, cm, &s, &fast);
	if (!g)
		return;
	int64_t peak = memplan_fast_peak(fast, &a);
	int smaller = 0;
	/* at 45% and 75% of the peak (CBC proves this chain's optima in under a second there, and takes 5-60 s or
	   more from 47% to 60%) */
	static const int pct[] = {45, 75};
	for (int ki = 0; ki < 2; ki++) {
		int k = pct[ki];
		double obj[2] = {0};
		long nnz[2] = {0};
		for (int all = 0; all < 2; all++) {
			PlaceOptions o = {.optimizer = OPT_AUTO, .limit = peak * k / 100, .cm = cm, .time_limit = 20,
			                  .tiny = -1, .gap = -1, .span = 32, .span_all = all, .lns = -1};
			PlaceStats st;
			Placement *p = place_ilp(g, s, &o, &a, &st, err, sizeof err);
			test_expect(p, "%s at %d%% of the peak, %s spans: %s", name, k, all ? "every" : "needed", err);
			if (!p)
				return;
			obj[all] = st.objective;
			test_expect(st.gap <= 1e-9, "%s at %d%%, %s spans: not proved optimal (%s, gap %g)", name, k,
			            all ? "every" : "needed", st.status, st.gap);
			nnz[all] = st.nonzeros;
		}
		test_expect(nnz[0] <= nnz[1], "%s at %d%%: %ld nonzeros with the spans needed, %ld with every span", name,
		            k, nnz[0], nnz[1]);
		test_expect(obj[0] <= obj[1] * (1 + 1e-9), "%s at %d%%: optimum %.9g with the spans needed, %.9g with every span",
		            name, k, obj[0], obj[1]);
		smaller += nnz[0] < nnz[1];
		printf("%s at %d%% of the peak: spans as needed %ld nonzeros, %.6f us; every span %ld nonzeros, %.6f us\n",
		       name, k, nnz[0], obj[0] * 1e6, nnz[1], obj[1] * 1e6);
	}
	test_expect(smaller > 0, "%s: the spans needed never made a smaller program: the comparison tests nothing", name);
	arena_free(&a);
}

int main(void)
{
	test_broken_row();
	test_squeeze();
	test_workspaces();
	test_abs_gap();
	test_deadline();
	test_restrict();
	/* slow reads 3x, slow writes 6x slower; compute comparable with memory so that some kernels
	   are compute-bound in fast and memory-bound in slow (not separable) */
	Roofline r = {.flop_rate = 10e9, .fast_read = 10e9, .fast_write = 10e9,
	              .slow_read = 10e9 / 3, .slow_write = 10e9 / 6, .async_factor = 0.5};
	Arena a = {0};
	CostModel *cm = costmodel_roofline(&r, &a);
	CostModel reread = *cm;
	reread.kernel_time = reread_kernel;
	Roofline vr = r;
	vr.slow_read /= 100;
	vr.slow_write /= 100;
	CostModel *very = costmodel_roofline(&vr, &a);
	very->kernel_time = reread_kernel;
	test_checkpoint_start(cm);
	test_checkpoint_swaps(&reread);
	test_offloaded_swaps(&r);
	test_cutoff(&reread);
	test_recompute_ratio(&reread);
	test_recompute_algos(&reread);
	test_lns_jobs(&reread);
	test_span_needed(&reread);
	test_in_place(cm);
	for (size_t i = 0; i < countof(cases); i++)
		run_case(&cases[i], cases[i].rereads == 2 ? very : cases[i].rereads ? &reread : cm);
	/* the recompute checks above must have seen recomputation win somewhere */
	test_expect(recompute_wins > 0, "recomputation never beats static: the recompute cases test nothing");
	printf("recompute beat static at %d limits\n", recompute_wins);
	test_expect(repaired > 0, "no solution needed a repair for fragmentation: the repair checks test nothing");
	printf("solutions repaired for fragmentation: %d\n", repaired);
	test_expect(squeezed > 0, "no start's solution packed only squeezed: the squeezed checks test nothing");
	printf("starts' solutions kept as packed squeezed: %d\n", squeezed);
	test_expect(spanning_moves > 0, "no placement has a move that spans kernels: the chunk checks test nothing");
	test_expect(spans_win > 0, "spanning moves never beat moves of one kernel: the comparison tests nothing");
	printf("moves spanning kernels: %d; spans beat spans of one at %d limits\n", spanning_moves, spans_win);
	test_expect(offload_wins > 0, "offloading weights and state never beats keeping them: its checks test nothing");
	printf("offloading beat keeping weights and state in one tier at %d limits\n", offload_wins);
	arena_free(&a);
	return test_summary();
}
