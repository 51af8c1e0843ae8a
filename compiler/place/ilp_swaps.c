/*
 * ilp_swaps.c - a start for the placement's program with swaps: a greedy
 * that frees the steps above the limit by writing activations out over
 * their gaps and reading them back (and, where no gap frees a step,
 * offloading weights and optimizer state), planned on the copy engines,
 * as columns of the program (place_ilp_swaps).
 */
#include "ilp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memplan.h"
#include "util.h"

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
	ilp_span_shares(ip, lo, hi, sh);
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
			d += c->v[i].coef * ilp_on(x, c->v[i].col);
		double w = d + ip->reuse_mib[st];
		const TermVec *wo = &ip->writeout[st];
		for (int i = 0; i < wo->n; i++)
			w += wo->v[i].coef * ilp_on(x, wo->v[i].col);
		const Node *nd = ip->s->order[st];
		for (int k = 0; k < nd->nout; k++)
			w -= ip->flow[nd->out[k]->id].mib * ilp_on(x, ip->flow[nd->out[k]->id].src[V_PRE]);
		mib[st] = w > d ? w : d;
	}
}

/* The least workspace (bytes) any of node n's algorithms needs; 0 without algorithms. */
static double least_workspace(const Ilp *ip, const Node *n)
{
	const KernelAlgo *al;
	int na = ilp_kernel_algos(ip, n, &al);
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
		if (ilp_on(x, e->col[i]))
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
		ColSum e = ilp_fast_at(f, worst);
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
		ColSum e = ilp_fast_at(f, k);
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

/* The greedy's state: the program's networks, what it keeps of a base, the bytes and loads per step, the gaps. */
typedef struct Swaps {
	Ilp ip;
	const Graph *g;
	const Schedule *s;
	const Placement *base;
	Arena *a;
	bool *kept;        /* tensor -> its base's recomputes keep their plan */
	StepVec *need;     /* tensor -> steps where a base's recompute reads it */
	double *live;      /* step -> bytes fast there */
	double *load_in, *load_w; /* step -> the copy engines' loads (one array where they are one engine) */
	double *wmin;      /* region -> the least workspace its column must hold */
	double *target;    /* step -> the bytes it may hold */
	GapVec gaps;
	Offloads of;
	double *x;         /* the plan's columns */
} Swaps;

/*
 * All fast, but with a base the tensors it recomputes keep its plan
 * (their fast copies, and the scratch of its chains at their
 * boundaries); the others may be swapped, but not over a step where one
 * of its recomputes reads them. The bytes fast at each step into live.
 */
static void swaps_live(Swaps *w)
{
	const Graph *g = w->g;
	const Placement *base = w->base;
	const Ilp *ip = &w->ip;
	for (int i = 0; base && i < base->recomputes.n; i++) {
		const Recompute *r = &base->recomputes.v[i];
		w->kept[r->t->id] = true;
		for (int k = 0; k < r->node->nin; k++)
			vec_push(w->a, &w->need[r->node->in[k]->id], r->at);
	}
	for (int i = 0; i < g->tensors.n; i++) {
		if (!w->kept[i]) {
			for (int k = ip->flow[i].first; k <= ip->flow[i].last; k++)
				w->live[k] += (double)ip->flow[i].size;
			continue;
		}
		for (int j = 0; j < base->of[i].n; j++) {
			const Residency *r = base->of[i].v[j];
			for (int k = r->first; r->tier == TIER_FAST && k <= r->last; k++)
				w->live[k] += (double)ip->flow[i].size;
		}
	}
	for (int i = 0; base && i < base->res.n; i++) /* scratch of tensors not recomputed themselves */
		if (base->res.v[i]->scratch && !w->kept[base->res.v[i]->t->id])
			w->live[base->res.v[i]->first] += (double)memplan_round(base->res.v[i]->t->bytes);
	for (int k = 0; k < w->s->n; k++) /* an output over its input (build_reuse): both fast there, at anchors */
		if (schedule_reuse(w->s, k))
			w->live[k] -= (double)ip->flow[w->s->order[k]->out[0]->id].size;
}

/*
 * Each step's target: margin x the limit, less the least workspace its
 * region's column must hold (the largest of the smallest workspaces of
 * the kernels run there, recomputes included), which the capacity rows
 * add to the step's bytes.
 */
static void swaps_targets(Swaps *w, int64_t limit, double margin)
{
	const Ilp *ip = &w->ip;
	const Placement *base = w->base;
	int n = w->s->n;
	w->wmin = arena_array(w->a, (size_t)ip->region[n] + 2, sizeof(double));
	w->target = arena_array(w->a, (size_t)n + 1, sizeof(double));
	for (int k = 0; k < n; k++)
		w->wmin[ip->region[k]] = fmax(w->wmin[ip->region[k]], least_workspace(ip, w->s->order[k]));
	for (int i = 0; base && i < base->recomputes.n; i++)
		w->wmin[ip->region[base->recomputes.v[i].at]] =
			fmax(w->wmin[ip->region[base->recomputes.v[i].at]], least_workspace(ip, base->recomputes.v[i].node));
	for (int k = 0; k < n; k++)
		w->target[k] = margin * (double)limit - w->wmin[ip->region[k]];
}

/* The offload candidates: weights and optimizer state that no base keeps or reads, largest first. */
static void swaps_offloads(Swaps *w, int ncol)
{
	const Graph *g = w->g;
	w->x = arena_array(w->a, (size_t)ncol + 1, sizeof(double));
	w->of = (Offloads){.on = arena_array(w->a, (size_t)g->tensors.n + 1, sizeof(bool)),
	                   .col = arena_array(w->a, (size_t)g->tensors.n + 1, sizeof(StepVec)),
	                   .trial = arena_array(w->a, 1, sizeof(Offload)), .pick = arena_array(w->a, 1, sizeof(Offload)),
	                   .x = w->x};
	w->of.cand = arena_array(w->a, (size_t)g->tensors.n + 1, sizeof(GapKey));
	for (int i = 0; i < g->tensors.n; i++)
		if (!w->kept[i] && w->need[i].n == 0 && w->ip.flow[i].offload)
			w->of.cand[w->of.ncand++] = (GapKey){w->ip.flow[i].size, i};
	qsort(w->of.cand, (size_t)w->of.ncand, sizeof(GapKey), cmp_gap_key);
}

/*
 * The largest tensor that frees the fullest step, until every step is
 * under its target; where no gap frees it, a weight or optimizer state
 * offloaded. False where neither can (stuck).
 */
static bool swaps_plan(Swaps *w, const CostModel *cm)
{
	Ilp *ip = &w->ip;
	GapVec *gaps = &w->gaps;
	int n = w->s->n;
	GapKey *by_size = arena_array(w->a, (size_t)gaps->n + 1, sizeof(GapKey));
	for (int i = 0; i < gaps->n; i++)
		by_size[i] = (GapKey){ip->flow[gaps->v[i].id].size, i};
	qsort(by_size, (size_t)gaps->n, sizeof(GapKey), cmp_gap_key);
	for (;;) {
		int worst = 0;
		for (int k = 1; k < n; k++)
			if (w->live[k] - w->target[k] > w->live[worst] - w->target[worst])
				worst = k;
		if (w->live[worst] <= w->target[worst])
			return true;
		int best = -1;
		Gap pick = {0};
		for (int oi = 0; oi < gaps->n && best < 0; oi++) { /* the largest that plans: the first, by size */
			int i = by_size[oi].i;
			Gap gp = gaps->v[i];
			const Flow *f = &ip->flow[gp.id];
			if ((gp.on && gp.free <= worst && worst < gp.until) || f->pt[gp.a].step > worst ||
			    f->pt[gp.b].step <= worst)
				continue;
			double wus = cm->move_time(cm, f->t->bytes, TIER_FAST, TIER_SLOW, true) * US;
			double rus = cm->move_time(cm, f->t->bytes, TIER_SLOW, TIER_FAST, true) * US;
			if (plan_gap(ip, &gp, w->load_in, w->load_w, wus, rus, worst) && gap_clear(ip, &gp, w->need)) {
				best = i;
				pick = gp;
			}
		}
		if (best < 0) {
			if (!offload_one(ip, &w->of, worst, w->live, w->load_in, w->load_w, w->a))
				return false;
			continue;
		}
		/* a gap chosen before for a later step is planned again to free this one too */
		if (gaps->v[best].on)
			apply_gap(ip, &gaps->v[best], -1, w->live, w->load_in, w->load_w);
		pick.on = true;
		gaps->v[best] = pick;
		apply_gap(ip, &pick, 1, w->live, w->load_in, w->load_w);
	}
}

/* The plan's columns: the base's paths, the offloads, the swaps (else all fast). False where a base's cannot be. */
static bool swaps_columns(Swaps *w)
{
	const Ilp *ip = &w->ip;
	const Graph *g = w->g;
	double *x = w->x;
	int most = 0;
	for (int i = 0; i < g->tensors.n; i++)
		if (ip->flow[i].m > most)
			most = ip->flow[i].m;
	int *cols = arena_array(w->a, (size_t)(3 * most + 2), sizeof(int));
	for (int i = 0, j = 0; i < g->tensors.n; i++) {
		if (w->kept[i]) {
			if (!ilp_start_flow(&ip->flow[i], w->base, x, cols))
				return false; /* the program cannot express its recomputes, at any margin */
			continue;
		}
		if (w->of.on[i]) {
			for (int k = 0; k < w->of.col[i].n; k++)
				x[w->of.col[i].v[k]] = 1;
			continue;
		}
		int k = j;
		while (k < w->gaps.n && w->gaps.v[k].id == i)
			k++;
		if (!swap_path(&ip->flow[i], w->gaps.v + j, k - j, x)) /* all fast */
			swap_path(&ip->flow[i], NULL, 0, x);
		j = k;
	}
	x[ip->one] = 1;
	for (int k = 0; k < w->s->n; k++) { /* an output over its input where both are held there, as the solver would */
		if (ip->reuse_col[k] < 0)
			continue;
		ColSum in = ilp_held_at(&ip->flow[schedule_reuse(w->s, k)->id], k);
		ColSum out = ilp_held_at(&ip->flow[w->s->order[k]->out[0]->id], k);
		x[ip->reuse_col[k]] = sum_on(&in, x) && sum_on(&out, x);
	}
	/* each kernel's fastest algorithm: cm->algos lists it first */
	for (int k = 0; k < w->s->n; k++)
		if (ip->algo_col[k] >= 0)
			x[ip->algo_col[k]] = 1;
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
	Swaps w = {.g = g, .s = s, .base = base, .a = a};
	PlaceStats st;
	ilp_build(&w.ip, g, s, &so, limit_mib, a, &st);
	int ncol = mip_ncols(w.ip.mip);
	mip_free(w.ip.mip);
	w.ip.mip = NULL;
	if (w.ip.span <= 0)
		return NULL;
	w.live = arena_array(a, (size_t)n + 1, sizeof(double));
	w.load_in = arena_array(a, (size_t)n + 1, sizeof(double));
	w.load_w = w.ip.duplex ? arena_array(a, (size_t)n + 1, sizeof(double)) : w.load_in;
	w.kept = arena_array(a, (size_t)g->tensors.n + 1, sizeof(bool));
	w.need = arena_array(a, (size_t)g->tensors.n + 1, sizeof *w.need);
	swaps_live(&w);
	for (int i = 0; i < g->tensors.n; i++)
		if (!w.kept[i])
			find_gaps(&w.ip, &w.ip.flow[i], i, &w.gaps); /* none for a tensor of one point */
	swaps_targets(&w, o->limit, margin);
	swaps_offloads(&w, ncol);
	if (!swaps_plan(&w, o->cm) || !swaps_columns(&w)) {
		*stuck = true;
		return NULL;
	}
	/* the program's own count (the greedy's differs: transit, write-outs, reuse) must fit beside the workspaces */
	double *mib = arena_array(a, (size_t)n + 1, sizeof(double));
	plan_fast_mib(&w.ip, w.x, mib);
	for (int k = 0; k < n; k++)
		if (mib[k] + w.wmin[w.ip.region[k]] / MIB > limit_mib[k])
			return NULL;
	Placement *p = ilp_extract(&w.ip, &so, w.x, a);
	char err[256];
	if (!placement_verify(g, p, err, sizeof err))
		ICE("the swap start is inconsistent: %s", err);
	if (w.of.n > 0 && place_solver_log())
		fprintf(stderr, "start: swaps with %d weights and optimizer state offloaded\n", w.of.n);
	return p;
}
