/*
 * elab.h - the elaborator's own types, shared by elaborate.c (files,
 * parameters, expressions, layers applied) and builtins.c (the built-in
 * layers). Not an interface of the front end: elaborate.h is.
 */
#ifndef AUTOTM_ELAB_H
#define AUTOTM_ELAB_H

#include "elaborate.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ast.h"
#include "diag.h"
#include "autocast.h"
#include "graph.h"

/*
 * Fuzzing builds (make fuzz) allow 128 times fewer nodes and layers applied:
 * an input must run in a second or two under the sanitizers, where a
 * network of 2^20 nodes takes ten.
 */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
enum { SIZE_SHIFT = 7 };
#else
enum { SIZE_SHIFT = 0 };
#endif

enum {
	MAX_CALL_DEPTH = 256,    /* nested layer applications */
	MAX_IMPORT_DEPTH = 64,   /* nested imports */
	MAX_NODES = (1 << 20) >> SIZE_SHIFT,   /* nodes in one forward graph */
	MAX_APPLIED = (4 << 20) >> SIZE_SHIFT, /* layers applied in building it (identity, if, ...) */
	MAX_FILE_BYTES = 16 << 20,
	MAX_PARAMS = 64,         /* parameters of one layer */
	MAX_WINDOW = 1 << 16,    /* kernel, stride, padding, groups */
};

typedef struct Env Env;
typedef struct Builtin Builtin;

typedef enum ValKind { V_INT, V_FLOAT, V_BOOL, V_PAIR, V_CHANNELS, V_LAYER, V_STRING } ValKind;

typedef struct Value {
	ValKind kind; /* which field is valid */
	SrcLoc loc;   /* where the value was written */
	union {
		int64_t i;                   /* V_INT */
		double f;                    /* V_FLOAT */
		bool b;                      /* V_BOOL */
		const char *s;               /* V_STRING */
		struct { int64_t a, b; } p;  /* V_PAIR (h, w), V_CHANNELS (in => out) */
		struct {
			const Expr *e;          /* block, or the IDENT/CALL naming the layer */
			Env *env;               /* where e's names are resolved */
			const Decl *decl;       /* user layer, or NULL */
			const Builtin *builtin; /* built-in layer, or NULL */
		} layer;                        /* V_LAYER */
	};
} Value;

typedef struct Binding {
	const char *name;     /* variable */
	Value val;            /* its value */
	struct Binding *next; /* next in the same frame */
} Binding;

struct Env {
	Binding *vars; /* this frame's variables */
	Env *parent;   /* enclosing frame (model parameters at the root) */
};

/*
 * A hash table from names to pointers, so that no lookup by name is linear:
 * a chain of 100,000 layers checks each new name against the earlier ones,
 * and a file may define as many layers. Open addressing with linear
 * probing; the slots live in the arena (growing abandons the old ones).
 */
typedef struct NameSlot {
	const char *name; /* key, NULL in an empty slot */
	void *val;        /* what the name stands for */
} NameSlot;

typedef struct NameTable {
	NameSlot *slots; /* cap entries, or NULL before the first insertion */
	size_t cap;      /* a power of two */
	size_t n;        /* names stored */
} NameTable;

/* Per-chain naming state: counters per kind and the names already used. */
typedef struct Counter {
	int n; /* layers of this kind named so far */
} Counter;
typedef struct Child {
	SrcLoc loc; /* where the name was given */
} Child;
typedef struct Scope {
	struct Scope *parent; /* enclosing scope, or NULL */
	const char *name;     /* the owning layer's name in parent */
	const char *path;     /* its full name ("" at the root); made when first needed */
	NameTable counters;   /* kind -> Counter: next index per kind */
	NameTable children;   /* name -> Child: the names given so far */
} Scope;

/* What applying some layers will at least do. */
typedef struct Work {
	int64_t nodes;   /* nodes added */
	int64_t applied; /* items of chains applied */
} Work;

typedef struct Ctx {
	Arena *arena;              /* everything */
	Graph *g;                  /* graph being built */
	const ElabOptions *opt;    /* search path, -D */
	NameTable layers;          /* name -> Decl: user layer definitions */
	NameTable loaded;          /* real paths of the files loaded */
	struct {
		const char *real;  /* real path of a file being loaded */
		const char *shown; /* its name in messages */
		SrcLoc from;       /* the import that loads it */
	} importing[MAX_IMPORT_DEPTH];
	int nimporting;            /* entries in importing */
	const SrcFile *main;       /* the main file */
	const Decl *model, *input, *labels, *loss, *optimizer;
	Env *globals;              /* model parameters */
	const Param *unbound;      /* parameters whose defaults are not yet evaluated */
	struct {
		const Decl *layer; /* layer being applied */
		SrcLoc call;       /* where it was called */
	} stack[MAX_CALL_DEPTH];
	int depth;                 /* entries in stack */
	uint32_t ndropout;         /* dropout streams handed out */
	int64_t napplied;          /* layers applied so far (items of chains) */
	Work promised;             /* still to come from the repeats being expanded */
	NameTable decl_work;       /* layer name -> Work: what applying it does at least */
	Autocast autocast;         /* a bf16 program's casts so far */
} Ctx;

typedef Tensor *(*BuiltinFn)(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc);

struct Builtin {
	const char *name;        /* as written in .net */
	const char *params[8];   /* parameter names in positional order */
	BuiltinFn fn;            /* builds the layer */
	Op op;                   /* the op it adds (NUM_OPS: none) */
};

/* ---- elaborate.c ---- */

/* path.name, or name at the root */
const char *elab_join(Ctx *c, const char *path, const char *name);
/* t's type as messages write it, "f32[2, 3]", in the arena */
const char *elab_type_str(Ctx *c, const Tensor *t);
/* "an integer", "a layer", ... */
const char *elab_kind_name(ValKind k);
/* The scope of a layer whose full name is path. */
Scope *elab_scope_new(Ctx *c, const char *path);
/* Apply the layer value v to x, its names in scope own. */
Tensor *elab_apply_value(Ctx *c, const Value *v, Tensor *x, Scope *own, SrcLoc loc);

/* ---- builtins.c ---- */

/* The built-in layer called name, or NULL. */
const Builtin *elab_find_builtin(const char *name);
/* The name of built-in layer i, NULL past the last. */
const char *elab_builtin_name(size_t i);
/* Add a node, reporting a shape error as a diagnostic at the layer. */
Tensor *elab_add_node(Ctx *c, Op op, Tensor **in, int nin, const Attrs *attr, const char *kind, const char *path,
                      SrcLoc loc);
/* An argument of a layer as an integer, a number, a boolean; else an error at its location. */
int64_t elab_want_int(const Value *v, const char *param, const char *layer);
double elab_want_float(const Value *v, const char *param, const char *layer);
bool elab_want_bool(const Value *v, const char *param, const char *layer);

#endif
