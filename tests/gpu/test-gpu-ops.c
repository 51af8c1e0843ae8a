/*
 * test-gpu-ops.c - every kernel of the GPU runtime (libautotmrt-cuda.a)
 * against the reference interpreter, as tests/unit/test-runtime-ops.c
 * checks the CPU runtime.
 *
 * Each case is a small .net program turned into a training step. For
 * every node in schedule order the interpreter (float32 mode) executes
 * it, and the GPU runtime executes the same node - rt_kernel from the
 * node's description, rt_launch - on copies of the interpreter's inputs
 * to that node, in device memory; the cases run a second time with every
 * argument in pinned host memory (where the slow pool is), which kernels
 * read and write in place. Every output, and every input an op updates in
 * place, must agree: max |a - b| <= 1e-4 * max(1, max |ref|), with TF32
 * off (AUTOTM_TF32 unset). Every op of ops.def must be covered.
 *
 * Without a GPU (cudaGetDeviceCount fails or finds none) it says so and
 * exits 77: skipped.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/rt.h"
#include "autodiff.h"
#include "elaborate.h"
#include "interp.h"
#include "schedule.h"
#include "kdesc.h"
#include "util.h"
#include "tests/testlib.h"


typedef struct Case {
	const char *name;   /* what it covers */
	const char *input;  /* input declaration dims */
	const char *labels; /* number of classes (labels [batch, K]) */
	const char *layers; /* the network's chain */
	const char *opt;    /* optimizer, or NULL for sgd(lr = 0.1) */
} Case;

static const Case cases[] = {
	{"conv2d", "2, 3, 6, 6", "36", "conv(3x3, 3 => 4, stride = 2, pad = 1) flatten", NULL},
	{"conv2d groups, no bias", "2, 4, 5, 5", "54", "conv(3x3, 4 => 6, groups = 2, bias = false) flatten", NULL},
	{"conv2d asymmetric", "2, 3, 4, 5", "20", "conv((1, 3), 3 => 2, stride = (2, 1), pad = (0, 1)) flatten", NULL},
	{"dense", "3, 5", "4", "dense(5 => 4)", NULL},
	{"dense without bias", "3, 5", "4", "dense(5 => 4, bias = false)", NULL},
	{"maxpool", "2, 2, 5, 5", "18", "maxpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"maxpool with ties", "2, 2, 5, 5", "50", "relu maxpool(3x3, stride = 1, pad = 1) flatten", NULL},
	{"avgpool", "2, 2, 5, 5", "18", "avgpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"globalavgpool", "2, 3, 4, 4", "3", "globalavgpool flatten", NULL},
	{"batchnorm 4d", "3, 2, 3, 3", "18", "batchnorm flatten", NULL},
	{"batchnorm 2d", "4, 3", "3", "batchnorm(eps = 0.001)", NULL},
	{"relu", "3, 5", "5", "relu", NULL},
	{"sigmoid", "3, 5", "5", "sigmoid", NULL},
	{"tanh", "3, 5", "5", "tanh", NULL},
	{"softmax", "3, 5", "4", "softmax dense(5 => 4)", NULL},
	{"reshape", "2, 2, 2, 3", "12", "flatten", NULL},
	{"dropout", "3, 6", "6", "dropout(0.3)", NULL},
	{"add of 3", "3, 5", "5", "add { branch { dense(5 => 5) } branch { relu } branch { tanh } }", NULL},
	{"concat 2d", "3, 5", "8", "concat { branch { dense(5 => 3) } branch { tanh } }", NULL},
	{"concat 4d", "2, 2, 3, 3", "45",
	 "concat { branch { conv(1x1, 2 => 3) } branch { maxpool(3x3, stride = 1, pad = 1) } } flatten", NULL},
	{"softmax_crossentropy", "4, 6", "6", "tanh", NULL},
	{"sgd_momentum", "3, 4", "2", "dense(4 => 2)", "optimizer = sgd(lr = 0.05, momentum = 0.9)"},
	{"residual block", "2, 4, 6, 6", "5",
	 "residual(shortcut = chain { conv(1x1, 4 => 8, stride = 2, bias = false) batchnorm }) {"
	 "  conv(3x3, 4 => 8, stride = 2, pad = 1, bias = false) batchnorm relu"
	 "  conv(3x3, 8 => 8, pad = 1, bias = false) batchnorm"
	 "} relu globalavgpool flatten dense(8 => 5)", NULL},
	{"inception block", "2, 4, 5, 5", "5",
	 "concat {"
	 "  branch { conv(1x1, 4 => 2) relu }"
	 "  branch { conv(1x1, 4 => 2) relu conv(3x3, 2 => 3, pad = 1) relu }"
	 "  branch { conv(1x1, 4 => 1) relu conv((1, 3), 1 => 2, pad = (0, 1)) conv((3, 1), 2 => 2, pad = (1, 0)) }"
	 "  branch { avgpool(3x3, stride = 1, pad = 1) conv(1x1, 4 => 2) }"
	 "} globalavgpool flatten dense(9 => 5)", NULL},
	{"larger conv", "8, 16, 28, 28", "10",
	 "conv(3x3, 16 => 32, stride = 2, pad = 1) batchnorm relu conv(3x3, 32 => 32, pad = 1, groups = 4) "
	 "maxpool(3x3, stride = 2) globalavgpool flatten dropout(0.2) dense(32 => 10)",
	 "optimizer = sgd(lr = 0.01, momentum = 0.5)"},
};

static void check_cuda(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "test-gpu-ops: %s: %s\n", what, cudaGetErrorString(err));
		exit(1);
	}
}

static Graph *build(Arena *a, const Case *c)
{
	char src[4096];
	return test_training_graph(a, c->name, test_chain_source(src, sizeof src, c->layers, c->input, c->labels, c->opt),
	                           true);
}


/* The worst error of one op over every case. */
typedef struct OpStat {
	int checked;  /* nodes checked */
	int failed;   /* of which wrong */
	double worst; /* max of error / tolerance scale */
} OpStat;

static OpStat stats[NUM_OPS];
static int nchecked, nfailed;

/* An argument's memory: device memory, or pinned host memory (the slow pool's kind). */
static float *gpu_alloc(int64_t n, bool host)
{
	void *p;
	size_t bytes = sizeof(float) * (size_t)(n ? n : 1);
	check_cuda(host ? cudaHostAlloc(&p, bytes, cudaHostAllocPortable) : cudaMalloc(&p, bytes), "allocating");
	return p;
}

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

/* Check one node in isolation: interpreter and GPU runtime from the same inputs. */
static void check_node(RtCtx *ctx, Interp *ip, const Node *n, int32_t id, const char *cname, bool host)
{
	int nargs = n->nin + n->nout;
	void *args[RT_MAX_ARGS];
	float *got[RT_MAX_ARGS];
	for (int k = 0; k < nargs; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int64_t m = shape_elems(t->shape);
		got[k] = xmalloc(sizeof(float) * (size_t)m);
		for (int64_t i = 0; i < m; i++) /* inputs; outputs NaN, so that an element not written shows */
			got[k][i] = k < n->nin ? (float)ip->buf[t->id][i] : NAN;
		args[k] = gpu_alloc(m, host);
		check_cuda(cudaMemcpy(args[k], got[k], sizeof(float) * (size_t)m, cudaMemcpyDefault), "copying in");
	}
	interp_node(ip, n);

	int64_t desc[RT_DESC_LEN];
	node_describe(n, desc);
	rt_kernel(ctx, id, desc);
	rt_launch(ctx, id, args);
	check_cuda(cudaDeviceSynchronize(), "running the kernel");

	double worst_err = 0, worst_got = 0, worst_ref = 0, worst_scale = 1;
	const char *worst_what = "";
	int64_t worst_i = 0;
	for (int k = 0; k < nargs; k++) {
		bool is_out = k >= n->nin;
		const Tensor *t = is_out ? n->out[k - n->nin] : n->in[k];
		int64_t m = shape_elems(t->shape);
		check_cuda(cudaMemcpy(got[k], args[k], sizeof(float) * (size_t)m, cudaMemcpyDefault), "copying out");
		check_cuda(host ? cudaFreeHost(args[k]) : cudaFree(args[k]), "freeing");
		if (!is_out && !(op_info[n->op].inplace >> k & 1))
			continue;
		int64_t i;
		double scale, e = compare(got[k], ip->buf[t->id], m, &i, &scale);
		if (e >= worst_err) {
			worst_err = e;
			worst_what = t->name;
			worst_i = i;
			worst_got = got[k][i];
			worst_ref = ip->buf[t->id][i];
			worst_scale = scale;
		}
	}
	bool ok = worst_err <= 1e-4;
	OpStat *st = &stats[n->op];
	st->checked++;
	st->failed += !ok;
	st->worst = fmax(st->worst, worst_err);
	nchecked++;
	nfailed += !ok;
	printf("%s %d - %-26s %-22s %-6s node %-28s max error %.2e (of %.3g)\n", ok ? "ok" : "not ok", nchecked,
	       op_info[n->op].name, cname, host ? "host" : "device", n->name, worst_err * worst_scale, worst_scale);
	if (!ok)
		printf("#   worst element: %s[%lld] = %.9g, interpreter %.9g\n", worst_what, (long long)worst_i, worst_got,
		       worst_ref);
	for (int k = 0; k < nargs; k++)
		free(got[k]);
}

static int run_case(RtCtx *ctx, const Case *c, int32_t *next_id, bool host)
{
	Arena a = {0};
	Graph *g = build(&a, c);
	if (!g) {
		arena_free(&a);
		return 1;
	}
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, false, 42);
	for (int i = 0; i < s->n; i++)
		check_node(ctx, ip, s->order[i], (*next_id)++, c->name, host);
	interp_free(ip);
	arena_free(&a);
	return 0;
}

int main(void)
{
	int ndev = 0;
	cudaError_t err = cudaGetDeviceCount(&ndev);
	if (err != cudaSuccess || ndev == 0) {
		printf("skipped: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
		return 77;
	}
	unsetenv("AUTOTM_TF32");
	RtProgram empty = {.model = "gpu-ops"};
	RtCtx *ctx = rt_begin(0, NULL, &empty);
	int32_t next_id = 0;
	int build_failures = 0;
	for (int host = 0; host < 2; host++)
		for (size_t i = 0; i < countof(cases); i++)
			build_failures += run_case(ctx, &cases[i], &next_id, host);
	if (rt_end(ctx) != 0) {
		printf("not ok - rt_end of the op checks\n");
		nfailed++;
	}
	printf("# per op: nodes checked, worst error relative to max(1, max |ref|)\n");
	int missing = 0;
	for (int op = 0; op < NUM_OPS; op++) {
		printf("#   %-26s %3d  %.2e%s\n", op_info[op].name, stats[op].checked, stats[op].worst,
		       stats[op].checked ? (stats[op].failed ? "  FAILED" : "") : "  NOT COVERED");
		missing += stats[op].checked == 0;
	}
	int failed = nfailed + build_failures + missing;
	printf("%d passed, %d failed\n", nchecked - nfailed, failed);
	return failed ? 1 : 0;
}
