/*
 * place.c - the placement pass: which optimizer places, and every policy
 * around it (place.h).
 *
 * The optimizers themselves make one placement under one limit: the
 * baselines by a rule (place_baselines.c), static, sync and async by an
 * integer linear program (place_ilp.c). This file decides what to ask
 * them for, and asks again when the answer does not fit:
 *
 *   ratio       --ratio S:F is relative to the all-fast footprint (the
 *               peak of live bytes plus the kernels' scratch); below
 *               the smallest feasible limit it means as little as can
 *               work, so a few growing limits are tried from the lower
 *               bound the ILP states, up to the peak;
 *   packing     the fast pool is packed (memplan.c) and can fragment:
 *               first-touch walks again with fewer fast pages; the ILP is
 *               solved again with tighter per-step limits around what
 *               overflows (AutoTM's rule, made to converge);
 *   fallback    when async's re-solves find nothing, sync's placement,
 *               which async could have chosen, is returned as async's;
 *   checkpoint  without --segments, the fastest number of segments whose
 *               pool fits;
 *   um          the unified-memory baseline is every tensor in managed
 *               memory: all-fast's placement, with the limit the runtime
 *               caps the device at;
 *   scratch     the kernels' scratch (the most any kernel of the schedule
 *               needs, by the cost model) is held beside the pool for the
 *               whole run: the optimizers place under the limit less it,
 *               and the placement's workspace includes it.
 */
#include "place.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memplan.h"
#include "predict.h"
#include "solver.h"
#include "ticker.h"
#include "util.h"

/* Pages do not fragment; a packed pool can: walk again with the excess taken off the page budget. */
static Placement *first_touch(const Graph *g, const Schedule *s, int64_t limit, Arena *a)
{
	int64_t budget = limit;
	for (;;) {
		Placement *p = place_first_touch_walk(g, s, budget, limit, a);
		memplan(p, a);
		if (p->fast_bytes <= limit || budget <= 0)
			return p;
		budget -= (p->fast_bytes - limit + PLACE_PAGE - 1) / PLACE_PAGE * PLACE_PAGE;
	}
}

static bool has_algos(const PlaceOptions *o)
{
	return o->cm && o->cm->algos && o->kernels_fast;
}

/* The fastest of node n's algorithms (cm->algos lists it first) whose workspace is at most room (any: < 0), or NULL. */
static const KernelAlgo *fastest_algo(const PlaceOptions *o, const Node *n, int64_t room)
{
	const KernelAlgo *al;
	int na = o->cm->algos(o->cm, n, &al);
	for (int i = 0; i < na; i++)
		if (room < 0 || al[i].workspace <= room)
			return &al[i];
	return NULL;
}

/*
 * Every kernel with measured algorithms (a GPU profile's algo lines) runs
 * the fastest (cm->algos lists it first) whose workspace is at most
 * room[k] for step k, or at most `uniform` everywhere (room NULL; any if
 * uniform < 0): without a limit (all-fast, unified memory) the fastest
 * whatever its workspace, so that all-fast is timed with the kernels a
 * placement would pick. A kernel without such an algorithm runs cuDNN's
 * heuristic choice, timed by its kernel line. The workspaces are blocks
 * of the fast pool (Placement.ws_in_pool), but for unified memory, whose
 * runtime holds the largest beside its managed pool.
 */
static void set_algos(Placement *p, const Schedule *s, const PlaceOptions *o, const int64_t *room, int64_t uniform,
                      Arena *a)
{
	p->ws_in_pool = !optimizer_has(p->optimizer, OFLAG_MANAGED);
	int64_t most = 0;
	for (int k = 0; k < s->n; k++) {
		const KernelAlgo *al = fastest_algo(o, s->order[k], room ? room[k] : uniform);
		if (!al && !p->algo)
			continue;
		if (!p->algo)
			p->algo = arena_array(a, (size_t)s->n + 1, sizeof(KernelAlgo *));
		p->algo[k] = al;
		if (al && al->workspace > most)
			most = al->workspace;
	}
	if (!p->ws_in_pool)
		p->workspace = most;
}

/*
 * Room for step k's algorithm's workspace in p under limit: the limit
 * less the bytes live where it runs, at its kernel and at every boundary
 * where a recompute runs it.
 */
static int64_t *algo_rooms(const Placement *p, int64_t limit, Arena *a)
{
	int n = p->s->n;
	int64_t *live = memplan_fast_live(p, a);
	int64_t *room = arena_array(a, (size_t)n + 1, sizeof(int64_t));
	for (int k = 0; k < n; k++)
		room[k] = limit - live[2 * k + 1];
	for (int i = 0; i < p->recomputes.n; i++) {
		const Recompute *rc = &p->recomputes.v[i];
		int64_t r = limit - live[2 * rc->at];
		if (r < room[rc->step])
			room[rc->step] = r;
	}
	for (int k = 0; k < n; k++)
		if (room[k] < 0)
			room[k] = 0;
	return room;
}

/*
 * p's algorithms under limit (< 0: none), p packed (place_pack): the
 * fastest whose workspace fits beside what is live where each runs; if
 * the pool does not pack so under the limit, the fastest that fit beside
 * the residencies' packed pool, where memplan can put every workspace.
 */
static void choose_algos(Placement *p, const Schedule *s, const PlaceOptions *o, int64_t limit, Arena *a)
{
	if (!has_algos(o))
		return;
	if (limit < 0) {
		set_algos(p, s, o, NULL, -1, a);
		return;
	}
	p->limit = limit;
	p->algo = NULL;
	set_algos(p, s, o, algo_rooms(p, limit - p->workspace, a), 0, a);
	place_pack(o, p, a);
	if (p->fast_bytes + p->workspace <= limit)
		return;
	p->algo = NULL;
	place_pack(o, p, a);
	int64_t room = limit - p->workspace - p->fast_bytes;
	set_algos(p, s, o, NULL, room < 0 ? 0 : room, a);
	place_pack(o, p, a);
}

/*
 * p packed, whose pool with its algorithms' workspaces does not fit the
 * limit: algorithms that fit instead (a start whose algorithms were
 * chosen before it was packed: the swaps' fastest, or a solved one that
 * packed larger than its program's capacity rows).
 */
static void fit_algos(Placement *p, const Schedule *s, const PlaceOptions *o, int64_t limit, Arena *a)
{
	if (has_algos(o) && p->fast_bytes + p->workspace > limit)
		choose_algos(p, s, o, limit, a);
}

/*
 * Into hole[k], the largest gap below cap that p's packed residencies
 * leave at step k's kernel and at every boundary where a recompute runs
 * it (with the same algorithm, so the same workspace).
 */
static void algo_holes(const Placement *p, int64_t cap, int64_t *hole, Arena *a)
{
	int64_t *bhole = arena_array(a, (size_t)p->s->n + 1, sizeof(int64_t));
	memplan_holes(p, cap, hole, bhole);
	for (int i = 0; i < p->recomputes.n; i++)
		if (bhole[p->recomputes.v[i].at] < hole[p->recomputes.v[i].step])
			hole[p->recomputes.v[i].step] = bhole[p->recomputes.v[i].at];
}

/* place.h; a solution whose plan is sound but whose workspaces found no gap then needs no re-solve */
bool place_fit_workspaces(Placement *p, const Schedule *s, const PlaceOptions *o, int64_t limit, Arena *a)
{
	if (!has_algos(o) || !p->algo || !p->ws_in_pool)
		return false;
	int64_t cap = limit - p->workspace;
	for (int i = 0; i < p->res.n; i++)
		if (place_above_limit(p, p->res.v[i], limit))
			return false;
	int64_t *hole = arena_array(a, (size_t)s->n + 1, sizeof(int64_t));
	for (int round = 0; round < 3 && p->fast_bytes > cap; round++) {
		algo_holes(p, cap, hole, a);
		bool changed = false;
		for (int k = 0; k < s->n; k++) {
			const KernelAlgo *al = p->algo[k] && p->algo[k]->workspace > hole[k] ?
			                       fastest_algo(o, s->order[k], hole[k]) : NULL;
			if (al) {
				p->algo[k] = al;
				changed = true;
			}
		}
		if (!changed)
			break;
		place_pack(o, p, a);
	}
	return p->fast_bytes <= cap;
}

/* checkpoint's placement p: its algorithms under o->limit (none: any), and p packed */
static void checkpoint_algos(Placement *p, const Schedule *s, const PlaceOptions *o, Arena *a)
{
	if (has_algos(o) && o->limit > 0) {
		choose_algos(p, s, o, o->limit, a); /* packs p (o is checkpoint's own: place_pack is memplan) */
		return;
	}
	choose_algos(p, s, o, -1, a);
	memplan(p, a);
}

/*
 * A placement for auto's and recompute's solver to start from, the
 * faster of those that fit: checkpoint's in its lazy form (the number
 * of segments that is fastest within the limit), and for auto sync's
 * recompute's and async's placements (each placed and packed in a fifth
 * of the time) and the greedy swaps of place_ilp_swaps. Large programs
 * of the joint formulation are hard to find a first solution of; with a
 * start the solver only has to improve one. NULL if none fits. The
 * solved starts are packed by first fit, as the search packs; into
 * *squeezed, the fastest of their solutions that packed only squeezed
 * (PlaceStats.squeezed), which is no start but can be the answer.
 */
static Placement *fragmentation_loop(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a,
                                     PlaceStats *st, char *err, size_t errlen);

/* The fastest start so far. */
typedef struct Start {
	Placement *p;
	double time;
	const char *name;
} Start;

/* One of checkpoint's plans that does not fit the limit: a base for swaps. */
typedef struct Base {
	Placement *p;
	int64_t peak;
	int segments;
	bool balanced;
} Base;

static int cmp_base(const void *x, const void *y)
{
	const Base *a = x, *b = y;
	return a->peak < b->peak ? -1 : a->peak > b->peak;
}

static const double margins[] = {0.98, 0.95, 0.9, 0.85, 0.8, 0.7}; /* of the limit: the greedy swaps' targets */

/* Keep p (which fits) if it is faster than the start so far. */
static void consider(Start *best, Placement *p, const CostModel *cm, const char *name)
{
	double t = placement_predict(p, cm, NULL);
	if (!best->p || t < best->time)
		*best = (Start){p, t, name};
}

/*
 * checkpoint's lazy plans, of equal runs and of balanced ones: those that
 * fit `limit` into *best; those above it, bases for swaps, into over
 * (least peak first); returns their number.
 */
static int checkpoint_starts(const Graph *g, const Schedule *s, const PlaceOptions *o, int64_t limit, Start *best,
                             Base *over, Arena *a)
{
	int64_t least = o->tiny < 0 ? 0 : o->tiny == 0 ? PLACE_TINY : o->tiny;
	int fwd = place_forward_steps(s), nover = 0;
	for (int b = 0; b < 2; b++)
		for (int k = 2; k <= PLACE_MAX_SEGMENTS && k <= fwd; k++) {
			Placement *p = place_checkpoint_runs(g, s, k, b, true, least, a);
			int64_t peak = memplan_fast_peak(p, a);
			if (peak <= limit) {
				if (has_algos(o))
					set_algos(p, s, o, algo_rooms(p, limit, a), 0, a);
				consider(best, p, o->cm, b ? "balanced checkpoint" : "checkpoint");
			} else {
				over[nover++] = (Base){p, peak, k, b};
			}
		}
	qsort(over, (size_t)nover, sizeof(Base), cmp_base);
	return nover;
}

/*
 * auto: swaps over the gaps between uses by spanning moves, packed
 * under the limit (no solver: first, so that the cutoffs below are
 * the tighter), on all-fast and then on checkpoint's plans that do not
 * fit (least peak first, for PLACE_GREEDY_SHARE of the time): the
 * tensors they keep are swapped over the gaps between their uses.
 * inception_v3 b64 at a quarter of its peak (measured H200 profile):
 * no run of checkpoint's fits, nor does recompute's program; on
 * balanced runs (9 of them) with swaps, 133.2 ms in 0.4 s, where
 * async's start had been 223-230 ms after 15 s. Not where a run of
 * checkpoint's fits (the time is the search's), and no more after
 * PLACE_GREEDY_MISSES plans in a row gave none. Where no gap frees a
 * step, weights and optimizer state are offloaded: ResNet-50 b32 at
 * a quarter of its peak, whose backward steps hold 196 MiB of them
 * beside a region's 75 MiB of workspace, had no plan from any of the
 * 62 (the start was async's 108.5 ms after 15 s); with offloading,
 * 29 runs give 59.9 ms in 0.4 s. The plans are packed by first fit
 * (squeezed a little): memplan's full squeeze of each of inception_v3
 * b64's larger plans took seconds, and left checkpoint's no time.
 */
static void greedy_starts(const Graph *g, const Schedule *s, const PlaceOptions *o, int64_t limit, const Base *over,
                          int nover, double t0, Start *best, Arena *a)
{
	double total = o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT;
	double greedy_end = t0 + total * PLACE_GREEDY_SHARE;
	if (best->p)
		nover = 0; /* a run of checkpoint's fits: the search starts as well from it (or better) */
	PlaceOptions quick = *o; /* packed by first fit, else squeezed only a little: many plans are tried */
	quick.first_fit = true;
	for (int b = -1, misses = 0; b < nover && (b < 0 || now_seconds() < greedy_end) &&
	                             misses < PLACE_GREEDY_MISSES;
	     b++) {
		const Placement *base = b < 0 ? NULL : over[b].p;
		const char *name = b < 0 ? "swaps" : over[b].balanced ? "balanced checkpoint and swaps" : "checkpoint and swaps";
		misses += b >= 0;
		for (int i = 0; i < (int)countof(margins); i++) {
			bool stuck;
			Placement *p = place_ilp_swaps(g, s, o, margins[i], base, &stuck, a);
			if (!p && stuck)
				break;
			if (!p)
				continue;
			memplan_first_fit(p, a);
			fit_algos(p, s, &quick, limit, a);
			if (p->fast_bytes + p->workspace <= limit) {
				consider(best, p, o->cm, name);
				misses = 0;
				if (place_solver_log())
					fprintf(stderr, "start: %s (%d runs) at %.0f%% of the limit: %.1f us, by %.1f s\n", name,
					        b < 0 ? 0 : over[b].segments, 100 * margins[i], placement_predict(p, o->cm, NULL) * 1e6,
					        now_seconds() - t0);
				break;
			}
		}
	}
}

/*
 * auto: also sync's, recompute's and async's placements, each packed
 * under the limit (their own fragmentation loops, a fifth of the time
 * each): auto is then never slower than any of them (as each placed in
 * that time), even where packing or the time limit stops its own
 * larger program short. One whose linear relaxation is already no
 * faster than the best so far is not solved (PlaceOptions.cutoff):
 * async at a quarter of densenet201 b64's peak on the GPU, bounded at
 * 404.8 ms against recompute's 100.7 ms, had taken its whole fifth.
 */
static void portfolio_starts(const Graph *g, const Schedule *s, const PlaceOptions *o, double t0, Start *best,
                             Start *squeezed, Arena *a)
{
	double total = o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT;
	static const OptimizerId parts[] = {OPT_SYNC, OPT_RECOMPUTE, OPT_ASYNC};
	/*
	 * sync is placed a little below the limit (PLACE_START_MARGIN), so
	 * that first fit packs its plan at the first attempt: its fast
	 * residencies live long, so no repair can mend a plan that
	 * overflows, and every further attempt solves the whole program
	 * again. async is placed there too where first fit packed sync's
	 * plan above the bytes it was planned for (this program is crowded
	 * at this limit). inception_v3 b64 at a quarter of its peak, planned
	 * from its measured H200 profile: sync took 4 attempts (11.9 s),
	 * async's first plan (233.1 ms) was 0.37% over the limit by first
	 * fit and its second attempt found none in the time left, so the
	 * search started from sync's 294.3 ms after 27 s; with the margin,
	 * from async's 235.3 ms after 13 s. Not everywhere: resnet50 b32 at
	 * a quarter of its peak (sync's plan packs there), async's start
	 * placed below the limit was as fast but used less of it, and the
	 * search ended at 1.43x instead of 1.30-1.36x. recompute's overflow
	 * is repaired instead (its plans, tightened, were no faster).
	 */
	bool crowded = false;
	int64_t *below = arena_array(a, (size_t)s->n + 1, sizeof(int64_t));
	for (int i = 0; i < s->n; i++)
		below[i] = (int64_t)((double)(o->step_limit ? o->step_limit[i] : o->limit) * (1 - PLACE_START_MARGIN));
	/*
	 * A fifth of the time each, and each also what the ones before it
	 * left of theirs (cut off by its relaxation, or solved early).
	 * DenseNet-201 b64 at a quarter of its peak (measured H200 profile):
	 * sync is cut off within a second, and recompute's program, which
	 * needs 12.4 s from checkpoint's plan to find its 148.7 ms, had 12 s
	 * less its own start: auto ended at 154.7 ms, 4% above recompute
	 * alone. async keeps what was left only where its relaxation is
	 * within PLACE_TIGHT of the best start (PlaceOptions.loose): there
	 * CBC closes the gap given the time. On the CPU's Optane model,
	 * densenet264 b32 at 4:1 and 8:1, its relaxation was 0.3% below the
	 * greedy's start and async alone found its optimum in 32 s; with a
	 * fifth, auto's start was the greedy's and its search ended 0.2% and
	 * 0.08% above async alone. On VGG-19 b64 at half its peak (measured
	 * H200 profile) the relaxation is 30% below, and the extra time
	 * bought no better start (200.2 ms against 200.7) but took it from
	 * the search, which ended at 151-155 ms against 143-147.
	 */
	double share = total / 5, left = 0;
	for (int i = 0; i < (int)countof(parts); i++) {
		MoveKind moves = optimizer_info[parts[i]].moves;
		double part_t0 = now_seconds();
		PlaceOptions so = *o;
		so.optimizer = parts[i];
		so.start = NULL;
		so.time_limit = share + left;
		so.loose = moves == MOVES_ASYNC ? left : 0;
		so.first_fit = true; /* as the search will pack its neighbourhoods */
		if (moves == MOVES_SYNC || (moves == MOVES_ASYNC && crowded))
			so.step_limit = below;
		so.cutoff = best->p ? best->time : 0; /* a slower one is no start */
		PlaceStats sst;
		char err[512];
		if (best->p)
			ticker_note("start: %s's (best: %s's %.3f ms)", optimizer_info[so.optimizer].name,
			            best->name, 1e3 * best->time);
		else
			ticker_note("start: %s's", optimizer_info[so.optimizer].name);
		Placement *p = fragmentation_loop(g, s, &so, a, &sst, err, sizeof err);
		if (!p && so.step_limit == below && sst.total_time < so.time_limit / 2) {
			/* nothing below the limit (at its floor, where no byte is spare): at the limit itself */
			so.step_limit = o->step_limit;
			so.time_limit -= sst.total_time;
			p = fragmentation_loop(g, s, &so, a, &sst, err, sizeof err);
		}
		if (!p && optimizer_has(parts[i], OFLAG_MAY_OFFLOAD) && so.offload == 0 && sst.total_time < so.time_limit / 2) {
			/*
			 * none with every weight and optimizer state in one tier: with
			 * auto's offloading (a slow home updated in a fast copy). VGG-19
			 * b64 at half its peak from its measured H200 profile: sync and
			 * async need 57% with their weights fast; offloaded, async's
			 * start (247 ms) took 12 s, and the search ended at 231 ms,
			 * where with no start CBC had found a first plan after 30 s of
			 * its 60 (254 ms), or none at all.
			 */
			so.offload = 1;
			so.time_limit -= sst.total_time;
			p = fragmentation_loop(g, s, &so, a, &sst, err, sizeof err);
		}
		const char *name = optimizer_info[so.optimizer].name;
		if (moves == MOVES_SYNC && sst.nattempts > 0)
			crowded = sst.attempt_pool[0] > sst.attempt_limit[0];
		if (p)
			consider(best, p, o->cm, name);
		if (sst.squeezed && (!squeezed->p || sst.squeezed_time < squeezed->time))
			*squeezed = (Start){sst.squeezed, sst.squeezed_time, name};
		if (place_solver_log())
			fprintf(stderr, "start: %s's placement by %.1f s%s%s\n", name, now_seconds() - t0, p ? "" : ": ",
			        p ? "" : err);
		left = fmax(0, share + left - (now_seconds() - part_t0));
	}
}

static Placement *ilp_start_placement(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a,
                                      PlaceStats *st, double *seconds, Start *squeezed)
{
	*squeezed = (Start){0};
	Start best = {0};
	double t0 = now_seconds();
	int64_t limit = o->limit;
	for (int i = 0; o->step_limit && i < s->n; i++)
		if (o->step_limit[i] < limit)
			limit = o->step_limit[i];
	Base *over = arena_array(a, 2 * PLACE_MAX_SEGMENTS + 1, sizeof(Base));
	int nover = checkpoint_starts(g, s, o, limit, &best, over, a);
	if (place_solver_log())
		fprintf(stderr, "start: checkpoint's segments in %.1f s%s%s\n", now_seconds() - t0, best.p ? ": " : "",
		        best.p ? best.name : "");
	if (optimizer_has(o->optimizer, OFLAG_PORTFOLIO)) {
		greedy_starts(g, s, o, limit, over, nover, t0, &best, a);
		portfolio_starts(g, s, o, t0, &best, squeezed, a);
	}
	st->start_name = best.name;
	st->start_time = best.time;
	*seconds = now_seconds() - t0;
	if (place_solver_log())
		fprintf(stderr, "start: %s's, %.1f us, after %.1f s\n", best.name ? best.name : "none", best.time * 1e6,
		        *seconds);
	return best.p;
}

/*
 * AutoTM's rule: when the packed fast pool (worst) exceeds the limit, the
 * limits of the steps within PLACE_FRAG_RADIUS of every fast residency
 * that reaches beyond the limit are scaled by
 * max(0.90, 1 - (worst / limit - 1) / 2), and the ILP is solved again.
 * Two changes make it converge when the excess is small: the cut is at
 * least PLACE_FRAG_MIN_CUT, doubled for every attempt in a row that did
 * not shrink the pool, and such attempts tighten every step.
 *
 * The time limit is the budget of all attempts: a re-solve gets what is
 * left. With a start that fits (auto, recompute), none starts once the
 * budget is spent, and the start is the answer if nothing faster packed;
 * without one, a re-solve gets at least a quarter of the budget (a large
 * async program needs that long to find a first solution), and none
 * starts after twice the budget.
 */
/*
 * st->gap of a placement of `time` seconds against st->bound, the
 * first attempt's (a placement at the limit is no faster than it, so a
 * bound above `time` is one by tolerances only); no bound proved: 100%.
 */
static void state_bound(PlaceStats *st, double time)
{
	if (st->bound > time)
		st->bound = time;
	st->gap = st->bound > 0 ? (time - st->bound) / time : 1;
}

static Placement *fragmentation_loop(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a,
                                     PlaceStats *st, char *err, size_t errlen)
{
	int n = s->n;
	int64_t *limits = arena_array(a, (size_t)n + 1, sizeof(int64_t));
	for (int i = 0; i < n; i++)
		limits[i] = o->step_limit ? o->step_limit[i] : o->limit;
	PlaceOptions opt = *o;
	opt.step_limit = limits;
	double budget = o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT, spent = 0;
	double ctimes[PLACE_MAX_ATTEMPTS], otimes[PLACE_MAX_ATTEMPTS];
	int64_t alimit[PLACE_MAX_ATTEMPTS], apool[PLACE_MAX_ATTEMPTS];
	int stuck = 0; /* attempts in a row that did not shrink the pool */
	Placement *fallback = NULL; /* the start, if its packed pool fits: returned when the solver finds no better */
	double fallback_time = 0;
	Placement *squeezed = NULL; /* first_fit: the fastest solution that packed only squeezed (PlaceStats.squeezed) */
	double squeezed_time = 0;
	PlaceStats start = {0};     /* which start, and its time */
	double bound0 = 0;          /* the first attempt's bound: the only one valid at the limit */
	for (int attempt = 0; attempt < PLACE_MAX_ATTEMPTS && spent < (fallback ? budget : 2 * budget); attempt++) {
		opt.time_limit = budget - spent > budget / 4 || fallback ? budget - spent : budget / 4;
		if (attempt == 0 && optimizer_has(o->optimizer, OFLAG_STARTS)) {
			double start_seconds = 0;
			Start sq;
			Placement *sp = ilp_start_placement(g, s, &opt, a, &start, &start_seconds, &sq);
			spent += start_seconds;
			opt.start = sp;
			if (sp) {
				place_pack(o, sp, a);
				fit_algos(sp, s, o, o->limit, a);
				if (sp->fast_bytes + sp->workspace <= o->limit) {
					fallback = sp;
					fallback_time = start.start_time = placement_predict(sp, o->cm, NULL);
				}
			}
			/*
			 * a start's solution that packs only squeezed (packed so under
			 * this limit by keep_squeezed): the answer if faster than the
			 * search's, not its start
			 */
			if (sq.p && !o->first_fit && (!fallback || sq.time < fallback_time)) {
				fallback = sq.p;
				fallback_time = sq.time;
				if (place_solver_log())
					fprintf(stderr, "start: %s's solution packed squeezed, %.1f us, is the fallback\n", sq.name,
					        sq.time * 1e6);
			}
			/* the solve gets what the starts left, as every re-solve */
			opt.time_limit = budget - spent > budget / 4 ? budget - spent : budget / 4;
		} else if (attempt > 0) {
			opt.start = fallback; /* it fits the limit, if not the tightened per-step limits */
		}
		Placement *p = place_ilp(g, s, &opt, a, st, err, errlen);
		/*
		 * Only the first attempt's program is the user's limit: a later
		 * one's is tightened (a restriction), so its bound is no bound on
		 * the placements at the limit. The first's stands for all of them.
		 */
		if (attempt == 0)
			bound0 = st->bound;
		else {
			st->bound = bound0;
			if (p && st->status && !strcmp(st->status, "optimal"))
				st->status = "optimal under the tightened limits";
			if (p)
				state_bound(st, st->objective);
		}
		st->start_name = start.start_name;
		st->start_time = start.start_time;
		ctimes[attempt] = st->creation_time;
		otimes[attempt] = st->solve_time;
		spent += st->creation_time + st->solve_time;
		alimit[attempt] = o->limit;
		for (int i = 0; i < n; i++)
			if (limits[i] < alimit[attempt])
				alimit[attempt] = limits[i];
		apool[attempt] = p ? 0 : -1;
		if (st->squeezed && (!squeezed || st->squeezed_time < squeezed_time)) {
			squeezed = st->squeezed;
			squeezed_time = st->squeezed_time;
		}
		if (p) {
			place_pack(o, p, a);
			if (p->fast_bytes + p->workspace > o->limit && place_fit_workspaces(p, s, o, o->limit, a))
				st->predicted_time = placement_predict(p, o->cm, NULL);
			apool[attempt] = p->fast_bytes + p->workspace;
		}
		st->squeezed = squeezed;
		st->squeezed_time = squeezed_time;
		st->nattempts = attempt + 1;
		memcpy(st->creation_times, ctimes, sizeof(double) * (size_t)(attempt + 1));
		memcpy(st->optimization_times, otimes, sizeof(double) * (size_t)(attempt + 1));
		memcpy(st->attempt_limit, alimit, sizeof(int64_t) * (size_t)(attempt + 1));
		memcpy(st->attempt_pool, apool, sizeof(int64_t) * (size_t)(attempt + 1));
		st->total_time = spent;
		if (place_solver_log())
			fprintf(stderr, "%s attempt %d: limit %" PRId64 ", pool %" PRId64 ", %.1f us, %.1f s\n",
			        optimizer_info[o->optimizer].name, attempt + 1, alimit[attempt], apool[attempt],
			        p ? st->predicted_time * 1e6 : 0.0, spent);
		if (!p)
			break;
		if (p->fast_bytes + p->workspace <= o->limit) {
			if (fallback && fallback_time < st->predicted_time * (1 - 1e-6))
				break; /* the solver stopped above its start */
			return p;
		}
		/* around the tensors above the limit; everywhere while that does not shrink the pool */
		bool everywhere = attempt > 0 && apool[attempt] >= apool[attempt - 1];
		stuck = everywhere ? stuck + 1 : 0;
		double scale = place_frag_scale(p, o->limit, PLACE_FRAG_MIN_CUT * (double)(1 << stuck));
		bool *mark = arena_array(a, (size_t)n + 1, sizeof(bool));
		for (int i = 0; i < p->res.n && !everywhere; i++) {
			const Residency *r = p->res.v[i];
			if (!place_above_limit(p, r, o->limit))
				continue;
			int lo = r->first - PLACE_FRAG_RADIUS, hi = r->last + PLACE_FRAG_RADIUS;
			for (int k = lo < 0 ? 0 : lo; k <= hi && k < n; k++)
				mark[k] = true;
		}
		for (int i = 0; i < n && !everywhere; i++) { /* and around the workspaces above it */
			if (!place_ws_above_limit(p, i, o->limit))
				continue;
			for (int k = i - PLACE_FRAG_RADIUS; k <= i + PLACE_FRAG_RADIUS; k++)
				if (k >= 0 && k < n)
					mark[k] = true;
		}
		for (int k = 0; k < n; k++)
			if (mark[k] || everywhere)
				limits[k] = (int64_t)((double)limits[k] * scale);
	}
	if (fallback) {
		fallback->optimizer = o->optimizer;
		fallback->limit = o->limit;
		st->status = "the start's placement (the solver found none better that fits)";
		st->predicted_time = st->objective = fallback_time;
		state_bound(st, fallback_time);
		return fallback;
	}
	if (st->nattempts == 0 || apool[st->nattempts - 1] < 0)
		return NULL; /* the solver's message stands */
	char b1[64], b2[64];
	snprintf(err, errlen,
	         "fragmentation: the fast pool stays above the limit %s after %d attempts in %.0f s (last: %s); "
	         "give a larger limit or more time (--solver-time)",
	         fmt_bytes(o->limit, b1, sizeof b1), st->nattempts, spent,
	         fmt_bytes(apool[st->nattempts - 1], b2, sizeof b2));
	return NULL;
}

/*
 * checkpoint_sequential's placement with o->segments, or, with none
 * given, the fastest of 1 to PLACE_MAX_SEGMENTS segments whose packed fast
 * pool fits o->limit (the fewest segments among equally fast ones).
 */
static Placement *checkpoint(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                             char *err, size_t errlen)
{
	if (o->segments > 0) {
		Placement *p = place_checkpoint_segments(g, s, o->segments, false, 0, a);
		p->limit = o->limit;
		checkpoint_algos(p, s, o, a);
		st->segments = o->segments;
		return p;
	}
	Placement *best = NULL;
	double best_time = 0;
	int64_t least = -1;
	int least_k = 0, fwd = place_forward_steps(s);
	for (int k = 1; k <= PLACE_MAX_SEGMENTS && k <= (fwd > 0 ? fwd : 1); k++) {
		Placement *p = place_checkpoint_segments(g, s, k, false, 0, a);
		checkpoint_algos(p, s, o, a);
		if (least < 0 || p->fast_bytes < least)
			least = p->fast_bytes, least_k = k;
		if (p->fast_bytes > o->limit)
			continue;
		double t = o->cm ? placement_predict(p, o->cm, NULL) : (double)p->recomputes.n;
		if (!best || t < best_time) {
			best = p;
			best_time = t;
			st->segments = k;
		}
	}
	if (best)
		best->limit = o->limit;
	if (!best) {
		char b1[64], b2[64];
		snprintf(err, errlen, "checkpoint: no number of segments (1 to %d) fits the fast-tier limit %s; the "
		                      "smallest fast pool is %s, with %d segments",
		         PLACE_MAX_SEGMENTS, fmt_bytes(o->limit, b1, sizeof b1), fmt_bytes(least, b2, sizeof b2), least_k);
	}
	return best;
}

/* The ILP under the packing loop; for async, sync's placement when its re-solves find none. */
static Placement *place_by_ilp(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                               char *err, size_t errlen)
{
	Placement *p = fragmentation_loop(g, s, o, a, st, err, errlen);
	OptimizerId fallback = optimizer_info[o->optimizer].fallback;
	if (p || fallback == OPT_NONE || st->nattempts < 2)
		return p;
	PlaceOptions so;
	/*
	 * Re-solves with tightened limits can leave async without a solution
	 * where sync has one (near the smallest limit, where every byte is
	 * spoken for); sync's placement is one async may choose.
	 */
	so = *o;
	so.optimizer = fallback;
	PlaceStats sst;
	char serr[512];
	p = fragmentation_loop(g, s, &so, a, &sst, serr, sizeof serr);
	if (!p)
		return NULL; /* async's message stands */
	double async_time = st->total_time;
	*st = sst;
	st->total_time += async_time;
	st->status = "sync's placement (async's re-solves for fragmentation found none)";
	p->optimizer = o->optimizer;
	return p;
}

/* One placement of o's optimizer under o->limit. */
static Placement *place_once(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                             char *err, size_t errlen)
{
	memset(st, 0, sizeof *st);
	Placement *p = NULL;
	if (optimizer_info[o->optimizer].kind == OPTIMIZER_ILP)
		return place_by_ilp(g, s, o, a, st, err, errlen);
	switch (o->optimizer) { /* the baselines, each its rule */
	case OPT_CHECKPOINT:
		p = checkpoint(g, s, o, a, st, err, errlen);
		if (!p)
			return NULL;
		break;
	case OPT_FIRST_TOUCH:
		p = first_touch(g, s, o->limit, a);
		break;
	case OPT_ALL_FAST:
		p = place_all_fast(g, s, a);
		choose_algos(p, s, o, -1, a);
		break;
	case OPT_ALL_SLOW:
		p = place_all_slow(g, s, a);
		break;
	case OPT_SPILL_ALL:
		p = place_spill_all(g, s, a);
		break;
	case OPT_UM: /* every tensor in managed memory; the driver pages it (not predicted) */
		p = place_all_fast(g, s, a);
		p->optimizer = OPT_UM;
		choose_algos(p, s, o, -1, a);
		p->limit = o->limit;
		st->status = "baseline";
		return p;
	case OPT_AUTO: /* the ILP's, above */
	case OPT_RECOMPUTE:
	case OPT_STATIC:
	case OPT_SYNC:
	case OPT_ASYNC:
	case NUM_OPTIMIZERS:
		unreachable();
	}
	st->status = "baseline";
	st->predicted_time = st->objective = st->bound = o->cm ? placement_predict(p, o->cm, NULL) : 0;
	return p;
}

int64_t place_kernel_scratch(const Schedule *s, const CostModel *cm)
{
	int64_t most = 0;
	for (int i = 0; cm && cm->scratch && i < s->n; i++)
		if (cm->scratch[s->order[i]->id] > most)
			most = cm->scratch[s->order[i]->id];
	return most;
}

/*
 * place_once under the limit less the kernels' scratch: the placement
 * then states the whole limit and holds the scratch in its workspace, and
 * st->min_limit counts it too.
 */
static Placement *place_beside_scratch(const Graph *g, const Schedule *s, const PlaceOptions *o, int64_t scratch,
                                       Arena *a, PlaceStats *st, char *err, size_t errlen)
{
	if (scratch == 0 || optimizer_has(o->optimizer, OFLAG_MANAGED)) { /* a managed pool is not held under the limit */
		Placement *p = place_once(g, s, o, a, st, err, errlen);
		if (p)
			p->workspace += scratch;
		return p;
	}
	char b1[64], b2[64];
	PlaceOptions po = *o;
	if (o->limit > 0 && o->limit <= scratch) {
		memset(st, 0, sizeof *st);
		st->min_limit = scratch + MEMPLAN_ALIGN;
		snprintf(err, errlen, "the fast-tier limit %s does not even hold the kernels' scratch memory (%s)",
		         fmt_bytes(o->limit, b1, sizeof b1), fmt_bytes(scratch, b2, sizeof b2));
		return NULL;
	}
	if (o->limit > 0) /* else no limit */
		po.limit = o->limit - scratch;
	Placement *p = place_once(g, s, &po, a, st, err, errlen);
	st->min_limit += scratch;
	if (!p) {
		size_t n = strlen(err);
		char b3[64], need[96] = "";
		if (st->min_limit > o->limit) /* the tensors' least limit is above theirs: the tier's is it and the scratch */
			snprintf(need, sizeof need, ", which needs at least %s", fmt_bytes(st->min_limit, b3, sizeof b3));
		snprintf(err + n, errlen - n, " (limits for the tensors: the kernels' scratch, %s, is held beside them "
		                              "within the fast tier's %s%s)",
		         fmt_bytes(scratch, b1, sizeof b1), fmt_bytes(o->limit, b2, sizeof b2), need);
		return NULL;
	}
	p->workspace += scratch;
	if (p->limit == po.limit)
		p->limit = o->limit;
	return p;
}

/*
 * place_beside_scratch with a status line on a terminal (ticker.h) while
 * an ILP places: the solve takes up to its time limit, a minute by
 * default. Not with the solver's log, which says more.
 */
static Placement *place_ticking(const Graph *g, const Schedule *s, const PlaceOptions *o, int64_t scratch,
                                Arena *a, PlaceStats *st, char *err, size_t errlen)
{
	bool ticking = optimizer_info[o->optimizer].kind == OPTIMIZER_ILP && !place_solver_log() &&
	               ticker_begin(arena_printf(a, "placing (%s)", optimizer_info[o->optimizer].name),
	                            o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT);
	Placement *p = place_beside_scratch(g, s, o, scratch, a, st, err, errlen);
	if (ticking)
		ticker_end();
	return p;
}

/*
 * p placed under its limit: each kernel gets the fastest of its
 * algorithms whose workspace fits the largest gap that p's packed pool
 * leaves below the limit at its step, and at every boundary where a
 * recompute runs it (which runs the same algorithm), where that is
 * faster than its own. The ILP holds one workspace column in every step
 * (its largest), which any packing of the residencies can hold on top
 * of them; the packing usually leaves far larger gaps where little is
 * live. The residencies pack first (memplan.c), so each workspace finds
 * its gap again (the recomputes at a boundary share one block, as large
 * as the largest, which fits the gap there); if the pool should still
 * not fit, p keeps its own.
 */
static void upgrade_algos(Placement *p, const Schedule *s, const PlaceOptions *o, Arena *a)
{
	if (!has_algos(o) || !p->algo || !p->ws_in_pool || p->limit <= 0)
		return;
	memplan(p, a);
	int64_t cap = p->limit - p->workspace;
	if (p->fast_bytes > cap)
		return;
	const KernelAlgo **own = arena_array(a, (size_t)s->n + 1, sizeof(KernelAlgo *));
	memcpy(own, p->algo, sizeof(KernelAlgo *) * (size_t)s->n);
	int64_t *hole = arena_array(a, (size_t)s->n + 1, sizeof(int64_t));
	algo_holes(p, cap, hole, a);
	int better = 0;
	for (int k = 0; k < s->n; k++) {
		const KernelAlgo *al = p->algo[k] ? fastest_algo(o, s->order[k], hole[k]) : NULL;
		if (al && al->seconds < p->algo[k]->seconds) {
			p->algo[k] = al;
			better++;
		}
	}
	if (better == 0)
		return;
	memplan(p, a);
	if (p->fast_bytes > cap) {
		memcpy(p->algo, own, sizeof(KernelAlgo *) * (size_t)s->n);
		memplan(p, a);
	}
}

/* Whether the last solve ended as `s` (its status, place_ilp): MIP_INFEASIBLE, proved that nothing fits. */
static bool solver_said(const PlaceStats *st, MipStatus s)
{
	return st->status && !strcmp(st->status, mip_status_name(s));
}

/*
 * A ratio is relative: below what can work, it means as little as can
 * work. Growing limits from `base`, base x (1 + grow 2^i) for i = 0..5
 * (from base itself where from_base), up to the peak (every tensor
 * rounded to MEMPLAN_ALIGN, as the pool packs it: with the bytes
 * themselves, mlp's recompute at 4:1 on a GPU stopped 84 bytes short);
 * beyond it only where base is already there (the rounding of tiny
 * tensors). Where while_proved, only while the solver proves each
 * infeasible.
 */
static Placement *place_growing(const Graph *g, const Schedule *s, PlaceOptions *po, int64_t scratch, int64_t base,
                                double grow, bool from_base, bool while_proved, Arena *a, PlaceStats *st, char *err,
                                size_t errlen)
{
	Placement *p = NULL;
	int64_t top = schedule_live(g, s, MEMPLAN_ALIGN, NULL, NULL, a) + scratch; /* as the pool packs it */
	po->unexplained = true; /* the user reads the first limit's message, which says where it overflows */
	int tries = 0;
	for (int i = 0; i < 6 && !p && (!while_proved || solver_said(st, MIP_INFEASIBLE)); i++) {
		po->limit = i == 0 && from_base ? base : (int64_t)((double)base * (1 + grow * (1 << i)));
		if (base < top && po->limit > top)
			po->limit = top;
		ticker_note("the --ratio limit cannot hold the step: trying %.2f MiB", (double)po->limit / 1048576.0);
		p = place_ticking(g, s, po, scratch, a, st, err, errlen);
		tries++;
		if (base < top && po->limit >= top)
			break;
	}
	if (p)
		st->ratio_tried = tries - 1;
	return p;
}

Placement *place(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st, char *err,
                 size_t errlen)
{
	PlaceStats local;
	if (!st)
		st = &local;
	PlaceOptions po = *o;
	po.kernels_fast = target_info[o->target].kernels_fast;
	int64_t scratch = place_kernel_scratch(s, o->cm);
	if (po.ratio)
		po.limit = (int64_t)((double)(s->peak + scratch) * po.fast_fraction);
	Placement *p = place_ticking(g, s, &po, scratch, a, st, err, errlen);
	int64_t asked = po.limit;
	bool below = !p && po.ratio && st->min_limit > po.limit;
	if (!p && po.ratio && (below || solver_said(st, MIP_INFEASIBLE))) {
		char b1[64];
		const char *why = arena_strdup(a, err);
		if (o->strict) {
			snprintf(err, errlen, "--ratio %s gives the fast tier %s, which cannot hold the step (--strict): %s",
			         o->ratio, fmt_bytes(asked, b1, sizeof b1), why);
			return NULL;
		}
		if (below)
			/*
			 * below the stated minimum (st->min_limit): a lower bound (exact
			 * on a CPU; on a GPU, or after packing, a little more may be
			 * needed), so from it in steps of 5% and more
			 */
			p = place_growing(g, s, &po, scratch, st->min_limit, 0.025, true, false, a, st, err, errlen);
		else
			/*
			 * above it, where the solver proved that no placement fits
			 * (recompute at a quarter of resnet50 b32's peak on its measured
			 * H200 profile: it can only drop and remake activations, and is
			 * placed for 1.02 GiB against 697 MiB): in steps of 1/16 and
			 * more, while each is proved infeasible
			 */
			p = place_growing(g, s, &po, scratch, po.limit, 0.0625, false, true, a, st, err, errlen);
		if (p) {
			st->ratio_limit = asked;
			st->ratio_why = why;
		}
	}
	if (p)
		upgrade_algos(p, s, &po, a);
	return p;
}
