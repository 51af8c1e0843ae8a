/*
 * reasons.c - why the plan makes each of its moves and recomputes, in a
 * few words from the plan's own figures (the fast tier's bytes at every
 * step, the limit, the kernels a move overlaps, the time a recompute
 * costs against moving its tensor out and back), for the schedule's table
 * and its JSON; and names long enough to crowd the table, shortened in
 * the middle.
 */
#include "reasons.h"

#include <stdio.h>
#include <string.h>

#include "format.h"
#include "memplan.h"
#include "predict.h"
#include "util.h"

const char *short_name(const char *name, size_t most, char *buf, size_t size)
{
	size_t n = strlen(name);
	if (n <= most || most < 12 || size < most + 1) {
		snprintf(buf, size, "%s", name);
		return buf;
	}
	size_t head = (most - 3) / 3, tail = most - 3 - head; /* the end says most: the layer and the tensor */
	snprintf(buf, size, "%.*s...%s", (int)head, name, name + n - tail);
	return buf;
}

/* "; behind conv2 .. conv5" for an asynchronous move over steps start..at-1 ("; blocking, before K"), into buf. */
static void behind(const Placement *p, const Move *m, char *buf, size_t size)
{
	char a[48], b[48];
	int last = m->at - 1 > m->start ? m->at - 1 : m->start;
	if (!m->async) {
		snprintf(buf, size, "; blocking, before %s", short_name(p->s->order[m->at]->name, 40, a, sizeof a));
		return;
	}
	if (last == m->start)
		snprintf(buf, size, "; behind %s", short_name(p->s->order[m->start]->name, 40, a, sizeof a));
	else
		snprintf(buf, size, "; behind %s .. %s", short_name(p->s->order[m->start]->name, 40, a, sizeof a),
		         short_name(p->s->order[last]->name, 40, b, sizeof b));
}

/* A move to the slow tier: where the fast tier is fullest while the tensor is out of it. */
static const char *why_out(const Placement *p, const Move *m, const int64_t *fast, Arena *a)
{
	int lo = m->to->first, hi = m->to->last, peak = lo;
	for (int k = lo; k <= hi; k++)
		if (fast[k] > fast[peak])
			peak = k;
	int64_t size = memplan_round(m->t->bytes), room = p->limit - p->workspace; /* the tensors' share of the limit */
	char b1[64], b2[64], b3[64], how[128];
	behind(p, m, how, sizeof how);
	if (p->limit > 0 && fast[peak] + size > room)
		return arena_printf(a, "the fast tier is full at step %d (%s of the %s its tensors may hold) while it is out, "
		                    "steps %d-%d%s", peak, fmt_bytes(fast[peak], b1, sizeof b1), fmt_bytes(room, b2, sizeof b2),
		                    lo, hi, how);
	if (p->limit <= 0)
		return arena_printf(a, "out over steps %d-%d%s", lo, hi, how);
	return arena_printf(a, "out over steps %d-%d, where the fast tier holds at most %s of the %s its tensors may "
	                    "hold (%s left: faster slow than fast there, as the costs have it)%s", lo, hi,
	                    fmt_bytes(fast[peak], b1, sizeof b1), fmt_bytes(room, b2, sizeof b2),
	                    fmt_bytes(room - fast[peak], b3, sizeof b3), how);
}

/* A move to the fast tier: the kernel that reads it there first. */
static const char *why_in(const Placement *p, const Move *m, Arena *a)
{
	char b1[48], how[128];
	behind(p, m, how, sizeof how);
	for (int k = m->at; k <= m->to->last; k++) {
		const Node *n = p->s->order[k];
		for (int i = 0; i < n->nin + n->nout; i++)
			if ((i < n->nin ? n->in[i] : n->out[i - n->nin]) == m->t)
				return arena_printf(a, "%s reads it at step %d%s", short_name(n->name, 40, b1, sizeof b1), k, how);
	}
	if (tensor_persists(m->t) && m->to->last == p->s->n - 1)
		return arena_printf(a, "fast at the step's end, where the next step starts from it%s", how);
	return arena_printf(a, "fast over steps %d-%d, where no kernel reads it: a move the plan's costs leave free%s",
	                    m->to->first, m->to->last, how);
}

/* A recompute: its time against moving its tensor out and back. */
static const char *why_recompute(const Placement *p, const Recompute *rc, const CostModel *cm, Arena *a)
{
	char b1[64], b2[48];
	double t = placement_recompute_time(p, cm, rc);
	if (rc->node != rc->t->producer)
		return arena_printf(a, "%.3f ms, a step of the chain that makes %s again", 1e3 * t,
		                    short_name(rc->t->name, 40, b2, sizeof b2));
	double move = cm->move_time(cm, rc->t->bytes, TIER_FAST, TIER_SLOW, true) +
	              cm->move_time(cm, rc->t->bytes, TIER_SLOW, TIER_FAST, true);
	return arena_printf(a, "%.3f ms, where moving its %s out and back takes %.3f ms of the link", 1e3 * t,
	                    fmt_bytes(rc->t->bytes, b1, sizeof b1), 1e3 * move);
}

Reasons *plan_reasons(const Placement *p, const CostModel *cm, const int64_t *fast, Arena *a)
{
	Reasons *r = arena_alloc(a, sizeof *r);
	r->move = arena_array(a, (size_t)p->moves.n + 1, sizeof(char *));
	r->recompute = arena_array(a, (size_t)p->recomputes.n + 1, sizeof(char *));
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		r->move[i] = m->to->tier == TIER_SLOW ? why_out(p, m, fast, a) : why_in(p, m, a);
	}
	for (int i = 0; i < p->recomputes.n; i++)
		r->recompute[i] = why_recompute(p, &p->recomputes.v[i], cm, a);
	return r;
}
