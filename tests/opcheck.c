/*
 * opcheck.c - a runtime's kernels against the reference interpreter, node
 * by node (opcheck.h).
 *
 * The runtime is whichever the test links with: libautotmrt.a or
 * libautotmrt-cuda.a. Only where the arguments live differs, and the
 * caller says it with an ArgMemory.
 */
#include "opcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"           /* base/ */
#include "cuda/conv_gemm.h" /* runtime/ */
#include "rt_internal.h"    /* runtime/: rt_exchange_drain */
#include "kdesc.h"
#include "schedule.h"
#include "testlib.h"
#include "util.h"

/* The worst error of one op over every node checked. */
typedef struct OpStat {
	int checked;  /* nodes checked */
	int failed;   /* of which wrong */
	double worst; /* max of error / tolerance scale */
} OpStat;

/* Per precision of the graphs checked (testlib's test_precision), per op. */
static OpStat stats[2][NUM_OPS];
/* Nodes with a fused activation (compiler/front/fuse.h) checked, and of those wrong. */
static int fused_checked, fused_failed;

int opcheck_blocked[NUM_OPS];

/*
 * t's n values in the order its runtime memory holds them: row-major, or
 * channel-blocked (Tensor.blocked: nChw16c, autotm/rt.h) from row-major
 * (back: the other way), into dst.
 */
static void relayout(float *dst, const float *src, const Tensor *t, int64_t n, bool back)
{
	if (!t->blocked) {
		memcpy(dst, src, sizeof(float) * (size_t)n);
		return;
	}
	int64_t nb = t->shape.d[0], c = t->shape.d[1], hw = t->shape.d[2] * t->shape.d[3];
	for (int64_t b = 0; b < nb; b++)
		for (int64_t ch = 0; ch < c; ch++)
			for (int64_t p = 0; p < hw; p++) {
				int64_t plain = (b * c + ch) * hw + p, blocked = ((b * (c / 16) + ch / 16) * hw + p) * 16 + ch % 16;
				if (back)
					dst[plain] = src[blocked];
				else
					dst[blocked] = src[plain];
			}
}

/* The bytes of n elements of tensor t's type in a runtime's memory (ids and floats are 4 bytes). */
static size_t arg_bytes(const Tensor *t, int64_t n)
{
	return (size_t)(n ? n : 1) * (t->dtype == DT_BF16 ? 2 : 4);
}

/* n values of t's type from host (floats, or int32 ids in their bits) into dst, in a runtime's memory. */
static void put_arg(const ArgMemory *mem, void *dst, const float *host, const Tensor *t, int64_t n)
{
	float *in = xmalloc(sizeof(float) * (size_t)(n ? n : 1));
	relayout(in, host, t, n, false);
	if (t->dtype != DT_BF16) {
		mem->copy(dst, in, sizeof(float) * (size_t)n);
		free(in);
		return;
	}
	uint16_t *h = xmalloc(arg_bytes(t, n));
	for (int64_t i = 0; i < n; i++)
		h[i] = bf16_from_f32(in[i]);
	mem->copy(dst, h, arg_bytes(t, n));
	free(h);
	free(in);
}

/* The other way: host as floats. */
static void get_arg(const ArgMemory *mem, float *host, const void *src, const Tensor *t, int64_t n)
{
	float *out = xmalloc(sizeof(float) * (size_t)(n ? n : 1));
	if (t->dtype != DT_BF16)
		mem->copy(out, src, sizeof(float) * (size_t)n);
	else {
		uint16_t *h = xmalloc(arg_bytes(t, n));
		mem->copy(h, src, arg_bytes(t, n));
		for (int64_t i = 0; i < n; i++)
			out[i] = bf16_to_f32(h[i]);
		free(h);
	}
	relayout(host, out, t, n, true);
	free(out);
}

static void *host_alloc(size_t bytes)
{
	return xmalloc(bytes);
}

static void host_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}

static void host_wait(void)
{
}

const ArgMemory opcheck_host_memory = {NULL, host_alloc, host_copy, host_wait, free, 0};

/* Compare got with ref; returns the error relative to max(1, max |ref|), and the worst element. */
static double compare(const float *got, const double *ref, int64_t n, int64_t *worst, double *scale)
{
	double mx = 0, err = 0;
	*worst = 0;
	for (int64_t i = 0; i < n; i++)
		mx = fmax(mx, fabs(ref[i]));
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)got[i] - ref[i]);
		if (isnan(got[i]) || isnan(e))
			e = INFINITY;
		if (e > err) {
			err = e;
			*worst = i;
		}
	}
	*scale = fmax(1.0, mx);
	return err / *scale;
}

int opcheck_own_algo[3];

/*
 * Run kernel `id` (described by desc) on arguments holding host[k] (the
 * inputs; the outputs start as NaN, so that an element not written
 * shows), in memory from mem; with `over` >= 0 its first output is
 * written over input `over` (one buffer for both, as memplan places an
 * output over its dying input). Afterwards host[k] holds every argument
 * as the kernel left it (the output written over the input from that
 * buffer; the input itself is then not compared).
 */
static void run_kernel(RtCtx *ctx, const Node *n, int32_t id, int64_t *desc, const ArgMemory *mem, float **host,
                       int over)
{
	int nargs = n->nin + n->nout;
	void *args[RT_MAX_ARGS + 1];
	for (int k = 0; k < nargs; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int64_t m = shape_elems(t->shape);
		if (k >= n->nin)
			for (int64_t i = 0; i < m; i++)
				host[k][i] = NAN;
		if (over >= 0 && k == n->nin) {
			args[k] = args[over];
			continue;
		}
		args[k] = mem->alloc(arg_bytes(t, m));
		put_arg(mem, args[k], host[k], t, m);
	}
	void *ws = NULL;
	enum { WORKSPACE = 64 << 20 }; /* more than any case's convolution needs with these algorithms */
	if (mem->placed_algo && (n->op == OP_CONV2D || n->op == OP_CONV2D_BWD_DATA || n->op == OP_CONV2D_BWD_FILTER)) {
		int algo = conv_gemm_offers(desc, mem->placed_algo) ? mem->placed_algo : 1;
		if (algo != 1 && over < 0)
			opcheck_own_algo[n->op == OP_CONV2D ? 0 : n->op == OP_CONV2D_BWD_DATA ? 1 : 2]++;
		desc[RT_D_ALGO] = (1 + algo) | RT_ALGO_WS_ARG;
		args[nargs] = ws = mem->alloc(WORKSPACE);
	}
	if (over < 0)
		rt_kernel(ctx, id, desc);
	rt_launch(ctx, id, args);
	if (n->op == OP_ALLREDUCE) /* its average may wait in a bucket (GPU: cuda/nccl.c) until the step ends */
		rt_exchange_drain();
	mem->wait();
	if (ws)
		mem->release(ws);
	for (int k = 0; k < nargs; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		get_arg(mem, host[k], args[k], t, shape_elems(t->shape));
		if (!(over >= 0 && k == over))
			mem->release(args[k]);
	}
}

/* The worst error of the arguments n writes (outputs, inputs it updates; not an input written over). */
typedef struct Worst {
	double err, got, ref, scale;
	const char *what;
	int64_t i;
} Worst;

static Worst compare_args(const Interp *ip, const Node *n, float *const *host, int over)
{
	Worst w = {0, 0, 0, 1, "", 0};
	for (int k = 0; k < n->nin + n->nout; k++) {
		bool is_out = k >= n->nin;
		const Tensor *t = is_out ? n->out[k - n->nin] : n->in[k];
		if ((!is_out && !(op_info[n->op].inplace >> k & 1)) || k == over)
			continue;
		int64_t i;
		double scale, e = compare(host[k], ip->buf[t->id], shape_elems(t->shape), &i, &scale);
		if (e >= w.err)
			w = (Worst){e, host[k][i], ip->buf[t->id][i], scale, t->name, i};
	}
	return w;
}

/*
 * Node n against the interpreter: out of place, and where ops.def lets its
 * first output take an input's memory, again in place (same kernel).
 */
void opcheck_node(RtCtx *ctx, Interp *ip, const Node *n, int32_t id, const char *cname, const ArgMemory *mem)
{
	int nargs = n->nin + n->nout, over = node_reuse_input(n);
	float *inputs[RT_MAX_ARGS], *host[RT_MAX_ARGS]; /* the inputs as given; each argument after a run */
	for (int k = 0; k < nargs; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int64_t m = shape_elems(t->shape);
		size_t bytes = sizeof(float) * (size_t)(m ? m : 1);
		inputs[k] = xmalloc(bytes);
		host[k] = xmalloc(bytes);
		for (int64_t i = 0; i < m && k < n->nin; i++) { /* inputs (ids as int32) */
			inputs[k][i] = (float)ip->buf[t->id][i];
			if (t->dtype == DT_I32) {
				int32_t v = (int32_t)ip->buf[t->id][i];
				memcpy(&inputs[k][i], &v, sizeof v);
			}
		}
	}
	interp_node(ip, n);

	int64_t desc[RT_DESC_LEN];
	node_describe(n, desc);
	char where[16] = "";
	if (mem->where)
		snprintf(where, sizeof where, "%-6s ", mem->where);
	bool bf16 = desc[RT_D_BF16] != 0;
	opcheck_blocked[n->op] += desc[RT_D_BLOCKED] != 0;
	/* a bf16 output may round the other way: one unit in its last place (2^-7 of it) */
	double tol = bf16 ? 1e-2 : 1e-4;
	OpStat *st = &stats[bf16][n->op];
	for (int run = 0; run < (over >= 0 ? 2 : 1); run++) {
		for (int k = 0; k < n->nin; k++)
			memcpy(host[k], inputs[k], sizeof(float) * (size_t)shape_elems(n->in[k]->shape));
		run_kernel(ctx, n, id, desc, mem, host, run ? over : -1);
		Worst w = compare_args(ip, n, host, run ? over : -1);
		bool ok = w.err <= tol;
		st->checked++;
		st->failed += !ok;
		st->worst = fmax(st->worst, w.err);
		char lb[48];
		test_check(ok, "%-26s %-22s %snode %-28s max error %.2e (of %.3g)%s%s", node_op_label(n, lb, sizeof lb),
		           cname, where, n->name, w.err * w.scale, w.scale, run ? ", in place" : "", bf16 ? ", bf16" : "");
		fused_checked += n->attr.post_act != ACT_NONE;
		fused_failed += n->attr.post_act != ACT_NONE && !ok;
		if (!ok)
			printf("#   worst element: %s[%lld] = %.9g, interpreter %.9g\n", w.what, (long long)w.i, w.got, w.ref);
	}
	for (int k = 0; k < nargs; k++) {
		free(inputs[k]);
		free(host[k]);
	}
}

bool opcheck_case(RtCtx *ctx, const OpCase *c, int32_t *next_id, const ArgMemory *mem)
{
	Arena a = {0};
	Graph *g = opcase_graph(&a, c);
	if (!g) {
		test_check(false, "%s: the case does not build", c->name);
		arena_free(&a);
		return false;
	}
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, false, 42);
	if (g->eval) /* running statistics and batchnorm parameters away from their initial 0 and 1 */
		for (int i = 0; i < g->nodes.n; i++) {
			const Node *n = g->nodes.v[i];
			for (int k = 1; n->op == OP_BATCHNORM_EVAL && k < 5; k++)
				for (int64_t j = 0; j < shape_elems(n->in[k]->shape); j++)
					ip->buf[n->in[k]->id][j] = (float)(k == 4 ? 0.5 + 0.13 * (double)((j * 5 + k) % 11)
					                                          : 0.4 * sin(1.7 * (double)(j + 3 * k)) + (k == 1));
		}
	for (int i = 0; i < s->n; i++)
		opcheck_node(ctx, ip, s->order[i], (*next_id)++, c->name, mem);
	interp_free(ip);
	arena_free(&a);
	return true;
}

int opcheck_print_ops(bool all, bool (*expected)(int op))
{
	int missing = 0;
	for (int op = 0; op < NUM_OPS; op++) {
		const OpStat *st = &stats[0][op], *st16 = &stats[1][op];
		bool covered = st->checked || st16->checked;
		if (!covered && expected && !expected(op)) {
			if (all)
				printf("#   %-26s    -  (no kernel in this runtime)\n", op_info[op].name);
			continue;
		}
		missing += !covered;
		if (!covered && !all)
			continue;
		printf("#   %-26s %4d  %.2e", op_info[op].name, st->checked, st->worst);
		if (st16->checked)
			printf("   bf16 %4d  %.2e", st16->checked, st16->worst);
		printf("%s\n", !covered ? "  NOT COVERED" : st->failed || st16->failed ? "  FAILED" : "");
	}
	if (fused_checked)
		printf("#   of which with a fused activation (conv2d+relu, ...): %d, %d wrong\n", fused_checked, fused_failed);
	return missing;
}
