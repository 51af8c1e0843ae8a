/*
 * test-gpu-attention-geometry.c - the GPU backend's fused attention
 * (runtime/cuda/attention.c) on the CPU: its products' geometry and its
 * chunking, without a GPU.
 *
 * attention.c is linked against CPU stand-ins for what it calls:
 * cublasGemmStridedBatchedEx (column-major, with cuBLAS's rules for
 * transposes, leading dimensions and strides; bf16 operands read and the
 * result rounded as base/bf16.h does) and the four small kernels of
 * cuda/elementwise.cu it launches (their loops, one thread). Forward and
 * backward outputs are compared with attention computed in double: T = 300
 * positions (two chunks of 256 queries, the second partial), 3 heads of 4,
 * 2 samples, causal and not, float32 and bf16; y and dx within 1e-5 of
 * max(1, max |ref|) in float32 and 1e-2 in bf16, lse within 1e-5. The CUDA
 * kernels themselves and cuBLAS are tests/gpu/test-gpu-ops's, on a GPU.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"                /* base/ */
#include "cuda/elementwise.h"    /* runtime/ */
#include "cuda/gpu.h"            /* runtime/ */
#include "tests/gpu/standins.h"
#include "tests/testlib.h"

/* ---- the stand-ins (standins.c has cuBLAS's products and the error paths) ----------- */

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *a, cudaDataType at, int lda,
                                          long long sa, const void *b, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *c, cudaDataType ct, int ldc, long long sc,
                                          int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
	(void)h, (void)compute, (void)algo;
	standin_gemm(ta, tb, m, n, k, *(const float *)alpha, a, at == CUDA_R_16BF, lda, sa, b, bt == CUDA_R_16BF, ldb, sb,
	             *(const float *)beta, c, ct == CUDA_R_16BF, ldc, sc, batch);
	return CUBLAS_STATUS_SUCCESS;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	(void)s;
	memset(p, v, n);
	return cudaSuccess;
}

void gpu_check_cuda(cudaError_t err, const char *what, const char *file, int line)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "%s:%d: %s failed\n", file, line, what);
		abort();
	}
}

/* The keys row r of a chunk sees (cuda/elementwise.cu's att_seen). */
static int64_t seen(int64_t r, int64_t rows, int64_t q0, int64_t keys, bool causal)
{
	int64_t q = q0 + r % rows;
	return causal && q + 1 < keys ? q + 1 : keys;
}

cudaError_t gpu_att_softmax(const float *s, void *p, float *lse, int64_t heads, int64_t rows, int64_t keys,
                            int64_t q0, int64_t t, bool causal, unsigned bf, cudaStream_t stream)
{
	(void)stream;
	for (int64_t r = 0; r < heads * rows; r++) {
		int64_t len = seen(r, rows, q0, keys, causal);
		float mx = -INFINITY;
		for (int64_t j = 0; j < len; j++)
			mx = fmaxf(mx, s[r * keys + j]);
		double l = 0;
		for (int64_t j = 0; j < len; j++)
			l += exp((double)s[r * keys + j] - mx);
		for (int64_t j = 0; j < keys; j++)
			standin_st(p, bf >> 1 & 1, r * keys + j, j < len ? (float)(exp((double)s[r * keys + j] - mx) / l) : 0);
		lse[r / rows * t + q0 + r % rows] = (float)(mx + log(l));
	}
	return cudaSuccess;
}

cudaError_t gpu_att_grad(const float *s, const float *dp, const float *lse, const float *dd, void *p, void *ds,
                         int64_t heads, int64_t rows, int64_t keys, int64_t q0, int64_t t, bool causal, float alpha,
                         unsigned bf, cudaStream_t stream)
{
	(void)stream;
	for (int64_t e = 0; e < heads * rows * keys; e++) {
		int64_t r = e / keys, j = e % keys, at = r / rows * t + q0 + r % rows;
		float pe = j < seen(r, rows, q0, keys, causal) ? (float)exp((double)s[e] - lse[at]) : 0;
		standin_st(p, bf >> 4 & 1, e, pe);
		standin_st(ds, bf >> 5 & 1, e, alpha * pe * (dp[e] - dd[at]));
	}
	return cudaSuccess;
}

cudaError_t gpu_att_rowdot(const void *dy, const void *y, float *dd, int64_t heads, int64_t t, int64_t d, unsigned bf,
                           cudaStream_t stream)
{
	(void)stream;
	for (int64_t e = 0; e < heads * t; e++) {
		int64_t h = e / t, q = e % t;
		double acc = 0;
		for (int64_t i = 0; i < d; i++)
			acc += (double)standin_ld(dy, bf & 1, q * heads * d + h * d + i) *
			       standin_ld(y, bf >> 1 & 1, q * heads * d + h * d + i);
		dd[e] = (float)acc;
	}
	return cudaSuccess;
}

cudaError_t gpu_copy_2d(const void *x, int64_t ld_x, void *y, int64_t ld_y, int64_t rows, int64_t cols, unsigned bf,
                        cudaStream_t stream)
{
	(void)stream;
	for (int64_t e = 0; e < rows * cols; e++)
		standin_st(y, bf >> 1 & 1, e / cols * ld_y + e % cols, standin_ld(x, bf & 1, e / cols * ld_x + e % cols));
	return cudaSuccess;
}

/* ---- the reference, in double ---------------------------------------------------------- */

typedef struct Case {
	int n, h, t, d;
	double alpha;
	bool causal;
} Case;

/* One head's probabilities p [t, t] of sample n, head h, and its lse; y's rows of that head. */
static void ref_forward(const Case *k, const float *xs, int h, double *p, double *lse, double *y)
{
	int w = 3 * k->h * k->d, hd = k->h * k->d;
	for (int i = 0; i < k->t; i++) {
		int len = k->causal ? i + 1 : k->t;
		double mx = -INFINITY, l = 0;
		for (int j = 0; j < len; j++) {
			double s = 0;
			for (int c = 0; c < k->d; c++)
				s += (double)xs[i * w + h * k->d + c] * xs[j * w + hd + h * k->d + c];
			p[i * k->t + j] = k->alpha * s;
			mx = fmax(mx, p[i * k->t + j]);
		}
		for (int j = 0; j < len; j++)
			l += exp(p[i * k->t + j] - mx);
		for (int j = 0; j < k->t; j++)
			p[i * k->t + j] = j < len ? exp(p[i * k->t + j] - mx) / l : 0;
		lse[i] = mx + log(l);
		for (int c = 0; c < k->d; c++) {
			double o = 0;
			for (int j = 0; j < k->t; j++)
				o += p[i * k->t + j] * xs[j * w + 2 * hd + h * k->d + c];
			y[i * hd + h * k->d + c] = o;
		}
	}
}

/* Its gradient dx (added to) from dy, p and y. */
static void ref_backward(const Case *k, const float *xs, const float *dys, int h, const double *p, const double *y,
                         double *dx)
{
	int w = 3 * k->h * k->d, hd = k->h * k->d;
	for (int i = 0; i < k->t; i++) {
		const float *dyr = dys + i * hd + h * k->d;
		double dd = 0;
		for (int c = 0; c < k->d; c++)
			dd += dyr[c] * y[i * hd + h * k->d + c];
		for (int j = 0; j < k->t; j++) {
			double dp = 0;
			for (int c = 0; c < k->d; c++)
				dp += dyr[c] * xs[j * w + 2 * hd + h * k->d + c];
			double ds = k->alpha * p[i * k->t + j] * (dp - dd);
			for (int c = 0; c < k->d; c++) {
				dx[i * w + h * k->d + c] += ds * xs[j * w + hd + h * k->d + c];
				dx[j * w + hd + h * k->d + c] += ds * xs[i * w + h * k->d + c];
				dx[j * w + 2 * hd + h * k->d + c] += p[i * k->t + j] * dyr[c];
			}
		}
	}
}

/* The description of the op of case k (bf16: x, y, dy and dx; lse is float32). */
static void describe(int64_t *d, int op, const Case *k, bool bf)
{
	memset(d, 0, sizeof(int64_t) * RT_DESC_LEN);
	d[RT_D_OP] = op;
	memcpy(&d[RT_D_ALPHA], &k->alpha, sizeof k->alpha);
	d[RT_D_CAUSAL] = k->causal;
	d[RT_D_ASHAPE] = 4;
	d[RT_D_ASHAPE + 1] = k->n, d[RT_D_ASHAPE + 2] = k->h, d[RT_D_ASHAPE + 3] = k->t, d[RT_D_ASHAPE + 4] = k->d;
	d[RT_D_BF16] = bf ? (op == RT_OP_ATTENTION ? 0x3 : 0x1b) : 0;
}

/* Run case k through attention.c and against the reference. */
static void check(const Case *k, bool bf)
{
	int w = 3 * k->h * k->d, hd = k->h * k->d;
	int64_t nx = (int64_t)k->n * k->t * w, ny = (int64_t)k->n * k->t * hd, nl = (int64_t)k->n * k->h * k->t;
	size_t es = bf ? 2 : 4;
	float *x = malloc(4 * (size_t)nx), *dy = malloc(4 * (size_t)ny), *lse = malloc(4 * (size_t)nl);
	char *gx = malloc(es * (size_t)nx), *gy = malloc(es * (size_t)ny), *gdy = malloc(es * (size_t)ny);
	char *gdx = malloc(es * (size_t)nx);
	double *ry = calloc((size_t)ny, 8), *rl = calloc((size_t)nl, 8), *rdx = calloc((size_t)nx, 8);
	double *p = malloc(8 * (size_t)k->t * (size_t)k->t);
	srand(3);
	for (int64_t i = 0; i < nx; i++)
		x[i] = bf16_round(2.0f * (float)rand() / (float)RAND_MAX - 1); /* bf16 values: exact in both */
	for (int64_t i = 0; i < ny; i++)
		dy[i] = bf16_round(2.0f * (float)rand() / (float)RAND_MAX - 1);
	for (int n = 0; n < k->n; n++)
		for (int h = 0; h < k->h; h++) {
			const float *xs = x + (int64_t)n * k->t * w;
			ref_forward(k, xs, h, p, rl + ((int64_t)n * k->h + h) * k->t, ry + (int64_t)n * k->t * hd);
			ref_backward(k, xs, dy + (int64_t)n * k->t * hd, h, p, ry + (int64_t)n * k->t * hd,
			             rdx + (int64_t)n * k->t * w);
		}
	for (int64_t i = 0; i < nx; i++)
		standin_st(gx, bf, i, x[i]);
	for (int64_t i = 0; i < ny; i++)
		standin_st(gdy, bf, i, dy[i]);
	int64_t d[RT_DESC_LEN];
	describe(d, RT_OP_ATTENTION, k, bf);
	void *ws = malloc(gpu_attention_scratch(d)), *fwd[3] = {gx, gy, lse};
	gpu_attention(NULL, NULL, d, fwd, ws);
	free(ws);
	describe(d, RT_OP_ATTENTION_BWD, k, bf);
	ws = malloc(gpu_attention_scratch(d));
	void *bwd[5] = {gx, gy, lse, gdy, gdx};
	gpu_attention(NULL, NULL, d, bwd, ws);
	free(ws);
	double ey = 0, my = 0, el = 0, edx = 0, mdx = 0;
	for (int64_t i = 0; i < ny; i++)
		ey = fmax(ey, fabs(standin_ld(gy, bf, i) - ry[i])), my = fmax(my, fabs(ry[i]));
	for (int64_t i = 0; i < nl; i++)
		el = fmax(el, fabs(lse[i] - rl[i]) / fmax(1, fabs(rl[i])));
	for (int64_t i = 0; i < nx; i++)
		edx = fmax(edx, fabs(standin_ld(gdx, bf, i) - rdx[i])), mdx = fmax(mdx, fabs(rdx[i]));
	double tol = bf ? 1e-2 : 1e-5;
	test_check(ey <= tol * fmax(1, my) && el <= 1e-5 && edx <= tol * fmax(1, mdx),
	           "%s, %s, T = %d: y within %.2e (largest %.2f), lse %.2e, dx %.2e (largest %.2f)",
	           bf ? "bf16" : "float32", k->causal ? "causal" : "bidirectional", k->t, ey, my, el, edx, mdx);
	free(x), free(dy), free(lse), free(gx), free(gy), free(gdy), free(gdx), free(ry), free(rl), free(rdx), free(p);
}

int main(void)
{
	for (int bf = 0; bf < 2; bf++)
		for (int causal = 0; causal < 2; causal++) {
			Case k = {2, 3, 300, 4, 1 / sqrt(4.0), causal};
			check(&k, bf);
		}
	return test_summary();
}
