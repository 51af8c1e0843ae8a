/*
 * ops.h - the graph operations of ops.def, as the compiler and the
 * runtime both see them: the enum, names, arities, which inputs an op
 * overwrites and which activation it computes. What only the compiler
 * needs (shape and FLOP rules) is expanded from the same rows in
 * compiler/front/graph.c and compiler/front/flops.c.
 */
#ifndef AUTOTM_OPS_H
#define AUTOTM_OPS_H

#include <stdbool.h>
#include <math.h>
#include <stdint.h>

#include "activation.h"

/*
 * Arguments (inputs and outputs) of one kernel at most: what a kernel
 * description holds (RT_MAX_ARGS in autotm/rt.h) and what every backend
 * takes. A node with more is refused where it is built.
 */
enum { OP_MAX_ARGS = 16 };

/* The attributes an op reads, as `autotmc graph` prints them (compiler/report.c). */
typedef enum OpAttrs {
	ATTRS_NONE,
	ATTRS_CONV,      /* kernel, stride, pad, groups */
	ATTRS_WINDOW,    /* kernel, stride, pad */
	ATTRS_EPS,       /* eps */
	ATTRS_DROPOUT,   /* p, seed */
	ATTRS_AXIS,      /* axis */
	ATTRS_BIAS_AXIS, /* axis, where not the default (0) */
	ATTRS_SLICE,     /* axis, offset */
	ATTRS_OFFSET,    /* offset */
	ATTRS_MATMUL,    /* trans_a, trans_b, alpha */
	ATTRS_UPDATE,    /* the optimizer's hyperparameters */
	ATTRS_MOMENTUM,  /* the running statistics' momentum */
	ATTRS_CLAMP,     /* lo, hi */
	ATTRS_ATTENTION, /* heads, alpha, causal */
} OpAttrs;

/* The scratch a GPU kernel takes from the shared pool beside its arguments (the op_*_bytes below). */
typedef enum OpScratch {
	SCRATCH_NONE,
	SCRATCH_XENT_ROWS,     /* op_xent_row_bytes: a double per row of the logits */
	SCRATCH_MAXPOOL_ARGS,  /* op_maxpool_arg_bytes: a byte per window of dy */
	SCRATCH_BN_PARTIALS,   /* op_bn_partial_bytes: two doubles per channel and group of images */
	SCRATCH_BIAS_PARTIALS, /* op_bias_partial_bytes: a double per channel and group */
	SCRATCH_HEAD_BLOCK,    /* op_head_scratch_bytes: a block of logits and a double per row */
} OpScratch;

typedef enum Op {
#define OP(id, name, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act, attrs, scratch) OP_##id,
#include "ops.def"
#undef OP
	NUM_OPS
} Op;

typedef struct OpInfo {
	const char *name; /* printed name */
	int min_in;       /* fewest inputs */
	int max_in;       /* most inputs (ops.def's -1 resolved: OP_MAX_ARGS - nout) */
	int nout;         /* outputs */
	bool grad;        /* differentiable */
	unsigned inplace; /* bit i set: input i is overwritten */
	int reuse;        /* the input whose memory output 0 may take where it dies (ops.def), or -1 */
	Act act;          /* the activation it computes, or ACT_NONE */
	OpAttrs attrs;    /* the attributes it reads */
	OpScratch scratch; /* the GPU kernel's scratch */
} OpInfo;
extern const OpInfo op_info[NUM_OPS];

/* The name of op, or "?" for a number that is not an op. */
const char *op_name(long long op);

/* The forward op computing activation a, and the op computing its gradient. */
Op op_of_act(Act a);
Op op_grad_of_act(Act a);

/* The weights' updates (the optimizer's ops). */
static inline bool op_is_update(Op op)
{
	return op == OP_SGD || op == OP_SGD_MOMENTUM || op == OP_ADAMW;
}

/*
 * The one argument (inputs, then outputs) that both runtimes' kernels of
 * a float32 op take as bf16, the others float32, where fusion folds
 * autocast's cast beside it (compiler/front/fuse.h: fuse_casts): an
 * update's gradient (1), a sum of squares' gradient (0), a layernorm's
 * output y (3), a layernorm_bwd's dy (4); -1 for other ops. (An add of
 * two takes either input in either type: its kernels' own matter.)
 */
static inline int op_bf16_arg(Op op)
{
	if (op == OP_LAYERNORM)
		return 3;
	if (op == OP_LAYERNORM_BWD)
		return 4;
	return op == OP_GRAD_SUMSQ ? 0 : op_is_update(op) ? 1 : -1;
}

/* Whether the bf16 arguments of the mask bf are exactly op's op_bf16_arg. */
static inline bool op_bf16_arg_native(Op op, int64_t bf)
{
	int g = op_bf16_arg(op);
	return g >= 0 && bf == (int64_t)1 << g;
}

/*
 * The loss kernel (softmax_crossentropy) keeps one double per row of its
 * input beside its arguments, for `rows` rows. Both runtimes take these
 * bytes from their shared scratch; the compiler counts them in a GPU
 * placement's workspace (on a CPU they are measured with the rest of a
 * kernel's scratch).
 */
static inline int64_t op_xent_row_bytes(int64_t rows)
{
	return (int64_t)sizeof(double) * rows;
}

/*
 * dense_crossentropy_ids_grad takes its `rows` rows of v logits a block
 * at a time: op_head_block_rows rows (blocks of about OP_HEAD_BLOCK_BYTES
 * of float32 logits, of equal size), and keeps the block and a double
 * per row (op_xent_row_bytes) beside its arguments. Each block reads and
 * writes the weight's gradient once: fewer, larger blocks move less.
 */
enum { OP_HEAD_BLOCK_BYTES = 256 << 20 };

static inline int64_t op_head_block_rows(int64_t rows, int64_t v)
{
	if (rows <= 0 || v <= 0)
		return 1;
	int64_t per = OP_HEAD_BLOCK_BYTES / ((int64_t)sizeof(float) * v), blocks;
	per = per < 1 ? 1 : per;
	blocks = (rows + per - 1) / per;
	return (rows + blocks - 1) / blocks;
}

/* The block first (float32; a GPU's bf16 block takes half), rounded to 256 bytes, then the rows' losses. */
static inline int64_t op_head_scratch_bytes(int64_t rows, int64_t v)
{
	return ((int64_t)sizeof(float) * op_head_block_rows(rows, v) * v + 255) / 256 * 256 + op_xent_row_bytes(rows);
}

/*
 * The GPU runtime's batchnorm and batchnorm_bwd split each of the c
 * channels of an [n, c, inner] tensor among op_bn_groups(n, c) blocks of
 * whole images, so that layers of few channels still fill the GPU; each
 * block leaves its partial sums (two doubles) in the shared scratch, and
 * each channel combines its groups' in order (the same bits every run).
 * The compiler counts op_bn_partial_bytes in a GPU placement's workspace.
 */
static inline int64_t op_bn_groups(int64_t n, int64_t c)
{
	int64_t g = (1024 + c - 1) / c; /* about 1024 blocks in all, at most one an image */
	if (g > n)
		g = n;
	return g < 1 ? 1 : g;
}

static inline int64_t op_bn_partial_bytes(int64_t n, int64_t c)
{
	return 2 * (int64_t)sizeof(double) * c * op_bn_groups(n, c);
}

/*
 * A shape d of ndim dimensions as [outer, d[axis], inner] around
 * dimension `axis`: the elements before it and after it (concat and slice,
 * their gradients, mean).
 */
static inline void op_axis_dims(const int64_t *d, int ndim, int axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < axis; i++)
		*outer *= d[i];
	for (int i = axis + 1; i < ndim; i++)
		*inner *= d[i];
}

/*
 * Whether op's kernels apply activation act to their output themselves,
 * the activation then folded onto them (compiler/front/fuse.h): oneDNN's
 * post-ops for convolutions and dense layers, the runtimes' own kernels
 * for batchnorm and for an add (of two inputs where it is oneDNN's).
 */
static inline bool op_takes_act(Op op, Act act)
{
	switch (op) {
	case OP_CONV2D:
	case OP_DENSE:
		return act == ACT_RELU || act == ACT_SIGMOID || act == ACT_TANH;
	case OP_BATCHNORM:
	case OP_ADD:
		return act == ACT_RELU;
	default:
		return false;
	}
}

/*
 * The input of an op of nin inputs that is a sum folded into it
 * (compiler/front/fuse.h: the kernel adds it to its first output), or -1:
 * after batchnorm_bwd's five (and the output y of an activation fused onto
 * its batchnorm: act), layernorm_bwd's five, dropout's x, and a dense's
 * three (a dense without a bias takes none).
 */
static inline int op_sum_input(Op op, int nin, Act act)
{
	int k;
	switch (op) {
	case OP_BATCHNORM_BWD: k = 5 + (act != ACT_NONE); break;
	case OP_LAYERNORM_BWD: k = 5; break;
	case OP_DROPOUT: k = 1; break;
	case OP_DENSE: k = 3; break;
	default: return -1;
	}
	return nin > k ? k : -1;
}

/*
 * bias_grad's gradient dy as [n, c, inner]: the c channels of dimension
 * `axis` (0 reads as 1, the second; past the last dimension, 1), the
 * elements after it and the images (rows) before, of an ndim-dimensional
 * shape d.
 */
static inline void op_bias_dims(const int64_t *d, int ndim, int64_t axis, int64_t *n, int64_t *c, int64_t *inner)
{
	int ax = axis > 0 ? (int)axis : 1;
	int64_t all = 1;
	*c = ax < ndim ? d[ax] : 1;
	*inner = 1;
	for (int i = 0; i < ndim; i++)
		all *= d[i];
	for (int i = ax + 1; i < ndim; i++)
		*inner *= d[i];
	*n = all / (*c * *inner);
}

/*
 * The GPU runtime's bias_grad sums each channel of dy [n, c, inner] in
 * op_bias_groups groups of whole images, each group's sum into the
 * shared scratch (a double each), then a channel's groups in order (the
 * same bits every run): as batchnorm's groups where a channel has a
 * plane; where inner is 1 (a dense layer's bias over rows) a thread per
 * channel and group, about 32k in all, so that consecutive threads read
 * consecutive channels. One block a channel, as before, left most of the
 * GPU idle: VGG-19's first stage, 64 channels at 224 x 224 and batch 64,
 * took 6 ms to sum 822 MB.
 */
static inline int64_t op_bias_groups(int64_t n, int64_t c, int64_t inner)
{
	if (inner > 1)
		return op_bn_groups(n, c);
	int64_t g = (32768 + c - 1) / c; /* at most 32768: a grid's second dimension takes 65535 */
	if (g > n)
		g = n;
	return g < 1 ? 1 : g;
}

static inline int64_t op_bias_partial_bytes(int64_t n, int64_t c, int64_t inner)
{
	return (int64_t)sizeof(double) * c * op_bias_groups(n, c, inner);
}

/*
 * The GPU runtime's maxpool_bwd first finds each window's maximum, as its
 * offset in the window in one byte, for `windows` windows of kh x kw
 * (bytes of the shared scratch; none for windows of more than 255
 * elements, which it does without).
 */
static inline int64_t op_maxpool_arg_bytes(int64_t windows, int64_t kh, int64_t kw)
{
	return kh * kw <= 255 ? windows : 0;
}

/*
 * The scratch a GPU kernel of op takes (ops.def's scratch column), for
 * its input 0 of shape x (nx dimensions), its input 1 of shape y (ny;
 * NULL, 0 where it has none), its window kh x kw and its axis: what the
 * GPU runtime takes and a GPU placement counts.
 */
int64_t op_gpu_scratch(Op op, const int64_t *x, int nx, const int64_t *y, int ny, int64_t kh, int64_t kw,
                       int64_t axis);

/*
 * Whether the GPU runtime's kernels of op read and write bf16 arguments
 * themselves. A kernel of another op with bf16 arguments (its mask bf,
 * beyond op_bf16_arg_native's) runs widened: a float32 copy of each in
 * its workspace after its scratch, each copy at a 256-byte boundary.
 * op_gpu_widened_bytes is that workspace in all, beyond `scratch`, given
 * the elements of each argument (inputs, then outputs).
 */
bool op_gpu_native_bf16(Op op);
int64_t op_gpu_widened_bytes(Op op, int64_t bf, const int64_t *elems, int nargs, int64_t scratch);

/*
 * batchnorm_stats: what a channel's batch variance over n elements (biased,
 * as the normalisation uses) is multiplied by to be unbiased, as PyTorch's
 * running variance takes it: n / (n - 1), or 1 for a single element. The
 * interpreter and both runtimes update with it, in double.
 */
static inline double op_bn_unbias(int64_t n)
{
	return n > 1 ? (double)n / (double)(n - 1) : 1.0;
}

/*
 * batchnorm_eval's per-channel affine map y = x alpha + beta, from the
 * layer's weight and bias and its running statistics, in double (as the
 * interpreter, the CPU and the GPU compute it; PyTorch's eval-mode
 * batchnorm takes the same two steps):
 * alpha = weight / sqrt(running_var + eps), beta = bias - running_mean alpha.
 */
static inline void op_bn_eval_affine(double weight, double bias, double mean, double var, double eps, double *alpha,
                                     double *beta)
{
	*alpha = weight / sqrt(var + eps);
	*beta = bias - mean * *alpha;
}

#endif
