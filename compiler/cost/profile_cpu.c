/*
 * profile_cpu.c - fill the profile database for a training step (profile.h).
 *
 *   signatures   the step's nodes, deduplicated by kernel signature
 *   load         what the database already holds for this machine,
 *                backend and thread count
 *   measure      each incomplete signature: all-fast, all-slow, then by
 *                its rule (noise / all / additive), each measurement
 *                committed as soon as it is taken
 *   moves        copies fast -> slow and slow -> fast, blocking and on
 *                the copy thread, 64 KiB to 256 MiB
 *
 * A profile that was interrupted resumes where it stopped: a signature's
 * stored measurements are reused, and its rule, once recorded, is not
 * decided again. When everything is stored the runtime is never started,
 * so a second profile of the same model costs only compiling the model
 * and reading the database.
 *
 * Progress goes to stderr: a bar with an estimate of the time left when
 * stderr is a terminal, else one line per kernel.
 */
#include "profile.h"

#include <math.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util.h"

/* Progress of a profile, on stderr. */
typedef struct Progress {
	bool tty;              /* draw a bar (stderr is a terminal) */
	bool quiet;            /* draw nothing */
	bool brief;            /* off a terminal, no line per unit */
	int total;             /* units of work: kernels to profile, +1 for the moves */
	int done;              /* units finished */
	double start;          /* when measuring started */
	int width;             /* columns of the terminal */
} Progress;

/* One profile run. */
typedef struct Run {
	ProfileOptions o;      /* resolved options */
	ProfileDb *db;         /* the database */
	ProfileKey key;        /* machine, backend, threads */
	RtProfiler *p;         /* the runtime's profiler (made when first needed) */
	Progress pr;           /* progress display */
	ProfileReport *r;      /* what was done */
	long kill_after;       /* test hook: SIGKILL self after this many measurements (0: never) */
	Arena *a;              /* memory */
	char *err;             /* where a failure is described */
	size_t errlen;
} Run;

/* "3m05s", "42s", "1h02m" */
static const char *fmt_duration(double s, char *buf, size_t size)
{
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, size, "%lds", t);
	return buf;
}

/* "1.234 ms" */
static const char *fmt_time(double s, char *buf, size_t size)
{
	if (s >= 1)
		snprintf(buf, size, "%.3f s", s);
	else if (s >= 1e-3)
		snprintf(buf, size, "%.3f ms", 1e3 * s);
	else
		snprintf(buf, size, "%.1f us", 1e6 * s);
	return buf;
}

/* ---- progress ----------------------------------------------------------------- */

static void progress_begin(Progress *pr, int total, bool quiet, bool brief)
{
	*pr = (Progress){.tty = isatty(STDERR_FILENO) == 1, .quiet = quiet, .brief = brief, .total = total,
	                 .start = now_seconds(), .width = 80};
	struct winsize ws;
	if (pr->tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		pr->width = ws.ws_col;
}

/* Redraw the bar: fraction done, counts, elapsed time, time left, what is being measured. */
static void progress_draw(const Progress *pr, int measurements, const char *what)
{
	if (pr->quiet || !pr->tty)
		return;
	enum { BAR = 24 };
	char bar[BAR + 1], el[32], eta[32], line[512];
	double frac = pr->total ? (double)pr->done / pr->total : 1;
	int fill = (int)(frac * BAR + 0.5);
	for (int i = 0; i < BAR; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[BAR] = '\0';
	double elapsed = now_seconds() - pr->start;
	if (pr->done > 0)
		fmt_duration(elapsed / pr->done * (pr->total - pr->done), eta, sizeof eta);
	else
		snprintf(eta, sizeof eta, "--");
	int n = snprintf(line, sizeof line, "[%s] %3d%% %d/%d kernels, %d measured, %s, ETA %s  %s", bar,
	                 (int)(100 * frac), pr->done, pr->total, measurements, fmt_duration(elapsed, el, sizeof el), eta,
	                 what);
	if (n > pr->width - 1)
		line[pr->width - 1] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
}

/* A unit is done: on a terminal redraw the bar; else print `line` on a line of its own. */
static void progress_step(Progress *pr, int measurements, const char *line)
{
	pr->done++;
	if (pr->quiet)
		return;
	if (pr->tty)
		progress_draw(pr, measurements, "");
	else if (!pr->brief)
		fprintf(stderr, "profile: [%d/%d] %s\n", pr->done, pr->total, line);
}

static void progress_end(const Progress *pr)
{
	if (!pr->quiet && pr->tty)
		fprintf(stderr, "\r\033[K");
}

/* ---- kernels -------------------------------------------------------------------- */

/* The measurement of config: from the database, or taken now and committed. */
static bool measure(Run *run, ProfileSig *sig, RtProfKernel *k, uint32_t config, ProfileMeas *out)
{
	const ProfileMeas *have = profile_sig_meas(sig, config);
	if (have) {
		*out = *have;
		return true;
	}
	char what[256];
	snprintf(what, sizeof what, "%s %s, configuration %#x", op_info[sig->first->op].name, sig->first->name,
	         (unsigned)config);
	progress_draw(&run->pr, run->r->measurements, what);
	RtTiming t = rt_profiler_time(run->p, k, config);
	*out = (ProfileMeas){config, t.median, t.spread, t.runs};
	if (!pdb_put_meas(run->db, &run->key, sig, out, run->err, run->errlen))
		return false;
	vec_push(run->a, &sig->meas, *out);
	run->r->measurements++;
	if (run->kill_after > 0 && run->r->measurements >= run->kill_after)
		raise(SIGKILL); /* test hook: an interrupted profile at a known point */
	return true;
}

/* How the configurations between all-fast and all-slow are to be profiled. */
static ProfileRule decide(const Run *run, const ProfileSig *sig, const ProfileMeas *fast, const ProfileMeas *slow)
{
	double noise = fmax(fmax(fast->spread, slow->spread), run->o.noise_floor * fast->seconds);
	if (fabs(slow->seconds - fast->seconds) <= noise)
		return RULE_NOISE;
	return sig->nargs <= run->o.max_full_args ? RULE_ALL : RULE_ADDITIVE;
}

/* The runtime's profiler (its pools, its kernels' engine), made at the first measurement. */
static void start_profiler(Run *run)
{
	if (run->p)
		return;
	RtProfilerOptions po = {
		.threads = run->o.threads, .slow_kind = run->o.slow_kind, .slow_dir = run->o.slow_dir,
		.numa_node = run->o.numa_node, .warmup = run->o.warmup, .runs = run->o.runs,
		.min_runs = 3, .max_seconds = run->o.max_seconds, .prog = "autotmc",
	};
	run->p = rt_profiler_new(&po);
}

static bool profile_kernel(Run *run, ProfileSig *sig)
{
	start_profiler(run);
	RtProfKernel *k = rt_profiler_kernel(run->p, sig->desc);
	bool ok = true;
	int64_t scratch = rt_profiler_kernel_scratch(run->p, k);
	if (!sig->known || sig->scratch != scratch) {
		sig->known = true;
		sig->scratch = scratch;
		ok = pdb_put_kernel(run->db, &run->key, sig, run->err, run->errlen);
	}
	ProfileMeas fast, slow;
	uint32_t all = (uint32_t)((UINT64_C(1) << sig->nargs) - 1);
	ok = ok && measure(run, sig, k, 0, &fast);
	if (!ok || run->o.fast_only) {
		rt_profiler_kernel_free(run->p, k);
		if (ok) {
			run->r->profiled++;
			char t0[32];
			char line[256];
			snprintf(line, sizeof line, "%s %s: fast %s", op_info[sig->first->op].name, sig->first->name,
			         fmt_time(fast.seconds, t0, sizeof t0));
			progress_step(&run->pr, run->r->measurements, line);
		}
		return ok;
	}
	ok = measure(run, sig, k, all, &slow);
	if (ok && sig->rule == RULE_UNDECIDED) {
		sig->rule = decide(run, sig, &fast, &slow);
		ok = pdb_put_kernel(run->db, &run->key, sig, run->err, run->errlen);
	}
	ProfileMeas m;
	if (sig->rule == RULE_ALL)
		for (uint32_t c = 1; ok && c < all; c++)
			ok = measure(run, sig, k, c, &m);
	else if (sig->rule == RULE_ADDITIVE)
		for (int i = 0; ok && i < sig->nargs; i++)
			ok = measure(run, sig, k, UINT32_C(1) << i, &m);
	if (ok) {
		sig->complete = true;
		ok = pdb_put_kernel(run->db, &run->key, sig, run->err, run->errlen);
	}
	rt_profiler_kernel_free(run->p, k);
	if (!ok)
		return false;
	run->r->profiled++;
	run->r->noise += sig->rule == RULE_NOISE;
	run->r->all += sig->rule == RULE_ALL;
	run->r->additive += sig->rule == RULE_ADDITIVE;
	char t0[32], t1[32], line[512];
	static const char *const how[] = {"", "within noise", "every configuration measured",
	                                  "one-argument configurations measured (additive)"};
	snprintf(line, sizeof line, "%s %s%s: fast %s, slow %s: %s", op_info[sig->first->op].name, sig->first->name,
	         sig->nodes > 1 ? arena_printf(run->a, " (and %d more)", sig->nodes - 1) : "",
	         fmt_time(fast.seconds, t0, sizeof t0), fmt_time(slow.seconds, t1, sizeof t1), how[sig->rule]);
	progress_step(&run->pr, run->r->measurements, line);
	return true;
}

/* Does the database lack what o asks of this signature (its scratch, in either case)? */
static bool sig_missing(const ProfileOptions *o, const ProfileSig *sig)
{
	return sig->scratch < 0 || (o->fast_only ? !profile_sig_meas(sig, 0) : !sig->complete);
}

/* ---- moves ------------------------------------------------------------------------ */

static bool have_move(const ProfileMoves *mv, bool to_slow, bool async, int64_t bytes)
{
	for (int i = 0; i < mv->n; i++)
		if (mv->v[i].to_slow == to_slow && mv->v[i].async == async && mv->v[i].bytes == bytes)
			return true;
	return false;
}

static int moves_missing(const ProfileMoves *mv)
{
	int n = 0;
	for (int to_slow = 0; to_slow < 2; to_slow++)
		for (int async = 0; async < 2; async++)
			for (int64_t b = PROFILE_MOVE_MIN; b <= PROFILE_MOVE_MAX; b *= PROFILE_MOVE_FACTOR)
				n += !have_move(mv, to_slow, async, b);
	return n;
}

static bool profile_moves(Run *run, ProfileMoves *mv)
{
	start_profiler(run);
	for (int to_slow = 1; to_slow >= 0; to_slow--)
		for (int async = 0; async < 2; async++)
			for (int64_t b = PROFILE_MOVE_MIN; b <= PROFILE_MOVE_MAX; b *= PROFILE_MOVE_FACTOR) {
				if (have_move(mv, to_slow, async, b))
					continue;
				char what[64], sz[32];
				snprintf(what, sizeof what, "move %s %s, %s", to_slow ? "fast->slow" : "slow->fast",
				         async ? "async" : "sync", fmt_bytes(b, sz, sizeof sz));
				progress_draw(&run->pr, run->r->measurements, what);
				RtTiming t = rt_profiler_move(run->p, b, to_slow, async);
				ProfileMove m = {to_slow, async, b, t.median, t.spread, t.runs};
				if (!pdb_put_move(run->db, &run->key, &m, run->err, run->errlen))
					return false;
				vec_push(run->a, mv, m);
				run->r->measurements++;
			}
	progress_step(&run->pr, run->r->measurements, "moves");
	return true;
}

/* "64 KiB", "256 MiB": a move size of the table. */
static const char *size_label(int64_t b, char *buf, size_t size)
{
	if (b >= INT64_C(1) << 30 && b % (INT64_C(1) << 30) == 0)
		snprintf(buf, size, "%lld GiB", (long long)(b >> 30));
	else if (b >= 1 << 20 && b % (1 << 20) == 0)
		snprintf(buf, size, "%lld MiB", (long long)(b >> 20));
	else
		snprintf(buf, size, "%lld KiB", (long long)(b >> 10));
	return buf;
}

/* The measured bandwidths, GB/s per size, one line per direction and mode. */
static void print_moves(FILE *f, const ProfileMoves *mv)
{
	if (mv->n == 0)
		return;
	char sz[32];
	fprintf(f, "move bandwidth, GB/s:");
	for (int64_t b = PROFILE_MOVE_MIN; b <= PROFILE_MOVE_MAX; b *= PROFILE_MOVE_FACTOR)
		fprintf(f, " %8s", size_label(b, sz, sizeof sz));
	fprintf(f, "\n");
	for (int to_slow = 1; to_slow >= 0; to_slow--)
		for (int async = 0; async < 2; async++) {
			fprintf(f, "  %s %-5s ", to_slow ? "fast->slow" : "slow->fast", async ? "async" : "sync");
			for (int64_t b = PROFILE_MOVE_MIN; b <= PROFILE_MOVE_MAX; b *= PROFILE_MOVE_FACTOR) {
				double bw = 0;
				for (int i = 0; i < mv->n; i++)
					if (mv->v[i].to_slow == to_slow && mv->v[i].async == async && mv->v[i].bytes == b)
						bw = (double)b / mv->v[i].seconds / 1e9;
				if (bw > 0)
					fprintf(f, " %8.2f", bw);
				else
					fprintf(f, " %8s", "-");
			}
			fprintf(f, "\n");
		}
}

/* ---- the driver ----------------------------------------------------------------------- */

/*
 * One profiler at a time per database: two would measure the same
 * kernels twice and disturb each other's timings. The lock is an flock
 * on DB.lock beside the database (released when the process ends, however
 * it ends); a second profiler says so and waits, then measures only what
 * the first left missing. Returns the lock's descriptor, or -1 with err.
 */
static int lock_database(const char *db, char *err, size_t errlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s.lock", db);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot lock the profile database for measuring (%s): %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	fprintf(stderr, "profile: another process is profiling into %s; waiting for it to finish\n", db);
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR) {
			snprintf(err, errlen, "cannot lock %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	return fd;
}

/* Open the database and load what it holds for the step's signatures and the moves. */
static bool load(Run *run, const Graph *g, const Schedule *s, const ProfileOptions *in, bool create,
                 ProfileMachine *mach, ProfileSigs **sigs, ProfileMoves *mv)
{
	profile_resolve(in, &run->o, run->a);
	profile_machine(&run->o, mach);
	run->key = (ProfileKey){mach->key, PROFILE_BACKEND, run->o.threads};
	*sigs = profile_signatures(g, s, run->a);
	run->db = pdb_open(run->o.db, create, run->err, run->errlen);
	return run->db && (!create || pdb_add_machine(run->db, mach, run->err, run->errlen)) &&
	       pdb_load_kernels(run->db, &run->key, *sigs, run->a, run->err, run->errlen) &&
	       pdb_load_moves(run->db, &run->key, mv, run->a, run->err, run->errlen);
}

/*
 * A profile made for another command, in one line: what was measured,
 * where it went, and whether the slow tier measured as fast as the fast
 * one for every kernel (then no placement gains from moving: --hw models
 * a slower tier).
 */
static void report_brief(FILE *out, const ProfileOptions *o, const ProfileReport *r)
{
	char d[32];
	fprintf(out, "profile: %d kernels%s measured in %s, into %s%s\n", r->profiled,
	        o->fast_only ? " (all-fast times)" : " and the moves", fmt_duration(r->seconds, d, sizeof d), o->db,
	        !o->fast_only && r->profiled > 0 && r->noise == r->profiled
	            ? "; every kernel as fast with its arguments in the slow tier (--hw optane-6dimm models a slower one)"
	            : "");
	fflush(out);
}

bool profile_graph(const Graph *g, const Schedule *s, const ProfileOptions *o, ProfileReport *r, char *err,
                   size_t errlen)
{
	Arena a = {0};
	ProfileReport scratch;
	if (!r)
		r = &scratch;
	*r = (ProfileReport){.nodes = s->n};
	double start = now_seconds();
	Run run = {.r = r, .a = &a, .err = err, .errlen = errlen};
	const char *kill = getenv("AUTOTM_PROFILE_KILL_AFTER");
	run.kill_after = kill ? strtol(kill, NULL, 10) : 0;
	ProfileMachine mach;
	ProfileSigs *sigs = NULL;
	ProfileMoves mv = {0};
	ProfileOptions ro;
	profile_resolve(o, &ro, &a);
	bool made = pdb_make_parent(ro.db, err, errlen);
	int lock = made ? lock_database(ro.db, err, errlen) : -1;
	bool ok = lock >= 0 && load(&run, g, s, o, true, &mach, &sigs, &mv);
	FILE *out = o->report ? o->report : stdout;
	if (ok) {
		r->kernels = sigs->n;
		int todo = 0;
		for (int i = 0; i < sigs->n; i++)
			todo += sig_missing(&run.o, sigs->v[i]);
		r->already = sigs->n - todo;
		bool moves = !run.o.fast_only && moves_missing(&mv) > 0;
		if (!run.o.quiet && !run.o.brief) {
			if (todo == 0 && !moves)
				fprintf(out, "profile: the database has every kernel (%d, of %d nodes)%s: nothing to measure\n",
				       sigs->n, s->n, run.o.fast_only ? "" : " and the moves");
			else
				fprintf(out, "profile: %d kernels of %d nodes to profile (%d already in the database)%s\n", todo,
				       s->n, r->already, moves ? ", and the moves" : "");
			fprintf(out, "database: %s\nmachine: %s (cpu backend, %d threads)\n", run.o.db, mach.key, run.o.threads);
			fflush(out);
		}
		progress_begin(&run.pr, todo + moves, run.o.quiet, run.o.brief);
		for (int i = 0; ok && i < sigs->n; i++)
			if (sig_missing(&run.o, sigs->v[i]))
				ok = profile_kernel(&run, sigs->v[i]);
		if (ok && moves)
			ok = profile_moves(&run, &mv);
		progress_end(&run.pr);
	}
	r->seconds = now_seconds() - start;
	if (ok && !run.o.quiet && run.o.brief && r->measurements > 0)
		report_brief(out, &run.o, r);
	else if (ok && !run.o.quiet && !run.o.brief) {
		char d[32];
		if (r->measurements > 0 && run.o.fast_only)
			fprintf(out, "profiled %d kernels (all-fast only): %d measurements in %s\n", r->profiled, r->measurements,
			       fmt_duration(r->seconds, d, sizeof d));
		else if (r->measurements > 0)
			fprintf(out, "profiled %d kernels (%d within noise, %d every configuration, %d additive): "
			       "%d measurements in %s\n",
			       r->profiled, r->noise, r->all, r->additive, r->measurements,
			       fmt_duration(r->seconds, d, sizeof d));
		if (!run.o.fast_only)
			print_moves(out, &mv);
	}
	rt_profiler_free(run.p);
	pdb_close(run.db);
	if (lock >= 0)
		close(lock);
	arena_free(&a);
	return ok;
}

int profile_missing(const Graph *g, const Schedule *s, const ProfileOptions *o, char *err, size_t errlen)
{
	Arena a = {0};
	ProfileReport r = {0};
	Run run = {.r = &r, .a = &a, .err = err, .errlen = errlen};
	ProfileMachine mach;
	ProfileSigs *sigs = NULL;
	ProfileMoves mv = {0};
	int n = -1;
	ProfileOptions ro;
	profile_resolve(o, &ro, &a);
	if (access(ro.db, F_OK) != 0) {
		n = profile_signatures(g, s, &a)->n;
	} else if (load(&run, g, s, o, false, &mach, &sigs, &mv)) {
		n = 0;
		for (int i = 0; i < sigs->n; i++)
			n += sig_missing(&run.o, sigs->v[i]);
		if (n == 0 && !run.o.fast_only && moves_missing(&mv) > 0)
			n = 1; /* the moves count as one */
	}
	pdb_close(run.db);
	arena_free(&a);
	return n;
}
