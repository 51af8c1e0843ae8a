/*
 * lexstate.h - state shared by the flex scanner and the bison parser.
 *
 * The scanner is reentrant: everything it needs lives in a LexState passed
 * as flex's "extra" data, including the stack of open brackets that lets a
 * diagnostic point back at an unclosed `{`.
 */
#ifndef AUTOTM_LEXSTATE_H
#define AUTOTM_LEXSTATE_H

#include <stdbool.h>

#include "arena.h"
#include "ast.h"

enum {
	MAX_NESTING = 200,    /* open brackets at once */
	MAX_EXPR_DEPTH = 500, /* depth of an expression tree */
};

typedef struct LexState {
	SrcFile *file;    /* file being scanned */
	Arena *arena;     /* where the AST goes */
	int line, col;    /* position of the next character */
	const char *tok;  /* text of the last token (not NUL-terminated) */
	int toklen;       /* its length */
	struct {
		char ch;    /* '(', '[' or '{' */
		SrcLoc loc; /* where it was opened */
	} open[MAX_NESTING]; /* brackets not yet closed, innermost last */
	int nopen;           /* entries in open[] */
	bool failed;         /* an error has been printed */
	Decl *decls, *last;  /* the declarations parsed so far */
} LexState;

/* Lists built by left-recursive rules: head and tail for O(1) append. */
typedef struct ArgList { Arg *head, *tail; } ArgList;
typedef struct ItemList { Item *head, *tail; } ItemList;
typedef struct ParamList { Param *head, *tail; } ParamList;
typedef struct ExprList { Expr *head, *tail; int n; } ExprList;

#endif
