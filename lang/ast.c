/*
 * ast.c - AST constructors and helpers shared by the parser and elaborator.
 */
#include "ast.h"

#include "arena.h"
#include "util.h"

Expr *ast_expr(Arena *a, ExprKind kind, SrcLoc loc)
{
	Expr *e = arena_alloc(a, sizeof *e);
	e->kind = kind;
	e->loc = loc;
	e->depth = 1;
	return e;
}

const char *binop_name(BinOp op)
{
	switch (op) {
	case BIN_NEG: return "-";
	case BIN_NOT: return "!";
	case BIN_ADD: return "+";
	case BIN_SUB: return "-";
	case BIN_MUL: return "*";
	case BIN_DIV: return "/";
	case BIN_MOD: return "%";
	case BIN_EQ: return "==";
	case BIN_NE: return "!=";
	case BIN_LT: return "<";
	case BIN_LE: return "<=";
	case BIN_GT: return ">";
	case BIN_GE: return ">=";
	case BIN_AND: return "&&";
	case BIN_OR: return "||";
	}
	unreachable();
}

SrcLoc loc_span(SrcLoc a, SrcLoc b)
{
	SrcLoc r = a;
	r.last_line = b.last_line;
	r.last_column = b.last_column;
	return r;
}
