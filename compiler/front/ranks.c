/*
 * ranks.c - the gradients' all-reduce nodes (ranks.h).
 */
#include "ranks.h"

#include <string.h>

#include "util.h"

/* Every reader of dw but `keep` reads mean instead. */
static void move_readers(Graph *g, Tensor *dw, Tensor *mean, const Node *keep)
{
	int stay = 0;
	for (int i = 0; i < dw->users.n; i++) {
		Node *u = dw->users.v[i];
		if (u == keep) {
			dw->users.v[stay++] = u;
			continue;
		}
		for (int k = 0; k < u->nin; k++)
			if (u->in[k] == dw)
				u->in[k] = mean;
		vec_push(g->arena, &mean->users, u);
	}
	dw->users.n = stay;
}

/* Move the last node of g to position `at` (the node list stays in topological order: before its readers). */
static void move_last_to(Graph *g, int at)
{
	Node *n = g->nodes.v[g->nodes.n - 1];
	memmove(g->nodes.v + at + 1, g->nodes.v + at, sizeof(Node *) * (size_t)(g->nodes.n - 1 - at));
	g->nodes.v[at] = n;
	for (int i = at; i < g->nodes.n; i++)
		g->nodes.v[i]->id = i;
}

/*
 * The updates (and the sums of squares that clip them) after every other
 * node, in their order: the schedule runs them once the backward pass is
 * over, as DDP's optimizer step follows its backward pass, so that the
 * exchanges of the gradients overlap the backward kernels between them.
 */
static void updates_last(Graph *g)
{
	Node **late = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(Node *));
	int n = 0, k = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		Node *x = g->nodes.v[i];
		if (x->phase == PHASE_UPDATE || x->op == OP_GRAD_SUMSQ)
			late[k++] = x;
		else
			g->nodes.v[n++] = x;
	}
	memcpy(g->nodes.v + n, late, sizeof(Node *) * (size_t)k);
	for (int i = 0; i < g->nodes.n; i++)
		g->nodes.v[i]->id = i;
}

bool ranks_allreduce(Graph *g, int *added, char *err, size_t errlen)
{
	*added = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		Node *u = g->nodes.v[i];
		if (!op_is_update(u->op) || u->nin < 2) /* (input 1: the weight's gradient) */
			continue;
		Tensor *dw = u->in[1];
		if (dw->producer && dw->producer->op == OP_ALLREDUCE)
			continue;
		int at = dw->producer ? dw->producer->id + 1 : 0; /* right after the gradient is made */
		Node *ar = graph_node(g, OP_ALLREDUCE, &dw, 1, NULL, TENSOR_GRADIENT,
		                      arena_printf(g->arena, "%s.mean", dw->name), u->loc, err, errlen);
		if (!ar)
			return false;
		ar->phase = PHASE_BACKWARD;
		move_readers(g, dw, ar->out[0], ar);
		move_last_to(g, at);
		(*added)++;
	}
	updates_last(g);
	return true;
}
