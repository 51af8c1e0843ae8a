/*
 * recompute.c - chains of kernels that make a dropped value again
 * (recompute.h).
 */
#include "recompute.h"

#include "memplan.h"
#include "util.h"

static bool recomputable_node(const Node *n)
{
	return n && op_info[n->op].nout > 0 && op_info[n->op].inplace == 0 && op_info[n->op].grad == 1;
}

bool recompute_candidate(const Tensor *t)
{
	return t->kind == TENSOR_ACTIVATION && recomputable_node(t->producer);
}

/* Whether x holds at the boundary before `at` the value it had when kernel `step` read it. */
static bool holds(const Schedule *s, const Tensor *x, int step, int at)
{
	const Interval *iv = &s->live[x->id];
	if (!(iv->first < at && iv->last >= at))
		return false;
	if (x->kind != TENSOR_WEIGHT && x->kind != TENSOR_STATE)
		return true;
	for (int k = step + 1; k < at; k++)
		if (node_overwrites(s->order[k], x))
			return false;
	return true;
}

static bool in_chain(const Chain *c, const Node *n)
{
	for (int i = 0; i < c->n; i++)
		if (c->node[i] == n)
			return true;
	return false;
}

/* Add n and, before it, the producers of its inputs that no longer hold their values. */
static bool add_node(const Schedule *s, const Node *n, int at, Chain *c)
{
	if (in_chain(c, n))
		return true;
	if (c->n == RECOMPUTE_MAX_CHAIN || !recomputable_node(n))
		return false;
	c->node[c->n++] = n;
	int step = s->pos[n->id];
	for (int k = 0; k < n->nin; k++) {
		const Tensor *x = n->in[k];
		if (holds(s, x, step, at))
			continue;
		if (x->kind != TENSOR_ACTIVATION || !add_node(s, x->producer, at, c))
			return false;
	}
	return true;
}

bool recompute_chain(const Schedule *s, const Tensor *t, int at, Chain *c, Arena *a)
{
	*c = (Chain){0};
	if (!recompute_candidate(t) || at <= s->pos[t->producer->id] || !live_at(s, t, at))
		return false;
	if (!add_node(s, t->producer, at, c))
		return false;
	/* schedule order (producers before their consumers) */
	for (int i = 1; i < c->n; i++)
		for (int j = i; j > 0 && s->pos[c->node[j - 1]->id] > s->pos[c->node[j]->id]; j--) {
			const Node *tmp = c->node[j];
			c->node[j] = c->node[j - 1];
			c->node[j - 1] = tmp;
		}
	int cap = 0;
	for (int i = 0; i < c->n; i++)
		cap += c->node[i]->nin;
	c->leaf = arena_array(a, (size_t)cap + 1, sizeof(Tensor *));
	for (int i = 0; i < c->n; i++) {
		const Node *n = c->node[i];
		for (int k = 0; k < n->nin; k++) {
			const Tensor *x = n->in[k];
			bool inner = false, seen = false;
			for (int j = 0; j < i && !inner; j++)
				inner = x->producer == c->node[j];
			for (int j = 0; j < c->nleaves && !seen; j++)
				seen = c->leaf[j] == x;
			if (!inner && !seen)
				c->leaf[c->nleaves++] = x;
		}
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != t)
				c->scratch += memplan_round(n->out[k]->bytes);
	}
	return true;
}
