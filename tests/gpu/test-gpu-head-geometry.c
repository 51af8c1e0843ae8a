/*
 * test-gpu-head-geometry.c - the GPU backend's output layer fused with
 * its loss (runtime/cuda/head.c) on the CPU: its products' geometry and
 * its blocks, without a GPU.
 *
 * head.c is linked against CPU stand-ins for what it calls: cublasSgemm
 * and cublasGemmEx (column-major, with cuBLAS's rules for transposes and
 * leading dimensions; bf16 operands read and the result rounded as
 * base/bf16.h does) and the loss's kernels of cuda/elementwise.cu (their
 * loops, one thread: each row's loss, its gradient / rows in place, the
 * mean). dx, the weight's gradient and the loss are compared with the
 * layer, its loss and their gradients computed in double: 2 x 150 rows of
 * 24 features and 70 classes, in one block and in blocks of 64 rows
 * (five, the last partial); float32 within 1e-5 of
 * max(1, max |ref|), bf16 within 1e-2.
 * The CUDA kernels themselves and cuBLAS are tests/gpu/test-gpu-ops's, on a
 * GPU.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"             /* base/ */
#include "cuda/elementwise.h" /* runtime/ */
#include "cuda/gpu.h"         /* runtime/ */
#include "tests/gpu/standins.h"
#include "tests/testlib.h"

/* ---- the stand-ins (standins.c has cuBLAS's products and the error paths) ----------- */

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, const float *b, int ldb, const float *beta,
                              float *c, int ldc)
{
	(void)h;
	standin_gemm(ta, tb, m, n, k, *alpha, a, false, lda, 0, b, false, ldb, 0, *beta, c, false, ldc, 0, 1);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *a, cudaDataType at, int lda, const void *b, cudaDataType bt,
                            int ldb, const void *beta, void *c, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
	(void)h, (void)compute, (void)algo;
	standin_gemm(ta, tb, m, n, k, *(const float *)alpha, a, at == CUDA_R_16BF, lda, 0, b, bt == CUDA_R_16BF, ldb, 0,
	             *(const float *)beta, c, ct == CUDA_R_16BF, ldc, 0, 1);
	return CUBLAS_STATUS_SUCCESS;
}

/* xent_ids_rows, then xent_ids_bwd (in place), as cuda/elementwise.cu computes them (bf: bit 0 z, bit 2 dz) */
cudaError_t gpu_xent_ids_block(const void *z, const int32_t *ids, double *rowloss, void *dz, int64_t nr,
                               int64_t rows, int64_t k, unsigned bf, cudaStream_t s)
{
	(void)s;
	bool zb = bf & 1u, db = bf >> 2 & 1u;
	for (int64_t r = 0; r < nr; r++) {
		float mx = standin_ld(z, zb, r * k);
		for (int64_t j = 1; j < k; j++)
			mx = fmaxf(mx, standin_ld(z, zb, r * k + j));
		double sum = 0;
		for (int64_t j = 0; j < k; j++)
			sum += exp((double)standin_ld(z, zb, r * k + j) - mx);
		rowloss[r] = mx + log(sum) - (double)standin_ld(z, zb, r * k + ids[r]);
		for (int64_t j = 0; j < k; j++) {
			double p = exp((double)standin_ld(z, zb, r * k + j) - mx) / sum;
			standin_st(dz, db, r * k + j, (float)((p - (j == ids[r])) / (double)rows));
		}
	}
	return cudaSuccess;
}

cudaError_t gpu_xent_mean_rows(const double *rowloss, float *loss, int64_t rows, cudaStream_t s)
{
	(void)s;
	double t = 0;
	for (int64_t r = 0; r < rows; r++)
		t += rowloss[r];
	loss[0] = (float)(t / (double)rows);
	return cudaSuccess;
}

/* ---- the reference and the check ------------------------------------------------------ */

enum { N = 2, T = 150, C = 24, V = 70, R = N * T };

/* The layer, the loss and their gradients in double (bf16: the logits and their gradient rounded as the kernel's). */
static double reference(const float *x, const float *w, const int32_t *ids, bool bf, double *dx, double *dw)
{
	double loss = 0, z[V];
	memset(dx, 0, sizeof(double) * R * C);
	memset(dw, 0, sizeof(double) * V * C);
	for (int r = 0; r < R; r++) {
		double mx = -INFINITY, s = 0;
		for (int j = 0; j < V; j++) {
			z[j] = 0;
			for (int c = 0; c < C; c++)
				z[j] += (double)x[r * C + c] * w[j * C + c];
			z[j] = bf ? bf16_round((float)z[j]) : z[j];
			mx = fmax(mx, z[j]);
		}
		for (int j = 0; j < V; j++)
			s += exp(z[j] - mx);
		loss += mx + log(s) - z[ids[r]];
		for (int j = 0; j < V; j++) {
			double g = (exp(z[j] - mx) / s - (j == ids[r])) / R;
			g = bf ? bf16_round((float)g) : g;
			for (int c = 0; c < C; c++) {
				dx[r * C + c] += g * w[j * C + c];
				dw[j * C + c] += g * x[r * C + c];
			}
		}
	}
	return loss / R;
}

/* The description of the op (bf16: x, weight and dx). */
static void describe(int64_t *d, bool bf)
{
	static const int64_t dims[6][3] = {{N, T, C}, {V, C, 0}, {N, T, 0}, {N, T, C}, {V, C, 0}, {1, 0, 0}};
	static const int nd[6] = {3, 2, 2, 3, 2, 1};
	memset(d, 0, sizeof(int64_t) * RT_DESC_LEN);
	d[RT_D_OP] = RT_OP_DENSE_XENT_IDS_GRAD;
	d[RT_D_NIN] = 3;
	d[RT_D_NOUT] = 3;
	for (int i = 0; i < 6; i++) {
		RT_ARG_NDIM(d, i) = nd[i];
		for (int k = 0; k < nd[i]; k++)
			RT_ARG_DIM(d, i, k) = dims[i][k];
	}
	d[RT_D_BF16] = bf ? (1 << 0 | 1 << 1 | 1 << 3) : 0;
}

static void check(bool bf, int64_t block_rows)
{
	size_t es = bf ? 2 : 4;
	float x[R * C], w[V * C], dw[V * C], loss;
	int32_t ids[R];
	double rdx[R * C], rdw[V * C];
	char *gx = malloc(es * R * C), *gw = malloc(es * V * C), *gdx = malloc(es * R * C);
	srand(5);
	for (int i = 0; i < R * C; i++)
		x[i] = bf16_round(2.0f * (float)rand() / (float)RAND_MAX - 1), standin_st(gx, bf, i, x[i]);
	for (int i = 0; i < V * C; i++)
		w[i] = bf16_round(0.5f * (float)rand() / (float)RAND_MAX - 0.25f), standin_st(gw, bf, i, w[i]);
	for (int i = 0; i < R; i++)
		ids[i] = rand() % V;
	double rl = reference(x, w, ids, bf, rdx, rdw);
	int64_t d[RT_DESC_LEN];
	describe(d, bf);
	void *ws = malloc((size_t)op_head_scratch_bytes(R, V)), *args[6] = {gx, gw, ids, gdx, dw, &loss};
	gpu_head(NULL, NULL, d, args, ws, block_rows);
	free(ws);
	double edx = 0, mdx = 0, edw = 0, mdw = 0;
	for (int i = 0; i < R * C; i++)
		edx = fmax(edx, fabs(standin_ld(gdx, bf, i) - rdx[i])), mdx = fmax(mdx, fabs(rdx[i]));
	for (int i = 0; i < V * C; i++)
		edw = fmax(edw, fabs(dw[i] - rdw[i])), mdw = fmax(mdw, fabs(rdw[i]));
	double tol = bf ? 1e-2 : 1e-5, el = fabs(loss - rl) / fmax(1, fabs(rl));
	test_check(edx <= tol * fmax(1, mdx) && edw <= tol * fmax(1, mdw) && el <= 1e-5,
	           "%s, %d rows of %d classes, blocks of %lld rows: dx within %.2e (largest %.3f), dweight %.2e (largest "
	           "%.3f), loss %.2e", bf ? "bf16" : "float32", R, V, (long long)block_rows, edx, mdx, edw, mdw, el);
	free(gx), free(gw), free(gdx);
}

int main(void)
{
	for (int bf = 0; bf < 2; bf++) {
		check(bf, R);
		check(bf, 64);
	}
	return test_summary();
}
