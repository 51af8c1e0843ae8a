/*
 * emit_llvm.c - the training program as an LLVM module.
 *
 * The module has two functions, both plain sequences of calls into the
 * runtime (runtime/include/autotm/rt.h):
 *
 *   void step(RtCtx *ctx)   the training step in schedule order: this
 *                           step's batch in, then for every step its moves,
 *                           its recomputes and its kernel, each argument addressed as
 *                           pool base + the constant offset memplan chose;
 *   int main(argc, argv)    rt_begin with the program's constants, one
 *                           rt_kernel per distinct kernel, one rt_tensor per
 *                           weight, state, input and labels tensor, the
 *                           loop of steps, rt_end.
 *
 * With the evaluation pass (RT_PROGRAM_EVAL_PASS) a third function,
 * eval_step(ctx), evaluates one batch as its own placement says and ends
 * with rt_eval_output on the logits; main hands it to rt_eval_program
 * with the pass's tensors. Its slow-tier tensors live in the slow pool
 * after the training step's, and after them the room where the training
 * step's fast-tier weights and state are parked during an evaluation
 * (autotm/rt.h). An evaluation program (RT_PROGRAM_EVAL_ONLY) is only
 * eval_step and a main without a loop.
 *
 * Kernel descriptions, tensor descriptions and the program description are
 * constant globals whose layout is rt.h's. Nodes with identical
 * descriptions share one kernel, created once. The module is verified
 * with LLVMVerifyModule and compiled to an object file for the host with
 * LLVM's target machine; `--emit-llvm` also writes it as text.
 *
 * LLVM 14's C API: typed pointers, so every address is an i8* and struct
 * globals are bitcast where the runtime takes a pointer.
 */
#include "emit_llvm.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <string.h>

#include "autotm/rt.h"
#include "costmodel.h"
#include "kdesc.h"
#include "util.h"
#include "weights.h"

typedef struct Fn {
	LLVMTypeRef type;  /* function type */
	LLVMValueRef fn;   /* declaration */
} Fn;

/* A graph the module runs: the training step or the evaluation pass. */
typedef struct Part {
	const Graph *g;
	const Schedule *s;
	const Placement *p;
	int *kernel_of;     /* step -> kernel id */
	int64_t slow_base;  /* where its slow residencies' offsets start in the slow pool */
	const char *prefix; /* of its globals' names */
} Part;

typedef struct Emit {
	LLVMContextRef cx;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	LLVMTypeRef i8, i32, i64, f64, i8p, vd;
	LLVMTypeRef tensor_t, program_t;   /* RtTensor, RtProgram */
	Fn begin, pool_base, kernel, tensor, iters, step_begin, data, launch, move, move_async, move_wait,
	    step_end, end;
	Fn eval_program, eval_output;
	Part train;                        /* the training step (g NULL in an evaluation program) */
	Part eval;                         /* the evaluation pass (g NULL without) */
	VEC(const int64_t *) kernels;      /* kernel id -> description */
	Arena *a;
} Emit;

static Fn declare(Emit *e, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, unsigned n)
{
	Fn f;
	f.type = LLVMFunctionType(ret, params, n, 0);
	f.fn = LLVMAddFunction(e->m, name, f.type);
	return f;
}

static void declare_runtime(Emit *e)
{
	LLVMTypeRef p = e->i8p, i32 = e->i32, i64 = e->i64;
	LLVMTypeRef pp = LLVMPointerType(e->i8p, 0), i64p = LLVMPointerType(i64, 0);
	e->begin = declare(e, "rt_begin", p, (LLVMTypeRef[]){i32, pp, p}, 3);
	e->pool_base = declare(e, "rt_pool_base", p, (LLVMTypeRef[]){p, i32}, 2);
	e->kernel = declare(e, "rt_kernel", e->vd, (LLVMTypeRef[]){p, i32, i64p}, 3);
	e->tensor = declare(e, "rt_tensor", e->vd, (LLVMTypeRef[]){p, p}, 2);
	e->iters = declare(e, "rt_iters", i64, (LLVMTypeRef[]){p}, 1);
	e->step_begin = declare(e, "rt_step_begin", e->vd, (LLVMTypeRef[]){p}, 1);
	e->data = declare(e, "rt_data", e->vd, (LLVMTypeRef[]){p, i32, p}, 3);
	e->launch = declare(e, "rt_launch", e->vd, (LLVMTypeRef[]){p, i32, pp}, 3);
	e->move = declare(e, "rt_move", e->vd, (LLVMTypeRef[]){p, p, p, i64}, 4);
	e->move_async = declare(e, "rt_move_async", i32, (LLVMTypeRef[]){p, p, p, i64}, 4);
	e->move_wait = declare(e, "rt_move_wait", e->vd, (LLVMTypeRef[]){p, i32}, 2);
	e->step_end = declare(e, "rt_step_end", e->vd, (LLVMTypeRef[]){p, LLVMPointerType(LLVMFloatTypeInContext(e->cx), 0)}, 2);
	e->end = declare(e, "rt_end", i32, (LLVMTypeRef[]){p}, 1);
	e->eval_program = declare(e, "rt_eval_program", e->vd, (LLVMTypeRef[]){p, p, p}, 3);
	e->eval_output = declare(e, "rt_eval_output", e->vd, (LLVMTypeRef[]){p, LLVMPointerType(LLVMFloatTypeInContext(e->cx), 0)}, 2);
}

static LLVMValueRef call(Emit *e, Fn f, LLVMValueRef *args, unsigned n)
{
	return LLVMBuildCall2(e->b, f.type, f.fn, args, n, "");
}

static LLVMValueRef ci32(Emit *e, int64_t v) { return LLVMConstInt(e->i32, (unsigned long long)v, 1); }
static LLVMValueRef ci64(Emit *e, int64_t v) { return LLVMConstInt(e->i64, (unsigned long long)v, 1); }

/* A private constant global holding a NUL-terminated string; returns an i8*. */
static LLVMValueRef cstring(Emit *e, const char *s, const char *name)
{
	LLVMValueRef init = LLVMConstStringInContext(e->cx, s, (unsigned)strlen(s), 0);
	LLVMValueRef g = LLVMAddGlobal(e->m, LLVMTypeOf(init), name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddr(g, 1);
	return LLVMConstBitCast(g, e->i8p);
}

/* rt.h's description of node n (kdesc.c). */
static int64_t *describe(Emit *e, const Node *n)
{
	int64_t *d = arena_array(e->a, RT_DESC_LEN, sizeof(int64_t));
	node_describe(n, d);
	return d;
}

/* Distinct kernels: nodes with the same description (and algorithm) share one, across the parts. */
static void number_kernels(Emit *e, Part *pt)
{
	pt->kernel_of = arena_array(e->a, (size_t)pt->s->n + 1, sizeof(int));
	for (int i = 0; i < pt->s->n; i++) {
		int64_t *d = describe(e, pt->s->order[i]);
		if (pt->p && pt->p->algo && pt->p->algo[i]) /* the placement chose the kernel's algorithm, and its workspace */
			d[RT_D_ALGO] = (1 + pt->p->algo[i]->number) | (pt->p->ws_in_pool ? RT_ALGO_WS_ARG : 0);
		int id = -1;
		for (int k = 0; k < e->kernels.n && id < 0; k++)
			if (memcmp(e->kernels.v[k], d, sizeof(int64_t) * RT_DESC_LEN) == 0)
				id = k;
		if (id < 0) {
			id = e->kernels.n;
			vec_push(e->a, &e->kernels, d);
		}
		pt->kernel_of[i] = id;
	}
}

static LLVMValueRef kernel_global(Emit *e, int id)
{
	LLVMValueRef vals[RT_DESC_LEN];
	for (int i = 0; i < RT_DESC_LEN; i++)
		vals[i] = ci64(e, e->kernels.v[id][i]);
	LLVMValueRef init = LLVMConstArray(e->i64, vals, RT_DESC_LEN);
	char name[32];
	snprintf(name, sizeof name, "kernel.%d", id);
	LLVMValueRef g = LLVMAddGlobal(e->m, LLVMTypeOf(init), name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	return LLVMConstBitCast(g, LLVMPointerType(e->i64, 0));
}

/* The address `at` bytes into residency r of part pt. */
static LLVMValueRef res_byte(Emit *e, const Part *pt, LLVMValueRef *base, const Residency *r, int64_t at)
{
	LLVMValueRef off = ci64(e, r->offset + at + (r->tier == TIER_SLOW ? pt->slow_base : 0));
	return LLVMBuildGEP2(e->b, e->i8, base[r->tier], &off, 1, "");
}

static LLVMValueRef res_address(Emit *e, const Part *pt, LLVMValueRef *base, const Residency *r)
{
	return res_byte(e, pt, base, r, 0);
}

/*
 * A kernel whose workspace is in the fast pool (RT_ALGO_WS_ARG): its address,
 * `offset` bytes into the pool (NULL where it needs none), after the
 * arguments of step's node.
 */
static void store_workspace(Emit *e, const Part *pt, LLVMValueRef *base, LLVMValueRef args0, int step, int64_t offset)
{
	const Node *n = pt->s->order[step];
	if (!(e->kernels.v[pt->kernel_of[step]][RT_D_ALGO] & RT_ALGO_WS_ARG))
		return;
	if (n->nin + n->nout >= RT_MAX_ARGS)
		ICE("%s has %d arguments and a workspace; the runtime takes at most %d", n->name, n->nin + n->nout,
		    RT_MAX_ARGS);
	LLVMValueRef idx = ci64(e, n->nin + n->nout);
	LLVMValueRef off = ci64(e, offset);
	LLVMValueRef at = offset >= 0 ? LLVMBuildGEP2(e->b, e->i8, base[TIER_FAST], &off, 1, "") : LLVMConstNull(e->i8p);
	LLVMBuildStore(e->b, at, LLVMBuildGEP2(e->b, e->i8p, args0, &idx, 1, ""));
}

/* Address of t's residency at `step`: pool base + offset. */
static LLVMValueRef address(Emit *e, const Part *pt, LLVMValueRef *base, const Tensor *t, int step)
{
	const Residency *r = placement_at(pt->p, t, step);
	if (!r)
		ICE("%s has no residency at step %d", t->name, step);
	return res_address(e, pt, base, r);
}

static void emit_step(Emit *e, const Part *pt, LLVMValueRef fn)
{
	LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(e->cx, fn, "entry");
	LLVMPositionBuilderAtEnd(e->b, bb);
	LLVMValueRef ctx = LLVMGetParam(fn, 0);
	LLVMValueRef base[2];
	base[TIER_FAST] = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_FAST)}, 2);
	base[TIER_SLOW] = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_SLOW)}, 2);
	LLVMValueRef args = LLVMBuildAlloca(e->b, LLVMArrayType(e->i8p, RT_MAX_ARGS), "args");
	LLVMValueRef args0 = LLVMBuildBitCast(e->b, args, LLVMPointerType(e->i8p, 0), "");
	/* handles of asynchronous moves, one slot per move */
	LLVMValueRef handles = LLVMBuildAlloca(e->b, LLVMArrayType(e->i32, (unsigned)(pt->p->moves.n + 1)), "moves");

	const Graph *g = pt->g;
	call(e, e->data, (LLVMValueRef[]){ctx, ci32(e, RT_DATA_INPUT), address(e, pt, base, g->input, 0)}, 3);
	call(e, e->data, (LLVMValueRef[]){ctx, ci32(e, RT_DATA_LABELS), address(e, pt, base, g->labels, 0)}, 3);
	LLVMTypeRef handles_t = LLVMArrayType(e->i32, (unsigned)(pt->p->moves.n + 1));
	for (int step = 0; step < pt->s->n; step++) {
		/* at the boundary: the moves that finish here, the recomputes, then the moves that start here */
		for (int i = 0; i < pt->p->moves.n; i++) {
			const Move *m = &pt->p->moves.v[i];
			if (m->at != step)
				continue;
			if (m->async) {
				LLVMValueRef slot_idx[2] = {ci32(e, 0), ci32(e, i)};
				LLVMValueRef slot = LLVMBuildGEP2(e->b, handles_t, handles, slot_idx, 2, "");
				call(e, e->move_wait, (LLVMValueRef[]){ctx, LLVMBuildLoad2(e->b, e->i32, slot, "")}, 2);
			} else {
				call(e, e->move, (LLVMValueRef[]){ctx, res_address(e, pt, base, m->to), res_address(e, pt, base, m->from),
				                                  ci64(e, m->t->bytes)}, 4);
			}
		}
		for (int i = 0; i < pt->p->recomputes.n; i++) {
			const Recompute *rc = &pt->p->recomputes.v[i];
			if (rc->at != step)
				continue;
			for (int k = 0; k < rc->node->nin + rc->node->nout; k++) {
				LLVMValueRef idx = ci64(e, k);
				LLVMBuildStore(e->b, res_address(e, pt, base, rc->args[k]),
				               LLVMBuildGEP2(e->b, e->i8p, args0, &idx, 1, ""));
			}
			store_workspace(e, pt, base, args0, rc->step, pt->p->rc_ws_offset ? pt->p->rc_ws_offset[step] : -1);
			call(e, e->launch, (LLVMValueRef[]){ctx, ci32(e, pt->kernel_of[rc->step]), args0}, 3);
		}
		for (int i = 0; i < pt->p->moves.n; i++) {
			const Move *m = &pt->p->moves.v[i];
			int64_t off, len;
			if (!move_chunk(m, step, &off, &len))
				continue;
			/* its chunk for this kernel; the handle of the last chunk is the one waited for (each
			   engine is in order) */
			LLVMValueRef slot_idx[2] = {ci32(e, 0), ci32(e, i)};
			LLVMValueRef h = call(e, e->move_async,
			                      (LLVMValueRef[]){ctx, res_byte(e, pt, base, m->to, off),
			                                       res_byte(e, pt, base, m->from, off),
			                                       ci64(e, len)}, 4);
			LLVMBuildStore(e->b, h, LLVMBuildGEP2(e->b, handles_t, handles, slot_idx, 2, ""));
		}
		const Node *n = pt->s->order[step];
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			LLVMValueRef idx = ci64(e, k);
			LLVMBuildStore(e->b, address(e, pt, base, t, step), LLVMBuildGEP2(e->b, e->i8p, args0, &idx, 1, ""));
		}
		store_workspace(e, pt, base, args0, step, pt->p->ws_offset ? pt->p->ws_offset[step] : -1);
		call(e, e->launch, (LLVMValueRef[]){ctx, ci32(e, pt->kernel_of[step]), args0}, 3);
	}
	if (g->eval) { /* the logits: the loss's first input, read by its kernel, the last */
		LLVMValueRef logits = address(e, pt, base, g->loss->producer->in[0], pt->s->n - 1);
		call(e, e->eval_output,
		     (LLVMValueRef[]){ctx, LLVMBuildBitCast(e->b, logits, LLVMPointerType(LLVMFloatTypeInContext(e->cx), 0), "")},
		     2);
	}
	LLVMBuildRetVoid(e->b);
}

/* The RtTensor value of a tensor of part pt that lives across steps or comes from outside. */
static LLVMValueRef tensor_init(Emit *e, const Part *pt, const Tensor *t, int index)
{
	const Residency *r = placement_at(pt->p, t, 0);
	InitSpec spec = init_spec(t, 1);
	LLVMValueRef shape[RT_MAX_DIMS];
	for (int i = 0; i < RT_MAX_DIMS; i++)
		shape[i] = ci64(e, i < t->shape.ndim ? t->shape.d[i] : 0);
	if (t->dtype == DT_BF16) /* master weights, state and data are float32 (the bf16 copies are activations) */
		ICE("%s: a bf16 tensor that lives across steps", t->name);
	char name[64];
	snprintf(name, sizeof name, "%stensor.name.%d", pt->prefix, index);
	LLVMValueRef f[] = {
		cstring(e, t->name, name),
		ci32(e, tensor_is_statistic(t) ? RT_TENSOR_STATS : (int)t->kind),
		ci32(e, r->tier == TIER_FAST ? RT_POOL_FAST : RT_POOL_SLOW),
		ci64(e, r->offset + (r->tier == TIER_SLOW ? pt->slow_base : 0)),
		ci64(e, t->shape.ndim),
		LLVMConstArray(e->i64, shape, RT_MAX_DIMS),
		ci32(e, spec.kind),
		ci32(e, t->dtype == DT_I32 ? RT_DTYPE_I32 : RT_DTYPE_F32),
		LLVMConstReal(e->f64, spec.lo),
		LLVMConstReal(e->f64, spec.hi),
		LLVMConstReal(e->f64, spec.value),
	};
	return LLVMConstNamedStruct(e->tensor_t, f, countof(f));
}

/* A private constant global initialised with init; returns its address as ty*. */
static LLVMValueRef const_global(Emit *e, LLVMValueRef init, const char *name, LLVMTypeRef ptr_to)
{
	LLVMValueRef g = LLVMAddGlobal(e->m, LLVMTypeOf(init), name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	return LLVMConstBitCast(g, LLVMPointerType(ptr_to, 0));
}

/* Part pt's tensors that live across steps or come from outside: weights, state, input, labels. */
static int outside_tensors(Emit *e, const Part *pt, const Tensor ***out)
{
	VEC(const Tensor *) v = {0};
	for (int i = 0; i < pt->g->tensors.n; i++) {
		const Tensor *t = pt->g->tensors.v[i];
		if (t->kind == TENSOR_WEIGHT || t->kind == TENSOR_STATE || t->kind == TENSOR_INPUT ||
		    t->kind == TENSOR_LABELS)
			vec_push(e->a, &v, t);
	}
	*out = v.v;
	return v.n;
}

static int64_t round_up(int64_t n, int64_t to)
{
	return (n + to - 1) / to * to;
}

/*
 * The evaluation pass's description: its tensors where it reads them, and
 * (in a training program) where the training step's fast-tier weights and
 * state are parked, after the pass's slow-tier tensors (autotm/rt.h).
 */
static LLVMValueRef eval_program_global(Emit *e, double predicted, int64_t park_offset)
{
	const Tensor **ts;
	int n = outside_tensors(e, &e->eval, &ts);
	LLVMValueRef *inits = arena_array(e->a, (size_t)n + 1, sizeof *inits);
	for (int i = 0; i < n; i++)
		inits[i] = tensor_init(e, &e->eval, ts[i], i);
	LLVMValueRef tensors = const_global(e, LLVMConstArray(e->tensor_t, inits, (unsigned)n), "eval.tensors", e->tensor_t);
	LLVMTypeRef ev_t = LLVMStructCreateNamed(e->cx, "RtEvalProgram");
	LLVMStructSetBody(ev_t, (LLVMTypeRef[]){e->i64, e->i64, e->i32, LLVMPointerType(e->tensor_t, 0), e->f64}, 5, 0);
	LLVMValueRef f[] = {ci64(e, e->eval.p->fast_bytes), ci64(e, park_offset), ci32(e, n), tensors,
	                    LLVMConstReal(e->f64, predicted)};
	return const_global(e, LLVMConstNamedStruct(ev_t, f, countof(f)), "eval.program", e->i8);
}

static void emit_main(Emit *e, LLVMValueRef step_fn, LLVMValueRef eval_fn, const EmitOptions *o)
{
	bool eval_only = o->program_flags & RT_PROGRAM_EVAL_ONLY;
	const Part *main_part = eval_only ? &e->eval : &e->train;
	LLVMValueRef main_fn = LLVMAddFunction(e->m, "main",
	                                       LLVMFunctionType(e->i32, (LLVMTypeRef[]){e->i32, LLVMPointerType(e->i8p, 0)}, 2, 0));
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->cx, main_fn, "entry");
	LLVMPositionBuilderAtEnd(e->b, entry);

	const Tensor **outside;
	int noutside = outside_tensors(e, main_part, &outside);
	/* the pools: with the pass, the larger fast pool, and the slow pool grown by the pass's and the parking */
	const Placement *p = main_part->p;
	int64_t fast = p->fast_bytes, slow = p->slow_bytes, park_offset = 0;
	if (e->eval.g && !eval_only) {
		e->eval.slow_base = round_up(slow, RT_PARK_ALIGN);
		park_offset = round_up(e->eval.slow_base + e->eval.p->slow_bytes, RT_PARK_ALIGN);
		slow = park_offset;
		for (int i = 0; i < noutside; i++) {
			const Tensor *t = outside[i];
			if (tensor_persists(t) && placement_at(p, t, 0)->tier == TIER_FAST)
				slow += round_up(t->bytes, RT_PARK_ALIGN);
		}
		if (e->eval.p->fast_bytes > fast)
			fast = e->eval.p->fast_bytes;
	}
	LLVMValueRef pf[] = {
		cstring(e, main_part->g->model, "program.model"),
		ci64(e, fast),
		ci64(e, slow),
		ci64(e, p->limit),
		ci32(e, e->kernels.n),
		ci32(e, noutside),
		LLVMConstReal(e->f64, o->predicted_seconds),
		cstring(e, o->record ? o->record : "{}", "program.record"),
		ci64(e, o->program_flags),
	};
	LLVMValueRef program = const_global(e, LLVMConstNamedStruct(e->program_t, pf, countof(pf)), "program", e->i8);

	LLVMValueRef ctx = call(e, e->begin, (LLVMValueRef[]){LLVMGetParam(main_fn, 0), LLVMGetParam(main_fn, 1), program}, 3);
	for (int k = 0; k < e->kernels.n; k++)
		call(e, e->kernel, (LLVMValueRef[]){ctx, ci32(e, k), kernel_global(e, k)}, 3);
	for (int i = 0; i < noutside; i++) {
		char name[48];
		snprintf(name, sizeof name, "%stensor.%d", main_part->prefix, i);
		call(e, e->tensor,
		     (LLVMValueRef[]){ctx, const_global(e, tensor_init(e, main_part, outside[i], i), name, e->i8)}, 2);
	}
	if (e->eval.g)
		call(e, e->eval_program,
		     (LLVMValueRef[]){ctx, eval_program_global(e, o->eval.predicted_seconds, park_offset),
		                      LLVMConstBitCast(eval_fn, e->i8p)}, 3);
	if (eval_only) { /* rt_end evaluates */
		LLVMBuildRet(e->b, call(e, e->end, &ctx, 1));
		return;
	}
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(e->cx, main_fn, "loop");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->cx, main_fn, "step");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, main_fn, "done");
	LLVMValueRef iters = call(e, e->iters, &ctx, 1);
	LLVMValueRef counter = LLVMBuildAlloca(e->b, e->i64, "i");
	LLVMBuildStore(e->b, ci64(e, 0), counter);
	LLVMBuildBr(e->b, loop);

	LLVMPositionBuilderAtEnd(e->b, loop);
	LLVMValueRef i = LLVMBuildLoad2(e->b, e->i64, counter, "");
	LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, i, iters, ""), body, done);

	LLVMPositionBuilderAtEnd(e->b, body);
	call(e, e->step_begin, &ctx, 1);
	LLVMBuildCall2(e->b, LLVMFunctionType(e->vd, &e->i8p, 1, 0), step_fn, &ctx, 1, "");
	LLVMValueRef fast_base = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_FAST)}, 2);
	LLVMValueRef slow_base = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_SLOW)}, 2);
	LLVMValueRef base[2] = {fast_base, slow_base};
	LLVMValueRef loss = address(e, &e->train, base, e->train.g->loss, e->train.s->n - 1);
	call(e, e->step_end,
	     (LLVMValueRef[]){ctx, LLVMBuildBitCast(e->b, loss, LLVMPointerType(LLVMFloatTypeInContext(e->cx), 0), "")}, 2);
	LLVMBuildStore(e->b, LLVMBuildAdd(e->b, i, ci64(e, 1), ""), counter);
	LLVMBuildBr(e->b, loop);

	LLVMPositionBuilderAtEnd(e->b, done);
	LLVMBuildRet(e->b, call(e, e->end, &ctx, 1));
}

struct Module {
	LLVMContextRef cx;        /* owns the module */
	LLVMModuleRef m;          /* the program */
	LLVMTargetMachineRef tm;  /* the host's generic CPU */
};

Module *emit_module(const Graph *g, const Schedule *s, const Placement *p, const EmitOptions *o, Arena *a)
{
	Emit e = {.a = a};
	bool eval_only = o->program_flags & RT_PROGRAM_EVAL_ONLY;
	if (!eval_only)
		e.train = (Part){.g = g, .s = s, .p = p, .prefix = ""};
	if (o->program_flags & (RT_PROGRAM_EVAL_PASS | RT_PROGRAM_EVAL_ONLY)) {
		if (!o->eval.g || !o->eval.g->eval || (eval_only && o->eval.g != g))
			ICE("the evaluation pass to emit is not an evaluation graph");
		e.eval = (Part){.g = o->eval.g, .s = o->eval.s, .p = o->eval.p, .prefix = eval_only ? "" : "eval."};
	}
	char *msg = NULL;
	e.cx = LLVMContextCreate();
	e.m = LLVMModuleCreateWithNameInContext(g->model, e.cx);
	e.b = LLVMCreateBuilderInContext(e.cx);
	e.i8 = LLVMInt8TypeInContext(e.cx);
	e.i32 = LLVMInt32TypeInContext(e.cx);
	e.i64 = LLVMInt64TypeInContext(e.cx);
	e.f64 = LLVMDoubleTypeInContext(e.cx);
	e.i8p = LLVMPointerType(e.i8, 0);
	e.vd = LLVMVoidTypeInContext(e.cx);
	/* RtTensor and RtProgram, field by field as rt.h declares them */
	e.tensor_t = LLVMStructCreateNamed(e.cx, "RtTensor");
	LLVMStructSetBody(e.tensor_t,
	                  (LLVMTypeRef[]){e.i8p, e.i32, e.i32, e.i64, e.i64, LLVMArrayType(e.i64, RT_MAX_DIMS), e.i32,
	                                  e.i32, e.f64, e.f64, e.f64}, 11, 0);
	e.program_t = LLVMStructCreateNamed(e.cx, "RtProgram");
	LLVMStructSetBody(e.program_t, (LLVMTypeRef[]){e.i8p, e.i64, e.i64, e.i64, e.i32, e.i32, e.f64, e.i8p, e.i64}, 9, 0);

	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	char *triple = LLVMGetDefaultTargetTriple();
	LLVMTargetRef target;
	if (LLVMGetTargetFromTriple(triple, &target, &msg))
		ICE("LLVM has no target for %s: %s", triple, msg);
	/*
	 * The generic CPU of the target: the step only calls the runtime, so
	 * nothing is gained from this machine's instruction set, and a program
	 * may run on another machine (a GPU program usually does).
	 */
	Module *mod = arena_alloc(a, sizeof *mod);
	mod->tm = LLVMCreateTargetMachine(target, triple, "generic", "", LLVMCodeGenLevelLess, LLVMRelocPIC,
	                                  LLVMCodeModelDefault);
	LLVMSetTarget(e.m, triple);
	LLVMDisposeMessage(triple);
	LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(mod->tm);
	LLVMSetModuleDataLayout(e.m, layout);
	LLVMDisposeTargetData(layout);

	declare_runtime(&e);
	LLVMValueRef step_fn = NULL, eval_fn = NULL;
	if (e.train.g) {
		number_kernels(&e, &e.train);
		step_fn = LLVMAddFunction(e.m, "step", LLVMFunctionType(e.vd, &e.i8p, 1, 0));
		LLVMSetLinkage(step_fn, LLVMInternalLinkage);
	}
	if (e.eval.g) {
		number_kernels(&e, &e.eval);
		eval_fn = LLVMAddFunction(e.m, "eval_step", LLVMFunctionType(e.vd, &e.i8p, 1, 0));
		LLVMSetLinkage(eval_fn, LLVMInternalLinkage);
	}
	emit_main(&e, step_fn, eval_fn, o); /* first: it sets the pass's slow_base */
	if (step_fn)
		emit_step(&e, &e.train, step_fn);
	if (eval_fn)
		emit_step(&e, &e.eval, eval_fn);
	LLVMDisposeBuilder(e.b);

	if (LLVMVerifyModule(e.m, LLVMReturnStatusAction, &msg))
		ICE("the emitted LLVM module does not verify: %s", msg);
	LLVMDisposeMessage(msg);
	mod->cx = e.cx;
	mod->m = e.m;
	return mod;
}

char *module_text(const Module *m)
{
	char *text = LLVMPrintModuleToString(m->m);
	char *copy = xstrdup(text);
	LLVMDisposeMessage(text);
	return copy;
}

bool module_write_ll(const Module *m, const char *path, char *err, size_t errlen)
{
	char *msg = NULL;
	if (!LLVMPrintModuleToFile(m->m, path, &msg))
		return true;
	snprintf(err, errlen, "cannot write %s: %s", path, msg);
	LLVMDisposeMessage(msg);
	return false;
}

bool module_write_object(const Module *m, const char *path, char *err, size_t errlen)
{
	char *msg = NULL;
	if (!LLVMTargetMachineEmitToFile(m->tm, m->m, (char *)path, LLVMObjectFile, &msg))
		return true;
	snprintf(err, errlen, "cannot write %s: %s", path, msg);
	LLVMDisposeMessage(msg);
	return false;
}

void module_free(Module *m)
{
	if (!m)
		return;
	LLVMDisposeTargetMachine(m->tm);
	LLVMDisposeModule(m->m);
	LLVMContextDispose(m->cx);
}

int emit_count_kernels(const Graph *g, const Schedule *s, Arena *a)
{
	Emit e = {.train = {.g = g, .s = s}, .a = a};
	number_kernels(&e, &e.train);
	return e.kernels.n;
}
