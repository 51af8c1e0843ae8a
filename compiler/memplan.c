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
 * The packing is greedy first fit: each residency goes at the lowest
 * offset where it fits beside every already placed residency whose
 * lifetime overlaps its own, in each of a few orders (largest first, as
 * TensorFlow's and most DL compilers' planners; longest-lived first;
 * most byte-time first), and the order whose pool is smallest is kept.
 * The pool is as large as the highest end.
 * The lower bound is the peak of simultaneously live bytes; the report
 * prints both, and their ratio is the fragmentation.
 */
#include "memplan.h"

#include <stdlib.h>

#include "util.h"

typedef struct Block {
	Residency *r;  /* what is placed */
	int t0, t1;    /* lifetime in time points */
	int64_t size;  /* bytes, rounded up to MEMPLAN_ALIGN */
} Block;

int64_t memplan_round(int64_t bytes)
{
	return (bytes + MEMPLAN_ALIGN - 1) / MEMPLAN_ALIGN * MEMPLAN_ALIGN;
}

/* the largest first (TensorFlow's order), earlier ones first among equals */
static int by_size_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	if (x->t0 != y->t0)
		return x->t0 - y->t0;
	return x->r->t->id - y->r->t->id; /* deterministic */
}

/* the longest-lived first, the largest first among equals */
static int by_life_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	if (x->t1 - x->t0 != y->t1 - y->t0)
		return (y->t1 - y->t0) - (x->t1 - x->t0);
	return by_size_desc(a, b);
}

/* the most byte-time first */
static int by_area_desc(const void *a, const void *b)
{
	const Block *x = a, *y = b;
	double ax = (double)x->size * (x->t1 - x->t0 + 1), ay = (double)y->size * (y->t1 - y->t0 + 1);
	if (ax != ay)
		return ax < ay ? 1 : -1;
	return by_size_desc(a, b);
}

/* Lifetimes in time points, widened by the moves that read and write each residency. */
static void lifetimes(const Placement *p, Block *b, int n)
{
	for (int i = 0; i < n; i++) {
		b[i].r = p->res.v[i];
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
}

/*
 * Greedy first fit in the order of b: each block at the lowest offset
 * where it fits beside every placed block whose lifetime overlaps its
 * own, into off[] (by position in b). Returns the pool's size.
 */
static int64_t first_fit(const Block *b, int n, int64_t *off, int *placed)
{
	int64_t top = 0;
	int np = 0; /* placed[]: indices into b, sorted by offset */
	for (int i = 0; i < n; i++) {
		/*
		 * The lowest gap: walk the blocks alive at the same time in order of
		 * offset; the first that starts at or beyond o + size leaves room.
		 */
		int64_t o = 0;
		for (int j = 0; j < np; j++) {
			const Block *q = &b[placed[j]];
			if (q->t1 < b[i].t0 || b[i].t1 < q->t0)
				continue; /* not alive together */
			if (off[placed[j]] >= o + b[i].size)
				break;
			if (off[placed[j]] + q->size > o)
				o = off[placed[j]] + q->size;
		}
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

/*
 * The smallest pool of first fit in a few orders: by size (as TensorFlow's
 * and most DL compilers' planners), by lifetime and by size x lifetime.
 * No order is best for every program, and near the limit a few percent
 * decide whether a placement fits.
 */
static void pack(Block *b, int n, int64_t *pool_size)
{
	static int (*const orders[])(const void *, const void *) = {by_size_desc, by_life_desc, by_area_desc};
	int64_t *off = xmalloc(sizeof(int64_t) * (size_t)(n + 1));
	int *placed = xmalloc(sizeof(int) * (size_t)(n + 1));
	int64_t best = -1;
	for (int k = 0; k < (int)countof(orders); k++) {
		qsort(b, (size_t)n, sizeof *b, orders[k]);
		int64_t top = first_fit(b, n, off, placed);
		if (best >= 0 && top >= best)
			continue;
		best = top;
		for (int i = 0; i < n; i++)
			b[i].r->offset = off[i];
	}
	*pool_size = best;
	free(off);
	free(placed);
}

void memplan(Placement *p, Arena *a)
{
	int n = p->res.n;
	Block *all = arena_array(a, (size_t)n + 1, sizeof(Block));
	lifetimes(p, all, n);
	/* pack each tier separately */
	for (int tier = TIER_FAST; tier <= TIER_SLOW; tier++) {
		Block *b = arena_array(a, (size_t)n + 1, sizeof(Block));
		int m = 0;
		for (int i = 0; i < n; i++)
			if (all[i].r->tier == (Tier)tier)
				b[m++] = all[i];
		int64_t size;
		pack(b, m, &size);
		if (tier == TIER_FAST)
			p->fast_bytes = size;
		else
			p->slow_bytes = size;
	}
}

int64_t memplan_fast_peak(const Placement *p, Arena *a)
{
	int n = p->res.n, npoints = 2 * p->s->n + 2;
	Block *b = arena_array(a, (size_t)n + 1, sizeof(Block));
	lifetimes(p, b, n);
	int64_t *delta = arena_array(a, (size_t)npoints + 2, sizeof(int64_t));
	for (int i = 0; i < n; i++) {
		if (b[i].r->tier != TIER_FAST)
			continue;
		delta[b[i].t0 + 1] += b[i].size; /* +1: time points start at -1 */
		delta[b[i].t1 + 2] -= b[i].size;
	}
	int64_t cur = 0, peak = 0;
	for (int i = 0; i <= npoints; i++) {
		cur += delta[i];
		if (cur > peak)
			peak = cur;
	}
	return peak;
}

bool memplan_verify(const Placement *p, Arena *a, char *err, size_t errlen)
{
	int n = p->res.n;
	Block *b = arena_array(a, (size_t)n + 1, sizeof(Block));
	lifetimes(p, b, n);
	for (int i = 0; i < n; i++) {
		if (b[i].r->offset % MEMPLAN_ALIGN ||
		    b[i].r->offset + b[i].size > (b[i].r->tier == TIER_FAST ? p->fast_bytes : p->slow_bytes)) {
			snprintf(err, errlen, "%s is placed outside its pool", b[i].r->t->name);
			return false;
		}
		for (int j = i + 1; j < n; j++) {
			const Block *x = &b[i], *y = &b[j];
			if (x->r->tier != y->r->tier || x->t1 < y->t0 || y->t1 < x->t0)
				continue;
			if (x->r->offset + x->size <= y->r->offset || y->r->offset + y->size <= x->r->offset)
				continue;
			snprintf(err, errlen, "%s and %s share memory while both are live", x->r->t->name, y->r->t->name);
			return false;
		}
	}
	return true;
}
