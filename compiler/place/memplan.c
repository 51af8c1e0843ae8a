/*
 * memplan.c - memory planning: offsets from lifetimes and sizes.
 *
 * Each pool is one allocation; every residency placed in it gets a fixed
 * byte offset. Two residencies may share memory when their lifetimes do
 * not overlap. Lifetimes are intervals of time points: kernel s runs at
 * 2s and the boundary before it (where moves run) at 2s-1; a residency
 * read by a move lives until that boundary, one written by a move or a
 * recompute from it, and a recompute's scratch at that boundary only.
 *
 * An output that its kernel writes over a dying input (in place:
 * placement_reuses) has no block of its own: the input's block lives on
 * to the output's end and both get its offset.
 *
 * The packing is greedy first fit: each residency goes at the lowest
 * offset where it fits beside every already placed residency whose
 * lifetime overlaps its own, in each of a few orders (largest first, as
 * TensorFlow's and most DL compilers' planners; longest-lived first;
 * most byte-time first), and the order whose pool is smallest is kept.
 * The pool is as large as the highest end.
 * The lower bound is the peak of simultaneously live bytes; the report
 * prints both, and their ratio is the fragmentation.
 *
 * A placement made for a limit whose pool packs above it although its
 * live bytes stay below is packed again (squeeze): best fit (the
 * smallest gap that holds each residency), and the residencies that
 * reached above the limit go first in the next order, until the pool
 * fits or a number of passes is spent ("squeaky wheel" optimization,
 * Joslin and Clements, JAIR 1999). The passes are counted, not timed, so
 * the same placement always packs the same way.
 */
#include "memplan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct Block {
	Residency *r;  /* what is placed; NULL: a workspace */
	int64_t *out;  /* where its offset goes: &r->offset, or the workspace's slot */
	int key;       /* orders equals: the tensor's id, a workspace's after every tensor's */
	int t0, t1;    /* lifetime in time points */
	int64_t size;  /* bytes, rounded up to MEMPLAN_ALIGN */
	int i;         /* its index in the pool's blocks (pack) */
	int64_t fixed; /* its offset, placed before the others; -1: free */
	int lead;      /* an output written over its kernel's input: the residency id of the block whose memory
	                  it takes (it has no bytes of its own); -1 otherwise */
} Block;

/*
 * squeeze's passes: as many as MEMPLAN_SQUEEZE_WORK / n^2 (a pass over n
 * residencies is O(n^2)) within [MEMPLAN_SQUEEZE_MIN, MEMPLAN_SQUEEZE_MAX].
 * On inception_v3 b64 at half and a quarter of its peak (2000-2200 fast
 * residencies, about 2 ms a pass), 400 passes packed 42 of 67 plans that
 * the three orders left 0.01-1.6% above the limit, 100 passes 30.
 */
#define MEMPLAN_SQUEEZE_WORK 1e9
enum { MEMPLAN_SQUEEZE_MIN = 16, MEMPLAN_SQUEEZE_MAX = 400 };

int64_t memplan_round(int64_t bytes)
{
	return (bytes + MEMPLAN_ALIGN - 1) / MEMPLAN_ALIGN * MEMPLAN_ALIGN;
}

/* the largest first (TensorFlow's order), earlier ones first among equals */
static int by_size_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	if (!x->r != !y->r)
		return !x->r - !y->r; /* workspaces last: they live at one point, in the gaps */
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (x->t0 != y->t0)
		return x->t0 - y->t0;
	return x->key - y->key; /* deterministic */
}

/* the longest-lived first, the largest first among equals */
static int by_life_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	if (!x->r != !y->r)
		return !x->r - !y->r; /* workspaces last: they live at one point, in the gaps */
	if (x->t1 - x->t0 != y->t1 - y->t0)
		return (y->t1 - y->t0) - (x->t1 - x->t0);
	return by_size_desc(a, b);
}

/* the most byte-time first */
static int by_area_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	if (!x->r != !y->r)
		return !x->r - !y->r; /* workspaces last: they live at one point, in the gaps */
	double ax = (double)x->size * (x->t1 - x->t0 + 1), ay = (double)y->size * (y->t1 - y->t0 + 1);
	if (ax != ay)
		return ax < ay ? 1 : -1;
	return by_size_desc(a, b);
}

/* A block's name for messages: its tensor's, or which workspace. */
static const char *block_name(const Block *b)
{
	if (b->r)
		return b->r->t->name;
	return b->t0 % 2 ? "the workspace of recomputes" : "a kernel's workspace";
}

/*
 * Lifetimes in time points, widened by the moves that read and write each
 * residency; an output written over its kernel's dying input
 * (placement_reuses) takes the input's block, which then lives to the
 * output's end (the first of a chain of such outputs to the last's end).
 */
static void lifetimes(const Placement *p, Block *b, int n)
{
	for (int i = 0; i < n; i++) {
		b[i].r = p->res.v[i];
		b[i].out = &b[i].r->offset;
		b[i].key = b[i].r->t->id;
		b[i].fixed = -1;
		b[i].lead = -1;
		b[i].t0 = 2 * b[i].r->first;
		b[i].t1 = 2 * b[i].r->last;
		b[i].size = memplan_round(b[i].r->t->bytes);
	}
	for (int k = 0; k < p->moves.n; k++) {
		const Move *m = &p->moves.v[k];
		int issue = 2 * m->start - 1, done = 2 * m->at - 1;
		Block *from = &b[m->from->id], *to = &b[m->to->id];
		if (from->t1 < done)
			from->t1 = done;
		if (to->t0 > issue)
			to->t0 = issue;
	}
	/* a recompute writes at the boundary before `at`; scratch lives only there */
	for (int k = 0; k < p->recomputes.n; k++) {
		const Recompute *rc = &p->recomputes.v[k];
		int boundary = 2 * rc->at - 1;
		for (int i = rc->node->nin; i < rc->node->nin + rc->node->nout; i++) {
			Block *out = &b[rc->args[i]->id];
			if (out->t0 > boundary)
				out->t0 = boundary;
			if (rc->args[i]->scratch)
				out->t1 = boundary;
		}
	}
	const Residency **reused = xmalloc(sizeof *reused * (size_t)(n + 1));
	placement_reuses(p, reused);
	for (int i = 0; i < n; i++) {
		if (!reused[i])
			continue;
		int lead = reused[i]->id;
		while (reused[lead])
			lead = reused[lead]->id;
		b[i].lead = lead;
		b[i].size = 0;
		if (b[lead].t1 < b[i].t1)
			b[lead].t1 = b[i].t1;
	}
	free(reused);
}

/* The offsets of the outputs written over their inputs: their leads'. */
static void follow_leads(const Placement *p, const Block *all, int n)
{
	for (int i = 0; i < n; i++)
		if (all[i].lead >= 0)
			p->res.v[i]->offset = p->res.v[all[i].lead]->offset;
}

/*
 * The workspaces of p's algorithms as fast blocks (p->ws_in_pool): the
 * kernel's at its time point 2s, and at the boundary before it (2s-1)
 * the most any recompute there needs (they run one after another), their
 * offsets into kslot[s] and bslot[s] (NULL: not placed). Returns how many
 * blocks it wrote into b (at most 2 * p->s->n); the slots of the others
 * are the caller's to set (-1).
 */
static int ws_blocks(const Placement *p, Block *b, int64_t *kslot, int64_t *bslot)
{
	int n = p->s->n, m = 0;
	if (!p->ws_in_pool || !p->algo)
		return 0;
	for (int st = 0; st < n; st++) {
		int64_t ws = placement_kernel_ws(p, st), bws = placement_boundary_ws(p, st);
		if (ws > 0)
			b[m++] = (Block){NULL, kslot ? &kslot[st] : NULL, (1 << 30) + 2 * st, 2 * st, 2 * st, memplan_round(ws), 0, -1, -1};
		if (bws > 0)
			b[m++] = (Block){NULL, bslot ? &bslot[st] : NULL, (1 << 30) + 2 * st - 1, 2 * st - 1, 2 * st - 1,
			                 memplan_round(bws), 0, -1, -1};
	}
	return m;
}

static int64_t align_up(int64_t o, int64_t align)
{
	return (o + align - 1) / align * align;
}

/* A residency's offset is a multiple of MEMPLAN_ALIGN, a workspace's of MEMPLAN_WS_ALIGN. */
static int64_t block_align(const Block *b)
{
	return b->r ? MEMPLAN_ALIGN : MEMPLAN_WS_ALIGN;
}

/*
 * Greedy fit of the blocks b in the order ord into off[] (by index in b):
 * first fit puts each at the lowest offset where it fits beside every
 * placed block whose lifetime overlaps its own; best fit in the smallest
 * such gap (or on top). Returns the pool's size.
 */
static int64_t fit(const Block *b, const int *ord, int n, bool best, int64_t *off, int *placed)
{
	int64_t top = 0;
	int np = 0; /* placed[]: indices into b, sorted by offset */
	for (int k = 0; k < 2 * n; k++) { /* the fixed blocks, then the others */
		int i = ord[k % n];
		if ((b[i].fixed >= 0) != (k < n))
			continue;
		if (b[i].fixed >= 0) {
			off[i] = b[i].fixed;
			if (off[i] + b[i].size > top)
				top = off[i] + b[i].size;
			int j = np++;
			while (j > 0 && off[placed[j - 1]] > off[i]) {
				placed[j] = placed[j - 1];
				j--;
			}
			placed[j] = i;
			continue;
		}
		/*
		 * The gaps: walk the blocks alive at the same time in order of
		 * offset; one that starts at or beyond o + size leaves room below it.
		 */
		int64_t o = 0, at = -1, waste = 0, align = block_align(&b[i]);
		for (int j = 0; j < np; j++) {
			const Block *q = &b[placed[j]];
			if (q->t1 < b[i].t0 || b[i].t1 < q->t0)
				continue; /* not alive together */
			int64_t gap = off[placed[j]] - align_up(o, align);
			if (gap >= b[i].size) {
				if (!best)
					break;
				if (at < 0 || gap - b[i].size < waste) {
					at = align_up(o, align);
					waste = gap - b[i].size;
				}
			}
			if (off[placed[j]] + q->size > o)
				o = off[placed[j]] + q->size;
		}
		o = at >= 0 ? at : align_up(o, align);
		off[i] = o;
		if (o + b[i].size > top)
			top = o + b[i].size;
		/* insert keeping placed[] sorted by offset */
		int j = np++;
		while (j > 0 && off[placed[j - 1]] > o) {
			placed[j] = placed[j - 1];
			j--;
		}
		placed[j] = i;
	}
	return top;
}

/* The peak of bytes live at once: no packing is below it. */
static int64_t live_peak(const Block *b, int n)
{
	int tmax = 0;
	for (int i = 0; i < n; i++)
		if (b[i].t1 > tmax)
			tmax = b[i].t1;
	int64_t *delta = xcalloc((size_t)tmax + 4, sizeof(int64_t));
	for (int i = 0; i < n; i++) {
		delta[b[i].t0 + 1] += b[i].size; /* +1: time points start at -1 */
		delta[b[i].t1 + 2] -= b[i].size;
	}
	int64_t cur = 0, peak = 0;
	for (int t = 0; t < tmax + 4; t++) {
		cur += delta[t];
		if (cur > peak)
			peak = cur;
	}
	free(delta);
	return peak;
}

/*
 * The pool above target although the live bytes fit: best fit from the
 * order ord, and again with the blocks that reached above the target
 * first (keeping their order, and the others'), until it fits or the
 * passes are spent. Updates best/best_off when a pass packs smaller.
 */
static void squeeze(const Block *b, int *ord, int n, int64_t target, double work, int64_t *best, int64_t *best_off,
                    int64_t *off, int *placed)
{
	double passes = work / ((double)n * n);
	passes = passes < MEMPLAN_SQUEEZE_MIN ? MEMPLAN_SQUEEZE_MIN : passes > MEMPLAN_SQUEEZE_MAX ? MEMPLAN_SQUEEZE_MAX : passes;
	int *next = xmalloc(sizeof(int) * (size_t)(n + 1));
	for (int pass = 0; pass < (int)passes && *best > target; pass++) {
		int64_t top = fit(b, ord, n, true, off, placed);
		if (top < *best) {
			*best = top;
			memcpy(best_off, off, sizeof(int64_t) * (size_t)n);
		}
		int m = 0;
		for (int k = 0; k < n; k++)
			if (off[ord[k]] + b[ord[k]].size > target)
				next[m++] = ord[k];
		for (int k = 0; k < n; k++)
			if (off[ord[k]] + b[ord[k]].size <= target)
				next[m++] = ord[k];
		memcpy(ord, next, sizeof(int) * (size_t)n);
	}
	free(next);
}

/*
 * The smallest pool of first fit in a few orders: by size (as TensorFlow's
 * and most DL compilers' planners), by lifetime and by size x lifetime.
 * No order is best for every program, and near the limit a few percent
 * decide whether a placement fits; above a target (> 0) that the live
 * bytes keep to, best fit in the same orders and squeeze.
 */
static int64_t pack(Block *b, int n, int64_t target, double work)
{
	static int (*const orders[])(const void *, const void *) = {by_size_desc, by_life_desc, by_area_desc};
	enum { NORDERS = (int)countof(orders) };
	int64_t *off = xmalloc(sizeof(int64_t) * (size_t)(n + 1));
	int64_t *best_off = xmalloc(sizeof(int64_t) * (size_t)(n + 1));
	int *placed = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *ord[NORDERS];
	Block *sorted = xmalloc(sizeof(Block) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		b[i].i = i;
	int64_t best = -1;
	for (int k = 0; k < NORDERS; k++) {
		memcpy(sorted, b, sizeof(Block) * (size_t)n);
		qsort(sorted, (size_t)n, sizeof *sorted, orders[k]);
		ord[k] = xmalloc(sizeof(int) * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			ord[k][i] = sorted[i].i;
		int64_t top = fit(b, ord[k], n, false, off, placed);
		if (best < 0 || top < best) {
			best = top;
			memcpy(best_off, off, sizeof(int64_t) * (size_t)n);
		}
	}
	if (target > 0 && best > target && live_peak(b, n) <= target) {
		int from = 0;
		int64_t least = -1;
		for (int k = 0; k < NORDERS && best > target; k++) {
			int64_t top = fit(b, ord[k], n, true, off, placed);
			if (least < 0 || top < least) {
				least = top;
				from = k;
			}
			if (top < best) {
				best = top;
				memcpy(best_off, off, sizeof(int64_t) * (size_t)n);
			}
		}
		squeeze(b, ord[from], n, target, work, &best, best_off, off, placed);
	}
	for (int i = 0; i < n; i++)
		*b[i].out = best_off[i];
	for (int k = 0; k < NORDERS; k++)
		free(ord[k]);
	free(sorted);
	free(off);
	free(best_off);
	free(placed);
	return best < 0 ? 0 : best;
}

/* Every workspace b[nres..m) at the top of cap, the residencies packed around them; returns the pool. */
static int64_t pack_ws_at_top(Block *b, int nres, int m, int64_t target, int64_t cap, double work)
{
	for (int i = nres; i < m; i++) {
		int64_t o = (cap - b[i].size) / MEMPLAN_WS_ALIGN * MEMPLAN_WS_ALIGN;
		b[i].fixed = o > 0 ? o : 0;
	}
	int64_t size = pack(b, m, target, work);
	for (int i = nres; i < m; i++)
		b[i].fixed = -1;
	return size;
}

/* The residencies b[0..nres) packed, every workspace on top of them at one offset (no two live at once). */
static int64_t pack_ws_on_top(Block *b, int nres, int m, int64_t target, double work)
{
	int64_t base = align_up(pack(b, nres, target, work), MEMPLAN_WS_ALIGN), top = 0;
	for (int i = nres; i < m; i++) {
		*b[i].out = base;
		if (b[i].size > top)
			top = b[i].size;
	}
	return base + top;
}

/*
 * The fast pool: the residencies b[0..nres), then the workspaces
 * b[nres..m) in the gaps they leave where each runs. Above cap (> 0), two
 * other layouts, and the smallest of the three is kept: every workspace
 * at the top of the limit, and every workspace on top of the residencies.
 */
static int64_t pack_fast(Block *b, int nres, int m, int64_t target, int64_t cap, double work)
{
	int64_t size = pack(b, m, target, work);
	if (m == nres || cap <= 0 || size <= cap)
		return size;
	int64_t *keep = xmalloc(sizeof(int64_t) * (size_t)m);
	for (int variant = 0; variant < 2 && size > cap; variant++) {
		for (int i = 0; i < m; i++)
			keep[i] = *b[i].out;
		int64_t other = variant == 0 ? pack_ws_at_top(b, nres, m, target, cap, work)
		                                  : pack_ws_on_top(b, nres, m, target, work);
		if (other < size)
			size = other;
		else
			for (int i = 0; i < m; i++)
				*b[i].out = keep[i];
	}
	free(keep);
	return size;
}

static void plan(Placement *p, Arena *a, double work)
{
	int n = p->res.n, nw = 0;
	if (p->ws_in_pool && p->algo) {
		nw = 2 * p->s->n;
		if (!p->ws_offset) {
			p->ws_offset = arena_array(a, (size_t)p->s->n + 1, sizeof(int64_t));
			p->rc_ws_offset = arena_array(a, (size_t)p->s->n + 1, sizeof(int64_t));
		}
	}
	for (int st = 0; p->ws_offset && st < p->s->n; st++)
		p->ws_offset[st] = p->rc_ws_offset[st] = -1;
	Block *all = arena_array(a, (size_t)n + 1, sizeof(Block));
	lifetimes(p, all, n);
	/* pack each tier separately */
	for (int tier = TIER_FAST; tier <= TIER_SLOW; tier++) {
		Block *b = arena_array(a, (size_t)(n + nw) + 1, sizeof(Block));
		int m = 0;
		for (int i = 0; i < n; i++)
			if (all[i].r->tier == (Tier)tier && all[i].lead < 0)
				b[m++] = all[i];
		int64_t cap = tier == TIER_FAST && p->limit > 0 ? p->limit - p->workspace : 0;
		if (tier == TIER_SLOW) {
			p->slow_bytes = pack(b, m, 0, 0);
			continue;
		}
		int nres = m;
		m += ws_blocks(p, b + m, p->ws_offset, p->rc_ws_offset);
		p->fast_bytes = pack_fast(b, nres, m, work > 0 ? cap : 0, cap, work);
	}
	follow_leads(p, all, n);
}

void memplan(Placement *p, Arena *a)
{
	plan(p, a, MEMPLAN_SQUEEZE_WORK);
}

void memplan_first_fit(Placement *p, Arena *a)
{
	plan(p, a, 0);
}

void memplan_quick(Placement *p, Arena *a)
{
	plan(p, a, 1); /* the least work: squeeze's floor of MEMPLAN_SQUEEZE_MIN passes */
}

int64_t memplan_fast_peak(const Placement *p, Arena *a)
{
	int n = p->res.n, m = 0;
	Block *b = arena_array(a, (size_t)(n + 2 * p->s->n) + 1, sizeof(Block));
	lifetimes(p, b, n);
	for (int i = 0; i < n; i++)
		if (b[i].r->tier == TIER_FAST)
			b[m++] = b[i];
	m += ws_blocks(p, b + m, NULL, NULL);
	return live_peak(b, m);
}

int64_t *memplan_fast_live(const Placement *p, Arena *a)
{
	int n = p->res.n, tmax = 2 * p->s->n;
	Block *b = arena_array(a, (size_t)n + 1, sizeof(Block));
	lifetimes(p, b, n);
	int64_t *live = arena_array(a, (size_t)tmax + 3, sizeof(int64_t));
	for (int i = 0; i < n; i++) {
		if (b[i].r->tier != TIER_FAST)
			continue;
		for (int t = b[i].t0; t <= b[i].t1 && t <= tmax; t++)
			live[t + 1] += b[i].size;
	}
	return live;
}

static int by_offset(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	return *x->out < *y->out ? -1 : *x->out > *y->out;
}

/* p's fast residencies as blocks, by offset (xmalloc'd); their number into *m. */
static Block *fast_by_offset(const Placement *p, int *m)
{
	int n = p->res.n;
	Block *b = xmalloc(sizeof(Block) * (size_t)(n + 1));
	lifetimes(p, b, n);
	*m = 0;
	for (int i = 0; i < n; i++)
		if (b[i].r->tier == TIER_FAST && b[i].lead < 0)
			b[(*m)++] = b[i];
	qsort(b, (size_t)*m, sizeof *b, by_offset);
	return b;
}

/* The largest gap below cap at time point t between the blocks b (by offset) live there. */
static int64_t hole_at(const Block *b, int m, int t, int64_t cap)
{
	int64_t at = 0, most = 0;
	for (int i = 0; i < m && at < cap; i++) {
		if (b[i].t0 > t || t > b[i].t1)
			continue;
		int64_t start = *b[i].out < cap ? *b[i].out : cap;
		if (start - align_up(at, MEMPLAN_WS_ALIGN) > most)
			most = start - align_up(at, MEMPLAN_WS_ALIGN);
		if (*b[i].out + b[i].size > at)
			at = *b[i].out + b[i].size;
	}
	at = align_up(at, MEMPLAN_WS_ALIGN);
	return cap - at > most ? cap - at : most;
}

void memplan_holes(const Placement *p, int64_t cap, int64_t *kernel, int64_t *boundary)
{
	int m;
	Block *b = fast_by_offset(p, &m);
	for (int k = 0; k < p->s->n; k++) {
		kernel[k] = hole_at(b, m, 2 * k, cap);
		if (boundary)
			boundary[k] = hole_at(b, m, 2 * k - 1, cap);
	}
	free(b);
}

bool memplan_verify(const Placement *p, Arena *a, char *err, size_t errlen)
{
	int n = p->res.n;
	Block *b = arena_array(a, (size_t)(n + 2 * p->s->n) + 1, sizeof(Block));
	lifetimes(p, b, n);
	if (p->ws_offset)
		n += ws_blocks(p, b + n, p->ws_offset, p->rc_ws_offset);
	for (int i = 0; i < n; i++) {
		Tier tier = b[i].r ? b[i].r->tier : TIER_FAST;
		if (b[i].lead >= 0 && *b[i].out != *b[b[i].lead].out) {
			snprintf(err, errlen, "%s is not in the memory of %s, which it is written over", block_name(&b[i]),
			         block_name(&b[b[i].lead]));
			return false;
		}
		if (*b[i].out % block_align(&b[i]) || *b[i].out < 0 ||
		    *b[i].out + b[i].size > (tier == TIER_FAST ? p->fast_bytes : p->slow_bytes)) {
			snprintf(err, errlen, "%s is placed outside its pool", block_name(&b[i]));
			return false;
		}
		for (int j = i + 1; j < n; j++) {
			const Block *x = &b[i], *y = &b[j];
			if ((x->r ? x->r->tier : TIER_FAST) != (y->r ? y->r->tier : TIER_FAST) || x->t1 < y->t0 || y->t1 < x->t0)
				continue;
			if (*x->out + x->size <= *y->out || *y->out + y->size <= *x->out)
				continue;
			snprintf(err, errlen, "%s and %s share memory while both are live", block_name(x), block_name(y));
			return false;
		}
	}
	return true;
}
