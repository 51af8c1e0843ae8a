/*
 * test-runtime-ops.c - every kernel of the CPU runtime against the
 * reference interpreter, and a few training runs through the runtime's
 * ABI against `autotmc interpret`'s losses.
 *
 * Part 1, op by op: every case of the shared op table (tests/opcases.c),
 * a small .net program turned into a training step, checked node by node
 * against the interpreter (tests/opcheck.c): for every node in schedule
 * order the interpreter (float32 mode) executes it, and the runtime
 * executes the same node on float copies of the interpreter's inputs to
 * that node, so that every op is checked in isolation. Every output, and
 * every input an op updates in place, must agree:
 * max |a - b| <= 1e-4 * max(1, max |ref|). Every op of ops.def must be
 * covered. The cases with convolutions run twice: with oneDNN's blocked
 * layouts (and reorders), and with AUTOTM_CONV_LAYOUT=plain. Then every
 * case runs again in bf16 (autocast's casts and bf16 kernels), each node
 * with a bf16 argument within 1e-2 (opcheck.h), and then again fused
 * (compiler/front/fuse.h) in bf16 and in fp32, and the cases with
 * convolutions with the CPU's channel-blocked layouts (layout.h).
 *
 * Part 2, whole programs: a naive memory plan (weights and optimizer
 * state in the slow pool, everything else in the fast pool), then what a
 * generated program does - rt_begin with a command line, rt_kernel,
 * rt_tensor, rt_data, rt_launch in schedule order, rt_step_end, rt_end -
 * and the losses of the results record, and the saved weights, compared
 * with the interpreter's after the same steps.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autotm/rt.h"
#include "autotm/tensorio.h"
#include "autodiff.h"
#include "elaborate.h"
#include "interp.h"
#include "schedule.h"
#include "kdesc.h"
#include "util.h"
#include "tests/opcases.h"
#include "tests/opcheck.h"
#include "tests/testlib.h"
#include "weights.h"

/* Cases trained end to end through the ABI (part 2). */
static const OpCase programs[] = {
	{"mlp with dropout and momentum", OPCASE_NETWORK, "4, 8", "3",
	 "dense(8 => 16, relu) dropout(0.25) dense(16 => 16, tanh) dense(16 => 3)",
	 "optimizer = sgd(lr = 0.1, momentum = 0.9)"},
	{"mlp with adamw, warmup and cosine, clipped", OPCASE_NETWORK, "4, 8", "3",
	 "dense(8 => 16, relu) dense(16 => 16, tanh) dense(16 => 3)",
	 "optimizer = adamw(lr = 0.01, clip = 0.5, schedule = cosine(steps = 3, warmup = 1, floor = 0.001))"},
	{"conv net", OPCASE_NETWORK, "2, 3, 8, 8", "4",
	 "conv(3x3, 3 => 4, pad = 1) batchnorm relu maxpool(2x2) "
	 "conv(3x3, 4 => 6, pad = 1, bias = false) batchnorm relu avgpool(2x2) flatten dense(24 => 4)", NULL},
	{"inception block", OPCASE_NETWORK, "2, 4, 5, 5", "5",
	 "concat {"
	 "  branch { conv(1x1, 4 => 2) relu }"
	 "  branch { conv(1x1, 4 => 2) sigmoid conv(3x3, 2 => 3, pad = 1) relu }"
	 "  branch { avgpool(3x3, stride = 1, pad = 1) conv(1x1, 4 => 2) }"
	 "} globalavgpool flatten dense(7 => 5) softmax", NULL},
};

/* ---- part 2: whole programs through the ABI ---------------------------------- */

static int32_t rt_kind(TensorKind k)
{
	switch (k) {
	case TENSOR_INPUT: return RT_TENSOR_INPUT;
	case TENSOR_LABELS: return RT_TENSOR_LABELS;
	case TENSOR_WEIGHT: return RT_TENSOR_WEIGHT;
	case TENSOR_STATE: return RT_TENSOR_STATE;
	default: return -1;
	}
}

/* Read a whole file (the results record). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = xmalloc((size_t)n + 1);
	size_t got = fread(s, 1, (size_t)n, f);
	s[got] = '\0';
	fclose(f);
	return s;
}

/*
 * Train c for `iters` steps through the ABI, weights and state in the slow
 * pool if slow_weights; the losses go to losses[]. Returns failures.
 */
static int run_program(const OpCase *c, const char *tmpdir, int iters, bool slow_weights, double *losses_out)
{
	Arena a = {0};
	Graph *g = opcase_graph(&a, c);
	if (!g)
		return 1;
	Schedule *s = schedule_graph(g, &a);
	const uint64_t seed = 7;

	/* A naive plan: every tensor its own place; weights and state in the slow pool. */
	int nt = g->tensors.n;
	int32_t *pool = xcalloc((size_t)nt, sizeof *pool);
	int64_t *off = xcalloc((size_t)nt, sizeof *off), size[2] = {0, 0};
	int ntensors = 0;
	for (int i = 0; i < nt; i++) {
		const Tensor *t = g->tensors.v[i];
		pool[i] = slow_weights && (t->kind == TENSOR_WEIGHT || t->kind == TENSOR_STATE) ? RT_POOL_SLOW
		                                                                                : RT_POOL_FAST;
		off[i] = size[pool[i]];
		size[pool[i]] += (t->bytes + 63) / 64 * 64;
		ntensors += !t->producer;
	}
	RtProgram prog = {
		.model = "t", .fast_bytes = size[RT_POOL_FAST], .slow_bytes = size[RT_POOL_SLOW],
		.fast_limit = 0, .nkernels = s->n, .ntensors = ntensors, .predicted_seconds = 0.001,
		.record = "{\"optimizer\": \"test\", \"dram_limit\": 123}",
	};
	char results[600], weights[600], iters_s[16], seed_s[16];
	snprintf(results, sizeof results, "%s/results.json", tmpdir);
	snprintf(weights, sizeof weights, "%s/weights.safetensors", tmpdir);
	snprintf(iters_s, sizeof iters_s, "%d", iters);
	snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)seed);
	char *argv[] = {"test-program", "--iters", iters_s, "--seed", seed_s, "--results", results,
	                "--save-weights", weights, "--slow-dir", (char *)tmpdir, "--threads", "2", "--quiet", NULL};
	int argc = (int)(sizeof argv / sizeof argv[0]) - 1;

	/* what a generated main does */
	RtCtx *ctx = rt_begin(argc, argv, &prog);
	for (int i = 0; i < s->n; i++) {
		int64_t desc[RT_DESC_LEN];
		node_describe(s->order[i], desc);
		rt_kernel(ctx, i, desc);
	}
	for (int i = 0; i < nt; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->producer)
			continue;
		InitSpec spec = init_spec(t, seed);
		RtTensor rt = {.name = t->name, .kind = rt_kind(t->kind), .pool = pool[i], .offset = off[i],
		               .ndim = t->shape.ndim, .init = spec.kind, .lo = spec.lo, .hi = spec.hi, .value = spec.value};
		for (int k = 0; k < t->shape.ndim; k++)
			rt.shape[k] = t->shape.d[k];
		rt_tensor(ctx, &rt);
	}
	char *base[2] = {rt_pool_base(ctx, RT_POOL_FAST), rt_pool_base(ctx, RT_POOL_SLOW)};
#define ADDR(t) ((void *)(base[pool[(t)->id]] + off[(t)->id]))
	for (int64_t it = 0; it < rt_iters(ctx); it++) {
		rt_step_begin(ctx);
		rt_data(ctx, RT_DATA_INPUT, ADDR(g->input));
		rt_data(ctx, RT_DATA_LABELS, ADDR(g->labels));
		for (int i = 0; i < s->n; i++) {
			const Node *n = s->order[i];
			void *args[RT_MAX_ARGS];
			for (int k = 0; k < n->nin; k++)
				args[k] = ADDR(n->in[k]);
			for (int k = 0; k < n->nout; k++)
				args[n->nin + k] = ADDR(n->out[k]);
			rt_launch(ctx, i, args);
		}
		rt_step_end(ctx, ADDR(g->loss));
	}
#undef ADDR
	int status = rt_end(ctx);

	/* the reference */
	Interp *ip = interp_new(g, s, false, seed);
	double ref[16];
	for (int i = 0; i < iters; i++)
		ref[i] = interp_step(ip);

	int bad = status != 0;
	if (status)
		printf("#   rt_end returned %d\n", status);
	char *text = slurp(results);
	cJSON *r = text ? cJSON_Parse(text) : NULL;
	const cJSON *losses = cJSON_GetObjectItemCaseSensitive(r, "losses");
	if (!r || cJSON_GetArraySize(losses) != iters) {
		printf("#   results record %s missing or without %d losses\n", results, iters);
		bad++;
	}
	for (int i = 0; r && i < iters && i < cJSON_GetArraySize(losses); i++) {
		double l = cJSON_GetArrayItem(losses, i)->valuedouble;
		losses_out[i] = l;
		bool ok = fabs(l - ref[i]) <= 1e-4 * fmax(1.0, fabs(ref[i]));
		printf("#   step %d: loss %.9g, interpreter %.9g%s\n", i + 1, l, ref[i], ok ? "" : "  <- differs");
		bad += !ok;
	}
	const char *fields[] = {"actual_runtime", "predicted_runtime", "dram_alloc_size", "pmem_alloc_size",
	                        "dram_limit", "num_kernels", "iterations", "step_times", "threads", "optimizer"};
	for (size_t i = 0; r && i < countof(fields); i++)
		if (!cJSON_GetObjectItemCaseSensitive(r, fields[i])) {
			printf("#   results record has no field '%s'\n", fields[i]);
			bad++;
		}
	const cJSON *nk = cJSON_GetObjectItemCaseSensitive(r, "num_kernels");
	const cJSON *pm = cJSON_GetObjectItemCaseSensitive(r, "pmem_alloc_size");
	const cJSON *dl = cJSON_GetObjectItemCaseSensitive(r, "dram_limit");
	if (r && (!cJSON_IsNumber(nk) || nk->valuedouble != s->n || !cJSON_IsNumber(pm) ||
	          pm->valuedouble != (double)size[RT_POOL_SLOW] || !cJSON_IsNumber(dl) || dl->valuedouble != 0)) {
		printf("#   results record: wrong num_kernels, pmem_alloc_size or dram_limit\n");
		bad++;
	}
	cJSON_Delete(r);
	free(text);

	/* the saved weights are the interpreter's after the same steps */
	TioFile *f;
	char err[512];
	if (tio_safetensors_open(weights, &f, err, sizeof err)) {
		printf("#   %s\n", err);
		bad++;
	} else {
		int nw = 0;
		for (int i = 0; i < nt; i++) {
			const Tensor *t = g->tensors.v[i];
			if (t->kind != TENSOR_WEIGHT)
				continue;
			nw++;
			const TioTensor *w = tio_find(f, t->name);
			int64_t n = shape_elems(t->shape);
			double *v = xmalloc(sizeof *v * (size_t)n);
			if (!w || w->nelems != n) {
				printf("#   saved weights: '%s' missing or of the wrong size\n", t->name);
				bad++;
				free(v);
				continue;
			}
			tio_to_f64(w, v);
			double mx = 1, e = 0;
			for (int64_t k = 0; k < n; k++) {
				mx = fmax(mx, fabs(ip->buf[t->id][k]));
				e = fmax(e, fabs(v[k] - ip->buf[t->id][k]));
			}
			if (e > 1e-4 * mx) {
				printf("#   saved weight '%s' differs from the interpreter's by %g\n", t->name, e);
				bad++;
			}
			free(v);
		}
		if (nw != f->n) {
			printf("#   saved %d tensors, the model has %d weights\n", f->n, nw);
			bad++;
		}
		tio_close(f);
	}
	unlink(results);
	unlink(weights);
	interp_free(ip);
	free(pool);
	free(off);
	arena_free(&a);
	return bad;
}

/*
 * Part 3 (only with --model FILE [-D NAME=VALUE]...): every node of a whole
 * model's training step, fed the interpreter's inputs, against the
 * interpreter. This checks each kernel on the tensors a real network
 * produces (their sizes, value distributions, ties and zeros), which the
 * comparison of whole training runs cannot do for deep batchnorm networks:
 * at batch 2 their training is chaotic, so different float32 summation
 * orders drift apart within a few steps (docs/runtime.md).
 */
static int run_model(const char *path, const Define *defs, int ndefs)
{
	Arena a = {0};
	static const char *dirs[1];
	dirs[0] = getenv("AUTOTM_STDLIB") ? getenv("AUTOTM_STDLIB") : "stdlib";
	ElabOptions eo = {.dirs = dirs, .ndirs = 1, .defines = defs, .ndefines = ndefs, .precision = test_precision};
	Graph *g = elaborate(path, &eo, &a);
	if (!g) {
		arena_free(&a);
		return 1;
	}
	autodiff(g, NULL);
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, false, 1);
	RtProgram empty = {.model = g->model};
	RtCtx *ctx = rt_begin(0, NULL, &empty);
	for (int i = 0; i < s->n; i++)
		opcheck_node(ctx, ip, s->order[i], i, path, &opcheck_host_memory);
	if (rt_end(ctx) != 0)
		test_check(false, "rt_end of the model's checks");
	interp_free(ip);
	printf("# %s: %d nodes checked, worst error per op relative to max(1, max |ref|):\n", path, s->n);
	arena_free(&a);
	opcheck_print_ops(false, NULL);
	return test_summary();
}

/*
 * The cases with convolutions once more with the CPU's channel-blocked
 * layouts (compiler/front/layout.h), unfused and fused, in fp32 and bf16:
 * each blocked argument passed in that layout and read back from it. Every
 * op that takes a blocked argument must have had one.
 */
static void check_blocked(RtCtx *ctx, int32_t *next_id)
{
	static const Op takes[] = {
		OP_CONV2D, OP_CONV2D_BWD_DATA, OP_CONV2D_BWD_FILTER, OP_BATCHNORM, OP_BATCHNORM_BWD, OP_MAXPOOL,
		OP_MAXPOOL_BWD, OP_AVGPOOL, OP_AVGPOOL_BWD, OP_GLOBALAVGPOOL, OP_GLOBALAVGPOOL_BWD, OP_CONCAT, OP_SLICE,
		OP_RELU, OP_RELU_BWD, OP_TANH, OP_TANH_BWD, OP_ADD, OP_BIAS_GRAD, OP_ACT_BIAS_GRAD, OP_CAST, OP_BATCHNORM_EVAL,
	};
	test_blocked = true;
	for (int fused = 0; fused < 2; fused++)
		for (int prec = 0; prec < 2; prec++) {
			test_fuse = fused;
			test_precision = prec ? PREC_BF16 : PREC_FP32;
			for (int i = 0; i < nop_cases; i++)
				if (strstr(op_cases[i].layers, "conv("))
					opcheck_case(ctx, &op_cases[i], next_id, &opcheck_host_memory);
		}
	test_blocked = test_fuse = false;
	test_precision = PREC_FP32;
	for (size_t i = 0; i < countof(takes); i++)
		test_check(opcheck_blocked[takes[i]] > 0, "%s checked with channel-blocked arguments (%d nodes)",
		           op_info[takes[i]].name, opcheck_blocked[takes[i]]);
}

int main(int argc, char **argv)
{
	/*
	 * rt_begin with a command line starts the process again to set
	 * libgomp's wait policy when OMP_WAIT_POLICY is unset; here that would
	 * run this test from the start a second time, printing part 1 twice.
	 */
	setenv("OMP_WAIT_POLICY", "passive", 0);
	if (argc >= 3 && strcmp(argv[1], "--model") == 0) {
		Define defs[16];
		int nd = 0;
		for (int i = 3; i + 1 < argc && nd < 16; i += 2) {
			if (strcmp(argv[i], "--precision") == 0 && strcmp(argv[i + 1], "bf16") == 0) {
				test_precision = PREC_BF16;
				continue;
			}
			char *eq = strchr(argv[i + 1], '=');
			if (strcmp(argv[i], "-D") != 0 || !eq) {
				fprintf(stderr, "usage: test-runtime-ops [--model FILE [-D NAME=VALUE]... [--precision bf16]]\n");
				return 2;
			}
			*eq = '\0';
			defs[nd++] = (Define){argv[i + 1], eq + 1};
		}
		return run_model(argv[2], defs, nd);
	}
	/* part 1: every op against the interpreter */
	RtProgram empty = {.model = "ops"};
	RtCtx *ctx = rt_begin(0, NULL, &empty);
	int32_t next_id = 0;
	for (int i = 0; i < nop_cases; i++)
		opcheck_case(ctx, &op_cases[i], &next_id, &opcheck_host_memory);
	/* convolutions again with plain layouts (no reorders) */
	setenv("AUTOTM_CONV_LAYOUT", "plain", 1);
	for (int i = 0; i < nop_cases; i++)
		if (strstr(op_cases[i].layers, "conv("))
			opcheck_case(ctx, &op_cases[i], &next_id, &opcheck_host_memory);
	unsetenv("AUTOTM_CONV_LAYOUT");
	/* every case again as a bf16 graph: its bf16 kernels (and the rest as before) */
	test_precision = PREC_BF16;
	for (int i = 0; i < nop_cases; i++)
		opcheck_case(ctx, &op_cases[i], &next_id, &opcheck_host_memory);
	/* and fused (compiler/front/fuse.h), in both precisions: the kernels with an activation folded in; the
	   fused output layer in blocks of 7 rows (the last one shorter), as a large vocabulary's would be */
	setenv("AUTOTM_HEAD_BLOCK_ROWS", "7", 1);
	test_fuse = true;
	for (int i = 0; i < nop_cases; i++)
		opcheck_case(ctx, &op_cases[i], &next_id, &opcheck_host_memory);
	test_precision = PREC_FP32;
	for (int i = 0; i < nop_cases; i++)
		opcheck_case(ctx, &op_cases[i], &next_id, &opcheck_host_memory);
	test_fuse = false;
	unsetenv("AUTOTM_HEAD_BLOCK_ROWS");
	check_blocked(ctx, &next_id);
	if (rt_end(ctx) != 0)
		test_check(false, "rt_end of the op checks");
	printf("# per op: nodes checked, worst error relative to max(1, max |ref|)\n");
	int missing = opcheck_print_ops(true, NULL);
	test_check(missing == 0, "every op of ops.def ran in some case (%d did not)", missing);

	/* part 2: programs through the ABI */
	const char *tmp = getenv("TEST_TMPDIR");
	char dir[512];
	snprintf(dir, sizeof dir, "%s/rtops.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < countof(programs); i++) {
		double slow[3] = {0}, fast[3] = {1};
		int bad = run_program(&programs[i], dir, 3, true, slow);
		test_check(!bad, "training '%s' through the runtime ABI", programs[i].name);
		bad = run_program(&programs[i], dir, 3, false, fast) || memcmp(slow, fast, sizeof slow) != 0;
		test_check(!bad, "the same losses, bit for bit, with every tensor in the fast pool");
	}
	if (rmdir(dir) != 0)
		test_check(false, "%s is not empty after the runs (the slow pool's directory was left behind?)", dir);
	return test_summary();
}
