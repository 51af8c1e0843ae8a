/*
 * parser.y - the .net grammar (see docs/language.md).
 *
 * A pure (reentrant) LALR(1) parser with locations. Actions only build AST
 * nodes; names are resolved later by the elaborator. Layers and
 * expressions share the Expr node: in argument position a layer is parsed
 * as an expression (a call, a name) or a block, and the elaborator decides
 * what it is. Syntax errors name the unexpected token and what was
 * expected, and at the end of the file point back at the innermost
 * unclosed bracket.
 */
%code requires {
#include <stdint.h>

#include "ast.h"
#include "lexstate.h"

typedef void *yyscan_t;
}

%code {
#include <stdio.h>
#include <string.h>

#include "util.h"

int yylex(YYSTYPE *lval, YYLTYPE *lloc, yyscan_t scanner);
static void yyerror(YYLTYPE *loc, yyscan_t scanner, LexState *st, const char *msg);

/* Keep the parser's own stack small; deeper input is refused with a message. */
#define YYMAXDEPTH 2000

/* Locations carry their file: propagate it along with the span. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                              \
	do {                                                                     \
		if (N) {                                                         \
			(Cur).file = YYRHSLOC(Rhs, 1).file;                      \
			(Cur).first_line = YYRHSLOC(Rhs, 1).first_line;          \
			(Cur).first_column = YYRHSLOC(Rhs, 1).first_column;      \
			(Cur).last_line = YYRHSLOC(Rhs, N).last_line;            \
			(Cur).last_column = YYRHSLOC(Rhs, N).last_column;        \
		} else {                                                         \
			(Cur).file = YYRHSLOC(Rhs, 0).file;                      \
			(Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line; \
			(Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
		}                                                                \
	} while (0)

static Expr *binary(LexState *st, BinOp op, Expr *a, Expr *b, SrcLoc loc);
static Expr *unary(LexState *st, BinOp op, Expr *a, SrcLoc loc);
static bool too_deep(LexState *st, Expr *e);
static Decl *new_decl(LexState *st, DeclKind kind, SrcLoc loc);
static Item *new_item(LexState *st, const char *label, SrcLoc label_loc, Expr *layer);
static Arg *new_arg(LexState *st, const char *name, SrcLoc name_loc, Expr *value);
static Expr *call(LexState *st, const char *name, SrcLoc name_loc, Arg *args, SrcLoc loc);
static Expr *chain(LexState *st, Item *items, bool is_branch, SrcLoc loc);

#define NODE(kind, loc) ast_expr(st->arena, kind, loc)
#define APPEND(list, x) do { if ((list).tail) (list).tail->next = (x); else (list).head = (x); (list).tail = (x); } while (0)
}

%define api.pure full
%define api.location.type {SrcLoc}
%define parse.error custom
%define parse.lac full
%locations
%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {LexState *st}

%initial-action {
	@$.file = st->file;
	@$.first_line = @$.last_line = 1;
	@$.first_column = @$.last_column = 1;
}

%union {
	int64_t ival;
	double fval;
	struct { int64_t h, w; } size;
	const char *str;
	Expr *expr;
	Arg *arg;
	ArgList args;
	Item *item;
	ItemList items;
	Param *param;
	ParamList params;
	ExprList exprs;
	Decl *decl;
}

%token <ival> INT "integer"
%token <fval> FLOAT "number"
%token <size> SIZE "size"
%token <str> IDENT "name"
%token <str> STRING "string"
%token IMPORT "'import'" MODEL "'model'" LAYER "'layer'" INPUT "'input'"
%token LABELS "'labels'" LOSS "'loss'" OPTIMIZER "'optimizer'"
%token CHAIN "'chain'" CONCAT "'concat'" ADD "'add'" RESIDUAL "'residual'"
%token BRANCH "'branch'" REPEAT "'repeat'" AS "'as'" IF "'if'" ELSE "'else'"
%token TRUE "'true'" FALSE "'false'"
%token ARROW "'=>'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='" AND "'&&'" OR "'||'"

%type <decl> decl
%type <params> params param_list
%type <param> param
%type <expr> layer block if_block value expr branch
%type <exprs> branches expr_list
%type <items> items
%type <item> item
%type <args> arg_list opt_args
%type <arg> arg

%left OR
%left AND
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%%

/* file : decl* */
file
	: %empty
	| file decl { if (st->last) st->last->next = $2; else st->decls = $2; st->last = $2; }
	;

decl
	/* 'import' STRING */
	: IMPORT STRING {
		$$ = new_decl(st, DECL_IMPORT, @1);
		$$->path = $2;
		$$->name_loc = @2;
	}
	/* 'model' IDENT params? */
	| MODEL IDENT params {
		$$ = new_decl(st, DECL_MODEL, @1);
		$$->name = $2; $$->name_loc = @2; $$->params = $3.head;
	}
	/* 'layer' IDENT params? '=' layer */
	| LAYER IDENT params '=' layer {
		$$ = new_decl(st, DECL_LAYER, @1);
		$$->name = $2; $$->name_loc = @2; $$->params = $3.head; $$->body = $5;
	}
	/* IDENT '=' layer */
	| IDENT '=' layer {
		$$ = new_decl(st, DECL_LAYER, @1);
		$$->name = $1; $$->name_loc = @1; $$->body = $3;
	}
	/* 'input' IDENT ':' IDENT '[' expr (',' expr)* ']' */
	| INPUT IDENT ':' IDENT '[' expr_list ']' {
		$$ = new_decl(st, DECL_INPUT, @1);
		$$->name = $2; $$->name_loc = @2; $$->dtype = $4; $$->dtype_loc = @4;
		$$->dims = arena_array(st->arena, (size_t)$6.n, sizeof(Expr *));
		int i = 0;
		for (Expr *e = $6.head; e; e = e->next_branch) $$->dims[i++] = e;
		$$->ndims = $6.n;
	}
	/* 'labels' IDENT ':' IDENT '[' expr (',' expr)* ']' */
	| LABELS IDENT ':' IDENT '[' expr_list ']' {
		$$ = new_decl(st, DECL_LABELS, @1);
		$$->name = $2; $$->name_loc = @2; $$->dtype = $4; $$->dtype_loc = @4;
		$$->dims = arena_array(st->arena, (size_t)$6.n, sizeof(Expr *));
		int i = 0;
		for (Expr *e = $6.head; e; e = e->next_branch) $$->dims[i++] = e;
		$$->ndims = $6.n;
	}
	/* 'loss' '=' expr */
	| LOSS '=' expr { $$ = new_decl(st, DECL_LOSS, @1); $$->body = $3; }
	/* 'optimizer' '=' expr */
	| OPTIMIZER '=' expr { $$ = new_decl(st, DECL_OPTIMIZER, @1); $$->body = $3; }
	;

/* params : ('(' (param (',' param)*)? ')')? */
params
	: %empty { $$.head = $$.tail = NULL; }
	| '(' ')' { $$.head = $$.tail = NULL; }
	| '(' param_list ')' { $$ = $2; }
	;

param_list
	: param { $$.head = $$.tail = NULL; APPEND($$, $1); }
	| param_list ',' param { $$ = $1; APPEND($$, $3); }
	;

/* param : IDENT ('=' expr)? */
param
	: IDENT {
		$$ = arena_alloc(st->arena, sizeof(Param));
		$$->name = $1; $$->loc = @1;
	}
	| IDENT '=' value {
		$$ = arena_alloc(st->arena, sizeof(Param));
		$$->name = $1; $$->loc = @1; $$->def = $3;
	}
	;

/* items : (item | ';')* */
items
	: %empty { $$.head = $$.tail = NULL; }
	| items item { $$ = $1; APPEND($$, $2); }
	| items ';' { $$ = $1; }
	;

/* item : (IDENT ':')? layer */
item
	: layer { $$ = new_item(st, NULL, @1, $1); }
	| IDENT ':' layer { $$ = new_item(st, $1, @1, $3); }
	;

/* layer : IDENT | IDENT '(' args? ')' | block */
layer
	: IDENT { $$ = NODE(EX_IDENT, @1); $$->ident = $1; }
	| IDENT '(' opt_args ')' { $$ = call(st, $1, @1, $3.head, @$); }
	| block
	;

block
	/* 'chain' '{' item* '}' */
	: CHAIN '{' items '}' { $$ = chain(st, $3.head, false, @1); }
	/* 'concat' '{' branch+ '}' */
	| CONCAT '{' branches '}' { $$ = NODE(EX_CONCAT, @1); $$->merge.branches = $3.head; }
	/* 'add' '{' branch+ '}' */
	| ADD '{' branches '}' { $$ = NODE(EX_ADD, @1); $$->merge.branches = $3.head; }
	/* 'residual' ('(' args? ')')? '{' item* '}' */
	| RESIDUAL '{' items '}' { $$ = NODE(EX_RESIDUAL, @1); $$->residual.items = $3.head; }
	| RESIDUAL '(' opt_args ')' '{' items '}' {
		$$ = NODE(EX_RESIDUAL, @1);
		$$->residual.args = $3.head; $$->residual.items = $6.head;
	}
	/* 'repeat' expr ('as' IDENT)? '{' item* '}' */
	| REPEAT expr '{' items '}' {
		$$ = NODE(EX_REPEAT, @1); $$->repeat.count = $2; $$->repeat.items = $4.head;
	}
	| REPEAT expr AS IDENT '{' items '}' {
		$$ = NODE(EX_REPEAT, @1); $$->repeat.count = $2;
		$$->repeat.var = $4; $$->repeat.var_loc = @4; $$->repeat.items = $6.head;
	}
	| if_block
	;

/* if_block : 'if' expr '{' item* '}' ('else' ('{' item* '}' | if_block))? */
if_block
	: IF expr '{' items '}' {
		$$ = NODE(EX_IF, @1); $$->cond.cond = $2; $$->cond.then_items = $4.head;
	}
	| IF expr '{' items '}' ELSE '{' items '}' {
		$$ = NODE(EX_IF, @1); $$->cond.cond = $2;
		$$->cond.then_items = $4.head; $$->cond.else_items = $8.head;
	}
	| IF expr '{' items '}' ELSE if_block {
		$$ = NODE(EX_IF, @1); $$->cond.cond = $2;
		$$->cond.then_items = $4.head; $$->cond.else_items = new_item(st, NULL, @7, $7);
	}
	;

/* branches : branch+ */
branches
	: branch { $$.head = $$.tail = $1; $1->next_branch = NULL; $$.n = 1; }
	| branches branch { $$ = $1; $$.tail->next_branch = $2; $$.tail = $2; $$.n++; }
	;

/* branch : 'branch' '{' item* '}' */
branch
	: BRANCH '{' items '}' { $$ = chain(st, $3.head, true, @1); }
	;

opt_args
	: %empty { $$.head = $$.tail = NULL; }
	| arg_list
	;

/* args : arg (',' arg)* */
arg_list
	: arg { $$.head = $$.tail = NULL; APPEND($$, $1); }
	| arg_list ',' arg { $$ = $1; APPEND($$, $3); }
	;

/* arg : value | expr '=>' expr | IDENT '=' value */
arg
	: value { $$ = new_arg(st, NULL, @1, $1); }
	| expr ARROW expr {
		Expr *e = NODE(EX_CHANNELS, @$);
		e->channels.from = $1; e->channels.to = $3;
		$$ = new_arg(st, NULL, @1, e);
	}
	| IDENT '=' value { $$ = new_arg(st, $1, @1, $3); }
	;

/* value : expr | block */
value
	: expr
	| block
	;

/* expr_list : expr (',' expr)* */
expr_list
	: expr { $$.head = $$.tail = $1; $1->next_branch = NULL; $$.n = 1; }
	| expr_list ',' expr { $$ = $1; $$.tail->next_branch = $3; $$.tail = $3; $3->next_branch = NULL; $$.n++; }
	;

expr
	: INT { $$ = NODE(EX_INT, @1); $$->ival = $1; }
	| FLOAT { $$ = NODE(EX_FLOAT, @1); $$->fval = $1; }
	| SIZE { $$ = NODE(EX_SIZE, @1); $$->size.h = $1.h; $$->size.w = $1.w; }
	| TRUE { $$ = NODE(EX_BOOL, @1); $$->bval = true; }
	| FALSE { $$ = NODE(EX_BOOL, @1); $$->bval = false; }
	| STRING { $$ = NODE(EX_STRING, @1); $$->str = $1; }
	| IDENT { $$ = NODE(EX_IDENT, @1); $$->ident = $1; }
	| IDENT '(' opt_args ')' { $$ = call(st, $1, @1, $3.head, @$); }
	| '(' expr ')' { $$ = $2; $$->loc = @$; }
	| '(' expr ',' expr_list ')' {
		$$ = NODE(EX_TUPLE, @$);
		$$->tuple.n = $4.n + 1;
		$$->tuple.elems = arena_array(st->arena, (size_t)$$->tuple.n, sizeof(Expr *));
		$$->tuple.elems[0] = $2;
		int i = 1;
		for (Expr *e = $4.head; e; e = e->next_branch) $$->tuple.elems[i++] = e;
		for (i = 0; i < $$->tuple.n; i++)
			if ($$->tuple.elems[i]->depth >= $$->depth) $$->depth = $$->tuple.elems[i]->depth + 1;
		if (too_deep(st, $$)) YYABORT;
	}
	| '-' expr %prec UNARY { $$ = unary(st, BIN_NEG, $2, @$); if (!$$) YYABORT; }
	| '!' expr %prec UNARY { $$ = unary(st, BIN_NOT, $2, @$); if (!$$) YYABORT; }
	| expr '+' expr { $$ = binary(st, BIN_ADD, $1, $3, @$); if (!$$) YYABORT; }
	| expr '-' expr { $$ = binary(st, BIN_SUB, $1, $3, @$); if (!$$) YYABORT; }
	| expr '*' expr { $$ = binary(st, BIN_MUL, $1, $3, @$); if (!$$) YYABORT; }
	| expr '/' expr { $$ = binary(st, BIN_DIV, $1, $3, @$); if (!$$) YYABORT; }
	| expr '%' expr { $$ = binary(st, BIN_MOD, $1, $3, @$); if (!$$) YYABORT; }
	| expr EQ expr { $$ = binary(st, BIN_EQ, $1, $3, @$); if (!$$) YYABORT; }
	| expr NE expr { $$ = binary(st, BIN_NE, $1, $3, @$); if (!$$) YYABORT; }
	| expr '<' expr { $$ = binary(st, BIN_LT, $1, $3, @$); if (!$$) YYABORT; }
	| expr LE expr { $$ = binary(st, BIN_LE, $1, $3, @$); if (!$$) YYABORT; }
	| expr '>' expr { $$ = binary(st, BIN_GT, $1, $3, @$); if (!$$) YYABORT; }
	| expr GE expr { $$ = binary(st, BIN_GE, $1, $3, @$); if (!$$) YYABORT; }
	| expr AND expr { $$ = binary(st, BIN_AND, $1, $3, @$); if (!$$) YYABORT; }
	| expr OR expr { $$ = binary(st, BIN_OR, $1, $3, @$); if (!$$) YYABORT; }
	;

%%

static bool too_deep(LexState *st, Expr *e)
{
	if (e->depth <= MAX_EXPR_DEPTH)
		return false;
	diag_print("error", e->loc, "expression nested too deeply (more than %d levels)", MAX_EXPR_DEPTH);
	st->failed = true;
	return true;
}

static Expr *binary(LexState *st, BinOp op, Expr *a, Expr *b, SrcLoc loc)
{
	Expr *e = NODE(EX_BINARY, loc);
	e->op.op = op;
	e->op.a = a;
	e->op.b = b;
	e->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
	return too_deep(st, e) ? NULL : e;
}

static Expr *unary(LexState *st, BinOp op, Expr *a, SrcLoc loc)
{
	Expr *e = NODE(EX_UNARY, loc);
	e->op.op = op;
	e->op.a = a;
	e->depth = 1 + a->depth;
	return too_deep(st, e) ? NULL : e;
}

static Decl *new_decl(LexState *st, DeclKind kind, SrcLoc loc)
{
	Decl *d = arena_alloc(st->arena, sizeof *d);
	d->kind = kind;
	d->loc = loc;
	return d;
}

static Item *new_item(LexState *st, const char *label, SrcLoc label_loc, Expr *layer)
{
	Item *it = arena_alloc(st->arena, sizeof *it);
	it->label = label;
	it->label_loc = label_loc;
	it->layer = layer;
	return it;
}

static Arg *new_arg(LexState *st, const char *name, SrcLoc name_loc, Expr *value)
{
	Arg *a = arena_alloc(st->arena, sizeof *a);
	a->name = name;
	a->name_loc = name_loc;
	a->value = value;
	return a;
}

static Expr *call(LexState *st, const char *name, SrcLoc name_loc, Arg *args, SrcLoc loc)
{
	Expr *e = NODE(EX_CALL, loc);
	e->call.name = name;
	e->call.name_loc = name_loc;
	e->call.args = args;
	return e;
}

static Expr *chain(LexState *st, Item *items, bool is_branch, SrcLoc loc)
{
	Expr *e = NODE(EX_CHAIN, loc);
	e->chain.items = items;
	e->chain.is_branch = is_branch;
	return e;
}

/* Describe a token for a message: its text where it has one, at most 64 bytes of it. */
static void describe(char *buf, size_t size, LexState *st, yysymbol_kind_t tok)
{
	int len = st->toklen > 64 ? 64 : st->toklen;
	const char *more = st->toklen > 64 ? "..." : "";
	switch (tok) {
	case YYSYMBOL_YYEOF:
		snprintf(buf, size, "end of file");
		break;
	case YYSYMBOL_IDENT:
		snprintf(buf, size, "name '%.*s%s'", len, st->tok, more);
		break;
	case YYSYMBOL_INT:
	case YYSYMBOL_FLOAT:
	case YYSYMBOL_SIZE:
		snprintf(buf, size, "number '%.*s%s'", len, st->tok, more);
		break;
	case YYSYMBOL_STRING:
		snprintf(buf, size, "string %.*s%s", len, st->tok, more);
		break;
	default: {
		const char *name = yysymbol_name(tok);
		size_t n = strlen(name);
		if (n >= 2 && name[0] == '"' && name[n - 1] == '"')
			snprintf(buf, size, "%.*s", (int)n - 2, name + 1);
		else
			snprintf(buf, size, "%s", name);
	}
	}
}

/* Binary operators are almost never what is missing: keep them out of "expected". */
static bool is_operator(yysymbol_kind_t k)
{
	const char *name = yysymbol_name(k);
	static const char *const ops[] = {"'+'", "'-'", "'*'", "'/'", "'%'", "'<'", "'>'", "'=>'",
	                                  "'=='", "'!='", "'<='", "'>='", "'&&'", "'||'"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(name, ops[i]) == 0)
			return true;
	return false;
}

static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, LexState *st)
{
	(void)scanner;
	enum { MAXEXP = 64, MAXSHOWN = 6 };
	yysymbol_kind_t all[MAXEXP], exp[MAXEXP];
	yysymbol_kind_t tok = yypcontext_token(ctx);
	int nall = yypcontext_expected_tokens(ctx, all, MAXEXP), n = 0;
	for (int i = 0; i < nall; i++)
		if (!is_operator(all[i]))
			exp[n++] = all[i];
	char what[96], msg[512];
	describe(what, sizeof what, st, tok);
	int len = snprintf(msg, sizeof msg, "unexpected %s", what);
	if (n > 0 && n <= MAXSHOWN) {
		len += snprintf(msg + len, sizeof msg - (size_t)len, "; expected ");
		for (int i = 0; i < n; i++) {
			char e[64];
			describe(e, sizeof e, st, exp[i]);
			if (exp[i] == YYSYMBOL_IDENT)
				snprintf(e, sizeof e, "a name");
			else if (exp[i] == YYSYMBOL_INT)
				snprintf(e, sizeof e, "an integer");
			else if (exp[i] == YYSYMBOL_FLOAT)
				snprintf(e, sizeof e, "a number");
			else if (exp[i] == YYSYMBOL_SIZE)
				snprintf(e, sizeof e, "a size");
			else if (exp[i] == YYSYMBOL_STRING)
				snprintf(e, sizeof e, "a string");
			else if (exp[i] == YYSYMBOL_YYEOF)
				snprintf(e, sizeof e, "end of file");
			len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s",
			                i == 0 ? "" : i == n - 1 ? " or " : ", ", e);
		}
	}
	diag_print("error", *yypcontext_location(ctx), "%s", msg);
	if (tok == YYSYMBOL_YYEOF && st->nopen > 0)
		note_at(st->open[st->nopen - 1].loc, "'%c' opened here is not closed", st->open[st->nopen - 1].ch);
	st->failed = true;
	return 0;
}

static void yyerror(YYLTYPE *loc, yyscan_t scanner, LexState *st, const char *msg)
{
	(void)scanner;
	if (strcmp(msg, "memory exhausted") == 0)
		diag_print("error", *loc, "input nested too deeply (more than %d levels)", YYMAXDEPTH);
	else
		diag_print("error", *loc, "%s", msg);
	st->failed = true;
}
