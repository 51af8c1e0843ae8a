/*
 * place_ilp.c - where every tensor lives at every step, by an integer
 * linear program: the pass. It builds the program (ilp_program.c), gives
 * it a start, solves it (CBC or lp_solve, solver.c), improves the
 * solution by neighbourhoods (ilp_search.c) and returns the placement of
 * the best, with the solver's statistics and, where no placement fits,
 * a message that says why.
 */
#include "ilp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memplan.h"
#include "predict.h"
#include "ticker.h"
#include "util.h"

/* Whether the fragmentation loop has lowered a step's limit below the limit. */
static bool tightened(const Schedule *s, const PlaceOptions *o)
{
	for (int i = 0; o->step_limit && i < s->n; i++)
		if (o->step_limit[i] < o->limit)
			return true;
	return false;
}

/*
 * With o->first_fit (auto's starts): solution x, if it does not pack by
 * first fit but does squeezed (memplan), as the optimizer alone packs it,
 * is kept in st->squeezed where it is the fastest so. The search starts
 * from a plan that packs by first fit (a repair or a re-solve of this
 * one); this one can still be the answer.
 */
static void keep_squeezed(const Ilp *ip, const PlaceOptions *o, const double *x, PlaceStats *st)
{
	if (!o->first_fit)
		return;
	Placement *p = ilp_extract(ip, o, x, ip->a);
	memplan_first_fit(p, ip->a);
	if (p->fast_bytes + p->workspace <= o->limit)
		return;
	memplan(p, ip->a);
	if (p->fast_bytes + p->workspace > o->limit)
		return;
	double t = placement_predict(p, o->cm, NULL);
	if (!st->squeezed || t < st->squeezed_time) {
		st->squeezed = p;
		st->squeezed_time = t;
	}
}

/* Solve ip's program (and free it); false with a message in err when it gives no placement. */
/*
 * For the message of a limit that an optimizer which only recomputes
 * found infeasible: "; recompute moves nothing to the slow tier, auto
 * does", or "" for any other.
 */
static bool portfolio(OptimizerId o)
{
	return optimizer_has(o, OFLAG_PORTFOLIO);
}

static const char *nothing_moves(OptimizerId o, char *buf, size_t size)
{
	char movers[128];
	if (optimizer_info[o].moves != MOVES_NONE || !optimizer_has(o, OFLAG_RECOMPUTES))
		return "";
	snprintf(buf, size, "; %s moves nothing to the slow tier, %s does", optimizer_info[o].name,
	         optimizer_names_if(portfolio, movers, sizeof movers));
	return buf;
}

/* The solver's options for ip, with its start from o->start (checked against every row), if any. */
static MipOptions solve_options(Ilp *ip, const PlaceOptions *o, PlaceStats *st)
{
	double *start = NULL;
	if (o->start) {
		start = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
		st->start_tensors = ilp_start(ip, o->start, start);
		int bad = mip_broken_row(ip->mip, start, 1e-6);
		char row[256];
		if (bad >= 0)
			ICE("the start from %s's placement breaks row %d of the program, %s",
			    optimizer_info[o->start->optimizer].name, bad, ilp_row_name(ip, bad, row, sizeof row));
	}
	return (MipOptions){
		.start = start,
		.backend = o->solver,
		.time_limit = o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT,
		.gap = o->gap == 0 ? PLACE_GAP : o->gap,
		.verbose = o->verbose || place_solver_log(),
	};
}

/*
 * A cutoff (auto's starts after the first): a program whose relaxation
 * is no faster is not solved (false, with the program freed and a
 * message). Only the relaxation: CBC's own cutoff hampered its search for
 * a first solution below it (resnet200 b32 at 8:1 on the Optane model:
 * async's start found none in its 12 s with sync's time as the cutoff,
 * and 9.457 s after 9 s without it). A relaxation well below it gives
 * back o->loose of the time.
 */
static bool beats_cutoff(Ilp *ip, const PlaceOptions *o, MipOptions *mo, PlaceStats *st, char *err, size_t errlen)
{
	MipResult lp;
	double t0 = now_seconds();
	bool solved = mip_solve(ip->mip, &(MipOptions){.backend = o->solver, .time_limit = mo->time_limit, .relax = true},
	                        &lp, err, errlen);
	bool slower = solved && lp.status == MIP_OPTIMAL && lp.objective >= o->cutoff * US;
	if (place_solver_log())
		fprintf(stderr, "%s: relaxation %.1f us against the cutoff %.1f us, in %.2f s\n",
		        optimizer_info[o->optimizer].name, solved && lp.status == MIP_OPTIMAL ? lp.objective : NAN,
		        o->cutoff * US, now_seconds() - t0);
	if (solved && lp.status == MIP_OPTIMAL && lp.objective < o->cutoff * US * (1 - PLACE_TIGHT) && o->loose > 0)
		mo->time_limit = fmax(mo->time_limit - o->loose, fmin(mo->time_limit, 1));
	if (solved)
		mip_result_free(&lp);
	if (!slower)
		return true; /* the solve keeps its time: async's start there found its first plan after 9 s of its 12 */
	mip_free(ip->mip);
	ip->mip = NULL;
	st->solve_time = now_seconds() - t0;
	st->status = "no placement faster than the cutoff";
	snprintf(err, errlen, "no placement faster than %.6f s: the program's relaxation is no faster", o->cutoff);
	return false;
}

/* The message of a solve that gave no placement (r's status; where: ilp_overflow's words), into err. */
static void no_placement(const Ilp *ip, const PlaceOptions *o, PlaceStats *st, const MipResult *r, double time_limit,
                         const char *where, char *err, size_t errlen)
{
	char b1[64], b2[64], b3[256];
	switch (r->status) {
	case MIP_OPTIMAL:
	case MIP_FEASIBLE:
		ICE("no placement from a solution");
	case MIP_INFEASIBLE:
		if (o->kernels_fast || o->step_limit)
			/* the limit is above st->min_limit (place_ilp), which is then only a lower bound */
			snprintf(err, errlen,
			         "the fast-tier limit %s is infeasible%s: the solver proved that no %s placement fits under it "
			         "(the tensors every step must hold alone need %s)%s%s",
			         fmt_bytes(o->limit, b1, sizeof b1),
			         tightened(ip->s, o) ? " after tightening for fragmentation" : "",
			         optimizer_info[o->optimizer].name, fmt_bytes(st->min_limit, b2, sizeof b2), where,
			         nothing_moves(o->optimizer, b3, sizeof b3));
		else
			snprintf(err, errlen, "the fast-tier limit %s is infeasible: the smallest feasible limit is %" PRId64
			         " bytes (%s)%s", fmt_bytes(o->limit, b1, sizeof b1), st->min_limit,
			         fmt_bytes(st->min_limit, b2, sizeof b2), where);
		break;
	case MIP_NO_SOLUTION:
		st->bound = r->bound > 0 ? r->bound / US : 0; /* what it proved, for a start returned instead */
		st->gap = 1;
		snprintf(err, errlen, "the %s solver found no placement within its time limit of %g s",
		         o->solver ? o->solver : "cbc", time_limit);
		break;
	case MIP_ERROR:
		snprintf(err, errlen, "the %s solver failed on the placement problem", o->solver ? o->solver : "cbc");
		break;
	}
}

/*
 * A large program of moves and recomputation with a start: first its
 * neighbourhoods (ilp_improve), from the start; their best solution into
 * *bx, its objective returned (INFINITY: none that packs). mo is left set
 * for the whole program's solve after them, from their solution, and
 * *whole says whether that solve runs (not after a search still gaining
 * fast, which took its time).
 */
static double search_first(Ilp *ip, const PlaceOptions *o, PlaceStats *st, MipOptions *mo, const double *start,
                           double t0, double **bx, bool *whole)
{
	*bx = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
	memcpy(*bx, start, sizeof(double) * (size_t)mip_ncols(ip->mip));
	int *owner = ilp_column_owners(ip);
	double share = *whole ? mo->time_limit * PLACE_LNS_SHARE : mo->time_limit;
	bool uncompleted = false;
	double better = ilp_improve(ip, o, owner, *bx, share, *whole ? mo->time_limit - share : 0, st, &uncompleted);
	/*
	 * A start the solver could not complete (some tensors' paths not
	 * given, the rest infeasible with them): CBC would only spend its
	 * root on it. inception_v4 b64 at a quarter of its peak: the
	 * greedy swaps' start has moves that span kernels, which its
	 * program (too large to keep spans) cannot express; CBC tried to
	 * complete it for 24 s and found its first plan at 30 s, right at
	 * its time limit, in one run of two; without it, at 18 s in three
	 * of three.
	 */
	if (uncompleted)
		mo->start = NULL;
	double spent = now_seconds() - t0, least = mo->time_limit * (1 - PLACE_LNS_SHARE);
	if (better < INFINITY) { /* its paths; CBC completes the rest (continuous values in a start crashed it) */
		double *sx = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
		for (int c = 0; c < mip_ncols(ip->mip); c++)
			sx[c] = owner[c] >= 0 ? round((*bx)[c]) : NAN;
		sx[ip->one] = 1;
		mo->start = sx;
	}
	mo->time_limit = mo->time_limit - spent > least ? mo->time_limit - spent : least;
	mo->no_preprocess = better < INFINITY; /* CglPreProcess crashed on such a start (densenet201 b64) */
	/*
	 * and without probing: after the neighbourhoods the whole program
	 * is solved for its bound, and one probing pass at its root took
	 * 6.8 s on densenet264 b32 at half its peak, past the time limit
	 * (CBC looks at the clock between passes), and moved no bound
	 */
	mo->no_probing = better < INFINITY;
	/*
	 * and stopped at its time limit wherever CBC is (MipOptions.deadline):
	 * with the neighbourhoods' solution in hand, it is solved for its bound
	 * and an improvement within the time asked for. Its root took 9-13 s
	 * past its limit on densenet264 b32 and densenet201 b64 at a quarter
	 * of their peaks (a heuristic, a pass of cuts): mo->deadline, below.
	 */
	*whole = (*whole && !st->lns_extended) || better == INFINITY;
	return better;
}

static bool ilp_solve(Ilp *ip, const PlaceOptions *o, PlaceStats *st, MipResult *r, char *err, size_t errlen)
{
	MipOptions mo = solve_options(ip, o, st);
	const double *start = mo.start;
	if (o->cutoff > 0 && !beats_cutoff(ip, o, &mo, st, err, errlen))
		return false;
	/*
	 * A large program of moves and recomputation (auto) with a start:
	 * first its neighbourhoods, then the whole program from the best of
	 * them, for a bound (and an improvement, if it finds one), unless
	 * the neighbourhoods were still improving fast and took its time
	 * (inception_v3 b64 at a quarter of its peak: the whole program's
	 * 22 s found nothing better; in that time the neighbourhoods took
	 * the step from 158.4 ms to 117.6 ms). Not with
	 * moves that span kernels: the root relaxation of those programs
	 * alone can take longer than the whole budget, and CBC's time limit
	 * does not stop it. recompute's programs (no moves) CBC solves whole
	 * from their start faster than the neighbourhoods improve it
	 * (resnet152 b64 at half its peak: 154.6 ms, 0.12% gap, in 12 s
	 * against 177.9 ms).
	 */
	double better = INFINITY, *bx = NULL, t0 = now_seconds(), end = t0 + mo.time_limit;
	/* a tuning aid: AUTOTM_LNS=1 always searches neighbourhoods, AUTOTM_LNS=-1 never (the whole program only) */
	int lns_opt = o->lns;
	const char *lns_env = getenv("AUTOTM_LNS");
	if (lns_env && *lns_env)
		lns_opt = atoi(lns_env);
	bool lns = start && ip->recompute &&
	           (lns_opt > 0 || (lns_opt == 0 && ip->moves && mip_nnz(ip->mip) >= PLACE_LNS_MIN_NONZEROS));
	bool whole = !lns || ip->spans.n == 0 || mip_nnz(ip->mip) < PLACE_WHOLE_NONZEROS;
	if (lns)
		better = search_first(ip, o, st, &mo, start, t0, &bx, &whole);
	bool ran = true;
	/*
	 * The whole program keeps a share of its time for a repair, so that
	 * the placement keeps to the time asked for: with a start that packs
	 * (the answer if nothing better does), or a limit with room above
	 * the smallest feasible one. At that limit itself there is none to
	 * lower a bound into: vgg19 b64 there, with four fifths, stopped at
	 * a plan that neither packed nor could be repaired, and the limit
	 * was called infeasible; the solve takes all of its time there, and
	 * a repair a quarter more.
	 */
	bool repairable = ip->recompute && o->repair >= 0;
	bool start_fits = o->start && o->start->fast_bytes + o->start->workspace <= o->limit;
	bool reserve = whole && repairable &&
	               (start_fits || (double)o->limit >= (double)st->min_limit * (1 + PLACE_REPAIR_ROOM));
	if (reserve)
		mo.time_limit *= 1 - PLACE_REPAIR_SHARE;
	if (lns && better < INFINITY) {
		mo.deadline = mo.time_limit + PLACE_DEADLINE_GRACE;
		mo.deadline_late = 2 * mo.time_limit + PLACE_DEADLINE_GRACE; /* if it found better */
		mo.beat = better;
	} else if (start_fits || (!o->start && ip->moves && ip->recompute))
		/*
		 * Stopped where CBC has clearly lost its clock, later than the
		 * above, as stopping loses what it found: with a start that fits,
		 * the answer if this solve gives none (densenet201 b64 at half its
		 * peak, without a start: 222 s at the root for a limit of 43 s);
		 * and auto without any start, where every start failed (sync's and
		 * async's programs proved infeasible, recompute's bound above the
		 * limit), so the limit is likely infeasible too and proving it can
		 * keep CBC in its root relaxation (GPT-2 small b8 at 3.50 GiB on
		 * the modeled GPU: 182 s of its 60). The placement then fails as
		 * not solved in time, and --ratio goes on to a larger limit.
		 */
		mo.deadline = mo.time_limit * PLACE_DEADLINE_LOST + PLACE_DEADLINE_GRACE;
	if (whole && better < INFINITY)
		ticker_note("the whole program from %.3f ms, for a bound", 1e-3 * better);
	else if (whole)
		ticker_note("%s's program (%d rows)", optimizer_info[o->optimizer].name, mip_nrows(ip->mip));
	if (whole)
		ran = mip_solve(ip->mip, &mo, r, err, errlen);
	else
		*r = (MipResult){.status = MIP_NO_SOLUTION};
	/*
	 * A solution that does not pack: the fragmentation loop solves the
	 * whole program again under tighter limits, which is best where that
	 * is fast; where the solve took a twentieth of its time or more, the
	 * solution is repaired around its overflow instead (after the
	 * neighbourhoods only if it is better than theirs, which pack).
	 */
	if (whole && ran && repairable && (r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE) &&
	    r->objective < better && (o->repair > 0 || r->time >= mo.time_limit / 20) && !ilp_packs(ip, o, r->x, NULL)) {
		/*
		 * Packed by first fit (auto's starts), the solution may still
		 * pack squeezed, as the optimizer alone packs it: kept beside
		 * the repaired one, which the search starts from. recompute's
		 * start for densenet201 b64 at a quarter of its peak: 100.114 ms
		 * squeezed, repaired to 100.689 ms to pack by first fit.
		 */
		keep_squeezed(ip, o, r->x, st);
		ilp_repair(ip, o, ilp_column_owners(ip), r,
		       o->start && o->repair == 0 ? fmin(better, placement_predict(o->start, o->cm, NULL) * US) : better,
		       reserve ? fmax(end - now_seconds(), 1) : fmax(mo.time_limit / 4, 1), st);
	}
	if (ran && better < INFINITY &&
	    !((r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE) && r->objective <= better && ilp_packs(ip, o, r->x, NULL))) {
		/*
		 * The whole program found nothing better than its neighbourhoods
		 * that packs, was not solved, or (as CBC's preprocessing sometimes
		 * wrongly does) was called infeasible: their solution, with the
		 * solver's bound if it proved one, else 0 (every time is
		 * non-negative).
		 */
		bool bounded = r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE || r->stopped;
		double bound = bounded && r->bound < better ? r->bound : 0;
		mip_result_free(r);
		r->status = MIP_FEASIBLE;
		ilp_set_objective(r, better, bound);
		r->x = xmalloc(sizeof(double) * (size_t)(mip_ncols(ip->mip) + 1));
		memcpy(r->x, bx, sizeof(double) * (size_t)mip_ncols(ip->mip));
	}
	if (ran && better < INFINITY)
		r->time = now_seconds() - t0;
	char where[1024] = "";
	if (ran && r->status == MIP_INFEASIBLE && !o->unexplained)
		ilp_overflow(ip, o, where, sizeof where);
	if (ran && (r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE) && place_solver_log())
		fprintf(stderr, "%s: %s\n", optimizer_info[o->optimizer].name, ilp_binding(ip, r->x, where, sizeof where));
	st->lns_bound = whole;
	st->lns_stopped = whole && r->stopped;
	if (lns && !whole)
		st->status = "feasible (neighbourhoods; no bound proved)";
	mip_free(ip->mip);
	ip->mip = NULL;
	st->solve_time = r->time;
	if (!(lns && !whole))
		st->status = mip_status_name(r->status);
	if (!ran)
		return false;
	if (r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE) {
		st->objective = r->objective / US;
		st->bound = r->bound / US;
		st->gap = r->gap;
		return true;
	}
	no_placement(ip, o, st, r, mo.time_limit, where, err, errlen);
	mip_result_free(r);
	return false;
}

/*
 * Every time the program weighs is finite and at most PLACE_MAX_SECONDS:
 * beyond that the solver's arithmetic breaks down (CBC asserts on huge
 * coefficients). Inputs are checked where they are read (hw files,
 * profiles); this catches a model that still gives such a time (a
 * hw file's slowest tier moving the largest tensor, say).
 */
static bool times_in_range(const Graph *g, const Schedule *s, const PlaceOptions *o, char *err, size_t errlen)
{
	const CostModel *cm = o->cm;
	for (int k = 0; k < s->n; k++) {
		const Node *n = s->order[k];
		uint32_t slow = o->kernels_fast ? 0 : (uint32_t)((UINT64_C(1) << (n->nin + n->nout)) - 1);
		double t = cm->kernel_time(cm, n, slow);
		if (!(t >= 0 && t <= PLACE_MAX_SECONDS)) {
			snprintf(err, errlen, "the cost model (%s) gives kernel %s a time of %g s, more than a placement can "
			                      "weigh (%g s): check the hardware description or the profile", cm->source,
			         n->name, t, PLACE_MAX_SECONDS);
			return false;
		}
	}
	for (int i = 0; i < g->tensors.n; i++)
		for (int dir = 0; dir < 2; dir++) {
			const Tensor *t = g->tensors.v[i];
			double m = cm->move_time(cm, t->bytes, dir ? TIER_FAST : TIER_SLOW, dir ? TIER_SLOW : TIER_FAST, false);
			if (!(m >= 0 && m <= PLACE_MAX_SECONDS)) {
				snprintf(err, errlen, "the cost model (%s) gives a move of %s (%lld bytes) a time of %g s, more "
				                      "than a placement can weigh (%g s): check the hardware description or "
				                      "the profile", cm->source, t->name, (long long)t->bytes, m, PLACE_MAX_SECONDS);
				return false;
			}
		}
	return true;
}

Placement *place_ilp(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                     char *err, size_t errlen)
{
	PlaceStats local;
	if (!st)
		st = &local;
	memset(st, 0, sizeof *st);
	if (optimizer_info[o->optimizer].kind != OPTIMIZER_ILP)
		ICE("place_ilp asked for %s, which is not an ILP optimizer", optimizer_info[o->optimizer].name);
	if (!o->cm)
		ICE("place_ilp needs a cost model");
	if (!times_in_range(g, s, o, err, errlen))
		return NULL;
	char b1[64], b2[64];
	int n = s->n;
	int64_t *forced = arena_array(a, (size_t)n + 1, sizeof(int64_t));
	bool offload = ilp_offload_on(o);
	st->min_limit = ilp_forced_bytes(g, s, o->kernels_fast, offload, o->tiny == 0 ? PLACE_TINY : o->tiny, forced);
	if (st->min_limit < MEMPLAN_ALIGN)
		st->min_limit = MEMPLAN_ALIGN;
	if (o->limit < st->min_limit && o->kernels_fast) {
		snprintf(err, errlen,
		         "the fast-tier limit %s is infeasible: kernels read and write fast memory only, so the limit "
		         "must hold %s the largest kernel's arguments: at least %" PRId64 " bytes (%s)",
		         fmt_bytes(o->limit, b1, sizeof b1),
		         offload ? "the weights and optimizer state that cannot be offloaded and"
		                 : "the weights, the optimizer state and",
		         st->min_limit, fmt_bytes(st->min_limit, b2, sizeof b2));
		return NULL;
	}
	if (o->limit < st->min_limit) {
		snprintf(err, errlen,
		         "the fast-tier limit %s is infeasible: the smallest feasible limit is %" PRId64
		         " bytes (%s), the loss, which stays fast; everything else may live in the slow tier",
		         fmt_bytes(o->limit, b1, sizeof b1), st->min_limit, fmt_bytes(st->min_limit, b2, sizeof b2));
		return NULL;
	}
	/* per-step limits in MiB: the sums are multiples of MEMPLAN_ALIGN, half an alignment of slack absorbs rounding */
	double *limit_mib = arena_array(a, (size_t)n + 1, sizeof(double));
	for (int i = 0; i < n; i++) {
		int64_t l = o->step_limit ? o->step_limit[i] : o->limit;
		if (l > o->limit)
			l = o->limit;
		if (l < forced[i])
			l = forced[i];
		limit_mib[i] = ((double)(l / MEMPLAN_ALIGN * MEMPLAN_ALIGN) + MEMPLAN_ALIGN / 2.0) / MIB;
	}

	Ilp ip;
	MipResult r;
	ilp_build(&ip, g, s, o, limit_mib, a, st);                 /* the program */
	if (ip.span > 0 && o->span == 0 && st->nonzeros > PLACE_SPAN_MAX_NONZEROS) {
		/*
		 * Too large to improve in the time: on the GPU benchmark graphs
		 * CBC spent minutes in programs of a million nonzeros, past its
		 * limit. Without spanning moves (--span asks for them anyway).
		 */
		long big = st->nonzeros;
		PlaceOptions so = *o;
		so.span = -1;
		mip_free(ip.mip);
		ilp_build(&ip, g, s, &so, limit_mib, a, st);
		st->spans_dropped = big;
	}
	if (!ilp_solve(&ip, o, st, &r, err, errlen))               /* the solver */
		return NULL;
	Placement *p = ilp_extract(&ip, o, r.x, a);                /* the placement */
	keep_squeezed(&ip, o, r.x, st);
	mip_result_free(&r);
	if (!placement_verify(g, p, err, errlen))
		ICE("the ILP's placement is inconsistent: %s", err);
	st->predicted_time = placement_predict(p, o->cm, NULL);
	return p;
}
