/*
 * onnx_fold.c - constants computed from constants (onnx_ir.h's ir_fold).
 *
 * PyTorch's exporter leaves arithmetic on constants in the graph, the
 * more so with do_constant_folding=False: the sizes of a view (Unsqueeze
 * and Concat of scalars), a Linear's weight transposed for MatMul, a
 * causal mask cut from a buffer (Slice, Equal, Cast), a position
 * embedding's rows (Gather at 0..T-1), and Identity where one initializer
 * stands for several equal parameters. Folding them leaves the nodes of
 * the network reading data and constants only. A folded value keeps the
 * initializer it stands for (IrValue.param) and, for a transpose or rows,
 * the constant it came from, so that weights keep their PyTorch names and
 * layout.
 */
#include "onnx_ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_LIST = 64,          /* elements of a folded list of sizes (Unsqueeze, Squeeze, Concat) */
	MAX_FOLD = 1 << 28,     /* elements of any folded constant */
	ONNX_BOOL_TYPE = 9,
	ONNX_FLOAT_TYPE = 1, ONNX_DOUBLE_TYPE = 11, ONNX_FLOAT16_TYPE = 10, ONNX_BFLOAT16_TYPE = 16,
};

/* A new constant of ndim dims for node i's first output (n elements), or NULL when too large. */
static IrConst *new_const(Ir *ir, Arena *a, int i, int ndim, const int64_t *dims)
{
	int64_t n = 1;
	for (int d = 0; d < ndim; d++)
		if (dims[d] < 0 || __builtin_mul_overflow(n, dims[d], &n) || n > MAX_FOLD)
			return NULL;
	IrConst *c = &ir->konst[ir->nkonst];
	*c = (IrConst){.ndim = ndim, .n = n};
	memcpy(c->dims, dims, sizeof(int64_t) * (size_t)ndim);
	c->data = arena_array(a, (size_t)n + 1, sizeof(float));
	IrValue *v = &ir->v[ir->node[i].out[0]];
	v->konst = ir->nkonst++;
	v->producer = -1;
	return c;
}

/* Unsqueeze, Squeeze, Concat (of small lists), Cast, Not: the elements kept (a list's dims flattened). */
static bool fold_list(Ir *ir, Arena *a, int i, const char *op)
{
	IrNode *n = &ir->node[i];
	const IrConst *x = ir_const(ir, n->in[0]);
	bool concat = strcmp(op, "Concat") == 0, same = !strcmp(op, "Cast") || !strcmp(op, "Not");
	int64_t total = 0;
	for (int k = 0; k < (concat ? n->nin : 1); k++)
		total += ir_const(ir, n->in[k])->n;
	if (!same && total > MAX_LIST)
		return false;
	int64_t flat[1] = {total};
	IrConst *c = same ? new_const(ir, a, i, x->ndim, x->dims) : new_const(ir, a, i, 1, flat);
	if (!c)
		return false;
	int64_t at = 0;
	for (int k = 0; k < (concat ? n->nin : 1); k++) {
		const IrConst *in = ir_const(ir, n->in[k]);
		memcpy(c->data + at, in->data, sizeof(float) * (size_t)in->n);
		at += in->n;
	}
	int64_t to = ir_attr_int(n, "to", ONNX_FLOAT_TYPE);
	bool real = to == ONNX_FLOAT_TYPE || to == ONNX_DOUBLE_TYPE || to == ONNX_FLOAT16_TYPE || to == ONNX_BFLOAT16_TYPE;
	for (int64_t e = 0; e < c->n && same; e++)
		c->data[e] = !strcmp(op, "Not") ? (float)(c->data[e] == 0)
		           : to == ONNX_BOOL_TYPE ? (float)(c->data[e] != 0)
		           : real ? c->data[e] : truncf(c->data[e]);
	return true;
}

/* Transpose of a matrix ([in, out] of a Linear's [out, in] weight). */
static bool fold_transpose(Ir *ir, Arena *a, int i, const char *op)
{
	(void)op;
	IrNode *n = &ir->node[i];
	const IrConst *x = ir_const(ir, n->in[0]);
	int64_t perm[2] = {1, 0};
	int np = ir_attr_ints(n, "perm", perm, 2);
	if (x->ndim != 2 || (np && (np != 2 || perm[0] != 1 || perm[1] != 0)))
		return false;
	int64_t dims[2] = {x->dims[1], x->dims[0]};
	IrConst *c = new_const(ir, a, i, 2, dims);
	if (!c)
		return false;
	for (int64_t r = 0; r < x->dims[0]; r++)
		for (int64_t k = 0; k < x->dims[1]; k++)
			c->data[k * x->dims[0] + r] = x->data[r * x->dims[1] + k];
	IrValue *v = &ir->v[n->out[0]];
	v->from_kind = FROM_TRANSPOSE;
	v->from = n->in[0];
	v->param = ir->v[n->in[0]].param;
	return true;
}

/* Slice of a constant by constant starts, ends, axes and positive steps (ONNX's clamping). */
static bool fold_slice(Ir *ir, Arena *a, int i, const char *op)
{
	(void)op;
	IrNode *n = &ir->node[i];
	const IrConst *x = ir_const(ir, n->in[0]), *st = n->nin > 1 ? ir_const(ir, n->in[1]) : NULL,
	              *en = n->nin > 2 ? ir_const(ir, n->in[2]) : NULL, *ax = n->nin > 3 ? ir_const(ir, n->in[3]) : NULL,
	              *sp = n->nin > 4 ? ir_const(ir, n->in[4]) : NULL;
	if (!st || !en || st->n != en->n || (ax && ax->n != st->n) || (sp && sp->n != st->n) || x->ndim < 1)
		return false;
	int64_t lo[IR_MAX_DIMS], step[IR_MAX_DIMS], dims[IR_MAX_DIMS];
	for (int d = 0; d < x->ndim; d++)
		lo[d] = 0, step[d] = 1, dims[d] = x->dims[d];
	for (int64_t k = 0; k < st->n; k++) {
		int64_t d = ax ? ir_int(ax->data[k]) : k, s = sp ? ir_int(sp->data[k]) : 1;
		d += d < 0 ? x->ndim : 0;
		if (d < 0 || d >= x->ndim || s < 1)
			return false;
		double b = (double)ir_int(st->data[k]), e = (double)ir_int(en->data[k]), dim = (double)x->dims[d];
		b = b < 0 ? b + dim : b;
		e = e < 0 ? e + dim : e;
		b = b < 0 ? 0 : b > dim ? dim : b;
		e = e < 0 ? 0 : e > dim ? dim : e;
		lo[d] = (int64_t)b;
		step[d] = s;
		dims[d] = e > b ? ((int64_t)e - lo[d] + s - 1) / s : 0;
	}
	IrConst *c = new_const(ir, a, i, x->ndim, dims);
	if (!c)
		return false;
	for (int64_t e = 0; e < c->n; e++) { /* element e of the slice: its index in x, dimension by dimension */
		int64_t rest = e, at = 0, stride = 1;
		for (int d = x->ndim - 1; d >= 0; d--) {
			int64_t k = rest % dims[d];
			rest /= dims[d];
			at += (lo[d] + k * step[d]) * stride;
			stride *= x->dims[d];
		}
		c->data[e] = x->data[at];
	}
	return true;
}

/* Element op of a and b (b unused by the unary ops). */
static float arith(const char *op, double a, double b)
{
	return (float)(!strcmp(op, "Equal") ? a == b : !strcmp(op, "Add") ? a + b : !strcmp(op, "Sub") ? a - b
	             : !strcmp(op, "Mul") ? a * b : !strcmp(op, "Div") ? a / b : !strcmp(op, "Pow") ? pow(a, b)
	             : !strcmp(op, "Sqrt") ? sqrt(a) : !strcmp(op, "Reciprocal") ? 1 / a : -a);
}

/* Equal and arithmetic of constants (the scale 1/sqrt(head size)), one of two a scalar or both of one shape. */
static bool fold_arith(Ir *ir, Arena *a, int i, const char *op)
{
	IrNode *n = &ir->node[i];
	const IrConst *x = ir_const(ir, n->in[0]), *y = n->nin == 2 ? ir_const(ir, n->in[1]) : x;
	if (n->nin > 2 || !y || !(x->n == y->n || x->n == 1 || y->n == 1))
		return false;
	const IrConst *big = x->n >= y->n ? x : y;
	if (x->n == y->n && (x->ndim != y->ndim || memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)x->ndim)))
		return false;
	IrConst *c = new_const(ir, a, i, big->ndim, big->dims);
	if (!c)
		return false;
	for (int64_t e = 0; e < c->n; e++)
		c->data[e] = arith(op, x->data[x->n == 1 ? 0 : e], y->data[y->n == 1 ? 0 : e]);
	return true;
}

/* Gather along axis 0 of a table by constant indices; rows 0..k-1 in order are FROM_ROWS of the table. */
static bool fold_gather(Ir *ir, Arena *a, int i, const char *op)
{
	(void)op;
	IrNode *n = &ir->node[i];
	const IrConst *x = ir_const(ir, n->in[0]), *idx = n->nin == 2 ? ir_const(ir, n->in[1]) : NULL;
	if (!idx || x->ndim < 1 || ir_attr_int(n, "axis", 0) != 0 || idx->ndim + x->ndim - 1 > IR_MAX_DIMS)
		return false;
	int64_t dims[IR_MAX_DIMS], row = x->dims[0] ? x->n / x->dims[0] : 0;
	memcpy(dims, idx->dims, sizeof(int64_t) * (size_t)idx->ndim);
	memcpy(dims + idx->ndim, x->dims + 1, sizeof(int64_t) * (size_t)(x->ndim - 1));
	for (int64_t e = 0; e < idx->n; e++)
		if (ir_int(idx->data[e]) < -x->dims[0] || ir_int(idx->data[e]) >= x->dims[0])
			return false;
	IrConst *c = new_const(ir, a, i, idx->ndim + x->ndim - 1, dims);
	if (!c)
		return false;
	bool rows = true;
	for (int64_t e = 0; e < idx->n; e++) {
		int64_t r = ir_int(idx->data[e]);
		r += r < 0 ? x->dims[0] : 0;
		rows &= r == e;
		memcpy(c->data + e * row, x->data + r * row, sizeof(float) * (size_t)row);
	}
	IrValue *v = &ir->v[n->out[0]];
	if (rows && idx->ndim == 1) {
		v->from_kind = FROM_ROWS;
		v->from = n->in[0];
		v->param = ir->v[n->in[0]].param;
	}
	return true;
}

/* The same constant under the output's name (PyTorch's name for a parameter it merged with another). */
static bool fold_identity(Ir *ir, Arena *a, int i, const char *op)
{
	(void)a, (void)op;
	IrValue *v = &ir->v[ir->node[i].out[0]];
	v->konst = ir->v[ir->node[i].in[0]].konst;
	v->producer = -1;
	v->param = v->name;
	return true;
}

void ir_fold(Ir *ir, Arena *a)
{
	static const struct {
		const char *op;
		bool (*fold)(Ir *, Arena *, int, const char *);
	} folds[] = {
		{"Identity", fold_identity}, {"Transpose", fold_transpose}, {"Slice", fold_slice}, {"Gather", fold_gather},
		{"Unsqueeze", fold_list},    {"Squeeze", fold_list},       {"Cast", fold_list},   {"Concat", fold_list},
		{"Not", fold_list},          {"Equal", fold_arith},        {"Add", fold_arith},   {"Sub", fold_arith},
		{"Mul", fold_arith},         {"Div", fold_arith},          {"Pow", fold_arith},   {"Sqrt", fold_arith},
		{"Reciprocal", fold_arith},  {"Neg", fold_arith},
	};
	for (int i = 0; i < ir->nnode; i++) {
		IrNode *n = &ir->node[i];
		bool consts = n->nin >= 1 && n->nout == 1 && n->out[0] >= 0;
		for (int k = 0; k < n->nin && consts; k++)
			consts = n->in[k] < 0 ? k > 0 : ir_const(ir, n->in[k]) != NULL;
		for (size_t k = 0; k < sizeof folds / sizeof *folds && consts; k++)
			if (strcmp(n->p->op_type, folds[k].op) == 0) {
				if (folds[k].fold(ir, a, i, folds[k].op))
					n->nout = 0; /* no longer a node of the network */
				break;
			}
	}
}
