/*
 * activation.h - the elementwise activations, one row each, with their
 * value and gradient as scalar functions that the reference interpreter
 * and the backends (C and CUDA) share.
 *
 * ACT(ID, name, from)
 *
 *   ID    enum constant ACT_ID, named in ops.def's act column by the
 *         forward op and by its gradient op
 *   name  the layer's name in the .net language
 *   from  what the gradient op reads beside dy: ACT_FROM_Y, the forward
 *         op's output (relu, sigmoid, tanh, relu6: autodiff then keeps y
 *         alive, not x), or ACT_FROM_X, its input (gelu, hardsigmoid,
 *         hardswish, silu)
 *
 * Each is PyTorch's function of the same name (torch.nn.functional), its
 * gradient too at the kinks: relu6's and hardsigmoid's are 0 at the ends
 * of their linear part, hardswish's is x / 3 + 1/2 at -3 and 3.
 *
 * The functions compute in double: the interpreter's precision, and on a
 * GPU still far under the cost of reading and writing the elements.
 */
#ifndef AUTOTM_ACTIVATION_H
#define AUTOTM_ACTIVATION_H

#include <math.h>

#define ACTIVATIONS(ACT)                           \
	ACT(RELU,        relu,        ACT_FROM_Y)  \
	ACT(SIGMOID,     sigmoid,     ACT_FROM_Y)  \
	ACT(TANH,        tanh,        ACT_FROM_Y)  \
	ACT(GELU,        gelu,        ACT_FROM_X)  \
	ACT(RELU6,       relu6,       ACT_FROM_Y)  \
	ACT(HARDSIGMOID, hardsigmoid, ACT_FROM_X)  \
	ACT(HARDSWISH,   hardswish,   ACT_FROM_X)  \
	ACT(SILU,        silu,        ACT_FROM_X)

typedef enum Act {
	ACT_NONE, /* not an activation */
#define ACT_ENUM(id, name, from) ACT_##id,
	ACTIVATIONS(ACT_ENUM)
#undef ACT_ENUM
	NUM_ACTS
} Act;

enum { ACT_FROM_Y, ACT_FROM_X };

#ifdef __CUDACC__
#define ACT_FN __host__ __device__ static inline
#else
#define ACT_FN static inline
#endif

/* The name of a, as in a .net file ("relu"); "" for ACT_NONE. */
ACT_FN const char *act_name(Act a)
{
	switch (a) {
#define ACT_NAME(id, name, from) case ACT_##id: return #name;
	ACTIVATIONS(ACT_NAME)
#undef ACT_NAME
	case ACT_NONE:
	case NUM_ACTS:
		break;
	}
	return "";
}

/* What the gradient op of a reads beside dy: ACT_FROM_Y or ACT_FROM_X. */
ACT_FN int act_from(Act a)
{
	switch (a) {
#define ACT_FROM(id, name, from) case ACT_##id: return from;
	ACTIVATIONS(ACT_FROM)
#undef ACT_FROM
	case ACT_NONE:
	case NUM_ACTS:
		break;
	}
	return ACT_FROM_Y;
}

/*
 * GELU as GPT-2 and PyTorch's gelu(approximate='tanh') compute it:
 * 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3).
 */
#define ACT_GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
#define ACT_GELU_C 0.044715

/* y = a(x) */
ACT_FN double act_value(Act a, double x)
{
	switch (a) {
	case ACT_RELU:
		return x > 0 ? x : 0;
	case ACT_SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case ACT_TANH:
		return tanh(x);
	case ACT_GELU:
		return 0.5 * x * (1.0 + tanh(ACT_GELU_K * (x + ACT_GELU_C * x * x * x)));
	case ACT_RELU6:
		return x > 0 ? (x < 6 ? x : 6) : 0;
	case ACT_HARDSIGMOID:
		return x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5;
	case ACT_HARDSWISH:
		return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
	case ACT_SILU:
		return x / (1.0 + exp(-x));
	case ACT_NONE:
	case NUM_ACTS:
		break;
	}
	return x;
}

/* dx = dy * a'(x), from `saved`: y or x as act_from(a) says */
ACT_FN double act_grad(Act a, double saved, double dy)
{
	switch (a) {
	case ACT_RELU:
		return saved > 0 ? dy : 0;
	case ACT_SIGMOID:
		return dy * saved * (1.0 - saved);
	case ACT_TANH:
		return dy * (1.0 - saved * saved);
	case ACT_GELU: { /* saved is x */
		double x = saved, t = tanh(ACT_GELU_K * (x + ACT_GELU_C * x * x * x));
		return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * ACT_GELU_K * (1.0 + 3.0 * ACT_GELU_C * x * x));
	}
	case ACT_RELU6: /* saved is y */
		return saved > 0 && saved < 6 ? dy : 0;
	case ACT_HARDSIGMOID: /* saved is x */
		return saved > -3 && saved < 3 ? dy / 6 : 0;
	case ACT_HARDSWISH:
		return saved < -3 ? 0 : saved <= 3 ? dy * (saved / 3 + 0.5) : dy;
	case ACT_SILU: {
		double sg = 1.0 / (1.0 + exp(-saved));
		return dy * sg * (1.0 + saved * (1.0 - sg));
	}
	case ACT_NONE:
	case NUM_ACTS:
		break;
	}
	return dy;
}

#endif
