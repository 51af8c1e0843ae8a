/*
 * ast.h - the abstract syntax tree of a .net file.
 *
 * Layers and expressions share one node type, Expr: whether `relu`,
 * `projection(cin, 4 * c, 2)` or `chain { ... }` is a layer or a value is
 * decided by the elaborator from where it is used, so the parser needs no
 * symbol table. Every node carries its source span. All nodes live in the
 * arena passed to the parser.
 */
#ifndef AUTOTM_AST_H
#define AUTOTM_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "diag.h"

typedef struct Expr Expr;
typedef struct Arg Arg;
typedef struct Item Item;

typedef enum ExprKind {
	EX_INT,      /* 42 */
	EX_FLOAT,    /* 0.5 */
	EX_SIZE,     /* 3x3 */
	EX_BOOL,     /* true, false */
	EX_STRING,   /* "wte": a layer's path (tie = ...) */
	EX_IDENT,    /* name: a variable, or a layer used without arguments */
	EX_CALL,     /* name(args) */
	EX_TUPLE,    /* (a, b) */
	EX_UNARY,    /* -a, !a */
	EX_BINARY,   /* a + b ... */
	EX_CHANNELS, /* a => b (only as an argument) */
	EX_CHAIN,    /* chain { items } and branch { items } */
	EX_CONCAT,   /* concat { branch... } */
	EX_ADD,      /* add { branch... } */
	EX_RESIDUAL, /* residual(args) { items } */
	EX_REPEAT,   /* repeat n [as i] { items } */
	EX_IF,       /* if cond { items } [else { items }] */
} ExprKind;

/* Operators of EX_UNARY and EX_BINARY. */
typedef enum BinOp {
	BIN_NEG, BIN_NOT,
	BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MOD,
	BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE,
	BIN_AND, BIN_OR,
} BinOp;

/* One argument of a call: positional when name is NULL. */
struct Arg {
	const char *name; /* parameter name, or NULL */
	SrcLoc name_loc;  /* location of the name */
	Expr *value;      /* the argument */
	Arg *next;        /* next argument */
};

/* One entry of a layer list: a layer with an optional label. */
struct Item {
	const char *label; /* `label: layer`, or NULL */
	SrcLoc label_loc;  /* location of the label */
	Expr *layer;       /* the layer */
	Item *next;        /* next item */
};

struct Expr {
	ExprKind kind; /* which member of the union is valid */
	SrcLoc loc;    /* the whole expression */
	int depth;     /* nesting depth of the subtree (bounded by the parser) */
	union {
		int64_t ival;                      /* EX_INT */
		double fval;                       /* EX_FLOAT */
		bool bval;                         /* EX_BOOL */
		struct { int64_t h, w; } size;     /* EX_SIZE */
		const char *ident;                 /* EX_IDENT */
		const char *str;                   /* EX_STRING */
		struct {
			const char *name;          /* callee */
			SrcLoc name_loc;           /* callee's location */
			Arg *args;                 /* arguments in order */
		} call;                            /* EX_CALL */
		struct {
			Expr **elems;              /* elements */
			int n;                     /* number of elements (>= 2) */
		} tuple;                           /* EX_TUPLE */
		struct {
			BinOp op;                  /* operator */
			Expr *a, *b;               /* operands (b NULL if unary) */
		} op;                              /* EX_UNARY, EX_BINARY */
		struct {
			Expr *from, *to;           /* channels in => out */
		} channels;                        /* EX_CHANNELS */
		struct {
			Item *items;               /* layers in order */
			bool is_branch;            /* written `branch { }` */
		} chain;                           /* EX_CHAIN */
		struct {
			Expr *branches;            /* EX_CHAIN list, linked by .next_branch */
		} merge;                           /* EX_CONCAT, EX_ADD */
		struct {
			Arg *args;                 /* (shortcut = S) */
			Item *items;               /* the residual body */
		} residual;                        /* EX_RESIDUAL */
		struct {
			Expr *count;               /* repetitions */
			const char *var;           /* loop variable, or NULL */
			SrcLoc var_loc;            /* its location */
			Item *items;               /* body */
		} repeat;                          /* EX_REPEAT */
		struct {
			Expr *cond;                /* condition */
			Item *then_items;          /* taken when cond != 0 */
			Item *else_items;          /* otherwise (may be NULL) */
		} cond;                            /* EX_IF */
	};
	Expr *next_branch; /* next branch of a concat/add */
};

typedef enum DeclKind {
	DECL_IMPORT,    /* import "file" */
	DECL_MODEL,     /* model name(params) */
	DECL_LAYER,     /* layer name(params) = layer, or name = layer */
	DECL_INPUT,     /* input x : f32[dims] */
	DECL_LABELS,    /* labels y : onehot[dims] */
	DECL_LOSS,      /* loss = expr */
	DECL_OPTIMIZER, /* optimizer = expr */
} DeclKind;

/* A parameter of a model or layer, with an optional default. */
typedef struct Param {
	const char *name;   /* parameter name */
	SrcLoc loc;         /* its location */
	Expr *def;          /* default value, or NULL */
	struct Param *next; /* next parameter */
} Param;

typedef struct Decl {
	DeclKind kind;      /* what is declared */
	SrcLoc loc;         /* the whole declaration's first token */
	const char *name;   /* declared name (not for loss/optimizer/import) */
	SrcLoc name_loc;    /* its location */
	Param *params;      /* model/layer parameters */
	Expr *body;         /* layer body, loss or optimizer expression */
	const char *dtype;  /* input/labels element type (f32, onehot) */
	SrcLoc dtype_loc;   /* its location */
	Expr **dims;        /* input/labels dimensions */
	int ndims;          /* number of dimensions */
	const char *path;   /* import path as written */
	struct Decl *next;  /* next declaration in the file */
} Decl;

/* A parsed file. */
typedef struct Module {
	SrcFile *file; /* source */
	Decl *decls;   /* declarations in order */
} Module;

typedef struct Arena Arena;

/*
 * Parse the text of `file` into a Module allocated in `arena`. Returns NULL
 * after printing a diagnostic when the text is malformed.
 */
Module *parse_file(SrcFile *file, Arena *arena);

/* Constructors used by the parser. */
Expr *ast_expr(Arena *a, ExprKind kind, SrcLoc loc);
const char *binop_name(BinOp op);
/* Span from the start of a to the end of b. */
SrcLoc loc_span(SrcLoc a, SrcLoc b);

#endif
