/*
 * fuzz_pipeline.c - libFuzzer target for the compiler's passes up to the
 * memory plan.
 *
 * Each input is a main .net file held in memory. It goes through what
 * fuzz_parser.c covers (lexing, parsing, elaboration, the graph verifier)
 * and, when it elaborates into a graph small enough, through the passes
 * of `autotmc check`, `graph` and `schedule` that need neither a profile
 * nor a solver: autodiff (verified again), scheduling, the reports of
 * report.c (every node's FLOPs, the summary, the graph as text, dot and
 * JSON, all to /dev/null), the baselines all-fast, first-touch, all-slow
 * and spill-all placed with the roofline cost model, the memory plan and
 * the verifiers of both. A tiny model also runs one training step in the
 * reference interpreter.
 *
 * The bounds below only keep each input fast (the fuzzer stops on inputs
 * that take over -timeout seconds): what the elaborator accepts, whatever
 * its size, must go through every pass it reaches without a crash,
 * sanitizer report or failed verification.
 *
 *   make fuzz                     (this target, for FUZZ_SECONDS, default 600)
 *   make fuzz FUZZ_TARGET=parser  (the front end alone, fuzz_parser.c)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "autodiff.h"
#include "costmodel.h"
#include "elaborate.h"
#include "interp.h"
#include "memplan.h"
#include "place.h"
#include "predict.h"
#include "report.h"
#include "schedule.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
	FUZZ_MAX_NODES = 2000,        /* forward nodes beyond which autodiff and the rest are skipped
	                                 (the largest example, densenet264, has 932) */
	FUZZ_PLACE_NODES = 200,       /* forward nodes beyond which placement is skipped (packing and
	                                 its verifier are quadratic in the residencies) */
	FUZZ_INTERP_ELEMS = 1 << 14,  /* elements of all tensors together the interpreter may hold */
	FUZZ_INTERP_FLOPS = 1 << 22,  /* FLOPs of a training step the interpreter may run */
};

/* x + y, or INT64_MAX when it does not fit (x, y >= 0) */
static int64_t sat_add(int64_t x, int64_t y)
{
	int64_t r;
	return __builtin_add_overflow(x, y, &r) ? INT64_MAX : r;
}

/* Whether the training step is small enough to interpret: few elements, few FLOPs. */
static bool tiny(const Graph *g)
{
	int64_t elems = 0, flops = 0;
	for (int i = 0; i < g->tensors.n; i++)
		elems = sat_add(elems, shape_elems(g->tensors.v[i]->shape));
	for (int i = 0; i < g->nodes.n; i++)
		flops = sat_add(flops, node_flops(g->nodes.v[i]));
	return elems <= FUZZ_INTERP_ELEMS && flops <= FUZZ_INTERP_FLOPS;
}

static void verify_graph(const Graph *g, const char *after)
{
	char err[512];
	if (!graph_verify(g, err, sizeof err))
		ICE("graph verification failed after %s: %s", after, err);
}

/* Place with one baseline, plan memory and check both. */
static void place_and_plan(const Graph *g, const Schedule *s, OptimizerId optimizer, const CostModel *cm,
                           Arena *a)
{
	PlaceOptions po = {.optimizer = optimizer, .target = TARGET_CPU, .cm = cm, .limit = s->peak / 2};
	PlaceStats st;
	char err[512];
	Placement *p = place(g, s, &po, a, &st, err, sizeof err);
	if (!p)
		ICE("%s placement failed: %s", optimizer_info[optimizer].name, err);
	memplan(p, a);
	if (!placement_verify(g, p, err, sizeof err) || !memplan_verify(p, a, err, sizeof err))
		ICE("placement %s is inconsistent: %s", placement_name(p), err);
	(void)placement_predict(p, cm, NULL);
	(void)placement_stats(p);
}

/* The passes after elaboration, on a graph that verified. */
static void run_passes(Graph *g, FILE *devnull, Arena *a)
{
	if (g->nodes.n > FUZZ_MAX_NODES)
		return;
	autodiff(g, NULL);
	verify_graph(g, "autodiff");
	Schedule *s = schedule_graph(g, a);
	report_summary(devnull, g, s, "fuzz.net");
	report_graph(devnull, g, s);
	report_dot(devnull, g);
	report_json(devnull, g, s);

	if (g->nforward <= FUZZ_PLACE_NODES) {
		Roofline r = {.flop_rate = 1e12, .fast_read = 100e9, .fast_write = 80e9,
		              .slow_read = 30e9, .slow_write = 10e9, .async_factor = 0.8};
		CostModel *cm = costmodel_roofline(&r, a);
		place_and_plan(g, s, OPT_ALL_FAST, cm, a);
		place_and_plan(g, s, OPT_FIRST_TOUCH, cm, a);
		place_and_plan(g, s, OPT_ALL_SLOW, cm, a);
		place_and_plan(g, s, OPT_SPILL_ALL, cm, a);
	}

	if (tiny(g)) {
		Interp *ip = interp_new(g, s, false, 1);
		(void)interp_step(ip);
		interp_free(ip);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		if (!devnull)
			ICE("cannot open /dev/null");
		diag_set_stream(devnull);
	}
	static const char *dirs[1];
	dirs[0] = getenv("AUTOTM_STDLIB") ? getenv("AUTOTM_STDLIB") : "stdlib";
	Arena a = {0};
	ElabOptions opt = {.dirs = dirs, .ndirs = 1, .main_text = (const char *)data, .main_len = size};
	Graph *g = elaborate("fuzz.net", &opt, &a);
	if (g) {
		verify_graph(g, "elaboration");
		run_passes(g, devnull, &a);
	}
	arena_free(&a);
	return 0;
}
