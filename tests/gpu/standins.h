/*
 * standins.h - CPU stand-ins for what the GPU runtime's host code calls
 * (cuBLAS's products, error names, rt_fatal), for the geometry tests that
 * run that code without a GPU (tests/gpu/test-gpu-*-geometry.c).
 */
#ifndef AUTOTM_TESTS_GPU_STANDINS_H
#define AUTOTM_TESTS_GPU_STANDINS_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda/gpu.h" /* runtime/ */

/* Element i of a float32 or bf16 array, and its store (rounded to nearest, ties to even). */
float standin_ld(const void *p, bool bf, int64_t i);
void standin_st(void *p, bool bf, int64_t i, float v);

/* c = alpha op(a) op(b) + beta c for `batch` matrices sa, sb, sc apart, column-major with cuBLAS's rules for
   transposes and leading dimensions, the sums in double, bf16 operands read and the result stored as such. */
void standin_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void *a,
                  bool abf, int lda, long long sa, const void *b, bool bbf, int ldb, long long sb, float beta,
                  void *c, bool cbf, int ldc, long long sc, int batch);

#endif
