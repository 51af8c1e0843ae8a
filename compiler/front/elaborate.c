/*
 * elaborate.c - evaluate a .net program into the forward graph.
 *
 * The elaborator is an interpreter over the AST whose side effect is the
 * graph. Loading reads the main file and its imports (each file once,
 * cycles refused) and collects the layer definitions. Model parameters are
 * bound from their defaults and the -D overrides. Then the loss
 * declaration's `network(x)` applies the network layer to the input tensor:
 *
 *   - a built-in layer (conv, dense, ...; builtins.c) checks its
 *     arguments and its input's shape, creates its weights and adds its
 *     node;
 *   - a user layer binds its arguments in a fresh environment (defaults may
 *     use earlier parameters) and applies its body;
 *   - blocks (chain, concat, add, residual, repeat, if) combine layers.
 *
 * Values are integers, floats, booleans, pairs (3x3, (1, 7)), channel pairs
 * (64 => 128) and layers. A layer value is a closure: a block with the
 * environment it was written in, or a resolved layer definition with its
 * call arguments. Names of resolved layers are never looked up again, so a
 * closure cannot refer to itself.
 *
 * Naming: each layer applied in a chain gets a path (`stage2.bottleneck1`)
 * from its label or from its kind and a per-scope counter (conv1, conv2);
 * its weights and output take their names from that path. `repeat` and
 * `if` share the enclosing scope, so `repeat 3 { bottleneck(...) }` names
 * bottleneck1..3.
 *
 * The first error is reported with error_at(), which unwinds to
 * elaborate(); all memory is in the arena.
 */
#include "elaborate.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ast.h"
#include "autodiff.h"
#include "elab.h"
#include "util.h"

static Tensor *apply_items(Ctx *c, const Item *items, Env *env, Tensor *x, Scope *scope);
static Value eval(Ctx *c, const Expr *e, Env *env);

/* ---- small helpers --------------------------------------------------- */

/* path.name, or name at the root (without printf: this runs for every layer) */
const char *elab_join(Ctx *c, const char *path, const char *name)
{
	if (!path[0])
		return name;
	size_t np = strlen(path), nn = strlen(name);
	char *s = arena_alloc(c->arena, np + nn + 2);
	memcpy(s, path, np);
	s[np] = '.';
	memcpy(s + np + 1, name, nn + 1);
	return s;
}

const char *elab_type_str(Ctx *c, const Tensor *t)
{
	char buf[160];
	return arena_strdup(c->arena, tensor_type_str(t, buf, sizeof buf));
}

const char *elab_kind_name(ValKind k)
{
	switch (k) {
	case V_INT: return "an integer";
	case V_FLOAT: return "a number";
	case V_BOOL: return "a boolean";
	case V_PAIR: return "a pair";
	case V_CHANNELS: return "a channel pair (in => out)";
	case V_LAYER: return "a layer";
	case V_STRING: return "a string";
	}
	unreachable();
}

/* FNV-1a */
static size_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return (size_t)h;
}

/* The slot holding name, or the empty slot where it would go. */
static NameSlot *name_slot(const NameTable *t, const char *name)
{
	size_t i = name_hash(name) & (t->cap - 1);
	while (t->slots[i].name && strcmp(t->slots[i].name, name) != 0)
		i = (i + 1) & (t->cap - 1);
	return &t->slots[i];
}

static void *name_get(const NameTable *t, const char *name)
{
	return t->cap ? name_slot(t, name)->val : NULL;
}

/* Bind name to val (val not NULL), replacing an earlier binding. */
static void name_put(Arena *a, NameTable *t, const char *name, void *val)
{
	if (2 * (t->n + 1) > t->cap) {
		NameTable bigger = {.cap = t->cap ? 2 * t->cap : 4};
		bigger.slots = arena_array(a, bigger.cap, sizeof *bigger.slots);
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i].name)
				*name_slot(&bigger, t->slots[i].name) = t->slots[i];
		bigger.n = t->n;
		*t = bigger;
	}
	NameSlot *s = name_slot(t, name);
	if (!s->name)
		t->n++;
	s->name = name;
	s->val = val;
}

/* The scope of a layer whose full name is path. */
Scope *elab_scope_new(Ctx *c, const char *path)
{
	Scope *s = arena_alloc(c->arena, sizeof *s);
	s->path = path;
	return s;
}

/*
 * The scope of the layer called name in parent. Its path is joined only
 * when asked for: most layers applied in a deep program build no node and
 * never need theirs.
 */
static Scope *scope_child(Ctx *c, Scope *parent, const char *name)
{
	Scope *s = arena_alloc(c->arena, sizeof *s);
	s->parent = parent;
	s->name = name;
	return s;
}

static const char *scope_path(Ctx *c, Scope *s)
{
	if (!s->path)
		s->path = elab_join(c, scope_path(c, s->parent), s->name);
	return s->path;
}

/* The next automatic name for a layer of `kind` in scope: conv1, conv2, ... */
static const char *auto_name(Ctx *c, Scope *s, const char *kind)
{
	Counter *k = name_get(&s->counters, kind);
	if (!k) {
		k = arena_alloc(c->arena, sizeof *k);
		name_put(c->arena, &s->counters, kind, k);
	}
	/* kind and a decimal int, without printf's cost: this runs for every layer */
	char digits[16];
	int nd = 0;
	for (unsigned v = (unsigned)++k->n; v; v /= 10)
		digits[nd++] = (char)('0' + v % 10);
	size_t len = strlen(kind);
	char *name = arena_alloc(c->arena, len + (size_t)nd + 1);
	memcpy(name, kind, len);
	while (nd > 0)
		name[len++] = digits[--nd];
	return name;
}

/* Record a child name, refusing a second layer of the same name. */
static void claim_name(Ctx *c, Scope *s, const char *name, SrcLoc loc)
{
	const Child *prev = name_get(&s->children, name);
	if (prev) {
		const char *path = scope_path(c, s);
		diag_print("error", loc, "a layer named '%s' already exists in %s%s%s", name,
		           path[0] ? "'" : "the network", path, path[0] ? "'" : "");
		note_at(prev->loc, "'%s' was named here", name);
		diag_abort();
	}
	Child *ch = arena_alloc(c->arena, sizeof *ch);
	ch->loc = loc;
	name_put(c->arena, &s->children, name, ch);
}

static const Decl *find_layer(Ctx *c, const char *name)
{
	return name_get(&c->layers, name);
}

static const Binding *find_var(Env *env, const char *name)
{
	for (; env; env = env->parent)
		for (Binding *b = env->vars; b; b = b->next)
			if (strcmp(b->name, name) == 0)
				return b;
	return NULL;
}

/* The names of a table as candidates of a "did you mean". */
static void near_table(NearName *n, const NameTable *t)
{
	for (size_t i = 0; t->slots && i < t->cap; i++)
		near_consider(n, t->slots[i].name);
}

/*
 * "; did you mean 'relu6'?" for a name that is no variable (where env),
 * layer or built-in layer, into buf; "" where none is near.
 */
static const char *did_you_mean(Ctx *c, Env *env, const char *name, char *buf, size_t size)
{
	NearName n = {.name = name};
	for (Env *e = env; e; e = e->parent)
		for (const Binding *b = e->vars; b; b = b->next)
			near_consider(&n, b->name);
	near_table(&n, &c->layers);
	for (size_t i = 0; elab_builtin_name(i); i++)
		near_consider(&n, elab_builtin_name(i));
	buf[0] = '\0';
	if (n.best)
		snprintf(buf, size, "; did you mean '%s'?", n.best);
	return buf;
}

static void bind(Ctx *c, Env *env, const char *name, Value v)
{
	Binding *b = arena_alloc(c->arena, sizeof *b);
	b->name = name;
	b->val = v;
	b->next = env->vars;
	env->vars = b;
}

static Env *env_new(Ctx *c, Env *parent)
{
	Env *e = arena_alloc(c->arena, sizeof *e);
	e->parent = parent;
	return e;
}

/* ---- expressions ------------------------------------------------------ */

static Value layer_val(const Expr *e, Env *env, const Decl *decl, const Builtin *b)
{
	Value v = {.kind = V_LAYER, .loc = e->loc};
	v.layer.e = e;
	v.layer.env = env;
	v.layer.decl = decl;
	v.layer.builtin = b;
	return v;
}

static int64_t int_arith(const Expr *e, BinOp op, int64_t a, int64_t b)
{
	int64_t r = 0;
	bool ovf = false;
	switch (op) {
	case BIN_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
	case BIN_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
	case BIN_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
	case BIN_DIV:
	case BIN_MOD:
		if (b == 0)
			error_at(e->op.b->loc, "%s by zero", op == BIN_DIV ? "division" : "remainder of division");
		if (a == INT64_MIN && b == -1)
			ovf = true;
		else
			r = op == BIN_DIV ? a / b : a % b;
		break;
	default: unreachable();
	}
	if (ovf)
		error_at(e->loc, "integer overflow in %" PRId64 " %s %" PRId64, a, binop_name(op), b);
	return r;
}

static bool truth(const Value *v, const char *what)
{
	if (v->kind == V_BOOL)
		return v->b;
	if (v->kind == V_INT)
		return v->i != 0;
	error_at(v->loc, "%s must be a boolean or an integer, not %s", what, elab_kind_name(v->kind));
}

static Value eval_binary(Ctx *c, const Expr *e, Env *env)
{
	BinOp op = e->op.op;
	Value a = eval(c, e->op.a, env);
	Value r = {.loc = e->loc};
	if (op == BIN_AND || op == BIN_OR) {
		bool x = truth(&a, "an operand of && and ||");
		if ((op == BIN_AND && !x) || (op == BIN_OR && x)) {
			r.kind = V_BOOL;
			r.b = x;
			return r;
		}
		Value b = eval(c, e->op.b, env);
		r.kind = V_BOOL;
		r.b = truth(&b, "an operand of && and ||");
		return r;
	}
	Value b = eval(c, e->op.b, env);
	bool num_a = a.kind == V_INT || a.kind == V_FLOAT, num_b = b.kind == V_INT || b.kind == V_FLOAT;
	if ((op == BIN_EQ || op == BIN_NE) && a.kind == V_BOOL && b.kind == V_BOOL) {
		r.kind = V_BOOL;
		r.b = (a.b == b.b) == (op == BIN_EQ);
		return r;
	}
	if (!num_a)
		error_at(a.loc, "operand of '%s' must be a number, not %s", binop_name(op), elab_kind_name(a.kind));
	if (!num_b)
		error_at(b.loc, "operand of '%s' must be a number, not %s", binop_name(op), elab_kind_name(b.kind));
	if (a.kind == V_INT && b.kind == V_INT) {
		int64_t x = a.i, y = b.i;
		switch (op) {
		case BIN_EQ: r.kind = V_BOOL; r.b = x == y; return r;
		case BIN_NE: r.kind = V_BOOL; r.b = x != y; return r;
		case BIN_LT: r.kind = V_BOOL; r.b = x < y; return r;
		case BIN_LE: r.kind = V_BOOL; r.b = x <= y; return r;
		case BIN_GT: r.kind = V_BOOL; r.b = x > y; return r;
		case BIN_GE: r.kind = V_BOOL; r.b = x >= y; return r;
		default:
			r.kind = V_INT;
			r.i = int_arith(e, op, x, y);
			return r;
		}
	}
	double x = a.kind == V_INT ? (double)a.i : a.f, y = b.kind == V_INT ? (double)b.i : b.f;
	r.kind = V_BOOL;
	switch (op) {
	case BIN_EQ: r.b = x == y; return r;
	case BIN_NE: r.b = x != y; return r;
	case BIN_LT: r.b = x < y; return r;
	case BIN_LE: r.b = x <= y; return r;
	case BIN_GT: r.b = x > y; return r;
	case BIN_GE: r.b = x >= y; return r;
	case BIN_ADD: r.f = x + y; break;
	case BIN_SUB: r.f = x - y; break;
	case BIN_MUL: r.f = x * y; break;
	case BIN_DIV:
		if (y == 0)
			error_at(e->op.b->loc, "division by zero");
		r.f = x / y;
		break;
	case BIN_MOD: error_at(e->loc, "'%%' needs integers");
	default: unreachable();
	}
	r.kind = V_FLOAT;
	if (!isfinite(r.f))
		error_at(e->loc, "arithmetic overflow");
	return r;
}

static Value eval(Ctx *c, const Expr *e, Env *env)
{
	Value v = {.loc = e->loc};
	switch (e->kind) {
	case EX_INT:
		v.kind = V_INT;
		v.i = e->ival;
		return v;
	case EX_FLOAT:
		v.kind = V_FLOAT;
		v.f = e->fval;
		return v;
	case EX_BOOL:
		v.kind = V_BOOL;
		v.b = e->bval;
		return v;
	case EX_STRING:
		v.kind = V_STRING;
		v.s = e->str;
		return v;
	case EX_SIZE:
		v.kind = V_PAIR;
		v.p.a = e->size.h;
		v.p.b = e->size.w;
		return v;
	case EX_TUPLE: {
		if (e->tuple.n != 2)
			error_at(e->loc, "a tuple must have two elements (height, width), not %d", e->tuple.n);
		Value h = eval(c, e->tuple.elems[0], env), w = eval(c, e->tuple.elems[1], env);
		if (h.kind != V_INT || w.kind != V_INT)
			error_at(e->loc, "a tuple must hold two integers");
		v.kind = V_PAIR;
		v.p.a = h.i;
		v.p.b = w.i;
		return v;
	}
	case EX_CHANNELS: {
		Value a = eval(c, e->channels.from, env), b = eval(c, e->channels.to, env);
		if (a.kind != V_INT)
			error_at(a.loc, "channels must be integers, not %s", elab_kind_name(a.kind));
		if (b.kind != V_INT)
			error_at(b.loc, "channels must be integers, not %s", elab_kind_name(b.kind));
		v.kind = V_CHANNELS;
		v.p.a = a.i;
		v.p.b = b.i;
		return v;
	}
	case EX_UNARY: {
		Value a = eval(c, e->op.a, env);
		if (e->op.op == BIN_NOT) {
			v.kind = V_BOOL;
			v.b = !truth(&a, "the operand of '!'");
		} else if (a.kind == V_INT) {
			if (a.i == INT64_MIN)
				error_at(e->loc, "integer overflow in negation");
			v.kind = V_INT;
			v.i = -a.i;
		} else if (a.kind == V_FLOAT) {
			v.kind = V_FLOAT;
			v.f = -a.f;
		} else {
			error_at(a.loc, "operand of '-' must be a number, not %s", elab_kind_name(a.kind));
		}
		return v;
	}
	case EX_BINARY:
		return eval_binary(c, e, env);
	case EX_IDENT:
	case EX_CALL: {
		const char *name = e->kind == EX_IDENT ? e->ident : e->call.name;
		SrcLoc nloc = e->kind == EX_IDENT ? e->loc : e->call.name_loc;
		const Binding *b = find_var(env, name);
		if (b) {
			if (e->kind == EX_CALL)
				error_at(nloc, "'%s' is a parameter, not a layer definition; it takes no arguments", name);
			v = b->val;
			v.loc = e->loc;
			return v;
		}
		const Decl *d = find_layer(c, name);
		if (d)
			return layer_val(e, env, d, NULL);
		const Builtin *bi = elab_find_builtin(name);
		if (bi)
			return layer_val(e, env, NULL, bi);
		for (const Param *p = c->unbound; p; p = p->next)
			if (strcmp(p->name, name) == 0)
				error_at(nloc, "'%s' is a later parameter; a default may only use the parameters before it",
				         name);
		char hint[128];
		error_at(nloc, "unknown %s '%s'%s", e->kind == EX_CALL ? "layer" : "name", name,
		         did_you_mean(c, env, name, hint, sizeof hint));
	}
	case EX_CHAIN:
	case EX_CONCAT:
	case EX_ADD:
	case EX_RESIDUAL:
	case EX_REPEAT:
	case EX_IF:
		return layer_val(e, env, NULL, NULL);
	}
	unreachable();
}

/* ---- applying layers -------------------------------------------------- */

/* How messages name the callee: a built-in's or block's name, or "layer 'NAME'" for def. */
static const char *callee(Ctx *c, const char *layer, const Decl *def)
{
	return def ? arena_printf(c->arena, "layer '%s'", def->name) : layer;
}

/*
 * Bind call arguments to parameter names: positional ones in order, then
 * named ones. out[i] is the value for params[i], or NULL if not given.
 * The callee is the user layer def, or else the built-in or block `layer`.
 */
static void bind_args(Ctx *c, const char *layer, const Decl *def, const char *const *params, int np,
                      const Arg *args, Env *env, Value **out)
{
	int npos = 0, nargs = 0;
	for (int i = 0; i < np; i++)
		out[i] = NULL;
	for (const Arg *a = args; a; a = a->next, nargs++) {
		int i;
		if (a->name) {
			for (i = 0; i < np; i++)
				if (strcmp(params[i], a->name) == 0)
					break;
			if (i == np) {
				const char *near = nearest_name(a->name, params, (size_t)np);
				diag_print("error", a->name_loc, "%s has no parameter '%s'%s%s%s", callee(c, layer, def),
				           a->name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
				if (def)
					note_at(def->name_loc, "'%s' is defined here", def->name);
				diag_abort();
			}
			if (out[i])
				error_at(a->name_loc, "'%s' of %s is given twice", a->name, callee(c, layer, def));
		} else {
			if (nargs != npos)
				error_at(a->value->loc, "positional argument after named ones in call to %s",
				         callee(c, layer, def));
			i = npos++;
			if (i >= np) {
				int total = 0;
				for (const Arg *t = args; t; t = t->next)
					total++;
				layer = callee(c, layer, def);
				if (np == 0)
					diag_print("error", a->value->loc, "%s takes no arguments, but %d %s given", layer,
					           total, total == 1 ? "was" : "were");
				else
					diag_print("error", a->value->loc, "%s takes at most %d argument%s, but %d were given",
					           layer, np, np == 1 ? "" : "s", total);
				if (def)
					note_at(def->name_loc, "'%s' is defined here", def->name);
				diag_abort();
			}
		}
		Value *v = arena_alloc(c->arena, sizeof *v);
		*v = eval(c, a->value, env);
		out[i] = v;
	}
}

static const char *layer_kind(const Value *v)
{
	if (v->layer.decl)
		return v->layer.decl->name;
	if (v->layer.builtin)
		return v->layer.builtin->name;
	switch (v->layer.e->kind) {
	case EX_CHAIN: return v->layer.e->chain.is_branch ? "branch" : "chain";
	case EX_CONCAT: return "concat";
	case EX_ADD: return "add";
	case EX_RESIDUAL: return "residual";
	case EX_REPEAT: return "repeat";
	case EX_IF: return "if";
	default: unreachable();
	}
}

static const Arg *call_args(const Expr *e)
{
	return e->kind == EX_CALL ? e->call.args : NULL;
}

static Tensor *call_builtin(Ctx *c, const Builtin *b, const Expr *e, Env *env, Tensor *x, Scope *own)
{
	int np = 0;
	while (np < (int)countof(b->params) && b->params[np])
		np++;
	Value *args[8];
	bind_args(c, b->name, NULL, b->params, np, call_args(e), env, args);
	if (b->op == NUM_OPS)
		return b->fn(c, b, args, x, "", e->loc); /* identity: no node, no name */
	const char *path = scope_path(c, own);
	if (!path[0])
		path = b->name;
	return b->fn(c, b, args, x, path, e->loc);
}

/*
 * Bounding a repeat before expanding it. `repeat 1000000 { repeat 1000000
 * { relu } }` must fail at once, not after building a million nodes, and
 * a repeat of layers that add no node must not run on either. So a repeat
 * first counts what one iteration of its body will at least do, without
 * applying anything: the items it applies and the nodes they add, from
 * built-in layers that always add a node, blocks, nested repeats with a
 * constant count, and user layers (whatever their arguments: their
 * parameters count as unknown). The later iterations of every repeat being
 * expanded are promised in Ctx.promised; a repeat whose iterations would
 * take the graph or the count of applied layers past the limit, counting
 * what is promised, is an error before it starts. So is the use of a user
 * layer that would, which stops layers that call layers twice over.
 */

/* Counts saturate at bound_cap, where the sum of two cannot overflow. */
static const int64_t bound_cap = INT64_MAX / 4;

static int64_t sat_add(int64_t a, int64_t b)
{
	return a + b > bound_cap ? bound_cap : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
	return a > 0 && b > bound_cap / a ? bound_cap : a * b;
}

/* The value of a repeat count if it is a constant (integers, known names, + - *). */
static bool const_int(const Expr *e, Env *env, int64_t *out)
{
	int64_t a, b;
	switch (e->kind) {
	case EX_INT:
		*out = e->ival;
		return true;
	case EX_IDENT: {
		const Binding *v = find_var(env, e->ident);
		if (!v || v->val.kind != V_INT)
			return false;
		*out = v->val.i;
		return true;
	}
	case EX_BINARY:
		if (!const_int(e->op.a, env, &a) || !const_int(e->op.b, env, &b))
			return false;
		switch (e->op.op) {
		case BIN_ADD: return !__builtin_add_overflow(a, b, out);
		case BIN_SUB: return !__builtin_sub_overflow(a, b, out);
		case BIN_MUL: return !__builtin_mul_overflow(a, b, out);
		default: return false;
		}
	default:
		return false;
	}
}

static Work work_add(Work a, Work b)
{
	return (Work){sat_add(a.nodes, b.nodes), sat_add(a.applied, b.applied)};
}

static Work min_work_of(Ctx *c, const Expr *e, Env *env, int depth);

static Work min_work(Ctx *c, const Item *items, Env *env, int depth)
{
	Work w = {0, 0};
	for (const Item *it = items; it; it = it->next)
		w = work_add(w, min_work_of(c, it->layer, env, depth));
	return w;
}

/*
 * What applying the user layer d does at least, whatever its arguments,
 * computed once. Layers nested deeper than calls can be, and a layer
 * inside its own definition, count as nothing.
 */
static Work decl_work(Ctx *c, const Decl *d, int depth)
{
	Work *w = name_get(&c->decl_work, d->name);
	if (w)
		return *w;
	w = arena_alloc(c->arena, sizeof *w); /* nothing, while it is computed */
	if (depth >= MAX_CALL_DEPTH)
		return *w;
	name_put(c->arena, &c->decl_work, d->name, w);
	Env *frame = env_new(c, c->globals);
	for (const Param *p = d->params; p; p = p->next) /* neither a count nor a layer */
		bind(c, frame, p->name, (Value){.kind = V_FLOAT, .loc = p->loc});
	Work body = min_work_of(c, d->body, frame, depth + 1);
	body.applied--; /* the body is applied, but not as an item */
	*w = body;
	return *w;
}

/* What applying e as an item will at least do. */
static Work min_work_of(Ctx *c, const Expr *e, Env *env, int depth)
{
	Work w = {0, 1}, body;
	int64_t count;
	switch (e->kind) {
	case EX_IDENT:
	case EX_CALL: {
		const char *name = e->kind == EX_IDENT ? e->ident : e->call.name;
		const Binding *v = find_var(env, name);
		const Decl *d = v ? (v->val.kind == V_LAYER ? v->val.layer.decl : NULL) : find_layer(c, name);
		const Builtin *b = v ? (v->val.kind == V_LAYER ? v->val.layer.builtin : NULL)
		                 : d ? NULL : elab_find_builtin(name);
		if (d)
			return work_add(w, decl_work(c, d, depth));
		/* identity adds nothing, nor does flatten of [N, C] */
		w.nodes = b && b->op != NUM_OPS && b->op != OP_RESHAPE ? 1 : 0;
		return w;
	}
	case EX_CHAIN:
		return work_add(w, min_work(c, e->chain.items, env, depth));
	case EX_RESIDUAL:
		return work_add((Work){1, 1}, min_work(c, e->residual.items, env, depth));
	case EX_CONCAT:
	case EX_ADD:
		for (const Expr *b = e->merge.branches; b; b = b->next_branch)
			w = work_add(w, min_work(c, b->chain.items, env, depth));
		if (e->merge.branches->next_branch)
			w.nodes = sat_add(w.nodes, 1);
		return w;
	case EX_REPEAT:
		if (e->repeat.var || !const_int(e->repeat.count, env, &count) || count <= 0)
			return w;
		body = min_work(c, e->repeat.items, env, depth);
		return work_add(w, (Work){sat_mul(count, body.nodes), sat_mul(count, body.applied)});
	default:
		return w;
	}
}

/*
 * Refuse what would take the graph past a limit, counting what is
 * promised: `passes` more passes through a repeat's body at loc, each
 * doing `each` at least, or (with layer) one use of that layer at loc.
 */
static void check_room(Ctx *c, Work each, int64_t passes, const Decl *layer, SrcLoc loc, SrcLoc note_loc)
{
	Work more = {sat_mul(passes, each.nodes), sat_mul(passes, each.applied)};
	Work total = work_add(work_add((Work){c->g->nodes.n, c->napplied}, c->promised), more);
	bool nodes = total.nodes > MAX_NODES;
	if (!nodes && total.applied <= MAX_APPLIED)
		return;
	const char *what = layer ? arena_printf(c->arena, "using layer '%s' here", layer->name)
	                         : "expanding this repeat";
	const char *unit = layer ? arena_printf(c->arena, "'%s'", layer->name)
	                         : arena_printf(c->arena, "each of its %" PRId64 " passes", passes);
	if (nodes) {
		diag_print("error", loc, "network too large: %s makes more than %d nodes", what, MAX_NODES);
		note_at(note_loc, "%s adds at least %" PRId64 " node%s", unit, each.nodes, each.nodes == 1 ? "" : "s");
	} else {
		diag_print("error", loc, "network too large: %s applies more than %d layers", what, MAX_APPLIED);
		note_at(note_loc, "%s applies at least %" PRId64 " layer%s", unit, each.applied,
		        each.applied == 1 ? "" : "s");
	}
	diag_abort();
}

static Tensor *call_user(Ctx *c, const Decl *d, const Expr *e, Env *env, Tensor *x, Scope *own)
{
	for (int i = 0; i < c->depth; i++) {
		if (c->stack[i].layer == d) {
			/* the notes of note_context() show the calls in between */
			diag_print("error", e->loc, "layer '%s' is used inside its own definition", d->name);
			note_at(d->name_loc, "'%s' is defined here", d->name);
			diag_abort();
		}
	}
	if (c->depth == MAX_CALL_DEPTH)
		error_at(e->loc, "layers nested too deeply (more than %d levels)", MAX_CALL_DEPTH);
	check_room(c, decl_work(c, d, c->depth), 1, d, e->loc, d->name_loc);
	const char *names[MAX_PARAMS] = {0};
	const Param *ps[MAX_PARAMS] = {0};
	int np = 0;
	for (const Param *p = d->params; p; p = p->next) {
		ps[np] = p;
		names[np++] = p->name; /* declare() checked the count and uniqueness */
	}
	Value *args[MAX_PARAMS];
	bind_args(c, NULL, d, names, np, call_args(e), env, args);
	for (int i = 0; i < np; i++) {
		if (!args[i] && !ps[i]->def) {
			diag_print("error", e->loc, "missing argument '%s' in use of layer '%s'", names[i], d->name);
			note_at(ps[i]->loc, "'%s' is declared here without a default", names[i]);
			diag_abort();
		}
	}
	/* From here on an error is inside d: note_context() shows this call. */
	c->stack[c->depth].layer = d;
	c->stack[c->depth].call = e->loc;
	c->depth++;
	/* Defaults are evaluated in the new frame, so they see earlier parameters. */
	Env *frame = env_new(c, c->globals);
	for (int i = 0; i < np; i++)
		if (args[i])
			bind(c, frame, names[i], *args[i]);
	for (int i = 0; i < np; i++) {
		if (args[i])
			continue;
		c->unbound = ps[i];
		bind(c, frame, names[i], eval(c, ps[i]->def, frame));
		c->unbound = NULL;
	}
	Value body = eval(c, d->body, frame);
	Tensor *y = elab_apply_value(c, &body, x, own, d->body->loc);
	c->depth--;
	return y;
}

/* Apply the body of `repeat n` n times, refusing at once what would grow too large. */
static Tensor *apply_repeat(Ctx *c, const Expr *e, int64_t n, Env *env, Tensor *x, Scope *own)
{
	Work each = min_work(c, e->repeat.items, env, c->depth), outer = c->promised;
	for (int64_t i = 0; i < n; i++) {
		/* this pass and the later ones */
		c->promised = outer;
		check_room(c, each, n - i, NULL, e->loc, e->repeat.count->loc);
		c->promised = work_add(outer, (Work){sat_mul(n - i - 1, each.nodes), sat_mul(n - i - 1, each.applied)});
		Env *frame = env;
		if (e->repeat.var) {
			frame = env_new(c, env);
			bind(c, frame, e->repeat.var, (Value){.kind = V_INT, .loc = e->repeat.var_loc, .i = i});
		}
		x = apply_items(c, e->repeat.items, frame, x, own);
	}
	c->promised = outer;
	return x;
}

/* Apply a list of branches to x, for concat and add. */
static Tensor *apply_merge(Ctx *c, const Expr *e, Env *env, Tensor *x, Scope *own)
{
	bool cat = e->kind == EX_CONCAT;
	const char *kind = cat ? "concat" : "add";
	VEC(Tensor *) ys = {0};
	VEC(const Expr *) bs = {0};
	for (const Expr *b = e->merge.branches; b; b = b->next_branch) {
		const char *name = auto_name(c, own, "branch");
		Scope *bs_scope = scope_child(c, own, name);
		vec_push(c->arena, &ys, apply_items(c, b->chain.items, env, x, bs_scope));
		vec_push(c->arena, &bs, b);
	}
	if (ys.n == 1)
		return ys.v[0];
	for (int i = 1; i < ys.n; i++) {
		Shape a = ys.v[0]->shape, s = ys.v[i]->shape;
		bool ok = a.ndim == s.ndim && (a.ndim == 2 || a.ndim == 4);
		for (int d = 0; ok && d < a.ndim; d++)
			ok = (cat && d == 1) || a.d[d] == s.d[d];
		if (!ok) {
			diag_print("error", bs.v[i]->loc, "%s '%s': branch %d gives %s but branch 1 gives %s", kind,
			           scope_path(c, own), i + 1, elab_type_str(c, ys.v[i]), elab_type_str(c, ys.v[0]));
			note_at(bs.v[0]->loc, "branch 1 is here");
			diag_abort();
		}
	}
	Attrs a = {.axis = 1};
	return elab_add_node(c, cat ? OP_CONCAT : OP_ADD, ys.v, ys.n, &a, kind, scope_path(c, own), e->loc);
}

static Tensor *apply_residual(Ctx *c, const Expr *e, Env *env, Tensor *x, Scope *own)
{
	static const char *const params[] = {"shortcut"};
	Value *args[1];
	bind_args(c, "residual", NULL, params, 1, e->residual.args, env, args);
	Tensor *body = apply_items(c, e->residual.items, env, x, own);
	Tensor *sc = x;
	if (args[0]) {
		if (args[0]->kind != V_LAYER)
			error_at(args[0]->loc, "the shortcut must be a layer, not %s", elab_kind_name(args[0]->kind));
		sc = elab_apply_value(c, args[0], x, scope_child(c, own, "shortcut"), args[0]->loc);
	}
	if (!shape_eq(body->shape, sc->shape)) {
		error_at(e->loc, "residual '%s': the body gives %s but the shortcut gives %s%s", scope_path(c, own),
		         elab_type_str(c, body), elab_type_str(c, sc),
		         args[0] ? "" : "; add a projection with residual(shortcut = ...)");
	}
	Tensor *in[2] = {body, sc};
	return elab_add_node(c, OP_ADD, in, 2, NULL, "residual", scope_path(c, own), e->loc);
}

static Tensor *apply_block(Ctx *c, const Expr *e, Env *env, Tensor *x, Scope *own)
{
	switch (e->kind) {
	case EX_CHAIN:
		return apply_items(c, e->chain.items, env, x, own);
	case EX_CONCAT:
	case EX_ADD:
		return apply_merge(c, e, env, x, own);
	case EX_RESIDUAL:
		return apply_residual(c, e, env, x, own);
	case EX_REPEAT: {
		Value n = eval(c, e->repeat.count, env);
		if (n.kind != V_INT)
			error_at(n.loc, "repeat count must be an integer, not %s", elab_kind_name(n.kind));
		if (n.i < 0)
			error_at(n.loc, "repeat count must not be negative, got %" PRId64, n.i);
		if (n.i > MAX_NODES)
			error_at(n.loc, "repeat count %" PRId64 " is too large", n.i);
		return apply_repeat(c, e, n.i, env, x, own);
	}
	case EX_IF: {
		Value v = eval(c, e->cond.cond, env);
		return apply_items(c, truth(&v, "the condition of 'if'") ? e->cond.then_items : e->cond.else_items,
		                   env, x, own);
	}
	default:
		unreachable();
	}
}

Tensor *elab_apply_value(Ctx *c, const Value *v, Tensor *x, Scope *own, SrcLoc loc)
{
	if (v->kind != V_LAYER)
		error_at(loc, "expected a layer, but this is %s", elab_kind_name(v->kind));
	if (v->layer.builtin)
		return call_builtin(c, v->layer.builtin, v->layer.e, v->layer.env, x, own);
	if (v->layer.decl)
		return call_user(c, v->layer.decl, v->layer.e, v->layer.env, x, own);
	return apply_block(c, v->layer.e, v->layer.env, x, own);
}

static Tensor *apply_items(Ctx *c, const Item *items, Env *env, Tensor *x, Scope *scope)
{
	for (const Item *it = items; it; it = it->next) {
		const Expr *e = it->layer;
		if (++c->napplied > MAX_APPLIED)
			error_at(e->loc, "network too large: more than %d layers applied", MAX_APPLIED);
		if (!it->label && (e->kind == EX_REPEAT || e->kind == EX_IF)) {
			x = apply_block(c, e, env, x, scope); /* shares the enclosing scope */
			continue;
		}
		Value v = eval(c, e, env);
		if (v.kind != V_LAYER)
			error_at(e->loc, "expected a layer, but '%s' is %s",
			         e->kind == EX_IDENT ? e->ident : "this", elab_kind_name(v.kind));
		const char *name = it->label ? it->label : auto_name(c, scope, layer_kind(&v));
		claim_name(c, scope, name, it->label ? it->label_loc : e->loc);
		x = elab_apply_value(c, &v, x, scope_child(c, scope, name), e->loc);
	}
	return x;
}

/* ---- loading files ---------------------------------------------------- */

/*
 * Read a source file: the main file (from has no file) or an import (from
 * is the import's path). A file that cannot be a source, such as a FIFO or
 * /dev/zero, is refused before anything is read from it.
 */
static SrcFile *open_source(Ctx *c, const char *path, const char *shown, SrcLoc from)
{
	size_t len;
	const char *kind;
	char *text = read_regular_file(path, MAX_FILE_BYTES, &len, &kind);
	if (!text) {
		const char *verb = from.file ? "import" : "read";
		if (kind && strcmp(kind, "a directory") == 0)
			diag_print("error", from, "cannot %s '%s': it is a directory", verb, shown);
		else if (kind)
			diag_print("error", from, "cannot %s '%s': it is %s, not a regular file", verb, shown, kind);
		else if (errno == EFBIG)
			diag_print("error", from, "'%s' is too large for a .net file (more than %d MiB)", shown,
			           MAX_FILE_BYTES >> 20);
		else
			diag_print("error", from, "cannot read '%s': %s", shown, strerror(errno));
		diag_abort();
	}
	SrcFile *f = arena_alloc(c->arena, sizeof *f);
	f->name = arena_strdup(c->arena, shown);
	f->path = arena_strdup(c->arena, path);
	const char *slash = strrchr(path, '/');
	f->dir = slash ? arena_strndup(c->arena, path, (size_t)(slash - path + 1)) : "";
	f->text = arena_strndup(c->arena, text, len);
	f->len = len;
	free(text);
	return f;
}

static void load_file(Ctx *c, const char *path, const char *shown, SrcLoc from);

/* Find an import: the importing file's directory, then the search path. */
static void load_import(Ctx *c, const Decl *d, const SrcFile *from)
{
	const char *name = d->path;
	if (!name[0])
		error_at(d->name_loc, "empty import path");
	size_t n = strlen(name);
	const char *file = n > 4 && strcmp(name + n - 4, ".net") == 0 ? name : arena_printf(c->arena, "%s.net", name);
	VEC(const char *) tried = {0};
	const char *cand = name[0] == '/' ? file : arena_printf(c->arena, "%s%s", from->dir, file);
	vec_push(c->arena, &tried, cand);
	if (name[0] != '/')
		for (int i = 0; i < c->opt->ndirs; i++)
			vec_push(c->arena, &tried, arena_printf(c->arena, "%s/%s", c->opt->dirs[i], file));
	for (int i = 0; i < tried.n; i++) {
		struct stat st;
		if (stat(tried.v[i], &st) == 0 && !S_ISDIR(st.st_mode)) {
			load_file(c, tried.v[i], tried.v[i], d->name_loc);
			return;
		}
	}
	diag_print("error", d->name_loc, "cannot find '%s' to import", file);
	for (int i = 0; i < tried.n; i++)
		note_at((SrcLoc){0}, "looked for %s", tried.v[i]);
	diag_abort();
}

/* Parameters of a layer or model: at most MAX_PARAMS, each named once. */
static void check_params(const Decl *d)
{
	int np = 0;
	for (const Param *p = d->params; p; p = p->next, np++) {
		if (np == MAX_PARAMS)
			error_at(p->loc, "too many parameters (at most %d)", MAX_PARAMS);
		for (const Param *q = d->params; q != p; q = q->next) {
			if (strcmp(q->name, p->name) == 0) {
				diag_print("error", p->loc, "parameter '%s' is declared twice", p->name);
				note_at(q->loc, "first declared here");
				diag_abort();
			}
		}
	}
}

static void declare(Ctx *c, const Decl *d, bool is_main)
{
	const Decl **slot = NULL;
	const char *what = NULL;
	switch (d->kind) {
	case DECL_IMPORT:
		return;
	case DECL_LAYER: {
		const Decl *prev = find_layer(c, d->name);
		if (prev) {
			diag_print("error", d->name_loc, "layer '%s' is defined twice", d->name);
			note_at(prev->name_loc, "first defined here");
			diag_abort();
		}
		if (elab_find_builtin(d->name))
			error_at(d->name_loc, "'%s' is a built-in layer and cannot be redefined", d->name);
		check_params(d);
		name_put(c->arena, &c->layers, d->name, (void *)d);
		return;
	}
	case DECL_MODEL: slot = &c->model; what = "model"; check_params(d); break;
	case DECL_INPUT: slot = &c->input; what = "input"; break;
	case DECL_LABELS: slot = &c->labels; what = "labels"; break;
	case DECL_LOSS: slot = &c->loss; what = "loss"; break;
	case DECL_OPTIMIZER: slot = &c->optimizer; what = "optimizer"; break;
	}
	if (!is_main)
		error_at(d->loc, "'%s' may only be declared in the main file, not in an imported one", what);
	if (*slot) {
		diag_print("error", d->loc, "'%s' is declared twice", what);
		note_at((*slot)->loc, "first declared here");
		diag_abort();
	}
	*slot = d;
}

static void load_file(Ctx *c, const char *path, const char *shown, SrcLoc from)
{
	char *rp = realpath(path, NULL);
	const char *real = rp ? arena_strdup(c->arena, rp) : path;
	free(rp);
	/* the notes of note_context() show the cycle */
	for (int i = 0; i < c->nimporting; i++)
		if (strcmp(c->importing[i].real, real) == 0)
			error_at(from, "import cycle: '%s' imports itself%s", c->importing[i].shown,
			         i + 1 < c->nimporting ? " through other files" : "");
	if (name_get(&c->loaded, real))
		return; /* each file is loaded once */
	if (c->nimporting == MAX_IMPORT_DEPTH)
		error_at(from, "imports nested too deeply (more than %d levels)", MAX_IMPORT_DEPTH);
	SrcFile *f;
	if (!from.file && c->opt->main_text) {
		f = arena_alloc(c->arena, sizeof *f);
		f->name = f->path = arena_strdup(c->arena, path);
		f->dir = "";
		f->text = arena_strndup(c->arena, c->opt->main_text, c->opt->main_len);
		f->len = c->opt->main_len;
	} else {
		f = open_source(c, path, shown, from);
	}
	/* on the stack while it is parsed and declared, for note_context() */
	c->importing[c->nimporting].real = real;
	c->importing[c->nimporting].shown = f->name;
	c->importing[c->nimporting].from = from;
	c->nimporting++;
	Module *m = parse_file(f, c->arena);
	if (!m)
		diag_abort();
	if (!from.file)
		c->main = f;
	for (const Decl *d = m->decls; d; d = d->next)
		if (d->kind == DECL_IMPORT)
			load_import(c, d, f);
	name_put(c->arena, &c->loaded, real, (void *)real);
	for (const Decl *d = m->decls; d; d = d->next)
		declare(c, d, !from.file);
	c->nimporting--;
}

/* ---- model parameters, input, loss, optimizer -------------------------- */

/*
 * After an error, notes for how elaboration got there, innermost first:
 * the calls of the user layers being applied (not the network's own, which
 * the loss declaration makes) and the imports of the files being loaded.
 * A deep stack is cut to its innermost MAX_CONTEXT_NOTES.
 */
static void note_context(const Ctx *c)
{
	enum { MAX_CONTEXT_NOTES = 8 };
	int shown = 0;
	for (int j = c->depth - 1; j >= 1; j--, shown++) {
		if (shown == MAX_CONTEXT_NOTES) {
			note_at((SrcLoc){0}, "and %d more calls of layers around these", j);
			break;
		}
		note_at(c->stack[j].call, "in layer '%s' called from here", c->stack[j].layer->name);
	}
	shown = 0;
	for (int j = c->nimporting - 1; j >= 1; j--, shown++) {
		if (shown == MAX_CONTEXT_NOTES) {
			note_at((SrcLoc){0}, "and %d more imports around these", j);
			break;
		}
		note_at(c->importing[j].from, "in file '%s' imported from here", c->importing[j].shown);
	}
}

static Value parse_define(const Define *def, const Value *old)
{
	Value v = {.loc = old->loc};
	const char *s = def->value;
	char *end;
	errno = 0;
	if (old->kind == V_INT) {
		long long x = strtoll(s, &end, 10);
		if (!*s || *end || errno == ERANGE) {
			error_plain("-D %s=%s: expected an integer", def->name, s);
			note_at(old->loc, "'%s' is declared here with an integer default", def->name);
			diag_abort();
		}
		v.kind = V_INT;
		v.i = x;
	} else if (old->kind == V_FLOAT) {
		double x = strtod(s, &end);
		if (!*s || *end || errno == ERANGE || !isfinite(x)) {
			error_plain("-D %s=%s: expected a number", def->name, s);
			note_at(old->loc, "'%s' is declared here with a number as its default", def->name);
			diag_abort();
		}
		v.kind = V_FLOAT;
		v.f = x;
	} else if (old->kind == V_BOOL) {
		if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0) {
			error_plain("-D %s=%s: expected true or false", def->name, s);
			note_at(old->loc, "'%s' is declared here with a boolean default", def->name);
			diag_abort();
		}
		v.kind = V_BOOL;
		v.b = s[0] == 't';
	} else {
		error_plain("-D %s=%s: '%s' is %s, which cannot be set from the command line", def->name, s, def->name,
		            elab_kind_name(old->kind));
		diag_abort();
	}
	return v;
}

static void bind_model_params(Ctx *c)
{
	const ElabOptions *o = c->opt;
	Env *g = c->globals;
	for (int i = 0; i < o->ndefines; i++) {
		bool found = false;
		for (const Param *p = c->model ? c->model->params : NULL; p; p = p->next)
			found |= strcmp(p->name, o->defines[i].name) == 0;
		if (!found) {
			NearName near = {.name = o->defines[i].name};
			for (const Param *p = c->model ? c->model->params : NULL; p; p = p->next)
				near_consider(&near, p->name);
			error_plain("-D %s: the model has no parameter '%s'%s%s%s", o->defines[i].name, o->defines[i].name,
			            near.best ? "; did you mean '" : "", near.best ? near.best : "", near.best ? "'?" : "");
			if (c->model)
				note_at(c->model->name_loc, "model '%s' is declared here", c->model->name);
			else
				note_at((SrcLoc){c->main, 1, 1, 1, 1},
				        "this file has no 'model' declaration, so it has no parameters");
			diag_abort();
		}
	}
	for (const Param *p = c->model ? c->model->params : NULL; p; p = p->next) {
		const Define *def = NULL;
		for (int i = 0; i < o->ndefines; i++)
			if (strcmp(o->defines[i].name, p->name) == 0)
				def = &o->defines[i];
		if (!p->def && !def)
			error_at(p->loc, "model parameter '%s' has no default; set it with -D %s=VALUE", p->name, p->name);
		Value v;
		if (p->def) {
			v = eval(c, p->def, g);
			if (v.kind == V_LAYER || v.kind == V_CHANNELS || v.kind == V_PAIR)
				error_at(p->def->loc, "model parameter '%s' must be a number or a boolean", p->name);
			if (def)
				v = parse_define(def, &v);
		} else {
			Value old = {.kind = V_INT, .loc = p->loc};
			v = parse_define(def, &old);
		}
		bind(c, g, p->name, v);
	}
}

static Tensor *make_data_tensor(Ctx *c, const Decl *d, TensorKind kind)
{
	Shape s = {.ndim = d->ndims};
	if (d->ndims > MAX_DIMS)
		error_at(d->dims[MAX_DIMS]->loc, "at most %d dimensions are supported", MAX_DIMS);
	for (int i = 0; i < d->ndims; i++) {
		Value v = eval(c, d->dims[i], c->globals);
		if (v.kind != V_INT)
			error_at(v.loc, "a dimension must be an integer, not %s", elab_kind_name(v.kind));
		if (v.i <= 0)
			error_at(v.loc, "a dimension must be positive, got %" PRId64, v.i);
		s.d[i] = v.i;
	}
	Tensor *t = graph_tensor(c->g, kind, d->name, s, d->loc);
	if (!t) {
		char buf[128];
		error_at(d->name_loc, "'%s' of shape %s is too large: its size in bytes overflows 64 bits", d->name,
		         shape_str(s, buf, sizeof buf));
	}
	return t;
}

static void make_inputs(Ctx *c)
{
	const Decl *in = c->input, *lb = c->labels;
	bool ids = strcmp(in->dtype, "i32") == 0, classes = strcmp(lb->dtype, "class") == 0;
	if (strcmp(in->dtype, "f32") != 0 && !ids)
		error_at(in->dtype_loc, "unknown element type '%s' for the input; expected f32 or i32 (token ids)", in->dtype);
	if (ids && in->ndims != 2)
		error_at(in->loc, "an input of ids must be i32[batch, seq], not %d-dimensional", in->ndims);
	if (!ids && (in->ndims < 2 || in->ndims > 4))
		error_at(in->loc, "the input must be [batch, features], [batch, seq, features] or [batch, channels, height, "
		         "width], not %d-dimensional", in->ndims);
	if (strcmp(lb->dtype, "onehot") != 0 && !classes)
		error_at(lb->dtype_loc, "unknown label type '%s'; expected onehot or class", lb->dtype);
	if (!classes && lb->ndims != 2)
		error_at(lb->loc, "labels must be onehot[batch, classes]");
	if (classes && lb->ndims != 1 && lb->ndims != 2)
		error_at(lb->loc, "class labels must be class[batch] or class[batch, seq], not %d-dimensional", lb->ndims);
	c->g->input = make_data_tensor(c, in, TENSOR_INPUT);
	c->g->labels = make_data_tensor(c, lb, TENSOR_LABELS);
	if (ids)
		c->g->input->dtype = DT_I32;
	if (classes)
		c->g->labels->dtype = DT_I32;
	if (c->g->labels->shape.d[0] != c->g->input->shape.d[0]) {
		diag_print("error", lb->dims[0]->loc, "the labels' batch (%" PRId64 ") differs from the input's (%" PRId64 ")",
		           c->g->labels->shape.d[0], c->g->input->shape.d[0]);
		note_at(in->dims[0]->loc, "the input's batch is here");
		diag_abort();
	}
	if (strcmp(in->name, lb->name) == 0)
		error_at(lb->name_loc, "the labels need a name other than the input's");
}

/* loss = crossentropy(NETWORK(INPUT), LABELS) */
static void build_loss(Ctx *c)
{
	const Expr *e = c->loss->body;
	if (e->kind != EX_CALL || strcmp(e->call.name, "crossentropy") != 0)
		error_at(e->loc, "unsupported loss; write 'loss = crossentropy(network(%s), %s)'", c->input->name,
		         c->labels->name);
	const Arg *a1 = e->call.args, *a2 = a1 ? a1->next : NULL;
	if (!a1 || !a2 || a2->next || a1->name || a2->name)
		error_at(e->loc, "crossentropy takes two arguments: the network applied to the input, and the labels");
	const Expr *app = a1->value;
	if (app->kind != EX_CALL || !app->call.args || app->call.args->next || app->call.args->name ||
	    app->call.args->value->kind != EX_IDENT)
		error_at(app->loc, "expected the network applied to the input, such as 'network(%s)'", c->input->name);
	const char *xname = app->call.args->value->ident;
	if (strcmp(xname, c->input->name) != 0) {
		diag_print("error", app->call.args->value->loc, "'%s' is not the input", xname);
		note_at(c->input->name_loc, "the input is '%s'", c->input->name);
		diag_abort();
	}
	if (a2->value->kind != EX_IDENT || strcmp(a2->value->ident, c->labels->name) != 0) {
		diag_print("error", a2->value->loc, "the second argument of crossentropy must be the labels '%s'",
		           c->labels->name);
		note_at(c->labels->name_loc, "the labels are declared here");
		diag_abort();
	}
	const Decl *net = find_layer(c, app->call.name);
	char hint[128];
	if (!net)
		error_at(app->call.name_loc, "unknown layer '%s'%s", app->call.name,
		         did_you_mean(c, NULL, app->call.name, hint, sizeof hint));
	if (net->params)
		error_at(app->call.name_loc, "the network '%s' must be a layer without parameters", net->name);

	c->stack[0].layer = net;
	c->stack[0].call = app->loc;
	c->depth = 1;
	Value body = eval(c, net->body, c->globals);
	Tensor *y = elab_apply_value(c, &body, c->g->input, elab_scope_new(c, ""), net->body->loc);
	c->depth = 0;
	c->g->output = y;
	if (y == c->g->input)
		error_at(net->name_loc, "the network '%s' computes nothing: its output is its input", net->name);
	const Tensor *lab = c->g->labels;
	bool ids = lab->dtype == DT_I32, fits = dtype_is_float(y->dtype);
	if (ids) {
		fits = fits && y->shape.ndim == lab->shape.ndim + 1;
		for (int i = 0; fits && i < lab->shape.ndim; i++)
			fits = y->shape.d[i] == lab->shape.d[i];
	} else {
		fits = fits && y->shape.ndim == 2 && shape_eq(y->shape, lab->shape);
	}
	if (!fits) {
		diag_print("error", e->loc, "the network's output %s does not match the labels %s%s", elab_type_str(c, y),
		           elab_type_str(c, c->g->labels), ids ? " (class ids: the output has their shape and one more "
		                                            "dimension, the classes)" : "");
		note_at(c->labels->loc, "the labels are declared here");
		diag_abort();
	}
	/*
	 * The loss is softmax + cross-entropy on logits, computed stably with
	 * log-sum-exp. A network that ends in softmax (Flux style) hands its
	 * probabilities to crossentropy: take the softmax's input as the logits.
	 */
	Tensor *logits = y;
	Node *last = y->producer;
	if (last && last->op == OP_SOFTMAX && last == c->g->nodes.v[c->g->nodes.n - 1] && y->users.n == 0) {
		logits = last->in[0];
		graph_pop_node(c->g);
	}
	if (ids && logits->shape.d[logits->shape.ndim - 1] > MAX_IDS)
		error_at(e->loc, "at most %d classes for class labels, not %" PRId64, MAX_IDS,
		         logits->shape.d[logits->shape.ndim - 1]);
	Tensor *in[2] = {logits, c->g->labels};
	c->g->loss = elab_add_node(c, ids ? OP_SOFTMAX_XENT_IDS : OP_SOFTMAX_XENT, in, 2, NULL, "loss", "loss", c->loss->loc);
}

/* A number argument of an optimizer or schedule in [lo, hi] (hi_open: below hi). */
static double opt_float(const Value *v, const char *param, const char *fn, double lo, double hi, bool hi_open,
                        const char *range)
{
	double x = elab_want_float(v, param, fn);
	if (!(x >= lo && (hi_open ? x < hi : x <= hi)))
		error_at(v->loc, "'%s' of %s must be %s", param, fn, range);
	return x;
}

static bool is_call_of(const Expr *e, const char *name)
{
	return (e->kind == EX_CALL && strcmp(e->call.name, name) == 0) ||
	       (e->kind == EX_IDENT && strcmp(e->ident, name) == 0);
}

/* `schedule = cosine(steps, warmup = 0, floor = 0)` or `step_decay(every, gamma = 0.1)`. */
static void build_schedule(Ctx *c, const Expr *e, OptimHyper *h)
{
	LrSchedule *s = &h->sched;
	Value *args[3];
	if (is_call_of(e, "cosine")) {
		static const char *const params[] = {"steps", "warmup", "floor"};
		bind_args(c, "cosine", NULL, params, 3, call_args(e), c->globals, args);
		if (!args[0])
			error_at(e->loc, "cosine needs 'steps', the step its decay ends at");
		s->kind = LR_COSINE;
		s->steps = elab_want_int(args[0], "steps", "cosine");
		s->warmup = args[1] ? elab_want_int(args[1], "warmup", "cosine") : 0;
		if (s->warmup < 0)
			error_at(args[1]->loc, "'warmup' of cosine must be non-negative");
		if (s->steps <= s->warmup)
			error_at(args[0]->loc, "'steps' of cosine must be more than its warmup (%" PRId64 ")", s->warmup);
		s->floor = args[2] ? opt_float(args[2], "floor", "cosine", 0, h->lr, false,
		                               "between 0 and the learning rate")
		                   : 0;
	} else if (is_call_of(e, "step_decay")) {
		static const char *const params[] = {"every", "gamma"};
		bind_args(c, "step_decay", NULL, params, 2, call_args(e), c->globals, args);
		if (!args[0])
			error_at(e->loc, "step_decay needs 'every', the steps between decays");
		s->kind = LR_STEP;
		s->every = elab_want_int(args[0], "every", "step_decay");
		if (s->every < 1)
			error_at(args[0]->loc, "'every' of step_decay must be positive");
		s->gamma = args[1] ? opt_float(args[1], "gamma", "step_decay", 0, 1, false, "in (0, 1]") : 0.1;
		if (!(s->gamma > 0))
			error_at(args[1]->loc, "'gamma' of step_decay must be in (0, 1]");
	} else {
		error_at(e->loc, "unknown schedule; the supported ones are cosine(steps = N, warmup = N, floor = F) "
		                 "and step_decay(every = N, gamma = F)");
	}
}

/*
 * `optimizer = sgd(lr, momentum, weight_decay, nesterov, clip, schedule)`
 * or `adamw(lr, beta1, beta2, eps, weight_decay, clip, schedule)`, with
 * PyTorch's defaults (sgd's learning rate: 0.01); SGD at 0.01 without one.
 */
static void build_optimizer(Ctx *c)
{
	Optimizer *o = &c->g->opt;
	OptimHyper *h = &o->h;
	*h = (OptimHyper){.kind = OPTIM_SGD, .lr = 0.01};
	o->name = "sgd";
	if (!c->optimizer)
		return;
	const Expr *e = c->optimizer->body;
	bool adamw = is_call_of(e, "adamw");
	if (!adamw && !is_call_of(e, "sgd"))
		error_at(e->loc, "unknown optimizer; the supported ones are sgd(lr = ..., momentum = ..., "
		                 "weight_decay = ..., nesterov = ...) and adamw(lr = ..., beta1 = ..., beta2 = ..., "
		                 "eps = ..., weight_decay = ...)");
	o->name = adamw ? "adamw" : "sgd";
	h->kind = adamw ? OPTIM_ADAMW : OPTIM_SGD;
	if (adamw)
		h->lr = 1e-3, h->beta1 = 0.9, h->beta2 = 0.999, h->eps = 1e-8, h->weight_decay = 0.01;
	/* the schedule is a call of its own, not a value: taken out of the arguments */
	const Expr *sched = NULL;
	Arg *rest = NULL, **tail = &rest;
	for (const Arg *a = call_args(e); a; a = a->next) {
		if (a->name && strcmp(a->name, "schedule") == 0) {
			if (sched)
				error_at(a->name_loc, "'schedule' of %s is given twice", o->name);
			sched = a->value;
			continue;
		}
		if (is_call_of(a->value, "cosine") || is_call_of(a->value, "step_decay"))
			error_at(a->value->loc, "a learning-rate schedule is given as 'schedule = ...'");
		Arg *copy = arena_alloc(c->arena, sizeof *copy);
		*copy = *a;
		copy->next = NULL;
		*tail = copy;
		tail = &copy->next;
	}
	static const char *const sgd_params[] = {"lr", "momentum", "weight_decay", "nesterov", "clip"};
	static const char *const adamw_params[] = {"lr", "beta1", "beta2", "eps", "weight_decay", "clip"};
	Value *args[6];
	const char *fn = o->name;
	if (adamw)
		bind_args(c, fn, NULL, adamw_params, 6, rest, c->globals, args);
	else
		bind_args(c, fn, NULL, sgd_params, 5, rest, c->globals, args);
	if (args[0]) {
		h->lr = elab_want_float(args[0], "lr", fn);
		if (!(h->lr > 0) || !isfinite(h->lr))
			error_at(args[0]->loc, "the learning rate must be positive");
	}
	const Value *wd = adamw ? args[4] : args[2], *clip = adamw ? args[5] : args[4];
	if (wd)
		h->weight_decay = opt_float(wd, "weight_decay", fn, 0, INFINITY, true, "a non-negative number");
	if (clip) {
		h->clip = opt_float(clip, "clip", fn, 0, INFINITY, true, "a positive number, the largest global norm");
		if (!(h->clip > 0))
			error_at(clip->loc, "'clip' of %s must be a positive number, the largest global norm", fn);
	}
	if (adamw) {
		if (args[1])
			h->beta1 = opt_float(args[1], "beta1", fn, 0, 1, true, "in [0, 1)");
		if (args[2])
			h->beta2 = opt_float(args[2], "beta2", fn, 0, 1, true, "in [0, 1)");
		if (args[3]) {
			h->eps = opt_float(args[3], "eps", fn, 0, INFINITY, true, "a positive number");
			if (!(h->eps > 0))
				error_at(args[3]->loc, "'eps' of adamw must be a positive number");
		}
	} else {
		if (args[1])
			h->momentum = opt_float(args[1], "momentum", fn, 0, 1, true, "in [0, 1)");
		if (args[3]) {
			h->nesterov = elab_want_bool(args[3], "nesterov", fn);
			if (h->nesterov && !(h->momentum > 0))
				error_at(args[3]->loc, "Nesterov's method needs a momentum");
		}
	}
	if (sched)
		build_schedule(c, sched, h);
}

/*
 * Tensor names are unique. Layers in one scope are named apart, but a
 * name can still come twice: a label `x` beside the input x, a label
 * `shortcut` in a residual whose shortcut is named so, an activation
 * layer called `weight`.
 */
static void check_names(Ctx *c)
{
	Tensor **dup = arena_array(c->arena, (size_t)c->g->tensors.n + 1, sizeof(Tensor *));
	Tensor **orig = arena_array(c->arena, (size_t)c->g->tensors.n + 1, sizeof(Tensor *));
	if (graph_name_clashes(c->g, dup, orig) == 0)
		return;
	diag_print("error", dup[0]->loc, "two tensors are named '%s'", dup[0]->name);
	note_at(orig[0]->loc, "'%s' names the %s here", orig[0]->name, tensor_kind_name(orig[0]->kind));
	diag_abort();
}

/* The training step's tensors must fit GRAPH_MAX_BYTES, so that the passes' byte sums fit 64 bits. */
static void check_size(Ctx *c)
{
	const Tensor *at;
	if (autodiff_bytes_bound(c->g, GRAPH_MAX_BYTES, &at) <= GRAPH_MAX_BYTES)
		return;
	char b[64];
	error_at(at->loc, "network too large: with '%s', its training step could need more than %s", at->name,
	         fmt_bytes(GRAPH_MAX_BYTES, b, sizeof b));
}

Graph *elaborate(const char *path, const ElabOptions *opt, Arena *arena)
{
	Ctx *c = arena_alloc(arena, sizeof *c);
	c->arena = arena;
	c->opt = opt;
	c->g = graph_new(arena);
	c->g->precision = opt->precision;
	c->globals = env_new(c, NULL);

	DiagHandler h;
	diag_push(&h);
	if (setjmp(h.jb)) {
		note_context(c);
		return NULL;
	}
	load_file(c, path, path, (SrcLoc){0});
	SrcLoc top = {c->main, 1, 1, 1, 1};
	bind_model_params(c);
	if (!c->input)
		error_at(top, "no 'input' declaration; a model needs 'input', 'labels' and 'loss'");
	if (!c->labels)
		error_at(top, "no 'labels' declaration; a model needs 'input', 'labels' and 'loss'");
	if (!c->loss)
		error_at(top, "no 'loss' declaration; a model needs 'input', 'labels' and 'loss'");
	c->g->model = c->model ? c->model->name : "model";
	c->g->eval = opt->eval;
	make_inputs(c);
	build_loss(c);
	build_optimizer(c);
	check_names(c);
	check_size(c);
	c->g->nforward = c->g->nodes.n;
	c->g->nforward_tensors = c->g->tensors.n;
	diag_pop(&h);
	return c->g;
}
