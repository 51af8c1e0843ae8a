/*
 * weights.c - initial values of weights, state and synthetic data.
 */
#include "weights.h"

#include <math.h>

#include "util.h"

/* fan_in of the layer weight w feeds: product of all but its first dimension. */
static int64_t fan_in(const Tensor *w)
{
	int64_t f = 1;
	for (int i = 1; i < w->shape.ndim; i++)
		f *= w->shape.d[i];
	return f;
}

InitSpec init_spec(const Tensor *t, uint64_t seed)
{
	InitSpec s = {.kind = RT_INIT_CONST, .state = rt_stream(seed, t->name)};
	switch (t->kind) {
	case TENSOR_INPUT:
	case TENSOR_LABELS:
		if (t->dtype == DT_I32) { /* ids: uniform over what their users accept */
			s.kind = RT_INIT_IDS;
			s.hi = (double)tensor_id_range(t);
		} else if (t->kind == TENSOR_INPUT) {
			s.kind = RT_INIT_NORMAL;
			s.hi = 1;
		} else {
			s.kind = RT_INIT_ONEHOT;
			s.cols = t->shape.d[1];
		}
		return s;
	case TENSOR_STATE: /* zero, but batchnorm's running variance: one */
		if (tensor_is_statistic(t)) {
			const Node *u = t->users.v[0];
			if (t == u->in[u->op == OP_BATCHNORM_EVAL ? 4 : 1])
				s.value = 1.0;
		}
		return s;
	case TENSOR_WEIGHT:
		break;
	default:
		ICE("no initial value for %s tensor %s", tensor_kind_name(t->kind), t->name);
	}
	if (t->users.n == 0)
		ICE("weight %s has no user", t->name);
	const Node *n = t->users.v[0];
	while (n->op == OP_CAST && n->out[0]->users.n > 0) /* a bf16 copy's: the layer that reads the copy */
		n = n->out[0]->users.v[0];
	switch (n->op) {
	case OP_CONV2D:
	case OP_DENSE:
	case OP_DENSE_XENT_IDS_GRAD: /* a fused output layer's (fuse.h): its weight is in[1], as dense's */ {
		double b = 1.0 / sqrt((double)fan_in(n->in[1]));
		s.kind = RT_INIT_UNIFORM;
		s.lo = -b;
		s.hi = b;
		return s;
	}
	case OP_EMBEDDING: /* GPT-2's N(0, 0.02) (nn.Embedding's default is N(0, 1)) */
	case OP_POSITION:
	case OP_BROADCAST: /* a class token: N(0, 0.02), as timm's ViTs (torchvision's: zeros) */
		s.kind = RT_INIT_NORMAL;
		s.hi = 0.02;
		return s;
	case OP_BATCHNORM:
	case OP_BATCHNORM_EVAL:
	case OP_LAYERNORM:
		s.value = t == n->in[1] ? 1.0 : 0.0;
		return s;
	default:
		ICE("no initialisation rule for weights of %s", op_info[n->op].name);
	}
}

void init_fill(const InitSpec *spec, const Tensor *t, double *out)
{
	RtInit gen = *spec;
	int64_t n = shape_elems(t->shape);
	for (int64_t i = 0; i < n; i++)
		out[i] = rt_init_next(&gen);
}
