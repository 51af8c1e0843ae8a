/*
 * cuda/kernels.c - the kernels of the CUDA backend (its table's kernels
 * group): every op of ops.def, forward and backward, on the compute
 * stream, as cuDNN, cuBLAS or a CUDA kernel of cuda/elementwise.cu.
 *
 * The semantics are the CPU backend's (runtime/cpu/kernels.c) and the
 * reference interpreter's (compiler/interp/interp.c); every tensor is plain
 * row-major (NCHW), float32 or, in a bf16 program, bfloat16 as its
 * description says (RT_D_BF16), wherever its pool is. Who computes what:
 *
 *   cuDNN     convolution forward, backward data and backward filter
 *             (cross-correlation, groups), max / average / global average
 *             pooling forward (average counts the padding), softmax and
 *             its backward;
 *   cuBLAS    dense and its two gradients (row-major products as
 *             column-major ones: see the comments at make_dense), and
 *             the backend's own algorithms of 1x1 convolutions
 *             (conv_gemm.h: RT_CONV_GEMM, RT_CONV_GEMM_BATCHED), offered
 *             beside cuDNN's;
 *   cuda/attention.c  fused attention: cuBLAS products in chunks of queries;
 *   our own   the rest: activations, dropout (the mask of autotm/random.h),
 *             add, batchnorm (cuDNN keeps 1 / sqrt(var + eps) and an
 *             unbiased running variance, not the biased batch variance
 *             ops.def asks for), the pooling gradients (max: to each
 *             window's FIRST maximum), bias_grad, the loss and its
 *             gradient, the gradients' norm, the updates; reshape, concat and slice are
 *             copies (cudaMemcpy2DAsync).
 *
 * Convolution algorithms are chosen once per kernel from cuDNN's
 * heuristics (cudnnGetConvolution*Algorithm_v7), then ours: the first deterministic
 * one whose workspace cuDNN can size and fits in what the limit leaves
 * beside the fast pool, so that a run gives the same bits every time and
 * stays within its limit (a nondeterministic one only if no other fits:
 * a warning and --profile-kernels then name it); unless the placement
 * chose the algorithm from a measured profile. The algorithm a placement
 * chose runs in the workspace the placement gave it, a block of the fast
 * pool live only while it runs (RT_ALGO_WS_ARG); the others share one
 * workspace, the largest any needs (kernels run one at a time on the
 * stream), where the loss kernel keeps its rows' losses and batchnorm
 * its partial sums too; it is the "scratch" of rt_end's report. autotm-gpu-profile (cuda/gpuprof.c) also
 * times every other algorithm cuDNN reports, and ours, through the
 * functions at the end of this file (gpu.h).
 *
 * bf16: products by cublasGemmEx and convolutions by cuDNN on bf16 tensors,
 * both summing in float32 (tensor cores); pooling forward, a convolution's
 * bias and the rest by our own kernels, which read and write either type
 * (cuda/elementwise.h). An op with no bf16 kernel (base/ops.h:
 * op_gpu_native_bf16) runs widened: its bf16 arguments copied to float32
 * in the workspace, and its outputs rounded back (run_widened), as the
 * CPU backend does; the placement counts the copies.
 *
 * TF32: off by default, so that the GPU trains as the CPU does within
 * float32 rounding: cuBLAS runs in CUBLAS_DEFAULT_MATH (no TF32 for
 * sgemm) and convolutions in CUDNN_FMA_MATH (CUDNN_DEFAULT_MATH would
 * allow TF32 on Ampere and later). AUTOTM_TF32=1 in the environment turns
 * it on: CUBLAS_TF32_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH and
 * algorithms that use tensor cores.
 */
#include "gpu.h"

#include <cublas_v2.h>
#include <cudnn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conv_gemm.h"
#include "elementwise.h"

/* The state: the handles, bound to the compute stream, and the shared workspace. */
typedef struct GpuState {
	cudaStream_t stream;   /* the compute stream (gpu_stream) */
	cudnnHandle_t dnn;     /* cuDNN */
	cublasHandle_t blas;   /* cuBLAS */
	GpuLtHandle lt;        /* cuBLASLt (fused dense layers: cuda/dense_lt.c), NULL under AUTOTM_CUBLASLT=0 */
	bool tf32;             /* AUTOTM_TF32=1 */
	void *workspace;       /* cuDNN's workspace, shared by every kernel (device memory) */
	size_t workspace_size; /* its size: the most any kernel needs */
	int64_t ws_budget;     /* the most a heuristic algorithm's workspace may take: the limit less the
	                          fast pool (-1: no limit) */
} GpuState;

/* Which of the three convolution ops a kernel is, if one. */
typedef enum ConvDir {
	CONV_NONE,       /* not a convolution */
	CONV_FWD,        /* conv2d */
	CONV_BWD_DATA,   /* conv2d_bwd_data */
	CONV_BWD_FILTER, /* conv2d_bwd_filter */
} ConvDir;

/* A kernel: its description and, for a cuDNN op, its descriptors. */
typedef struct GpuKernel {
	int32_t id;                       /* the id generated code launches it by */
	RtOp op;                          /* what it computes */
	int64_t desc[RT_DESC_LEN];        /* its description */
	ConvDir dir;                      /* convolutions: which one (gpu_create sets it) */
	cudnnTensorDescriptor_t x, y;     /* cuDNN: the input and output side (x / dx, y / dy) */
	cudnnTensorDescriptor_t bias;     /* conv2d with a bias: [1, O, 1, 1] */
	cudnnFilterDescriptor_t w;        /* convolutions: the weights [O, C/g, kh, kw] */
	cudnnConvolutionDescriptor_t conv;/* convolutions */
	int algo;                         /* convolutions: the cudnnConvolution*Algo_t chosen */
	size_t ws;                        /* workspace it needs: a convolution's algorithm's; softmax_crossentropy's rows' losses */
	int64_t head_rows;                /* dense_crossentropy_ids_grad: the rows of its blocks */
	GpuLt *lt;                        /* a fused dense layer cuBLASLt runs whole, or NULL */
	cudnnPoolingDescriptor_t pool;    /* pooling forward */
	unsigned bf;                      /* the arguments it reads and writes as bf16 (RT_D_BF16's bits; 0 when widened) */
	bool widen;                       /* a float32-only kernel with bf16 arguments: runs on float32 copies */
	size_t wide_at[RT_MAX_ARGS];      /* widen: each bf16 argument's copy, at this offset in the workspace */
	char impl[64];                    /* implementation, for --profile-kernels */
} GpuKernel;

/* ---- checking cuDNN and cuBLAS calls -------------------------------------- */

static void cudnn_check(cudnnStatus_t st, const char *what, const char *file, int line)
{
	if (st != CUDNN_STATUS_SUCCESS)
		rt_fatal("%s:%d: %s failed: %s", file, line, what, cudnnGetErrorString(st));
}
#define CUDNN_CHECK(call) cudnn_check((call), #call, __FILE__, __LINE__)

static void cublas_check(cublasStatus_t st, const char *what, const char *file, int line)
{
	if (st != CUBLAS_STATUS_SUCCESS)
		rt_fatal("%s:%d: %s failed: %s", file, line, what, cublasGetStatusName(st));
}
#define CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

/* ---- reading descriptions ------------------------------------------------- */

static double attr_f64(const int64_t *desc, int field)
{
	double v;
	memcpy(&v, &desc[field], sizeof v);
	return v;
}

/* Dimension d of argument i, 1 past its last dimension. */
static int64_t dim_or_1(const int64_t *desc, int i, int d)
{
	return d < RT_ARG_NDIM(desc, i) ? RT_ARG_DIM(desc, i, d) : 1;
}

static int64_t arg_elems(const int64_t *desc, int i)
{
	return rt_elems(RT_ARG_NDIM(desc, i), &RT_ARG_DIM(desc, i, 0));
}

/* Elements after dimension `from` of argument i (H * W for NCHW and from = 2). */
static int64_t inner_elems(const int64_t *desc, int i, int from)
{
	int64_t n = 1;
	for (int64_t d = from; d < RT_ARG_NDIM(desc, i); d++)
		n *= RT_ARG_DIM(desc, i, d);
	return n;
}

/* A size cuDNN or cuBLAS takes as an int. */
static int to_int(const GpuKernel *k, int64_t v)
{
	if (v > INT_MAX)
		rt_fatal("kernel %d (%s): a size of %lld is too large for cuDNN and cuBLAS", k->id, op_name(k->op),
		         (long long)v);
	return (int)v;
}

/* ---- cuDNN descriptors ------------------------------------------------------ */

/* The cuDNN type of argument i. */
static cudnnDataType_t cudnn_type(const GpuKernel *k, int i)
{
	return k->bf >> i & 1u ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* Argument i as an NCHW tensor (fewer dimensions padded with 1). */
static cudnnTensorDescriptor_t tensor_desc(const GpuKernel *k, int i)
{
	cudnnTensorDescriptor_t t;
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&t));
	const int64_t *d = k->desc;
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, cudnn_type(k, i), to_int(k, dim_or_1(d, i, 0)),
	                                       to_int(k, dim_or_1(d, i, 1)), to_int(k, dim_or_1(d, i, 2)),
	                                       to_int(k, dim_or_1(d, i, 3))));
	return t;
}

/* One candidate convolution algorithm, whichever the direction. */
typedef struct ConvAlgo {
	int algo;                 /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
	cudnnStatus_t status;     /* whether cuDNN can run it here */
	cudnnDeterminism_t det;   /* whether it gives the same bits every run */
	cudnnMathType_t math;     /* the math type it was rated with */
} ConvAlgo;

enum { MAX_CONV_ALGOS = GPU_MAX_CONV_ALGOS };

/* The algorithms' names: cuDNN's enum constants without their prefix, in lower case. */
static const char *const fwd_algo_names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                                             "fft", "fft_tiling", "winograd", "winograd_nonfused"};
static const char *const bwd_data_algo_names[] = {"algo_0", "algo_1", "fft", "fft_tiling", "winograd",
                                                  "winograd_nonfused"};
static const char *const bwd_filter_algo_names[] = {"algo_0", "algo_1", "fft", "algo_3", "winograd",
                                                    "winograd_nonfused", "fft_tiling"};
_Static_assert(sizeof fwd_algo_names / sizeof *fwd_algo_names == CUDNN_CONVOLUTION_FWD_ALGO_COUNT &&
                   sizeof bwd_data_algo_names / sizeof *bwd_data_algo_names == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT &&
                   sizeof bwd_filter_algo_names / sizeof *bwd_filter_algo_names ==
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
               "a name for every cuDNN convolution algorithm");
_Static_assert((int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 2 <= (int)MAX_CONV_ALGOS &&
                   (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT + 2 <= (int)MAX_CONV_ALGOS &&
                   (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT + 2 <= (int)MAX_CONV_ALGOS,
               "room for every algorithm cuDNN reports and ours (conv_gemm.h)");
_Static_assert((int)RT_CONV_GEMM >= (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT &&
                   (int)RT_CONV_GEMM >= (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT &&
                   (int)RT_CONV_GEMM >= (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
               "our algorithms' numbers above cuDNN's");

static const char *conv_algo_name(ConvDir dir, int algo)
{
	if (algo == RT_CONV_GEMM)
		return "gemm_1x1";
	if (algo == RT_CONV_GEMM_BATCHED)
		return "gemm_1x1_batched";
	const char *const *names = NULL;
	int n = 0;
	switch (dir) {
	case CONV_FWD:
		names = fwd_algo_names, n = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
		break;
	case CONV_BWD_DATA:
		names = bwd_data_algo_names, n = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
		break;
	case CONV_BWD_FILTER:
		names = bwd_filter_algo_names, n = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
		break;
	case CONV_NONE:
		break;
	}
	return algo >= 0 && algo < n ? names[algo] : "?";
}

/* Whether k may use tensor cores: with TF32 on, or on bf16 data (whose products accumulate in float32). */
static bool tensor_ok(const GpuState *s, const GpuKernel *k)
{
	return s->tf32 || k->bf != 0;
}

/* " tf32" or " bf16" after an algorithm's name where it uses tensor cores. */
static const char *tensor_tag(const GpuKernel *k, bool tensor_op)
{
	return !tensor_op ? "" : k->bf ? " bf16" : " tf32";
}

static bool is_tensor_op(cudnnMathType_t math)
{
	return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* Whether algorithm `algo` is ours (conv_gemm.h), not cuDNN's. */
static bool is_ours(int algo)
{
	return algo == RT_CONV_GEMM || algo == RT_CONV_GEMM_BATCHED;
}

/* Who runs algorithm `algo`, for the kernel's implementation name. */
static const char *algo_library(int algo)
{
	return is_ours(algo) ? "cuBLAS" : "cuDNN";
}

/*
 * cuDNN's heuristic ranking of the algorithms of k's direction, best
 * first, then ours where they apply (conv_gemm.h: deterministic, in the
 * math of the cuBLAS handle).
 */
static int conv_algos(GpuState *s, GpuKernel *k, ConvAlgo *out)
{
	int n = 0;
	switch (k->dir) {
	case CONV_FWD: {
		cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
		CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(s->dnn, k->x, k->w, k->conv, k->y,
		                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, p));
		for (int i = 0; i < n; i++)
			out[i] = (ConvAlgo){p[i].algo, p[i].status, p[i].determinism, p[i].mathType};
		break;
	}
	case CONV_BWD_DATA: {
		cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
		CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(s->dnn, k->w, k->y, k->conv, k->x,
		                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, p));
		for (int i = 0; i < n; i++)
			out[i] = (ConvAlgo){p[i].algo, p[i].status, p[i].determinism, p[i].mathType};
		break;
	}
	case CONV_BWD_FILTER: {
		cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
		CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(s->dnn, k->x, k->y, k->conv, k->w,
		                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, p));
		for (int i = 0; i < n; i++)
			out[i] = (ConvAlgo){p[i].algo, p[i].status, p[i].determinism, p[i].mathType};
		break;
	}
	case CONV_NONE:
		RT_ICE("kernel %d (%s) is not a convolution", k->id, op_name(k->op));
	}
	for (int algo = RT_CONV_GEMM; algo <= RT_CONV_GEMM_BATCHED; algo++)
		if (conv_gemm_offers(k->desc, algo))
			out[n++] = (ConvAlgo){algo, CUDNN_STATUS_SUCCESS, CUDNN_DETERMINISTIC,
			                      s->tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH};
	return n;
}

/* The shared workspace holds at least k's k->ws bytes. */
static void grow_workspace(GpuState *s, GpuKernel *k)
{
	if (k->ws <= s->workspace_size)
		return;
	CUDA_CHECK(cudaFree(s->workspace)); /* waits for the kernels using it */
	s->workspace = NULL;
	cudaError_t err = cudaMalloc(&s->workspace, k->ws);
	if (err != cudaSuccess) {
		char b[32];
		rt_fatal("kernel %d (%s): cannot allocate the kernels' workspace (%s): %s", k->id, op_name(k->op),
		         fmt_bytes((int64_t)k->ws, b, sizeof b), cudaGetErrorString(err));
	}
	s->workspace_size = k->ws;
}

/* The workspace of algorithm `algo` for k; a failure means it cannot run here. */
static cudnnStatus_t conv_workspace(GpuState *s, GpuKernel *k, int algo, size_t *bytes)
{
	if (is_ours(algo)) {
		if (!conv_gemm_offers(k->desc, algo))
			return CUDNN_STATUS_NOT_SUPPORTED;
		*bytes = (size_t)conv_gemm_workspace(k->desc, algo);
		return CUDNN_STATUS_SUCCESS;
	}
	switch (k->dir) {
	case CONV_FWD:
		return cudnnGetConvolutionForwardWorkspaceSize(s->dnn, k->x, k->w, k->conv, k->y,
		                                               (cudnnConvolutionFwdAlgo_t)algo, bytes);
	case CONV_BWD_DATA:
		return cudnnGetConvolutionBackwardDataWorkspaceSize(s->dnn, k->w, k->y, k->conv, k->x,
		                                                    (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
	case CONV_BWD_FILTER:
		return cudnnGetConvolutionBackwardFilterWorkspaceSize(s->dnn, k->x, k->y, k->conv, k->w,
		                                                      (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
	case CONV_NONE:
		break;
	}
	RT_ICE("kernel %d (%s) is not a convolution", k->id, op_name(k->op));
}

/* Choose k's algorithm: the best-ranked usable one, deterministic if there is one. */
static void choose_conv_algo(GpuState *s, GpuKernel *k)
{
	ConvAlgo a[MAX_CONV_ALGOS];
	int n = conv_algos(s, k, a);
	if (k->desc[RT_D_ALGO] > 0) { /* the placement's choice (from the GPU profile's algo lines) */
		int algo = (int)((k->desc[RT_D_ALGO] & (RT_ALGO_WS_ARG - 1)) - 1);
		for (int i = 0; i < n; i++) {
			if (a[i].algo != algo || a[i].status != CUDNN_STATUS_SUCCESS)
				continue;
			bool tensor_op = is_tensor_op(a[i].math);
			if (tensor_op && !tensor_ok(s, k))
				continue;
			CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, tensor_ok(s, k) ? a[i].math : CUDNN_FMA_MATH));
			if (conv_workspace(s, k, algo, &k->ws) != CUDNN_STATUS_SUCCESS)
				continue;
			k->algo = algo;
			snprintf(k->impl, sizeof k->impl, "%s %s%s (placed)", algo_library(algo), conv_algo_name(k->dir, algo),
			         tensor_tag(k, tensor_op));
			return;
		}
		rt_fatal("kernel %d (%s): the placement chose %s's %s, which is not offered for this convolution on "
		         "this GPU%s; profile this GPU again", k->id, op_name(k->op), algo_library(algo),
		         conv_algo_name(k->dir, algo), s->tf32 ? "" : " without TF32");
	}
	size_t left_out = 0; /* the smallest workspace of an algorithm left out for want of room */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			bool tensor_op = is_tensor_op(a[i].math);
			if (a[i].status != CUDNN_STATUS_SUCCESS || (tensor_op && !tensor_ok(s, k)) ||
			    (pass == 0 && a[i].det != CUDNN_DETERMINISTIC))
				continue;
			cudnnMathType_t math = tensor_ok(s, k) ? a[i].math : CUDNN_FMA_MATH;
			CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, math));
			size_t ws;
			if (conv_workspace(s, k, a[i].algo, &ws) != CUDNN_STATUS_SUCCESS)
				continue;
			if (s->ws_budget >= 0 && ws > (size_t)s->ws_budget) {
				left_out = left_out == 0 || ws < left_out ? ws : left_out;
				continue;
			}
			k->algo = a[i].algo;
			k->ws = ws;
			snprintf(k->impl, sizeof k->impl, "%s %s%s%s", algo_library(a[i].algo),
			         conv_algo_name(k->dir, a[i].algo), tensor_tag(k, tensor_op), pass ? " nondeterministic" : "");
			if (pass)
				rt_warn("kernel %d (%s): no deterministic cuDNN algorithm fits here; with %s, runs may differ "
				        "in their last bits", k->id, op_name(k->op), k->impl);
			return;
		}
	if (left_out > 0) {
		char b1[32], b2[32];
		rt_fatal("kernel %d (%s): every algorithm cuDNN offers for this convolution needs a workspace (at least "
		         "%s) larger than the limit leaves beside the fast pool (%s)", k->id, op_name(k->op),
		         fmt_bytes((int64_t)left_out, b1, sizeof b1), fmt_bytes(s->ws_budget, b2, sizeof b2));
	}
	rt_fatal("kernel %d (%s): cuDNN has no algorithm for this convolution%s", k->id, op_name(k->op),
	         s->tf32 ? "" : " without TF32");
}

/*
 * conv2d: x, weight[, bias] -> y;  conv2d_bwd_data: dy, weight -> dx;
 * conv2d_bwd_filter: x, dy -> dweight. k->x describes x (dx), k->y y (dy).
 */
static void make_conv(GpuState *s, GpuKernel *k, ConvDir dir)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN], xi = 0, yi = 0, wi = 0;
	k->dir = dir;
	switch (dir) {
	case CONV_FWD: xi = 0, wi = 1, yi = nin; break;
	case CONV_BWD_DATA: xi = 2, wi = 1, yi = 0; break;
	case CONV_BWD_FILTER: xi = 0, wi = 2, yi = 1; break;
	case CONV_NONE: RT_ICE("kernel %d (%s) is not a convolution", k->id, op_name(k->op));
	}
	k->x = tensor_desc(k, xi);
	k->y = tensor_desc(k, yi);
	CUDNN_CHECK(cudnnCreateFilterDescriptor(&k->w));
	CUDNN_CHECK(cudnnSetFilter4dDescriptor(k->w, cudnn_type(k, wi), CUDNN_TENSOR_NCHW, to_int(k, RT_ARG_DIM(d, wi, 0)),
	                                       to_int(k, RT_ARG_DIM(d, wi, 1)), to_int(k, RT_ARG_DIM(d, wi, 2)),
	                                       to_int(k, RT_ARG_DIM(d, wi, 3))));
	CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&k->conv));
	CUDNN_CHECK(cudnnSetConvolution2dDescriptor(k->conv, (int)d[RT_D_PH], (int)d[RT_D_PW], (int)d[RT_D_SH],
	                                            (int)d[RT_D_SW], 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CUDNN_CHECK(cudnnSetConvolutionGroupCount(k->conv, d[RT_D_GROUPS] > 1 ? (int)d[RT_D_GROUPS] : 1));
	CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, tensor_ok(s, k) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
	choose_conv_algo(s, k);
	if (dir == CONV_FWD && nin == 3) {
		CUDNN_CHECK(cudnnCreateTensorDescriptor(&k->bias));
		CUDNN_CHECK(cudnnSetTensor4dDescriptor(k->bias, CUDNN_TENSOR_NCHW, cudnn_type(k, 2), 1,
		                                       to_int(k, RT_ARG_DIM(d, 2, 0)), 1, 1));
	}
	if (!(d[RT_D_ALGO] & RT_ALGO_WS_ARG)) /* else the placement gives it a block of the fast pool */
		grow_workspace(s, k);
}

/*
 * maxpool, avgpool (padding counted: the divisor is always kh * kw),
 * globalavgpool (global: a window the size of the image): x -> y.
 */
static void make_pool(GpuKernel *k, cudnnPoolingMode_t mode, bool global)
{
	const int64_t *d = k->desc;
	if (k->bf) { /* cuDNN pools float32 here; ours pool bf16 (gpu_pool) */
		snprintf(k->impl, sizeof k->impl, "CUDA pooling bf16");
		return;
	}
	k->x = tensor_desc(k, 0);
	k->y = tensor_desc(k, 1);
	CUDNN_CHECK(cudnnCreatePoolingDescriptor(&k->pool));
	if (global)
		CUDNN_CHECK(cudnnSetPooling2dDescriptor(k->pool, mode, CUDNN_NOT_PROPAGATE_NAN, to_int(k, RT_ARG_DIM(d, 0, 2)),
		                                        to_int(k, RT_ARG_DIM(d, 0, 3)), 0, 0, 1, 1));
	else
		CUDNN_CHECK(cudnnSetPooling2dDescriptor(k->pool, mode, CUDNN_NOT_PROPAGATE_NAN, (int)d[RT_D_KH],
		                                        (int)d[RT_D_KW], (int)d[RT_D_PH], (int)d[RT_D_PW], (int)d[RT_D_SH],
		                                        (int)d[RT_D_SW]));
	snprintf(k->impl, sizeof k->impl, "cuDNN pooling");
}

/* ---- launching ---------------------------------------------------------------- */

/*
 * The epilogue of kernel k's first output, on its arguments a
 * (compiler/front/fuse.h): its fused activation where `act` (a
 * batchnorm_bwd applies it to its dy instead) and its fused sum
 * (base/ops.h's op_sum_input), in e; NULL where it has neither.
 */
static const GpuEpilogue *epilogue(const GpuKernel *k, void *const *a, bool act, GpuEpilogue *e)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN], s = op_sum_input((Op)k->op, nin, (Act)d[RT_D_ACT]);
	*e = (GpuEpilogue){.act = act ? (Act)d[RT_D_ACT] : ACT_NONE};
	if (s >= 0) {
		int64_t n = RT_ARG_DIM(d, nin, 0) > 0 ? RT_ARG_DIM(d, nin, 0) : 1;
		e->sum = a[s];
		e->sum_bf = k->bf >> s & 1u;
		e->round_f32 = k->op == RT_OP_DENSE;
		e->blk = arg_elems(d, nin) / n;
		e->sblk = arg_elems(d, s) / n;
	}
	return e->act != ACT_NONE || e->sum ? e : NULL;
}

/* A convolution kernel with one of our algorithms (conv_gemm.h); NULL, or why it failed. */
static const char *run_conv_gemm(GpuState *s, const GpuKernel *k, int algo, void *ws, void *const *a)
{
	const float one = 1, zero = 0;
	ConvGemm g = conv_gemm_plan(k->desc, algo);
	cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	int m = to_int(k, g.m), n = to_int(k, g.n), kk = to_int(k, g.k), batch = to_int(k, g.batch);
	int lda = to_int(k, g.lda), ldb = to_int(k, g.ldb), ldc = to_int(k, g.ldc);
	const float *pa = a[g.a], *pb = a[g.b];
	float *pc = a[g.c];
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
	if (g.accumulate) {
		for (int i = 0; i < batch && st == CUBLAS_STATUS_SUCCESS; i++)
			st = cublasSgemm(s->blas, ta, tb, m, n, kk, &one, pa + i * g.stride_a, lda, pb + i * g.stride_b, ldb,
			                 i ? &one : &zero, pc, ldc);
	} else {
		st = cublasSgemmStridedBatched(s->blas, ta, tb, m, n, kk, &one, pa, lda, g.stride_a, pb, ldb, g.stride_b,
		                               &zero, g.into_ws ? ws : pc, ldc, g.stride_c, batch);
	}
	if (st != CUBLAS_STATUS_SUCCESS)
		return cublasGetStatusString(st);
	cudaError_t err = g.into_ws ? gpu_sum_images(ws, pc, g.batch, g.stride_c, s->stream) : cudaSuccess;
	return err == cudaSuccess ? NULL : cudaGetErrorString(err);
}

/*
 * A convolution kernel with algorithm `algo` and workspace ws of ws_size
 * bytes (the bias added after); NULL, or why it failed.
 */
static const char *run_conv(GpuState *s, const GpuKernel *k, int algo, void *ws, size_t ws_size, void *const *a)
{
	const float one = 1, zero = 0;
	int nin = (int)k->desc[RT_D_NIN];
	cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
	if (is_ours(algo)) {
		const char *err = run_conv_gemm(s, k, algo, ws, a);
		if (err)
			return err;
	} else {
		switch (k->dir) {
		case CONV_FWD:
			st = cudnnConvolutionForward(s->dnn, &one, k->x, a[0], k->w, a[1], k->conv,
			                             (cudnnConvolutionFwdAlgo_t)algo, ws, ws_size, &zero, k->y, a[nin]);
			break;
		case CONV_BWD_DATA:
			st = cudnnConvolutionBackwardData(s->dnn, &one, k->w, a[1], k->y, a[0], k->conv,
			                                  (cudnnConvolutionBwdDataAlgo_t)algo, ws, ws_size, &zero, k->x, a[2]);
			break;
		case CONV_BWD_FILTER:
			st = cudnnConvolutionBackwardFilter(s->dnn, &one, k->x, a[0], k->y, a[1], k->conv,
			                                    (cudnnConvolutionBwdFilterAlgo_t)algo, ws, ws_size, &zero, k->w,
			                                    a[2]);
			break;
		case CONV_NONE:
			RT_ICE("kernel %d (%s) is not a convolution", k->id, op_name(k->op));
		}
	}
	GpuEpilogue e;
	const GpuEpilogue *ep = k->dir == CONV_FWD ? epilogue(k, a, true, &e) : NULL;
	if (st == CUDNN_STATUS_SUCCESS && k->dir == CONV_FWD && ((nin == 3 && k->bf) || ep)) {
		/* a bf16 bias, or a fused activation: the bias (if any) and the activation in one pass of ours */
		const int64_t *d = k->desc;
		cudaError_t err = gpu_add_channels(a[nin], nin == 3 ? a[2] : NULL, RT_ARG_DIM(d, nin, 0),
		                                   RT_ARG_DIM(d, nin, 1), inner_elems(d, nin, 2), ep,
		                                   (k->bf >> nin & 1u) | (k->bf >> 2 & 1u) << 1, s->stream);
		return err == cudaSuccess ? NULL : cudaGetErrorString(err);
	}
	if (st == CUDNN_STATUS_SUCCESS && k->dir == CONV_FWD && nin == 3)
		st = cudnnAddTensor(s->dnn, &one, k->bias, a[2], &one, k->y, a[3]);
	return st == CUDNN_STATUS_SUCCESS ? NULL : cudnnGetErrorString(st);
}

/* A launch of one of our CUDA kernels. */
static void launched(const GpuKernel *k, cudaError_t err)
{
	if (err != cudaSuccess)
		rt_fatal("kernel %d (%s): launch failed: %s", k->id, op_name(k->op), cudaGetErrorString(err));
}

/*
 * dense as cuBLAS column-major products. A row-major [R, C] matrix is the
 * column-major [C, R] matrix, its transpose, so with y = x W^T + b
 * (x [N, I], W [O, I], y [N, O]) the products are, column-major:
 *
 *   dense             y^T  [O, N] = (W^T)^T x^T     sgemm(T, N, O, N, I)
 *   dense_bwd_data    dx^T [I, N] = W^T dy^T        sgemm(N, N, I, N, O)
 *   dense_bwd_weight  dW^T [I, O] = x^T (dy^T)^T    sgemm(N, T, I, O, N)
 *
 * The bias is first broadcast into y, which the product then adds to.
 */
/* The last dimension of argument i (dense over [N, I] or [N, T, I]: rows of it). */
static int64_t last_dim(const int64_t *d, int i)
{
	return RT_ARG_DIM(d, i, RT_ARG_NDIM(d, i) - 1);
}

/*
 * A column-major product c = alpha op(a) op(b) + beta c, `batch` of them
 * `sa`, `sb`, `sc` elements apart. a, b and c are arguments ai, bi, ci of
 * the kernel: float32 ones with cublasSgemm, as always; where any is bf16,
 * cublasGemmEx with float32 accumulation (tensor cores), the result
 * rounded once to c's type.
 */
typedef struct Gemm {
	cublasOperation_t ta, tb;
	int m, n, k, lda, ldb, ldc, batch;
	long long sa, sb, sc;
	float alpha, beta;
	int ai, bi, ci;
} Gemm;

static cudaDataType_t blas_type(const GpuKernel *k, int i)
{
	return k->bf >> i & 1u ? CUDA_R_16BF : CUDA_R_32F;
}

static void run_gemm(GpuState *s, const GpuKernel *k, const Gemm *g, void *const *args)
{
	const void *a = args[g->ai], *b = args[g->bi];
	void *c = args[g->ci];
	if (!k->bf && g->batch == 1)
		CUBLAS_CHECK(cublasSgemm(s->blas, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, a, g->lda, b, g->ldb, &g->beta,
		                         c, g->ldc));
	else if (!k->bf)
		CUBLAS_CHECK(cublasSgemmStridedBatched(s->blas, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, a, g->lda, g->sa,
		                                       b, g->ldb, g->sb, &g->beta, c, g->ldc, g->sc, g->batch));
	else
		CUBLAS_CHECK(cublasGemmStridedBatchedEx(s->blas, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, a,
		                                        blas_type(k, g->ai), g->lda, g->sa, b, blas_type(k, g->bi), g->ldb,
		                                        g->sb, &g->beta, c, blas_type(k, g->ci), g->ldc, g->sc, g->batch,
		                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* dense: x [N, I], W [O, I][, b [O]][, a sum] -> y [N, O]: the bias's rows, the product added; then any epilogue */
static void run_dense(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN], fi = to_int(k, last_dim(d, 0)), fo = to_int(k, last_dim(d, nin));
	int nb = to_int(k, arg_elems(d, 0) / fi);
	if (k->lt && gpu_lt_run(s->lt, k->lt, a, s->stream))
		return;
	if (nin >= 3)
		launched(k, gpu_fill_rows(a[nin], a[2], nb, fo, (k->bf >> nin & 1u) | (k->bf >> 2 & 1u) << 1, s->stream));
	Gemm g = {CUBLAS_OP_T, CUBLAS_OP_N, fo, nb, fi, fi, fi, fo, 1, 0, 0, 0, 1, nin >= 3 ? 1 : 0, 1, 0, nin};
	run_gemm(s, k, &g, a);
	GpuEpilogue e;
	const GpuEpilogue *ep = epilogue(k, a, true, &e);
	if (ep)
		launched(k, gpu_epilogue(a[nin], arg_elems(d, nin), ep, k->bf >> nin & 1u, s->stream));
}

/* dense_bwd_data: dy [N, O], W [O, I] -> dx [N, I] */
static void run_dense_bwd_data(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int fo = to_int(k, last_dim(d, 0)), fi = to_int(k, last_dim(d, 2));
	int nb = to_int(k, arg_elems(d, 0) / fo);
	Gemm g = {CUBLAS_OP_N, CUBLAS_OP_N, fi, nb, fo, fi, fo, fi, 1, 0, 0, 0, 1, 0, 1, 0, 2};
	run_gemm(s, k, &g, a);
}

/* dense_bwd_weight: x [N, I], dy [N, O] -> dW [O, I] */
static void run_dense_bwd_weight(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int fi = to_int(k, last_dim(d, 0)), fo = to_int(k, last_dim(d, 1));
	int nb = to_int(k, arg_elems(d, 0) / fi);
	Gemm g = {CUBLAS_OP_N, CUBLAS_OP_T, fi, fo, nb, fi, fo, fi, 1, 0, 0, 0, 1, 0, 0, 1, 2};
	run_gemm(s, k, &g, a);
}

/*
 * matmul: a [..., M, K], b [..., K, N] -> c [..., M, N] = alpha op(a) op(b),
 * one strided batch. cuBLAS is column-major: row-major c is column-major
 * c^T = op(b)^T op(a)^T, so b comes first; a row-major matrix read as
 * column-major is its transpose, so op(b)^T is b as stored unless
 * trans_b (then CUBLAS_OP_T), and the same for a.
 */
static void run_matmul(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int r = (int)RT_ARG_NDIM(d, 2) - 2;
	bool ta = d[RT_D_TRANS_A], tb = d[RT_D_TRANS_B];
	int m = to_int(k, RT_ARG_DIM(d, 2, r)), n = to_int(k, RT_ARG_DIM(d, 2, r + 1));
	int kk = to_int(k, RT_ARG_DIM(d, 0, r + !ta));
	int batch = to_int(k, arg_elems(d, 2) / ((int64_t)m * n));
	Gemm g = {tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, kk, tb ? kk : n, ta ? m : kk, n,
	          batch, (long long)kk * n, (long long)m * kk, (long long)m * n, (float)attr_f64(d, RT_D_ALPHA), 0,
	          1, 0, 2};
	/* a batch of one as a strided batch, as before: cuBLAS may choose differently for sgemm */
	if (!k->bf)
		CUBLAS_CHECK(cublasSgemmStridedBatched(s->blas, g.ta, g.tb, g.m, g.n, g.k, &g.alpha, a[1], g.lda, g.sa, a[0],
		                                       g.ldb, g.sb, &g.beta, a[2], g.ldc, g.sc, g.batch));
	else
		run_gemm(s, k, &g, a);
}

/* split_heads: x [N, T, W] -> y [N, H, T, D];  merge_heads: x1.. [N, H, T, D] -> y [N, T, k H D] */
static void run_heads(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN];
	if (k->op == RT_OP_SPLIT_HEADS) {
		launched(k, gpu_split_heads(a[0], a[1], RT_ARG_DIM(d, 1, 0), RT_ARG_DIM(d, 1, 1), RT_ARG_DIM(d, 1, 2),
		                            RT_ARG_DIM(d, 1, 3), last_dim(d, 0), d[RT_D_OFFSET], k->bf, s->stream));
		return;
	}
	int64_t h = RT_ARG_DIM(d, 0, 1), dd = RT_ARG_DIM(d, 0, 3);
	for (int i = 0; i < nin; i++)
		launched(k, gpu_merge_heads(a[i], a[nin], RT_ARG_DIM(d, 0, 0), h, RT_ARG_DIM(d, 0, 2), dd, last_dim(d, nin),
		                            i * h * dd, (k->bf >> i & 1u) | (k->bf >> nin & 1u) << 1, s->stream));
}

/*
 * concat (its inputs into its output), slice (a piece of its input out)
 * and slice_bwd (its input into its zeroed output) as 2-D copies of
 * `outer` rows: the whole tensor's rows of the axis' elements, a piece's
 * at its offset along it.
 */
static void run_pieces(GpuState *s, const GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	bool concat = k->op == RT_OP_CONCAT, into = k->op != RT_OP_SLICE; /* the pieces go into the whole */
	int nin = (int)d[RT_D_NIN], whole = concat ? nin : into ? 1 : 0, axis = (int)d[RT_D_AXIS];
	int64_t outer, inner, off = concat ? 0 : d[RT_D_OFFSET];
	op_axis_dims(&RT_ARG_DIM(d, whole, 0), (int)RT_ARG_NDIM(d, whole), axis, &outer, &inner);
	size_t es = rt_arg_bf16(d, whole) ? 2 : 4; /* bytes an element: the pieces are of the whole's type */
	for (int i = 0; i < nin + 1; i++)
		if (rt_arg_bf16(d, i) != rt_arg_bf16(d, whole))
			RT_ICE("kernel %d (%s): pieces of two types", k->id, op_name(k->op));
	size_t stride = es * (size_t)(RT_ARG_DIM(d, whole, axis) * inner);
	if (k->op == RT_OP_SLICE_BWD)
		CUDA_CHECK(cudaMemsetAsync(a[1], 0, (size_t)rt_arg_bytes(d, 1), s->stream));
	for (int p = 0; p < (concat ? nin : 1); p++) {
		int piece = concat ? p : 1 - whole;
		size_t len = es * (size_t)(RT_ARG_DIM(d, piece, axis) * inner);
		char *at = (char *)a[whole] + es * (size_t)(off * inner);
		if (into)
			CUDA_CHECK(cudaMemcpy2DAsync(at, stride, a[piece], len, len, (size_t)outer, cudaMemcpyDefault, s->stream));
		else
			CUDA_CHECK(cudaMemcpy2DAsync(a[piece], len, at, stride, len, (size_t)outer, cudaMemcpyDefault, s->stream));
		off += RT_ARG_DIM(d, piece, axis);
	}
}

/* The window of a pooling gradient. */
static GpuWindow window(const int64_t *d)
{
	return (GpuWindow){d[RT_D_KH], d[RT_D_KW], d[RT_D_SH], d[RT_D_SW], d[RT_D_PH], d[RT_D_PW]};
}

/* ---- launches of the ops whose arguments take more than a call ---------------- */

/* Convolutions: the workspace is the placement's block of the fast pool, after the arguments, or the shared one. */
static void launch_conv(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	void *ws = d[RT_D_ALGO] & RT_ALGO_WS_ARG ? a[d[RT_D_NIN] + d[RT_D_NOUT]] : s->workspace;
	const char *err = run_conv(s, k, k->algo, ws, k->ws, a);
	if (err)
		rt_fatal("kernel %d (%s): %s %s failed: %s", k->id, op_name(k->op), algo_library(k->algo),
		         conv_algo_name(k->dir, k->algo), err);
}

/* maxpool_bwd (x, y, dy -> dx; each window's maximum in the workspace) and avgpool_bwd (dy -> dx). */
static void launch_pool_bwd(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	if (k->op == RT_OP_MAXPOOL_BWD)
		launched(k, gpu_maxpool_bwd(a[0], a[1], a[2], s->workspace, RT_ARG_DIM(d, 0, 0) * RT_ARG_DIM(d, 0, 1),
		                            RT_ARG_DIM(d, 0, 2), RT_ARG_DIM(d, 0, 3), RT_ARG_DIM(d, 1, 2),
		                            RT_ARG_DIM(d, 1, 3), window(d), k->bf, s->stream));
	else
		launched(k, gpu_avgpool_bwd(a[0], a[1], RT_ARG_DIM(d, 1, 0) * RT_ARG_DIM(d, 1, 1), RT_ARG_DIM(d, 1, 2),
		                            RT_ARG_DIM(d, 1, 3), RT_ARG_DIM(d, 0, 2), RT_ARG_DIM(d, 0, 3), window(d), k->bf,
		                            s->stream));
}

/* mean over dimension RT_D_AXIS of the whole (x for mean, dx for mean_bwd) as [outer, len, inner] */
static void launch_mean(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int w = k->op == RT_OP_MEAN_BWD, axis = (int)d[RT_D_AXIS];
	int64_t outer, inner;
	op_axis_dims(&RT_ARG_DIM(d, w, 0), (int)RT_ARG_NDIM(d, w), axis, &outer, &inner);
	launched(k, gpu_mean(a[0], a[1], outer, RT_ARG_DIM(d, w, axis), inner, w, s->stream));
}

static void launch_add(GpuState *s, GpuKernel *k, void *const *a)
{
	int nin = (int)k->desc[RT_D_NIN];
	const void *x[GPU_MAX_ADD];
	for (int i = 0; i < nin; i++)
		x[i] = a[i];
	GpuEpilogue e;
	launched(k, gpu_add(x, nin, a[nin], arg_elems(k->desc, 0), epilogue(k, a, true, &e), k->bf, s->stream));
}

static void launch_bias_grad(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int64_t n, c, inner;
	op_bias_dims(&RT_ARG_DIM(d, 0, 0), (int)RT_ARG_NDIM(d, 0), d[RT_D_AXIS], &n, &c, &inner);
	launched(k, gpu_bias_grad(a[0], a[1], s->workspace, n, c, inner, k->bf, s->stream));
}

/* act_bias_grad: saved, dy -> dx (the activation's gradient, as its own kernel), then dbias from dx */
static void launch_act_bias_grad(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int64_t n, c, inner;
	op_bias_dims(&RT_ARG_DIM(d, 1, 0), (int)RT_ARG_NDIM(d, 1), d[RT_D_AXIS], &n, &c, &inner);
	launched(k, gpu_eltwise_bwd((Act)d[RT_D_ACT], a[0], a[1], a[2], arg_elems(d, 1), k->bf & 7u, s->stream));
	launched(k, gpu_bias_grad(a[2], a[3], s->workspace, n, c, inner, (k->bf >> 2 & 1u) | (k->bf >> 3 & 1u) << 1,
	                          s->stream));
}

/* batchnorm_bwd: x, gamma, mean, var, dy[, y][, sum] -> dx, dgamma, dbeta (y: a fused activation's output) */
static void launch_bn_bwd(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN];
	Act act = (Act)d[RT_D_ACT];
	unsigned bf = (k->bf & 0x11u) | (k->bf >> nin & 1u) << 5 | (k->bf >> 5 & 1u) << 6;
	GpuEpilogue e;
	launched(k, gpu_batchnorm_bwd(a[0], a[1], a[2], a[3], a[4], act != ACT_NONE ? a[5] : NULL, act, a[nin], a[nin + 1],
	                              a[nin + 2], s->workspace, RT_ARG_DIM(d, 0, 0), dim_or_1(d, 0, 1),
	                              inner_elems(d, 0, 2), attr_f64(d, RT_D_EPS), epilogue(k, a, false, &e), bf,
	                              s->stream));
}

/* The optimizer's update of one weight: its state after the weight and gradient, the clip's sum of squares last. */
static void launch_update(GpuState *s, GpuKernel *k, void *const *a, uint64_t step)
{
	const int64_t *d = k->desc;
	OptimHyper h = rt_optim_hyper(d);
	int64_t nargs = d[RT_D_NIN], min_in = op_info[k->op].min_in;
	launched(k, gpu_update(k->op, &h, step, a[0], a[1], k->bf != 0, min_in > 2 ? a[2] : NULL,
	                       min_in > 3 ? a[3] : NULL, nargs > min_in ? a[nargs - 1] : NULL, arg_elems(d, 0), s->stream));
}

static void launch_bn_stats(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	launched(k, gpu_bn_stats(a[0], a[1], a[2], a[3], a[4], arg_elems(d, 0),
	                         op_bn_unbias(rt_elems(d[RT_D_ASHAPE], &d[RT_D_ASHAPE + 1]) / arg_elems(d, 0)),
	                         attr_f64(d, RT_D_BN_MOMENTUM), s->stream));
}

/* Pooling forward: cuDNN on float32; on bf16 our own (gpu_pool). */
static void launch_pool(GpuState *s, GpuKernel *k, void *const *a)
{
	const int64_t *d = k->desc;
	const float one = 1, zero = 0;
	if (!k->bf) {
		CUDNN_CHECK(cudnnPoolingForward(s->dnn, k->pool, &one, k->x, a[0], &zero, k->y, a[1]));
		return;
	}
	int kind = k->op == RT_OP_MAXPOOL ? GPU_POOL_MAX : k->op == RT_OP_AVGPOOL ? GPU_POOL_AVG : GPU_POOL_GLOBAL;
	launched(k, gpu_pool(a[0], a[1], RT_ARG_DIM(d, 0, 0) * RT_ARG_DIM(d, 0, 1), RT_ARG_DIM(d, 0, 2),
	                     RT_ARG_DIM(d, 0, 3), dim_or_1(d, 1, 2), dim_or_1(d, 1, 3), window(d), kind, k->bf, s->stream));
}

/* The ops of a kernel on the arguments a (its own, or their float32 copies: run_widened). */
static void launch_op(GpuState *s, GpuKernel *k, void *const *a, uint64_t step)
{
	const int64_t *d = k->desc;
	const float one = 1, zero = 0;
	cudaStream_t st = s->stream;
	unsigned bf = k->bf;
	GpuEpilogue e;
	switch (k->op) {
	case RT_OP_CONV2D:
	case RT_OP_CONV2D_BWD_DATA:
	case RT_OP_CONV2D_BWD_FILTER: launch_conv(s, k, a); break;
	case RT_OP_DENSE: run_dense(s, k, a); break;
	case RT_OP_DENSE_BWD_DATA: run_dense_bwd_data(s, k, a); break;
	case RT_OP_DENSE_BWD_WEIGHT: run_dense_bwd_weight(s, k, a); break;
	case RT_OP_MAXPOOL:
	case RT_OP_AVGPOOL:
	case RT_OP_GLOBALAVGPOOL: launch_pool(s, k, a); break;
	case RT_OP_MAXPOOL_BWD:
	case RT_OP_AVGPOOL_BWD: launch_pool_bwd(s, k, a); break;
	case RT_OP_GLOBALAVGPOOL_BWD:
		launched(k, gpu_globalavgpool_bwd(a[0], a[1], RT_ARG_DIM(d, 1, 0) * RT_ARG_DIM(d, 1, 1),
		                                  inner_elems(d, 1, 2), bf, st));
		break;
	case RT_OP_BATCHNORM:
		launched(k, gpu_batchnorm(a[0], a[1], a[2], a[3], a[4], a[5], s->workspace, RT_ARG_DIM(d, 0, 0),
		                          dim_or_1(d, 0, 1), inner_elems(d, 0, 2), attr_f64(d, RT_D_EPS),
		                          epilogue(k, a, true, &e), bf, st));
		break;
	case RT_OP_BATCHNORM_BWD: launch_bn_bwd(s, k, a); break;
	case RT_OP_RELU:
	case RT_OP_SIGMOID:
	case RT_OP_TANH:
	case RT_OP_GELU:
	case RT_OP_RELU6:
	case RT_OP_HARDSIGMOID:
	case RT_OP_HARDSWISH:
	case RT_OP_SILU: launched(k, gpu_eltwise(op_info[k->op].act, a[0], a[1], arg_elems(d, 0), bf, st)); break;
	case RT_OP_RELU_BWD:
	case RT_OP_SIGMOID_BWD:
	case RT_OP_TANH_BWD:
	case RT_OP_GELU_BWD:
	case RT_OP_RELU6_BWD:
	case RT_OP_HARDSIGMOID_BWD:
	case RT_OP_HARDSWISH_BWD:
	case RT_OP_SILU_BWD:
		launched(k, gpu_eltwise_bwd(op_info[k->op].act, a[0], a[1], a[2], arg_elems(d, 0), bf, st));
		break;
	case RT_OP_SOFTMAX:
		CUDNN_CHECK(cudnnSoftmaxForward(s->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, k->x, a[0],
		                                &zero, k->x, a[1]));
		break;
	case RT_OP_SOFTMAX_BWD: /* y, dy -> dx = y * (dy - sum(y * dy)) */
		CUDNN_CHECK(cudnnSoftmaxBackward(s->dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, k->x, a[0],
		                                 k->x, a[1], &zero, k->x, a[2]));
		break;
	case RT_OP_RESHAPE:
		if (a[1] != a[0])
			CUDA_CHECK(cudaMemcpyAsync(a[1], a[0], (size_t)rt_arg_bytes(d, 0), cudaMemcpyDefault, st));
		break;
	case RT_OP_DROPOUT: /* with a fused sum: x, sum -> y */
	case RT_OP_DROPOUT_BWD: {
		int nin = (int)d[RT_D_NIN];
		launched(k, gpu_dropout(a[0], a[nin], arg_elems(d, 0), (uint64_t)d[RT_D_SEED], step, attr_f64(d, RT_D_P),
		                        epilogue(k, a, false, &e), (bf & 1u) | (bf >> nin & 1u) << 1, st));
		break;
	}
	case RT_OP_ADD: launch_add(s, k, a); break;
	case RT_OP_CONCAT:
	case RT_OP_SLICE:
	case RT_OP_SLICE_BWD: run_pieces(s, k, a); break;
	case RT_OP_TRANSPOSE:
		launched(k, gpu_transpose(a[0], a[1], RT_ARG_DIM(d, 0, 0), RT_ARG_DIM(d, 0, 1), RT_ARG_DIM(d, 0, 2), bf, st));
		break;
	case RT_OP_BROADCAST: launched(k, gpu_broadcast(a[0], a[1], arg_elems(d, 0), arg_elems(d, 1), bf, st)); break;
	case RT_OP_MEAN:
	case RT_OP_MEAN_BWD: launch_mean(s, k, a); break;
	case RT_OP_CLAMP:
		launched(k, gpu_clamp(a[0], NULL, a[1], arg_elems(d, 0), (float)attr_f64(d, RT_D_LO),
		                      (float)attr_f64(d, RT_D_HI), (bf & 1u) | (bf >> 1 & 1u) << 2, st));
		break;
	case RT_OP_CLAMP_BWD:
		launched(k, gpu_clamp(a[0], a[1], a[2], arg_elems(d, 0), (float)attr_f64(d, RT_D_LO),
		                      (float)attr_f64(d, RT_D_HI), bf, st));
		break;
	case RT_OP_MUL:
	case RT_OP_MUL_BWD_SCALE: {
		int bwd = k->op == RT_OP_MUL_BWD_SCALE, xa = bwd ? 1 : 0, sa = bwd ? 2 : 1;
		int64_t rows = RT_ARG_DIM(d, xa, 0) * RT_ARG_DIM(d, xa, 1);
		launched(k, gpu_mul(a[0], a[1], a[2], rows, arg_elems(d, xa) / rows, arg_elems(d, sa) / rows, bwd, bf, st));
		break;
	}
	case RT_OP_SOFTMAX_XENT:
		launched(k, gpu_xent(a[0], a[1], s->workspace, a[2], RT_ARG_DIM(d, 0, 0), RT_ARG_DIM(d, 0, 1), st));
		break;
	case RT_OP_SOFTMAX_XENT_BWD:
		launched(k, gpu_xent_bwd(a[0], a[1], a[2], RT_ARG_DIM(d, 0, 0), RT_ARG_DIM(d, 0, 1), st));
		break;
	case RT_OP_BIAS_GRAD: launch_bias_grad(s, k, a); break;
	case RT_OP_EMBEDDING:
		launched(k, gpu_embedding(a[0], a[1], a[2], arg_elems(d, 0), RT_ARG_DIM(d, 1, 1), st));
		break;
	case RT_OP_EMBEDDING_BWD:
		launched(k, gpu_embedding_bwd(a[0], a[1], a[2], arg_elems(d, 1), RT_ARG_DIM(d, 2, 1), RT_ARG_DIM(d, 2, 0), st));
		break;
	case RT_OP_POSITION:
		launched(k, gpu_position(a[0], a[1], a[2], RT_ARG_DIM(d, 0, 0), RT_ARG_DIM(d, 0, 1) * RT_ARG_DIM(d, 0, 2), bf,
		                         st));
		break;
	case RT_OP_POSITION_BWD:
		launched(k, gpu_position_bwd(a[0], a[1], RT_ARG_DIM(d, 0, 0), RT_ARG_DIM(d, 0, 1) * RT_ARG_DIM(d, 0, 2),
		                             arg_elems(d, 1), st));
		break;
	case RT_OP_MATMUL: run_matmul(s, k, a); break;
	case RT_OP_SPLIT_HEADS:
	case RT_OP_MERGE_HEADS: run_heads(s, k, a); break;
	case RT_OP_CAUSAL_SOFTMAX:
		launched(k, gpu_causal_softmax(a[0], a[1], arg_elems(d, 0) / last_dim(d, 0), last_dim(d, 0), st));
		break;
	case RT_OP_CAUSAL_SOFTMAX_BWD:
		launched(k, gpu_causal_softmax_bwd(a[0], a[1], a[2], arg_elems(d, 0) / last_dim(d, 0), last_dim(d, 0), st));
		break;
	case RT_OP_SOFTMAX_XENT_IDS: /* the loss is float32 */
		launched(k, gpu_xent_ids(a[0], a[1], s->workspace, a[2], arg_elems(d, 1), last_dim(d, 0), bf & 1u, st));
		break;
	case RT_OP_SOFTMAX_XENT_IDS_BWD:
		launched(k, gpu_xent_ids_bwd(a[0], a[1], a[2], arg_elems(d, 1), last_dim(d, 0), bf, st));
		break;
	case RT_OP_SOFTMAX_XENT_IDS_GRAD: /* the loss, then its gradient, which may overwrite the logits: a block
		                             a row, each row read whole for its statistics before it is written */
		launched(k, gpu_xent_ids(a[0], a[1], s->workspace, a[3], arg_elems(d, 1), last_dim(d, 0), bf & 1u, st));
		launched(k, gpu_xent_ids_bwd(a[0], a[1], a[2], arg_elems(d, 1), last_dim(d, 0), bf & 5u, st));
		break;
	case RT_OP_GRAD_SUMSQ:
		launched(k, gpu_grad_sumsq(a[0], k->bf != 0, d[RT_D_NIN] == 2 ? a[1] : NULL, a[d[RT_D_NIN]],
		                           arg_elems(d, 0), st));
		break;
	case RT_OP_SGD:
	case RT_OP_SGD_MOMENTUM:
	case RT_OP_ADAMW: launch_update(s, k, a, step); break;
	case RT_OP_LAYERNORM:
		launched(k, gpu_layernorm(a[0], a[1], a[2], a[3], bf >> 3 & 1u, a[4], a[5],
		                          arg_elems(d, 0) / RT_ARG_DIM(d, 1, 0), RT_ARG_DIM(d, 1, 0), attr_f64(d, RT_D_EPS),
		                          st));
		break;
	case RT_OP_LAYERNORM_BWD: /* dy bf16 where fused so (else float32: a bf16 sum runs widened) */
		if (d[RT_D_NIN] == 6)
			launched(k, gpu_layernorm_bwd(a[0], a[1], a[2], a[3], a[4], bf >> 4 & 1u, a[5], a[6], a[7], a[8],
			                              arg_elems(d, 0) / RT_ARG_DIM(d, 1, 0), RT_ARG_DIM(d, 1, 0), st));
		else
			launched(k, gpu_layernorm_bwd(a[0], a[1], a[2], a[3], a[4], bf >> 4 & 1u, NULL, a[5], a[6], a[7],
			                              arg_elems(d, 0) / RT_ARG_DIM(d, 1, 0), RT_ARG_DIM(d, 1, 0), st));
		break;
	case RT_OP_BATCHNORM_EVAL:
		launched(k, gpu_bn_eval(a[0], a[1], a[2], a[3], a[4], a[5], RT_ARG_DIM(d, 0, 0), dim_or_1(d, 0, 1),
		                        inner_elems(d, 0, 2), attr_f64(d, RT_D_EPS), bf, st));
		break;
	case RT_OP_BATCHNORM_STATS: launch_bn_stats(s, k, a); break;
	case RT_OP_CAST: launched(k, gpu_cast(a[0], a[1], arg_elems(d, 0), bf, st)); break;
	case RT_OP_ATTENTION:
	case RT_OP_ATTENTION_BWD: gpu_attention(s->blas, st, d, a, s->workspace); break;
	case RT_OP_ALLREDUCE: /* the gradient's mean over the ranks (cuda/nccl.c) */
		rt_gpu_allreduce_mean(a[0], a[1], arg_elems(d, 0), st);
		break;
	case RT_OP_DENSE_XENT_IDS_GRAD: gpu_head(s->blas, st, d, a, s->workspace, k->head_rows); break;
	case RT_OP_ACT_BIAS_GRAD: launch_act_bias_grad(s, k, a); break;
	case RT_NUM_OPS:
		RT_ICE("kernel %d: no op", k->id);
	}
}

/*
 * A float32-only kernel on bf16 arguments, as the interpreter and the CPU
 * backend define it: every bf16 input widened to float32 (exact) into the
 * workspace, the float32 kernel on the copies, then every output and
 * every input it updates in place rounded back to bf16. All inputs are
 * widened before anything is written (the stream orders it), so an output
 * over its dying input is safe.
 */
static void run_widened(GpuState *s, GpuKernel *k, void *const *a, uint64_t step)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN], nargs = nin + (int)d[RT_D_NOUT];
	void *w[RT_MAX_ARGS] = {0};
	for (int i = 0; i < nargs; i++) {
		w[i] = rt_arg_bf16(d, i) ? (char *)s->workspace + k->wide_at[i] : a[i];
		if (rt_arg_bf16(d, i) && i < nin)
			launched(k, gpu_cast(a[i], w[i], arg_elems(d, i), 1u, s->stream)); /* bf16 -> f32 */
	}
	launch_op(s, k, w, step);
	for (int i = 0; i < nargs; i++)
		if (rt_arg_bf16(d, i) && (i >= nin || (op_info[k->op].inplace >> i & 1)))
			launched(k, gpu_cast(w[i], a[i], arg_elems(d, i), 2u, s->stream)); /* f32 -> bf16 */
}

void gpu_launch(void *state, void *kernel, void *const *a, uint64_t step)
{
	GpuKernel *k = kernel;
	if (k->widen)
		run_widened(state, k, a, step);
	else
		launch_op(state, k, a, step);
}

/* ---- the kernels group of the backend table (cuda/backend.c) ----------------- */

void gpu_prepare(int argc, char **argv)
{
	(void)argc, (void)argv;
	/* several ranks on one machine: each its own device, by its rank on the machine (before any CUDA call) */
	const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	int n = 0;
	if (local && cudaGetDeviceCount(&n) == cudaSuccess && n > 0 && cudaSetDevice(atoi(local) % n) != cudaSuccess)
		rt_fatal("rank %s on this machine: cannot use CUDA device %d", local, atoi(local) % n);
}

int gpu_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

void *gpu_kernels_open(int threads, int64_t scratch_budget)
{
	(void)threads; /* the host does no work of the kernels */
	GpuState *s = rt_xcalloc(sizeof *s);
	s->ws_budget = scratch_budget;
	const char *tf32 = getenv("AUTOTM_TF32");
	s->tf32 = tf32 && strcmp(tf32, "1") == 0;
	s->stream = gpu_stream();
	CUDNN_CHECK(cudnnCreate(&s->dnn));
	CUDNN_CHECK(cudnnSetStream(s->dnn, s->stream));
	CUBLAS_CHECK(cublasCreate(&s->blas));
	CUBLAS_CHECK(cublasSetStream(s->blas, s->stream));
	CUBLAS_CHECK(cublasSetMathMode(s->blas, s->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
	const char *lt = getenv("AUTOTM_CUBLASLT");
	if (!lt || strcmp(lt, "0") != 0)
		s->lt = gpu_lt_open();
	return s;
}

void gpu_kernels_close(void *state)
{
	GpuState *s = state;
	CUDA_CHECK(cudaStreamSynchronize(s->stream));
	CUDA_CHECK(cudaFree(s->workspace));
	CUBLAS_CHECK(cublasDestroy(s->blas));
	gpu_lt_close(s->lt);
	CUDNN_CHECK(cudnnDestroy(s->dnn));
	free(s);
}

/* A kernel that runs widened: a float32 copy of each bf16 argument in the workspace, after its own scratch. */
static void plan_widening(GpuKernel *k)
{
	const int64_t *d = k->desc;
	size_t at = k->ws;
	for (int i = 0; i < d[RT_D_NIN] + d[RT_D_NOUT]; i++) {
		if (!rt_arg_bf16(d, i))
			continue;
		at = (at + 255) & ~(size_t)255;
		k->wide_at[i] = at;
		at += sizeof(float) * (size_t)arg_elems(d, i);
	}
	k->ws = at;
	k->bf = 0; /* the kernel itself sees float32 */
	k->widen = true;
}

/* A fused activation only where compiler/front/fuse.h folds one (its kernels apply it: epilogue). */
static void check_fused(const GpuKernel *k)
{
	Act act = (Act)k->desc[RT_D_ACT];
	bool ok;
	switch (k->op) {
	case RT_OP_CONV2D:
	case RT_OP_DENSE:
	case RT_OP_BATCHNORM:
	case RT_OP_ADD: ok = act == ACT_NONE || op_takes_act((Op)k->op, act); break;
	case RT_OP_BATCHNORM_BWD: ok = act == ACT_NONE || act_from(act) == ACT_FROM_Y; break;
	case RT_OP_ACT_BIAS_GRAD: ok = act != ACT_NONE; break;
	default: ok = act == ACT_NONE; break;
	}
	if (!ok)
		RT_ICE("kernel %d (%s): a fused %s, not built for the GPU", k->id, op_name(k->op), act_name(act));
}

void *gpu_create(void *state, int32_t id, const int64_t *desc)
{
	GpuState *s = state;
	GpuKernel *k = rt_xcalloc(sizeof *k);
	k->id = id;
	k->op = (RtOp)desc[RT_D_OP];
	memcpy(k->desc, desc, sizeof k->desc);
	snprintf(k->impl, sizeof k->impl, "CUDA");
	k->bf = (unsigned)desc[RT_D_BF16];
	check_fused(k);
	/* the scratch of CUDA kernels (ops.def's column): before make_conv, which sets its algorithm's */
	int nin = (int)desc[RT_D_NIN];
	k->ws = (size_t)op_gpu_scratch((Op)k->op, &RT_ARG_DIM(desc, 0, 0), (int)RT_ARG_NDIM(desc, 0),
	                               nin > 1 ? &RT_ARG_DIM(desc, 1, 0) : NULL, nin > 1 ? (int)RT_ARG_NDIM(desc, 1) : 0,
	                               desc[RT_D_KH], desc[RT_D_KW], desc[RT_D_AXIS]);
	if (k->op == RT_OP_ATTENTION || k->op == RT_OP_ATTENTION_BWD)
		k->ws = gpu_attention_scratch(desc);
	if (k->bf && !op_gpu_native_bf16((Op)k->op) && !op_bf16_arg_native((Op)k->op, k->bf))
		plan_widening(k); /* as op_gpu_widened_bytes counts it for the placement */
	if (k->ws)
		grow_workspace(s, k);
	switch (k->op) {
	case RT_OP_CONV2D:
		make_conv(s, k, CONV_FWD);
		break;
	case RT_OP_CONV2D_BWD_DATA:
		make_conv(s, k, CONV_BWD_DATA);
		break;
	case RT_OP_CONV2D_BWD_FILTER:
		make_conv(s, k, CONV_BWD_FILTER);
		break;
	case RT_OP_MAXPOOL:
		make_pool(k, CUDNN_POOLING_MAX, false);
		break;
	case RT_OP_AVGPOOL:
		make_pool(k, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, false);
		break;
	case RT_OP_GLOBALAVGPOOL:
		make_pool(k, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, true);
		break;
	case RT_OP_SOFTMAX:
	case RT_OP_SOFTMAX_BWD: { /* over the last dimension: [rows, C, 1, 1] */
		int64_t c = RT_ARG_DIM(desc, 0, RT_ARG_NDIM(desc, 0) - 1);
		CUDNN_CHECK(cudnnCreateTensorDescriptor(&k->x));
		CUDNN_CHECK(cudnnSetTensor4dDescriptor(k->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
		                                       to_int(k, arg_elems(desc, 0) / c), to_int(k, c), 1, 1));
		snprintf(k->impl, sizeof k->impl, "cuDNN softmax");
		break;
	}
	case RT_OP_DENSE:
	case RT_OP_DENSE_BWD_DATA:
	case RT_OP_DENSE_BWD_WEIGHT:
		snprintf(k->impl, sizeof k->impl, "cuBLAS %s", k->bf ? "gemm bf16" : s->tf32 ? "sgemm tf32" : "sgemm");
		if (k->op == RT_OP_DENSE && s->lt && (k->lt = gpu_lt_plan(s->lt, desc, k->bf, s->tf32)))
			snprintf(k->impl, sizeof k->impl, "cuBLASLt %s, epilogue %s%s", k->bf ? "bf16" : s->tf32 ? "tf32" : "f32",
			         desc[RT_D_ACT] == ACT_RELU ? "relu+bias" : "bias",
			         op_sum_input(OP_DENSE, (int)desc[RT_D_NIN], (Act)desc[RT_D_ACT]) >= 0 ? "+sum" : "");
		break;
	case RT_OP_MATMUL:
		snprintf(k->impl, sizeof k->impl, "cuBLAS %s strided batched", k->bf ? "gemm bf16" : s->tf32 ? "sgemm tf32" : "sgemm");
		break;
	case RT_OP_MAXPOOL_BWD: /* each window's maximum in the workspace */
		break;
	case RT_OP_BATCHNORM: /* the groups' partial sums in the workspace */
	case RT_OP_BATCHNORM_BWD:
		snprintf(k->impl, sizeof k->impl, "CUDA, %lld groups a channel",
		         (long long)op_bn_groups(RT_ARG_DIM(desc, 0, 0), dim_or_1(desc, 0, 1)));
		break;
	case RT_OP_BIAS_GRAD: { /* the groups' sums in the workspace */
		int64_t n, c, inner;
		op_bias_dims(&RT_ARG_DIM(desc, 0, 0), (int)RT_ARG_NDIM(desc, 0), desc[RT_D_AXIS], &n, &c, &inner);
		snprintf(k->impl, sizeof k->impl, "CUDA, %lld groups a channel", (long long)op_bias_groups(n, c, inner));
		break;
	}
	case RT_OP_SOFTMAX_XENT: /* its rows' losses in the workspace */
	case RT_OP_SOFTMAX_XENT_IDS: /* a row per id */
	case RT_OP_SOFTMAX_XENT_IDS_GRAD:
		break;
	case RT_OP_ADD:
		if (desc[RT_D_NIN] > GPU_MAX_ADD)
			rt_fatal("kernel %d (add): %lld inputs, the GPU runtime adds at most %d", id,
			         (long long)desc[RT_D_NIN], GPU_MAX_ADD);
		break;
	case RT_OP_RELU:
	case RT_OP_SIGMOID:
	case RT_OP_TANH:
	case RT_OP_GELU:
	case RT_OP_RELU6:
	case RT_OP_HARDSIGMOID:
	case RT_OP_HARDSWISH:
	case RT_OP_SILU:
	case RT_OP_RELU_BWD:
	case RT_OP_SIGMOID_BWD:
	case RT_OP_TANH_BWD:
	case RT_OP_GELU_BWD:
	case RT_OP_RELU6_BWD:
	case RT_OP_HARDSIGMOID_BWD:
	case RT_OP_HARDSWISH_BWD:
	case RT_OP_SILU_BWD:
		if (op_info[k->op].act == ACT_NONE)
			RT_ICE("kernel %d (%s): ops.def names no activation", id, op_name(k->op));
		break;
	case RT_OP_AVGPOOL_BWD:
	case RT_OP_GLOBALAVGPOOL_BWD:
	case RT_OP_RESHAPE:
	case RT_OP_DROPOUT:
	case RT_OP_DROPOUT_BWD:
	case RT_OP_CONCAT:
	case RT_OP_SLICE:
	case RT_OP_SLICE_BWD:
	case RT_OP_TRANSPOSE:
	case RT_OP_BROADCAST:
	case RT_OP_MEAN:
	case RT_OP_CLAMP:
	case RT_OP_CLAMP_BWD:
	case RT_OP_MUL:
	case RT_OP_MUL_BWD_SCALE:
	case RT_OP_MEAN_BWD:
	case RT_OP_SOFTMAX_XENT_BWD:
	case RT_OP_GRAD_SUMSQ:
	case RT_OP_SGD:
	case RT_OP_SGD_MOMENTUM:
	case RT_OP_ADAMW:
	case RT_OP_BATCHNORM_STATS:
	case RT_OP_BATCHNORM_EVAL:
	case RT_OP_LAYERNORM:
	case RT_OP_LAYERNORM_BWD:
	case RT_OP_EMBEDDING:
	case RT_OP_EMBEDDING_BWD:
	case RT_OP_POSITION:
	case RT_OP_POSITION_BWD:
	case RT_OP_SOFTMAX_XENT_IDS_BWD:
	case RT_OP_SPLIT_HEADS:
	case RT_OP_MERGE_HEADS:
	case RT_OP_CAUSAL_SOFTMAX:
	case RT_OP_CAUSAL_SOFTMAX_BWD:
	case RT_OP_CAST:
		break; /* our own kernels and copies: the description is all they need */
	case RT_OP_ATTENTION:
	case RT_OP_ATTENTION_BWD:
		snprintf(k->impl, sizeof k->impl, "cuBLAS %s in chunks + CUDA", k->bf ? "gemm bf16" : "gemm");
		break;
	case RT_OP_ALLREDUCE:
		rt_gpu_nccl_open(-1, -1); /* a program alone: a communicator of one rank (no-op where open) */
		snprintf(k->impl, sizeof k->impl, "NCCL");
		break;
	case RT_OP_DENSE_XENT_IDS_GRAD: /* its block and rows' losses in the workspace */
		if (k->bf != 0 && k->bf != (1u << 0 | 1u << 1 | 1u << 3))
			RT_ICE("kernel %d (dense_crossentropy_ids_grad): x, weight and dx not of one type, or a bf16 dweight", id);
		k->head_rows = rt_head_block_rows(desc);
		snprintf(k->impl, sizeof k->impl, "cuBLAS %s in blocks + CUDA", k->bf ? "gemm bf16" : "sgemm");
		break;
	case RT_OP_ACT_BIAS_GRAD: { /* the bias's groups' sums in the workspace */
		int64_t n, c, inner;
		op_bias_dims(&RT_ARG_DIM(desc, 1, 0), (int)RT_ARG_NDIM(desc, 1), desc[RT_D_AXIS], &n, &c, &inner);
		snprintf(k->impl, sizeof k->impl, "CUDA eltwise, then %lld groups a channel",
		         (long long)op_bias_groups(n, c, inner));
		break;
	}
	case RT_NUM_OPS:
		RT_ICE("kernel %d: no %s kernel in this runtime", id, op_name(k->op));
	}
	if (k->widen)
		snprintf(k->impl + strlen(k->impl), sizeof k->impl - strlen(k->impl), ", bf16 widened");
	return k;
}

void gpu_destroy(void *state, void *kernel)
{
	(void)state;
	GpuKernel *k = kernel;
	if (k->x)
		CUDNN_CHECK(cudnnDestroyTensorDescriptor(k->x));
	if (k->y)
		CUDNN_CHECK(cudnnDestroyTensorDescriptor(k->y));
	if (k->bias)
		CUDNN_CHECK(cudnnDestroyTensorDescriptor(k->bias));
	if (k->w)
		CUDNN_CHECK(cudnnDestroyFilterDescriptor(k->w));
	if (k->conv)
		CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(k->conv));
	if (k->pool)
		CUDNN_CHECK(cudnnDestroyPoolingDescriptor(k->pool));
	gpu_lt_free(k->lt);
	free(k);
}

const char *gpu_impl_name(void *kernel)
{
	return ((GpuKernel *)kernel)->impl;
}

int64_t gpu_scratch_bytes(void *state)
{
	return (int64_t)((GpuState *)state)->workspace_size;
}

void gpu_sync(void *state)
{
	CUDA_CHECK(cudaStreamSynchronize(((GpuState *)state)->stream));
}

/* ---- for autotm-gpu-profile (gpu.h) ----------------------------------------- */

int64_t gpu_kernel_scratch(void *kernel)
{
	return (int64_t)((const GpuKernel *)kernel)->ws;
}

const char *gpu_conv_direction(const void *kernel)
{
	switch (((const GpuKernel *)kernel)->dir) {
	case CONV_FWD: return "fwd";
	case CONV_BWD_DATA: return "bwd_data";
	case CONV_BWD_FILTER: return "bwd_filter";
	case CONV_NONE: break;
	}
	return NULL;
}

/*
 * The descriptor's math type is the one of the algorithm being sized or
 * run; the kernel's own (choose_conv_algo's) is put back after.
 */
int gpu_conv_algos(void *state, void *kernel, GpuConvAlgo *out)
{
	GpuState *s = state;
	GpuKernel *k = kernel;
	if (k->dir == CONV_NONE)
		return 0;
	ConvAlgo a[MAX_CONV_ALGOS];
	int n = conv_algos(s, k, a), nout = 0;
	cudnnMathType_t own;
	CUDNN_CHECK(cudnnGetConvolutionMathType(k->conv, &own));
	for (int i = 0; i < n; i++) {
		bool tensor_op = is_tensor_op(a[i].math);
		if (tensor_op && !tensor_ok(s, k))
			continue;
		cudnnMathType_t math = tensor_ok(s, k) ? a[i].math : CUDNN_FMA_MATH;
		bool seen = false;
		for (int j = 0; j < nout; j++)
			seen |= out[j].algo == a[i].algo && out[j].math == (int)math;
		if (seen)
			continue;
		GpuConvAlgo *o = &out[nout++];
		*o = (GpuConvAlgo){.algo = a[i].algo, .math = (int)math, .name = conv_algo_name(k->dir, a[i].algo),
		                   .tensor_op = tensor_op, .deterministic = a[i].det == CUDNN_DETERMINISTIC};
		cudnnStatus_t st = a[i].status;
		if (st == CUDNN_STATUS_SUCCESS) {
			CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, math));
			st = conv_workspace(s, k, a[i].algo, &o->workspace);
		}
		o->status = st == CUDNN_STATUS_SUCCESS ? NULL : cudnnGetErrorString(st);
	}
	CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, own));
	return nout;
}

const char *gpu_conv_launch_algo(void *state, void *kernel, const GpuConvAlgo *a, void *ws, void *const *args)
{
	GpuState *s = state;
	GpuKernel *k = kernel;
	cudnnMathType_t own;
	CUDNN_CHECK(cudnnGetConvolutionMathType(k->conv, &own));
	CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, (cudnnMathType_t)a->math));
	const char *err = run_conv(s, k, a->algo, ws, a->workspace, args);
	CUDNN_CHECK(cudnnSetConvolutionMathType(k->conv, own));
	return err;
}
