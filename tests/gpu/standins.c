/*
 * standins.c - CPU stand-ins for the GPU runtime's host code (standins.h):
 * the products, and what it calls only when something fails.
 */
#include "standins.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bf16.h" /* base/ */

float standin_ld(const void *p, bool bf, int64_t i)
{
	return bf ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

void standin_st(void *p, bool bf, int64_t i, float v)
{
	if (bf)
		((uint16_t *)p)[i] = bf16_from_f32(v);
	else
		((float *)p)[i] = v;
}

void standin_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void *a,
                  bool abf, int lda, long long sa, const void *b, bool bbf, int ldb, long long sb, float beta,
                  void *c, bool cbf, int ldc, long long sc, int batch)
{
	for (int64_t q = 0; q < batch; q++)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double s = 0;
				for (int64_t l = 0; l < k; l++) {
					int64_t ai = ta == CUBLAS_OP_N ? i + l * lda : l + i * lda;
					int64_t bi = tb == CUBLAS_OP_N ? l + j * ldb : j + l * ldb;
					s += (double)standin_ld(a, abf, q * sa + ai) * standin_ld(b, bbf, q * sb + bi);
				}
				int64_t ci = q * sc + i + j * ldc;
				standin_st(c, cbf, ci, (float)(alpha * s + (beta != 0 ? beta * standin_ld(c, cbf, ci) : 0)));
			}
}

const char *cublasGetStatusName(cublasStatus_t s)
{
	(void)s;
	return "?";
}

const char *cudaGetErrorString(cudaError_t e)
{
	(void)e;
	return "?";
}

void rt_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	abort();
}
