/*
 * cpu/xent.c - the losses: softmax cross-entropy against one-hot (or
 * soft) labels and against class ids, and their gradients, as plain C.
 *
 * A row of logits is read three times: for its largest value, for the
 * sum of exp(z - max), and for the output (the loss reads one element; a
 * gradient writes the whole row); the fused loss and gradient
 * (softmax_crossentropy_ids_grad) reads it twice, taking the maximum and
 * the sum block by block in one read. Over a GPT's 50,257-way vocabulary the
 * exponentials are the work: glibc's expf is scalar, so they use exp_le0
 * below, a polynomial the compiler vectorises, and the entry points are
 * built for AVX-512 and AVX2 besides the baseline (chosen when the program
 * loads). Sums are in double; rows run in parallel and each row's loss is
 * summed in row order, so the result is the same whatever the threads.
 *
 * The output layer fused with its loss (dense_crossentropy_ids_grad,
 * cpu_dense_xent in float32, cpu/head.c in bf16) makes a block of rows'
 * logits with oneDNN's sgemm, turns them into their gradient in place as
 * softmax_crossentropy_ids_grad does a row (cpu_xent_grad_block), and
 * multiplies the block back into dx and dw: the logits are only ever a
 * block in the kernel's scratch.
 */
#include "cpu.h"

#include <math.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "bf16.h" /* base/ */

/* Rows of fewer elements than this in all run on one thread. */
enum { XENT_PAR_MIN = 1 << 15 };

/* A row's largest logit and the sum of exp(z - max), in double. */
static inline __attribute__((always_inline)) void row_stats(const float *z, int64_t k, float *mx, double *sum)
{
	float m = z[0];
#pragma omp simd reduction(max : m)
	for (int64_t j = 0; j < k; j++)
		m = z[j] > m ? z[j] : m;
	double s = 0;
#pragma omp simd reduction(+ : s)
	for (int64_t j = 0; j < k; j++)
		s += exp_le0(z[j] - m);
	*mx = m;
	*sum = s;
}

/*
 * row_stats in one read of the row, of float32 or (h) bf16 logits: blocks of XENT_BLK elements, each
 * block's maximum first (from the cache), the sum so far rescaled when it grows. Within rounding of
 * row_stats (the exponentials are taken against the running maximum, then scaled).
 */
enum { XENT_BLK = 1024 };

static inline __attribute__((always_inline)) float logit(const void *z, int64_t j, bool h)
{
	return h ? bf16_to_f32(((const uint16_t *)z)[j]) : ((const float *)z)[j];
}

static inline __attribute__((always_inline)) void row_stats_once(const void *z, int64_t k, bool h, float *mx,
                                                                  double *sum)
{
	float m = logit(z, 0, h);
	double s = 0;
	for (int64_t j0 = 0; j0 < k; j0 += XENT_BLK) {
		int64_t j1 = j0 + XENT_BLK < k ? j0 + XENT_BLK : k;
		float bm = m;
#pragma omp simd reduction(max : bm)
		for (int64_t j = j0; j < j1; j++)
			bm = logit(z, j, h) > bm ? logit(z, j, h) : bm;
		if (bm > m) {
			s *= exp((double)m - (double)bm);
			m = bm;
		}
		double bs = 0;
#pragma omp simd reduction(+ : bs)
		for (int64_t j = j0; j < j1; j++)
			bs += exp_le0(logit(z, j, h) - m);
		s += bs;
	}
	*mx = m;
	*sum = s;
}

/* The mean of the rows' losses, summed in row order. */
static float mean_loss(const double *rowloss, int64_t rows)
{
	double total = 0;
	for (int64_t r = 0; r < rows; r++)
		total += rowloss[r];
	return (float)(total / (double)rows);
}

/* softmax_crossentropy: logits [N, K], labels [N, K] -> loss [1] = mean of -sum y * log_softmax(z) */
CPU_CLONES void cpu_xent(const int64_t *d, void *const *a, double *rowloss)
{
	const float *z = a[0], *y = a[1];
	float *loss = a[2];
	int64_t rows = RT_ARG_DIM(d, 0, 0), k = RT_ARG_DIM(d, 0, 1);
#pragma omp parallel for if (rows * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		float mx;
		double s;
		row_stats(z + r * k, k, &mx, &s);
		double lse = mx + log(s), l = 0;
		for (int64_t j = 0; j < k; j++)
			if (y[r * k + j] != 0)
				l -= (double)y[r * k + j] * ((double)z[r * k + j] - lse);
		rowloss[r] = l;
	}
	loss[0] = mean_loss(rowloss, rows);
}

/* softmax_crossentropy_bwd: logits, labels -> dlogits = (softmax(z) * sum(y) - y) / N */
CPU_CLONES void cpu_xent_bwd(const int64_t *d, void *const *a)
{
	const float *z = a[0], *y = a[1];
	float *dz = a[2];
	int64_t rows = RT_ARG_DIM(d, 0, 0), k = RT_ARG_DIM(d, 0, 1);
#pragma omp parallel for if (rows * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		float mx;
		double s, ysum = 0;
		row_stats(z + r * k, k, &mx, &s);
		for (int64_t j = 0; j < k; j++)
			ysum += y[r * k + j];
		float scale = (float)(ysum / s / (double)rows), inv = (float)(1.0 / (double)rows);
#pragma omp simd
		for (int64_t j = 0; j < k; j++)
			dz[r * k + j] = exp_le0(z[r * k + j] - mx) * scale - y[r * k + j] * inv;
	}
}

/* The rows and the classes K of softmax_crossentropy_ids(_bwd): ids [R], logits [R, K] */
static int64_t id_rows(const int64_t *d, int64_t *k)
{
	*k = RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1);
	int64_t rows = 1;
	for (int64_t i = 0; i < RT_ARG_NDIM(d, 1); i++)
		rows *= RT_ARG_DIM(d, 1, i);
	return rows;
}

/* softmax_crossentropy_ids: logits [R, K], ids i32 [R] -> loss [1], the mean of logsumexp(z) - z[id] */
CPU_CLONES void cpu_xent_ids(const int64_t *d, void *const *a, double *rowloss)
{
	const float *z = a[0];
	const int32_t *ids = a[1];
	float *loss = a[2];
	int64_t k, rows = id_rows(d, &k);
#pragma omp parallel for if (rows * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		float mx;
		double s;
		row_stats(z + r * k, k, &mx, &s);
		rowloss[r] = mx + log(s) - (double)z[r * k + ids[r]];
	}
	loss[0] = mean_loss(rowloss, rows);
}

/* softmax_crossentropy_ids_bwd: logits, ids -> dlogits = (softmax(z) - onehot(id)) / R */
CPU_CLONES void cpu_xent_ids_bwd(const int64_t *d, void *const *a)
{
	const float *z = a[0];
	const int32_t *ids = a[1];
	float *dz = a[2];
	int64_t k, rows = id_rows(d, &k);
#pragma omp parallel for if (rows * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		float mx;
		double s;
		row_stats(z + r * k, k, &mx, &s);
		float scale = (float)(1.0 / s / (double)rows);
#pragma omp simd
		for (int64_t j = 0; j < k; j++)
			dz[r * k + j] = exp_le0(z[r * k + j] - mx) * scale;
		dz[r * k + ids[r]] -= (float)(1.0 / (double)rows);
	}
}

/* Row r of softmax_crossentropy_ids_grad (float32, or bf16 logits and gradient when h). */
static inline __attribute__((always_inline)) void xent_grad_row(const void *z, const int32_t *ids, void *dz,
                                                                 int64_t r, int64_t k, int64_t rows, bool h,
                                                                 double *rowloss)
{
	const void *zr = h ? (const void *)((const uint16_t *)z + r * k) : (const void *)((const float *)z + r * k);
	float mx, inv = (float)(1.0 / (double)rows);
	double s;
	row_stats_once(zr, k, h, &mx, &s);
	float scale = (float)(1.0 / s / (double)rows), gid = exp_le0(logit(zr, ids[r], h) - mx) * scale - inv;
	rowloss[r] = mx + log(s) - (double)logit(zr, ids[r], h);
	if (h) {
		uint16_t *d = (uint16_t *)dz + r * k;
#pragma omp simd
		for (int64_t j = 0; j < k; j++)
			d[j] = bf16_from_f32(exp_le0(logit(zr, j, true) - mx) * scale);
		d[ids[r]] = bf16_from_f32(gid);
	} else {
		float *d = (float *)dz + r * k;
#pragma omp simd
		for (int64_t j = 0; j < k; j++)
			d[j] = exp_le0(logit(zr, j, false) - mx) * scale;
		d[ids[r]] = gid;
	}
}

/*
 * softmax_crossentropy_ids_grad: logits, ids -> dlogits, loss: both of the above from one read of each row
 * for its statistics (the running maximum and sum of one pass, rescaled as the maximum grows) and one more
 * for the gradient, which may be written over the logits (each element is read before it is written; the
 * id's element is computed before the row is). bf16 logits (the fusion pass folds the casts to float32 and
 * back around the loss) are widened as read, the gradient computed in float32 and rounded once as stored:
 * what the casts did.
 */
CPU_CLONES void cpu_xent_ids_grad(const int64_t *d, void *const *a, double *rowloss)
{
	const int32_t *ids = a[1];
	float *loss = a[3];
	bool h = rt_arg_bf16(d, 0);
	int64_t k, rows = id_rows(d, &k);
#pragma omp parallel for if (rows * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		if (h)
			xent_grad_row(a[0], ids, a[2], r, k, rows, true, rowloss);
		else
			xent_grad_row(a[0], ids, a[2], r, k, rows, false, rowloss);
	}
	loss[0] = mean_loss(rowloss, rows);
}

/* C [m, n] = A op(B) (+ C where acc), row-major (oneDNN's sgemm) */
static void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                 int64_t ldb, bool acc, float *C, int64_t ldc)
{
	if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, A, lda, B, ldb, acc ? 1.0f : 0.0f, C, ldc) != dnnl_success)
		RT_ICE("sgemm of the output layer's block (%lld x %lld x %lld) failed", (long long)m, (long long)n,
		       (long long)k);
}

/* Rows 0..nr-1 of block z [nr, k] (bf16 where h) turned into their gradient in place, their losses in rowloss. */
CPU_CLONES void cpu_xent_grad_block(void *z, const int32_t *ids, int64_t nr, int64_t k, int64_t rows, bool h,
                                     double *rowloss)
{
#pragma omp parallel for if (nr * k > XENT_PAR_MIN)
	for (int64_t r = 0; r < nr; r++) {
		if (h)
			xent_grad_row(z, ids, z, r, k, rows, true, rowloss);
		else
			xent_grad_row(z, ids, z, r, k, rows, false, rowloss);
	}
}

double cpu_xent_mean(const double *rowloss, int64_t rows)
{
	return mean_loss(rowloss, rows);
}

size_t cpu_dense_xent_scratch(const int64_t *d, int64_t per)
{
	return sizeof(float) * (size_t)(per * RT_ARG_DIM(d, 1, 0));
}

/*
 * dense_crossentropy_ids_grad in float32 (cpu/head.c has bf16's): x [R, C], weight [V, C], ids [R] -> dx
 * [R, C], dweight [V, C], loss [1]. Blocks of `per` rows (op_head_block_rows, or fewer) in order:
 * z = x w^T (the block's logits, in blk), its loss and gradient row by row (in place), dx = dz w,
 * dw (+)= dz^T x. The rows' losses are summed in row order at the end, as the unfused loss sums them.
 */
CPU_CLONES void cpu_dense_xent(const int64_t *d, void *const *a, double *rowloss, float *blk, int64_t per)
{
	const float *x = a[0], *w = a[1];
	const int32_t *ids = a[2];
	float *dx = a[3], *dw = a[4], *loss = a[5];
	int64_t c = RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1), v = RT_ARG_DIM(d, 1, 0), rows = rt_head_rows(d);
	for (int64_t r0 = 0; r0 < rows; r0 += per) {
		int64_t nr = rows - r0 < per ? rows - r0 : per;
		gemm('N', 'T', nr, v, c, x + r0 * c, c, w, c, false, blk, v);
		cpu_xent_grad_block(blk, ids + r0, nr, v, rows, false, rowloss + r0);
		gemm('N', 'N', nr, c, v, blk, v, w, c, false, dx + r0 * c, c);
		gemm('T', 'N', v, c, nr, blk, v, x + r0 * c, c, r0 > 0, dw, c);
	}
	if (rows == 0)
		memset(dw, 0, sizeof(float) * (size_t)(v * c));
	loss[0] = mean_loss(rowloss, rows);
}
