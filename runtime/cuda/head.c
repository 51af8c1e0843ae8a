/*
 * cuda/head.c - the output layer fused with its loss on the GPU
 * (dense_crossentropy_ids_grad, ops.def; compiler/front/fuse.h).
 *
 * As the CPU's kernel (cpu/xent.c, cpu/head.c): the rows a block of
 * op_head_block_rows at a time, the block in the workspace. For each
 * block, cuBLAS makes the logits as dense does (z^T = w x^T, column-major),
 * the loss's two kernels of cuda/elementwise.cu turn them into their
 * gradient in place (each row's loss kept in the workspace), and cuBLAS
 * makes the block's dx as dense_bwd_data does (dx^T = w^T dz^T) and adds
 * its share of the weight's float32 gradient as dense_bwd_weight does
 * (dw^T += x^T dz). In a bf16 program x, the weight, the block and dx are
 * bf16 (cublasGemmEx, float32 sums), dw float32. Blocks of `per` rows
 * (rt_head_block_rows, when the kernel is made). The mean of the rows'
 * losses comes last. tests/gpu/test-gpu-head-geometry checks the products'
 * geometry on the CPU; tests/gpu/test-gpu-ops the kernel on a GPU.
 */
#include "gpu.h"

#include <cublas_v2.h>

#include "elementwise.h"

/* C = op(A) op(B) (+ C where acc), column-major; bf16 where a16, b16, c16 (float32 sums) */
static void gemm(cublasHandle_t blas, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                 bool a16, int lda, const void *B, bool b16, int ldb, bool acc, void *C, bool c16, int ldc)
{
	const float one = 1, beta = acc ? 1.0f : 0.0f;
	cublasStatus_t st;
	if (!a16 && !b16 && !c16)
		st = cublasSgemm(blas, ta, tb, m, n, k, &one, A, lda, B, ldb, &beta, C, ldc);
	else
		st = cublasGemmEx(blas, ta, tb, m, n, k, &one, A, a16 ? CUDA_R_16BF : CUDA_R_32F, lda, B,
		                  b16 ? CUDA_R_16BF : CUDA_R_32F, ldb, &beta, C, c16 ? CUDA_R_16BF : CUDA_R_32F, ldc,
		                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		rt_fatal("the fused output layer: a cuBLAS product (%d x %d x %d) failed: %s", m, n, k,
		         cublasGetStatusName(st));
}

static void launched(cudaError_t err)
{
	if (err != cudaSuccess)
		rt_fatal("the fused output layer: launch failed: %s", cudaGetErrorString(err));
}

/* A dimension as cuBLAS takes it. */
static int dim(int64_t n)
{
	if (n > INT32_MAX)
		rt_fatal("the fused output layer: a dimension of %lld, more than cuBLAS takes", (long long)n);
	return (int)n;
}

void gpu_head(cublasHandle_t blas, cudaStream_t st, const int64_t *d, void *const *a, void *workspace, int64_t per)
{
	bool h = rt_arg_bf16(d, 0);
	int64_t rows = rt_head_rows(d), v = RT_ARG_DIM(d, 1, 0);
	int64_t full = op_head_block_rows(rows, v); /* the workspace holds a block of `full` rows; per <= full */
	int c = dim(RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1)), iv = dim(v);
	size_t es = h ? 2 : 4;
	char *blk = workspace;
	double *rowloss = (double *)(void *)(blk + (sizeof(float) * (size_t)(full * v) + 255) / 256 * 256);
	for (int64_t r0 = 0; r0 < rows; r0 += per) {
		int nr = dim(rows - r0 < per ? rows - r0 : per);
		const char *x = (const char *)a[0] + (size_t)r0 * (size_t)c * es;
		char *dx = (char *)a[3] + (size_t)r0 * (size_t)c * es;
		gemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, iv, nr, c, a[1], h, c, x, h, c, false, blk, h, iv);
		launched(gpu_xent_ids_block(blk, (const int32_t *)a[2] + r0, rowloss + r0, blk, nr, rows, v, h ? 5u : 0u, st));
		gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, c, nr, iv, a[1], h, c, blk, h, iv, false, dx, h, c);
		gemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, c, iv, nr, x, h, c, blk, h, iv, r0 > 0, a[4], false, c);
	}
	launched(gpu_xent_mean_rows(rowloss, a[5], rows, st));
}
