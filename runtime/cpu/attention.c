/*
 * cpu/attention.c - fused scaled dot-product attention, forward and
 * backward, flash-style: the [T, T] scores of a head are never stored.
 *
 * The forward kernel reads the heads of q, k and v where the projection
 * wrote them, side by side in x [N, T, 3 H D], and writes the heads of y
 * side by side in [N, T, H D] (split_heads and merge_heads are folded in);
 * one head of one sample is a matrix [T, D] whose rows are a row stride
 * apart. Data are all float32 or all bf16 (blocks are copied into the
 * thread's scratch as they are used, bf16 widened; results rounded once as
 * they are stored); lse [N, H, T] is float32, and all arithmetic is.
 *
 * The forward pass takes a block of BLK queries at a time against blocks
 * of BLK keys: the block's scores S = alpha Q K^T, then per row the
 * online softmax (a running maximum m and sum l, the output so far
 * rescaled as the maximum grows), and O += P V; it writes y = O / l and
 * the rows' log-sum-exp lse = m + log l. The backward pass recomputes the
 * probabilities P = exp(S - lse) block by block, twice: once per key
 * block for dk and dv (dV = P^T dY, dK = dS^T Q over the query blocks that
 * see it), once per query block for dq (dQ = dS K), where dS = alpha P
 * (dY V^T - rowsum(dY y)). So every output element is summed by one task
 * in one order, whatever the threads: the same bits every run. The block
 * products are oneDNN's sgemm (single-threaded inside the tasks' parallel
 * loop); exponentials are exp_fma below (cpu.h's exp_poly).
 */
#include "cpu.h"

#include <math.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include "bf16.h" /* base/ */

/* The helpers are inlined into the entry points, which are built per instruction set (cpu.h's CPU_CLONES). */
#define INLINE static inline __attribute__((always_inline))

/*
 * cpu.h's exponential with fused multiply-adds, within an ulp: exp_le0's
 * rounding (2 ulp) left the probabilities' sums a few ulp from 1, which a
 * key bias's gradient, exactly 0 in exact arithmetic, carries; under AdamW
 * that noise moved the bias three times as far as PyTorch's does.
 */
INLINE float exp_fma(float x)
{
	return exp_poly(x, true);
}

/* Queries and keys of a block. */
enum { BLK = 64 };

typedef struct Att {
	int64_t n, heads, t, d; /* samples, heads, rows (T), columns of a head (D) */
	float alpha;            /* the scores' scale */
	bool causal;            /* row i sees keys 0..i */
	bool h;                 /* bf16 data (else float32) */
} Att;

/* One head of one sample of an argument: a matrix [T, D] at p, its rows ld elements apart. */
typedef struct View {
	char *p;
	int64_t ld;
} View;

/* The attribute shape is [N, H, T, D]. */
static Att att_of(const int64_t *desc)
{
	double alpha;
	int64_t bits = desc[RT_D_ALPHA];
	memcpy(&alpha, &bits, sizeof alpha);
	const int64_t *s = &desc[RT_D_ASHAPE + 1];
	return (Att){s[0], s[1], s[2], s[3], (float)alpha, desc[RT_D_CAUSAL] != 0, rt_arg_bf16(desc, 0)};
}

/* Head h of sample n of a packed argument of `parts` heads-wide parts, part k of them. */
static View view_of(const Att *a, void *arg, int parts, int k, int64_t n, int64_t h)
{
	int64_t width = parts * a->heads * a->d;
	return (View){(char *)arg + (n * a->t * width + k * a->heads * a->d + h * a->d) * (a->h ? 2 : 4), width};
}

/* A thread's scratch, in floats: s, dp [BLK, BLK]; acc, and six blocks of rows [BLK, D]; m, l [BLK]. */
static size_t att_floats(int64_t d)
{
	return (size_t)(2 * BLK * BLK + 7 * BLK * d + 2 * BLK);
}

/* A thread's scratch in bytes, a multiple of 64 (the scratch is 64-byte aligned, and so each thread's) */
static size_t att_stride(int64_t d)
{
	return (sizeof(float) * att_floats(d) + 63) / 64 * 64;
}

size_t cpu_attention_scratch(const int64_t *desc)
{
	return att_stride(desc[RT_D_ASHAPE + 4]); /* D */
}

void cpu_attention_check(int32_t id, const int64_t *desc)
{
	const int64_t *s = &desc[RT_D_ASHAPE + 1];
	int nargs = (int)(desc[RT_D_NIN] + desc[RT_D_NOUT]), lse = 2; /* x, y, lse: the forward's args, the backward's inputs */
	if (desc[RT_D_ASHAPE] != 4 || RT_ARG_NDIM(desc, 0) != 3 || RT_ARG_DIM(desc, 0, 2) != 3 * s[1] * s[3])
		RT_ICE("kernel %d (%s): heads [N, H, T, D] do not fit the input", id, op_name(desc[RT_D_OP]));
	for (int i = 0; i < nargs; i++)
		if (i == lse ? rt_arg_bf16(desc, i) : rt_arg_bf16(desc, i) != rt_arg_bf16(desc, 0))
			RT_ICE("kernel %d (%s): argument %d is %s", id, op_name(desc[RT_D_OP]), i,
			       rt_arg_bf16(desc, i) ? "bf16" : "float32");
}

/* This thread's share of the scratch, laid out as att_floats says: blocks of rows widened (blk[0..3], [5]: q,
   k, v, dy, y) or summed (acc, blk[4]). */
typedef struct Ws {
	float *s, *dp, *acc, *m, *l, *blk[6];
} Ws;

static Ws att_ws(void *ws, const Att *a)
{
	int64_t d = a->d;
	float *w = (float *)(void *)((char *)ws + att_stride(d) * (size_t)omp_get_thread_num());
	Ws x = {.s = w, .dp = w + BLK * BLK, .acc = w + 2 * BLK * BLK};
	for (int k = 0; k < 6; k++)
		x.blk[k] = x.acc + (k + 1) * BLK * d;
	x.m = x.blk[5] + BLK * d, x.l = x.m + BLK;
	return x;
}

/* A block of rows as float32 for sgemm: a matrix and its row stride. */
typedef struct Rows {
	const float *p;
	int64_t ld;
} Rows;

/*
 * Rows [i, i + n) of v as float32 in buf, rows D apart: copied (float32; rows a projection's width apart
 * share cache sets, which slowed sgemm by half), or widened (bf16).
 */
INLINE Rows rows_of(const Att *a, View v, int64_t i, int64_t n, float *buf)
{
	for (int64_t r = 0; r < n; r++) {
		if (a->h) {
			const uint16_t *src = (const uint16_t *)(void *)v.p + (i + r) * v.ld;
			for (int64_t e = 0; e < a->d; e++)
				buf[r * a->d + e] = bf16_to_f32(src[e]);
		} else {
			memcpy(buf + r * a->d, (const float *)(void *)v.p + (i + r) * v.ld, sizeof(float) * (size_t)a->d);
		}
	}
	return (Rows){buf, a->d};
}

/* Rows [i, i + n) of y = src (rows D apart) times rscale[r] (1 without), rounded to bf16 for bf16 data. */
INLINE void put_rows(const Att *a, View y, int64_t i, int64_t n, const float *src, const float *rscale)
{
	int64_t d = a->d;
	for (int64_t r = 0; r < n; r++) {
		float sc = rscale ? rscale[r] : 1;
		if (a->h) {
			uint16_t *dst = (uint16_t *)(void *)y.p + (i + r) * y.ld;
			for (int64_t e = 0; e < d; e++)
				dst[e] = bf16_from_f32(sc * src[r * d + e]);
		} else {
			float *dst = (float *)(void *)y.p + (i + r) * y.ld;
			for (int64_t e = 0; e < d; e++)
				dst[e] = sc * src[r * d + e];
		}
	}
}

/* C [m, n] (row stride ldc) = alpha op(A) op(B) + beta C, A and B row-major as sgemm reads them. */
static void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, Rows A, Rows B, float beta,
                 float *C, int64_t ldc)
{
	if (dnnl_sgemm(ta, tb, m, n, k, alpha, A.p, A.ld, B.p, B.ld, beta, C, ldc) != dnnl_success)
		RT_ICE("sgemm of attention's blocks (%lld x %lld x %lld) failed", (long long)m, (long long)n, (long long)k);
}

/* The keys query i sees in the block [j0, j1): how many, from j0 (<= 0: none). */
INLINE int64_t keys_seen(const Att *a, int64_t i, int64_t j0, int64_t j1)
{
	return a->causal && i + 1 < j1 ? i + 1 - j0 : j1 - j0;
}

/* Row r of a block's scores, nc of them seen: the online softmax's update; the row made its probabilities
   (0 past what it sees), and the factor its output so far is rescaled by returned. */
INLINE float online_row(float *sr, int64_t seen, int64_t nc, float *m, float *l)
{
	float mx = *m, sum = 0;
	for (int64_t c = 0; c < seen; c++)
		mx = sr[c] > mx ? sr[c] : mx;
#pragma omp simd reduction(+ : sum)
	for (int64_t c = 0; c < seen; c++) {
		sr[c] = exp_fma(sr[c] - mx);
		sum += sr[c];
	}
	for (int64_t c = seen < 0 ? 0 : seen; c < nc; c++)
		sr[c] = 0;
	float corr = *m == -INFINITY ? 0 : exp_fma(*m - mx);
	*l = *l * corr + sum, *m = mx;
	return corr;
}

/* Queries [i0, i0 + nr) of one head (v: q, k, v, y; lse its rows') against every key block they see. */
INLINE void fwd_block(const Att *a, const View *v, float *lse, int64_t i0, int64_t nr, Ws w)
{
	int64_t d = a->d, jend = a->causal ? i0 + nr : a->t;
	Rows q = rows_of(a, v[0], i0, nr, w.blk[0]);
	for (int64_t r = 0; r < nr; r++)
		w.m[r] = -INFINITY, w.l[r] = 0;
	for (int64_t e = 0; e < nr * d; e++)
		w.acc[e] = 0;
	for (int64_t j0 = 0; j0 < jend; j0 += BLK) {
		int64_t nc = (j0 + BLK < jend ? j0 + BLK : jend) - j0;
		Rows k = rows_of(a, v[1], j0, nc, w.blk[1]), vv = rows_of(a, v[2], j0, nc, w.blk[2]);
		gemm('N', 'T', nr, nc, d, a->alpha, q, k, 0, w.s, BLK);
		for (int64_t r = 0; r < nr; r++) {
			float corr = online_row(w.s + r * BLK, keys_seen(a, i0 + r, j0, j0 + nc), nc, &w.m[r], &w.l[r]);
			for (int64_t e = 0; e < d; e++)
				w.acc[r * d + e] *= corr;
		}
		gemm('N', 'N', nr, d, nc, 1, (Rows){w.s, BLK}, vv, 1, w.acc, d);
	}
	for (int64_t r = 0; r < nr; r++) {
		lse[i0 + r] = w.m[r] + logf(w.l[r]);
		w.l[r] = 1 / w.l[r];
	}
	put_rows(a, v[3], i0, nr, w.acc, w.l);
}

/* args: x [N, T, 3 H D] (q, k, v side by side) -> y [N, T, H D], lse [N, H, T]; a task per block of queries */
CPU_CLONES void cpu_attention(const int64_t *desc, void *const *args, void *ws)
{
	Att a = att_of(desc);
	int64_t nblk = (a.t + BLK - 1) / BLK;
#pragma omp parallel for schedule(dynamic)
	for (int64_t task = 0; task < a.n * a.heads * nblk; task++) {
		int64_t b = task / nblk, n = b / a.heads, h = b % a.heads, i0 = task % nblk * BLK;
		View v[4] = {view_of(&a, args[0], 3, 0, n, h), view_of(&a, args[0], 3, 1, n, h),
		             view_of(&a, args[0], 3, 2, n, h), view_of(&a, args[1], 1, 0, n, h)};
		fwd_block(&a, v, (float *)args[2] + b * a.t, i0, i0 + BLK < a.t ? BLK : a.t - i0, att_ws(ws, &a));
	}
}

/*
 * The block of queries [i0, i0 + nr) against keys [j0, j0 + nc) (q, dy: the queries' rows; k, v: the keys';
 * lse, dyy: the queries' log-sum-exp and rowsum(dy y)): w.s = P, w.dp = dS.
 */
INLINE void probs(const Att *a, Rows q, Rows dy, Rows k, Rows v, const float *lse, const float *dyy, int64_t i0,
                  int64_t nr, int64_t j0, int64_t nc, Ws w)
{
	gemm('N', 'T', nr, nc, a->d, a->alpha, q, k, 0, w.s, BLK);
	gemm('N', 'T', nr, nc, a->d, 1, dy, v, 0, w.dp, BLK);
	for (int64_t r = 0; r < nr; r++) {
		float *p = w.s + r * BLK, *ds = w.dp + r * BLK, lr = lse[i0 + r], dr = dyy[r];
		int64_t seen = keys_seen(a, i0 + r, j0, j0 + nc);
#pragma omp simd
		for (int64_t c = 0; c < nc; c++) {
			p[c] = c < seen ? exp_fma(p[c] - lr) : 0;
			ds[c] = a->alpha * p[c] * (ds[c] - dr);
		}
	}
}

/* rowsum(dy y) of nr rows into out */
INLINE void rows_dot(const Att *a, Rows dy, Rows y, int64_t nr, float *out)
{
	for (int64_t r = 0; r < nr; r++) {
		const float *p = dy.p + r * dy.ld, *q = y.p + r * y.ld;
		float s = 0;
#pragma omp simd reduction(+ : s)
		for (int64_t e = 0; e < a->d; e++)
			s += p[e] * q[e];
		out[r] = s;
	}
}

/* dk, dv of keys [j0, j0 + nc) of one head (v: q, k, v, y, dy, dq, dk, dv): every query block that sees them. */
INLINE void bwd_kv_block(const Att *a, const View *v, const float *lse, int64_t j0, int64_t nc, Ws w)
{
	int64_t d = a->d;
	Rows k = rows_of(a, v[1], j0, nc, w.blk[1]), vv = rows_of(a, v[2], j0, nc, w.blk[2]);
	float *dk = w.acc, *dv = w.blk[4];
	for (int64_t e = 0; e < nc * d; e++)
		dk[e] = dv[e] = 0;
	for (int64_t i0 = a->causal ? j0 : 0; i0 < a->t; i0 += BLK) {
		int64_t nr = (i0 + BLK < a->t ? i0 + BLK : a->t) - i0;
		Rows q = rows_of(a, v[0], i0, nr, w.blk[0]), dy = rows_of(a, v[4], i0, nr, w.blk[3]);
		rows_dot(a, dy, rows_of(a, v[3], i0, nr, w.blk[5]), nr, w.m);
		probs(a, q, dy, k, vv, lse, w.m, i0, nr, j0, nc, w);
		gemm('T', 'N', nc, d, nr, 1, (Rows){w.s, BLK}, dy, 1, dv, d);
		gemm('T', 'N', nc, d, nr, 1, (Rows){w.dp, BLK}, q, 1, dk, d);
	}
	put_rows(a, v[6], j0, nc, dk, NULL);
	put_rows(a, v[7], j0, nc, dv, NULL);
}

/* dq of queries [i0, i0 + nr) of one head: every key block they see. */
INLINE void bwd_q_block(const Att *a, const View *v, const float *lse, int64_t i0, int64_t nr, Ws w)
{
	int64_t d = a->d, jend = a->causal ? i0 + nr : a->t;
	Rows q = rows_of(a, v[0], i0, nr, w.blk[0]), dy = rows_of(a, v[4], i0, nr, w.blk[3]);
	rows_dot(a, dy, rows_of(a, v[3], i0, nr, w.blk[5]), nr, w.m);
	for (int64_t e = 0; e < nr * d; e++)
		w.acc[e] = 0;
	for (int64_t j0 = 0; j0 < jend; j0 += BLK) {
		int64_t nc = (j0 + BLK < jend ? j0 + BLK : jend) - j0;
		Rows k = rows_of(a, v[1], j0, nc, w.blk[1]), vv = rows_of(a, v[2], j0, nc, w.blk[2]);
		probs(a, q, dy, k, vv, lse, w.m, i0, nr, j0, nc, w);
		gemm('N', 'N', nr, d, nc, 1, (Rows){w.dp, BLK}, k, 1, w.acc, d);
	}
	put_rows(a, v[5], i0, nr, w.acc, NULL);
}

/*
 * args: x, y, lse, dy -> dx [N, T, 3 H D] (dq, dk, dv side by side); for each head, a task per block of keys
 * (dk, dv) and one per block of queries (dq)
 */
CPU_CLONES void cpu_attention_bwd(const int64_t *desc, void *const *args, void *ws)
{
	Att a = att_of(desc);
	int64_t nblk = (a.t + BLK - 1) / BLK;
#pragma omp parallel for schedule(dynamic)
	for (int64_t task = 0; task < a.n * a.heads * 2 * nblk; task++) {
		int64_t b = task / (2 * nblk), n = b / a.heads, h = b % a.heads, i0 = task % nblk * BLK;
		int64_t rows = i0 + BLK < a.t ? BLK : a.t - i0;
		View v[8] = {view_of(&a, args[0], 3, 0, n, h), view_of(&a, args[0], 3, 1, n, h),
		             view_of(&a, args[0], 3, 2, n, h), view_of(&a, args[1], 1, 0, n, h),
		             view_of(&a, args[3], 1, 0, n, h), view_of(&a, args[4], 3, 0, n, h),
		             view_of(&a, args[4], 3, 1, n, h), view_of(&a, args[4], 3, 2, n, h)};
		const float *lse = (const float *)args[2] + b * a.t;
		if (task % (2 * nblk) < nblk)
			bwd_kv_block(&a, v, lse, i0, rows, att_ws(ws, &a));
		else
			bwd_q_block(&a, v, lse, i0, rows, att_ws(ws, &a));
	}
}
