/*
 * fuse.c - the fusion pass (fuse.h).
 */
#include "fuse.h"

#include "util.h"

bool fuse_can_take(Op op, Act act)
{
	switch (op) {
	case OP_CONV2D:
	case OP_DENSE: /* oneDNN post-ops on the CPU, an in-place pass after the product on the GPU */
		return act == ACT_RELU || act == ACT_SIGMOID || act == ACT_TANH;
	case OP_BATCHNORM: /* the runtime's own kernel */
		return act == ACT_RELU;
	default:
		return false;
	}
}

/* The producer of activation node a's input, if a can be folded into it. */
static Node *foldable(const Graph *g, const Node *a)
{
	Act act = op_info[a->op].act;
	if (a->phase != PHASE_FORWARD || act == ACT_NONE || act_from(act) != ACT_FROM_Y || a->nin != 1 || a->nout != 1)
		return NULL;
	Tensor *z = a->in[0];
	Node *p = z->producer;
	if (!p || p->phase != PHASE_FORWARD || p->out[0] != z || p->attr.post_act != ACT_NONE ||
	    !fuse_can_take(p->op, act))
		return NULL;
	if (z->users.n != 1 || z == g->output || z->dtype != a->out[0]->dtype || z->kind != a->out[0]->kind)
		return NULL;
	return p;
}

/* Drop the nodes and tensors marked dead from g's lists, renumbering what stays. */
static void compact(Graph *g, const bool *dead_node, const bool *dead_tensor)
{
	int n = 0, t = 0, nforward = g->nforward, nforward_tensors = g->nforward_tensors;
	for (int i = 0; i < g->nodes.n; i++)
		if (!dead_node[i]) {
			g->nodes.v[n] = g->nodes.v[i];
			g->nodes.v[n]->id = n;
			n++;
		} else if (i < g->nforward) {
			nforward--;
		}
	for (int i = 0; i < g->tensors.n; i++)
		if (!dead_tensor[i]) {
			g->tensors.v[t] = g->tensors.v[i];
			g->tensors.v[t]->id = t;
			t++;
		} else if (i < g->nforward_tensors) {
			nforward_tensors--;
		}
	g->nodes.n = n;
	g->tensors.n = t;
	g->nforward = nforward;
	g->nforward_tensors = nforward_tensors;
}

int fuse_epilogues(Graph *g)
{
	bool *dead_node = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(bool));
	bool *dead_tensor = arena_array(g->arena, (size_t)g->tensors.n + 1, sizeof(bool));
	int folded = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		Node *a = g->nodes.v[i];
		Node *p = foldable(g, a);
		if (!p)
			continue;
		Tensor *z = a->in[0], *y = a->out[0];
		p->out[0] = y; /* p writes act(z) where a wrote it; z is never stored */
		p->attr.post_act = op_info[a->op].act;
		y->producer = p;
		z->users.n = 0;
		z->producer = NULL;
		dead_node[a->id] = true;
		dead_tensor[z->id] = true;
		folded++;
	}
	if (folded)
		compact(g, dead_node, dead_tensor);
	g->nfused += folded;
	return folded;
}
