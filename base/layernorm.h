/*
 * layernorm.h - layer normalisation over the last dimension (ops.def's
 * layernorm and layernorm_bwd) one row or one column at a time, for the
 * CPU's kernels and the GPU's alike (the reference interpreter has its
 * own, in double throughout). Every sum is taken in double, in order.
 */
#ifndef AUTOTM_LAYERNORM_H
#define AUTOTM_LAYERNORM_H

#include <math.h>
#include <stdint.h>

#include "bf16.h"

#ifdef __CUDACC__
#define LAYERNORM_FN static __host__ __device__ inline
#else
#define LAYERNORM_FN static inline
#endif

/*
 * Row x[c] -> y[c] = (x - mean) rstd w + b; its mean and rstd = 1 / sqrt(var + eps) (var biased). y is
 * bf16 where ybf: rounded to float32, then to bf16, as the float32 row cast to bf16 would be.
 */
LAYERNORM_FN void layernorm_row(const float *x, const float *w, const float *b, void *y, bool ybf, int64_t c,
                                double eps, float *mean, float *rstd)
{
	double m = 0, v = 0;
	for (int64_t j = 0; j < c; j++)
		m += x[j];
	m /= (double)c;
	for (int64_t j = 0; j < c; j++)
		v += ((double)x[j] - m) * ((double)x[j] - m);
	double s = 1.0 / sqrt(v / (double)c + eps);
	for (int64_t j = 0; j < c; j++)
		bf16_or_f32_st(y, j, (float)(((double)x[j] - m) * s * (double)w[j] + (double)b[j]), ybf);
	*mean = (float)m;
	*rstd = (float)s;
}

/* The row's dx[c] from x, w, its mean and rstd, and dy (bf16 where dybf): rstd (g - mean(g) - xhat mean(g
   xhat)), g = dy w. dx may be dy (in place): the row's sums are taken before any element is written. */
LAYERNORM_FN void layernorm_bwd_row(const float *x, const float *w, double mean, double rstd, const void *dy,
                                    bool dybf, float *dx, int64_t c)
{
	double sg = 0, sgx = 0;
	for (int64_t j = 0; j < c; j++) {
		double g = (double)bf16_or_f32_ld(dy, j, dybf) * (double)w[j];
		sg += g;
		sgx += g * ((double)x[j] - mean) * rstd;
	}
	for (int64_t j = 0; j < c; j++) {
		double xhat = ((double)x[j] - mean) * rstd;
		dx[j] = (float)(rstd * ((double)bf16_or_f32_ld(dy, j, dybf) * (double)w[j] - sg / (double)c -
		                        xhat * sgx / (double)c));
	}
}

/* Column j's dweight and dbias: sums over the rows, in order, of dy xhat and dy (dy bf16 where dybf). */
LAYERNORM_FN void layernorm_bwd_col(const float *x, const float *mean, const float *rstd, const void *dy, bool dybf,
                                    int64_t rows, int64_t c, int64_t j, float *dw, float *db)
{
	double sw = 0, sb = 0;
	for (int64_t r = 0; r < rows; r++) {
		double g = bf16_or_f32_ld(dy, r * c + j, dybf);
		sw += g * ((double)x[r * c + j] - (double)mean[r]) * (double)rstd[r];
		sb += g;
	}
	*dw = (float)sw;
	*db = (float)sb;
}

/*
 * Columns j0..j0+w-1 (w <= LAYERNORM_COLS) at once, for a CPU: each row's
 * w elements are read together (a cache line) instead of one column
 * strided through every row; each column summed as layernorm_bwd_col's,
 * so the same bits.
 */
enum { LAYERNORM_COLS = 16 };
LAYERNORM_FN void layernorm_bwd_cols(const float *x, const float *mean, const float *rstd, const void *dy,
                                     bool dybf, int64_t rows, int64_t c, int64_t j0, int64_t w, float *dw, float *db)
{
	double sw[LAYERNORM_COLS] = {0}, sb[LAYERNORM_COLS] = {0};
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * c + j0;
		double m = mean[r], s = rstd[r];
		for (int64_t j = 0; j < w; j++) {
			double g = bf16_or_f32_ld(dy, r * c + j0 + j, dybf);
			sw[j] += g * ((double)xr[j] - m) * s;
			sb[j] += g;
		}
	}
	for (int64_t j = 0; j < w; j++) {
		dw[j0 + j] = (float)sw[j];
		db[j0 + j] = (float)sb[j];
	}
}

#endif
