/*
 * place_ilp.c - where every tensor lives at every step, by an integer
 * linear program (AutoTM's formulation, rewritten to solve fast).
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
#include "place.h"

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

#include "costmodel.h"
#include "memplan.h"
#include "predict.h"
#include "recompute.h"
#include "solver.h"
#include "ticker.h"
#include "util.h"

enum { V_PRE, V_COPY, V_SLOW, V_GONE, NV }; /* vertices of a decision point */
enum { MAX_CONFIG_TENSORS = 10 };     /* at most 2^10 configuration binaries per kernel */
enum { MAX_SPANS = 11 };              /* spanning writes per point: lengths 1, 2, 4, .., PLACE_MAX_SPAN */
enum { MAX_IN_FAST = 40 };            /* columns of one inFast expression */
#define US 1e6                        /* objective unit: microseconds */
#define MIB (1024.0 * 1024.0)         /* capacity unit: MiB */

/* One decision point of a tensor's flow network; edge fields are MIP columns, -1 if absent. */
typedef struct Point {
	int step;          /* the kernel at this point */
	bool user;         /* that kernel reads or writes the tensor */
	bool copy;         /* the COPY vertex exists here */
	int keep[NV];      /* each vertex to itself at the next point (after the last: the sink) */
	int write, awrite; /* PRE -> SLOW of the next point: sync after this kernel, async overlapping it */
	int drop;          /* COPY -> SLOW of the next point */
	int read, aread;   /* SLOW -> COPY here: sync before this kernel, async overlapping it */
	int discard;       /* PRE -> GONE of the next point: freed after this kernel, made again if needed */
	int dirty;         /* offload: COPY -> PRE here: this kernel updates the fast copy, the home is stale */
	bool overwrite;    /* this kernel overwrites the tensor (an update) */
	int recomp;        /* GONE -> PRE here: recomputed before this kernel */
	bool gone;         /* the GONE vertex exists here */
	const Chain *chain; /* recomp: the kernels that make the value again here */
	bool anchor;       /* the first point, a user, or where a recompute reads it */
	int sread;         /* auto: SLOW here -> COPY at point sread_to, the copy spread over the kernels between */
	int sread_to;
	int nswrite;       /* auto: PRE here -> SLOW at point swrite_to[i], a copy over swrite_len[i] kernels */
	int swrite[MAX_SPANS], swrite_len[MAX_SPANS], swrite_to[MAX_SPANS];
	VEC(int) in_copy;  /* spanning reads arriving in COPY here */
	VEC(int) in_slow;  /* spanning writes arriving in SLOW here */
} Point;

/* A spanning move in flight: the tensor is fast (memory held) at kernels lo..hi because of column col. */
typedef struct Transit {
	int col;
	int lo, hi;
	bool read;         /* a read: its copy is ready only at hi */
} Transit;

/* The flow network of one tensor. */
typedef struct Flow {
	const Tensor *t;
	int first, last;   /* live interval (steps) */
	double mib;        /* size rounded to MEMPLAN_ALIGN, in MiB */
	int64_t size;      /* the same in bytes */
	bool persistent;   /* weight or optimizer state: same residency at the start and end of a step */
	bool forced;       /* must stay fast (the loss) */
	bool offload;      /* persistent, and may be updated in a fast copy of a slow home, written back */
	int updated;       /* offload: the first step whose kernel overwrites it */
	int src[NV];       /* source -> PRE / SLOW of point 0 */
	Point *pt;         /* decision points in step order */
	int m;             /* their number */
	VEC(Transit) transit; /* spanning moves */
} Flow;

typedef struct Term {
	int col;      /* MIP column */
	double coef;  /* its coefficient */
	bool span;    /* a part of a spanning move */
} Term;

/* A spanning move's column: us microseconds of copy over kernels lo..hi-1. */
typedef struct Span {
	int col;
	double us;
	int lo, hi;
} Span;
typedef VEC(Term) TermVec;

/* A short sum of columns: a tensor's inFast at one step. */
typedef struct ColSum {
	int n;
	int col[MAX_IN_FAST];
} ColSum;

/* The steps at which one tensor may be recomputed, with their chains. */
typedef struct RecomputeAt {
	VEC(int) step;
	VEC(Chain *) chain;
	VEC(int) depth;   /* the least depth each step was reached at (find_recomputes) */
	VEC(int) support; /* steps where a consumer's recompute reads it: decision points */
} RecomputeAt;

typedef struct Ilp {
	const Graph *g;
	const Schedule *s;
	const CostModel *cm;
	Arena *a;
	Mip *mip;
	Flow *flow;         /* tensor id -> its network */
	TermVec *async;     /* step -> async edges charged to its kernel (coef: microseconds) */
	TermVec *async_out; /* duplex: step -> its async writes, which run beside the reads */
	bool duplex;        /* the cost model's moves of the two directions overlap (two copy engines) */
	TermVec *cap;       /* step -> terms of D_s - D_{s-1} (coef: MiB) */
	TermVec *writeout;  /* step -> write edges whose fast copy is freed at the boundary before it */
	double constant;    /* objective constant, microseconds */
	int one;            /* the integer column fixed at 1 carrying it */
	bool is_async;      /* optimizer async */
	bool is_static;     /* optimizer static */
	bool moves;         /* tensors may move between the tiers (all but recompute) */
	bool recompute;     /* tensors may be dropped and recomputed (auto, recompute) */
	RecomputeAt *rc;    /* tensor id -> where it may be recomputed (with recompute) */
	bool kernels_fast;  /* every kernel argument must be fast (a GPU) */
	bool offload;       /* weights and optimizer state may be updated in fast copies of slow homes */
	int *algo_col;      /* step -> the first of its algorithm binaries (cm->algos), or -1 */
	VEC(int) *rc_edges; /* step -> the recompute edges whose chain runs its kernel, where it has algorithms */
	VEC(int) *rc_at;    /* step -> the boundary of each of those edges (its recompute runs before that step) */
	int *reuse_col;     /* step -> without kernels_fast, build_reuse's column (1: its output over its input), or -1 */
	int *region;        /* step -> its workspace region: runs of consecutive steps, each with its own column */
	int *workspace;     /* region -> its workspace column (MiB), -1 until one of its kernels has algorithms */
	int window;         /* async window */
	int span;           /* auto: the most kernels a spanning move overlaps; 0: none */
	bool span_all;      /* every span up to it (PlaceOptions.span_all), not only as far as a move needs */
	double *omega;      /* step -> all-fast kernel time: a spanning move's work is spread in proportion */
	VEC(Span) spans;    /* every spanning move's column */
	int *ecol;          /* step -> its excess column e, or -1 */
	double *tmax;       /* step -> the longest its kernel can take (us) */
	int64_t tiny;       /* bytes up to which a tensor gets one point; <= 0: none */
	int64_t tiny_pinned; /* the same for activations and gradients: tiny, with kernels_fast at most a share of the limit */
	double fit;         /* relative misfit of all-slow time and the sum of penalties taken as separable */
	int npoints;        /* decision points in all */
	int separable, configured, approximated; /* kernels by cost form */
	int nrecompute;     /* recompute edges */
	int *dcol;          /* step -> its column D_s, the fast MiB live there */
	double *reuse_mib;  /* step -> with kernels_fast, the MiB of the output its kernel writes over its dying input
	                       (build_reuse), always: taken off D_s as a constant */
	int64_t *wscap;     /* step -> the most its algorithm's workspace may take where tighten capped it (the
	                       gap its packed plan left there), -1: no cap */
	double *dmax;       /* step -> D_s's upper bound: the step's limit, or less where the neighbourhoods
	                       tightened it for packing */
} Ilp;

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
static bool offload_on(const PlaceOptions *o)
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
static void span_shares(const Ilp *ip, int lo, int hi, double *share)
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
	span_shares(ip, lo, hi, sh);
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
static int kernel_algos(const Ilp *ip, const Node *n, const KernelAlgo **al)
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
		any = kernel_algos(ip, ip->s->order[st], NULL) > 0;
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
	if (kernel_algos(ip, n, &al) > 0)
		return al[0].seconds * US; /* cm->algos lists the fastest first */
	return ip->cm->kernel_time(ip->cm, n, 0) * US;
}

/* Build t's network: its points, its edges (columns) and flow conservation. */
static void build_flow(Ilp *ip, Flow *f, const Tensor *t)
{
	const Schedule *s = ip->s;
	const CostModel *cm = ip->cm;
	Mip *mip = ip->mip;
	f->t = t;
	f->first = s->live[t->id].first;
	f->last = s->live[t->id].last;
	f->size = memplan_round(t->bytes);
	f->mib = (double)f->size / MIB;
	f->persistent = tensor_persists(t);
	f->forced = t == ip->g->loss;
	f->offload = offloads(s, t, ip->offload, ip->tiny);
	f->updated = update_step(s, t);
	bool produced = t->producer != NULL;

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
	for (int j = 0; j < f->m; j++) {
		Point *p = &f->pt[j];
		bool last = j == f->m - 1;
		/* an offloaded tensor is written back (to its home) only after its update */
		bool may_write = ip->moves && !last && !f->forced && (!f->persistent || (f->offload && p->step >= f->updated));
		p->keep[V_PRE] = binary(ip, 0);
		p->keep[V_COPY] = p->copy && !p->overwrite && (last || f->pt[j + 1].copy) ? binary(ip, 0) : -1;
		p->keep[V_SLOW] = f->forced ? -1 : binary(ip, 0);
		p->write = may_write ? binary(ip, write_us) : -1;
		p->awrite = may_write && ip->is_async && !(produced && j == 0) && !p->overwrite ? binary(ip, 0) : -1;
		p->drop = p->copy && !last && !p->overwrite ? binary(ip, 0) : -1;
		p->dirty = p->copy && p->overwrite ? binary(ip, 0) : -1;
		p->read = p->copy ? binary(ip, read_us) : -1;
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
				if (kernel_algos(ip, p->chain->node[i], NULL) > 0) {
					int k = ip->s->pos[p->chain->node[i]->id];
					vec_push(ip->a, &ip->rc_edges[k], p->recomp);
					vec_push(ip->a, &ip->rc_at[k], p->step);
				}
			if (p->chain->scratch > 0) /* scratch at the boundary before the kernel */
				vec_push(ip->a, &ip->writeout[p->step], ((Term){p->recomp, (double)p->chain->scratch / MIB, false}));
		}
		if (p->awrite >= 0) {
			vec_push(ip->a, ip->duplex ? &ip->async_out[p->step] : &ip->async[p->step],
			         ((Term){p->awrite, awrite_us, false}));
			vec_push(ip->a, &ip->writeout[p->step + 1], ((Term){p->awrite, f->mib, false}));
		}
		if (p->aread >= 0)
			vec_push(ip->a, &ip->async[p->step], ((Term){p->aread, aread_us, false}));
		if (p->write >= 0)
			vec_push(ip->a, &ip->writeout[p->step + 1], ((Term){p->write, f->mib, false}));
		if (ip->span > 0)
			build_spans(ip, f, j, may_write, aread_us, awrite_us);
	}
	f->src[V_PRE] = binary(ip, 0);
	f->src[V_COPY] = f->src[V_GONE] = -1;
	f->src[V_SLOW] = f->forced ? -1 : binary(ip, 0);

	/* an async read's copy is still there after its kernel: aread <= keep COPY */
	for (int j = 0; j < f->m; j++) {
		const Point *p = &f->pt[j];
		if (p->aread >= 0)
			mip_add_row(mip, 2, (int[]){p->aread, p->keep[V_COPY]}, (double[]){1, -1}, -MIP_INF, 0);
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
	mip_add_row(mip, n, cols, vals, 1, 1);
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
		mip_add_row(mip, n, cols, vals, 0, 0);
		/* GONE */
		if (p->gone) {
			n = 0;
			TERM(q->keep[V_GONE], 1);
			TERM(q->discard, 1);
			TERM(p->keep[V_GONE], -1);
			TERM(p->recomp, -1);
			mip_add_row(mip, n, cols, vals, 0, 0);
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
			mip_add_row(mip, n, cols, vals, 0, 0);
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
			mip_add_row(mip, n, cols, vals, 0, 0);
		}
	}
	/* an offloaded tensor ends the step in its home's tier: fast at the sink exactly when fast at the source */
	if (f->offload) {
		n = 0;
		TERM(f->pt[f->m - 1].keep[V_PRE], 1);
		TERM(f->src[V_PRE], -1);
		mip_add_row(mip, n, cols, vals, 0, 0);
	}
#undef TERM
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

static ColSum fast_at(const Flow *f, int step)
{
	return in_fast(f, step, false, true);
}

/* Fast at kernel `step` in a copy the kernel reads or writes: not in a spanning move's flight. */
static ColSum held_at(const Flow *f, int step)
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
				mip_add_row(ip->mip, m, cols, vals, -MIP_INF, 0);
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
		ColSum hold[2] = {held_at(&ip->flow[in->id], st), held_at(fo, st)};
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
			mip_add_row(ip->mip, m, cols, vals, -MIP_INF, 0);
		}
		vec_push(ip->a, &ip->cap[st], ((Term){u, -fo->mib, false}));
		if (st + 1 < ip->s->n)
			vec_push(ip->a, &ip->cap[st + 1], ((Term){u, fo->mib, false}));
		vec_push(ip->a, &ip->writeout[st], ((Term){u, fo->mib, false}));
	}
}

/* ------------------------------------------------------------ kernels */

/*
 * The time of the kernel at `step` as a linear expression: constant plus
 * terms (microseconds), put into the objective; the same expression goes
 * into the async row of the step when transfers are charged to it.
 */
static void build_kernel(Ilp *ip, int step)
{
	const Node *n = ip->s->order[step];
	const CostModel *cm = ip->cm;
	int nargs = n->nin + n->nout; /* at most OP_MAX_ARGS (graph_node), so a mask fits 32 bits */
	_Static_assert(OP_MAX_ARGS <= 32, "a kernel's slow arguments are a 32-bit mask");
	const Tensor *ts[OP_MAX_ARGS];
	uint32_t mask[OP_MAX_ARGS];
	int d = 0;
	/* distinct tensors whose tier is a decision; their argument positions */
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
	double t0 = cm->kernel_time(cm, n, 0), pen[OP_MAX_ARGS], sum = t0;
	if (ip->kernels_fast) {
		/* inFast = 1 for every argument; the time is the all-fast time */
		for (int i = 0; i < d; i++) {
			ColSum e = fast_at(&ip->flow[ts[i]->id], step);
			double one[MAX_IN_FAST];
			for (int k = 0; k < e.n; k++)
				one[k] = 1;
			mip_add_row(ip->mip, e.n, e.col, one, 1, 1);
		}
		ip->separable++;
		d = 0; /* the async row below: T is the constant, or the algorithm's time */
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
	int na = kernel_algos(ip, n, &al);
	if (na > 0) {
		/*
		 * T = sum_a time_a y_a, sum_a y_a = 1; the workspace column W is at
		 * least the chosen algorithm's workspace, and every capacity row
		 * holds W: whatever the residencies' packing, every workspace fits
		 * on top of it (memplan.c), and the pass after placing
		 * (upgrade_algos, place.c) gives kernels the larger gaps the packing
		 * leaves.
		 */
		int *cols = arena_array(ip->a, (size_t)na + 1, sizeof(int));
		double *ones = arena_array(ip->a, (size_t)na + 1, sizeof(double)),
		       *ws = arena_array(ip->a, (size_t)na + 1, sizeof(double));
		ip->algo_col[step] = mip_ncols(ip->mip);
		for (int i = 0; i < na; i++) {
			cols[i] = binary(ip, 0);
			ones[i] = 1;
			ws[i] = -(double)al[i].workspace / MIB;
			vec_push(ip->a, &expr, ((Term){cols[i], al[i].seconds * US, false}));
			if (al[i].seconds * US > tmax)
				tmax = al[i].seconds * US;
		}
		mip_add_row(ip->mip, na, cols, ones, 1, 1);
		cols[na] = workspace_col(ip, step);
		ws[na] = 1;
		mip_add_row(ip->mip, na + 1, cols, ws, 0, MIP_INF);
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
			add_expr(ip, &expr, fast_at(&ip->flow[ts[i]->id], step), -pen[i] * US);
			if (pen[i] < 0)
				tmax -= pen[i] * US;
		}
	} else {
		/* T = sum_c time_c y_c; sum_c y_c = 1; sum_{c: i fast} y_c = inFast_i */
		ip->configured++;
		int nc = 1 << d;
		int *y = arena_array(ip->a, (size_t)nc, sizeof(int));
		int *cols = arena_array(ip->a, (size_t)nc + MAX_IN_FAST + 8, sizeof(int));
		double *vals = arena_array(ip->a, (size_t)nc + MAX_IN_FAST + 8, sizeof(double));
		for (int c = 0; c < nc; c++) {
			uint32_t slow = 0;
			for (int i = 0; i < d; i++)
				if (c >> i & 1)
					slow |= mask[i];
			double tc = cm->kernel_time(cm, n, slow) * US;
			if (tc > tmax)
				tmax = tc;
			y[c] = binary(ip, 0);
			vec_push(ip->a, &expr, ((Term){y[c], tc, false}));
			cols[c] = y[c];
			vals[c] = 1;
		}
		mip_add_row(ip->mip, nc, cols, vals, 1, 1);
		for (int i = 0; i < d; i++) {
			int m = 0;
			for (int c = 0; c < nc; c++)
				if (!(c >> i & 1)) {
					cols[m] = y[c];
					vals[m++] = 1;
				}
			ColSum e = fast_at(&ip->flow[ts[i]->id], step);
			for (int k = 0; k < e.n; k++) {
				cols[m] = e.col[k];
				vals[m++] = -1;
			}
			mip_add_row(ip->mip, m, cols, vals, 0, 0);
		}
	}
	ip->constant += konst;
	for (int i = 0; i < expr.n; i++)
		mip_add_obj(ip->mip, expr.v[i].col, expr.v[i].coef);

	/*
	 * e >= transfers - T:  e - transfers + terms(T) >= -konst; with duplex
	 * moves, one row per direction (each copy engine has its own queue).
	 */
	int e = -1;
	for (int dir = 0; dir < (ip->duplex ? 2 : 1); dir++) {
		const TermVec *as = dir ? &ip->async_out[step] : &ip->async[step];
		if (as->n == 0)
			continue;
		int nt = 1 + as->n + expr.n;
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
		for (int i = 0; i < expr.n; i++) {
			cols[m] = expr.v[i].col;
			vals[m++] = expr.v[i].coef;
		}
		mip_add_row(ip->mip, m, cols, vals, -konst, MIP_INF);
		/*
		 * Valid inequalities that close most of the LP gap: a transfer
		 * longer than the kernel can ever take costs its excess on its
		 * own, e >= (c_a - tmax) x_a. Without them the LP spreads a long
		 * prefetch in fractions over the kernels of its window, each
		 * fraction hidden.
		 */
		for (int i = 0; i < as->n; i++)
			if (as->v[i].coef > tmax && !as->v[i].span)
				mip_add_row(ip->mip, 2, (int[]){e, as->v[i].col}, (double[]){1, -(as->v[i].coef - tmax)}, 0,
				            MIP_INF);
	}
	ip->ecol[step] = e;
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
		int na = kernel_algos(ip, ip->s->order[k], &al);
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
			mip_add_row(ip->mip, na + 2, wc, wv, -most / MIB, MIP_INF);
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
			mip_add_row(ip->mip, m + 2, cols, vals, -m, MIP_INF);
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
		mip_add_row(ip->mip, m, cols, vals, 0, MIP_INF);
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
			add_expr(ip, &ip->cap[st], fast_at(f, st), f->mib);
			add_expr(ip, &ip->cap[st], fast_at(f, st - 1), -f->mib);
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
		mip_add_row(ip->mip, m, cols, vals, rebate, rebate);
		prev = D;
		int W = workspace_col(ip, st);
		if (W >= 0) /* D_s + W_r <= L_s */
			mip_add_row(ip->mip, 2, (int[]){D, W}, (double[]){1, 1}, -MIP_INF, limit_mib[st]);

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
		mip_add_row(ip->mip, m, cols, vals, -MIP_INF, limit_mib[st] - ip->reuse_mib[st]);
	}
}

/* --------------------------------------------------------- extraction */

static bool on(const double *x, int col)
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
	span_shares(ip, start, at, share);
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
	int cur = on(x, f->src[V_PRE]) ? V_PRE : V_SLOW;
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
		if (cur == V_SLOW && on(x, pt->sread)) {
			int end = f->pt[pt->sread_to].step;
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			add_span_move(ip, p, a, slow, fast, st, end);
			cur = V_COPY;
			j = pt->sread_to - 1; /* in flight until then */
			continue;
		}
		if (cur == V_SLOW && (on(x, pt->read) || on(x, pt->aread))) {
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			add_move(p, a, slow, fast, on(x, pt->read) ? st : st + 1, !on(x, pt->read), st);
			cur = V_COPY;
		} else if (cur == V_GONE && on(x, pt->recomp)) {
			fast = placement_add(p, a, t, TIER_FAST, st, f->last);
			placement_recompute(p, a, t, st, fast);
			cur = V_PRE;
		}
		if (cur == V_COPY && on(x, pt->dirty))
			cur = V_PRE; /* the update writes the fast copy */
		if (on(x, pt->keep[cur]))
			continue;
		int next = V_SLOW, sw = -1;
		for (int i = 0; i < pt->nswrite && cur == V_PRE; i++)
			if (on(x, pt->swrite[i]))
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
		if (cur == V_PRE && on(x, pt->write)) {
			fast->last = st;
			slow = write_target(p, a, f, home, st + 1);
			add_move(p, a, fast, slow, st + 1, false, st + 1);
		} else if (cur == V_PRE && on(x, pt->awrite)) {
			fast->last = st;
			slow = write_target(p, a, f, home, st);
			add_move(p, a, fast, slow, st + 1, true, st);
		} else if (cur == V_COPY && on(x, pt->drop)) {
			fast->last = st;
		} else if (cur == V_PRE && on(x, pt->discard)) {
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
enum { MAX_POINT_EDGES = 13 + MAX_SPANS };
static int point_edges(const Point *pt, int *e)
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

static bool start_flow(const Flow *f, const Placement *p0, double *x, int *cols)
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
		int e[MAX_POINT_EDGES], ne = point_edges(&f->pt[j], e);
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
static int ilp_start(const Ilp *ip, const Placement *p0, double *x)
{
	int ncol = mip_ncols(ip->mip), given = 0, most = 0;
	for (int j = 0; j < ncol; j++)
		x[j] = NAN;
	for (int i = 0; i < ip->g->tensors.n; i++)
		if (ip->flow[i].m > most)
			most = ip->flow[i].m;
	int *cols = arena_array(ip->a, (size_t)(3 * most + 2), sizeof(int)); /* a read, a dirty edge and one out per point */
	for (int i = 0; i < ip->g->tensors.n; i++)
		given += start_flow(&ip->flow[i], p0, x, cols);
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

static int64_t forced_bytes(const Graph *g, const Schedule *s, bool kernels_fast, bool offload, int64_t tiny,
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
static void ilp_build(Ilp *ip, const Graph *g, const Schedule *s, const PlaceOptions *o, const double *limit_mib,
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
		.offload = offload_on(o),
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

/* ------------------------------------------ improving a start (LNS) */

static Placement *ilp_extract(const Ilp *ip, const PlaceOptions *o, const double *x, Arena *a);

/* owner[col]: the tensor whose flow network has the column; -1 for the others (capacity, excess, kernels). */
static int *column_owners(const Ilp *ip)
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
			int e[MAX_POINT_EDGES], ne = point_edges(&f->pt[j], e);
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
static void set_objective(MipResult *r, double obj, double bound)
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
static bool packs(const Ilp *ip, const PlaceOptions *o, const double *x, double *excess)
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
		if (inc && on(inc, ip->algo_col[k] + i) && al[i].workspace > bytes)
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
static void repair(Ilp *ip, const PlaceOptions *o, const int *owner, MipResult *r, double cap, double seconds,
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
		bool fits = obj < INFINITY && packs(ip, o, cand, NULL);
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
			set_objective(r, obj, r->bound);
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
		bool fits = obj < best && packs(ip, o, cand, excess);
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
static double ilp_improve(Ilp *ip, const PlaceOptions *opts, const int *owner, double *x, double seconds,
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
	const PlaceOptions *o = &first_fit;
	double t0 = now_seconds(), end = t0 + seconds;
	typedef struct Gain {
		double at, objective; /* when an improvement was found, and its objective */
	} Gain;
	VEC(Gain) gains = {0};
	int n = ip->s->n, nt = ip->g->tensors.n;
	bool *open = arena_array(ip->a, (size_t)nt + 1, sizeof(bool));
	const bool *none = arena_array(ip->a, (size_t)nt + 1, sizeof(bool)); /* no tensor open: completions */
	bool proved;
	int nc = mip_ncols(ip->mip);
	double *cand = arena_array(ip->a, (size_t)nc + 1, sizeof(double));
	double *merged = arena_array(ip->a, (size_t)nc + 1, sizeof(double));
	double *excess = arena_array(ip->a, (size_t)n + 1, sizeof(double));
	double *dmax0 = arena_array(ip->a, (size_t)n + 1, sizeof(double));
	bool *tried = arena_array(ip->a, (size_t)n + 1, sizeof(bool)); /* by a window's first step */
	bool *skip = arena_array(ip->a, (size_t)n + 1, sizeof(bool));  /* windows that clash with a running job */
	memcpy(dmax0, ip->dmax, sizeof(double) * (size_t)n);
	/*
	 * the start itself, the columns it does not give completed (under
	 * tighter bounds where it does not pack); first with its algorithms
	 * too, which its packing was made with (free, the completion took
	 * algorithms whose workspaces did not pack beside the start's
	 * residencies: VGG-19 b64 at half its peak, measured profile, sync's
	 * start of 272.6 ms completed at 267.1 ms did not pack, and under the
	 * tightened bounds had no completion, so that no search ran)
	 */
	int *with_algos = NULL; /* owner, with the start's algorithm columns owned by tensor 0 (none is open here) */
	for (int k = 0; k < n; k++) {
		if (ip->algo_col[k] < 0 || isnan(x[ip->algo_col[k]]))
			continue;
		if (!with_algos) {
			with_algos = arena_array(ip->a, (size_t)nc + 1, sizeof(int));
			memcpy(with_algos, owner, sizeof(int) * (size_t)nc);
		}
		for (int i = 0, na = kernel_algos(ip, ip->s->order[k], NULL); i < na; i++)
			with_algos[ip->algo_col[k] + i] = 0;
	}
	double best = INFINITY;
	bool fits = false;
	if (with_algos) {
		best = solve_fixed(ip, o, with_algos, none, x, cand, INFINITY, -1, seconds / 8, &proved);
		fits = best < INFINITY && packs(ip, o, cand, excess);
		if (place_solver_log())
			fprintf(stderr, "lns start: %d of %d tensors and its algorithms given, completed: %.1f us%s\n",
			        st->start_tensors, nt, best, best < INFINITY && !fits ? " (does not pack)" : "");
	}
	for (int k = 0; k < 4 && !fits && now_seconds() < t0 + seconds / 4; k++) {
		best = solve_fixed(ip, o, owner, none, x, cand, INFINITY, -1, seconds / 8, &proved);
		if (k == 0)
			*uncompleted = best == INFINITY; /* no completion at all, not one under tightened bounds */
		fits = best < INFINITY && packs(ip, o, cand, excess);
		if (place_solver_log())
			fprintf(stderr, "lns start: %d of %d tensors given, completed: %.1f us%s\n", st->start_tensors, nt,
			        best, best < INFINITY && !fits ? " (does not pack)" : "");
		if (best == INFINITY || (!fits && !tighten(ip, o, cand, NULL)))
			break;
	}
	untighten(ip, dmax0);
	st->lns_solves = 1;
	if (!fits) {
		st->lns_solves = 0; /* no search: the whole program alone */
		return INFINITY;
	}
	memcpy(x, cand, sizeof(double) * (size_t)nc);
	st->lns_start = best / US;
	vec_push(ip->a, &gains, ((Gain){now_seconds(), best}));
	int njobs = lns_jobs(o), running = 0, version = 0;
	st->lns_jobs = njobs;
	Job *jobs = arena_array(ip->a, (size_t)njobs, sizeof(Job));
	for (int i = 0; njobs > 1 && i < njobs; i++) {
		jobs[i].open = arena_array(ip->a, (size_t)nt + 1, sizeof(bool));
		jobs[i].buf = arena_array(ip->a, sizeof(Hood) + plan_bytes(ip), 1);
	}
	int width = n < PLACE_LNS_WIDTH ? n : PLACE_LNS_WIDTH, easy = 0, hard = 0;
	bool offloading = true; /* first the program without offloads (smaller neighbourhoods), if any and asked for */
	for (int i = 0; i < nt && PLACE_LNS_OFFLOAD > 0; i++)
		offloading = offloading && !ip->flow[i].offload;
	bool first_done = false;
	for (;;) {
		if (now_seconds() >= end - 0.05) {
			/* still improving by PLACE_LNS_GAIN over the last quarter of its time: the extra time too */
			double now = now_seconds(), then = now - (now - t0) / 4, before = gains.v[0].objective;
			for (int k = 0; k < gains.n && gains.v[k].at <= then; k++)
				before = gains.v[k].objective;
			if (more <= 0 || before - best < PLACE_LNS_GAIN * best)
				break;
			end += more;
			more = 0;
			st->lns_extended = true;
			if (place_solver_log())
				fprintf(stderr, "lns: %.1f -> %.1f us over the last quarter; the whole program's time too\n", before,
				        best);
		}
		if (!offloading && (first_done || now_seconds() > t0 + seconds * PLACE_LNS_OFFLOAD)) {
			offloading = true; /* the second phase: every window again, weights and state open too */
			width = n < PLACE_LNS_WIDTH ? n : PLACE_LNS_WIDTH;
			memset(tried, 0, sizeof(bool) * (size_t)n);
			easy = hard = 0;
			if (place_solver_log())
				fprintf(stderr, "lns: weights and optimizer state open from here\n");
		}
		/*
		 * The untried window of this width (starts on a grid of half a
		 * width) that costs most, of those whose open tensors no running
		 * job has open.
		 */
		int stride = width / 2 > 0 ? width / 2 : 1, lo = -1, hi = 0, nopen = 0, slot = -1;
		for (int i = 0; i < njobs && njobs > 1 && slot < 0; i++)
			if (jobs[i].pid == 0)
				slot = i;
		bool *jopen = slot >= 0 ? jobs[slot].open : open;
		memset(skip, 0, sizeof(bool) * (size_t)n);
		while (njobs == 1 || slot >= 0) {
			double most = -1;
			lo = -1;
			for (int w = 0; w < n; w += stride) {
				double sum = 0;
				for (int k = w; k < w + width && k < n; k++)
					sum += excess[k];
				if (!tried[w] && !skip[w] && sum > most)
					most = sum, lo = w;
			}
			if (lo < 0)
				break;
			hi = lo + width < n ? lo + width : n;
			nopen = 0;
			bool clash = false;
			for (int i = 0; i < nt; i++) {
				nopen += jopen[i] = acts_within(&ip->flow[i], lo, hi) && (offloading || !ip->flow[i].offload);
				for (int k = 0; jopen[i] && k < njobs && njobs > 1 && !clash; k++)
					clash = jobs[k].pid > 0 && jobs[k].open[i];
			}
			if (!clash)
				break;
			skip[lo] = true;
			lo = -1;
		}
		if (lo < 0 && running > 0) {
			/* no slot is free, or every untried window clashes with a running one: wait for a result below */
		} else if (lo < 0 || easy >= PLACE_LNS_EASY) { /* all tried, or too easy: wider windows */
			if (width >= n && offloading)
				break;
			if (width >= n) {
				first_done = true;
				continue;
			}
			width = 2 * width < n ? 2 * width : n;
			memset(tried, 0, sizeof(bool) * (size_t)n);
			easy = hard = 0;
			continue;
		}
		Hood h = {.lo = lo, .hi = hi, .nopen = nopen, .obj = INFINITY};
		const bool *hopen = jopen;
		int hversion = version;
		bool done = false;
		if (lo >= 0) {
			tried[lo] = true;
			double left = end - now_seconds(), limit = fmax(seconds * PLACE_LNS_WINDOW, 1);
			if (limit > left)
				limit = left;
			if (nopen == 0) {
				h.proved = done = true; /* nothing to change */
			} else if (slot >= 0) {
				jobs[slot].h = h;
				jobs[slot].version = version;
				if (spawn_hood(ip, o, owner, x, best, limit, end, dmax0, &jobs[slot])) {
					running++;
					continue; /* another window while this one runs */
				}
			}
			if (!done) { /* one job, or no process could be made: solved here */
				solve_hood(ip, o, owner, hopen, x, best, limit, end, dmax0, cand, excess, &h);
				done = true;
			}
		} else {
			/* wait for a job's result, at most until the search's time is up */
			struct pollfd pfd[PLACE_MAX_JOBS];
			int which[PLACE_MAX_JOBS], np = 0;
			for (int i = 0; i < njobs; i++)
				if (jobs[i].pid > 0)
					pfd[np] = (struct pollfd){.fd = jobs[i].fd, .events = POLLIN}, which[np++] = i;
			double wait = end - 0.05 - now_seconds();
			int ready = poll(pfd, (nfds_t)np, wait > 0 ? (int)(wait * 1e3) + 1 : 0);
			for (int k = 0; k < np && ready > 0 && !done; k++) {
				Job *j = &jobs[which[k]];
				if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				if (!read_job(ip, j))
					continue;
				running--;
				h = j->h;
				hopen = j->open;
				hversion = j->version;
				if (isfinite(h.obj)) { /* its plan; its steps' excess if it is kept as it is (not merged) */
					const double *plan = (const double *)(j->buf + sizeof(Hood));
					memcpy(cand, plan, sizeof(double) * (size_t)nc);
					if (hversion == version)
						memcpy(excess, plan + nc, sizeof(double) * (size_t)n);
				}
				done = true;
			}
			if (!done)
				continue;
		}
		/* the result of window h, solved from plan hversion (cand: its plan if it found a better one) */
		st->lns_solves += h.solves;
		double obj = h.obj;
		if (isfinite(obj) && hversion != version) {
			/* solved from an earlier plan: its open tensors' paths into the current one, the rest completed */
			for (int c = 0; c < nc; c++)
				merged[c] = owner[c] >= 0 && hopen[owner[c]] ? cand[c] : x[c];
			double t1 = now_seconds(), limit = seconds / 20 > 1 ? seconds / 20 : 1;
			obj = solve_fixed(ip, o, owner, none, merged, cand, best, -1, limit, &proved);
			if (obj > best * (1 - 1e-6))
				obj = INFINITY;
			bool ok = obj < best && packs(ip, o, cand, excess); /* excess is written only if it packs */
			st->lns_merges++;
			if (place_solver_log())
				fprintf(stderr, "lns [%d,%d) from an earlier plan: %.1f us, merged into the current %.1f: %.1f us in %.2f s%s\n",
				        h.lo, h.hi, h.obj, best, obj, now_seconds() - t1, obj < best && !ok ? " (does not pack)" : "");
			if (!ok) {
				obj = INFINITY;
				tried[h.lo] = false; /* worth solving again from the current plan */
			}
		}
		bool better = isfinite(obj);
		ticker_note("search: %d windows, best %.3f ms", st->lns_solves, 1e-3 * (better ? obj : best));
		easy = !better && h.proved ? easy + 1 : 0;
		hard = !better && !h.proved ? hard + 1 : 0;
		if (hard >= PLACE_LNS_EASY && width > PLACE_LNS_WIDTH) { /* too hard: narrower again */
			width /= 2;
			memset(tried, 0, sizeof(bool) * (size_t)n);
			hard = 0;
		}
		if (better) {
			st->lns_gain += (best - obj) / US;
			st->lns_better++;
			best = obj;
			version++;
			vec_push(ip->a, &gains, ((Gain){now_seconds(), best}));
			memcpy(x, cand, sizeof(double) * (size_t)nc); /* excess is already its steps' (solve_hood, or the merge) */
			stride = width / 2 > 0 ? width / 2 : 1;
			for (int w = 0; w < n; w += stride)
				if (w + width > h.lo - width && w < h.hi + width)
					tried[w] = false;
		}
	}
	kill_jobs(jobs, njobs);
	st->lns_time = now_seconds() - t0;
	return best;
}

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

static bool ilp_solve(Ilp *ip, const PlaceOptions *o, PlaceStats *st, MipResult *r, char *err, size_t errlen)
{
	char b1[64], b2[64], b3[256];
	double *start = NULL;
	if (o->start) {
		start = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
		st->start_tensors = ilp_start(ip, o->start, start);
		int bad = mip_broken_row(ip->mip, start, 1e-6);
		if (bad >= 0)
			ICE("the start from %s's placement breaks row %d of the program", optimizer_info[o->start->optimizer].name,
			    bad);
	}
	MipOptions mo = {
		.start = start,
		.backend = o->solver,
		.time_limit = o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT,
		.gap = o->gap == 0 ? PLACE_GAP : o->gap,
		.verbose = o->verbose || place_solver_log(),
	};
	/*
	 * A cutoff (auto's starts after the first): a program whose
	 * relaxation is no faster is not solved. Only the relaxation: CBC's
	 * own cutoff hampered its search for a first solution below it
	 * (resnet200 b32 at 8:1 on the Optane model: async's start found
	 * none in its 12 s with sync's time as the cutoff, and 9.457 s
	 * after 9 s without it).
	 */
	if (o->cutoff > 0) {
		MipResult lp;
		double t0 = now_seconds();
		bool solved = mip_solve(ip->mip, &(MipOptions){.backend = o->solver, .time_limit = mo.time_limit, .relax = true},
		                        &lp, err, errlen);
		bool slower = solved && lp.status == MIP_OPTIMAL && lp.objective >= o->cutoff * US;
		if (place_solver_log())
			fprintf(stderr, "%s: relaxation %.1f us against the cutoff %.1f us, in %.2f s\n",
			        optimizer_info[o->optimizer].name, solved && lp.status == MIP_OPTIMAL ? lp.objective : NAN,
			        o->cutoff * US, now_seconds() - t0);
		if (solved && lp.status == MIP_OPTIMAL && lp.objective < o->cutoff * US * (1 - PLACE_TIGHT) && o->loose > 0)
			mo.time_limit = fmax(mo.time_limit - o->loose, fmin(mo.time_limit, 1));
		if (solved)
			mip_result_free(&lp);
		if (slower) {
			mip_free(ip->mip);
			ip->mip = NULL;
			st->solve_time = now_seconds() - t0;
			st->status = "no placement faster than the cutoff";
			snprintf(err, errlen, "no placement faster than %.6f s: the program's relaxation is no faster",
			         o->cutoff);
			return false;
		}
		/* the solve keeps its time: async's start there found its first plan after 9 s of its 12 */
	}
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
	if (lns) {
		bx = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
		memcpy(bx, start, sizeof(double) * (size_t)mip_ncols(ip->mip));
		int *owner = column_owners(ip);
		double share = whole ? mo.time_limit * PLACE_LNS_SHARE : mo.time_limit;
		bool uncompleted = false;
		better = ilp_improve(ip, o, owner, bx, share, whole ? mo.time_limit - share : 0, st, &uncompleted);
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
			mo.start = NULL;
		double spent = now_seconds() - t0, least = mo.time_limit * (1 - PLACE_LNS_SHARE);
		if (better < INFINITY) { /* its paths; CBC completes the rest (continuous values in a start crashed it) */
			double *sx = arena_array(ip->a, (size_t)mip_ncols(ip->mip) + 1, sizeof(double));
			for (int c = 0; c < mip_ncols(ip->mip); c++)
				sx[c] = owner[c] >= 0 ? round(bx[c]) : NAN;
			sx[ip->one] = 1;
			mo.start = sx;
		}
		mo.time_limit = mo.time_limit - spent > least ? mo.time_limit - spent : least;
		mo.no_preprocess = better < INFINITY; /* CglPreProcess crashed on such a start (densenet201 b64) */
		/*
		 * and without probing: after the neighbourhoods the whole program
		 * is solved for its bound, and one probing pass at its root took
		 * 6.8 s on densenet264 b32 at half its peak, past the time limit
		 * (CBC looks at the clock between passes), and moved no bound
		 */
		mo.no_probing = better < INFINITY;
		/*
		 * and stopped at its time limit wherever CBC is (MipOptions.deadline):
		 * with the neighbourhoods' solution in hand, it is solved for its bound
		 * and an improvement within the time asked for. Its root took 9-13 s
		 * past its limit on densenet264 b32 and densenet201 b64 at a quarter
		 * of their peaks (a heuristic, a pass of cuts): mo.deadline, below.
		 */
		whole = (whole && !st->lns_extended) || better == INFINITY;
	}
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
	    r->objective < better && (o->repair > 0 || r->time >= mo.time_limit / 20) && !packs(ip, o, r->x, NULL)) {
		/*
		 * Packed by first fit (auto's starts), the solution may still
		 * pack squeezed, as the optimizer alone packs it: kept beside
		 * the repaired one, which the search starts from. recompute's
		 * start for densenet201 b64 at a quarter of its peak: 100.114 ms
		 * squeezed, repaired to 100.689 ms to pack by first fit.
		 */
		keep_squeezed(ip, o, r->x, st);
		repair(ip, o, column_owners(ip), r,
		       o->start && o->repair == 0 ? fmin(better, placement_predict(o->start, o->cm, NULL) * US) : better,
		       reserve ? fmax(end - now_seconds(), 1) : fmax(mo.time_limit / 4, 1), st);
	}
	if (ran && better < INFINITY &&
	    !((r->status == MIP_OPTIMAL || r->status == MIP_FEASIBLE) && r->objective <= better && packs(ip, o, r->x, NULL))) {
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
		set_objective(r, better, bound);
		r->x = xmalloc(sizeof(double) * (size_t)(mip_ncols(ip->mip) + 1));
		memcpy(r->x, bx, sizeof(double) * (size_t)mip_ncols(ip->mip));
	}
	if (ran && better < INFINITY)
		r->time = now_seconds() - t0;
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
	switch (r->status) {
	case MIP_OPTIMAL:
	case MIP_FEASIBLE:
		st->objective = r->objective / US;
		st->bound = r->bound / US;
		st->gap = r->gap;
		return true;
	case MIP_INFEASIBLE:
		if (o->kernels_fast || o->step_limit)
			/* the limit is above st->min_limit (place_ilp), which is then only a lower bound */
			snprintf(err, errlen,
			         "the fast-tier limit %s is infeasible%s: the solver proved that no %s placement fits under it "
			         "(the tensors every step must hold alone need %s)%s",
			         fmt_bytes(o->limit, b1, sizeof b1),
			         tightened(ip->s, o) ? " after tightening for fragmentation" : "",
			         optimizer_info[o->optimizer].name, fmt_bytes(st->min_limit, b2, sizeof b2),
			         nothing_moves(o->optimizer, b3, sizeof b3));
		else
			snprintf(err, errlen, "the fast-tier limit %s is infeasible: the smallest feasible limit is %" PRId64
			         " bytes (%s)", fmt_bytes(o->limit, b1, sizeof b1), st->min_limit,
			         fmt_bytes(st->min_limit, b2, sizeof b2));
		break;
	case MIP_NO_SOLUTION:
		st->bound = r->bound > 0 ? r->bound / US : 0; /* what it proved, for a start returned instead */
		st->gap = 1;
		snprintf(err, errlen, "the %s solver found no placement within its time limit of %g s",
		         o->solver ? o->solver : "cbc", mo.time_limit);
		break;
	case MIP_ERROR:
		snprintf(err, errlen, "the %s solver failed on the placement problem", o->solver ? o->solver : "cbc");
		break;
	}
	mip_result_free(r);
	return false;
}

/* The placement of the solution x: every tensor's path, each kernel's algorithm, the moves in order. */
static Placement *ilp_extract(const Ilp *ip, const PlaceOptions *o, const double *x, Arena *a)
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
			if (on(x, ip->algo_col[k] + i))
				p->algo[k] = &al[i];
		if (!p->algo[k])
			ICE("no algorithm chosen for %s", s->order[k]->name);
		p->ws_in_pool = true;
	}
	placement_finish(p);
	return p;
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
	bool offload = offload_on(o);
	st->min_limit = forced_bytes(g, s, o->kernels_fast, offload, o->tiny == 0 ? PLACE_TINY : o->tiny, forced);
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

/* ------------------------------------------------- a start with swaps */

/* One gap of a tensor between two anchors, which a spanning write (or a drop) and a spanning read can free. */
typedef struct Gap {
	int id;            /* tensor */
	int a, b;          /* its anchors (point indices) */
	int w;             /* the point a write is issued at */
	int wi, r;         /* chosen: the write's length index and the read's point */
	int free, until;   /* chosen: fast bytes saved over steps free..until-1 */
	bool on;
} Gap;
typedef VEC(Gap) GapVec;
typedef VEC(int) StepVec;

/* The gaps of f: between consecutive anchors with a write and a read that can span them. */
static void find_gaps(const Ilp *ip, const Flow *f, int id, GapVec *out)
{
	if (f->forced || f->persistent || f->m < 2)
		return;
	bool produced = f->t->producer != NULL;
	for (int a = 0; a < f->m; a++) {
		if (!f->pt[a].anchor)
			continue;
		int b = a + 1;
		while (b < f->m && !f->pt[b].anchor)
			b++;
		if (b == f->m)
			break;
		int w = a == 0 && produced ? 1 : a;
		if (w < b && f->pt[w].nswrite > 0)
			vec_push(ip->a, out, ((Gap){id, a, b, w, -1, -1, 0, 0, false}));
	}
}

/* Copy-engine time left during kernels lo..hi-1 (us): their all-fast time less what is charged there. */
static double room(const Ilp *ip, const double *load, int lo, int hi)
{
	double r = 0;
	for (int k = lo; k < hi; k++)
		r += fmax(0, ip->omega[k] * US - load[k]);
	return r;
}

/*
 * The write and read of gap g with the engines loaded as they are, such
 * that the fast copy is gone at kernel `worst`: the shortest write whose
 * time fits what its engine has left over its span, else the longest
 * that ends by `worst`; the latest read that fits, else the earliest,
 * starting after `worst`. A gap chosen before is planned again only
 * where it does not free `worst` yet, so that what it frees only grows.
 * False if there is no such plan.
 */
static bool plan_gap(const Ilp *ip, Gap *g, const double *load_in, const double *load_out, double wus, double rus,
                     int worst)
{
	const Flow *f = &ip->flow[g->id];
	const Point *w = &f->pt[g->w];
	if (!g->on || g->free > worst) {
		int wi = -1;
		for (int i = 0; i < w->nswrite && wi < 0; i++)
			if (w->step + w->swrite_len[i] <= worst &&
			    room(ip, load_out, w->step, w->step + w->swrite_len[i]) >= wus)
				wi = i;
		for (int i = 0; i < w->nswrite && wi < 0; i++)
			if (w->step + w->swrite_len[i] <= worst &&
			    (i + 1 == w->nswrite || w->step + w->swrite_len[i + 1] > worst))
				wi = i;
		if (wi < 0)
			return false;
		g->wi = wi;
		g->free = w->step + w->swrite_len[wi];
	}
	if (!g->on || g->until <= worst) {
		int r = -1, first = -1;
		for (int j = g->b - 1; j > g->w && f->pt[j].step > worst; j--) {
			const Point *p = &f->pt[j];
			if (p->sread < 0 || p->sread_to != g->b || j < w->swrite_to[g->wi] || p->step < g->free)
				continue;
			first = j;
			if (r < 0 && room(ip, load_in, p->step, f->pt[g->b].step) >= rus)
				r = j;
		}
		if (r < 0)
			r = first;
		if (r < 0)
			return false;
		g->r = r;
		g->until = f->pt[r].step;
	}
	return g->free <= worst && worst < g->until && g->r >= w->swrite_to[g->wi];
}

/* Charge us over kernels lo..hi-1 as charge_span does. */
static void load_span(const Ilp *ip, double *load, double us, int lo, int hi)
{
	double sh[PLACE_MAX_SPAN];
	span_shares(ip, lo, hi, sh);
	for (int k = lo; k < hi; k++)
		load[k] += us * sh[k - lo];
}

/* Add (sign 1) or take back (-1) gap g's moves on the engines and the fast bytes it frees. */
static void apply_gap(const Ilp *ip, const Gap *g, double sign, double *live, double *load_in, double *load_w)
{
	const Flow *f = &ip->flow[g->id];
	const Point *w = &f->pt[g->w];
	const CostModel *cm = ip->cm;
	load_span(ip, load_w, sign * cm->move_time(cm, f->t->bytes, TIER_FAST, TIER_SLOW, true) * US, w->step,
	          w->step + w->swrite_len[g->wi]);
	load_span(ip, load_in, sign * cm->move_time(cm, f->t->bytes, TIER_SLOW, TIER_FAST, true) * US, g->until,
	          f->pt[g->b].step);
	for (int k = g->free; k < g->until; k++)
		live[k] -= sign * (double)f->size;
}

/* x: f's path with its chosen gaps (written out at the first, dropped at the others); false (x untouched) if
   the program lacks an edge of it. */
static bool swap_path(const Flow *f, const Gap *g, int ng, double *x)
{
	int cur = V_PRE, col[4 * 64];
	int nc = 0;
	bool written = false;
#define SET(c) do { if ((c) < 0 || nc == (int)countof(col)) return false; col[nc++] = (c); } while (0)
	SET(f->src[V_PRE]);
	for (int j = 0; j < f->m; j++) {
		const Point *pt = &f->pt[j];
		const Gap *gp = NULL;
		for (int i = 0; i < ng; i++)
			if (g[i].on && ((!written && g[i].w == j) || (written && g[i].a == j) || g[i].r == j))
				gp = &g[i];
		if (gp && cur == V_PRE && gp->w == j) {
			SET(pt->swrite[gp->wi]);
			written = true;
			cur = V_SLOW;
			j = pt->swrite_to[gp->wi] - 1;
		} else if (gp && cur == V_SLOW && gp->r == j) {
			SET(pt->sread);
			cur = V_COPY;
			j = pt->sread_to - 1;
		} else if (gp && cur == V_COPY && gp->a == j) {
			SET(pt->drop);
			cur = V_SLOW;
		} else if (j < f->m - 1 || pt->keep[cur] >= 0) {
			SET(pt->keep[cur]);
		}
	}
#undef SET
	for (int i = 0; i < nc; i++)
		x[col[i]] = 1;
	return true;
}

/*
 * The fast MiB the capacity rows count at each step for plan x (flow
 * columns only; the reuse columns at 1 where both tensors are held, as
 * build_reuse bounds them): D_s, and at a boundary with write-outs the
 * bytes held there beside the step's outputs, the larger.
 */
static void plan_fast_mib(const Ilp *ip, const double *x, double *mib)
{
	double d = 0;
	for (int st = 0; st < ip->s->n; st++) {
		const TermVec *c = &ip->cap[st];
		d += (st > 0 ? ip->reuse_mib[st - 1] : 0) - ip->reuse_mib[st];
		for (int i = 0; i < c->n; i++)
			d += c->v[i].coef * on(x, c->v[i].col);
		double w = d + ip->reuse_mib[st];
		const TermVec *wo = &ip->writeout[st];
		for (int i = 0; i < wo->n; i++)
			w += wo->v[i].coef * on(x, wo->v[i].col);
		const Node *nd = ip->s->order[st];
		for (int k = 0; k < nd->nout; k++)
			w -= ip->flow[nd->out[k]->id].mib * on(x, ip->flow[nd->out[k]->id].src[V_PRE]);
		mib[st] = w > d ? w : d;
	}
}

/* The least workspace (bytes) any of node n's algorithms needs; 0 without algorithms. */
static double least_workspace(const Ilp *ip, const Node *n)
{
	const KernelAlgo *al;
	int na = kernel_algos(ip, n, &al);
	double w = na > 0 ? INFINITY : 0;
	for (int i = 0; i < na; i++)
		w = fmin(w, (double)memplan_round(al[i].workspace));
	return w;
}

/* Whether gap g keeps fast every tensor at the steps where base's recomputes read it (need: tensor -> steps). */
static bool gap_clear(const Ilp *ip, const Gap *g, const StepVec *need)
{
	int lo = g->free, hi = ip->flow[g->id].pt[g->b].step; /* not fast until the read arrives */
	for (int i = 0; i < need[g->id].n; i++)
		if (need[g->id].v[i] >= lo && need[g->id].v[i] < hi)
			return false;
	return true;
}

/* A move of an offloaded tensor: us microseconds on the write (out) or read engine over kernels lo..hi-1. */
typedef struct OffloadMove {
	bool out;
	double us;
	int lo, hi;
} OffloadMove;

/* A persistent tensor's path from a slow home (plan_offload): its columns, and its moves on the engines. */
typedef struct Offload {
	VEC(int) col;
	int nmove;
	OffloadMove move[2 * 64];
} Offload;

/* Whether one of the columns of e is 1 in x. */
static bool sum_on(const ColSum *e, const double *x)
{
	for (int i = 0; i < e->n; i++)
		if (on(x, e->col[i]))
			return true;
	return false;
}

/*
 * A path for offloadable f from a slow home (auto's offloading, which the
 * program offers it): before each anchor that must be fast, the latest
 * spanning read that fits what the read engine has left, else the
 * longest, else a read before the anchor's kernel; after it, dropped
 * where a spanning read can bring it back before the next, else kept; at
 * its update, the fast copy is updated (dirty) and written back by the
 * shortest spanning write that fits, else the longest, else after the
 * update's kernel. False where a column is missing (f stays fast).
 */
static bool plan_offload(const Ilp *ip, const Flow *f, const double *load_in, const double *load_w, Offload *out,
                         Arena *a)
{
	out->col.n = 0;
	out->nmove = 0;
	if (!f->offload || f->src[V_SLOW] < 0 || f->m < 2 || f->pt[0].user)
		return false;
	const CostModel *cm = ip->cm;
	double rus = cm->move_time(cm, f->t->bytes, TIER_SLOW, TIER_FAST, true) * US;
	double wus = cm->move_time(cm, f->t->bytes, TIER_FAST, TIER_SLOW, true) * US;
#define ADD(c) do { if ((c) < 0) return false; vec_push(a, &out->col, (c)); } while (0)
#define MOVE(o, u, l, h) do { if (out->nmove == (int)countof(out->move)) return false; \
		out->move[out->nmove++] = (OffloadMove){o, u, l, h}; } while (0)
	ADD(f->src[V_SLOW]);
	int j = 0, cur = V_SLOW;
	while (j < f->m) {
		const Point *p = &f->pt[j];
		if (cur == V_SLOW) {
			int y = j; /* the next anchor it must be fast at */
			while (y < f->m && !(f->pt[y].anchor && y > 0 && (y < f->m - 1 || f->pt[y].user)))
				y++;
			if (y == f->m) { /* nothing more to read it for */
				for (; j < f->m; j++)
					if (j < f->m - 1 || f->pt[j].keep[V_SLOW] >= 0)
						ADD(f->pt[j].keep[V_SLOW]);
				break;
			}
			int r = -1, longest = -1;
			for (int i = y - 1; i >= j; i--) {
				if (f->pt[i].sread < 0 || f->pt[i].sread_to != y)
					continue;
				longest = i;
				if (r < 0 && room(ip, load_in, f->pt[i].step, f->pt[y].step) >= rus)
					r = i;
			}
			if (r < 0)
				r = longest;
			if (r >= 0) {
				for (; j < r; j++)
					ADD(f->pt[j].keep[V_SLOW]);
				ADD(f->pt[r].sread);
				MOVE(false, rus, f->pt[r].step, f->pt[y].step);
			} else {
				for (; j < y; j++)
					ADD(f->pt[j].keep[V_SLOW]);
				ADD(f->pt[y].read);
			}
			j = y;
			cur = V_COPY;
		} else if (cur == V_COPY && p->overwrite) {
			ADD(p->dirty); /* updated in the fast copy, then written back */
			int w = -1, wi = -1;
			for (int i = j; i < f->m && w < 0 && (i == j || !f->pt[i].anchor); i++)
				if (f->pt[i].nswrite > 0)
					w = i;
			for (int i = 0; w >= 0 && i < f->pt[w].nswrite; i++)
				if (wi < 0 && room(ip, load_w, f->pt[w].step, f->pt[w].step + f->pt[w].swrite_len[i]) >= wus)
					wi = i;
			if (w >= 0 && wi < 0)
				wi = f->pt[w].nswrite - 1;
			if (w >= 0) {
				for (; j < w; j++)
					ADD(f->pt[j].keep[V_PRE]);
				ADD(f->pt[w].swrite[wi]);
				MOVE(true, wus, f->pt[w].step, f->pt[w].step + f->pt[w].swrite_len[wi]);
				j = f->pt[w].swrite_to[wi];
			} else {
				ADD(p->write);
				j++;
			}
			cur = V_SLOW;
		} else if (cur == V_COPY) {
			int y = j + 1; /* the next anchor */
			while (y < f->m && !f->pt[y].anchor)
				y++;
			bool back = false; /* a spanning read can bring it back before it */
			for (int i = j + 1; i < y && y < f->m && !back; i++)
				back = f->pt[i].sread >= 0 && f->pt[i].sread_to == y;
			if (p->drop >= 0 && (back || y >= f->m - 1) && !(y == f->m - 1 && f->pt[y].user)) {
				ADD(p->drop);
				j++;
				cur = V_SLOW;
			} else {
				for (; j < y; j++)
					ADD(f->pt[j].keep[V_COPY]);
			}
		} else {
			return false;
		}
	}
#undef ADD
#undef MOVE
	return cur == V_SLOW;
}

/* A gap's place in the greedy's order: its tensor's size, largest first, then its index. */
typedef struct GapKey {
	int64_t size;
	int i;
} GapKey;

static int cmp_gap_key(const void *x, const void *y)
{
	const GapKey *a = x, *b = y;
	return a->size != b->size ? (a->size < b->size) - (a->size > b->size) : (a->i > b->i) - (a->i < b->i);
}

/* The greedy's offloading (place_ilp_swaps): what may be offloaded, largest first, and what is. */
typedef struct Offloads {
	GapKey *cand;      /* the offloadable tensors, by size, largest first */
	int ncand;
	bool *on;          /* tensor -> offloaded */
	StepVec *col;      /* tensor -> its path's columns */
	Offload *trial, *pick;
	double *x;         /* the program's columns, all 0 between calls */
	int n;             /* offloaded */
} Offloads;

/*
 * Offload the largest tensor of of->cand whose path (plan_offload, with
 * the engines loaded as they are) frees step `worst`: its columns kept,
 * its moves on the engines, the steps it frees taken off live. False if
 * none does.
 */
static bool offload_one(const Ilp *ip, Offloads *of, int worst, double *live, double *load_in, double *load_w,
                        Arena *a)
{
	int oid = -1;
	for (int oi = 0; oi < of->ncand && oid < 0; oi++) {
		int i = of->cand[oi].i;
		const Flow *f = &ip->flow[i];
		if (of->on[i] || f->first > worst || f->last < worst || !plan_offload(ip, f, load_in, load_w, of->trial, a))
			continue;
		for (int k = 0; k < of->trial->col.n; k++)
			of->x[of->trial->col.v[k]] = 1;
		ColSum e = fast_at(f, worst);
		bool frees = !sum_on(&e, of->x);
		for (int k = 0; k < of->trial->col.n; k++)
			of->x[of->trial->col.v[k]] = 0;
		if (frees) {
			oid = i;
			Offload *t = of->pick;
			of->pick = of->trial, of->trial = t;
		}
	}
	if (oid < 0)
		return false;
	const Flow *f = &ip->flow[oid];
	const Offload *pk = of->pick;
	of->on[oid] = true;
	for (int k = 0; k < pk->col.n; k++) {
		vec_push(a, &of->col[oid], pk->col.v[k]);
		of->x[pk->col.v[k]] = 1;
	}
	for (int k = f->first; k <= f->last; k++) {
		ColSum e = fast_at(f, k);
		if (!sum_on(&e, of->x))
			live[k] -= (double)f->size;
	}
	for (int k = 0; k < pk->col.n; k++)
		of->x[pk->col.v[k]] = 0;
	for (int k = 0; k < pk->nmove; k++)
		load_span(ip, pk->move[k].out ? load_w : load_in, pk->move[k].us, pk->move[k].lo, pk->move[k].hi);
	of->n++;
	return true;
}

Placement *place_ilp_swaps(const Graph *g, const Schedule *s, const PlaceOptions *o, double margin,
                           const Placement *base, bool *stuck, Arena *a)
{
	*stuck = false;
	int n = s->n;
	PlaceOptions so = *o;
	so.optimizer = OPT_AUTO;
	so.start = base; /* its recomputes are recompute points of the program */
	double *limit_mib = arena_array(a, (size_t)n + 1, sizeof(double));
	for (int i = 0; i < n; i++)
		limit_mib[i] = (double)o->limit / MIB;
	Ilp ip;
	PlaceStats st;
	ilp_build(&ip, g, s, &so, limit_mib, a, &st);
	int ncol = mip_ncols(ip.mip);
	mip_free(ip.mip);
	ip.mip = NULL;
	if (ip.span <= 0)
		return NULL;
	/* all fast, then the largest tensor that frees the fullest step, until every step is under the target */
	double *live = arena_array(a, (size_t)n + 1, sizeof(double));
	double *load_in = arena_array(a, (size_t)n + 1, sizeof(double));
	double *load_out = arena_array(a, (size_t)n + 1, sizeof(double));
	double *load_w = ip.duplex ? load_out : load_in;
	/*
	 * With a base: the tensors it recomputes keep its plan (their fast
	 * copies, and the scratch of its chains at their boundaries); the
	 * others may be swapped, but not over a step where one of its
	 * recomputes reads them.
	 */
	bool *kept = arena_array(a, (size_t)g->tensors.n + 1, sizeof(bool));
	StepVec *need = arena_array(a, (size_t)g->tensors.n + 1, sizeof *need);
	for (int i = 0; base && i < base->recomputes.n; i++) {
		const Recompute *r = &base->recomputes.v[i];
		kept[r->t->id] = true;
		for (int k = 0; k < r->node->nin; k++)
			vec_push(a, &need[r->node->in[k]->id], r->at);
	}
	for (int i = 0; i < g->tensors.n; i++) {
		if (!kept[i]) {
			for (int k = ip.flow[i].first; k <= ip.flow[i].last; k++)
				live[k] += (double)ip.flow[i].size;
			continue;
		}
		for (int j = 0; j < base->of[i].n; j++) {
			const Residency *r = base->of[i].v[j];
			for (int k = r->first; r->tier == TIER_FAST && k <= r->last; k++)
				live[k] += (double)ip.flow[i].size;
		}
	}
	for (int i = 0; base && i < base->res.n; i++) /* scratch of tensors not recomputed themselves */
		if (base->res.v[i]->scratch && !kept[base->res.v[i]->t->id])
			live[base->res.v[i]->first] += (double)memplan_round(base->res.v[i]->t->bytes);
	for (int k = 0; k < n; k++) /* an output over its input (build_reuse): both fast there, at anchors */
		if (schedule_reuse(s, k))
			live[k] -= (double)ip.flow[s->order[k]->out[0]->id].size;
	GapVec gaps = {0};
	for (int i = 0; i < g->tensors.n; i++)
		if (!kept[i])
			find_gaps(&ip, &ip.flow[i], i, &gaps); /* none for a tensor of one point */
	/*
	 * Each step's target: margin x the limit, less the least workspace
	 * its region's column must hold (the largest of the smallest
	 * workspaces of the kernels run there, recomputes included), which
	 * the capacity rows add to the step's bytes.
	 */
	const CostModel *cm = o->cm;
	int nreg = ip.region[n] + 1;
	double *wmin = arena_array(a, (size_t)nreg + 1, sizeof(double));
	double *target = arena_array(a, (size_t)n + 1, sizeof(double));
	for (int k = 0; k < n; k++)
		wmin[ip.region[k]] = fmax(wmin[ip.region[k]], least_workspace(&ip, s->order[k]));
	for (int i = 0; base && i < base->recomputes.n; i++)
		wmin[ip.region[base->recomputes.v[i].at]] =
			fmax(wmin[ip.region[base->recomputes.v[i].at]], least_workspace(&ip, base->recomputes.v[i].node));
	for (int k = 0; k < n; k++)
		target[k] = margin * (double)o->limit - wmin[ip.region[k]];
	/* weights and optimizer state offloaded where no gap frees a step */
	double *x = arena_array(a, (size_t)ncol + 1, sizeof(double));
	Offloads of = {.on = arena_array(a, (size_t)g->tensors.n + 1, sizeof(bool)),
	               .col = arena_array(a, (size_t)g->tensors.n + 1, sizeof(StepVec)),
	               .trial = arena_array(a, 1, sizeof(Offload)), .pick = arena_array(a, 1, sizeof(Offload)), .x = x};
	GapKey *by_size = arena_array(a, (size_t)gaps.n + 1, sizeof(GapKey));
	for (int i = 0; i < gaps.n; i++)
		by_size[i] = (GapKey){ip.flow[gaps.v[i].id].size, i};
	qsort(by_size, (size_t)gaps.n, sizeof(GapKey), cmp_gap_key);
	of.cand = arena_array(a, (size_t)g->tensors.n + 1, sizeof(GapKey));
	for (int i = 0; i < g->tensors.n; i++)
		if (!kept[i] && need[i].n == 0 && ip.flow[i].offload)
			of.cand[of.ncand++] = (GapKey){ip.flow[i].size, i};
	qsort(of.cand, (size_t)of.ncand, sizeof(GapKey), cmp_gap_key);
	for (;;) {
		int worst = 0;
		for (int k = 1; k < n; k++)
			if (live[k] - target[k] > live[worst] - target[worst])
				worst = k;
		if (live[worst] <= target[worst])
			break;
		int best = -1;
		Gap pick = {0};
		for (int oi = 0; oi < gaps.n && best < 0; oi++) { /* the largest that plans: the first, by size */
			int i = by_size[oi].i;
			Gap gp = gaps.v[i];
			const Flow *f = &ip.flow[gp.id];
			if ((gp.on && gp.free <= worst && worst < gp.until) || f->pt[gp.a].step > worst ||
			    f->pt[gp.b].step <= worst)
				continue;
			double wus = cm->move_time(cm, f->t->bytes, TIER_FAST, TIER_SLOW, true) * US;
			double rus = cm->move_time(cm, f->t->bytes, TIER_SLOW, TIER_FAST, true) * US;
			if (plan_gap(&ip, &gp, load_in, load_w, wus, rus, worst) && gap_clear(&ip, &gp, need)) {
				best = i;
				pick = gp;
			}
		}
		if (best < 0) {
			if (!offload_one(&ip, &of, worst, live, load_in, load_w, a)) {
				*stuck = true;
				return NULL;
			}
			continue;
		}
		/* a gap chosen before for a later step is planned again to free this one too */
		if (gaps.v[best].on)
			apply_gap(&ip, &gaps.v[best], -1, live, load_in, load_w);
		pick.on = true;
		gaps.v[best] = pick;
		apply_gap(&ip, &pick, 1, live, load_in, load_w);
	}
	int most = 0;
	for (int i = 0; i < g->tensors.n; i++)
		if (ip.flow[i].m > most)
			most = ip.flow[i].m;
	int *cols = arena_array(a, (size_t)(3 * most + 2), sizeof(int));
	for (int i = 0, j = 0; i < g->tensors.n; i++) {
		if (kept[i]) {
			if (!start_flow(&ip.flow[i], base, x, cols)) {
				*stuck = true; /* the program cannot express its recomputes, at any margin */
				return NULL;
			}
			continue;
		}
		if (of.on[i]) {
			for (int k = 0; k < of.col[i].n; k++)
				x[of.col[i].v[k]] = 1;
			continue;
		}
		int k = j;
		while (k < gaps.n && gaps.v[k].id == i)
			k++;
		if (!swap_path(&ip.flow[i], gaps.v + j, k - j, x)) /* all fast */
			swap_path(&ip.flow[i], NULL, 0, x);
		j = k;
	}
	x[ip.one] = 1;
	/* the program's own count (the greedy's differs: transit, write-outs, reuse) must fit beside the workspaces */
	for (int k = 0; k < n; k++) { /* an output over its input where both are held there, as the solver would */
		if (ip.reuse_col[k] < 0)
			continue;
		ColSum in = held_at(&ip.flow[schedule_reuse(s, k)->id], k), out = held_at(&ip.flow[s->order[k]->out[0]->id], k);
		x[ip.reuse_col[k]] = sum_on(&in, x) && sum_on(&out, x);
	}
	double *mib = arena_array(a, (size_t)n + 1, sizeof(double));
	plan_fast_mib(&ip, x, mib);
	for (int k = 0; k < n; k++)
		if (mib[k] + wmin[ip.region[k]] / MIB > limit_mib[k])
			return NULL;
	/* each kernel's fastest algorithm: cm->algos lists it first */
	for (int k = 0; k < n; k++)
		if (ip.algo_col[k] >= 0)
			x[ip.algo_col[k]] = 1;
	Placement *p = ilp_extract(&ip, &so, x, a);
	char err[256];
	if (!placement_verify(g, p, err, sizeof err))
		ICE("the swap start is inconsistent: %s", err);
	if (of.n > 0 && place_solver_log())
		fprintf(stderr, "start: swaps with %d weights and optimizer state offloaded\n", of.n);
	return p;
}
