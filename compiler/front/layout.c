/*
 * layout.c - which activations the CPU stores channel-blocked (see layout.h).
 */
#include "layout.h"

#include <stdlib.h>

#include "util.h"

/* How a kernel takes one of its arguments. */
typedef enum ArgRule {
	ARG_PLAIN,    /* row-major only */
	ARG_FREE,     /* either layout, its own (oneDNN's kernels) */
	ARG_TOGETHER, /* either, the same as the node's other ARG_TOGETHER arguments */
} ArgRule;

/* Whether t may be stored blocked at all: a [N, C, H, W] activation or gradient, C a multiple of 16. */
static bool blockable(const Tensor *t)
{
	return (t->kind == TENSOR_ACTIVATION || t->kind == TENSOR_GRADIENT) && t->producer &&
	       (t->dtype == DT_F32 || t->dtype == DT_BF16) && t->shape.ndim == 4 && t->shape.d[1] % 16 == 0;
}

/* A [N, C, 1, 1] tensor: element (n, c) at n * C + c in either layout. */
static bool one_pixel(const Tensor *t)
{
	return t->shape.ndim == 4 && t->shape.d[2] * t->shape.d[3] == 1;
}

static const Tensor *arg(const Node *n, int k)
{
	return k < n->nin ? n->in[k] : n->out[k - n->nin];
}

/* Whether the first m arguments of n have the shape of its first. */
static bool same_shapes_upto(const Node *n, int m)
{
	for (int k = 1; k < m; k++)
		if (!shape_eq(arg(n, k)->shape, n->in[0]->shape))
			return false;
	return true;
}

/* Whether every argument of n has the shape of its first. */
static bool same_shapes(const Node *n)
{
	return same_shapes_upto(n, n->nin + n->nout);
}

/* Argument k of n: what the CPU runtime's kernel of n takes (runtime/cpu: kernels.c, batchnorm.c). */
static ArgRule arg_rule(const Node *n, int k)
{
	switch (n->op) {
	case OP_CONV2D:            /* x, weight[, bias] -> y */
		return k == 0 || k == n->nin ? ARG_FREE : ARG_PLAIN;
	case OP_CONV2D_BWD_DATA:   /* dy, weight -> dx */
		return k == 1 ? ARG_PLAIN : ARG_FREE;
	case OP_CONV2D_BWD_FILTER: /* x, dy -> dweight */
		return k == 2 ? ARG_PLAIN : ARG_FREE;
	case OP_CONCAT:
		return ARG_FREE;
	case OP_MAXPOOL:     /* oneDNN's; the backward pass's own kernel takes blocks of 16 planes */
	case OP_MAXPOOL_BWD:
		return ARG_TOGETHER;
	case OP_AVGPOOL: /* oneDNN's pooling of two layouts is its reference implementation */
	case OP_AVGPOOL_BWD:
	case OP_GLOBALAVGPOOL:
	case OP_GLOBALAVGPOOL_BWD:
		return ARG_TOGETHER;
	case OP_BATCHNORM:     /* the data arguments; the statistics and weights are vectors, plain */
	case OP_BATCHNORM_BWD:
	case OP_BATCHNORM_EVAL:
		return arg(n, k)->shape.ndim == 4 ? ARG_TOGETHER : ARG_PLAIN;
	case OP_SLICE:         /* whole channel blocks: the same copies as plain (runtime/cpu/kernels.c's run_slice) */
	case OP_SLICE_BWD:
		return n->attr.axis == 1 && n->attr.offset % 16 == 0 ? ARG_TOGETHER : ARG_PLAIN;
	case OP_BIAS_GRAD:     /* dy -> dbias: a convolution's, over axis 1 */
		return k == 0 && n->attr.axis <= 1 ? ARG_TOGETHER : ARG_PLAIN; /* (axis 0: 1) */
	case OP_ACT_BIAS_GRAD: /* saved, dy -> dx, dbias */
		return k < 3 && n->attr.axis <= 1 && same_shapes_upto(n, 3) ? ARG_TOGETHER : ARG_PLAIN;
	case OP_ADD:
	case OP_CAST:
		return same_shapes(n) ? ARG_TOGETHER : ARG_PLAIN;
	default:                /* an activation or its gradient: elementwise */
		return op_info[n->op].act != ACT_NONE && same_shapes(n) ? ARG_TOGETHER : ARG_PLAIN;
	}
}

static int root(int *parent, int i)
{
	while (parent[i] != i)
		i = parent[i] = parent[parent[i]];
	return i;
}

void choose_layouts(Graph *g)
{
	int nt = g->tensors.n;
	int *parent = xcalloc((size_t)nt + 1, sizeof *parent);
	bool *plain = xcalloc((size_t)nt + 1, sizeof *plain);
	for (int i = 0; i < nt; i++) {
		parent[i] = i;
		plain[i] = !blockable(g->tensors.v[i]);
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		int first = -1;
		for (int k = 0; k < n->nin + n->nout; k++) {
			int t = arg(n, k)->id;
			switch (arg_rule(n, k)) {
			case ARG_PLAIN: /* (one pixel a plane: the same bytes in either layout) */
				plain[t] |= !one_pixel(arg(n, k));
				break;
			case ARG_TOGETHER:
				if (first < 0)
					first = t;
				else
					parent[root(parent, t)] = root(parent, first);
				break;
			case ARG_FREE:
				break;
			}
		}
	}
	for (int i = 0; i < nt; i++)
		if (plain[i])
			plain[root(parent, i)] = true;
	for (int i = 0; i < nt; i++)
		g->tensors.v[i]->blocked = !plain[root(parent, i)];
	free(parent);
	free(plain);
}
