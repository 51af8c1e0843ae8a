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

typedef struct Emit {
	LLVMContextRef cx;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	LLVMTypeRef i8, i32, i64, f64, i8p, vd;
	LLVMTypeRef tensor_t, program_t;   /* RtTensor, RtProgram */
	Fn begin, pool_base, kernel, tensor, iters, step_begin, data, launch, move, move_async, move_wait,
	    step_end, end;
	const Graph *g;
	const Schedule *s;
	const Placement *p;
	int *kernel_of;                    /* step -> kernel id */
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

/* Distinct kernels: nodes with the same description (and algorithm) share one. */
static void number_kernels(Emit *e)
{
	e->kernel_of = arena_array(e->a, (size_t)e->s->n + 1, sizeof(int));
	for (int i = 0; i < e->s->n; i++) {
		int64_t *d = describe(e, e->s->order[i]);
		if (e->p->algo && e->p->algo[i]) /* the placement chose the kernel's algorithm */
			d[RT_D_ALGO] = 1 + e->p->algo[i]->number;
		int id = -1;
		for (int k = 0; k < e->kernels.n && id < 0; k++)
			if (memcmp(e->kernels.v[k], d, sizeof(int64_t) * RT_DESC_LEN) == 0)
				id = k;
		if (id < 0) {
			id = e->kernels.n;
			vec_push(e->a, &e->kernels, d);
		}
		e->kernel_of[i] = id;
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

/* Address of t's residency at `step`: pool base + offset. */
static LLVMValueRef address(Emit *e, LLVMValueRef *base, const Tensor *t, int step)
{
	const Residency *r = placement_at(e->p, t, step);
	if (!r)
		ICE("%s has no residency at step %d", t->name, step);
	LLVMValueRef off = ci64(e, r->offset);
	return LLVMBuildGEP2(e->b, e->i8, base[r->tier], &off, 1, "");
}

/* The address `at` bytes into residency r. */
static LLVMValueRef res_byte(Emit *e, LLVMValueRef *base, const Residency *r, int64_t at)
{
	LLVMValueRef off = ci64(e, r->offset + at);
	return LLVMBuildGEP2(e->b, e->i8, base[r->tier], &off, 1, "");
}

static LLVMValueRef res_address(Emit *e, LLVMValueRef *base, const Residency *r)
{
	return res_byte(e, base, r, 0);
}

static void emit_step(Emit *e, LLVMValueRef fn)
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
	LLVMValueRef handles = LLVMBuildAlloca(e->b, LLVMArrayType(e->i32, (unsigned)(e->p->moves.n + 1)), "moves");

	const Graph *g = e->g;
	call(e, e->data, (LLVMValueRef[]){ctx, ci32(e, RT_DATA_INPUT), address(e, base, g->input, 0)}, 3);
	call(e, e->data, (LLVMValueRef[]){ctx, ci32(e, RT_DATA_LABELS), address(e, base, g->labels, 0)}, 3);
	LLVMTypeRef handles_t = LLVMArrayType(e->i32, (unsigned)(e->p->moves.n + 1));
	for (int step = 0; step < e->s->n; step++) {
		/* at the boundary: the moves that finish here, the recomputes, then the moves that start here */
		for (int i = 0; i < e->p->moves.n; i++) {
			const Move *m = &e->p->moves.v[i];
			if (m->at != step)
				continue;
			if (m->async) {
				LLVMValueRef slot_idx[2] = {ci32(e, 0), ci32(e, i)};
				LLVMValueRef slot = LLVMBuildGEP2(e->b, handles_t, handles, slot_idx, 2, "");
				call(e, e->move_wait, (LLVMValueRef[]){ctx, LLVMBuildLoad2(e->b, e->i32, slot, "")}, 2);
			} else {
				call(e, e->move, (LLVMValueRef[]){ctx, res_address(e, base, m->to), res_address(e, base, m->from),
				                                  ci64(e, m->t->bytes)}, 4);
			}
		}
		for (int i = 0; i < e->p->recomputes.n; i++) {
			const Recompute *rc = &e->p->recomputes.v[i];
			if (rc->at != step)
				continue;
			for (int k = 0; k < rc->node->nin + rc->node->nout; k++) {
				LLVMValueRef idx = ci64(e, k);
				LLVMBuildStore(e->b, res_address(e, base, rc->args[k]),
				               LLVMBuildGEP2(e->b, e->i8p, args0, &idx, 1, ""));
			}
			call(e, e->launch, (LLVMValueRef[]){ctx, ci32(e, e->kernel_of[rc->step]), args0}, 3);
		}
		for (int i = 0; i < e->p->moves.n; i++) {
			const Move *m = &e->p->moves.v[i];
			int64_t off, len;
			if (!move_chunk(m, step, &off, &len))
				continue;
			/* its chunk for this kernel; the handle of the last chunk is the one waited for (each
			   engine is in order) */
			LLVMValueRef slot_idx[2] = {ci32(e, 0), ci32(e, i)};
			LLVMValueRef h = call(e, e->move_async,
			                      (LLVMValueRef[]){ctx, res_byte(e, base, m->to, off),
			                                       res_byte(e, base, m->from, off),
			                                       ci64(e, len)}, 4);
			LLVMBuildStore(e->b, h, LLVMBuildGEP2(e->b, handles_t, handles, slot_idx, 2, ""));
		}
		const Node *n = e->s->order[step];
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			LLVMValueRef idx = ci64(e, k);
			LLVMBuildStore(e->b, address(e, base, t, step), LLVMBuildGEP2(e->b, e->i8p, args0, &idx, 1, ""));
		}
		call(e, e->launch, (LLVMValueRef[]){ctx, ci32(e, e->kernel_of[step]), args0}, 3);
	}
	LLVMBuildRetVoid(e->b);
}

/* The RtTensor constant of a tensor that lives across steps or comes from outside. */
static LLVMValueRef tensor_global(Emit *e, const Tensor *t, int index)
{
	const Residency *r = placement_at(e->p, t, 0);
	InitSpec spec = init_spec(t, 1);
	LLVMValueRef shape[RT_MAX_DIMS];
	for (int i = 0; i < RT_MAX_DIMS; i++)
		shape[i] = ci64(e, i < t->shape.ndim ? t->shape.d[i] : 0);
	char name[48];
	snprintf(name, sizeof name, "tensor.name.%d", index);
	LLVMValueRef f[] = {
		cstring(e, t->name, name),
		ci32(e, tensor_is_statistic(t) ? RT_TENSOR_STATS : (int)t->kind),
		ci32(e, r->tier == TIER_FAST ? RT_POOL_FAST : RT_POOL_SLOW),
		ci64(e, r->offset),
		ci64(e, t->shape.ndim),
		LLVMConstArray(e->i64, shape, RT_MAX_DIMS),
		ci32(e, spec.kind),
		LLVMConstReal(e->f64, spec.lo),
		LLVMConstReal(e->f64, spec.hi),
		LLVMConstReal(e->f64, spec.value),
	};
	LLVMValueRef init = LLVMConstNamedStruct(e->tensor_t, f, countof(f));
	snprintf(name, sizeof name, "tensor.%d", index);
	LLVMValueRef g = LLVMAddGlobal(e->m, e->tensor_t, name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	return LLVMConstBitCast(g, e->i8p);
}

static void emit_main(Emit *e, LLVMValueRef step_fn, const EmitOptions *o)
{
	const Graph *g = e->g;
	LLVMValueRef main_fn = LLVMAddFunction(e->m, "main",
	                                       LLVMFunctionType(e->i32, (LLVMTypeRef[]){e->i32, LLVMPointerType(e->i8p, 0)}, 2, 0));
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->cx, main_fn, "entry");
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(e->cx, main_fn, "loop");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->cx, main_fn, "step");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, main_fn, "done");
	LLVMPositionBuilderAtEnd(e->b, entry);

	VEC(const Tensor *) outside = {0};
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->kind == TENSOR_WEIGHT || t->kind == TENSOR_STATE || t->kind == TENSOR_INPUT ||
		    t->kind == TENSOR_LABELS)
			vec_push(e->a, &outside, t);
	}
	LLVMValueRef pf[] = {
		cstring(e, g->model, "program.model"),
		ci64(e, e->p->fast_bytes),
		ci64(e, e->p->slow_bytes),
		ci64(e, e->p->limit),
		ci32(e, e->kernels.n),
		ci32(e, outside.n),
		LLVMConstReal(e->f64, o->predicted_seconds),
		cstring(e, o->record ? o->record : "{}", "program.record"),
		ci64(e, o->program_flags),
	};
	LLVMValueRef pinit = LLVMConstNamedStruct(e->program_t, pf, countof(pf));
	LLVMValueRef program = LLVMAddGlobal(e->m, e->program_t, "program");
	LLVMSetInitializer(program, pinit);
	LLVMSetGlobalConstant(program, 1);
	LLVMSetLinkage(program, LLVMPrivateLinkage);

	LLVMValueRef ctx = call(e, e->begin,
	                        (LLVMValueRef[]){LLVMGetParam(main_fn, 0), LLVMGetParam(main_fn, 1),
	                                         LLVMConstBitCast(program, e->i8p)}, 3);
	for (int k = 0; k < e->kernels.n; k++)
		call(e, e->kernel, (LLVMValueRef[]){ctx, ci32(e, k), kernel_global(e, k)}, 3);
	for (int i = 0; i < outside.n; i++)
		call(e, e->tensor, (LLVMValueRef[]){ctx, tensor_global(e, outside.v[i], i)}, 2);
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
	LLVMValueRef fast = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_FAST)}, 2);
	LLVMValueRef slow = call(e, e->pool_base, (LLVMValueRef[]){ctx, ci32(e, RT_POOL_SLOW)}, 2);
	LLVMValueRef base[2] = {fast, slow};
	LLVMValueRef loss = address(e, base, g->loss, e->s->n - 1);
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
	Emit e = {.g = g, .s = s, .p = p, .a = a};
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
	                                  e.f64, e.f64, e.f64}, 10, 0);
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
	number_kernels(&e);
	LLVMValueRef step_fn = LLVMAddFunction(e.m, "step", LLVMFunctionType(e.vd, &e.i8p, 1, 0));
	LLVMSetLinkage(step_fn, LLVMInternalLinkage);
	emit_step(&e, step_fn);
	emit_main(&e, step_fn, o);
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
	Emit e = {.g = g, .s = s, .a = a};
	number_kernels(&e);
	return e.kernels.n;
}
