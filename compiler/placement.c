/*
 * placement.c - the Placement data structure (placement.h): residencies
 * and moves, built by the optimizers, checked, and counted for reports.
 */
#include "placement.h"

#include <stdio.h>

#include "util.h"

Placement *placement_new(const Graph *g, const Schedule *s, Arena *a, OptimizerId optimizer)
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

const char *placement_name(const Placement *p)
{
	return optimizer_info[p->optimizer].name;
}
