/*
 * cuda/attention.c - fused scaled dot-product attention on the GPU,
 * forward and backward (ops.def's attention and attention_bwd), in chunks
 * of queries: only a chunk's scores [H, CHUNK, T] are ever stored, in the
 * kernels' workspace, never the [T, T] scores of a whole head.
 *
 * The layout is the CPU kernel's (cpu/attention.c): x [N, T, 3 H D] holds
 * the heads of q, k and v side by side as the projection wrote them, y
 * [N, T, H D] the heads of the output, lse [N, H, T] (float32) each
 * query's log-sum-exp; the backward pass takes x, y, lse and dy and writes
 * dx [N, T, 3 H D]. Data are all float32 or all bf16.
 *
 * For each sample and chunk of queries q0..q0+rows-1 (the keys it sees:
 * 0..q0+rows-1 when causal, else all T), with cuBLAS products over the
 * heads (one strided batch; bf16 products accumulate in float32 on tensor
 * cores) and the small kernels of cuda/elementwise.cu:
 *
 *   forward   S = alpha Q K^T (float32), P = softmax(S) by row and lse
 *             (gpu_att_softmax; P in the data's type), Y = P V;
 *   backward  dd = rowsum(dY Y) for the sample's queries; for each chunk
 *             S again, dP = dY V^T, then P = exp(S - lse) and dS = alpha
 *             P (dP - dd) (gpu_att_grad), dQ = dS K into dx, and dK +=
 *             dS^T Q, dV += P^T dY into a float32 sum over the chunks,
 *             which is written into dx once the sample is done.
 *
 * Every element is summed by one product in one order: the same bits
 * every run.
 */
#include "gpu.h"

#include <cublas_v2.h>
#include <string.h>

#include "elementwise.h"

enum { CHUNK = 256 }; /* queries a chunk */

/* The attribute shape is [N, H, T, D]. */
typedef struct Att {
	int64_t n, heads, t, d;
	float alpha;
	bool causal, bf;
} Att;

static Att att_of(const int64_t *desc)
{
	double alpha;
	memcpy(&alpha, &desc[RT_D_ALPHA], sizeof alpha);
	const int64_t *s = &desc[RT_D_ASHAPE + 1];
	return (Att){s[0], s[1], s[2], s[3], (float)alpha, desc[RT_D_CAUSAL] != 0, rt_arg_bf16(desc, 0) != 0};
}

/* The workspace of one chunk: scores, probabilities and, backward, their gradients and the sums. */
typedef struct Scratch {
	float *s;   /* scores [H, CHUNK, T] */
	void *p;    /* probabilities, the data's type */
	float *dp;  /* backward: dY V^T */
	void *ds;   /* backward: the scores' gradient, the data's type */
	float *dd;  /* backward: rowsum(dY Y) [H, T] */
	float *dkv; /* backward: dK and dV [T, 2 H D], summed over the chunks */
} Scratch;

/* Lay the workspace out at base (NULL: only count); returns its bytes. */
static size_t layout(const Att *a, bool bwd, char *base, Scratch *o)
{
	size_t es = a->bf ? 2 : 4, block = (size_t)(a->heads * (a->t < CHUNK ? a->t : CHUNK) * a->t), at = 0;
	size_t sizes[6] = {4 * block, es * block, 0, 0, 0, 0};
	if (bwd) {
		sizes[2] = 4 * block;
		sizes[3] = es * block;
		sizes[4] = 4 * (size_t)(a->heads * a->t);
		sizes[5] = 4 * (size_t)(a->t * 2 * a->heads * a->d);
	}
	void *at_of[6];
	for (int i = 0; i < 6; i++) {
		at_of[i] = base ? base + at : NULL;
		at = (at + sizes[i] + 255) & ~(size_t)255;
	}
	if (o)
		*o = (Scratch){at_of[0], at_of[1], at_of[2], at_of[3], at_of[4], at_of[5]};
	return at;
}

size_t gpu_attention_scratch(const int64_t *desc)
{
	Att a = att_of(desc);
	return layout(&a, desc[RT_D_OP] == RT_OP_ATTENTION_BWD, NULL, NULL);
}

/* One operand of a strided batch of products over the heads: column-major at p, ld apart, heads `stride` apart. */
typedef struct Mat {
	const void *p;
	int64_t ld, stride;
	cudaDataType_t type;
} Mat;

/* The products' context: the handle and the data's type. */
typedef struct Ctx {
	cublasHandle_t blas;
	cudaStream_t st;
	cudaDataType_t dt;
	const Att *a;
} Ctx;

/* c = alpha op(a) op(b) + beta c for every head, column-major (cublasGemmStridedBatchedEx, float32 sums). */
static void gemm(const Ctx *x, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, Mat a, Mat b,
                 float beta, Mat c)
{
	cublasStatus_t st = cublasGemmStridedBatchedEx(
		x->blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, (int)m, (int)n, (int)k, &alpha, a.p,
		a.type, (int)a.ld, a.stride, b.p, b.type, (int)b.ld, b.stride, &beta, (void *)c.p, c.type, (int)c.ld,
		c.stride, (int)x->a->heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		rt_fatal("attention: cublasGemmStridedBatchedEx failed: %s", cublasGetStatusName(st));
}

static void launched(cudaError_t err)
{
	if (err != cudaSuccess)
		rt_fatal("attention: launch failed: %s", cudaGetErrorString(err));
}

/* A head-strided view of rows from q0 of a [T, width] argument of the sample at base, column offset col. */
static Mat rows_of(const Ctx *x, const void *base, int64_t width, int64_t col, int64_t q0)
{
	size_t es = x->a->bf ? 2 : 4;
	return (Mat){(const char *)base + es * (size_t)(q0 * width + col), width, x->a->d, x->dt};
}

/* A chunk's [H, rows, keys] block: row-major per head, so column-major [keys, rows]. */
static Mat block_of(const void *p, int64_t rows, int64_t keys, cudaDataType_t type)
{
	return (Mat){p, keys, rows * keys, type};
}

/* S = alpha Q K^T for queries q0.. and keys 0..keys-1: S^T [keys, rows] = K_cm^T Q_cm. */
static void scores(const Ctx *x, const void *xs, int64_t q0, int64_t rows, int64_t keys, float *s)
{
	int64_t hd = x->a->heads * x->a->d, w = 3 * hd;
	gemm(x, true, false, keys, rows, x->a->d, x->a->alpha, rows_of(x, xs, w, hd, 0), rows_of(x, xs, w, 0, q0), 0,
	     block_of(s, rows, keys, CUDA_R_32F));
}

static void forward(const Ctx *x, void *const *args, const Scratch *w)
{
	const Att *a = x->a;
	int64_t hd = a->heads * a->d, wd = 3 * hd, chunk = a->t < CHUNK ? a->t : CHUNK;
	size_t es = a->bf ? 2 : 4;
	for (int64_t n = 0; n < a->n; n++) {
		const char *xs = (const char *)args[0] + es * (size_t)(n * a->t * wd);
		char *y = (char *)args[1] + es * (size_t)(n * a->t * hd);
		float *lse = (float *)args[2] + n * a->heads * a->t;
		for (int64_t q0 = 0; q0 < a->t; q0 += chunk) {
			int64_t rows = a->t - q0 < chunk ? a->t - q0 : chunk, keys = a->causal ? q0 + rows : a->t;
			scores(x, xs, q0, rows, keys, w->s);
			launched(gpu_att_softmax(w->s, w->p, lse, a->heads, rows, keys, q0, a->t, a->causal, a->bf ? 2u : 0u,
			                         x->st));
			/* Y^T [D, rows] = V_cm [D, keys] P^T [keys, rows] */
			gemm(x, false, false, a->d, rows, keys, 1, rows_of(x, xs, wd, 2 * hd, 0),
			     block_of(w->p, rows, keys, x->dt), 0, rows_of(x, y, hd, 0, q0));
		}
	}
}

/* The backward pass of one chunk of sample xs's queries: dQ into dx, dK and dV added to w->dkv. */
static void backward_chunk(const Ctx *x, const char *xs, const char *dy, char *dx, const float *lse, const Scratch *w,
                           int64_t q0, int64_t rows)
{
	const Att *a = x->a;
	int64_t hd = a->heads * a->d, wd = 3 * hd, keys = a->causal ? q0 + rows : a->t;
	scores(x, xs, q0, rows, keys, w->s);
	/* dP^T [keys, rows] = V_cm^T dY_cm */
	gemm(x, true, false, keys, rows, a->d, 1, rows_of(x, xs, wd, 2 * hd, 0), rows_of(x, dy, hd, 0, q0), 0,
	     block_of(w->dp, rows, keys, CUDA_R_32F));
	launched(gpu_att_grad(w->s, w->dp, lse, w->dd, w->p, w->ds, a->heads, rows, keys, q0, a->t, a->causal, a->alpha,
	                      a->bf ? 3u << 4 : 0u, x->st));
	Mat dkv = {w->dkv, 2 * hd, a->d, CUDA_R_32F}, dv = dkv;
	dv.p = w->dkv + hd;
	/* dV^T [D, keys] += dY_cm [D, rows] P [rows, keys];  dK^T [D, keys] += Q_cm [D, rows] dS [rows, keys] */
	gemm(x, false, true, a->d, keys, rows, 1, rows_of(x, dy, hd, 0, q0), block_of(w->p, rows, keys, x->dt), 1, dv);
	gemm(x, false, true, a->d, keys, rows, 1, rows_of(x, xs, wd, 0, q0), block_of(w->ds, rows, keys, x->dt), 1, dkv);
	/* dQ^T [D, rows] = K_cm [D, keys] dS^T [keys, rows] */
	gemm(x, false, false, a->d, rows, keys, 1, rows_of(x, xs, wd, hd, 0), block_of(w->ds, rows, keys, x->dt), 0,
	     rows_of(x, dx, wd, 0, q0));
}

static void backward(const Ctx *x, void *const *args, const Scratch *w)
{
	const Att *a = x->a;
	int64_t hd = a->heads * a->d, wd = 3 * hd, chunk = a->t < CHUNK ? a->t : CHUNK;
	size_t es = a->bf ? 2 : 4;
	for (int64_t n = 0; n < a->n; n++) {
		const char *xs = (const char *)args[0] + es * (size_t)(n * a->t * wd);
		const char *y = (const char *)args[1] + es * (size_t)(n * a->t * hd);
		const float *lse = (const float *)args[2] + n * a->heads * a->t;
		const char *dy = (const char *)args[3] + es * (size_t)(n * a->t * hd);
		char *dx = (char *)args[4] + es * (size_t)(n * a->t * wd);
		launched(gpu_att_rowdot(dy, y, w->dd, a->heads, a->t, a->d, a->bf ? 3u : 0u, x->st));
		CUDA_CHECK(cudaMemsetAsync(w->dkv, 0, sizeof(float) * (size_t)(a->t * 2 * hd), x->st));
		for (int64_t q0 = 0; q0 < a->t; q0 += chunk)
			backward_chunk(x, xs, dy, dx, lse, w, q0, a->t - q0 < chunk ? a->t - q0 : chunk);
		launched(gpu_copy_2d(w->dkv, 2 * hd, dx + es * (size_t)hd, wd, a->t, 2 * hd, a->bf ? 2u : 0u, x->st));
	}
}

void gpu_attention(cublasHandle_t blas, cudaStream_t st, const int64_t *desc, void *const *args, void *workspace)
{
	Att a = att_of(desc);
	bool bwd = desc[RT_D_OP] == RT_OP_ATTENTION_BWD;
	Scratch w;
	layout(&a, bwd, workspace, &w);
	Ctx x = {blas, st, a.bf ? CUDA_R_16BF : CUDA_R_32F, &a};
	if (bwd)
		backward(&x, args, &w);
	else
		forward(&x, args, &w);
}
