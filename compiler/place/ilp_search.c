/*
 * ilp_search.c - improving a start of the placement's program by
 * neighbourhoods (large neighbourhood search): the program restricted to
 * the columns of a window of steps, the rest fixed at the incumbent,
 * solved in worker processes, and the repair of a solution that does not
 * pack under the limit (tightening the steps where it overflows).
 */
#include "ilp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memplan.h"
#include "predict.h"
#include "ticker.h"
#include "util.h"

/* owner[col]: the tensor whose flow network has the column; -1 for the others (capacity, excess, kernels). */
int *ilp_column_owners(const Ilp *ip)
{
	int nc = mip_ncols(ip->mip);
	int *owner = arena_array(ip->a, (size_t)nc + 1, sizeof(int));
	for (int c = 0; c < nc; c++)
		owner[c] = -1;
	for (int i = 0; i < ip->g->tensors.n; i++) {
		const Flow *f = &ip->flow[i];
		for (int v = 0; v < NV; v++)
			if (f->src[v] >= 0)
				owner[f->src[v]] = i;
		for (int j = 0; j < f->m; j++) {
			int e[MAX_POINT_EDGES], ne = ilp_point_edges(&f->pt[j], e);
			for (int k = 0; k < ne; k++)
				owner[e[k]] = i;
		}
	}
	return owner;
}

/*
 * One re-solve of the program with the columns of the tensors not in
 * `open` fixed to x, as a smaller program (mip_restrict). Writes its
 * solution to out when it is better than cur and returns its objective;
 * else INFINITY. *proved: the smaller program was solved to optimality,
 * or to within `gap` (absolute, in the objective's units; by default,
 * negative, PLACE_LNS_GAP of cur: a smaller gain is not worth the time
 * proving it, the search has other windows to try). Without CBC's
 * probing cuts: on ResNet-50's windows they doubled the time to the
 * same optimum.
 */
static double solve_fixed(Ilp *ip, const PlaceOptions *o, const int *owner, const bool *open, const double *x,
                          double *out, double cur, double gap, double seconds, bool *proved)
{
	int nc = mip_ncols(ip->mip);
	double *fix = arena_array(ip->a, (size_t)nc + 1, sizeof(double));
	int *col_of = arena_array(ip->a, (size_t)nc + 1, sizeof(int));
	for (int c = 0; c < nc; c++)
		fix[c] = owner[c] >= 0 && !open[owner[c]] && !isnan(x[c]) ? round(x[c]) : NAN;
	double constant;
	Mip *sub = mip_restrict(ip->mip, fix, col_of, &constant);
	*proved = false;
	if (!sub)
		return INFINITY;
	int sc = mip_ncols(sub);
	double *start = arena_array(ip->a, (size_t)sc + 1, sizeof(double));
	for (int c = 0; c < nc; c++)
		if (col_of[c] >= 0)
			start[col_of[c]] = x[c];
	MipOptions mo = {.start = start, .backend = o->solver, .time_limit = seconds, .gap = 1e-7,
	                 .abs_gap = gap >= 0 ? gap : isfinite(cur) ? cur * PLACE_LNS_GAP : 0,
	                 .no_preprocess = true, .no_probing = true};
	MipResult r;
	char err[256];
	bool ran = mip_solve(sub, &mo, &r, err, sizeof err);
	mip_free(sub);
	double obj = INFINITY;
	*proved = ran && r.status == MIP_OPTIMAL;
	if (ran && (r.status == MIP_OPTIMAL || r.status == MIP_FEASIBLE) && r.objective + constant < cur) {
		obj = r.objective + constant;
		for (int c = 0; c < nc; c++)
			out[c] = col_of[c] >= 0 ? r.x[col_of[c]] : fix[c];
	}
	if (ran)
		mip_result_free(&r);
	return obj;
}

/* r's objective and bound become obj and min(bound, obj), its gap theirs. */
void ilp_set_objective(MipResult *r, double obj, double bound)
{
	r->objective = obj;
	r->bound = bound < obj ? bound : obj;
	r->gap = (obj - r->bound) / (fabs(obj) > 1e-9 ? fabs(obj) : 1e-9);
}

/* Whether tensor f has a decision point where its kernel produces or uses it within steps [lo, hi). */
static bool acts_within(const Flow *f, int lo, int hi)
{
	if (f->last < lo || f->first >= hi)
		return false;
	for (int j = 0; j < f->m; j++)
		if (f->pt[j].step >= lo && f->pt[j].step < hi && (f->pt[j].user || (j == 0 && f->t->producer)))
			return true;
	return false;
}

/*
 * Whether the placement of solution x packs under the limit (place_pack:
 * by first fit in the neighbourhoods, ilp_improve), and if so, into
 * excess[k], what its step k costs beyond its kernel's all-fast time
 * (moves, recomputes, slow arguments).
 */
bool ilp_packs(const Ilp *ip, const PlaceOptions *o, const double *x, double *excess)
{
	Placement *p = ilp_extract(ip, o, x, ip->a);
	place_pack(o, p, ip->a);
	if (p->fast_bytes + p->workspace > o->limit)
		return false;
	if (excess) {
		placement_predict(p, ip->cm, excess);
		for (int k = 0; k < ip->s->n; k++)
			excess[k] -= ip->cm->kernel_time(ip->cm, ip->s->order[k], 0);
	}
	return true;
}

/*
 * Step k's algorithms to those whose workspace is at most `bytes` (at
 * least the one inc chose, where inc is given, and at least the smallest:
 * the program stays feasible); returns whether that lowered its cap.
 */
static bool cap_ws(Ilp *ip, int k, int64_t bytes, const double *inc)
{
	if (ip->algo_col[k] < 0)
		return false;
	const KernelAlgo *al;
	int na = ip->cm->algos(ip->cm, ip->s->order[k], &al);
	int64_t least = -1;
	for (int i = 0; i < na; i++) {
		if (least < 0 || al[i].workspace < least)
			least = al[i].workspace;
		if (inc && ilp_on(inc, ip->algo_col[k] + i) && al[i].workspace > bytes)
			bytes = al[i].workspace;
	}
	if (bytes < least)
		bytes = least;
	if (ip->wscap[k] >= 0 && ip->wscap[k] <= bytes)
		return false;
	ip->wscap[k] = bytes;
	for (int i = 0; i < na; i++)
		if (al[i].workspace > bytes)
			mip_set_bounds(ip->mip, ip->algo_col[k] + i, 0, 0);
	return true;
}

/*
 * A solution that does not pack (the pool memplan makes of its placement
 * is above the limit: fragmentation): lower the bound of D_s at the steps
 * of the fast residencies that reach above the limit to cand's D_s scaled
 * as the fragmentation loop scales their limits (place_frag_scale), but
 * never below inc's D_s where inc (the current solution, which packs) is
 * given: it stays feasible, and so does every neighbourhood of it; and
 * where a workspace reaches above the limit, cap its step's algorithms
 * (or those of the recomputes at its boundary) at the gap there (cap_ws).
 * Returns whether a bound changed.
 */
static bool tighten(Ilp *ip, const PlaceOptions *o, const double *cand, const double *inc)
{
	Placement *p = ilp_extract(ip, o, cand, ip->a);
	place_pack(o, p, ip->a);
	double scale = place_frag_scale(p, o->limit, PLACE_FRAG_MIN_CUT);
	bool changed = false;
	for (int i = 0; i < p->res.n; i++) {
		const Residency *r = p->res.v[i];
		if (!place_above_limit(p, r, o->limit))
			continue;
		for (int k = r->first; k <= r->last; k++) {
			int c = ip->dcol[k];
			double d = cand[c] * scale;
			if (inc && d < inc[c])
				d = inc[c];
			if (d < ip->dmax[k] - 1e-6) {
				ip->dmax[k] = d;
				mip_set_bounds(ip->mip, c, 0, d);
				changed = true;
			}
		}
	}
	/* a workspace above the limit: its algorithm, or those of the recomputes sharing it, capped at the gap there */
	int64_t *khole = NULL, *bhole = NULL;
	for (int k = 0; k < ip->s->n; k++) {
		int above = place_ws_above_limit(p, k, o->limit);
		if (!above)
			continue;
		if (!khole) {
			khole = arena_array(ip->a, (size_t)ip->s->n + 1, sizeof(int64_t));
			bhole = arena_array(ip->a, (size_t)ip->s->n + 1, sizeof(int64_t));
			memplan_holes(p, o->limit - p->workspace, khole, bhole);
		}
		if (above & PLACE_WS_KERNEL)
			changed |= cap_ws(ip, k, khole[k], inc);
		for (int j = 0; (above & PLACE_WS_BOUNDARY) && j < p->recomputes.n; j++)
			if (p->recomputes.v[j].at == k)
				changed |= cap_ws(ip, p->recomputes.v[j].step, bhole[k], inc);
	}
	return changed;
}

/* Every bound of D_s back to dmax0's; every algorithm allowed again. */
static void untighten(Ilp *ip, const double *dmax0)
{
	for (int k = 0; k < ip->s->n; k++) {
		if (ip->dmax[k] != dmax0[k])
			mip_set_bounds(ip->mip, ip->dcol[k], 0, ip->dmax[k] = dmax0[k]);
		if (ip->wscap[k] < 0)
			continue;
		const KernelAlgo *al;
		int na = ip->cm->algos(ip->cm, ip->s->order[k], &al);
		for (int i = 0; i < na; i++)
			mip_set_bounds(ip->mip, ip->algo_col[k] + i, 0, 1);
		ip->wscap[k] = -1;
	}
}

/*
 * The whole program's solution r that does not pack (memplan's pool is
 * above the limit by fragmentation, usually by a percent or two): lower
 * the capacity bounds where it overflows (tighten) and re-solve the
 * tensors live there with every other tensor fixed, up to 4 times, from
 * each result that still does not pack. A re-solve of the whole program
 * under tighter limits (the fragmentation loop's) throws away the
 * solution found; this keeps all of it but the overflowing steps. r
 * takes the first result that packs, if it is below cap (the
 * neighbourhoods' objective, and by the default rule the start's: a
 * repair no better than the start is left to the re-solve, which can
 * find better); the bounds are restored. A re-solve stops once it is
 * within the whole program's proven gap (r's objective less its bound):
 * proving more of a part than the whole proved gains nothing, and
 * without it the re-solve of vgg19 b64 at half its peak used all of its
 * 15 s to return the plan it had found at once.
 */
void ilp_repair(Ilp *ip, const PlaceOptions *o, const int *owner, MipResult *r, double cap, double seconds,
                PlaceStats *st)
{
	double t0 = now_seconds();
	int nt = ip->g->tensors.n, nc = mip_ncols(ip->mip), n = ip->s->n;
	double *dmax0 = arena_array(ip->a, (size_t)n + 1, sizeof(double));
	double *cur = arena_array(ip->a, (size_t)nc + 1, sizeof(double));
	double *cand = arena_array(ip->a, (size_t)nc + 1, sizeof(double));
	bool *open = arena_array(ip->a, (size_t)nt + 1, sizeof(bool));
	bool *near = arena_array(ip->a, (size_t)n + 1, sizeof(bool));
	memcpy(dmax0, ip->dmax, sizeof(double) * (size_t)n);
	memcpy(cur, r->x, sizeof(double) * (size_t)nc);
	ticker_note("repairing the packing of %.3f ms", 1e-3 * r->objective);
	double gap = r->objective * PLACE_LNS_GAP;
	if (isfinite(r->bound) && r->bound > 0 && r->objective - r->bound > gap)
		gap = r->objective - r->bound;
	for (int k = 0; k < 4; k++) {
		double left = t0 + seconds - now_seconds();
		if (left <= 0 || !tighten(ip, o, cur, NULL))
			break;
		/* the tensors with a decision point within PLACE_REPAIR_RADIUS steps of a lowered bound */
		for (int s = 0; s < n; s++)
			near[s] = false;
		for (int s = 0; s < n; s++)
			if (ip->dmax[s] < dmax0[s])
				for (int d = -PLACE_REPAIR_RADIUS; d <= PLACE_REPAIR_RADIUS; d++)
					if (s + d >= 0 && s + d < n)
						near[s + d] = true;
		int nopen = 0;
		for (int i = 0; i < nt; i++) {
			const Flow *f = &ip->flow[i];
			open[i] = false;
			for (int j = 0; j < f->m && !open[i]; j++)
				open[i] = f->pt[j].step < n && near[f->pt[j].step];
			nopen += open[i];
		}
		if (nopen > nt / 4 && nopen > PLACE_REPAIR_MAX_OPEN) { /* long-lived residencies overflow: not local */
			if (place_solver_log())
				fprintf(stderr, "repair %d: %d of %d tensors would be open; left to a re-solve\n", k + 1, nopen, nt);
			break;
		}
		bool proved;
		double obj = solve_fixed(ip, o, owner, open, cur, cand, cap, gap, left, &proved);
		bool fits = obj < INFINITY && ilp_packs(ip, o, cand, NULL);
		st->repairs++;
		if (place_solver_log())
			fprintf(stderr, "repair %d: %.1f us -> %.1f us, %d tensors open, in %.2f s%s%s\n", k + 1, r->objective,
			        obj, nopen, now_seconds() - t0, proved ? " (optimal)" : "",
			        obj < INFINITY && !fits ? " (does not pack)" : "");
		if (obj == INFINITY)
			break;
		memcpy(cur, cand, sizeof(double) * (size_t)nc);
		if (fits) {
			memcpy(r->x, cand, sizeof(double) * (size_t)nc);
			st->repaired = true;
			st->repair_cost = (obj - r->objective) / US;
			ilp_set_objective(r, obj, r->bound);
			r->status = r->gap <= 0 ? MIP_OPTIMAL : MIP_FEASIBLE;
			break;
		}
	}
	untighten(ip, dmax0);
	r->time += now_seconds() - t0;
}

/* One neighbourhood of the search (ilp_improve) and what its re-solve found. */
typedef struct Hood {
	int lo, hi;  /* its window of steps */
	int nopen;   /* tensors open */
	int solves;  /* re-solves it took */
	bool proved; /* the last one was solved to optimality (or to within PLACE_LNS_GAP) */
	double obj;  /* a plan better than the one it was solved from that packs: its objective; else INFINITY */
} Hood;

/*
 * Re-solve neighbourhood h (the tensors in open) of plan x, whose
 * objective is best, in at most `limit` seconds: into cand, a better
 * plan that packs, if there is one, and into excess what its steps cost
 * beyond their kernels (packs). One that does not pack lowers the
 * capacity bounds where it overflowed (tighten) and is solved again
 * under them, twice at most; the bounds are restored (dmax0).
 */
static void solve_hood(Ilp *ip, const PlaceOptions *o, const int *owner, const bool *open, const double *x,
                       double best, double limit, double end, const double *dmax0, double *cand, double *excess,
                       Hood *h)
{
	h->obj = INFINITY;
	h->proved = false;
	h->solves = 0;
	for (int k = 0; h->nopen > 0; k++) {
		double t1 = now_seconds();
		double obj = solve_fixed(ip, o, owner, open, x, cand, best, -1, limit, &h->proved);
		if (obj > best * (1 - 1e-6))
			obj = INFINITY; /* not better beyond rounding */
		bool fits = obj < best && ilp_packs(ip, o, cand, excess);
		if (place_solver_log())
			fprintf(stderr, "lns [%d,%d) open %d: %.1f -> %.1f us in %.2f s%s%s\n", h->lo, h->hi, h->nopen, best, obj,
			        now_seconds() - t1, h->proved ? " (optimal)" : "", obj < best && !fits ? " (does not pack)" : "");
		h->solves++;
		if (fits)
			h->obj = obj;
		if (fits || obj == INFINITY || k == 2 || now_seconds() > end - 0.05 || !tighten(ip, o, cand, x))
			break;
	}
	untighten(ip, dmax0);
}

/* A neighbourhood being re-solved by a child process (ilp_improve with more than one job). */
typedef struct Job {
	pid_t pid;     /* 0: the slot is free */
	int fd;        /* the read end of the pipe its result comes through */
	Hood h;        /* the neighbourhood; the child's result once read */
	bool *open;    /* its open tensors */
	int version;   /* the plan it was solved from (ilp_improve's count of plans kept) */
	char *buf;     /* its result: the Hood, then, if it found a better plan, its columns and steps' excess */
	size_t got;    /* bytes of it read so far */
} Job;

/* The bytes of a better plan in a job's result: its columns, then its steps' excess (packs). */
static size_t plan_bytes(const Ilp *ip)
{
	return sizeof(double) * (size_t)(mip_ncols(ip->mip) + ip->s->n);
}

/*
 * Solve neighbourhood j->h of plan x in a child process (fork): it writes
 * the Hood, and the better plan if it found one (plan_bytes), into a
 * pipe. False if no process could be made.
 */
static bool spawn_hood(Ilp *ip, const PlaceOptions *o, const int *owner, const double *x, double best, double limit,
                       double end, const double *dmax0, Job *j)
{
	int fd[2];
	if (pipe(fd) != 0)
		return false;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return false;
	}
	if (pid == 0) {
		close(fd[0]);
		Hood h = j->h;
		double *plan = (double *)(j->buf + sizeof(Hood)); /* the child's copy of the slot's buffer */
		solve_hood(ip, o, owner, j->open, x, best, limit, end, dmax0, plan, plan + mip_ncols(ip->mip), &h);
		bool ok = write_all(fd[1], &h, sizeof h) && (!isfinite(h.obj) || write_all(fd[1], plan, plan_bytes(ip)));
		_exit(ok ? 0 : 1);
	}
	close(fd[1]);
	fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK); /* read_job reads what is there */
	j->pid = pid;
	j->fd = fd[0];
	j->got = 0;
	return true;
}

/* The bytes job j's result takes: the Hood, and the plan when it found a better one. */
static size_t job_size(const Ilp *ip, const Job *j)
{
	size_t size = sizeof(Hood);
	if (j->got >= sizeof(Hood)) {
		Hood h;
		memcpy(&h, j->buf, sizeof h);
		if (isfinite(h.obj))
			size += plan_bytes(ip);
	}
	return size;
}

/*
 * Read what job j has written. Returns true when it is done: j->h then
 * holds its result (a child that died without writing one found none),
 * the plan in j->buf after the Hood, and the slot is free again.
 */
static bool read_job(const Ilp *ip, Job *j)
{
	for (;;) {
		size_t want = job_size(ip, j);
		if (j->got == want)
			break;
		ssize_t r = read(j->fd, j->buf + j->got, want - j->got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		if (r <= 0) { /* closed (or failed) before the whole result: the child died */
			j->got = 0;
			break;
		}
		j->got += (size_t)r;
	}
	if (j->got >= sizeof(Hood))
		memcpy(&j->h, j->buf, sizeof j->h);
	else
		j->h.obj = INFINITY, j->h.proved = false;
	close(j->fd);
	while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
		;
	j->pid = 0;
	return true;
}

/* Stop every job still running. */
static void kill_jobs(Job *jobs, int njobs)
{
	for (int i = 0; i < njobs; i++)
		if (jobs[i].pid > 0) {
			kill(jobs[i].pid, SIGKILL);
			close(jobs[i].fd);
			while (waitpid(jobs[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
			jobs[i].pid = 0;
		}
}

/* The neighbourhoods solved at once: PlaceOptions.jobs, or one per core. */
static int lns_jobs(const PlaceOptions *o)
{
	int n = o->jobs > 0 ? o->jobs : online_cores();
	return n < 1 ? 1 : n > PLACE_MAX_JOBS ? PLACE_MAX_JOBS : n;
}

/*
 * Improve the start x (a feasible solution; NAN for the columns it does
 * not give) by re-solving neighbourhoods, a large neighbourhood search.
 * A neighbourhood is a window of steps: the edges of the tensors that
 * are produced or used by a kernel in it are open, every other tensor's
 * are fixed to x's path. That program is small (mip_restrict), and CBC
 * solves it to optimality in a fraction of a second where the whole one
 * takes seconds per node: the whole program's relaxation is weak
 * (docs/placement.md), a window's is not. Windows are tried where x's
 * steps cost most beyond their kernels; one that improves x makes the
 * windows around it worth trying again. The width doubles when every
 * window of it has been tried, or when PLACE_LNS_EASY windows in a row
 * were solved to optimality without finding better (the search is then
 * local: a long graph has thousands of windows); it halves again after
 * PLACE_LNS_EASY windows in a row ran out of time. A better solution
 * that does not pack lowers the capacity bounds where it overflowed
 * (tighten) and its window is solved again under them, twice at most
 * (the start's completion four times); the bounds are restored after
 * each window, so that they do not narrow the ones that follow.
 *
 * With more than one job (lns_jobs), windows whose open tensors are
 * disjoint are solved at once, each in a child process (the solvers'
 * libraries are not known to be thread-safe; a fork shares the program
 * without copying it). A result solved from a plan that has since
 * improved is merged into the current one (its open tensors' paths
 * taken over, the other columns completed) and kept only if that is
 * better and packs; else its window is tried again.
 *
 * The search stops after `seconds`, or, if it gained PLACE_LNS_GAIN of
 * the objective over the last quarter of that time (it is far from done:
 * the whole program would not improve on it either), after `more`
 * seconds beyond (st->lns_extended). x is improved in place; returns its
 * objective (INFINITY when not even the start could be completed to a
 * solution that packs: it breaks the program, as a start from before the
 * fragmentation loop tightened the limits does).
 */
typedef struct Gain {
	double at, objective; /* when an improvement was found, and its objective */
} Gain;

/* The state of one search (ilp_improve). */
typedef struct Search {
	Ilp *ip;
	const PlaceOptions *o; /* packed by first fit */
	const int *owner;
	double *x;             /* the current plan */
	PlaceStats *st;
	double t0, end, seconds, more;
	int n, nt, nc;         /* steps, tensors, columns */
	bool *open;            /* the open tensors of a window solved here */
	const bool *none;      /* no tensor open: completions */
	double *cand, *merged, *excess, *dmax0;
	bool *tried;           /* windows by their first step */
	bool *skip;            /* windows that clash with a running job */
	VEC(Gain) gains;
	double best;           /* the current plan's objective */
	Job *jobs;
	int njobs, running, version; /* jobs, those running, plans kept */
	int width, easy, hard;
	bool offloading;       /* weights and optimizer state open too */
	bool first_done;       /* every window tried without them */
} Search;

/*
 * The start itself, the columns it does not give completed (under
 * tighter bounds where it does not pack); first with its algorithms too,
 * which its packing was made with (free, the completion took algorithms
 * whose workspaces did not pack beside the start's residencies: VGG-19
 * b64 at half its peak, measured profile, sync's start of 272.6 ms
 * completed at 267.1 ms did not pack, and under the tightened bounds had
 * no completion, so that no search ran). False where none packs.
 */
static bool search_start(Search *S, bool *uncompleted)
{
	Ilp *ip = S->ip;
	int n = S->n, nc = S->nc;
	bool proved;
	int *with_algos = NULL; /* owner, with the start's algorithm columns owned by tensor 0 (none is open here) */
	for (int k = 0; k < n; k++) {
		if (ip->algo_col[k] < 0 || isnan(S->x[ip->algo_col[k]]))
			continue;
		if (!with_algos) {
			with_algos = arena_array(ip->a, (size_t)nc + 1, sizeof(int));
			memcpy(with_algos, S->owner, sizeof(int) * (size_t)nc);
		}
		for (int i = 0, na = ilp_kernel_algos(ip, ip->s->order[k], NULL); i < na; i++)
			with_algos[ip->algo_col[k] + i] = 0;
	}
	double best = INFINITY;
	bool fits = false;
	if (with_algos) {
		best = solve_fixed(ip, S->o, with_algos, S->none, S->x, S->cand, INFINITY, -1, S->seconds / 8, &proved);
		fits = best < INFINITY && ilp_packs(ip, S->o, S->cand, S->excess);
		if (place_solver_log())
			fprintf(stderr, "lns start: %d of %d tensors and its algorithms given, completed: %.1f us%s\n",
			        S->st->start_tensors, S->nt, best, best < INFINITY && !fits ? " (does not pack)" : "");
	}
	for (int k = 0; k < 4 && !fits && now_seconds() < S->t0 + S->seconds / 4; k++) {
		best = solve_fixed(ip, S->o, S->owner, S->none, S->x, S->cand, INFINITY, -1, S->seconds / 8, &proved);
		if (k == 0)
			*uncompleted = best == INFINITY; /* no completion at all, not one under tightened bounds */
		fits = best < INFINITY && ilp_packs(ip, S->o, S->cand, S->excess);
		if (place_solver_log())
			fprintf(stderr, "lns start: %d of %d tensors given, completed: %.1f us%s\n", S->st->start_tensors, S->nt,
			        best, best < INFINITY && !fits ? " (does not pack)" : "");
		if (best == INFINITY || (!fits && !tighten(ip, S->o, S->cand, NULL)))
			break;
	}
	untighten(ip, S->dmax0);
	S->st->lns_solves = fits; /* none: no search, the whole program alone */
	if (!fits)
		return false;
	memcpy(S->x, S->cand, sizeof(double) * (size_t)nc);
	S->best = best;
	S->st->lns_start = best / US;
	vec_push(ip->a, &S->gains, ((Gain){now_seconds(), best}));
	return true;
}

/*
 * Whether the search goes on: until its time is up, or, still improving
 * by PLACE_LNS_GAIN over the last quarter of its time, the extra time too.
 */
static bool search_goes_on(Search *S)
{
	if (now_seconds() < S->end - 0.05)
		return true;
	double now = now_seconds(), then = now - (now - S->t0) / 4, before = S->gains.v[0].objective;
	for (int k = 0; k < S->gains.n && S->gains.v[k].at <= then; k++)
		before = S->gains.v[k].objective;
	if (S->more <= 0 || before - S->best < PLACE_LNS_GAIN * S->best)
		return false;
	S->end += S->more;
	S->more = 0;
	S->st->lns_extended = true;
	if (place_solver_log())
		fprintf(stderr, "lns: %.1f -> %.1f us over the last quarter; the whole program's time too\n", before,
		        S->best);
	return true;
}

/* Windows of `width` from scratch: none tried, no run of easy or hard ones. */
static void search_width(Search *S, int width)
{
	S->width = width;
	memset(S->tried, 0, sizeof(bool) * (size_t)S->n);
	S->easy = S->hard = 0;
}

/*
 * The untried window of this width (starts on a grid of half a width)
 * that costs most, of those whose open tensors no running job has open
 * (job `slot` free, or -1): its first step (-1: none), its end into *hi,
 * its open tensors into jopen, their number into *nopen.
 */
static int pick_window(Search *S, int slot, bool *jopen, int *hi, int *nopen)
{
	int n = S->n, stride = S->width / 2 > 0 ? S->width / 2 : 1, lo = -1;
	memset(S->skip, 0, sizeof(bool) * (size_t)n);
	while (S->njobs == 1 || slot >= 0) {
		double most = -1;
		lo = -1;
		for (int w = 0; w < n; w += stride) {
			double sum = 0;
			for (int k = w; k < w + S->width && k < n; k++)
				sum += S->excess[k];
			if (!S->tried[w] && !S->skip[w] && sum > most)
				most = sum, lo = w;
		}
		if (lo < 0)
			break;
		*hi = lo + S->width < n ? lo + S->width : n;
		*nopen = 0;
		bool clash = false;
		for (int i = 0; i < S->nt; i++) {
			*nopen += jopen[i] = acts_within(&S->ip->flow[i], lo, *hi) && (S->offloading || !S->ip->flow[i].offload);
			for (int k = 0; jopen[i] && k < S->njobs && S->njobs > 1 && !clash; k++)
				clash = S->jobs[k].pid > 0 && S->jobs[k].open[i];
		}
		if (!clash)
			break;
		S->skip[lo] = true;
		lo = -1;
	}
	return lo;
}

/*
 * Wait for a job's result, at most until the search's time is up: its
 * window into *h, its open tensors and the plan it was solved from, its
 * plan (if better) into cand. False where none came.
 */
static bool wait_job(Search *S, Hood *h, const bool **hopen, int *hversion)
{
	struct pollfd pfd[PLACE_MAX_JOBS];
	int which[PLACE_MAX_JOBS], np = 0;
	for (int i = 0; i < S->njobs; i++)
		if (S->jobs[i].pid > 0)
			pfd[np] = (struct pollfd){.fd = S->jobs[i].fd, .events = POLLIN}, which[np++] = i;
	double wait = S->end - 0.05 - now_seconds();
	int ready = poll(pfd, (nfds_t)np, wait > 0 ? (int)(wait * 1e3) + 1 : 0);
	for (int k = 0; k < np && ready > 0; k++) {
		Job *j = &S->jobs[which[k]];
		if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (!read_job(S->ip, j))
			continue;
		S->running--;
		*h = j->h;
		*hopen = j->open;
		*hversion = j->version;
		if (isfinite(h->obj)) { /* its plan; its steps' excess if it is kept as it is (not merged) */
			const double *plan = (const double *)(j->buf + sizeof(Hood));
			memcpy(S->cand, plan, sizeof(double) * (size_t)S->nc);
			if (*hversion == S->version)
				memcpy(S->excess, plan + S->nc, sizeof(double) * (size_t)S->n);
		}
		return true;
	}
	return false;
}

/*
 * A window's result solved from an earlier plan: its open tensors' paths
 * into the current one, the rest completed; its objective where that is
 * better and packs, else INFINITY (and the window worth solving again).
 */
static double merge_result(Search *S, const Hood *h, const bool *hopen)
{
	bool proved;
	for (int c = 0; c < S->nc; c++)
		S->merged[c] = S->owner[c] >= 0 && hopen[S->owner[c]] ? S->cand[c] : S->x[c];
	double t1 = now_seconds(), limit = S->seconds / 20 > 1 ? S->seconds / 20 : 1;
	double obj = solve_fixed(S->ip, S->o, S->owner, S->none, S->merged, S->cand, S->best, -1, limit, &proved);
	if (obj > S->best * (1 - 1e-6))
		obj = INFINITY;
	bool ok = obj < S->best && ilp_packs(S->ip, S->o, S->cand, S->excess); /* excess is written only if it packs */
	S->st->lns_merges++;
	if (place_solver_log())
		fprintf(stderr, "lns [%d,%d) from an earlier plan: %.1f us, merged into the current %.1f: %.1f us in %.2f s%s\n",
		        h->lo, h->hi, h->obj, S->best, obj, now_seconds() - t1, obj < S->best && !ok ? " (does not pack)" : "");
	if (ok)
		return obj;
	S->tried[h->lo] = false; /* worth solving again from the current plan */
	return INFINITY;
}

/* The result of window h, solved from plan hversion (cand: its plan if it found a better one). */
static void take_result(Search *S, const Hood *h, const bool *hopen, int hversion)
{
	S->st->lns_solves += h->solves;
	double obj = h->obj;
	if (isfinite(obj) && hversion != S->version)
		obj = merge_result(S, h, hopen);
	bool better = isfinite(obj);
	ticker_note("search: %d windows, best %.3f ms", S->st->lns_solves, 1e-3 * (better ? obj : S->best));
	S->easy = !better && h->proved ? S->easy + 1 : 0;
	S->hard = !better && !h->proved ? S->hard + 1 : 0;
	if (S->hard >= PLACE_LNS_EASY && S->width > PLACE_LNS_WIDTH) { /* too hard: narrower again */
		S->width /= 2;
		memset(S->tried, 0, sizeof(bool) * (size_t)S->n);
		S->hard = 0;
	}
	if (!better)
		return;
	S->st->lns_gain += (S->best - obj) / US;
	S->st->lns_better++;
	S->best = obj;
	S->version++;
	vec_push(S->ip->a, &S->gains, ((Gain){now_seconds(), S->best}));
	memcpy(S->x, S->cand, sizeof(double) * (size_t)S->nc); /* excess is already its steps' (solve_hood, or the merge) */
	int stride = S->width / 2 > 0 ? S->width / 2 : 1;
	for (int w = 0; w < S->n; w += stride)
		if (w + S->width > h->lo - S->width && w < h->hi + S->width)
			S->tried[w] = false;
}

/* The search's state over ip, its arrays in ip's arena. */
static Search search_new(Ilp *ip, const PlaceOptions *o, const int *owner, double *x, double seconds, double more,
                         PlaceStats *st)
{
	Search S = {.ip = ip, .o = o, .owner = owner, .x = x, .st = st, .seconds = seconds, .more = more};
	S.t0 = now_seconds();
	S.end = S.t0 + seconds;
	S.n = ip->s->n, S.nt = ip->g->tensors.n, S.nc = mip_ncols(ip->mip);
	S.open = arena_array(ip->a, (size_t)S.nt + 1, sizeof(bool));
	S.none = arena_array(ip->a, (size_t)S.nt + 1, sizeof(bool));
	S.cand = arena_array(ip->a, (size_t)S.nc + 1, sizeof(double));
	S.merged = arena_array(ip->a, (size_t)S.nc + 1, sizeof(double));
	S.excess = arena_array(ip->a, (size_t)S.n + 1, sizeof(double));
	S.dmax0 = arena_array(ip->a, (size_t)S.n + 1, sizeof(double));
	S.tried = arena_array(ip->a, (size_t)S.n + 1, sizeof(bool));
	S.skip = arena_array(ip->a, (size_t)S.n + 1, sizeof(bool));
	memcpy(S.dmax0, ip->dmax, sizeof(double) * (size_t)S.n);
	S.best = INFINITY;
	return S;
}

/* The jobs that solve windows at once (lns_jobs), and the search's first width and phase. */
static void search_jobs(Search *S)
{
	Ilp *ip = S->ip;
	S->njobs = lns_jobs(S->o);
	S->st->lns_jobs = S->njobs;
	S->jobs = arena_array(ip->a, (size_t)S->njobs, sizeof(Job));
	for (int i = 0; S->njobs > 1 && i < S->njobs; i++) {
		S->jobs[i].open = arena_array(ip->a, (size_t)S->nt + 1, sizeof(bool));
		S->jobs[i].buf = arena_array(ip->a, sizeof(Hood) + plan_bytes(ip), 1);
	}
	S->width = S->n < PLACE_LNS_WIDTH ? S->n : PLACE_LNS_WIDTH;
	S->offloading = true; /* first the program without offloads (smaller neighbourhoods), if any and asked for */
	for (int i = 0; i < S->nt && PLACE_LNS_OFFLOAD > 0; i++)
		S->offloading = S->offloading && !ip->flow[i].offload;
}

/*
 * Solve the window [lo, hi) with its open tensors jopen: in job `slot`'s
 * process where there is one (true: it runs, its result comes later),
 * else here, into *h (false).
 */
static bool solve_window(Search *S, int slot, const bool *jopen, Hood *h)
{
	S->tried[h->lo] = true;
	double left = S->end - now_seconds(), limit = fmax(S->seconds * PLACE_LNS_WINDOW, 1);
	if (limit > left)
		limit = left;
	if (h->nopen == 0) {
		h->proved = true; /* nothing to change */
		return false;
	}
	if (slot >= 0) {
		S->jobs[slot].h = *h;
		S->jobs[slot].version = S->version;
		if (spawn_hood(S->ip, S->o, S->owner, S->x, S->best, limit, S->end, S->dmax0, &S->jobs[slot])) {
			S->running++;
			return true; /* another window while this one runs */
		}
	}
	/* one job, or no process could be made: solved here */
	solve_hood(S->ip, S->o, S->owner, jopen, S->x, S->best, limit, S->end, S->dmax0, S->cand, S->excess, h);
	return false;
}

double ilp_improve(Ilp *ip, const PlaceOptions *opts, const int *owner, double *x, double seconds,
                   double more, PlaceStats *st, bool *uncompleted)
{
	/*
	 * Plans packed by first fit alone (memplan_first_fit): a squeeze of each
	 * candidate that does not pack takes up to 0.3 s on ResNet-50 b32, and
	 * plans that pack only squeezed leave their neighbours no room
	 * (docs/placement.md, "The fragmentation loop").
	 */
	PlaceOptions first_fit = *opts;
	first_fit.first_fit = true;
	Search S = search_new(ip, &first_fit, owner, x, seconds, more, st);
	if (!search_start(&S, uncompleted))
		return INFINITY;
	search_jobs(&S);
	while (search_goes_on(&S)) {
		if (!S.offloading && (S.first_done || now_seconds() > S.t0 + seconds * PLACE_LNS_OFFLOAD)) {
			S.offloading = true; /* the second phase: every window again, weights and state open too */
			search_width(&S, S.n < PLACE_LNS_WIDTH ? S.n : PLACE_LNS_WIDTH);
			if (place_solver_log())
				fprintf(stderr, "lns: weights and optimizer state open from here\n");
		}
		int slot = -1, hi = 0, nopen = 0;
		for (int i = 0; i < S.njobs && S.njobs > 1 && slot < 0; i++)
			if (S.jobs[i].pid == 0)
				slot = i;
		bool *jopen = slot >= 0 ? S.jobs[slot].open : S.open;
		int lo = pick_window(&S, slot, jopen, &hi, &nopen);
		if (lo < 0 && S.running > 0) {
			/* no slot is free, or every untried window clashes with a running one: wait for a result below */
		} else if (lo < 0 || S.easy >= PLACE_LNS_EASY) { /* all tried, or too easy: wider windows */
			if (S.width >= S.n && S.offloading)
				break;
			if (S.width >= S.n)
				S.first_done = true;
			else
				search_width(&S, 2 * S.width < S.n ? 2 * S.width : S.n);
			continue;
		}
		Hood h = {.lo = lo, .hi = hi, .nopen = nopen, .obj = INFINITY};
		const bool *hopen = jopen;
		int hversion = S.version;
		if (lo >= 0 && solve_window(&S, slot, jopen, &h))
			continue;
		if (lo < 0 && !wait_job(&S, &h, &hopen, &hversion))
			continue;
		take_result(&S, &h, hopen, hversion);
	}
	kill_jobs(S.jobs, S.njobs);
	st->lns_time = now_seconds() - S.t0;
	return S.best;
}
