/*
 * driver.c - the pipeline (docs/compiler.md), one pass a line.
 *
 *   .net source --elaborate--> forward graph              lang/, front/elaborate.c
 *     --autodiff--> training step                         front/autodiff.c
 *     --schedule--> order + liveness                      front/schedule.c
 *     --profile--> profile database                       cost/profile_cpu.c
 *     --cost model--> kernel and move times               cost/costmodel.c
 *     --place--> tier of every tensor at every step       place/place.c
 *     --memplan--> offset of every tensor in its pool     place/memplan.c
 *     --emit--> LLVM module, object                       emit/emit_llvm.c
 *     --link--> executable                                emit/link.c, emit/cache.c
 *
 * A command runs the passes as far as it needs (Stage). What the passes
 * decide is not here: placement policy is in place.c, the choice of a
 * cost model in costmodel.c, the command line in cli.c. A verifier checks
 * the graph after the passes that change it.
 */
#include "driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autodiff.h"
#include "fuse.h"
#include "layout.h"
#include "cache.h"
#include "diag.h"
#include "elaborate.h"
#include "emit_llvm.h"
#include "interp.h"
#include "link.h"
#include "memplan.h"
#include "predict.h"
#include "ranks.h"
#include "report_schedule.h"
#include "tempfiles.h"
#include "util.h"
#include "autotm/dataset.h"
#include "autotm/rt.h"

static void verify_or_die(const Graph *g, const char *after)
{
	char err[512];
	if (!graph_verify(g, err, sizeof err))
		ICE("graph verification failed after %s: %s", after, err);
}

static bool fail(const char *err)
{
	error_plain("%s", err);
	return false;
}

/* What the cost model is asked for: the command line's choices. */
static CostRequest cost_request(const Settings *s)
{
	return (CostRequest){
		.target = s->target, .hw = s->hw, .gpu_profile = s->gpu_profile, .db = s->db, .threads = s->threads,
		.nondeterministic = s->nondeterministic,
		.slow_dir = s->slow_dir, .model = s->file,
		.fast_only = optimizer_has(s->optimizer, OFLAG_FAST_ONLY),
		.quiet = s->quiet, .verbose = s->verbose, .ranks = s->ranks, .ranks_link = s->ranks_link,
	};
}

static PlaceOptions place_options(const Settings *s, const CostModel *cm)
{
	return (PlaceOptions){
		.optimizer = s->optimizer, .target = s->target, .limit = s->limit > 0 ? s->limit : 0,
		.segments = s->segments,
		.span = s->span == 1 ? -1 : s->span,
		.offload = s->no_offload ? -1 : 0,
		.ratio = s->ratio, .fast_fraction = s->fast_fraction, .cm = cm, .solver = s->solver, .strict = s->strict,
		.time_limit = s->solver_time, .jobs = s->solver_jobs,
	};
}

static EmitOptions emit_options(const Compilation *c, Arena *a)
{
	bool um = optimizer_has(c->place->optimizer, OFLAG_MANAGED); /* the driver pages: nothing predicted */
	EmitOptions o = {
		.record = schedule_record(c->g, c->sched, c->place, c->cm, &c->st, c->set->target, c->set->file, a),
		.predicted_seconds = um ? 0 : placement_predict(c->place, c->cm, NULL),
		.program_flags = (um ? RT_PROGRAM_MANAGED : 0) | (c->set->tf32 ? RT_PROGRAM_TF32 : 0),
	};
	if (c->g->eval) { /* an evaluation program */
		o.program_flags |= RT_PROGRAM_EVAL_ONLY;
		o.eval = (EmitEval){c->g, c->sched, c->place, o.predicted_seconds};
	} else if (c->eval) {
		const Compilation *e = c->eval;
		o.program_flags |= RT_PROGRAM_EVAL_PASS;
		o.eval = (EmitEval){e->g, e->sched, e->place, placement_predict(e->place, e->cm, NULL)};
	}
	return o;
}

/*
 * Where the executable goes: -o, or the program cache keyed by the
 * module's text; c->cached when the cache holds it already.
 */
static const char *program_path(Compilation *c, const Module *m, Arena *a)
{
	if (c->set->output)
		return c->set->output;
	char *ir = module_text(m);
	const char *exe = cache_program_path(a, c->g->model, ir, runtime_library(c->set->target));
	free(ir);
	c->cached = exe && cache_valid(a, exe);
	return exe;
}

/* Compile m to an object and link it into c->exe: -o directly, the cache through a temporary file. */
static bool link_module(const Compilation *c, const Module *m, Arena *a, char *err, size_t errlen)
{
	const Settings *s = c->set;
	const char *tmp = arena_printf(a, "%s.tmp%d", c->exe, (int)getpid()), *obj = arena_printf(a, "%s.o", tmp);
	const char *temps[] = {obj, tmp, arena_printf(a, "%s.sum", tmp)}; /* removed on Ctrl-C (tempfiles.h) */
	for (size_t i = 0; i < countof(temps); i++)
		temp_track(temps[i]);
	bool ok = module_write_object(m, obj, err, errlen) &&                           /* -> object */
	          link_program(obj, s->output ? c->exe : tmp, s->target, err, errlen) &&  /* -> executable */
	          (s->output || cache_install(a, tmp, c->exe, err, errlen));
	unlink(obj);
	for (size_t i = 0; i < countof(temps); i++)
		temp_untrack(temps[i]);
	return ok;
}

/* Profile c's kernels, make its cost model, place it under po's limit and plan its pools. */
static bool place_graph(Arena *a, const Settings *s, Compilation *c, PlaceOptions *po)
{
	char err[1024];
	CostRequest cr = cost_request(s);
	if (!costmodel_measure(c->g, c->sched, &cr, err, sizeof err))                   /* -> profile database */
		return fail(err);
	if (!(c->cm = costmodel_for(c->g, c->sched, &cr, a, err, sizeof err)))          /* -> kernel, move times */
		return fail(err);
	po->cm = c->cm;
	if (!(c->place = place(c->g, c->sched, po, a, &c->st, err, sizeof err)))        /* -> tiers, moves */
		return fail(err);
	memplan(c->place, a);                                                           /* -> offsets */
	if (!placement_verify(c->g, c->place, err, sizeof err) || !memplan_verify(c->place, a, err, sizeof err))
		ICE("placement %s is inconsistent: %s", placement_name(c->place), err);
	return true;
}

/* Whether attention layers are fused (--attention, and its default for the backend). */
static bool fused_attention(const Settings *s)
{
	if (s->attention != ATTENTION_DEFAULT)
		return s->attention == ATTENTION_FUSED;
	/* the GPU's fused attention (runtime/cuda/attention.c) is not yet measured on a GPU: composed there by default */
	return !s->no_fuse && s->target != TARGET_GPU;
}

/* The elaborator's options from the command line (eval: the evaluation graph). */
static ElabOptions elab_options(const Settings *s, bool eval)
{
	return (ElabOptions){.dirs = s->dirs.v, .ndirs = s->dirs.n, .defines = s->defines.v, .ndefines = s->defines.n,
	                     .eval = eval, .precision = s->precision, .fused_attention = fused_attention(s)};
}

/* The CPU's channel-blocked layouts (layout.h), unless AUTOTM_BLOCKED=0 keeps every tensor row-major (to compare). */
static void choose_cpu_layouts(const Settings *s, Graph *g)
{
	const char *blocked = getenv("AUTOTM_BLOCKED");
	if (s->target != TARGET_GPU && !(blocked && strcmp(blocked, "0") == 0))
		choose_layouts(g);
}

/* The forward-only evaluation graph: elaborated in evaluation mode, verified, its layouts chosen, and scheduled. */
static Compilation *eval_front(Arena *a, const Settings *s)
{
	ElabOptions eo = elab_options(s, true);
	Compilation *e = arena_alloc(a, sizeof *e);
	*e = (Compilation){.set = s};
	if (!(e->g = elaborate(s->file, &eo, a)))
		return NULL;
	verify_or_die(e->g, "elaboration");
	choose_cpu_layouts(s, e->g);                                                    /* -> nChw16c activations */
	e->sched = schedule_graph(e->g, a);
	return e;
}

/*
 * The evaluation pass of training program c: placed in the fast pool the
 * training step uses, under the limit its placement was made for. The
 * runtime holds one fast pool (the larger of the two) and one kernel
 * scratch (the larger of the two) beside it, so when the training step's
 * kernels need more scratch than the pass's, the pass is placed again
 * with that much less.
 */
static bool place_eval_pass(Arena *a, const Settings *s, Compilation *c)
{
	if (!(c->eval = eval_front(a, s)))
		return false;
	PlaceOptions po = place_options(s, NULL);
	po.ratio = NULL;
	po.limit = c->place->limit;
	if (optimizer_has(po.optimizer, OFLAG_SEGMENTS)) /* segments of a backward pass: the pass has none */
		po.optimizer = optimizer_default(po.limit > 0);
	if (!place_graph(a, s, c->eval, &po))
		return false;
	const Placement *t = c->place, *e = c->eval->place;
	int64_t limit = t->limit;
	if (limit > 0 && (t->fast_bytes > e->fast_bytes ? t->fast_bytes : e->fast_bytes) +
	                         (t->workspace > e->workspace ? t->workspace : e->workspace) > limit) {
		if (t->workspace <= e->workspace) {
			char b1[32], b2[32];
			error_plain("the evaluation pass's kernels need more scratch (%s) than the training step's (%s) "
			            "beside the training step's fast pool under the limit: give a larger --limit",
			            fmt_bytes(e->workspace, b1, sizeof b1), fmt_bytes(t->workspace, b2, sizeof b2));
			return false;
		}
		po.limit = limit - (t->workspace - e->workspace);
		if (!place_graph(a, s, c->eval, &po))
			return false;
	}
	return true;
}

/* The gradients' all-reduce nodes of a program for several ranks (compiler/front/ranks.h). */
static bool all_reduce(Graph *g)
{
	int added;
	char err[512];
	if (!ranks_allreduce(g, &added, err, sizeof err)) {
		error_plain("the gradients' all-reduce: %s", err);
		return false;
	}
	verify_or_die(g, "the ranks' all-reduce");
	return true;
}

/*
 * The files a run or an evaluation will read, checked against the graph
 * before anything is profiled or built, so that a wrong one is reported
 * under the user's words, not the cached program's: --data (and --val)
 * fit the model's input and labels (their headers and labels: ds_check),
 * --resume names a checkpoint.
 */
static bool inputs_ok(const Settings *s, const Graph *g, bool eval_only)
{
	char err[1024];
	if ((s->data || s->val) && g->input && g->labels) {
		DsModel m = interp_ds_model(g);
		if (s->data && ds_check(s->data, &m, !eval_only, err, sizeof err))
			return fail(err);
		if (s->val && !eval_only && ds_check(s->val, &m, false, err, sizeof err))
			return fail(err);
	}
	if (s->resume) {
		Arena a = {0};
		const char *path = arena_printf(&a, "%s/checkpoint.safetensors", s->resume);
		bool readable = access(path, R_OK) == 0;
		if (!readable)
			error_plain("--resume %s: cannot open '%s': %s", s->resume, path, strerror(errno));
		arena_free(&a);
		return readable;
	}
	return true;
}

bool compile(Arena *a, const Settings *s, Stage stage, Compilation *c)
{
	ElabOptions eo = elab_options(s, false);
	*c = (Compilation){.set = s};
	/* an evaluation program, or its placement: the evaluation graph is the program */
	bool eval_only = s->cmd == CMD_EVAL || s->eval_graph;

	if (eval_only) {
		Compilation *e = eval_front(a, s);                                          /* -> evaluation graph */
		if (!e)
			return false;
		*c = *e;
	} else {
		if (!(c->g = elaborate(s->file, &eo, a)))                                   /* -> forward graph */
			return false;
		verify_or_die(c->g, "elaboration");
		if (stage == STAGE_FORWARD)
			return true;
		autodiff(c->g, NULL);                                                       /* -> training step */
		verify_or_die(c->g, "autodiff");
		if (s->ranks > 1 && !all_reduce(c->g))                                     /* -> gradients averaged */
			return false;
		/* the CPU's kernels; the GPU's, unmeasured, with --fuse (its measured profiles have the loss's only) */
		if (!s->no_fuse) {
			if (s->target == TARGET_GPU && !s->fuse_gpu)
				fuse_loss(c->g);
			else
				fuse_epilogues(c->g);                                               /* -> fused kernels */
			/* by default on the CPU (in bf16 too, since its products take measured implementations: cpu/head.c) */
			if (s->head == HEAD_FUSED || (s->head == HEAD_DEFAULT && s->target != TARGET_GPU))
				fuse_head(c->g);                                                    /* -> no logits */
			const char *casts = getenv("AUTOTM_FUSE_CASTS"); /* 0: keep them (to compare the bits) */
			if ((s->target != TARGET_GPU || s->fuse_gpu) && !(casts && strcmp(casts, "0") == 0))
				fuse_casts(c->g);                                                   /* -> fewer casts */
			verify_or_die(c->g, "fusion");
		}
		choose_cpu_layouts(s, c->g);                                                /* -> nChw16c activations */
		c->sched = schedule_graph(c->g, a);                                         /* -> order, liveness */
	}
	if (stage == STAGE_TRAINING)
		return true;
	if ((s->cmd == CMD_RUN || s->cmd == CMD_EVAL) && !inputs_ok(s, c->g, eval_only))
		return false;
	PlaceOptions po = place_options(s, NULL);
	if (eval_only && optimizer_has(po.optimizer, OFLAG_SEGMENTS)) /* segments of a backward pass: the evaluation has none */
		po.optimizer = optimizer_default(true);
	if (!place_graph(a, s, c, &po))                                                 /* -> tiers, moves, offsets */
		return false;
	if (!eval_only && (s->val || s->with_eval) && !place_eval_pass(a, s, c))        /* -> evaluation pass */
		return false;
	if (stage == STAGE_PLACED)
		return true;
	char err[1024];
	EmitOptions em = emit_options(c, a);
	Module *m = emit_module(c->g, c->sched, c->place, &em, a);                      /* -> LLVM module */
	bool ok = (c->exe = program_path(c, m, a)) != NULL &&                           /* -o, or the cache */
	          (!s->emit_llvm || module_write_ll(m, arena_printf(a, "%s.ll", c->exe), err, sizeof err)) &&
	          (c->cached || link_module(c, m, a, err, sizeof err));                 /* -> object, executable */
	if (!ok && c->exe)
		error_plain("%s", err);
	module_free(m);
	return ok;
}
