/*
 * test-conv-gemm.c - the GPU backend's own algorithms of 1x1 convolutions
 * (runtime/cuda/conv_gemm.h), their products checked on the CPU.
 *
 * A small network's training step has 1x1 convolutions of stride 1 (with
 * and without bias), one of stride 2 and a 3x3 one. For every convolution
 * node in schedule order, described as the compiler describes it to the
 * runtime (node_describe), conv_gemm_applies must hold exactly for the
 * 1x1 stride-1 ones; for those, the products conv_gemm_plan gives, run as
 * cuBLAS runs them (a column-major sgemm here, with cuBLAS's rules for
 * leading dimensions checked) the way cuda/kernels.c issues them for
 * RT_CONV_GEMM and RT_CONV_GEMM_BATCHED (into a workspace of
 * conv_gemm_workspace bytes, then summed), must give the reference
 * interpreter's output within 1e-5 of max(1, max |ref|).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/conv_gemm.h" /* runtime/ */
#include "interp.h"
#include "kdesc.h"
#include "schedule.h"
#include "tests/testlib.h"
#include "util.h"

/* C = op(A) op(B) + beta C, column-major, as cublasSgemm computes it (sums in double here). */
static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc)
{
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++) {
			double s = 0;
			for (int64_t l = 0; l < k; l++)
				s += (double)(ta ? a[l + i * lda] : a[i + l * lda]) * (double)(tb ? b[j + l * ldb] : b[l + j * ldb]);
			c[i + j * ldc] = (float)(s + (beta != 0 ? (double)beta * c[i + j * ldc] : 0));
		}
}

/* cuBLAS's rules for a product's sizes: lda >= rows of A as stored, and so on. */
static bool valid(const ConvGemm *g)
{
	return g->m > 0 && g->n > 0 && g->k > 0 && g->batch > 0 && g->lda >= (g->trans_a ? g->k : g->m) &&
	       g->ldb >= (g->trans_b ? g->n : g->k) && g->ldc >= g->m;
}

/* The kernel's outputs from args (inputs, then outputs), as cuda/kernels.c's run_conv_gemm issues the products. */
static void run(const int64_t *d, int algo, float *const *args)
{
	ConvGemm g = conv_gemm_plan(d, algo);
	int64_t wsb = conv_gemm_workspace(d, algo);
	float *ws = wsb ? xmalloc((size_t)wsb) : NULL, *out = g.into_ws ? ws : args[g.c];
	for (int64_t i = 0; i < g.batch; i++) /* a strided batch is a product per image */
		sgemm(g.trans_a, g.trans_b, g.m, g.n, g.k, args[g.a] + i * g.stride_a, g.lda, args[g.b] + i * g.stride_b,
		      g.ldb, g.accumulate && i ? 1 : 0, out + i * g.stride_c, g.ldc);
	if (ws) /* the workspace's matrices summed, as gpu_sum_images does */
		for (int64_t j = 0; j < g.stride_c; j++) {
			double s = 0;
			for (int64_t i = 0; i < g.batch; i++)
				s += ws[i * g.stride_c + j];
			args[g.c][j] = (float)s;
		}
	free(ws);
	int nin = (int)d[RT_D_NIN];
	if (d[RT_D_OP] == RT_OP_CONV2D && nin == 3) { /* the bias, added after the products: y [N, K, P] */
		int64_t p = RT_ARG_DIM(d, nin, 2) * RT_ARG_DIM(d, nin, 3), k = RT_ARG_DIM(d, nin, 1);
		for (int64_t e = 0; e < RT_ARG_DIM(d, nin, 0) * k * p; e++)
			args[nin][e] += args[2][e / p % k];
	}
}

int main(void)
{
	Arena a = {0};
	char src[1024];
	test_chain_source(src, sizeof src,
	                  "conv(1x1, 5 => 4) relu conv(1x1, 4 => 3, bias = false) relu conv(1x1, 3 => 3, stride = 2) "
	                  "conv(3x3, 3 => 2, pad = 1) flatten dense(12 => 4)",
	                  "3, 5, 4, 6", "4", NULL);
	Graph *g = test_training_graph(&a, "convgemm", src, false);
	if (!g) {
		test_check(false, "the network builds");
		return test_summary();
	}
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, false, 7);
	int applied[3] = {0}, refused[3] = {0};
	for (int i = 0; i < s->n; i++) {
		const Node *n = s->order[i];
		int dir = n->op == OP_CONV2D ? 0 : n->op == OP_CONV2D_BWD_DATA ? 1 : n->op == OP_CONV2D_BWD_FILTER ? 2 : -1;
		int64_t d[RT_DESC_LEN];
		if (dir >= 0)
			node_describe(n, d);
		bool one_by_one = dir >= 0 && n->attr.kh == 1 && n->attr.kw == 1 && n->attr.sh == 1 && n->attr.sw == 1;
		if (dir < 0 || !conv_gemm_applies(d)) {
			if (dir >= 0) {
				refused[dir]++;
				test_check(!one_by_one, "%s %s: not computed by a product", op_info[n->op].name, n->name);
			}
			interp_node(ip, n);
			continue;
		}
		applied[dir]++;
		test_check(one_by_one, "%s %s: a 1x1 convolution of stride 1", op_info[n->op].name, n->name);
		for (int algo = RT_CONV_GEMM; algo <= RT_CONV_GEMM_BATCHED; algo++) {
			ConvGemm plan = conv_gemm_plan(d, algo);
			if (conv_gemm_offers(d, algo))
				test_check(valid(&plan), "%s %s, algorithm %d: sizes cuBLAS accepts", op_info[n->op].name, n->name,
				           algo);
		}
		int nargs = n->nin + n->nout;
		float *in[RT_MAX_ARGS];
		for (int k = 0; k < n->nin; k++) {
			int64_t m = shape_elems(n->in[k]->shape);
			in[k] = xmalloc(sizeof(float) * (size_t)m);
			for (int64_t j = 0; j < m; j++)
				in[k][j] = (float)ip->buf[n->in[k]->id][j];
		}
		interp_node(ip, n);
		for (int algo = RT_CONV_GEMM; algo <= RT_CONV_GEMM_BATCHED; algo++) {
			if (!conv_gemm_offers(d, algo)) {
				test_check(algo == RT_CONV_GEMM_BATCHED && dir != 2, "%s %s: algorithm %d offered for the filter gradient only",
				           op_info[n->op].name, n->name, algo);
				continue;
			}
			float *args[RT_MAX_ARGS];
			for (int k = 0; k < nargs; k++) {
				const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
				int64_t m = shape_elems(t->shape);
				args[k] = xmalloc(sizeof(float) * (size_t)m);
				for (int64_t j = 0; j < m; j++)
					args[k][j] = k < n->nin ? in[k][j] : NAN;
			}
			run(d, algo, args);
			const Tensor *out = n->out[0];
			double worst = 0, scale = 1;
			for (int64_t j = 0; j < shape_elems(out->shape); j++)
				scale = fmax(scale, fabs(ip->buf[out->id][j]));
			for (int64_t j = 0; j < shape_elems(out->shape); j++) {
				double e = fabs(args[n->nin][j] - ip->buf[out->id][j]);
				worst = isnan(e) ? INFINITY : fmax(worst, e);
			}
			test_check(worst <= 1e-5 * scale, "%s %s, algorithm %d: max error %.2e (of %.3g)", op_info[n->op].name,
			           n->name, algo, worst, scale);
			for (int k = 0; k < nargs; k++)
				free(args[k]);
		}
		for (int k = 0; k < n->nin; k++)
			free(in[k]);
	}
	static const char *const dirs[3] = {"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"};
	static const int want[3] = {2, 1, 2}; /* the first convolution's input has no gradient */
	for (int k = 0; k < 3; k++)
		test_check(applied[k] == want[k] && refused[k] == 2, "%s: %d kernels computed by products (%d expected), %d not",
		           dirs[k], applied[k], want[k], refused[k]);
	interp_free(ip);
	arena_free(&a);
	return test_summary();
}
