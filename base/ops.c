/*
 * ops.c - the table of ops.h, expanded from ops.def.
 */
#include "ops.h"

#include <stddef.h>

#define GRAD true
#define NOGRAD false
const OpInfo op_info[NUM_OPS] = {
#define OP(id, nm, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act, attrs, scratch) \
	[OP_##id] = {#nm, min_in, (max_in) < 0 ? OP_MAX_ARGS - (nout) : (max_in), nout, grad, inplace, reuse, act, attrs, \
	             scratch},
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

static int64_t elems(const int64_t *d, int n)
{
	int64_t e = 1;
	for (int i = 0; i < n; i++)
		e *= d[i];
	return e;
}

int64_t op_gpu_scratch(Op op, const int64_t *x, int nx, const int64_t *y, int ny, int64_t kh, int64_t kw,
                       int64_t axis)
{
	int64_t n, c, inner;
	switch (op_info[op].scratch) {
	case SCRATCH_NONE:
		return 0;
	case SCRATCH_XENT_ROWS: /* a row per id, or per sample */
		return op_xent_row_bytes(nx > 0 && x[nx - 1] > 0 ? elems(x, nx) / x[nx - 1] : 0);
	case SCRATCH_MAXPOOL_ARGS: /* a window per element of dy */
		return op_maxpool_arg_bytes(elems(y, ny), kh, kw);
	case SCRATCH_BN_PARTIALS:
		return op_bn_partial_bytes(nx > 0 ? x[0] : 1, nx > 1 ? x[1] : 1);
	case SCRATCH_BIAS_PARTIALS:
		op_bias_dims(x, nx, axis, &n, &c, &inner);
		return op_bias_partial_bytes(n, c, inner);
	case SCRATCH_HEAD_BLOCK: /* x [..., C], weight [V, C] */
		return op_head_scratch_bytes(nx > 0 && x[nx - 1] > 0 ? elems(x, nx) / x[nx - 1] : 0, ny > 0 ? y[0] : 0);
	}
	return 0;
}

bool op_gpu_native_bf16(Op op)
{
	switch (op) {
	case OP_CONV2D: case OP_CONV2D_BWD_DATA: case OP_CONV2D_BWD_FILTER:
	case OP_DENSE: case OP_DENSE_BWD_DATA: case OP_DENSE_BWD_WEIGHT: case OP_MATMUL:
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GLOBALAVGPOOL:
	case OP_MAXPOOL_BWD: case OP_AVGPOOL_BWD: case OP_GLOBALAVGPOOL_BWD:
	case OP_BATCHNORM: case OP_BATCHNORM_BWD: case OP_BATCHNORM_EVAL:
	case OP_RELU: case OP_SIGMOID: case OP_TANH: case OP_GELU:
	case OP_RELU6: case OP_HARDSIGMOID: case OP_HARDSWISH: case OP_SILU:
	case OP_RELU_BWD: case OP_SIGMOID_BWD: case OP_TANH_BWD: case OP_GELU_BWD:
	case OP_RELU6_BWD: case OP_HARDSIGMOID_BWD: case OP_HARDSWISH_BWD: case OP_SILU_BWD:
	case OP_DROPOUT: case OP_DROPOUT_BWD: case OP_ADD: case OP_BIAS_GRAD:
	case OP_RESHAPE: case OP_CONCAT: case OP_SLICE: case OP_SLICE_BWD:
	case OP_TRANSPOSE: case OP_BROADCAST: case OP_MUL: case OP_MUL_BWD_SCALE:
	case OP_CLAMP: case OP_CLAMP_BWD: case OP_POSITION:
	case OP_SPLIT_HEADS: case OP_MERGE_HEADS:
	case OP_SOFTMAX_XENT_IDS: case OP_SOFTMAX_XENT_IDS_BWD: case OP_SOFTMAX_XENT_IDS_GRAD:
	case OP_CAST: case OP_ATTENTION: case OP_ATTENTION_BWD: case OP_ACT_BIAS_GRAD:
	case OP_DENSE_XENT_IDS_GRAD: /* (cuda/head.c reads the description's types itself) */
		return true;
	default:
		return false;
	}
}

int64_t op_gpu_widened_bytes(Op op, int64_t bf, const int64_t *elems, int nargs, int64_t scratch)
{
	if (!bf || op_gpu_native_bf16(op) || op_bf16_arg_native(op, bf))
		return 0;
	int64_t at = scratch;
	for (int i = 0; i < nargs; i++)
		if (bf >> i & 1)
			at = (at + 255) / 256 * 256 + 4 * elems[i];
	return at - scratch;
}

