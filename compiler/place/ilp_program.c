/*
 * ilp_program.c - the integer linear program of a placement (AutoTM's
 * formulation, rewritten to solve fast): its columns and rows, a start
 * for it from a placement, and the placement of a solution. The search
 * (ilp_search.c), the greedy starts (ilp_swaps.c) and the pass
 * (place_ilp.c) use it; it uses none of them.
 *
 * Each tensor gets a small flow network over its decision points: the
 * step it appears (its producer; step 0 for weights, optimizer state,
 * input and labels), every step that uses it (sync and async), and for
 * async every kernel up to `window` steps before a user. At each point
 * the tensor is in one of three vertices:
 *
 *   PRE   fast, no slow copy yet
 *   COPY  fast, and a valid slow copy exists
 *   SLOW  slow only
 *
 * One unit of binary flow runs from the source through the points to the
 * sink; the path it takes is the tensor's life story. Edges:
 *
 *   source -> PRE or SLOW at the first point (produced or filled there)
 *   keep     a vertex to the same vertex of the next point
 *   write    PRE -> SLOW of the next point: a copy to slow, synchronous
 *            right after this point's kernel, or asynchronous overlapping
 *            it (not at the producer: the value does not exist yet)
 *   read     SLOW -> COPY at this point: a copy to fast, synchronous right
 *            before this point's kernel, or asynchronous overlapping it
 *            (only at a kernel that does not use the tensor, and the
 *            copy is then kept to the next point)
 *   drop     COPY -> SLOW of the next point: free, the slow copy is valid
 *
 * Nothing returns to PRE, so a tensor is written to slow at most once and
 * read back any number of times. Weights and optimizer state persist
 * across steps: they have no write edges, so they stay in the tier the
 * source edge picks (their home, for the whole step), and from a slow
 * home they may be read into fast copies that are dropped again; no fast
 * copy exists at a kernel that overwrites its tensor (the SGD updates),
 * so the update writes the home (auto relaxes this: offloads(), where the
 * update may write a fast copy of a slow home, written back after it). No tensor is read at its first point
 * (the runtime fills input, labels and weights in the residency of step
 * 0). The loss stays fast (the host reads it after the step).
 *
 * Three rewrites make it solve in seconds where AutoTM's literal form
 * takes minutes (the measurements are in docs/placement.md):
 *
 *   1. a kernel's time is all-fast time + sum over its tensors of a
 *      penalty x (1 - inFast) when the cost model is separable for it
 *      (checked: the all-slow time must equal the sum within 1% for
 *      measured times, within rounding (1e-6) for modeled ones, whose
 *      misfit is structure, not noise: the objective then equals the
 *      predicted time exactly); else
 *      one binary per IO configuration, linked by marginal rows
 *      (sum_c y_c = 1; for each tensor, sum of the y_c with it fast =
 *      inFast), not AutoTM's 2^n (n+1) forcing rows;
 *   2. the write cost is the sum of the write edges (at most one is
 *      taken), not a binary "written" variable the LP can undercut;
 *   3. capacity is telescoped: D_s = D_{s-1} + sum of size x (inFast at s
 *      - inFast at s-1), 0 <= D_s <= limit, so a step's row holds only the
 *      tensors whose state changes there.
 *
 * Capacity counts exactly what memplan.c will have live in the fast pool:
 * D_s at kernel s, and at the boundary before it the tensors fast at s
 * that are not outputs of kernel s, plus the fast copies being written
 * out there. Sizes are rounded up to MEMPLAN_ALIGN as memplan rounds
 * them. So the optimum fits under the limit except for fragmentation,
 * which place_optimize handles by tightening the limit and solving again.
 *
 * Async: an async move is charged to the kernel it overlaps; that step
 * costs T_k + e_k with e_k >= 0 and e_k >= (async transfers charged to k)
 * - T_k, i.e. max(T_k, transfers); and, valid for each transfer a longer
 * than the kernel can take, e_k >= (c_a - Tmax_k) x_a, which keeps the LP
 * from hiding a long prefetch in fractions over its window (the root
 * bound on ResNet-50 went from 4% to 1.2% below the optimum, the solve
 * from a 0.8% gap at 60 s to optimal in 16 s). The objective is the predicted step
 * time in microseconds, its constant carried by an integer column fixed
 * at 1 (lp_solve mis-solves a constant on a fixed continuous column); it
 * equals placement_predict() of the extracted placement.
 *
 * auto adds recomputation (a GONE vertex: find_recomputes, build_ready)
 * and moves that span kernels (build_spans: spanning reads and writes
 * whose time is spread over the kernels they overlap, in proportion to
 * their all-fast times, and charged to the copy engine of their direction
 * at each). docs/placement.md gives both formulations.
 */
#include "ilp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memplan.h"
#include "predict.h"
#include "util.h"

static int binary(Ilp *ip, double cost_us)
{
	return mip_add_col(ip->mip, 0, 1, cost_us, true);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* ---------------------------------------------------- decision points */

/*
 * One decision point: static, or a tiny tensor. With kernels_fast one
 * point pins a tensor fast for life (its kernels need it fast): weights and
 * optimizer state are fast anyway (their updates write the home), but an
 * activation or gradient is tiny there only up to tiny_pinned, a share of
 * the limit, or a small model (all of whose tensors are tiny) could place
 * nothing below its all-fast peak.
 */
static bool single_point(const Ilp *ip, const Tensor *t)
{
	return ip->is_static || (ip->tiny > 0 && t->bytes <= (tensor_persists(t) ? ip->tiny : ip->tiny_pinned));
}

/* The first step whose kernel overwrites t, or -1 if none does or one is the last kernel. */
static int update_step(const Schedule *s, const Tensor *t)
{
	int first = -1;
	for (int u = 0; u < t->users.n; u++) {
		const Node *n = t->users.v[u];
		int step = s->pos[n->id];
		if (!node_overwrites(n, t))
			continue;
		if (step >= s->n - 1)
			return -1;
		if (first < 0 || step < first)
			first = step;
	}
	return first;
}

/*
 * Whether t is offloaded (a slow home, read into a fast copy for its
 * update, updated there and written back before the step ends) in a
 * program that offloads (offload) with tiny tensors of up to `tiny` bytes:
 * a weight or optimizer state with more than one decision point
 * (single_point; offloading programs are never static) whose updates come
 * before the last kernel, so that the write has a boundary to finish at.
 * The program (build_flow) and its floor (forced_bytes) ask the same.
 */
static bool offloads(const Schedule *s, const Tensor *t, bool offload, int64_t tiny)
{
	return offload && tensor_persists(t) && !(tiny > 0 && t->bytes <= tiny) && update_step(s, t) >= 0;
}

/* Whether o's program offloads weights and optimizer state (PlaceOptions.offload). */
bool ilp_offload_on(const PlaceOptions *o)
{
	bool by_default = optimizer_has(o->optimizer, OFLAG_OFFLOADS);
	return (by_default || optimizer_has(o->optimizer, OFLAG_MAY_OFFLOAD)) &&
	       (o->offload > 0 || (o->offload == 0 && by_default));
}

/*
 * The longest span worth offering a move of `us` microseconds over the
 * kernels from step `from` on (dir 1: from, from + 1, ...; dir -1: from - 1,
 * from - 2, ...): the first power of two whose kernels' all-fast times
 * add up to PLACE_SPAN_ROOM times the move, or the span if none does. A
 * longer span would only spread a move that already fits; the room
 * leaves space for the other moves sharing the engine. Most of a large
 * graph's moves fit within a few kernels, so the program keeps its
 * spanning moves where they matter (inception_v3 b64: the stem's
 * activations of 170-340 MiB) at a fraction of their nonzeros.
 */
static int span_needed(const Ilp *ip, int from, int dir, double us)
{
	if (ip->span_all)
		return ip->span;
	double sum = 0;
	int len = 1, n = ip->s->n;
	for (int k = 0; k < ip->span; k++) {
		int step = dir > 0 ? from + k : from - 1 - k;
		if (step < 0 || step >= n)
			break;
		sum += ip->omega[step] * US;
		if (k + 1 == len) {
			if (sum >= PLACE_SPAN_ROOM * us)
				return len;
			len *= 2;
		}
	}
	return ip->span;
}

/*
 * The steps of t's decision points, sorted and distinct (offload: t is
 * offloaded; aread_us, awrite_us: its asynchronous moves' times, which
 * bound its spans); returns how many.
 */
static int point_steps(Ilp *ip, const Tensor *t, int first, int last, bool offload, double aread_us,
                       double awrite_us, int **out)
{
	const Schedule *s = ip->s;
	bool single = single_point(ip, t);
	const RecomputeAt *ra = ip->rc ? &ip->rc[t->id] : NULL;
	int extra = ra && !single ? ra->support.n : 0;
	int cap = 2 + extra + (single ? 0 : t->users.n * (1 + (ip->is_async ? 2 * ip->window : 0)));
	int *v = arena_array(ip->a, (size_t)cap, sizeof(int));
	int n = 0;
	v[n++] = first;
	if (offload)
		v[n++] = last; /* the end: written back by then */
	for (int i = 0; i < extra; i++)
		v[n++] = ra->support.v[i];
	for (int u = 0; u < t->users.n && !single; u++) {
		int step = s->pos[t->users.v[u]->id];
		v[n++] = step;
		if (!ip->is_async)
			continue;
		int lo = step - ip->window > first + 1 ? step - ip->window : first + 1;
		for (int k = lo; k < step; k++)
			v[n++] = k;
		if (offload && node_overwrites(t->users.v[u], t)) /* where an asynchronous write back may be issued */
			for (int k = step + 1; k <= step + ip->window && k < last; k++)
				v[n++] = k;
	}
	qsort(v, (size_t)n, sizeof(int), cmp_int);
	int m = 0;
	for (int i = 0; i < n; i++)
		if ((m == 0 || v[i] != v[m - 1]) && v[i] >= first && v[i] <= last)
			v[m++] = v[i];
	if (ip->span > 0 && !single) {
		/*
		 * Spanning moves: between consecutive anchors x < y (the first
		 * point, users, recompute supports), points at x + 2^i (where a
		 * write issued at x, or at the first point after a producer, may
		 * end) and y - 2^i (where a read into y may be issued), 2^i up to
		 * the span.
		 */
		int na = 2 + extra + t->users.n, nv = 0;
		int *anchor = arena_array(ip->a, (size_t)na, sizeof(int));
		anchor[nv++] = first;
		if (offload)
			anchor[nv++] = last;
		for (int i = 0; i < extra; i++)
			anchor[nv++] = ra->support.v[i];
		for (int u = 0; u < t->users.n; u++)
			anchor[nv++] = s->pos[t->users.v[u]->id];
		qsort(anchor, (size_t)nv, sizeof(int), cmp_int);
		int *w = arena_array(ip->a, (size_t)(m + 3 * nv * (MAX_SPANS + 1) + 2), sizeof(int));
		memcpy(w, v, sizeof(int) * (size_t)m);
		int nw = m;
		for (int i = 0; i + 1 < nv; i++) {
			int x = anchor[i], y = anchor[i + 1];
			int wmax = span_needed(ip, x, 1, awrite_us);
			int rmax = span_needed(ip, y, -1, aread_us);
			for (int len = 1; len <= wmax && x + len < y; len *= 2)
				w[nw++] = x + len;
			for (int len = 1; len <= rmax && x + len < y; len *= 2)
				w[nw++] = y - len;
			/* a write issued after the producer, or after an update of an offloaded tensor */
			if (x + 1 < y && ((x == first && t->producer) || (offload && node_overwrites(s->order[x], t)))) {
				wmax = span_needed(ip, x + 1, 1, awrite_us);
				for (int len = 1; len <= wmax && x + 1 + len < y; len *= 2)
					w[nw++] = x + 1 + len;
			}
		}
		qsort(w, (size_t)nw, sizeof(int), cmp_int);
		m = 0;
		for (int i = 0; i < nw; i++)
			if ((m == 0 || w[i] != w[m - 1]) && w[i] >= first && w[i] <= last)
				w[m++] = w[i];
		v = w;
	}
	*out = v;
	return m;
}

static bool droppable(const Ilp *ip, const Tensor *t)
{
	return recompute_candidate(t) && t != ip->g->loss && !single_point(ip, t);
}

static int find_step(const int *v, int n, int step)
{
	for (int i = 0; i < n; i++)
		if (v[i] == step)
			return i;
	return -1;
}

/*
 * Where each tensor may be recomputed (recompute.h's chains): before each
 * of its users after its producer, and before every step where the
 * recompute of a consumer reads it, so that a run of dropped values can
 * be made again one after another at one boundary. Each such step
 * becomes a decision point of every droppable tensor the chain reads;
 * the others (weights, gradients) are read where they are. Chains are
 * followed PLACE_RECOMPUTE_DEPTH consumers deep from a user, and from
 * every recompute of the start placement (if any) as from a user, so
 * that the program can express the start's recomputes however deep its
 * chains go (checkpoint's: a whole segment made again at one boundary).
 */
static void find_recomputes(Ilp *ip, const Placement *start)
{
	const Graph *g = ip->g;
	const Schedule *s = ip->s;
	typedef struct Work {
		const Tensor *t;
		int step;
		int depth; /* 0: before a user, or where the start recomputes it; d: read by a recompute of depth d - 1 */
	} Work;
	int max_depth = PLACE_RECOMPUTE_DEPTH;
	VEC(Work) work = {0};
	ip->rc = arena_array(ip->a, (size_t)g->tensors.n + 1, sizeof(RecomputeAt));
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (!droppable(ip, t))
			continue;
		for (int u = 0; u < t->users.n; u++)
			vec_push(ip->a, &work, ((Work){t, s->pos[t->users.v[u]->id], 0}));
	}
	for (int i = 0; start && i < start->recomputes.n; i++) {
		const Recompute *r = &start->recomputes.v[i];
		if (droppable(ip, r->t) && r->at < s->n)
			vec_push(ip->a, &work, ((Work){r->t, r->at, 0}));
	}
	while (work.n > 0) {
		Work w = work.v[--work.n];
		RecomputeAt *ra = &ip->rc[w.t->id];
		int k = find_step(ra->step.v, ra->step.n, w.step);
		const Chain *c;
		if (k >= 0) { /* reached before: again only to go deeper from here */
			if (w.depth >= ra->depth.v[k])
				continue;
			ra->depth.v[k] = w.depth;
			c = ra->chain.v[k];
		} else {
			Chain *nc = arena_alloc(ip->a, sizeof *nc);
			if (!recompute_chain(s, w.t, w.step, nc, ip->a))
				continue;
			vec_push(ip->a, &ra->step, w.step);
			vec_push(ip->a, &ra->chain, nc);
			vec_push(ip->a, &ra->depth, w.depth);
			c = nc;
		}
		for (int i = 0; i < c->nleaves && w.depth < max_depth; i++) {
			const Tensor *x = c->leaf[i];
			RecomputeAt *rx = &ip->rc[x->id];
			if (!droppable(ip, x))
				continue; /* read where it is: fast between its points if it was before */
			if (find_step(rx->support.v, rx->support.n, w.step) < 0)
				vec_push(ip->a, &rx->support, w.step);
			vec_push(ip->a, &work, ((Work){x, w.step, w.depth + 1}));
		}
	}
}

/*
 * The shares of a spanning move over kernels lo..hi-1: in proportion to
 * their all-fast times (evenly if those are all zero). The ILP charges a
 * move's column to the copy engine of its direction with them, and
 * extraction gives the move the same.
 */
void ilp_span_shares(const Ilp *ip, int lo, int hi, double *share)
{
	double total = 0;
	if (hi - lo > PLACE_MAX_SPAN)
		ICE("a move spans %d kernels, more than %d", hi - lo, PLACE_MAX_SPAN);
	for (int k = lo; k < hi; k++)
		total += ip->omega[k];
	for (int k = lo; k < hi; k++)
		share[k - lo] = total > 0 ? ip->omega[k] / total : 1.0 / (hi - lo);
}

static void charge_span(Ilp *ip, int col, double us, bool to_slow, int lo, int hi)
{
	double sh[PLACE_MAX_SPAN];
	ilp_span_shares(ip, lo, hi, sh);
	for (int k = lo; k < hi; k++) {
		double share = sh[k - lo];
		if (share > 0)
			vec_push(ip->a, ip->duplex && to_slow ? &ip->async_out[k] : &ip->async[k],
			         ((Term){col, us * share, true}));
	}
	vec_push(ip->a, &ip->spans, ((Span){col, us, lo, hi}));
}

/*
 * auto's spanning moves at point j of f (docs/placement.md, "Moves that
 * span kernels"):
 *
 *   sread   SLOW_j -> COPY at the next anchor y (a user, or where a
 *           recompute reads it), from a point s_y - 2^i: the copy
 *           is issued before kernel s_j, runs during kernels s_j..s_y-1
 *           (none of which uses the tensor), its destination held from
 *           s_j; waited for before s_y.
 *   swrite  PRE_j -> SLOW at the first point at or after s_j + L, from an
 *           anchor that is not the producer (or the point right after the
 *           producer): the copy is issued before kernel s_j and runs
 *           during kernels s_j..s_j+L-1, which may read the fast copy but
 *           none writes it; the fast copy is freed when it is waited for,
 *           at the boundary before s_j + L; the slow copy is held from s_j.
 *
 * The points in between are skipped (the flow is in flight); the tensor
 * counts as fast at the kernels it spans (Transit).
 */
/* Room for one more spanning move over kernels lo..hi in f's inFast sums (ColSum holds MAX_IN_FAST columns). */
static bool transit_room(const Flow *f, int lo, int hi)
{
	int overlap = 0;
	for (int i = 0; i < f->transit.n; i++)
		overlap += f->transit.v[i].lo <= hi && f->transit.v[i].hi >= lo;
	return overlap < MAX_IN_FAST - 8; /* 5 edges of the points, and margin */
}

static void build_spans(Ilp *ip, Flow *f, int j, bool may_write, double aread_us, double awrite_us)
{
	const Schedule *s = ip->s;
	Point *p = &f->pt[j];
	if (!f->forced && ip->moves && !p->anchor) {
		int y = j + 1;
		while (y < f->m && !f->pt[y].anchor)
			y++;
		int len = y < f->m ? f->pt[y].step - p->step : 0;
		/* from y - 2^i only; length 1 with AutoTM's aread there is that edge */
		if (y < f->m && f->pt[y].copy && len <= ip->span && (len & (len - 1)) == 0 && (len > 1 || p->aread < 0) &&
		    transit_room(f, p->step, f->pt[y].step)) {
			p->sread = binary(ip, 0);
			p->sread_to = y;
			vec_push(ip->a, &f->pt[y].in_copy, p->sread);
			charge_span(ip, p->sread, aread_us, false, p->step, f->pt[y].step);
			vec_push(ip->a, &f->transit, ((Transit){p->sread, p->step, f->pt[y].step, true}));
		}
	}
	bool produced = f->t->producer != NULL;
	bool issue = p->anchor ? !(produced && j == 0)
	                       : (produced && j == 1 && p->step == f->first + 1) ||
	                         (f->offload && j > 0 && f->pt[j - 1].overwrite && p->step == f->pt[j - 1].step + 1);
	if (!may_write || !issue)
		return;
	int most = span_needed(ip, p->step, 1, awrite_us);
	for (int len = 1; len <= most && p->nswrite < MAX_SPANS; len *= 2) {
		int end = p->step + len; /* the boundary it is waited at */
		if (end > f->last)
			break;
		bool ok = true;
		for (int k = p->step; k < end && ok; k++)
			ok = !node_overwrites(s->order[k], f->t) && !(k > p->step && s->order[k] == f->t->producer);
		if (!ok)
			break;
		int to = j + 1;
		while (to < f->m && f->pt[to].step < end)
			to++;
		if (to == f->m)
			break; /* no point after it: nothing would read the slow copy */
		if (!transit_room(f, p->step + 1, end - 1))
			break;
		int c = binary(ip, 0);
		p->swrite[p->nswrite] = c;
		p->swrite_len[p->nswrite] = len;
		p->swrite_to[p->nswrite++] = to;
		vec_push(ip->a, &f->pt[to].in_slow, c);
		charge_span(ip, c, awrite_us, true, p->step, end);
		vec_push(ip->a, &ip->writeout[end], ((Term){c, f->mib, false}));
		if (len > 1)
			vec_push(ip->a, &f->transit, ((Transit){c, p->step + 1, end - 1, false}));
	}
}

/* Node n's measured algorithms where the ILP chooses among them (a GPU profile's algo lines), into *al; else 0. */
int ilp_kernel_algos(const Ilp *ip, const Node *n, const KernelAlgo **al)
{
	const KernelAlgo *none;
	return ip->kernels_fast && ip->cm->algos ? ip->cm->algos(ip->cm, n, al ? al : &none) : 0;
}

/*
 * The workspace regions: the steps in k runs of about equal
 * length (PlaceOptions.ws_regions, else PLACE_WS_REGIONS), each with a
 * column W_r >= the workspace of every algorithm chosen in it (and of
 * every recompute run at one of its boundaries), held in each of its
 * steps' capacity rows. See docs/placement.md, "Workspace regions".
 */
static void workspace_regions(Ilp *ip, const PlaceOptions *o)
{
	int n = ip->s->n, k = o->ws_regions > 0 ? o->ws_regions : PLACE_WS_REGIONS;
	const char *env = getenv("AUTOTM_WS_REGIONS");
	if (env && atoi(env) > 0)
		k = atoi(env);
	if (k > n)
		k = n > 0 ? n : 1;
	ip->region = arena_array(ip->a, (size_t)n + 2, sizeof(int));
	for (int st = 0; st <= n; st++)
		ip->region[st] = st >= n ? k - 1 : (int)((int64_t)st * k / n);
	ip->workspace = arena_array(ip->a, (size_t)k, sizeof(int));
	bool any = false;
	for (int st = 0; st < n && !any; st++)
		any = ilp_kernel_algos(ip, ip->s->order[st], NULL) > 0;
	for (int r = 0; r < k; r++)
		ip->workspace[r] = any ? mip_add_col(ip->mip, 0, MIP_INF, 0, false) : -1;
}

/* The workspace column of step st's region. */
static int workspace_col(const Ilp *ip, int st)
{
	return ip->workspace[ip->region[st]];
}

/*
 * What a recompute edge charges for running node n again (us): its
 * all-fast time, or with algorithms the fastest one's; the difference to
 * the algorithm its step runs is charged by build_recompute_algos.
 */
static double recompute_us(const Ilp *ip, const Node *n)
{
	const KernelAlgo *al;
	if (ilp_kernel_algos(ip, n, &al) > 0)
		return al[0].seconds * US; /* cm->algos lists the fastest first */
	return ip->cm->kernel_time(ip->cm, n, 0) * US;
}

/* The properties of f's points at `steps` (point_steps): who uses it, which vertices exist. */
static void flow_points(const Ilp *ip, Flow *f, const int *steps, bool can_drop)
{
	const Schedule *s = ip->s;
	const Tensor *t = f->t;
	const RecomputeAt *ra = ip->recompute ? &ip->rc[t->id] : NULL;
	for (int j = 0; j < f->m; j++) {
		Point *p = &f->pt[j];
		const Node *n = s->order[steps[j]];
		p->step = steps[j];
		p->user = node_uses(n, t);
		p->overwrite = node_overwrites(n, t);
		/* an offloaded tensor's update reads a fast copy; its end point has none (nothing reads it there) */
		p->copy = ip->moves && j > 0 && !f->forced && (!p->overwrite || f->offload) &&
		          !(f->offload && p->step == f->last);
		p->gone = can_drop && j > 0;
		int k = can_drop ? find_step(ra->step.v, ra->step.n, p->step) : -1;
		p->chain = k >= 0 ? ra->chain.v[k] : NULL;
		p->anchor = j == 0 || p->user || (f->offload && p->step == f->last) ||
		            (ip->rc && find_step(ip->rc[t->id].support.v, ip->rc[t->id].support.n, p->step) >= 0);
		p->sread = -1;
	}
}

/* Times of one tensor's moves (us): blocking and overlapping reads and writes. */
typedef struct MoveTimes {
	double read, write, aread, awrite;
} MoveTimes;

/* The columns of f's edges, point by point, and the terms they put into the kernels' and boundaries' rows. */
static void flow_edges(Ilp *ip, Flow *f, MoveTimes mt, bool can_drop)
{
	bool produced = f->t->producer != NULL;
	for (int j = 0; j < f->m; j++) {
		Point *p = &f->pt[j];
		bool last = j == f->m - 1;
		/* an offloaded tensor is written back (to its home) only after its update */
		bool may_write = ip->moves && !last && !f->forced && (!f->persistent || (f->offload && p->step >= f->updated));
		p->keep[V_PRE] = binary(ip, 0);
		p->keep[V_COPY] = p->copy && !p->overwrite && (last || f->pt[j + 1].copy) ? binary(ip, 0) : -1;
		p->keep[V_SLOW] = f->forced ? -1 : binary(ip, 0);
		p->write = may_write ? binary(ip, mt.write) : -1;
		p->awrite = may_write && ip->is_async && !(produced && j == 0) && !p->overwrite ? binary(ip, 0) : -1;
		p->drop = p->copy && !last && !p->overwrite ? binary(ip, 0) : -1;
		p->dirty = p->copy && p->overwrite ? binary(ip, 0) : -1;
		p->read = p->copy ? binary(ip, mt.read) : -1;
		p->aread = p->copy && ip->is_async && !p->user && !last && p->keep[V_COPY] >= 0 ? binary(ip, 0) : -1;
		p->keep[V_GONE] = p->gone && !p->user ? binary(ip, 0) : -1; /* a user finds it made again */
		p->discard = can_drop && !last ? binary(ip, 0) : -1;
		p->recomp = -1;
		if (p->gone && p->chain) {
			double us = 0;
			for (int i = 0; i < p->chain->n; i++)
				us += recompute_us(ip, p->chain->node[i]);
			p->recomp = binary(ip, us);
			ip->nrecompute++;
			for (int i = 0; i < p->chain->n; i++)
				if (ilp_kernel_algos(ip, p->chain->node[i], NULL) > 0) {
					int k = ip->s->pos[p->chain->node[i]->id];
					vec_push(ip->a, &ip->rc_edges[k], p->recomp);
					vec_push(ip->a, &ip->rc_at[k], p->step);
				}
			if (p->chain->scratch > 0) /* scratch at the boundary before the kernel */
				vec_push(ip->a, &ip->writeout[p->step], ((Term){p->recomp, (double)p->chain->scratch / MIB, false}));
		}
		if (p->awrite >= 0) {
			vec_push(ip->a, ip->duplex ? &ip->async_out[p->step] : &ip->async[p->step],
			         ((Term){p->awrite, mt.awrite, false}));
			vec_push(ip->a, &ip->writeout[p->step + 1], ((Term){p->awrite, f->mib, false}));
		}
		if (p->aread >= 0)
			vec_push(ip->a, &ip->async[p->step], ((Term){p->aread, mt.aread, false}));
		if (p->write >= 0)
			vec_push(ip->a, &ip->writeout[p->step + 1], ((Term){p->write, f->mib, false}));
		if (ip->span > 0)
			build_spans(ip, f, j, may_write, mt.aread, mt.awrite);
	}
}

/* The rows of f's network: one unit from the source, inflow = outflow at every vertex. */
static void flow_rows(Ilp *ip, Flow *f)
{
	Mip *mip = ip->mip;
	/* an async read's copy is still there after its kernel: aread <= keep COPY */
	for (int j = 0; j < f->m; j++) {
		const Point *p = &f->pt[j];
		if (p->aread >= 0)
			mip_add_row(mip, ROW_TAG(ROW_COPY_KEPT, p->step, f->t->id), 2, (int[]){p->aread, p->keep[V_COPY]},
			            (double[]){1, -1}, -MIP_INF, 0);
	}

	/* one unit from the source; inflow = outflow at every vertex */
	int ncap = 12 + MAX_SPANS;
	for (int j = 0; j < f->m; j++)
		if (f->pt[j].in_copy.n + f->pt[j].in_slow.n + 12 > ncap)
			ncap = f->pt[j].in_copy.n + f->pt[j].in_slow.n + 12;
	int *cols = arena_array(ip->a, (size_t)ncap, sizeof(int));
	double *vals = arena_array(ip->a, (size_t)ncap, sizeof(double));
	int n = 0;
	cols[n] = f->src[V_PRE], vals[n++] = 1;
	if (f->src[V_SLOW] >= 0)
		cols[n] = f->src[V_SLOW], vals[n++] = 1;
	mip_add_row(mip, ROW_TAG(ROW_SOURCE, f->first, f->t->id), n, cols, vals, 1, 1);
#define TERM(c, v) do { if ((c) >= 0) { cols[n] = (c); vals[n++] = (v); } } while (0)
	for (int j = 0; j < f->m; j++) {
		const Point *p = &f->pt[j], *q = j ? &f->pt[j - 1] : NULL;
		/* PRE */
		n = 0;
		TERM(q ? q->keep[V_PRE] : f->src[V_PRE], 1);
		TERM(p->recomp, 1);
		TERM(p->dirty, 1);
		TERM(p->keep[V_PRE], -1);
		TERM(p->write, -1);
		TERM(p->awrite, -1);
		TERM(p->discard, -1);
		for (int i = 0; i < p->nswrite; i++)
			TERM(p->swrite[i], -1);
		mip_add_row(mip, ROW_TAG(ROW_FLOW, p->step, f->t->id), n, cols, vals, 0, 0);
		/* GONE */
		if (p->gone) {
			n = 0;
			TERM(q->keep[V_GONE], 1);
			TERM(q->discard, 1);
			TERM(p->keep[V_GONE], -1);
			TERM(p->recomp, -1);
			mip_add_row(mip, ROW_TAG(ROW_FLOW, p->step, f->t->id), n, cols, vals, 0, 0);
		}
		/* COPY */
		if (p->copy) {
			n = 0;
			TERM(q->keep[V_COPY], 1);
			TERM(p->read, 1);
			TERM(p->aread, 1);
			TERM(p->keep[V_COPY], -1);
			TERM(p->drop, -1);
			TERM(p->dirty, -1);
			for (int i = 0; i < p->in_copy.n; i++)
				TERM(p->in_copy.v[i], 1);
			mip_add_row(mip, ROW_TAG(ROW_FLOW, p->step, f->t->id), n, cols, vals, 0, 0);
		}
		/* SLOW */
		if (!f->forced) {
			n = 0;
			if (q) {
				TERM(q->keep[V_SLOW], 1);
				TERM(q->write, 1);
				TERM(q->awrite, 1);
				TERM(q->drop, 1);
			} else {
				TERM(f->src[V_SLOW], 1);
			}
			TERM(p->keep[V_SLOW], -1);
			TERM(p->read, -1);
			TERM(p->aread, -1);
			TERM(p->sread, -1);
			for (int i = 0; i < p->in_slow.n; i++)
				TERM(p->in_slow.v[i], 1);
			mip_add_row(mip, ROW_TAG(ROW_FLOW, p->step, f->t->id), n, cols, vals, 0, 0);
		}
	}
	/* an offloaded tensor ends the step in its home's tier: fast at the sink exactly when fast at the source */
	if (f->offload) {
		n = 0;
		TERM(f->pt[f->m - 1].keep[V_PRE], 1);
		TERM(f->src[V_PRE], -1);
		mip_add_row(mip, ROW_TAG(ROW_HOME, f->last, f->t->id), n, cols, vals, 0, 0);
	}
#undef TERM
}

/* Build t's network: its points, its edges (columns) and flow conservation. */
static void build_flow(Ilp *ip, Flow *f, const Tensor *t)
{
	const Schedule *s = ip->s;
	const CostModel *cm = ip->cm;
	f->t = t;
	f->first = s->live[t->id].first;
	f->last = s->live[t->id].last;
	f->size = memplan_round(t->bytes);
	f->mib = (double)f->size / MIB;
	f->persistent = tensor_persists(t);
	f->forced = t == ip->g->loss;
	f->offload = offloads(s, t, ip->offload, ip->tiny);
	f->updated = update_step(s, t);

	double read_us = cm->move_time(cm, t->bytes, TIER_SLOW, TIER_FAST, false) * US;
	double write_us = cm->move_time(cm, t->bytes, TIER_FAST, TIER_SLOW, false) * US;
	double aread_us = cm->move_time(cm, t->bytes, TIER_SLOW, TIER_FAST, true) * US;
	double awrite_us = cm->move_time(cm, t->bytes, TIER_FAST, TIER_SLOW, true) * US;
	int *steps;
	f->m = point_steps(ip, t, f->first, f->last, f->offload, aread_us, awrite_us, &steps);
	f->pt = arena_array(ip->a, (size_t)f->m, sizeof(Point));
	ip->npoints += f->m;
	const RecomputeAt *ra = ip->recompute ? &ip->rc[t->id] : NULL;
	bool can_drop = ra && ra->step.n > 0 && droppable(ip, t);

	flow_points(ip, f, steps, can_drop);
	flow_edges(ip, f, (MoveTimes){read_us, write_us, aread_us, awrite_us}, can_drop);
	f->src[V_PRE] = binary(ip, 0);
	f->src[V_COPY] = f->src[V_GONE] = -1;
	f->src[V_SLOW] = f->forced ? -1 : binary(ip, 0);

	flow_rows(ip, f);
}

/*
 * inFast of f's tensor at kernel `step`: at a decision point, the flow
 * entering PRE or COPY there (reads included: a read at a point makes the
 * tensor fast for, or during, its kernel); between points, the keep edges
 * of PRE and COPY out of the last point before (writes and drops free the
 * fast copy right after a point's kernel).
 */
static ColSum in_fast(const Flow *f, int step, bool ready, bool transit)
{
	ColSum e = {0};
	if (step < f->first || step > f->last)
		return e;
	int lo = 0, hi = f->m - 1; /* the last point at or before step */
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (f->pt[mid].step <= step)
			lo = mid;
		else
			hi = mid - 1;
	}
	const Point *p = &f->pt[lo];
	int c[5] = {-1, -1, -1, -1, -1};
	if (p->step != step) {
		c[0] = p->keep[V_PRE], c[1] = p->keep[V_COPY];
	} else if (lo == 0) {
		c[0] = f->src[V_PRE];
	} else {
		const Point *q = &f->pt[lo - 1];
		c[0] = q->keep[V_PRE], c[1] = q->keep[V_COPY], c[2] = p->read, c[3] = ready ? -1 : p->aread,
		c[4] = p->recomp;
	}
	for (int i = 0; i < 5; i++)
		if (c[i] >= 0)
			e.col[e.n++] = c[i];
	/* spanning moves in flight: fast, and a read's copy ready only at its end */
	for (int i = 0; transit && i < f->transit.n; i++) {
		const Transit *tr = &f->transit.v[i];
		if (step < tr->lo || step > tr->hi || (ready && tr->read && step < tr->hi))
			continue;
		if (e.n == MAX_IN_FAST)
			ICE("inFast of %s at step %d has more than %d columns", f->t->name, step, MAX_IN_FAST);
		e.col[e.n++] = tr->col;
	}
	return e;
}

ColSum ilp_fast_at(const Flow *f, int step)
{
	return in_fast(f, step, false, true);
}

/* Fast at kernel `step` in a copy the kernel reads or writes: not in a spanning move's flight. */
ColSum ilp_held_at(const Flow *f, int step)
{
	return in_fast(f, step, false, false);
}

/*
 * Ready at the boundary before kernel `step`, for a recompute there: fast
 * at the kernel, and not by an asynchronous read still in flight during
 * it (reads that finish at the boundary and recomputes of earlier kernels
 * there run before).
 */
static ColSum ready_at(const Flow *f, int step)
{
	return in_fast(f, step, true, true);
}

/* A recompute reads its chain's live tensors where they are ready: recomp <= ready(leaf) for each. */
static void build_ready(Ilp *ip)
{
	for (int id = 0; id < ip->g->tensors.n; id++) {
		const Flow *f = &ip->flow[id];
		for (int j = 0; j < f->m; j++) {
			const Point *p = &f->pt[j];
			if (p->recomp < 0)
				continue;
			for (int i = 0; i < p->chain->nleaves; i++) {
				ColSum r = ready_at(&ip->flow[p->chain->leaf[i]->id], p->step);
				int cols[MAX_IN_FAST + 1];
				double vals[MAX_IN_FAST + 1];
				int m = 0;
				cols[m] = p->recomp, vals[m++] = 1;
				for (int k = 0; k < r.n; k++)
					cols[m] = r.col[k], vals[m++] = -1;
				mip_add_row(ip->mip, ROW_TAG(ROW_READY, p->step, f->t->id), m, cols, vals, -MIP_INF, 0);
			}
		}
	}
}

static void add_expr(Ilp *ip, TermVec *v, ColSum e, double coef)
{
	for (int i = 0; i < e.n; i++)
		vec_push(ip->a, v, ((Term){e.col[i], coef, false}));
}

/*
 * In place: where the kernel at step s writes its output over the input
 * dying there (schedule_reuse), memplan gives the two one block when both
 * are fast at s in the copies the kernel uses (placement_reuses): the
 * output's size comes off D_s and is given back at s + 1, where the input
 * is no longer live; the boundary before s, where only the input is,
 * gets it back too (its row subtracts the output from D_s). The input's
 * copy at s is its last, and no move reads it after s: a write from it
 * would go to no later point.
 *
 * With kernels_fast both are always fast there, so the rebate is a
 * constant of the rows (reuse_mib). Elsewhere a column
 * 0 <= u_s <= held(input, s), held(output, s) carries it. Nothing is
 * charged: u only frees capacity, so it need not be integer: where both
 * holds are 1 it can be 1, where either is 0 it is 0, and a fraction
 * between only counts more than memplan will hold (an integer u made the
 * small programs of the tests slower to prove).
 */
static void build_reuse(Ilp *ip)
{
	ip->reuse_mib = arena_array(ip->a, (size_t)ip->s->n + 1, sizeof(double));
	ip->reuse_col = arena_array(ip->a, (size_t)ip->s->n + 1, sizeof(int));
	for (int st = 0; st < ip->s->n; st++)
		ip->reuse_col[st] = -1;
	for (int st = 0; st < ip->s->n; st++) {
		const Tensor *in = schedule_reuse(ip->s, st);
		if (!in)
			continue;
		const Flow *fo = &ip->flow[ip->s->order[st]->out[0]->id];
		if (ip->kernels_fast) {
			ip->reuse_mib[st] = fo->mib;
			continue;
		}
		ColSum hold[2] = {ilp_held_at(&ip->flow[in->id], st), ilp_held_at(fo, st)};
		if (hold[0].n == 0 || hold[1].n == 0)
			continue;
		int u = mip_add_col(ip->mip, 0, 1, 0, false);
		ip->reuse_col[st] = u;
		for (int k = 0; k < 2; k++) {
			int cols[MAX_IN_FAST + 1];
			double vals[MAX_IN_FAST + 1];
			int m = 0;
			cols[m] = u, vals[m++] = 1;
			for (int i = 0; i < hold[k].n; i++)
				cols[m] = hold[k].col[i], vals[m++] = -1;
			mip_add_row(ip->mip, ROW_TAG(ROW_IN_PLACE, st, in->id), m, cols, vals, -MIP_INF, 0);
		}
		vec_push(ip->a, &ip->cap[st], ((Term){u, -fo->mib, false}));
		if (st + 1 < ip->s->n)
			vec_push(ip->a, &ip->cap[st + 1], ((Term){u, fo->mib, false}));
		vec_push(ip->a, &ip->writeout[st], ((Term){u, fo->mib, false}));
	}
}

/* ------------------------------------------------------------ kernels */

/* The distinct tensors of node n whose tier is a decision, into ts, with their argument positions as masks; their number. */
static int kernel_args(const Ilp *ip, const Node *n, const Tensor **ts, uint32_t *mask)
{
	int nargs = n->nin + n->nout; /* at most OP_MAX_ARGS (graph_node), so a mask fits 32 bits */
	_Static_assert(OP_MAX_ARGS <= 32, "a kernel's slow arguments are a 32-bit mask");
	int d = 0;
	for (int k = 0; k < nargs; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		if (ip->flow[t->id].forced)
			continue;
		int i = 0;
		while (i < d && ts[i] != t)
			i++;
		if (i == d) {
			ts[d] = t;
			mask[d++] = 0;
		}
		mask[i] |= 1u << k;
	}
	return d;
}

/*
 * A kernel with measured algorithms: T = sum_a time_a y_a, sum_a y_a = 1;
 * the workspace column W is at least the chosen algorithm's workspace,
 * and every capacity row holds W: whatever the residencies' packing,
 * every workspace fits on top of it (memplan.c), and the pass after
 * placing (upgrade_algos, place.c) gives kernels the larger gaps the
 * packing leaves. Terms into expr; returns the longest time (us).
 */
static double kernel_algos_expr(Ilp *ip, int step, int na, const KernelAlgo *al, TermVec *expr)
{
	double tmax = 0;
	int *cols = arena_array(ip->a, (size_t)na + 1, sizeof(int));
	double *ones = arena_array(ip->a, (size_t)na + 1, sizeof(double)),
	       *ws = arena_array(ip->a, (size_t)na + 1, sizeof(double));
	ip->algo_col[step] = mip_ncols(ip->mip);
	for (int i = 0; i < na; i++) {
		cols[i] = binary(ip, 0);
		ones[i] = 1;
		ws[i] = -(double)al[i].workspace / MIB;
		vec_push(ip->a, expr, ((Term){cols[i], al[i].seconds * US, false}));
		if (al[i].seconds * US > tmax)
			tmax = al[i].seconds * US;
	}
	mip_add_row(ip->mip, ROW_TAG(ROW_ALGO, step, -1), na, cols, ones, 1, 1);
	cols[na] = workspace_col(ip, step);
	ws[na] = 1;
	mip_add_row(ip->mip, ROW_TAG(ROW_ALGO_SPACE, step, -1), na + 1, cols, ws, 0, MIP_INF);
	return tmax;
}

/*
 * A kernel in configurations of its d decision tensors' tiers: T = sum_c
 * time_c y_c; sum_c y_c = 1; sum_{c: i fast} y_c = inFast_i. Terms into
 * expr; returns the longest time (us).
 */
static double kernel_config_expr(Ilp *ip, int step, const Tensor *const *ts, const uint32_t *mask, int d,
                                 TermVec *expr)
{
	const Node *n = ip->s->order[step];
	double tmax = 0;
	int nc = 1 << d;
	int *y = arena_array(ip->a, (size_t)nc, sizeof(int));
	int *cols = arena_array(ip->a, (size_t)nc + MAX_IN_FAST + 8, sizeof(int));
	double *vals = arena_array(ip->a, (size_t)nc + MAX_IN_FAST + 8, sizeof(double));
	for (int c = 0; c < nc; c++) {
		uint32_t slow = 0;
		for (int i = 0; i < d; i++)
			if (c >> i & 1)
				slow |= mask[i];
		double tc = ip->cm->kernel_time(ip->cm, n, slow) * US;
		if (tc > tmax)
			tmax = tc;
		y[c] = binary(ip, 0);
		vec_push(ip->a, expr, ((Term){y[c], tc, false}));
		cols[c] = y[c];
		vals[c] = 1;
	}
	mip_add_row(ip->mip, ROW_TAG(ROW_CONFIG, step, -1), nc, cols, vals, 1, 1);
	for (int i = 0; i < d; i++) {
		int m = 0;
		for (int c = 0; c < nc; c++)
			if (!(c >> i & 1)) {
				cols[m] = y[c];
				vals[m++] = 1;
			}
		ColSum e = ilp_fast_at(&ip->flow[ts[i]->id], step);
		for (int k = 0; k < e.n; k++) {
			cols[m] = e.col[k];
			vals[m++] = -1;
		}
		mip_add_row(ip->mip, ROW_TAG(ROW_CONFIG_FAST, step, ts[i]->id), m, cols, vals, 0, 0);
	}
	return tmax;
}

/*
 * The moves charged to the kernel at `step` hide behind its time
 * (konst + expr) or cost their excess e: e >= transfers - T, that is
 * e - transfers + terms(T) >= -konst; with duplex moves, one row per
 * direction (each copy engine has its own queue). Returns e's column, or
 * -1 where no move is charged.
 */
static int build_overlap(Ilp *ip, int step, const TermVec *expr, double konst, double tmax)
{
	int e = -1;
	for (int dir = 0; dir < (ip->duplex ? 2 : 1); dir++) {
		const TermVec *as = dir ? &ip->async_out[step] : &ip->async[step];
		if (as->n == 0)
			continue;
		int nt = 1 + as->n + expr->n;
		int *cols = arena_array(ip->a, (size_t)nt, sizeof(int));
		double *vals = arena_array(ip->a, (size_t)nt, sizeof(double));
		int m = 0;
		if (e < 0)
			e = mip_add_col(ip->mip, 0, MIP_INF, 1, false);
		cols[m] = e;
		vals[m++] = 1;
		for (int i = 0; i < as->n; i++) {
			cols[m] = as->v[i].col;
			vals[m++] = -as->v[i].coef;
		}
		for (int i = 0; i < expr->n; i++) {
			cols[m] = expr->v[i].col;
			vals[m++] = expr->v[i].coef;
		}
		mip_add_row(ip->mip, ROW_TAG(ROW_OVERLAP, step, -1), m, cols, vals, -konst, MIP_INF);
		/*
		 * Valid inequalities that close most of the LP gap: a transfer
		 * longer than the kernel can ever take costs its excess on its
		 * own, e >= (c_a - tmax) x_a. Without them the LP spreads a long
		 * prefetch in fractions over the kernels of its window, each
		 * fraction hidden.
		 */
		for (int i = 0; i < as->n; i++)
			if (as->v[i].coef > tmax && !as->v[i].span)
				mip_add_row(ip->mip, ROW_TAG(ROW_OVERLAP_CUT, step, -1), 2, (int[]){e, as->v[i].col},
				            (double[]){1, -(as->v[i].coef - tmax)}, 0, MIP_INF);
	}
	return e;
}

/*
 * The time of the kernel at `step` as a linear expression: constant plus
 * terms (microseconds), put into the objective; the same expression goes
 * into the overlap rows of the step when transfers are charged to it.
 */
static void build_kernel(Ilp *ip, int step)
{
	const Node *n = ip->s->order[step];
	const CostModel *cm = ip->cm;
	const Tensor *ts[OP_MAX_ARGS];
	uint32_t mask[OP_MAX_ARGS];
	int d = kernel_args(ip, n, ts, mask);
	double t0 = cm->kernel_time(cm, n, 0), pen[OP_MAX_ARGS], sum = t0;
	if (ip->kernels_fast) {
		/* inFast = 1 for every argument; the time is the all-fast time */
		for (int i = 0; i < d; i++) {
			ColSum e = ilp_fast_at(&ip->flow[ts[i]->id], step);
			double one[MAX_IN_FAST];
			for (int k = 0; k < e.n; k++)
				one[k] = 1;
			mip_add_row(ip->mip, ROW_TAG(ROW_ARGS_FAST, step, ts[i]->id), e.n, e.col, one, 1, 1);
		}
		ip->separable++;
		d = 0; /* the overlap rows: T is the constant, or the algorithm's time */
	}
	uint32_t all = 0;
	for (int i = 0; i < d; i++) {
		pen[i] = cm->kernel_time(cm, n, mask[i]) - t0;
		sum += pen[i];
		all |= mask[i];
	}
	double tall = cm->kernel_time(cm, n, all);
	bool sep = fabs(tall - sum) <= ip->fit * fmax(fabs(tall), 1e-15);

	TermVec expr = {0};
	double konst = 0, tmax = 0; /* constant term; the longest the kernel can take (us) */
	const KernelAlgo *al = NULL;
	int na = ilp_kernel_algos(ip, n, &al);
	if (na > 0) {
		tmax = kernel_algos_expr(ip, step, na, al, &expr);
	} else if (ip->kernels_fast) {
		konst = tmax = t0 * US;
	} else if (sep || d > MAX_CONFIG_TENSORS) {
		/* T = sum - sum_i pen_i * inFast_i */
		if (sep)
			ip->separable++;
		else
			ip->approximated++;
		konst = tmax = sum * US;
		for (int i = 0; i < d; i++) {
			add_expr(ip, &expr, ilp_fast_at(&ip->flow[ts[i]->id], step), -pen[i] * US);
			if (pen[i] < 0)
				tmax -= pen[i] * US;
		}
	} else {
		ip->configured++;
		tmax = kernel_config_expr(ip, step, ts, mask, d, &expr);
	}
	ip->constant += konst;
	for (int i = 0; i < expr.n; i++)
		mip_add_obj(ip->mip, expr.v[i].col, expr.v[i].coef);
	ip->ecol[step] = build_overlap(ip, step, &expr, konst, tmax);
	ip->tmax[step] = tmax;
}

/*
 * A recompute runs its kernel with the algorithm the kernel's step runs
 * (the value made again is then bitwise the one it replaces; the
 * workspace at its boundary is that algorithm's). Its edge charges the
 * fastest algorithm's time (recompute_us); for each slower algorithm a of
 * step k, a column w >= R_k - M_k (1 - y_ka) charged the difference,
 * where R_k is the sum of the recompute edges that run k's kernel and M_k
 * their number: at an integer solution w = R_k where k runs a, else 0, so
 * the objective charges every recompute its algorithm's time.
 */
static void build_recompute_algos(Ilp *ip)
{
	for (int k = 0; k < ip->s->n; k++) {
		int m = ip->rc_edges[k].n;
		if (ip->algo_col[k] < 0 || m == 0)
			continue;
		const KernelAlgo *al;
		int na = ilp_kernel_algos(ip, ip->s->order[k], &al);
		/*
		 * A recompute at a boundary in another region needs the step's
		 * workspace there: W_r >= sum_a ws_a y_a(k) - M (1 - e), M the
		 * largest of k's workspaces (one row per region and edge)
		 */
		double most = 0;
		for (int a = 0; a < na; a++)
			if (al[a].workspace > most)
				most = (double)al[a].workspace;
		for (int i = 0; i < m && most > 0; i++) {
			int at = ip->rc_at[k].v[i];
			if (ip->region[at] == ip->region[k])
				continue;
			int *wc = arena_array(ip->a, (size_t)na + 2, sizeof(int));
			double *wv = arena_array(ip->a, (size_t)na + 2, sizeof(double));
			wc[0] = workspace_col(ip, at), wv[0] = 1;
			for (int a = 0; a < na; a++)
				wc[1 + a] = ip->algo_col[k] + a, wv[1 + a] = -(double)al[a].workspace / MIB;
			wc[na + 1] = ip->rc_edges[k].v[i], wv[na + 1] = -most / MIB;
			mip_add_row(ip->mip, ROW_TAG(ROW_RC_SPACE, at, k), na + 2, wc, wv, -most / MIB, MIP_INF);
		}
		int *cols = arena_array(ip->a, (size_t)m + 2, sizeof(int));
		double *vals = arena_array(ip->a, (size_t)m + 2, sizeof(double));
		for (int a = 1; a < na; a++) {
			double d = (al[a].seconds - al[0].seconds) * US;
			if (d <= 0)
				continue;
			cols[0] = mip_add_col(ip->mip, 0, MIP_INF, d, false);
			vals[0] = 1;
			for (int i = 0; i < m; i++)
				cols[1 + i] = ip->rc_edges[k].v[i], vals[1 + i] = -1;
			cols[m + 1] = ip->algo_col[k] + a;
			vals[m + 1] = -m;
			mip_add_row(ip->mip, ROW_TAG(ROW_RC_ALGO, k, -1), m + 2, cols, vals, -m, MIP_INF);
		}
	}
}

/*
 * The same for a spanning move, over its kernels together: their excesses
 * sum to at least its excess over all they can take,
 * sum_k e_k >= (c_a - sum_k Tmax_k) x_a (one row per move, where the
 * per-kernel rows would be one per kernel it spans).
 */
static void build_span_cuts(Ilp *ip)
{
	for (int i = 0; i < ip->spans.n; i++) {
		const Span *sp = &ip->spans.v[i];
		double room = 0;
		for (int k = sp->lo; k < sp->hi; k++)
			room += ip->tmax[k];
		if (sp->us <= room)
			continue;
		int *cols = arena_array(ip->a, (size_t)(sp->hi - sp->lo + 1), sizeof(int));
		double *vals = arena_array(ip->a, (size_t)(sp->hi - sp->lo + 1), sizeof(double));
		int m = 0;
		cols[m] = sp->col, vals[m++] = -(sp->us - room);
		for (int k = sp->lo; k < sp->hi; k++)
			if (ip->ecol[k] >= 0)
				cols[m] = ip->ecol[k], vals[m++] = 1;
		mip_add_row(ip->mip, ROW_TAG(ROW_SPAN_CUT, sp->lo, -1), m, cols, vals, 0, MIP_INF);
	}
}

/* ----------------------------------------------------------- capacity */

/*
 * D_s = D_{s-1} + sum_t size_t (inFast(t, s) - inFast(t, s-1)) with
 * 0 <= D_s <= L_s, and at the boundary before s:
 * D_s - (outputs of kernel s that are fast) + (fast copies written out
 * there) <= L_s. A tensor's inFast changes only at its first and last
 * step and at and after its decision points, so only there does it put
 * terms into a row.
 */
static void build_capacity(Ilp *ip, const double *limit_mib)
{
	const Schedule *s = ip->s;
	int n = s->n;
	for (int id = 0; id < ip->g->tensors.n; id++) {
		const Flow *f = &ip->flow[id];
		int *ev = arena_array(ip->a, (size_t)(2 * f->m + 2 * f->transit.n + 2), sizeof(int));
		int ne = 0;
		ev[ne++] = f->first;
		ev[ne++] = f->last + 1;
		for (int i = 0; i < f->transit.n; i++) {
			ev[ne++] = f->transit.v[i].lo;
			ev[ne++] = f->transit.v[i].hi + 1;
		}
		for (int j = 0; j < f->m; j++) {
			ev[ne++] = f->pt[j].step;
			ev[ne++] = f->pt[j].step + 1;
		}
		qsort(ev, (size_t)ne, sizeof(int), cmp_int);
		for (int i = 0; i < ne; i++) {
			int st = ev[i];
			if ((i && st == ev[i - 1]) || st < 0 || st >= n)
				continue;
			add_expr(ip, &ip->cap[st], ilp_fast_at(f, st), f->mib);
			add_expr(ip, &ip->cap[st], ilp_fast_at(f, st - 1), -f->mib);
		}
	}
	int prev = -1;
	ip->dcol = arena_array(ip->a, (size_t)n + 1, sizeof(int));
	ip->dmax = arena_array(ip->a, (size_t)n + 1, sizeof(double));
	ip->wscap = arena_array(ip->a, (size_t)n + 1, sizeof(int64_t));
	for (int st = 0; st < n; st++)
		ip->wscap[st] = -1;
	for (int st = 0; st < n; st++) {
		int D = mip_add_col(ip->mip, 0, limit_mib[st], 0, false);
		ip->dcol[st] = D;
		ip->dmax[st] = limit_mib[st];
		const TermVec *c = &ip->cap[st];
		int *cols = arena_array(ip->a, (size_t)c->n + 2, sizeof(int));
		double *vals = arena_array(ip->a, (size_t)c->n + 2, sizeof(double));
		int m = 0;
		cols[m] = D, vals[m++] = 1;
		if (prev >= 0)
			cols[m] = prev, vals[m++] = -1;
		for (int i = 0; i < c->n; i++)
			cols[m] = c->v[i].col, vals[m++] = -c->v[i].coef;
		double rebate = (st > 0 ? ip->reuse_mib[st - 1] : 0) - ip->reuse_mib[st]; /* build_reuse's constants */
		mip_add_row(ip->mip, ROW_TAG(ROW_FAST_BYTES, st, -1), m, cols, vals, rebate, rebate);
		prev = D;
		int W = workspace_col(ip, st);
		if (W >= 0) /* D_s + W_r <= L_s */
			mip_add_row(ip->mip, ROW_TAG(ROW_CAP_SPACE, st, -1), 2, (int[]){D, W}, (double[]){1, 1}, -MIP_INF, limit_mib[st]);

		const TermVec *w = &ip->writeout[st];
		if (w->n == 0 && ip->reuse_mib[st] == 0)
			continue;
		const Node *nd = s->order[st];
		cols = arena_array(ip->a, (size_t)(w->n + nd->nout + 2), sizeof(int));
		vals = arena_array(ip->a, (size_t)(w->n + nd->nout + 2), sizeof(double));
		m = 0;
		cols[m] = D, vals[m++] = 1;
		if (W >= 0)
			cols[m] = W, vals[m++] = 1;
		for (int i = 0; i < w->n; i++)
			cols[m] = w->v[i].col, vals[m++] = w->v[i].coef;
		for (int k = 0; k < nd->nout; k++) {
			const Flow *f = &ip->flow[nd->out[k]->id];
			cols[m] = f->src[V_PRE], vals[m++] = -f->mib;
		}
		mip_add_row(ip->mip, ROW_TAG(ROW_CAP_BOUNDARY, st, -1), m, cols, vals, -MIP_INF, limit_mib[st] - ip->reuse_mib[st]);
	}
}

/* --------------------------------------------------------- extraction */

bool ilp_on(const double *x, int col)
{
	return col >= 0 && x[col] > 0.5;
}

static void add_move(Placement *p, Arena *a, Residency *from, Residency *to, int at, bool async, int start)
{
	placement_move(p, a, from, to, at);
	p->moves.v[p->moves.n - 1].async = async;
	p->moves.v[p->moves.n - 1].start = async ? start : at;
}

/*
 * Follow the tensor's path: the source edge makes its first copy; a read
 * makes a fast copy from the point's step on; a write ends the fast copy
 * after the point's kernel and starts the slow one (sync: after the
 * kernel; async: overlapping it); a drop ends the fast copy after the
 * kernel. Copies still open live to the end of the tensor's interval.
 */
/* An asynchronous move over kernels start..at-1, with the shares charge_span charged. */
static void add_span_move(const Ilp *ip, Placement *p, Arena *a, Residency *from, Residency *to, int start, int at)
{
	add_move(p, a, from, to, at, true, start);
	double *share = arena_array(a, (size_t)(at - start), sizeof(double));
	ilp_span_shares(ip, start, at, share);
	p->moves.v[p->moves.n - 1].share = share;
}

/* The slow residency a write issued at step `from` lands in: an offloaded tensor's home, else a new one. */
static Residency *write_target(Placement *p, Arena *a, const Flow *f, Residency *home, int from)
{
	return home ? home : placement_add(p, a, f->t, TIER_SLOW, from, f->last);
}

static void extract(const Ilp *ip, const Flow *f, const double *x, Placement *p, Arena *a)
{
	const Tensor *t = f->t;
	int cur = ilp_on(x, f->src[V_PRE]) ? V_PRE : V_SLOW;
	Residency *fast = NULL, *slow = NULL, *home = NULL;
	if (cur == V_PRE)
		fast = placement_add(p, a, t, TIER_FAST, f->first, f->last);
	else
		slow = placement_add(p, a, t, TIER_SLOW, f->first, f->last);
	if (f->offload && slow)
		home = slow; /* written back into, where the step began */
	for (int j = 0; j < f->m; j++) {
		const Point *pt = &f->pt[j];
		int st = pt->step;
		if (cur == V_SLOW && ilp_on(x, pt->sread)) {
			int end = f->pt[pt->sread_to].step;
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			add_span_move(ip, p, a, slow, fast, st, end);
			cur = V_COPY;
			j = pt->sread_to - 1; /* in flight until then */
			continue;
		}
		if (cur == V_SLOW && (ilp_on(x, pt->read) || ilp_on(x, pt->aread))) {
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			add_move(p, a, slow, fast, ilp_on(x, pt->read) ? st : st + 1, !ilp_on(x, pt->read), st);
			cur = V_COPY;
		} else if (cur == V_GONE && ilp_on(x, pt->recomp)) {
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			placement_recompute(p, a, t, st, fast);
			cur = V_PRE;
		}
		if (cur == V_COPY && ilp_on(x, pt->dirty))
			cur = V_PRE; /* the update writes the fast copy */
		if (ilp_on(x, pt->keep[cur]))
			continue;
		int next = V_SLOW, sw = -1;
		for (int i = 0; i < pt->nswrite && cur == V_PRE; i++)
			if (ilp_on(x, pt->swrite[i]))
				sw = i;
		if (sw >= 0) {
			int end = st + pt->swrite_len[sw];
			fast->last = end - 1;
			slow = write_target(p, a, f, home, st);
			add_span_move(ip, p, a, fast, slow, st, end);
			fast = NULL;
			cur = V_SLOW;
			j = pt->swrite_to[sw] - 1; /* in flight, then slow until there */
			continue;
		}
		if (cur == V_PRE && ilp_on(x, pt->write)) {
			fast->last = st;
			slow = write_target(p, a, f, home, st + 1);
			add_move(p, a, fast, slow, st + 1, false, st + 1);
		} else if (cur == V_PRE && ilp_on(x, pt->awrite)) {
			fast->last = st;
			slow = write_target(p, a, f, home, st);
			add_move(p, a, fast, slow, st + 1, true, st);
		} else if (cur == V_COPY && ilp_on(x, pt->drop)) {
			fast->last = st;
		} else if (cur == V_PRE && ilp_on(x, pt->discard)) {
			fast->last = st;
			next = V_GONE;
		} else {
			ICE("the flow of %s breaks at step %d", t->name, st);
		}
		fast = NULL;
		cur = next;
	}
}

/* ------------------------------------------------------------- a start */

/* The fast residency (not scratch) of t that covers step, or NULL. */
static const Residency *fast_cover(const Placement *p, const Tensor *t, int step)
{
	const Residency *r = placement_at(p, t, step);
	return r && r->tier == TIER_FAST ? r : NULL;
}

static const Move *move_into(const Placement *p, const Residency *to)
{
	for (int i = 0; i < p->moves.n; i++)
		if (p->moves.v[i].to == to)
			return &p->moves.v[i];
	return NULL;
}

static const Move *move_from(const Placement *p, const Residency *from)
{
	for (int i = 0; i < p->moves.n; i++)
		if (p->moves.v[i].from == from)
			return &p->moves.v[i];
	return NULL;
}

/*
 * The columns of f's network that give t the life p0 gives it: the path
 * through its points that extract() would follow back to p0's
 * residencies, moves and recomputes. False (x untouched for f) where p0
 * does something f cannot express (a move or recompute away from a
 * decision point, a kind of edge f lacks).
 */
/* The columns of a point's edges, into e (MAX_POINT_EDGES); returns how many. */
int ilp_point_edges(const Point *pt, int *e)
{
	int all[] = {pt->keep[V_PRE], pt->keep[V_COPY], pt->keep[V_SLOW], pt->keep[V_GONE], pt->write, pt->awrite,
	             pt->drop, pt->read, pt->aread, pt->discard, pt->recomp, pt->sread, pt->dirty};
	int n = 0;
	for (int k = 0; k < (int)countof(all); k++)
		if (all[k] >= 0)
			e[n++] = all[k];
	for (int k = 0; k < pt->nswrite; k++)
		e[n++] = pt->swrite[k];
	return n;
}

bool ilp_start_flow(const Flow *f, const Placement *p0, double *x, int *cols)
{
	const Tensor *t = f->t;
	int ncols = 0; /* cols: room for three edges per point and the source */
#define TAKE(c) do { if ((c) < 0) return false; cols[ncols++] = (c); } while (0)
	const Residency *fast = fast_cover(p0, t, f->first);
	int cur;
	if (fast && fast->first == f->first) {
		TAKE(f->src[V_PRE]);
		cur = V_PRE;
	} else {
		TAKE(f->src[V_SLOW]);
		cur = V_SLOW;
		fast = NULL;
	}
	for (int j = 0; j < f->m; j++) {
		const Point *pt = &f->pt[j];
		int st = pt->step;
		bool last = j == f->m - 1;
		if (cur == V_SLOW && (fast = fast_cover(p0, t, st)) != NULL) {
			const Move *m = move_into(p0, fast);
			if (!m || fast->first != st || m->start != st)
				return false;
			if (m->async && m->share && pt->sread >= 0 && m->at == f->pt[pt->sread_to].step) {
				TAKE(pt->sread); /* in flight to its anchor */
				cur = V_COPY;
				j = pt->sread_to - 1;
				continue;
			}
			TAKE(m->async ? pt->aread : pt->read);
			if (m->async && m->at != st + 1)
				return false;
			cur = V_COPY;
		} else if (cur == V_GONE && (fast = fast_cover(p0, t, st)) != NULL) {
			if (fast->first != st)
				return false;
			TAKE(pt->recomp);
			cur = V_PRE;
		}
		if (cur == V_COPY && pt->overwrite) {
			TAKE(pt->dirty);
			cur = V_PRE;
		}
		if (cur == V_SLOW || cur == V_GONE) {
			if (!last)
				TAKE(pt->keep[cur]);
			else if (pt->keep[cur] >= 0)
				TAKE(pt->keep[cur]);
			continue;
		}
		const Move *w = move_from(p0, fast);
		if (w && w->async && w->share && w->start == st) {
			int i = 0;
			while (i < pt->nswrite && st + pt->swrite_len[i] != w->at)
				i++;
			if (i == pt->nswrite || cur != V_PRE || fast->last != w->at - 1)
				return false;
			TAKE(pt->swrite[i]); /* in flight, then slow until its point */
			cur = V_SLOW;
			fast = NULL;
			j = pt->swrite_to[i] - 1;
			continue;
		}
		if (fast->last > st || last) {
			if (!last && fast->last < f->pt[j + 1].step)
				return false;
			TAKE(pt->keep[cur]);
			continue;
		}
		if (w && !w->async && w->at == st + 1) {
			TAKE(pt->write);
			cur = V_SLOW;
		} else if (w && w->async && w->start == st && w->at == st + 1) {
			TAKE(pt->awrite);
			cur = V_SLOW;
		} else if (w) {
			return false;
		} else if (cur == V_COPY) {
			TAKE(pt->drop);
			cur = V_SLOW;
		} else {
			TAKE(pt->discard);
			cur = V_GONE;
		}
		fast = NULL;
	}
#undef TAKE
	/* every edge of f not on the path is 0 */
	for (int j = 0; j < f->m; j++) {
		int e[MAX_POINT_EDGES], ne = ilp_point_edges(&f->pt[j], e);
		for (int k = 0; k < ne; k++)
			x[e[k]] = 0;
	}
	for (int v = 0; v < NV; v++)
		if (f->src[v] >= 0)
			x[f->src[v]] = 0;
	for (int i = 0; i < ncols; i++)
		x[cols[i]] = 1;
	return true;
}

/*
 * A start for the solver from a placement p0 of the same schedule: the
 * edge columns of every tensor whose life the program can express, NAN
 * for the rest (the solver completes them). Returns how many tensors it
 * gave.
 */
int ilp_start(const Ilp *ip, const Placement *p0, double *x)
{
	int ncol = mip_ncols(ip->mip), given = 0, most = 0;
	for (int j = 0; j < ncol; j++)
		x[j] = NAN;
	for (int i = 0; i < ip->g->tensors.n; i++)
		if (ip->flow[i].m > most)
			most = ip->flow[i].m;
	int *cols = arena_array(ip->a, (size_t)(3 * most + 2), sizeof(int)); /* a read, a dirty edge and one out per point */
	for (int i = 0; i < ip->g->tensors.n; i++)
		given += ilp_start_flow(&ip->flow[i], p0, x, cols);
	x[ip->one] = 1;
	/* the start's algorithms: with others, its workspaces might not pack */
	for (int k = 0; p0->algo && k < ip->s->n; k++) {
		if (ip->algo_col[k] < 0 || !p0->algo[k])
			continue;
		const KernelAlgo *al;
		int na = ip->cm->algos(ip->cm, ip->s->order[k], &al);
		for (int i = 0; i < na; i++)
			x[ip->algo_col[k] + i] = &al[i] == p0->algo[k];
	}
	return given;
}

/* ----------------------------------------------------------- the pass */

/*
 * Bytes that must be fast at each step, into forced[]; returns their
 * maximum. The loss; with kernels_fast also the arguments of the kernel
 * and the weights and optimizer state (an update writes its tensor's home,
 * which must therefore be fast), so that the maximum is a lower bound.
 */
static bool pinned_persistent(const Schedule *s, const Tensor *t, bool offload, int64_t tiny)
{
	return tensor_persists(t) && !offloads(s, t, offload, tiny);
}

int64_t ilp_forced_bytes(const Graph *g, const Schedule *s, bool kernels_fast, bool offload, int64_t tiny,
                         int64_t *forced)
{
	int64_t worst = 0, persistent = 0;
	for (int i = 0; kernels_fast && i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (pinned_persistent(s, t, offload, tiny))
			persistent += memplan_round(t->bytes);
	}
	for (int st = 0; st < s->n; st++) {
		forced[st] = 0;
		if (g->loss && live_at(s, g->loss, st))
			forced[st] = memplan_round(g->loss->bytes);
		if (kernels_fast) {
			const Node *n = s->order[st];
			forced[st] += persistent;
			const Tensor *reused = schedule_reuse(s, st); /* written over by out[0] (build_reuse) */
			for (int k = 0; k < n->nin + n->nout; k++) {
				const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
				bool seen = t == g->loss || pinned_persistent(s, t, offload, tiny) || (reused && k == n->nin);
				for (int j = 0; j < k && !seen; j++)
					seen = (j < n->nin ? n->in[j] : n->out[j - n->nin]) == t;
				if (!seen)
					forced[st] += memplan_round(t->bytes);
			}
		}
		if (forced[st] > worst)
			worst = forced[st];
	}
	return worst;
}

/*
 * Build the program of o into ip: every tensor's flow network, every
 * kernel's time, the capacity rows under the per-step limits.
 */
void ilp_build(Ilp *ip, const Graph *g, const Schedule *s, const PlaceOptions *o, const double *limit_mib,
               Arena *a, PlaceStats *st)
{
	int n = s->n;
	double t0 = now_seconds();
	const OptimizerInfo *oi = &optimizer_info[o->optimizer];
	bool recomputes = oi->flags & OFLAG_RECOMPUTES;
	*ip = (Ilp){
		.g = g, .s = s, .cm = o->cm, .a = a, .mip = mip_new(),
		.is_async = oi->moves >= MOVES_ASYNC, .is_static = oi->flags & OFLAG_STATIC_TIERS,
		/* all but a program that only recomputes (static's single points move nothing anyway) */
		.moves = oi->moves != MOVES_NONE || !recomputes,
		.recompute = recomputes,
		.kernels_fast = o->kernels_fast,
		.offload = ilp_offload_on(o),
		.window = o->window > 0 ? o->window : PLACE_WINDOW,
		.span = oi->moves != MOVES_SPANNING || o->span < 0 ? 0 : o->span > 0 ? o->span : PLACE_SPAN,
		.span_all = o->span_all,
		.tiny = o->tiny == 0 ? PLACE_TINY : o->tiny,
		.fit = o->fit > 0 ? o->fit : o->cm->modeled ? PLACE_FIT_MODELED : PLACE_FIT_MEASURED,
		.duplex = o->cm->duplex,
	};
	ip->tiny_pinned = place_tiny_pinned(ip->tiny, o->limit, ip->kernels_fast);
	ip->flow = arena_array(a, (size_t)g->tensors.n + 1, sizeof(Flow));
	ip->async = arena_array(a, (size_t)n + 1, sizeof(TermVec));
	ip->async_out = arena_array(a, (size_t)n + 1, sizeof(TermVec));
	ip->cap = arena_array(a, (size_t)n + 1, sizeof(TermVec));
	ip->writeout = arena_array(a, (size_t)n + 2, sizeof(TermVec));
	ip->algo_col = arena_array(a, (size_t)n + 1, sizeof(int));
	for (int k = 0; k < n; k++)
		ip->algo_col[k] = -1;
	ip->rc_edges = arena_array(a, (size_t)n + 1, sizeof(*ip->rc_edges));
	ip->rc_at = arena_array(a, (size_t)n + 1, sizeof(*ip->rc_at));
	workspace_regions(ip, o);
	if (ip->span > PLACE_MAX_SPAN)
		ip->span = PLACE_MAX_SPAN;
	ip->omega = arena_array(a, (size_t)n + 1, sizeof(double));
	ip->ecol = arena_array(a, (size_t)n + 1, sizeof(int));
	ip->tmax = arena_array(a, (size_t)n + 1, sizeof(double));
	for (int k = 0; k < n && ip->span > 0; k++)
		ip->omega[k] = o->cm->kernel_time(o->cm, s->order[k], 0);
	if (ip->recompute)
		find_recomputes(ip, o->start);
	for (int i = 0; i < g->tensors.n; i++)
		build_flow(ip, &ip->flow[i], g->tensors.v[i]);
	build_ready(ip);
	for (int k = 0; k < n; k++)
		build_kernel(ip, k);
	build_recompute_algos(ip);
	build_span_cuts(ip);
	build_reuse(ip);
	build_capacity(ip, limit_mib);
	ip->one = mip_add_col(ip->mip, 1, 1, ip->constant, true);
	st->creation_time = now_seconds() - t0;
	st->rows = mip_nrows(ip->mip);
	st->cols = mip_ncols(ip->mip);
	st->integers = mip_nintegers(ip->mip);
	st->nonzeros = mip_nnz(ip->mip);
	st->decision_points = ip->npoints;
	st->separable = ip->separable;
	st->configured = ip->configured;
	st->approximated = ip->approximated;
	st->recompute_edges = ip->nrecompute;
}

/* The placement of the solution x: every tensor's path, each kernel's algorithm, the moves in order. */
Placement *ilp_extract(const Ilp *ip, const PlaceOptions *o, const double *x, Arena *a)
{
	const Graph *g = ip->g;
	const Schedule *s = ip->s;
	Placement *p = placement_new(g, s, a, o->optimizer);
	p->limit = o->limit;
	for (int i = 0; i < g->tensors.n; i++)
		extract(ip, &ip->flow[i], x, p, a);
	for (int k = 0; k < s->n; k++) {
		if (ip->algo_col[k] < 0)
			continue;
		const KernelAlgo *al;
		int na = o->cm->algos(o->cm, s->order[k], &al);
		if (!p->algo)
			p->algo = arena_array(a, (size_t)s->n + 1, sizeof(KernelAlgo *));
		for (int i = 0; i < na; i++)
			if (ilp_on(x, ip->algo_col[k] + i))
				p->algo[k] = &al[i];
		if (!p->algo[k])
			ICE("no algorithm chosen for %s", s->order[k]->name);
		p->ws_in_pool = true;
	}
	placement_finish(p);
	return p;
}
