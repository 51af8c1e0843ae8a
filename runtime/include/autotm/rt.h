/*
 * autotm/rt.h - the ABI between generated training programs and
 * libautotmrt, the autotmc runtime.
 *
 * A program emitted by autotmc (compiler/emit/emit_llvm.c) is a `main` and a
 * `step` function that call these functions and nothing else:
 *
 *   main:  ctx = rt_begin(argc, argv, &program)        options, pools
 *          rt_kernel(ctx, id, desc)        for every kernel: create it once
 *          rt_tensor(ctx, &tensor)         for every weight, state, input, labels:
 *                                          initialise, or load from --weights
 *          repeat rt_iters(ctx) times:
 *              rt_step_begin(ctx); step(ctx); rt_step_end(ctx, loss)
 *          return rt_end(ctx)              save weights, report, results record
 *
 *   With the evaluation pass, main calls rt_eval_program(ctx, &eval,
 *   eval_step) before the loop and the runtime calls eval_step for each
 *   batch of an evaluation (--val DIR, every --eval-every K steps and at
 *   the end); an evaluation program (autotmc eval) has no loop: rt_end
 *   evaluates --data.
 *
 *   step:  base = rt_pool_base(ctx, RT_POOL_FAST / RT_POOL_SLOW)
 *          rt_data(ctx, RT_DATA_INPUT, addr)           this step's batch in
 *          rt_launch(ctx, id, args)                    kernels in schedule order
 *          rt_move(ctx, dst, src, bytes)               blocking moves
 *          h = rt_move_async(ctx, dst, src, bytes)     moves overlapping kernels
 *          rt_move_wait(ctx, h)
 *
 * Every tensor address is a pool base plus a constant offset chosen by the
 * compiler's memory plan. Kernels are described by a flat array of int64
 * (the layout below) so that the compiler emits one constant per kernel;
 * floating-point attributes are stored as their IEEE-754 bits.
 *
 * Failures (an allocation, a oneDNN or memkind call, a file) are reported
 * on stderr with what failed and why, and the program exits with status 1;
 * the slow tier's temporary directory is removed on every exit path.
 */
#ifndef AUTOTM_RT_H
#define AUTOTM_RT_H

#include <stdint.h>

/* Op numbers: the OP_* of ops.def (base/ops.def, installed beside this file), in its order. */
typedef enum RtOp {
#define OP(id, name, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act, attrs, scratch) RT_OP_##id,
#include "ops.def"
#undef OP
	RT_NUM_OPS
} RtOp;

enum { RT_MAX_ARGS = 16, RT_MAX_DIMS = 4 };

/*
 * Data parallel: consecutive gradients travel between the ranks in one
 * message of up to this many bytes (runtime/exchange.c), which the cost
 * model charges a message's latency for (compiler/cost/costmodel_ranks.c).
 */
enum { RT_RANKS_BUCKET_BYTES = 25 << 20 };

/* Index of each field in a kernel description (int64_t desc[RT_DESC_LEN]). */
enum RtDescField {
	RT_D_OP,        /* RtOp */
	RT_D_NIN,       /* inputs */
	RT_D_NOUT,      /* outputs */
	RT_D_KH, RT_D_KW, RT_D_SH, RT_D_SW, RT_D_PH, RT_D_PW, /* window, stride, padding */
	RT_D_GROUPS,    /* convolution groups */
	RT_D_AXIS,      /* concat / slice axis */
	RT_D_OFFSET,    /* slice offset */
	RT_D_SEED,      /* dropout stream */
	RT_D_EPS,       /* batchnorm epsilon (double bits) */
	RT_D_P,         /* dropout probability (double bits) */
	RT_D_BN_MOMENTUM, /* batchnorm_stats: the running statistics' momentum (double bits) */
	/* the updates (sgd, sgd_momentum, adamw): the optimizer (base/optim.h's OptimHyper) */
	RT_D_OPTIM,     /* OPTIM_* */
	RT_D_LR,        /* base learning rate (double bits) */
	RT_D_MOMENTUM,  /* sgd's momentum (double bits) */
	RT_D_NESTEROV,  /* sgd: Nesterov momentum (0 or 1) */
	RT_D_WD,        /* weight decay (double bits) */
	RT_D_BETA1, RT_D_BETA2, RT_D_ADAM_EPS, /* adamw (double bits) */
	RT_D_CLIP,      /* the largest global gradient norm (double bits; 0: none) */
	RT_D_SCHED,     /* LR_*: the schedule */
	RT_D_WARMUP, RT_D_SCHED_STEPS, RT_D_FLOOR, /* cosine (the floor in double bits) */
	RT_D_EVERY, RT_D_GAMMA, /* step decay (gamma in double bits) */
	RT_D_TRANS_A, RT_D_TRANS_B, /* matmul: a, b read transposed (0 or 1) */
	RT_D_ALPHA,     /* matmul: the product's factor; attention: the scores' (double bits) */
	RT_D_LO, RT_D_HI, /* clamp: the range (double bits) */
	RT_D_BF16,      /* bit i set: argument i holds bfloat16 (autotm/rt.h's rt_arg_bf16); clear: float32 */
	RT_D_ACT,       /* conv2d, dense, batchnorm: base/activation.h's Act applied to the output (0: none) */
	RT_D_CAUSAL,    /* attention: causal (0 or 1) */
	RT_D_BLOCKED,   /* bit i set: argument i ([N, C, H, W], C a multiple of 16) is channel-blocked (rt_arg_blocked) */
	RT_D_ASHAPE,    /* attribute shape: ndim, then RT_MAX_DIMS sizes */
	RT_D_ARGS = RT_D_ASHAPE + 1 + RT_MAX_DIMS,
	/* then per argument, inputs first then outputs: ndim, then RT_MAX_DIMS sizes */
	/*
	 * Convolutions on the GPU: 1 + the algorithm the placement chose
	 * (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, or the GPU
	 * backend's own RT_CONV_* of its conv_gemm.h), with RT_ALGO_WS_ARG
	 * where its workspace is a block of the placement's fast pool whose
	 * address the launch passes after the arguments (args[nin + nout]),
	 * else in the runtime's own workspace, shared by every kernel; 0: the
	 * runtime's choice.
	 */
	RT_D_ALGO = RT_D_ARGS + (1 + RT_MAX_DIMS) * RT_MAX_ARGS,
	RT_DESC_LEN,
};

enum { RT_ALGO_WS_ARG = 1 << 16 }; /* RT_D_ALGO: the workspace is passed after the arguments */

/* The dimensions of argument i of a description. */
#define RT_ARG_NDIM(desc, i) ((desc)[RT_D_ARGS + (1 + RT_MAX_DIMS) * (i)])
#define RT_ARG_DIM(desc, i, d) ((desc)[RT_D_ARGS + (1 + RT_MAX_DIMS) * (i) + 1 + (d)])

/* Whether argument i of a description holds bfloat16 (2 bytes an element) rather than float32 (4). */
static inline int rt_arg_bf16(const int64_t *desc, int i)
{
	return (int)((uint64_t)desc[RT_D_BF16] >> i & 1u);
}

/*
 * Whether argument i of a description is stored channel-blocked, in
 * oneDNN's nChw16c (aBcd16b): element (n, c, h, w) of [N, C, H, W] at
 * ((n * C/16 + c/16) * H * W + h * W + w) * 16 + c % 16, the layout of the
 * CPU's fastest convolutions; else row-major (plain). Only the CPU's
 * kernels take it (compiler/front/layout.h says which), and the bytes are
 * the same: C is a multiple of 16.
 */
static inline int rt_arg_blocked(const int64_t *desc, int i)
{
	return (int)((uint64_t)desc[RT_D_BLOCKED] >> i & 1u);
}

/* The bytes of argument i of a description: its elements in its type (ids are 4 bytes as floats are). */
static inline int64_t rt_arg_bytes(const int64_t *desc, int i)
{
	int64_t n = 1;
	for (int64_t d = 0; d < RT_ARG_NDIM(desc, i); d++)
		n *= RT_ARG_DIM(desc, i, d);
	return n * (rt_arg_bf16(desc, i) ? 2 : 4);
}

/*
 * The argument of a kernel that holds integer ids (int32), or -1; *range:
 * they are in [0, range) (profilers fill it with such ids).
 */
static inline int rt_ids_arg(const int64_t *desc, int64_t *range)
{
	switch (desc[RT_D_OP]) {
	case RT_OP_EMBEDDING:
		*range = RT_ARG_DIM(desc, 1, 0);
		return 0;
	case RT_OP_EMBEDDING_BWD:
		*range = RT_ARG_DIM(desc, 2, 0);
		return 1;
	case RT_OP_SOFTMAX_XENT_IDS:
	case RT_OP_SOFTMAX_XENT_IDS_BWD:
	case RT_OP_SOFTMAX_XENT_IDS_GRAD:
		*range = RT_ARG_DIM(desc, 0, RT_ARG_NDIM(desc, 0) - 1);
		return 1;
	case RT_OP_DENSE_XENT_IDS_GRAD: /* x, weight [V, C], ids */
		*range = RT_ARG_DIM(desc, 1, 0);
		return 2;
	default:
		*range = 0;
		return -1;
	}
}

enum { RT_POOL_FAST = 0, RT_POOL_SLOW = 1 };
enum { RT_DATA_INPUT = 0, RT_DATA_LABELS = 1 };

/* Tensor roles, as compiler/front/graph.h's TensorKind. */
/*
 * RT_TENSOR_STATE is the optimizer's (momentum); RT_TENSOR_STATS is state
 * of the model (batchnorm's running statistics), loaded from --weights
 * when the file has it and saved with the weights.
 */
enum { RT_TENSOR_INPUT = 0, RT_TENSOR_LABELS = 1, RT_TENSOR_WEIGHT = 2, RT_TENSOR_STATE = 6, RT_TENSOR_STATS = 7 };

/* What the compiler knows of the program, emitted as a constant. */
typedef struct RtProgram {
	const char *model;         /* model name */
	int64_t fast_bytes;        /* size of the fast pool */
	int64_t slow_bytes;        /* size of the slow pool (0: none) */
	int64_t fast_limit;        /* the limit the placement was made for (0: none) */
	int32_t nkernels;          /* kernels to create */
	int32_t ntensors;          /* rt_tensor calls that follow */
	double predicted_seconds;  /* predicted step time (0: no prediction) */
	const char *record;        /* the compile-time fields of the results record, a JSON object */
	int64_t flags;             /* RT_PROGRAM_* */
} RtProgram;

/* RtProgram.flags */
enum {
	/*
	 * Unified-memory baseline (GPU): the fast pool is managed memory
	 * (cudaMallocManaged) and the device is capped at fast_limit by
	 * occupying the rest of its memory; there is no slow pool and no move.
	 */
	RT_PROGRAM_MANAGED = 1,
	/* A training program with the forward-only evaluation pass (--val DIR): rt_eval_program follows. */
	RT_PROGRAM_EVAL_PASS = 2,
	/*
	 * An evaluation program (autotmc eval): no training step; its tensors
	 * are the evaluation pass's, and rt_end evaluates --data once.
	 */
	RT_PROGRAM_EVAL_ONLY = 4,
	/*
	 * GPU: float32 convolutions and products may use TF32 tensor cores
	 * (autotmc --tf32); the runtime sets AUTOTM_TF32=1 before its kernels
	 * open, which read it.
	 */
	RT_PROGRAM_TF32 = 8,
};


/* Element types of RtTensor.dtype. */
enum { RT_DTYPE_F32 = 0, RT_DTYPE_I32 = 1 };

/* A tensor that lives across steps or comes from outside (weight, state, input, labels). */
typedef struct RtTensor {
	const char *name;          /* its name in the model and in weight files */
	int32_t kind;              /* RT_TENSOR_* */
	int32_t pool;              /* RT_POOL_* where it lives between steps */
	int64_t offset;            /* byte offset in that pool */
	int64_t ndim;              /* dimensions */
	int64_t shape[RT_MAX_DIMS];/* sizes */
	int32_t init;              /* RT_INIT_* of autotm/random.h; the stream is
	                              rt_stream(--seed, name) */
	int32_t dtype;             /* RT_DTYPE_*: f32, or i32 ids (input, labels) in [0, hi) */
	double lo, hi, value;      /* its parameters */
} RtTensor;

/*
 * The forward-only evaluation pass of a program: the network in
 * evaluation mode (batchnorm by its running statistics, no dropout) and
 * the loss, placed by the compiler like the training step, in the same
 * fast pool. In a training program its tensors have homes of their own:
 * before an evaluation the weights, state and statistics that live in the
 * fast pool wait in the slow pool at park_offset (their training homes'
 * order, each rounded up to RT_PARK_ALIGN bytes), the weights and
 * statistics are copied to the evaluation's homes, and after it the
 * parked tensors go back.
 */
enum { RT_PARK_ALIGN = 64 };
typedef struct RtEvalProgram {
	int64_t fast_bytes;        /* the fast pool it uses (at most RtProgram.fast_bytes) */
	int64_t park_offset;       /* training programs: where the parked tensors go in the slow pool */
	int32_t ntensors;          /* entries in tensors */
	const RtTensor *tensors;   /* its weights, statistics, input and labels, where it reads them */
	double predicted_seconds;  /* predicted time of a batch (0: no prediction) */
} RtEvalProgram;

typedef struct RtCtx RtCtx;

RtCtx *rt_begin(int argc, char **argv, const RtProgram *program);
void *rt_pool_base(RtCtx *ctx, int32_t pool);
void rt_kernel(RtCtx *ctx, int32_t id, const int64_t *desc);
void rt_tensor(RtCtx *ctx, const RtTensor *t);
int64_t rt_iters(RtCtx *ctx);
void rt_step_begin(RtCtx *ctx);
void rt_data(RtCtx *ctx, int32_t which, void *dst);
void rt_launch(RtCtx *ctx, int32_t id, void *const *args);
void rt_move(RtCtx *ctx, void *dst, const void *src, int64_t bytes);
int32_t rt_move_async(RtCtx *ctx, void *dst, const void *src, int64_t bytes);
void rt_move_wait(RtCtx *ctx, int32_t handle);
void rt_step_end(RtCtx *ctx, const float *loss);
/*
 * The evaluation pass (RT_PROGRAM_EVAL_PASS, RT_PROGRAM_EVAL_ONLY): its
 * description and the function that evaluates one batch, which takes its
 * batch with rt_data and ends with rt_eval_output on the logits (the
 * input of the loss's softmax, [batch, classes]).
 */
void rt_eval_program(RtCtx *ctx, const RtEvalProgram *ev, void (*batch)(RtCtx *ctx));
void rt_eval_output(RtCtx *ctx, const float *logits);
int rt_end(RtCtx *ctx);

#endif
