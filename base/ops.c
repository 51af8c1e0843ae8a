/*
 * ops.c - the table of ops.h, expanded from ops.def.
 */
#include "ops.h"

#include <stddef.h>

#define GRAD true
#define NOGRAD false
const OpInfo op_info[NUM_OPS] = {
#define OP(id, nm, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act) \
	[OP_##id] = {#nm, min_in, (max_in) < 0 ? OP_MAX_ARGS - (nout) : (max_in), nout, grad, inplace, reuse, act},
#include "ops.def"
#undef OP
};
#undef GRAD
#undef NOGRAD

const char *op_name(long long op)
{
	return op >= 0 && op < NUM_OPS ? op_info[op].name : "?";
}

static Op find(Act a, bool grad)
{
	for (int op = 0; op < NUM_OPS; op++)
		if (op_info[op].act == a && op_info[op].grad == grad)
			return (Op)op;
	return NUM_OPS;
}

Op op_of_act(Act a)
{
	return find(a, true);
}

Op op_grad_of_act(Act a)
{
	return find(a, false);
}
