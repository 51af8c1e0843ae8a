/*
 * weights.c - initial values of weights, state and synthetic data.
 */
#include "weights.h"

#include <math.h>

#include "autotm/random.h"
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
	InitSpec s = {.kind = INIT_CONST, .stream = rt_stream(seed, t->name)};
	switch (t->kind) {
	case TENSOR_INPUT:
		s.kind = INIT_NORMAL;
		return s;
	case TENSOR_LABELS:
		s.kind = INIT_ONEHOT;
		return s;
	case TENSOR_STATE:
		return s;
	case TENSOR_WEIGHT:
		break;
	default:
		ICE("no initial value for %s tensor %s", tensor_kind_name(t->kind), t->name);
	}
	if (t->users.n == 0)
		ICE("weight %s has no user", t->name);
	const Node *n = t->users.v[0];
	switch (n->op) {
	case OP_CONV2D:
	case OP_DENSE: {
		double b = 1.0 / sqrt((double)fan_in(n->in[1]));
		s.kind = INIT_UNIFORM;
		s.lo = -b;
		s.hi = b;
		return s;
	}
	case OP_BATCHNORM:
		s.value = t == n->in[1] ? 1.0 : 0.0;
		return s;
	default:
		ICE("no initialisation rule for weights of %s", op_info[n->op].name);
	}
}

void init_fill(const InitSpec *spec, const Tensor *t, double *out)
{
	int64_t n = shape_elems(t->shape);
	uint64_t st = spec->stream;
	switch (spec->kind) {
	case INIT_UNIFORM:
		for (int64_t i = 0; i < n; i++)
			out[i] = spec->lo + (spec->hi - spec->lo) * rt_uniform01(&st);
		return;
	case INIT_NORMAL:
		for (int64_t i = 0; i < n; i++)
			out[i] = rt_normal(&st);
		return;
	case INIT_CONST:
		for (int64_t i = 0; i < n; i++)
			out[i] = spec->value;
		return;
	case INIT_ONEHOT: {
		int64_t rows = t->shape.d[0], k = t->shape.d[1];
		for (int64_t r = 0; r < rows; r++) {
			int64_t cls = (int64_t)(rt_splitmix64(&st) % (uint64_t)k);
			for (int64_t j = 0; j < k; j++)
				out[r * k + j] = j == cls ? 1.0 : 0.0;
		}
		return;
	}
	}
	unreachable();
}
