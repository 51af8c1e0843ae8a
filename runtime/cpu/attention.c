/*
 * cpu/attention.c - fused scaled dot-product attention, forward and
 * backward, flash-style: the [T, T] scores of a head are never stored.
 *
 * q, k, v, y and their gradients are N H matrices [T, D], all float32 or
 * all bf16 (read and written natively: rows and blocks are widened into
 * the thread's scratch as they are used, results rounded once as they are
 * stored); lse is float32, and all arithmetic is. The forward pass takes
 * a block of BR queries at a time against blocks of BC keys, keeping each
 * row's running maximum m, sum l and unnormalised output (the online
 * softmax), and writes y and the rows' log-sum-exp lse = m + log l. The
 * backward pass recomputes the probabilities p = exp(score - lse) block by
 * block, twice: once per key block for dk and dv (the rows of q against
 * it), once per query block for dq, so that every output element is
 * summed by one thread in one order, whatever the threads: the same bits
 * every run. Inner loops run over a block's keys (k and v transposed per
 * block) or over D, which the compiler vectorises; exponentials are
 * cpu.h's exp_le0.
 */
#include "cpu.h"

#include <math.h>
#include <omp.h>

#include "bf16.h" /* base/ */

/* Queries and keys of a block. */
enum { BR = 32, BC = 64 };

typedef struct Att {
	int64_t b, t, d; /* matrices (N H), rows (T), columns (D) */
	float alpha;     /* the scores' scale */
	bool causal;     /* row i sees keys 0..i */
} Att;

static Att att_of(const int64_t *desc)
{
	double alpha;
	int64_t bits = desc[RT_D_ALPHA];
	memcpy(&alpha, &bits, sizeof alpha);
	return (Att){RT_ARG_DIM(desc, 0, 0) * RT_ARG_DIM(desc, 0, 1), RT_ARG_DIM(desc, 0, 2), RT_ARG_DIM(desc, 0, 3),
	             (float)alpha, desc[RT_D_CAUSAL] != 0};
}

/*
 * A thread's scratch, in floats: kt, vt [D, BC]; s, ds [BR, BC]; acc, acc2 [BC, D] (BC >= BR); m, l [BR];
 * a block of rows widened [BC, D]; three rows widened [D].
 */
static size_t att_floats(int64_t d)
{
	return (size_t)(2 * d * BC + 2 * BR * BC + 2 * BC * d + 2 * BR + BC * d + 3 * d);
}

/* A thread's scratch in bytes, a multiple of 64 (the scratch is 64-byte aligned, and so each thread's) */
static size_t att_stride(int64_t d)
{
	return (sizeof(float) * att_floats(d) + 63) / 64 * 64;
}

size_t cpu_attention_scratch(const int64_t *desc)
{
	return att_stride(RT_ARG_DIM(desc, 0, 3));
}

void cpu_attention_check(int32_t id, const int64_t *desc)
{
	int nargs = (int)(desc[RT_D_NIN] + desc[RT_D_NOUT]), lse = 4; /* an output forward, an input backward */
	for (int i = 0; i < nargs; i++)
		if (i == lse ? rt_arg_bf16(desc, i) : rt_arg_bf16(desc, i) != rt_arg_bf16(desc, 0))
			RT_ICE("kernel %d (%s): argument %d is %s", id, op_name(desc[RT_D_OP]), i,
			       rt_arg_bf16(desc, i) ? "bf16" : "float32");
}

/* This thread's share of the scratch ws, laid out as att_floats says. */
typedef struct Ws {
	float *kt, *vt, *s, *ds, *acc, *acc2, *m, *l, *blk, *row[3];
} Ws;

static Ws att_ws(void *ws, const Att *a)
{
	int64_t d = a->d;
	float *w = (float *)(void *)((char *)ws + att_stride(d) * (size_t)omp_get_thread_num());
	Ws x = {.kt = w, .vt = w + d * BC, .s = w + 2 * d * BC};
	x.ds = x.s + BR * BC, x.acc = x.ds + BR * BC, x.acc2 = x.acc + BC * d;
	x.m = x.acc2 + BC * d, x.l = x.m + BR, x.blk = x.l + BR;
	for (int k = 0; k < 3; k++)
		x.row[k] = x.blk + BC * d + k * d;
	return x;
}

/* Element i of x (bf16 when h, else float32) as float32. */
static inline __attribute__((always_inline)) float ld(const void *x, int64_t i, bool h)
{
	return h ? bf16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

/* The n elements of x from element i as float32: x itself, or widened into buf (bf16). */
static inline __attribute__((always_inline)) const float *rows_of(const void *x, int64_t i, int64_t n, bool h,
                                                                  float *buf)
{
	if (!h)
		return (const float *)x + i;
	for (int64_t e = 0; e < n; e++)
		buf[e] = ld(x, i + e, true);
	return buf;
}

/* y[i + e] = scale src[e] for e < n, rounded to bf16 when h. */
static inline __attribute__((always_inline)) void put(void *y, int64_t i, const float *src, int64_t n, float scale,
                                                      bool h)
{
	if (h)
		for (int64_t e = 0; e < n; e++)
			((uint16_t *)y)[i + e] = bf16_from_f32(scale * src[e]);
	else
		for (int64_t e = 0; e < n; e++)
			((float *)y)[i + e] = scale * src[e];
}

/* kt[e, c] = k[j0 + c, e] for the nc keys of a block */
static inline __attribute__((always_inline)) void transpose_block(float *kt, const void *k, int64_t j0, int64_t nc,
                                                                  int64_t d, bool h)
{
	for (int64_t c = 0; c < nc; c++)
		for (int64_t e = 0; e < d; e++)
			kt[e * BC + c] = ld(k, (j0 + c) * d + e, h);
}

/* s[c] = alpha q . k[j0 + c] for c < nc, from the block's transpose kt */
static inline __attribute__((always_inline)) void scores(float *s, const float *q, const float *kt, int64_t nc,
                                                         int64_t d, float alpha)
{
	for (int64_t c = 0; c < nc; c++)
		s[c] = 0;
	for (int64_t e = 0; e < d; e++) {
		float qe = alpha * q[e];
#pragma omp simd
		for (int64_t c = 0; c < nc; c++)
			s[c] += qe * kt[e * BC + c];
	}
}

/* The keys row i sees in the block [j0, j1): how many, from j0 (<= 0: none). */
static inline int64_t keys_seen(const Att *a, int64_t i, int64_t j0, int64_t j1)
{
	return a->causal && i + 1 < j1 ? i + 1 - j0 : j1 - j0;
}

/* Row r's online softmax over its nc scores sr (made probabilities): m, l updated, orow rescaled, + p v */
static inline __attribute__((always_inline)) void online_row(float *sr, int64_t nc, float *m, float *l, float *orow,
                                                             const float *vb, int64_t d)
{
	float mx = *m, sum = 0;
	for (int64_t c = 0; c < nc; c++)
		mx = sr[c] > mx ? sr[c] : mx;
#pragma omp simd reduction(+ : sum)
	for (int64_t c = 0; c < nc; c++) {
		sr[c] = exp_le0(sr[c] - mx);
		sum += sr[c];
	}
	float corr = *m == -INFINITY ? 0 : exp_le0(*m - mx);
	*l = *l * corr + sum, *m = mx;
	for (int64_t e = 0; e < d; e++)
		orow[e] *= corr;
	for (int64_t c = 0; c < nc; c++) {
		const float *vr = vb + c * d;
		float p = sr[c];
#pragma omp simd
		for (int64_t e = 0; e < d; e++)
			orow[e] += p * vr[e];
	}
}

/* One block of queries [i0, i1) of one matrix (args: q, k, v, y, lse) against every key block it sees. */
static inline __attribute__((always_inline)) void fwd_block(const Att *a, void *const *x, int64_t i0, int64_t i1,
                                                            Ws w, bool h)
{
	int64_t d = a->d, nr = i1 - i0;
	float *o = w.acc;
	for (int64_t r = 0; r < nr; r++) {
		w.m[r] = -INFINITY, w.l[r] = 0;
		for (int64_t e = 0; e < d; e++)
			o[r * d + e] = 0;
	}
	int64_t jend = a->causal ? i1 : a->t;
	for (int64_t j0 = 0; j0 < jend; j0 += BC) {
		int64_t j1 = j0 + BC < jend ? j0 + BC : jend;
		transpose_block(w.kt, x[1], j0, j1 - j0, d, h);
		const float *vb = rows_of(x[2], j0 * d, (j1 - j0) * d, h, w.blk);
		for (int64_t r = 0; r < nr; r++) {
			int64_t nc = keys_seen(a, i0 + r, j0, j1);
			if (nc <= 0)
				continue;
			scores(w.s + r * BC, rows_of(x[0], (i0 + r) * d, d, h, w.row[0]), w.kt, nc, d, a->alpha);
			online_row(w.s + r * BC, nc, &w.m[r], &w.l[r], o + r * d, vb, d);
		}
	}
	for (int64_t r = 0; r < nr; r++) {
		put(x[3], (i0 + r) * d, o + r * d, d, 1 / w.l[r], h);
		((float *)x[4])[i0 + r] = w.m[r] + logf(w.l[r]);
	}
}

/* args: q, k, v -> y, lse; each of the N H matrices' blocks of queries a task */
CPU_CLONES void cpu_attention(const int64_t *desc, void *const *args, void *ws)
{
	Att a = att_of(desc);
	bool h = rt_arg_bf16(desc, 0);
	int64_t nblk = (a.t + BR - 1) / BR, md = a.t * a.d, sz = h ? 2 : 4;
#pragma omp parallel for schedule(dynamic)
	for (int64_t task = 0; task < a.b * nblk; task++) {
		int64_t b = task / nblk, i0 = task % nblk * BR, i1 = i0 + BR < a.t ? i0 + BR : a.t;
		void *x[5];
		for (int k = 0; k < 5; k++)
			x[k] = (char *)args[k] + b * (k == 4 ? a.t * 4 : md * sz);
		if (h)
			fwd_block(&a, x, i0, i1, att_ws(ws, &a), true);
		else
			fwd_block(&a, x, i0, i1, att_ws(ws, &a), false);
	}
}

/* Row i's p = exp(score - lse) and ds = alpha p (dy . v - dy . y) for the block's keys c < nc. */
static inline __attribute__((always_inline)) void probs(const Att *a, float *p, float *ds, const float *qi,
                                                        const float *dyi, const float *kt, const float *vt,
                                                        float lse, float dyy, int64_t nc)
{
	scores(p, qi, kt, nc, a->d, a->alpha);
	scores(ds, dyi, vt, nc, a->d, 1);
#pragma omp simd
	for (int64_t c = 0; c < nc; c++) {
		p[c] = exp_le0(p[c] - lse);
		ds[c] = a->alpha * p[c] * (ds[c] - dyy);
	}
}

static inline float dot(const float *x, const float *y, int64_t n)
{
	float s = 0;
#pragma omp simd reduction(+ : s)
	for (int64_t e = 0; e < n; e++)
		s += x[e] * y[e];
	return s;
}

/* dk, dv of the key block [j0, j1) of one matrix (x: q, k, v, y, lse, dy, dq, dk, dv): every row that sees it. */
static inline __attribute__((always_inline)) void bwd_kv_block(const Att *a, void *const *x, int64_t j0, int64_t j1,
                                                               Ws w, bool h)
{
	int64_t d = a->d, nc = j1 - j0;
	const float *lse = x[4];
	float *ak = w.acc, *av = w.acc2;
	transpose_block(w.kt, x[1], j0, nc, d, h);
	transpose_block(w.vt, x[2], j0, nc, d, h);
	for (int64_t e = 0; e < nc * d; e++)
		ak[e] = av[e] = 0;
	for (int64_t i = a->causal ? j0 : 0; i < a->t; i++) {
		int64_t seen = keys_seen(a, i, j0, j1);
		const float *qi = rows_of(x[0], i * d, d, h, w.row[0]), *dyi = rows_of(x[5], i * d, d, h, w.row[1]);
		float dyy = dot(dyi, rows_of(x[3], i * d, d, h, w.row[2]), d);
		probs(a, w.s, w.ds, qi, dyi, w.kt, w.vt, lse[i], dyy, seen);
		for (int64_t c = 0; c < seen; c++) {
			float pc = w.s[c], dc = w.ds[c];
#pragma omp simd
			for (int64_t e = 0; e < d; e++) {
				av[c * d + e] += pc * dyi[e];
				ak[c * d + e] += dc * qi[e];
			}
		}
	}
	put(x[7], j0 * d, ak, nc * d, 1, h);
	put(x[8], j0 * d, av, nc * d, 1, h);
}

/* dq of the query block [i0, i1) of one matrix: every key block it sees. */
static inline __attribute__((always_inline)) void bwd_q_block(const Att *a, void *const *x, int64_t i0, int64_t i1,
                                                              Ws w, bool h)
{
	int64_t d = a->d, nr = i1 - i0;
	const float *lse = x[4];
	float *aq = w.acc, *dyy = w.m;
	for (int64_t e = 0; e < nr * d; e++)
		aq[e] = 0;
	for (int64_t r = 0; r < nr; r++)
		dyy[r] = dot(rows_of(x[5], (i0 + r) * d, d, h, w.row[1]), rows_of(x[3], (i0 + r) * d, d, h, w.row[2]), d);
	int64_t jend = a->causal ? i1 : a->t;
	for (int64_t j0 = 0; j0 < jend; j0 += BC) {
		int64_t j1 = j0 + BC < jend ? j0 + BC : jend;
		transpose_block(w.kt, x[1], j0, j1 - j0, d, h);
		transpose_block(w.vt, x[2], j0, j1 - j0, d, h);
		const float *kb = rows_of(x[1], j0 * d, (j1 - j0) * d, h, w.blk);
		for (int64_t r = 0; r < nr; r++) {
			int64_t i = i0 + r, seen = keys_seen(a, i, j0, j1);
			if (seen <= 0)
				continue;
			probs(a, w.s, w.ds, rows_of(x[0], i * d, d, h, w.row[0]), rows_of(x[5], i * d, d, h, w.row[1]), w.kt,
			      w.vt, lse[i], dyy[r], seen);
			float *ar = aq + r * d;
			for (int64_t c = 0; c < seen; c++) {
				const float *kr = kb + c * d;
				float dc = w.ds[c];
#pragma omp simd
				for (int64_t e = 0; e < d; e++)
					ar[e] += dc * kr[e];
			}
		}
	}
	put(x[6], i0 * d, aq, nr * d, 1, h);
}

/* args: q, k, v, y, lse, dy -> dq, dk, dv; each matrix's key blocks (dk, dv) and query blocks (dq) tasks */
CPU_CLONES void cpu_attention_bwd(const int64_t *desc, void *const *args, void *ws)
{
	Att a = att_of(desc);
	bool h = rt_arg_bf16(desc, 0);
	int64_t nq = (a.t + BR - 1) / BR, nk = (a.t + BC - 1) / BC, md = a.t * a.d, sz = h ? 2 : 4;
#pragma omp parallel for schedule(dynamic)
	for (int64_t task = 0; task < a.b * (nq + nk); task++) {
		int64_t b = task / (nq + nk), blk = task % (nq + nk);
		void *x[9];
		for (int k = 0; k < 9; k++)
			x[k] = (char *)args[k] + b * (k == 4 ? a.t * 4 : md * sz);
		int64_t j0 = blk * BC, i0 = (blk - nk) * BR;
		if (blk < nk && h)
			bwd_kv_block(&a, x, j0, j0 + BC < a.t ? j0 + BC : a.t, att_ws(ws, &a), true);
		else if (blk < nk)
			bwd_kv_block(&a, x, j0, j0 + BC < a.t ? j0 + BC : a.t, att_ws(ws, &a), false);
		else if (h)
			bwd_q_block(&a, x, i0, i0 + BR < a.t ? i0 + BR : a.t, att_ws(ws, &a), true);
		else
			bwd_q_block(&a, x, i0, i0 + BR < a.t ? i0 + BR : a.t, att_ws(ws, &a), false);
	}
}
