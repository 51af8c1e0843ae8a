/*
 * place_baselines.c - placements that need no solver.
 *
 * all-fast: every tensor in the fast tier over its live interval, the
 * reference every other placement is compared with. spill-all: a test
 * placement that moves every activation through the slow tier, so that
 * the move machinery of code generation and runtime is exercised on every
 * tensor of a model; training results must be bitwise those of all-fast.
 * all-slow: every tensor in the slow tier (nothing needs to be fast).
 * first-touch: what a NUMA system's first-touch page policy gives, the
 * baseline AutoTM compared with (docs/placement.md).
 */
#include "place.h"

#include <stdio.h>

#include "memplan.h"
#include "util.h"

Placement *placement_new(const Graph *g, const Schedule *s, Arena *a, const char *optimizer)
{
	Placement *p = arena_alloc(a, sizeof *p);
	p->optimizer = optimizer;
	p->s = s;
	p->of = arena_array(a, (size_t)g->tensors.n, sizeof(ResidencyVec));
	return p;
}

Residency *placement_add(Placement *p, Arena *a, const Tensor *t, Tier tier, int first, int last)
{
	Residency *r = arena_alloc(a, sizeof *r);
	r->id = p->res.n;
	r->t = t;
	r->tier = tier;
	r->first = first;
	r->last = last;
	vec_push(a, &p->res, r);
	vec_push(a, &p->of[t->id], r);
	return r;
}

void placement_move(Placement *p, Arena *a, Residency *from, Residency *to, int at)
{
	Move m = {.t = from->t, .from = from, .to = to, .at = at, .start = at};
	vec_push(a, &p->moves, m);
}

Residency *placement_at(const Placement *p, const Tensor *t, int step)
{
	Residency *slow = NULL;
	const ResidencyVec *rv = &p->of[t->id];
	for (int i = 0; i < rv->n; i++) {
		Residency *r = rv->v[i];
		if (r->first <= step && step <= r->last) {
			if (r->tier == TIER_FAST)
				return r;
			slow = r;
		}
	}
	return slow;
}

Placement *place_all_fast(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, "all-fast");
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], TIER_FAST, s->live[i].first, s->live[i].last);
	return p;
}

Placement *place_all_slow(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, "all-slow");
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], TIER_SLOW, s->live[i].first, s->live[i].last);
	return p;
}

enum { PAGE = 4096 };

static int64_t pages(int64_t bytes)
{
	return (bytes + PAGE - 1) / PAGE * PAGE;
}

/* One first-touch walk with `budget` bytes of fast pages. */
static Placement *first_touch_walk(const Graph *g, const Schedule *s, int64_t budget, int64_t limit, Arena *a)
{
	Placement *p = placement_new(g, s, a, "first-touch");
	p->limit = limit;
	Tier *tier = arena_array(a, (size_t)g->tensors.n + 1, sizeof(Tier));
	int64_t used = 0;
	/* what lives before the first kernel: weights, optimizer state, input, labels */
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->producer)
			continue;
		tier[i] = used + pages(t->bytes) <= budget ? TIER_FAST : TIER_SLOW;
		if (tier[i] == TIER_FAST)
			used += pages(t->bytes);
	}
	for (int step = 0; step < s->n; step++) {
		/* pages of tensors whose last use was the previous step are free again */
		for (int i = 0; step > 0 && i < g->tensors.n; i++)
			if (s->live[i].last == step - 1 && tier[i] == TIER_FAST)
				used -= pages(g->tensors.v[i]->bytes);
		const Node *n = s->order[step];
		for (int k = 0; k < n->nout; k++) {
			const Tensor *t = n->out[k];
			tier[t->id] = used + pages(t->bytes) <= budget ? TIER_FAST : TIER_SLOW;
			if (tier[t->id] == TIER_FAST)
				used += pages(t->bytes);
		}
	}
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], tier[i], s->live[i].first, s->live[i].last);
	return p;
}

Placement *place_first_touch(const Graph *g, const Schedule *s, int64_t limit, Arena *a)
{
	/*
	 * Pages do not fragment; our pool is packed (memplan) and can. If the
	 * packing goes over the limit, lower the page budget by the excess and
	 * walk again; an empty budget always fits.
	 */
	int64_t budget = limit;
	for (;;) {
		Placement *p = first_touch_walk(g, s, budget, limit, a);
		memplan(p, a);
		if (p->fast_bytes <= limit || budget <= 0)
			return p;
		budget -= pages(p->fast_bytes - limit);
	}
}

Placement *place_spill_all(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, "spill-all");
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		Interval iv = s->live[i];
		if (t->kind != TENSOR_ACTIVATION || t->users.n == 0 || t == g->loss) {
			placement_add(p, a, t, TIER_FAST, iv.first, iv.last);
			continue;
		}
		/* written fast by its producer, then to slow, then back before each user */
		Residency *made = placement_add(p, a, t, TIER_FAST, iv.first, iv.first);
		Residency *slow = placement_add(p, a, t, TIER_SLOW, iv.first + 1, iv.last);
		placement_move(p, a, made, slow, iv.first + 1);
		int prev = -1;
		for (int u = 0; u < t->users.n; u++) {
			int step = s->pos[t->users.v[u]->id];
			if (step == prev)
				continue; /* a node reading the tensor twice needs one copy */
			prev = step;
			Residency *back = placement_add(p, a, t, TIER_FAST, step, step);
			placement_move(p, a, slow, back, step);
		}
	}
	/* moves in order of the step they precede (stable: spills before read-backs) */
	for (int i = 1; i < p->moves.n; i++)
		for (int j = i; j > 0 && p->moves.v[j - 1].at > p->moves.v[j].at; j--) {
			Move m = p->moves.v[j];
			p->moves.v[j] = p->moves.v[j - 1];
			p->moves.v[j - 1] = m;
		}
	return p;
}

bool placement_verify(const Graph *g, const Placement *p, char *err, size_t errlen)
{
	const Schedule *s = p->s;
	/* every argument of every kernel has a residency at its step */
	for (int step = 0; step < s->n; step++) {
		const Node *n = s->order[step];
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			if (!placement_at(p, t, step)) {
				snprintf(err, errlen, "%s has no residency at step %d (%s)", t->name, step, n->name);
				return false;
			}
		}
	}
	/* moves read a copy that holds the value by then (live through at-1, or
	   written by an earlier move at the same boundary) into one live at `at` */
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		if (m->from->t != m->to->t || m->from->last < m->at - 1 || m->from->first > m->at ||
		    m->to->first > m->start || m->to->last < m->at || (m->async && m->start > m->at)) {
			snprintf(err, errlen, "move %d of %s before step %d does not connect its copies", i,
			         m->t->name, m->at);
			return false;
		}
	}
	(void)g;
	return true;
}

MoveStats placement_stats(const Placement *p)
{
	MoveStats st = {0};
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		st.nmoves++;
		st.bytes += m->t->bytes;
		if (m->to->tier == TIER_FAST)
			st.bytes_to_fast += m->t->bytes;
		else
			st.bytes_to_slow += m->t->bytes;
		if (m->async) {
			st.nasync++;
			st.bytes_async += m->t->bytes;
		}
	}
	return st;
}
