/*
 * cuda/conv_gemm.h - 1x1 convolutions (stride 1, no padding, one group)
 * as matrix products: the convolution algorithms of the GPU backend's
 * own, offered beside cuDNN's (cuda/kernels.c), under numbers above
 * cuDNN's. Plain C without CUDA, so that tests/unit/test-conv-gemm.c
 * checks the products' shapes on the CPU.
 *
 * With P = H * W, image n of an NCHW tensor is a row-major [C, P] matrix,
 * which cuBLAS (column-major) reads as its transpose, [P, C] with leading
 * dimension P; the weights [K, C, 1, 1] are a row-major [K, C] matrix,
 * column-major [C, K]. Per image, column-major:
 *
 *   conv2d             y^T  [P, K] = x^T [P, C] * w^T [C, K]     gemm(N, N, P, K, C)
 *   conv2d_bwd_data    dx^T [P, C] = dy^T [P, K] * w [K, C]      gemm(N, T, P, C, K)
 *   conv2d_bwd_filter  dw^T [C, K] = sum over images of
 *                                    x [C, P] * dy^T [P, K]      gemm(T, N, C, K, P)
 *
 * The forward and the data gradient are one strided batch (an image a
 * matrix, the weights shared). The filter gradient sums over the images:
 * RT_CONV_GEMM adds each image's product to the sum in turn (beta = 1
 * after the first), with no workspace; RT_CONV_GEMM_BATCHED writes every
 * image's product into the workspace in one strided batch and sums them
 * in a fixed order. Both give the same bits every run.
 */
#ifndef AUTOTM_CONV_GEMM_H
#define AUTOTM_CONV_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "autotm/rt.h"

enum {
	RT_CONV_GEMM = 32,         /* every direction: products by cuBLAS, no workspace */
	RT_CONV_GEMM_BATCHED = 33, /* conv2d_bwd_filter: every image's product at once, then their sum */
};

/*
 * The column-major products C_i = op(A_i) op(B_i), i < batch, of one
 * algorithm: one strided batch into argument c (or, with into_ws, into
 * the workspace, whose matrices are then summed into argument c), or with
 * accumulate each product added to argument c in turn.
 */
typedef struct ConvGemm {
	bool trans_a, trans_b;                /* op(A) = A^T, op(B) = B^T */
	int64_t m, n, k;                      /* op(A) is [m, k], op(B) [k, n], C [m, n] */
	int a, b, c;                          /* the kernel arguments that hold A, B and C */
	int64_t lda, ldb, ldc;                /* leading dimensions */
	int64_t stride_a, stride_b, stride_c; /* elements from one image's matrix to the next's (0: shared) */
	int64_t batch;                        /* images */
	bool accumulate;                      /* C = the sum of the products, added one by one (RT_CONV_GEMM) */
	bool into_ws;                         /* the products into the workspace, then summed (RT_CONV_GEMM_BATCHED) */
} ConvGemm;

/* Whether the convolution of description d is one these products compute. */
static inline bool conv_gemm_applies(const int64_t *d)
{
	int op = (int)d[RT_D_OP];
	if (op != RT_OP_CONV2D && op != RT_OP_CONV2D_BWD_DATA && op != RT_OP_CONV2D_BWD_FILTER)
		return false;
	return d[RT_D_KH] == 1 && d[RT_D_KW] == 1 && d[RT_D_SH] == 1 && d[RT_D_SW] == 1 && d[RT_D_PH] == 0 &&
	       d[RT_D_PW] == 0 && d[RT_D_GROUPS] <= 1 && RT_ARG_NDIM(d, 0) == 4;
}

/* Whether algorithm `algo` (RT_CONV_*) computes the convolution of description d. */
static inline bool conv_gemm_offers(const int64_t *d, int algo)
{
	return conv_gemm_applies(d) && d[RT_D_BF16] == 0 && /* float32 products (cublasSgemm) */
	       (algo == RT_CONV_GEMM || (algo == RT_CONV_GEMM_BATCHED && d[RT_D_OP] == RT_OP_CONV2D_BWD_FILTER));
}

/* The products of algorithm `algo` for a convolution it offers to compute (a bias is added after them). */
static inline ConvGemm conv_gemm_plan(const int64_t *d, int algo)
{
	int nin = (int)d[RT_D_NIN];
	/* the image side (x or dx) and the channel side (y or dy), whichever the direction */
	int xi = 0, yi = nin;
	if (d[RT_D_OP] == RT_OP_CONV2D_BWD_DATA)
		xi = 2, yi = 0;
	else if (d[RT_D_OP] == RT_OP_CONV2D_BWD_FILTER)
		xi = 0, yi = 1;
	int64_t images = RT_ARG_DIM(d, xi, 0), c = RT_ARG_DIM(d, xi, 1), kk = RT_ARG_DIM(d, yi, 1);
	int64_t p = RT_ARG_DIM(d, xi, 2) * RT_ARG_DIM(d, xi, 3);
	switch (d[RT_D_OP]) {
	case RT_OP_CONV2D:
		return (ConvGemm){.m = p, .n = kk, .k = c, .a = 0, .b = 1, .c = nin, .lda = p, .ldb = c, .ldc = p,
		                  .stride_a = c * p, .stride_c = kk * p, .batch = images};
	case RT_OP_CONV2D_BWD_DATA:
		return (ConvGemm){.trans_b = true, .m = p, .n = c, .k = kk, .a = 0, .b = 1, .c = 2, .lda = p, .ldb = c,
		                  .ldc = p, .stride_a = kk * p, .stride_c = c * p, .batch = images};
	default: /* RT_OP_CONV2D_BWD_FILTER: a sum over the images */
		return (ConvGemm){.trans_a = true, .m = c, .n = kk, .k = p, .a = 0, .b = 1, .c = 2, .lda = p, .ldb = p,
		                  .ldc = c, .stride_a = c * p, .stride_b = kk * p, .stride_c = algo == RT_CONV_GEMM ? 0 : c * kk,
		                  .batch = images, .accumulate = algo == RT_CONV_GEMM, .into_ws = algo != RT_CONV_GEMM};
	}
}

/* The workspace of algorithm `algo` for a convolution it offers to compute, in bytes. */
static inline int64_t conv_gemm_workspace(const int64_t *d, int algo)
{
	ConvGemm g = conv_gemm_plan(d, algo);
	return g.into_ws ? (int64_t)sizeof(float) * g.batch * g.stride_c : 0;
}

#endif
