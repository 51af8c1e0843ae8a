/*
 * placement.c - the Placement data structure (placement.h): residencies
 * and moves, built by the optimizers, checked, and counted for reports.
 */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>

#include "costmodel.h"
#include "memplan.h"
#include "recompute.h"
#include "util.h"

Placement *placement_new(const Graph *g, const Schedule *s, Arena *a, OptimizerId optimizer)
{
	Placement *p = arena_alloc(a, sizeof *p);
	p->optimizer = optimizer;
	p->s = s;
	p->of = arena_array(a, (size_t)g->tensors.n, sizeof(ResidencyVec));
	return p;
}

int64_t placement_kernel_ws(const Placement *p, int step)
{
	return p->algo && p->algo[step] ? p->algo[step]->workspace : 0;
}

int64_t placement_boundary_ws(const Placement *p, int step)
{
	if (!p->algo)
		return 0;
	/* the recomputes are in order of `at` (placement_finish): the first at step, by bisection */
	int lo = 0, hi = p->recomputes.n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (p->recomputes.v[mid].at < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t most = 0;
	for (int i = lo; i < p->recomputes.n && p->recomputes.v[i].at == step; i++) {
		int64_t ws = placement_kernel_ws(p, p->recomputes.v[i].step);
		if (ws > most)
			most = ws;
	}
	return most;
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
		if (r->scratch)
			continue;
		if (r->first <= step && step <= r->last) {
			if (r->tier == TIER_FAST)
				return r;
			slow = r;
		}
	}
	return slow;
}

void placement_recompute(Placement *p, Arena *a, const Tensor *t, int at, Residency *dest)
{
	Chain c;
	if (!recompute_chain(p->s, t, at, &c, a))
		ICE("%s cannot be recomputed before step %d", t->name, at);
	if (dest->t != t || dest->tier != TIER_FAST || dest->first != at)
		ICE("the recomputed copy of %s does not start fast at step %d", t->name, at);
	Residency **made = arena_array(a, (size_t)c.n * OP_MAX_ARGS + 1, sizeof(Residency *));
	const Tensor **what = arena_array(a, (size_t)c.n * OP_MAX_ARGS + 1, sizeof(Tensor *));
	int nmade = 0;
	for (int i = 0; i < c.n; i++) {
		const Node *n = c.node[i];
		Recompute rc = {.node = n, .step = p->s->pos[n->id], .t = t, .at = at,
		                .args = arena_array(a, (size_t)(n->nin + n->nout), sizeof(Residency *))};
		for (int k = 0; k < n->nin; k++)
			for (int j = 0; j < nmade && !rc.args[k]; j++)
				if (what[j] == n->in[k])
					rc.args[k] = made[j]; /* made earlier in the chain; else live, resolved by placement_finish */
		for (int k = 0; k < n->nout; k++) {
			Residency *r = dest;
			if (n->out[k] != t) {
				r = placement_add(p, a, n->out[k], TIER_FAST, at, at);
				r->scratch = true;
			}
			rc.args[n->nin + k] = r;
			what[nmade] = n->out[k];
			made[nmade++] = r;
		}
		vec_push(a, &p->recomputes, rc);
	}
}

double move_share(const Move *m, int step)
{
	if (!m->async)
		return 0;
	if (!m->share)
		return step == m->start ? 1 : 0;
	return step >= m->start && step < m->at ? m->share[step - m->start] : 0;
}

/* Bytes of m before the chunk of kernel `step`: the cumulative share, rounded down to the alignment. */
static int64_t chunk_begin(const Move *m, int step)
{
	if (step <= m->start)
		return 0;
	if (step >= m->at)
		return m->t->bytes;
	double f = 0;
	for (int k = m->start; k < step; k++)
		f += m->share[k - m->start];
	int64_t b = (int64_t)(f * (double)m->t->bytes) / MEMPLAN_ALIGN * MEMPLAN_ALIGN;
	return b < m->t->bytes ? b : m->t->bytes;
}

bool move_chunk(const Move *m, int step, int64_t *off, int64_t *len)
{
	if (!m->async || step < m->start || (m->share ? step >= m->at : step != m->start))
		return false;
	if (!m->share) {
		*off = 0, *len = m->t->bytes;
		return m->t->bytes > 0;
	}
	*off = chunk_begin(m, step);
	*len = chunk_begin(m, step + 1) - *off;
	return *len > 0;
}

/* Moves by the boundary they finish at; there, copies to slow before copies to fast. */
static int cmp_move(const void *a, const void *b)
{
	const Move *x = a, *y = b;
	if (x->at != y->at)
		return x->at - y->at;
	if (x->to->tier != y->to->tier)
		return x->to->tier == TIER_SLOW ? -1 : 1;
	if (x->start != y->start)
		return x->start - y->start;
	return x->to->id - y->to->id;
}

/* Recomputes by boundary, then by their kernel's step (producers first), then by tensor. */
static int cmp_recompute(const void *a, const void *b)
{
	const Recompute *x = a, *y = b;
	if (x->at != y->at)
		return x->at - y->at;
	if (x->step != y->step)
		return x->step - y->step;
	return x->t->id - y->t->id;
}

void placement_reuses(const Placement *p, const Residency **reused)
{
	const Schedule *s = p->s;
	for (int i = 0; i < p->res.n; i++)
		reused[i] = NULL;
	int *read_until = NULL; /* residency id -> the last step before which a move reads it; made when needed */
	for (int st = 0; st < s->n; st++) {
		const Tensor *in = schedule_reuse(s, st);
		if (!in)
			continue;
		const Residency *ri = placement_at(p, in, st), *ro = placement_at(p, s->order[st]->out[0], st);
		if (!ri || !ro || ri->tier != TIER_FAST || ro->tier != TIER_FAST || ri->last != st || ro->first != st)
			continue;
		if (!read_until) {
			read_until = xmalloc(sizeof(int) * (size_t)(p->res.n + 1));
			for (int i = 0; i < p->res.n; i++)
				read_until[i] = -1;
			for (int i = 0; i < p->moves.n; i++) {
				const Move *m = &p->moves.v[i];
				if (m->at > read_until[m->from->id])
					read_until[m->from->id] = m->at;
			}
		}
		if (read_until[ri->id] <= st)
			reused[ro->id] = ri;
	}
	free(read_until);
}

void placement_finish(Placement *p)
{
	if (p->moves.n > 1)
		qsort(p->moves.v, (size_t)p->moves.n, sizeof(Move), cmp_move);
	if (p->recomputes.n > 1)
		qsort(p->recomputes.v, (size_t)p->recomputes.n, sizeof(Recompute), cmp_recompute);
	for (int i = 0; i < p->recomputes.n; i++) {
		Recompute *rc = &p->recomputes.v[i];
		for (int k = 0; k < rc->node->nin; k++)
			if (!rc->args[k])
				rc->args[k] = placement_at(p, rc->node->in[k], rc->at);
	}
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
	/* an asynchronous move's shares cover its kernels; those kernels neither use the copy being
	   written nor write the copy being read */
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		if (!m->async)
			continue;
		if (m->share) {
			double sum = 0;
			bool ok = m->at > m->start;
			for (int k = m->start; ok && k < m->at; k++) {
				ok = m->share[k - m->start] >= 0;
				sum += m->share[k - m->start];
			}
			if (!ok || sum < 1 - 1e-6 || sum > 1 + 1e-6) {
				snprintf(err, errlen, "the asynchronous move %d of %s has shares that do not divide it over "
				         "steps %d to %d", i, m->t->name, m->start, m->at - 1);
				return false;
			}
		}
		for (int k = m->start; k < m->at && k < s->n; k++) {
			const Node *n = s->order[k];
			const Residency *r = node_uses(n, m->t) ? placement_at(p, m->t, k) : NULL;
			if (r == m->to || (r == m->from && node_overwrites(n, m->t))) {
				snprintf(err, errlen, "kernel %s at step %d %s %s while a move %s it", n->name, k,
				         r == m->to ? "uses" : "overwrites", m->t->name, r == m->to ? "writes" : "reads");
				return false;
			}
		}
	}
	/* recomputes read fast copies that are ready at their boundary (no move into them still in flight)
	   and write fast copies that start there */
	for (int i = 0; i < p->recomputes.n; i++) {
		const Recompute *rc = &p->recomputes.v[i];
		const Node *n = rc->node;
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Residency *r = rc->args[k];
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			bool ok = r && r->t == t && r->tier == TIER_FAST &&
			          (k < n->nin ? r->first <= rc->at && r->last >= rc->at : r->first == rc->at);
			for (int j = 0; ok && k < n->nin && j < p->moves.n; j++) {
				const Move *m = &p->moves.v[j];
				ok = !(m->to == r && m->at > rc->at);
			}
			if (!ok) {
				snprintf(err, errlen, "the recompute of %s (%s) before step %d has no ready fast copy of %s",
				         rc->t->name, n->name, rc->at, t->name);
				return false;
			}
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
		if (m->to->tier == TIER_FAST) {
			st.bytes_to_fast += m->t->bytes;
		} else {
			st.bytes_to_slow += m->t->bytes;
			if (tensor_persists(m->t)) { /* only an offload writes one out */
				st.noffloaded++;
				st.bytes_offloaded += m->t->bytes;
			}
		}
		if (m->async) {
			st.nasync++;
			st.nspanning += m->share && m->at > m->start + 1;
			st.bytes_async += m->t->bytes;
		}
	}
	for (int i = 0; i < p->recomputes.n; i++) {
		st.nrecompute_kernels++;
		if (p->recomputes.v[i].node == p->recomputes.v[i].t->producer)
			st.nrecomputed++;
	}
	const Residency **reused = xmalloc(sizeof *reused * (size_t)(p->res.n + 1));
	placement_reuses(p, reused);
	for (int i = 0; i < p->res.n; i++)
		if (reused[i]) {
			st.nin_place++;
			st.bytes_in_place += p->res.v[i]->t->bytes;
		}
	free(reused);
	return st;
}

const char *placement_name(const Placement *p)
{
	return optimizer_info[p->optimizer].name;
}
