/*
 * cpu/batchnorm.c - batch normalisation in training mode, forward and
 * backward, as plain C over the plain layout [N, C, inner] in float32 or
 * bfloat16 (the statistics, weights and their gradients are float32).
 *
 * oneDNN 2.6's batch normalisation on plain nchw is its generic ncsp
 * implementation, which took more time than the convolutions in a
 * ResNet-50 step (and longer still in bf16, converting element by
 * element). Here a channel is one task: its N planes are read once from
 * memory for the statistics (the sum and the sum of squares about a shift,
 * in one pass), and again (now from the cache: a channel of a batch is
 * N * H * W elements, 100 KB at batch 8 and 56x56) for the output. Sums
 * are in double, as the interpreter's: summed in float, the statistics of
 * a channel whose mean nearly cancels were farther from float64's than
 * PyTorch's (tests/torch/test-import.sh). A channel's sum is always taken
 * in the same order, whatever the thread count, so results are the same to
 * the bit wherever the tensors are.
 *
 * A fused relu (compiler/front/fuse.h) is applied as y is written; in the
 * backward pass its gradient masks dy as it is read, and a gradient sum
 * folded in is added as dx is written.
 *
 * A channel-blocked tensor (nChw16c, autotm/rt.h's rt_arg_blocked: every
 * data argument or none) is taken 16 channels at a time, one task: each
 * pass reads a block's planes as one run, the 16 channels' sums side by
 * side in the vector lanes, each in the order batch, then pixel.
 *
 * The element type is a constant in each specialisation (the always-inline
 * bodies below are instantiated for float32 and for bf16), so the inner
 * loops vectorise.
 */
#include "cpu.h"

#include <math.h>

#include "bf16.h" /* base/ */

/* Channels' work below this many elements in all runs on one thread. */
enum { BN_PAR_MIN = 1 << 15 };

#define INLINE static inline __attribute__((always_inline))

/* v where c holds, else +0: a mask on the bits, which the vectoriser takes where it refuses a branch in a sum. */
INLINE float keep_if(float v, bool c)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	u &= (uint32_t)0 - (uint32_t)c;
	memcpy(&v, &u, sizeof v);
	return v;
}

/*
 * Ask for elements [at, at + inner) of p before they are read. A channel's
 * planes are short runs a channel's length apart (784 bytes at 14x14), which
 * the hardware's prefetchers do not follow, so each pass over a channel
 * fetches the next channel's planes (or, for the sum, the second pass's) as
 * it goes.
 */
INLINE void prefetch_run(const void *p, int64_t at, int64_t inner, bool bf16)
{
	int64_t es = bf16 ? 2 : 4;
	for (int64_t k = 0; k < inner; k += 64 / es)
		__builtin_prefetch((const char *)p + (at + k) * es);
}

/* The shape [N, C, inner] of argument i (2-D: inner 1). */
static void bn_dims(const int64_t *d, int i, int64_t *n, int64_t *c, int64_t *inner)
{
	*n = RT_ARG_DIM(d, i, 0);
	*c = RT_ARG_NDIM(d, i) > 1 ? RT_ARG_DIM(d, i, 1) : 1;
	*inner = 1;
	for (int64_t k = 2; k < RT_ARG_NDIM(d, i); k++)
		*inner *= RT_ARG_DIM(d, i, k);
}

/*
 * The mean and biased variance of M elements from their sums about a shift
 * k (an element of theirs): s = sum (x - k), q = sum (x - k)^2, in one pass
 * over x. The shift keeps q / M - (s / M)^2 from cancelling where the mean
 * is far from zero against the spread.
 */
static void moments(double s, double q, double k, double m, double *mu, double *var)
{
	double d = s / m, v = q / m - d * d;
	*mu = k + d;
	*var = v > 0 ? v : 0;
}

/* One channel forward: its mean and biased variance, then y = (x - mean) / sqrt(var + eps) * gamma + beta. */
INLINE void bn_channel(const void *x, void *y, int64_t nb, int64_t c, int64_t inner, int64_t ch, double eps,
                       float gamma, float beta, float *mean, float *var, bool bf16, bool relu)
{
	double k = bf16_or_f32_ld(x, ch * inner, bf16), s = 0, q = 0, mu, v, m = (double)(nb * inner);
	for (int64_t n = 0; n < nb; n++) {
		int64_t o = (n * c + ch) * inner;
		if (ch + 1 < c)
			prefetch_run(x, o + inner, inner, bf16);
#pragma omp simd reduction(+ : s, q)
		for (int64_t i = 0; i < inner; i++) {
			double t = bf16_or_f32_ld(x, o + i, bf16) - k;
			s += t;
			q += t * t;
		}
	}
	moments(s, q, k, m, &mu, &v);
	double is = 1.0 / sqrt(v + eps);
	*mean = (float)mu;
	*var = (float)v;
	float a = (float)(is * gamma), b = (float)(beta - mu * is * gamma);
	for (int64_t n = 0; n < nb; n++) {
		int64_t o = (n * c + ch) * inner;
#pragma omp simd
		for (int64_t i = 0; i < inner; i++) {
			float out = bf16_or_f32_ld(x, o + i, bf16) * a + b;
			bf16_or_f32_st(y, o + i, relu && out < 0 ? 0.0f : out, bf16);
		}
	}
}

/*
 * A block's sums over its run of px pixels of 16 lanes (each lane a channel)
 * at x + o about the shifts k: s[l] += x - k[l], q[l] += (x - k[l])^2. Four
 * pixels at a time into four partial sums per lane (four independent
 * chains of additions).
 */
INLINE void block_moments(const void *x, int64_t o, int64_t px, const double *k, double *s, double *q, bool bf16)
{
	double ps[4][16] = {{0}}, pq[4][16] = {{0}};
	int64_t i = 0;
	for (; i + 4 <= px; i += 4)
		for (int j = 0; j < 4; j++)
#pragma omp simd
			for (int l = 0; l < 16; l++) {
				double t = bf16_or_f32_ld(x, o + (i + j) * 16 + l, bf16) - k[l];
				ps[j][l] += t;
				pq[j][l] += t * t;
			}
	for (; i < px; i++)
#pragma omp simd
		for (int l = 0; l < 16; l++) {
			double t = bf16_or_f32_ld(x, o + i * 16 + l, bf16) - k[l];
			ps[0][l] += t;
			pq[0][l] += t * t;
		}
#pragma omp simd
	for (int l = 0; l < 16; l++) {
		s[l] += (ps[0][l] + ps[1][l]) + (ps[2][l] + ps[3][l]);
		q[l] += (pq[0][l] + pq[1][l]) + (pq[2][l] + pq[3][l]);
	}
}

/* 16 channels forward, block cb of [N, C/16, inner, 16]: as bn_channel, a lane each. */
INLINE void bn_block(const void *x, void *y, int64_t nb, int64_t cb_n, int64_t inner, int64_t cb, double eps,
                     const float *gamma, const float *beta, float *mean, float *var, bool bf16, bool relu)
{
	double k[16], s[16] = {0}, q[16] = {0}, m = (double)(nb * inner);
	for (int l = 0; l < 16; l++)
		k[l] = bf16_or_f32_ld(x, cb * inner * 16 + l, bf16);
	for (int64_t n = 0; n < nb; n++)
		block_moments(x, (n * cb_n + cb) * inner * 16, inner, k, s, q, bf16);
	float a[16], b[16];
	for (int l = 0; l < 16; l++) {
		int64_t ch = cb * 16 + l;
		double mu, v;
		moments(s[l], q[l], k[l], m, &mu, &v);
		double is = 1.0 / sqrt(v + eps);
		mean[ch] = (float)mu;
		var[ch] = (float)v;
		a[l] = (float)(is * gamma[ch]), b[l] = (float)(beta[ch] - mu * is * gamma[ch]);
	}
	for (int64_t n = 0; n < nb; n++)
		for (int64_t i = 0, o = (n * cb_n + cb) * inner * 16; i < inner; i++, o += 16)
#pragma omp simd
			for (int l = 0; l < 16; l++) {
				float out = bf16_or_f32_ld(x, o + l, bf16) * a[l] + b[l];
				bf16_or_f32_st(y, o + l, relu && out < 0 ? 0.0f : out, bf16);
			}
}

void cpu_batchnorm_check(int32_t id, const int64_t *d)
{
	int nin = (int)d[RT_D_NIN];
	uint64_t data = d[RT_D_OP] == RT_OP_BATCHNORM ? 1u << 0 | 1u << 3 /* x, y */
	                : 1u << 0 | 1u << 4 | 1u << nin | (nin >= 6 ? 1u << 5 : 0u) |
	                          (nin == 7 ? 1u << 6 : 0u); /* x, dy, dx[, y][, sum] */
	if (d[RT_D_BF16] != 0 && (uint64_t)d[RT_D_BF16] != data)
		RT_ICE("kernel %d (%s): data arguments of two types, or bf16 statistics", id, op_name((RtOp)d[RT_D_OP]));
	if (d[RT_D_BLOCKED] != 0 && (uint64_t)d[RT_D_BLOCKED] != data)
		RT_ICE("kernel %d (%s): data arguments of two layouts", id, op_name((RtOp)d[RT_D_OP]));
}

/* batchnorm: x, weight, bias -> y, mean, variance (ops.def); x and y float32 or both bf16 */
CPU_CLONES void cpu_batchnorm(const int64_t *d, void *const *a)
{
	const float *gamma = a[1], *beta = a[2];
	float *mean = a[4], *var = a[5];
	int64_t nb, c, inner;
	bn_dims(d, 0, &nb, &c, &inner);
	double eps;
	memcpy(&eps, &d[RT_D_EPS], sizeof eps);
	bool bf16 = rt_arg_bf16(d, 0), relu = d[RT_D_ACT] == ACT_RELU; /* relu: fused (compiler/front/fuse.h) */
	if (d[RT_D_ACT] != ACT_NONE && !relu)
		RT_ICE("batchnorm with a fused %s: only relu is built", act_name((Act)d[RT_D_ACT]));
	if (rt_arg_blocked(d, 0)) {
#pragma omp parallel for schedule(static) if (nb * c * inner > BN_PAR_MIN)
		for (int64_t cb = 0; cb < c / 16; cb++) {
			if (bf16)
				bn_block(a[0], a[3], nb, c / 16, inner, cb, eps, gamma, beta, mean, var, true, relu);
			else
				bn_block(a[0], a[3], nb, c / 16, inner, cb, eps, gamma, beta, mean, var, false, relu);
		}
		return;
	}
	/* the parallel loop is here, not in an inlined helper, so that each clone has its own */
#pragma omp parallel for schedule(static) if (nb * c * inner > BN_PAR_MIN)
	for (int64_t ch = 0; ch < c; ch++) {
		float *m = &mean[ch], *v = &var[ch];
		if (bf16)
			bn_channel(a[0], a[3], nb, c, inner, ch, eps, gamma[ch], beta[ch], m, v, true, relu);
		else
			bn_channel(a[0], a[3], nb, c, inner, ch, eps, gamma[ch], beta[ch], m, v, false, relu);
	}
}

/* The relu's gradient of dy at o (y > 0) where relu, else dy. */
INLINE float bn_dy(const void *dy, const void *y, int64_t o, bool bf16, bool relu)
{
	float g = bf16_or_f32_ld(dy, o, bf16);
	return relu ? keep_if(g, bf16_or_f32_ld(y, o, bf16) > 0.0f) : g;
}

/*
 * One channel backward: dbias = sum dy, dweight = sum dy * xhat, then
 * dx = gamma / sqrt(var + eps) / M * (M dy - dbias - xhat dweight), with
 * xhat = (x - mean) / sqrt(var + eps) and M = N * inner.
 */
INLINE void bn_bwd_channel(const void *x, const void *dy, const void *y, const void *sum, int64_t csum, void *dx,
                           int64_t nb, int64_t c, int64_t inner, int64_t ch, double eps, float gamma, float mean,
                           float var, float *dgamma, float *dbeta, bool bf16, bool relu)
{
	double is = 1.0 / sqrt((double)var + eps), mu = mean, sdy = 0, sdyx = 0, m = (double)(nb * inner);
	for (int64_t n = 0; n < nb; n++) {
		int64_t o = (n * c + ch) * inner;
		if (sum) /* the sum's plane, which the second pass reads */
			prefetch_run(sum, (n * csum + ch) * inner, inner, bf16);
		if (ch + 1 < c) {
			prefetch_run(x, o + inner, inner, bf16);
			prefetch_run(dy, o + inner, inner, bf16);
			if (relu)
				prefetch_run(y, o + inner, inner, bf16);
		}
#pragma omp simd reduction(+ : sdy, sdyx)
		for (int64_t k = 0; k < inner; k++) {
			double g = bn_dy(dy, y, o + k, bf16, relu);
			sdy += g;
			sdyx += g * (bf16_or_f32_ld(x, o + k, bf16) - mu);
		}
	}
	sdyx *= is;
	*dbeta = (float)sdy;
	*dgamma = (float)sdyx;
	/* dx = A dy - B (x - mean) - C */
	double ga = gamma * is;
	float A = (float)ga, B = (float)(ga * is * sdyx / m), C = (float)(ga * sdy / m), fm = mean;
	for (int64_t n = 0; n < nb; n++) {
		int64_t o = (n * c + ch) * inner, os = (n * csum + ch) * inner;
#define BN_DX(k) (A * bn_dy(dy, y, o + (k), bf16, relu) - B * (bf16_or_f32_ld(x, o + (k), bf16) - fm) - C)
		if (sum) { /* as the add it replaces: dx rounded to its type, then the sum rounded */
#pragma omp simd
			for (int64_t k = 0; k < inner; k++) {
				float v = BN_DX(k);
				bf16_or_f32_st(dx, o + k, (bf16 ? bf16_round(v) : v) + bf16_or_f32_ld(sum, os + k, bf16), bf16);
			}
		} else {
#pragma omp simd
			for (int64_t k = 0; k < inner; k++)
				bf16_or_f32_st(dx, o + k, BN_DX(k), bf16);
		}
#undef BN_DX
	}
}

/* 16 channels backward, block cb of [N, C/16, inner, 16] (sum: of [N, Cs/16, inner, 16]): bn_bwd_channel's lanes. */
INLINE void bn_bwd_block(const void *x, const void *dy, const void *y, const void *sum, int64_t cbs_n, void *dx,
                         int64_t nb, int64_t cb_n, int64_t inner, int64_t cb, double eps, const float *gamma,
                         const float *mean, const float *var, float *dgamma, float *dbeta, bool bf16, bool relu)
{
	double sdy[16] = {0}, sdyx[16] = {0}, m = (double)(nb * inner);
	const float *mu = &mean[cb * 16];
	for (int64_t n = 0; n < nb; n++)
		for (int64_t k = 0, o = (n * cb_n + cb) * inner * 16; k < inner; k++, o += 16)
#pragma omp simd
			for (int l = 0; l < 16; l++) {
				double g = bn_dy(dy, y, o + l, bf16, relu);
				sdy[l] += g;
				sdyx[l] += g * (bf16_or_f32_ld(x, o + l, bf16) - (double)mu[l]);
			}
	float A[16], B[16], C[16];
	for (int l = 0; l < 16; l++) { /* dx = A dy - B (x - mean) - C */
		int64_t ch = cb * 16 + l;
		double is = 1.0 / sqrt((double)var[ch] + eps), ga = gamma[ch] * is;
		sdyx[l] *= is;
		dbeta[ch] = (float)sdy[l];
		dgamma[ch] = (float)sdyx[l];
		A[l] = (float)ga, B[l] = (float)(ga * is * sdyx[l] / m), C[l] = (float)(ga * sdy[l] / m);
	}
	for (int64_t n = 0; n < nb; n++) {
		int64_t o = (n * cb_n + cb) * inner * 16, os = (n * cbs_n + cb) * inner * 16;
#define BN_DX(i) (A[l] * bn_dy(dy, y, (i), bf16, relu) - B[l] * (bf16_or_f32_ld(x, (i), bf16) - mu[l]) - C[l])
		if (sum) /* as the add it replaces: dx rounded to its type, then the sum rounded */
			for (int64_t k = 0; k < inner * 16; k += 16)
#pragma omp simd
				for (int l = 0; l < 16; l++) {
					float v = BN_DX(o + k + l);
					bf16_or_f32_st(dx, o + k + l, (bf16 ? bf16_round(v) : v) + bf16_or_f32_ld(sum, os + k + l, bf16),
					               bf16);
				}
		else
			for (int64_t k = 0; k < inner * 16; k += 16)
#pragma omp simd
				for (int l = 0; l < 16; l++)
					bf16_or_f32_st(dx, o + k + l, BN_DX(o + k + l), bf16);
#undef BN_DX
	}
}

/*
 * batchnorm_bwd: x, weight, mean, variance, dy[, y][, sum] -> dx, dweight,
 * dbias (ops.def); x, dy, y, sum, dx in one type. With y (a fused relu's
 * output, RT_D_ACT relu), dy is the relu's output gradient, masked here by
 * y > 0. With sum ([N, C' >= C, inner]), its channels 0..C-1 are added to
 * dx (a gradient sum folded in: compiler/front/fuse.h).
 */
CPU_CLONES void cpu_batchnorm_bwd(const int64_t *d, void *const *a)
{
	int nin = (int)d[RT_D_NIN];
	bool relu = d[RT_D_ACT] == ACT_RELU;
	const float *gamma = a[1], *mean = a[2], *var = a[3];
	const void *y = relu ? a[5] : NULL, *sum = nin == 6 + relu ? a[5 + relu] : NULL;
	void *dx = a[nin];
	float *dgamma = a[nin + 1], *dbeta = a[nin + 2];
	int64_t nb, c, inner;
	bn_dims(d, 0, &nb, &c, &inner);
	int64_t csum = sum ? RT_ARG_DIM(d, 5 + relu, 1) : c;
	double eps;
	memcpy(&eps, &d[RT_D_EPS], sizeof eps);
	bool bf16 = rt_arg_bf16(d, 0);
	if ((d[RT_D_ACT] != ACT_NONE && !relu) || nin < 5 + relu || nin > 6 + relu || csum < c)
		RT_ICE("batchnorm_bwd: %d inputs and a fused %s", nin, act_name((Act)d[RT_D_ACT]));
	/* the element type and the relu as constants: each of the four bodies vectorises */
#define BN_FOUR(BODY)                    \
	do {                                 \
		if (bf16 && relu)                \
			BODY(true, true);            \
		else if (bf16)                   \
			BODY(true, false);           \
		else if (relu)                   \
			BODY(false, true);           \
		else                             \
			BODY(false, false);          \
	} while (0)
	if (rt_arg_blocked(d, 0)) {
#pragma omp parallel for schedule(static) if (nb * c * inner > BN_PAR_MIN)
		for (int64_t cb = 0; cb < c / 16; cb++) {
#define BN_BWD(BF16, RELU)                                                                                      \
	bn_bwd_block(a[0], a[4], y, sum, csum / 16, dx, nb, c / 16, inner, cb, eps, gamma, mean, var, dgamma, dbeta, \
	             BF16, RELU)
			BN_FOUR(BN_BWD);
#undef BN_BWD
		}
		return;
	}
#pragma omp parallel for schedule(static) if (nb * c * inner > BN_PAR_MIN)
	for (int64_t ch = 0; ch < c; ch++) {
		float *dg = &dgamma[ch], *db = &dbeta[ch];
#define BN_BWD(BF16, RELU)                                                                                  \
	bn_bwd_channel(a[0], a[4], y, sum, csum, dx, nb, c, inner, ch, eps, gamma[ch], mean[ch], var[ch], dg, db, \
	               BF16, RELU)
		BN_FOUR(BN_BWD);
#undef BN_BWD
	}
#undef BN_FOUR
}
