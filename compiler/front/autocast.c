/*
 * autocast.c - a bf16 training step as PyTorch's autocast runs one.
 *
 * The ops with most of the FLOPs (convolution, dense, the batched
 * products of attention, fused attention) take bf16 inputs, accumulate in float32 and write
 * bf16. The ops that need float32's range or precision (softmax,
 * layernorm, the losses, means) take float32 inputs and write float32.
 * Every other op runs in its input's type; one whose inputs differ
 * (add, concat, mul, a position embedding's sum) runs in the widest.
 * Weights, their gradients and the optimizer's state stay float32: a
 * weight that a bf16 op reads is copied by a cast node, once per step,
 * and that copy is an ordinary tensor the placement may keep, move, drop
 * or recompute. Gradients have their values' types (graph.c), so the cast
 * nodes' gradients, casts back, bring each weight's gradient home in
 * float32.
 */
#include "autocast.h"

typedef enum Rule {
	RULE_INPUT, /* the input's type */
	RULE_BF16,  /* bf16 inputs */
	RULE_F32,   /* f32 inputs */
	RULE_WIDEST, /* f32 if any input is */
} Rule;

static Rule rule_of(Op op)
{
	switch (op) {
	case OP_CONV2D:
	case OP_DENSE:
	case OP_MATMUL:
	case OP_ATTENTION:
		return RULE_BF16;
	case OP_SOFTMAX:
	case OP_CAUSAL_SOFTMAX:
	case OP_LAYERNORM:
	case OP_SOFTMAX_XENT:
	case OP_SOFTMAX_XENT_IDS:
	case OP_MEAN:
		return RULE_F32;
	case OP_ADD:
	case OP_CONCAT:
	case OP_MUL:
	case OP_POSITION:
		return RULE_WIDEST;
	default:
		return RULE_INPUT;
	}
}

/* t's copy in type dt, made by a cast node the first time it is asked for. */
static Tensor *copy_of(Graph *g, Autocast *ac, Tensor *t, DType dt, SrcLoc loc, char *err, size_t errlen)
{
	TensorVec *cache = &ac->copies[dt == DT_BF16];
	while (cache->n <= t->id)
		vec_push(g->arena, cache, NULL);
	if (cache->v[t->id])
		return cache->v[t->id];
	Attrs a = {.dtype = dt};
	const char *name = arena_printf(g->arena, "%s.%s", t->name, dtype_name(dt));
	Node *n = graph_node(g, OP_CAST, &t, 1, &a, TENSOR_ACTIVATION, name, loc, err, errlen);
	if (!n)
		return NULL;
	cache->v[t->id] = n->out[0];
	return n->out[0];
}

bool autocast_inputs(Graph *g, Autocast *ac, Op op, Tensor **in, int nin, SrcLoc loc, char *err, size_t errlen)
{
	if (g->precision != PREC_BF16)
		return true;
	Rule r = rule_of(op);
	bool any_f32 = false;
	for (int k = 0; k < nin; k++)
		any_f32 |= in[k]->dtype == DT_F32;
	for (int k = 0; k < nin; k++) {
		DType want = r == RULE_BF16 ? DT_BF16 : r == RULE_F32 || (r == RULE_WIDEST && any_f32) ? DT_F32 : in[k]->dtype;
		if (!dtype_is_float(in[k]->dtype) || in[k]->dtype == want)
			continue;
		Tensor *c = copy_of(g, ac, in[k], want, loc, err, errlen);
		if (!c)
			return false;
		in[k] = c;
	}
	return true;
}
