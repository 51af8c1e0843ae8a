/*
 * driver.c - the pipeline of ../shared/ARCHITECTURE.md, one pass a line.
 *
 *   .net source --elaborate--> forward graph              elaborate.c (lang/)
 *     --autodiff--> training step                         autodiff.c
 *     --schedule--> order + liveness                      schedule.c
 *     --profile--> profile database                       profile_cpu.c
 *     --cost model--> kernel and move times               costmodel.c
 *     --place--> tier of every tensor at every step       place.c
 *     --memplan--> offset of every tensor in its pool     memplan.c
 *     --emit--> LLVM module, object                       emit_llvm.c
 *     --link--> executable                                link.c, cache.c
 *
 * A command runs the passes as far as it needs (Stage). What the passes
 * decide is not here: placement policy is in place.c, the choice of a
 * cost model in costmodel.c, the command line in cli.c. A verifier checks
 * the graph after the passes that change it.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "autodiff.h"
#include "cache.h"
#include "diag.h"
#include "elaborate.h"
#include "emit_llvm.h"
#include "link.h"
#include "memplan.h"
#include "predict.h"
#include "report_schedule.h"
#include "util.h"
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
		.slow_dir = s->slow_dir, .model = s->file,
		.fast_only = s->optimizer == OPT_ALL_FAST || s->optimizer == OPT_UM,
	};
}

static PlaceOptions place_options(const Settings *s, const CostModel *cm)
{
	return (PlaceOptions){
		.optimizer = s->optimizer, .target = s->target, .limit = s->limit > 0 ? s->limit : 0,
		.segments = s->segments,
		.span = s->span == 1 ? -1 : s->span,
		.ratio = s->ratio, .fast_fraction = s->fast_fraction, .cm = cm, .solver = s->solver,
		.time_limit = s->solver_time,
	};
}

static EmitOptions emit_options(const Compilation *c, Arena *a)
{
	bool um = c->place->optimizer == OPT_UM;
	return (EmitOptions){
		.record = schedule_record(c->g, c->sched, c->place, c->cm, &c->st, c->set->target, c->set->file, a),
		.predicted_seconds = um ? 0 : placement_predict(c->place, c->cm, NULL),
		.program_flags = um ? RT_PROGRAM_MANAGED : 0,
	};
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
	bool ok = module_write_object(m, obj, err, errlen) &&                           /* -> object */
	          link_program(obj, s->output ? c->exe : tmp, s->target, err, errlen) &&  /* -> executable */
	          (s->output || cache_install(a, tmp, c->exe, err, errlen));
	unlink(obj);
	return ok;
}

bool compile(Arena *a, const Settings *s, Stage stage, Compilation *c)
{
	char err[1024];
	ElabOptions eo = {.dirs = s->dirs.v, .ndirs = s->dirs.n, .defines = s->defines.v, .ndefines = s->defines.n};
	CostRequest cr = cost_request(s);
	*c = (Compilation){.set = s};

	if (!(c->g = elaborate(s->file, &eo, a)))                                       /* -> forward graph */
		return false;
	verify_or_die(c->g, "elaboration");
	if (stage == STAGE_FORWARD)
		return true;
	autodiff(c->g, NULL);                                                           /* -> training step */
	verify_or_die(c->g, "autodiff");
	c->sched = schedule_graph(c->g, a);                                             /* -> order, liveness */
	if (stage == STAGE_TRAINING)
		return true;
	if (!costmodel_measure(c->g, c->sched, &cr, err, sizeof err))                   /* -> profile database */
		return fail(err);
	if (!(c->cm = costmodel_for(c->g, c->sched, &cr, a, err, sizeof err)))          /* -> kernel, move times */
		return fail(err);
	PlaceOptions po = place_options(s, c->cm);
	if (!(c->place = place(c->g, c->sched, &po, a, &c->st, err, sizeof err)))       /* -> tiers, moves */
		return fail(err);
	memplan(c->place, a);                                                           /* -> offsets */
	if (!placement_verify(c->g, c->place, err, sizeof err) || !memplan_verify(c->place, a, err, sizeof err))
		ICE("placement %s is inconsistent: %s", placement_name(c->place), err);
	if (stage == STAGE_PLACED)
		return true;
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
