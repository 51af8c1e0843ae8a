/*
 * onnx_net.c - `autotmc import`: an ONNX model (onnx_ir.h) as a .net file
 * and its weights as safetensors.
 *
 * The network is rebuilt from the data input to the output as .net
 * blocks. A value read by one node that reads no other data becomes the
 * next layer of a chain. A value read by several nodes forks: its
 * branches run until one node joins all of them (found by walking the
 * nodes in their topological order until every open edge leaves one
 * node), which must be an Add (residual { } when one branch is the fork's
 * value itself, else add { branch ... }), a Concat along the channels
 * (concat { branch ... }) or a Mul of the value by a function of it (gate).
 * A graph that is not built of such blocks is refused at the node where
 * it stops fitting, as is any op without a .net layer.
 *
 * Layers with weights are labelled after the module path of their weight
 * initializer (`layer1.0.conv1.weight` gives `layer1_0_conv1: conv(...)`).
 * The weights are then matched to the .net file's parameters by
 * elaborating the generated text: its weights and running statistics in
 * the order the layers create them, which is the order they were
 * written, each checked to have the initializer's shape.
 */
#include "import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/tensorio.h"
#include "elaborate.h"
#include "graph.h"
#include "onnx_ir.h"
#include "onnx_match.h"
#include "outfile.h"
#include "util.h"

/* The labels given in one block. */
typedef VEC(const char *) Labels;

/* A constant to write as a parameter, in the order the .net layers create them. */
typedef struct Param {
	const IrConst *c;
	const char *onnx; /* its initializer's name */
	bool stat;       /* a running statistic (batchnorm's mean or variance), not a weight */
	bool transpose;  /* Gemm with transB = 0: stored [in, out], written [out, in] */
} Param;

typedef struct Cv {
	const Ir *ir;
	Arena *a;
	char *text; /* the .net file so far */
	size_t len, cap;
	int depth;  /* indentation */
	Param *param;
	int nparam, cap_param;
	int blocks; /* blocks written */
	const char *prefix; /* the PyTorch module path of the block being written ("" at the top) */
	const char *path;   /* the .net path of that block's layers ("" at the top, "b1." inside b1) */
	int emb_konst;      /* the token embedding's table (a dense reading it is tied to it), or -1 */
	const char *emb_path; /* its .net path */
	Labels used;        /* the labels given in it */
	char *err;
	size_t errlen;
	bool failed;
} Cv;

static void put(Cv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Cv *c, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(c->text + c->len, c->cap - c->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < c->cap - c->len) {
			c->len += (size_t)n;
			return;
		}
		c->cap = 2 * c->cap + (size_t)(n > 0 ? n : 64);
		c->text = xrealloc(c->text, c->cap);
	}
}

/* Float32 value f as the shortest decimal that reads back as it (0.1, not 0.100000001), in the arena. */
static const char *num(Cv *c, double f)
{
	for (int digits = 6;; digits++) {
		char *t = arena_printf(c->a, "%.*g", digits, f);
		if (digits == 9 || strtof(t, NULL) == (float)f)
			return t;
	}
}

/* A new line at the current depth. */
static void line(Cv *c)
{
	put(c, "\n%*s", 4 * c->depth, "");
}

static bool cv_fail(Cv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool cv_fail(Cv *c, const char *fmt, ...)
{
	if (!c->failed) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	c->failed = true;
	return false;
}

/* Constant value v (konst) as the next parameter, under the initializer it stands for. */
static void add_param(Cv *c, int v, const IrConst *konst, bool stat, bool transpose)
{
	if (c->nparam == c->cap_param) {
		c->cap_param = c->cap_param ? 2 * c->cap_param : 64;
		c->param = xrealloc(c->param, sizeof *c->param * (size_t)c->cap_param);
	}
	const IrValue *val = &c->ir->v[v];
	c->param[c->nparam++] = (Param){konst, val->param ? val->param : val->name, stat, transpose};
}

/* ---- nodes ---------------------------------------------------------------------- */

/* A node as messages name it: node 12 'Conv_12' (Conv) with inputs a, b. */
static const char *who(const Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	char *s = arena_printf(c->a, "node '%s' (%s), inputs", n->p->name && n->p->name[0] ? n->p->name : "?",
	                       n->p->op_type);
	for (int k = 0; k < n->nin; k++)
		s = arena_printf(c->a, "%s%s '%s'", s, k ? "," : "", n->in[k] >= 0 ? c->ir->v[n->in[k]].name : "");
	return s;
}

/* How many of node i's inputs are data (not constants, not empty). */
static int data_inputs(const Ir *ir, int i)
{
	int k = 0;
	for (int j = 0; j < ir->node[i].nin; j++)
		k += ir->node[i].in[j] >= 0 && ir->v[ir->node[i].in[j]].konst < 0;
	return k;
}

/* Node i's data output: its first (batchnorm's running statistics after it must be read by no node). */
static int main_out(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	for (int k = 1; k < n->nout; k++)
		if (n->out[k] >= 0 && c->ir->v[n->out[k]].nuses > 0) {
			cv_fail(c, "%s: its output %d is read by another node; only its first output is a layer's", who(c, i), k);
			return -1;
		}
	if (n->nout < 1 || n->out[0] < 0) {
		cv_fail(c, "%s: no output", who(c, i));
		return -1;
	}
	return n->out[0];
}

/* The first n bytes of s as a .net identifier: '_' for what is not a letter or digit, m_ before a keyword or a digit. */
static const char *identifier(Arena *a, const char *s, size_t n)
{
	static const char *const keywords[] = {"import", "model", "layer", "input", "labels", "loss", "optimizer",
	                                       "chain", "concat", "add", "residual", "branch", "repeat", "as",
	                                       "if", "else", "true", "false"};
	char *id = arena_strndup(a, s, n);
	for (char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '_';
	bool kw = false;
	for (size_t k = 0; k < sizeof keywords / sizeof *keywords; k++)
		kw |= strcmp(id, keywords[k]) == 0;
	return isalpha((unsigned char)id[0]) && !kw ? id : arena_printf(a, "m_%s", id);
}

/* The module path of initializer v (`layer1.0.conv1` of `layer1.0.conv1.weight`), or NULL. */
static const char *module_of(Cv *c, int v)
{
	const char *name = c->ir->v[v].param, *dot = name ? strrchr(name, '.') : NULL;
	if (!dot || dot == name || strncmp(name, "onnx::", 6) == 0)
		return NULL;
	return arena_strndup(c->a, name, (size_t)(dot - name));
}

/* Module path m below the current block's prefix: what follows "PREFIX.", or NULL if m is not below it. */
static const char *below(const Cv *c, const char *m)
{
	size_t n = strlen(c->prefix);
	if (!n)
		return m;
	return strncmp(m, c->prefix, n) == 0 && m[n] == '.' && m[n + 1] ? m + n + 1 : NULL;
}

/* label, made unique among the labels of the current block (label_2, ...). */
static const char *unique_label(Cv *c, const char *label)
{
	const char *l = label;
	for (int k = 2;; k++) {
		bool taken = false;
		for (int i = 0; i < c->used.n && !taken; i++)
			taken = strcmp(c->used.v[i], l) == 0;
		if (!taken)
			break;
		l = arena_printf(c->a, "%s_%d", label, k);
	}
	vec_push(c->a, &c->used, l);
	return l;
}

/*
 * The label of a layer whose weight is initializer v: its module path
 * below the block's (`conv1` in block `layer1_0`; the whole path, '_' for
 * '.', elsewhere), or NULL when the initializer names no module.
 */
static const char *label_of(Cv *c, int v)
{
	const char *m = module_of(c, v), *rel = m ? below(c, m) : NULL;
	if (!m)
		return NULL;
	const char *id = identifier(c->a, rel ? rel : m, strlen(rel ? rel : m));
	return unique_label(c, id);
}

/* The weight of node i where it is a layer with one (a constant), or -1. */
static int weight_of(const Ir *ir, int i)
{
	static const char *const weighted[] = {"Conv", "BatchNormalization", "Gemm", "LayerNormalization", "MatMul"};
	const IrNode *n = &ir->node[i];
	int w = -1;
	for (size_t k = 0; k < sizeof weighted / sizeof *weighted; k++)
		if (strcmp(n->p->op_type, weighted[k]) == 0 && n->nin >= 2)
			w = n->in[1];
	if (strcmp(n->p->op_type, "Gather") == 0 && n->nin == 2)
		w = n->in[0];
	return ir_const(ir, w) ? w : -1;
}

/*
 * The module path in node i's name as PyTorch scopes it ("/h.0/attn/c_attn/MatMul": h.0.attn.c_attn), made
 * a label of the current block, or NULL.
 */
static const char *node_label(Cv *c, int i)
{
	const char *name = c->ir->node[i].p->name, *end = name ? strrchr(name, '/') : NULL;
	if (!end || name[0] != '/' || end == name)
		return NULL;
	char *m = arena_strndup(c->a, name + 1, (size_t)(end - name - 1));
	for (char *q = m; *q; q++)
		*q = *q == '/' ? '.' : *q;
	const char *rel = below(c, m);
	return unique_label(c, identifier(c->a, rel ? rel : m, strlen(rel ? rel : m)));
}

/*
 * A new line for node i, a layer with weight w, labelled after w where it names a module (not when
 * `borrowed`: a tied weight names its owner), else after the node's scope; its label or NULL.
 */
static const char *start_layer(Cv *c, int w, int i, bool borrowed)
{
	const char *label = borrowed ? NULL : label_of(c, w);
	if (!label)
		label = node_label(c, i);
	line(c);
	if (label)
		put(c, "%s: ", label);
	return label;
}

/* Constant input k of node i, which must be there with `ndim` dimensions (0: any). */
static const IrConst *const_in(Cv *c, int i, int k, int ndim, const char *what)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *k_ = k < n->nin ? ir_const(c->ir, n->in[k]) : NULL;
	if (!k_ || (ndim && k_->ndim != ndim)) {
		cv_fail(c, "%s: its %s (input %d) is not a constant of %d dimensions (an initializer)", who(c, i), what, k, ndim);
		return NULL;
	}
	return k_;
}

enum { MAX_WINDOW = 1 << 20 }; /* the largest kernel, stride or pad taken */

/* Kernel [2] and strides [2] in 1..MAX_WINDOW, pads [4] in 0..MAX_WINDOW. */
static bool window_ok(const int64_t *k, const int64_t *s, const int64_t *p)
{
	bool ok = true;
	for (int d = 0; d < 2; d++)
		ok &= k[d] >= 1 && k[d] <= MAX_WINDOW && s[d] >= 1 && s[d] <= MAX_WINDOW;
	for (int d = 0; d < 4; d++)
		ok &= p[d] >= 0 && p[d] <= MAX_WINDOW;
	return ok;
}

/*
 * The height and width of data value v, an NCHW tensor computed from the
 * input by the ops import maps (with PyTorch's rounding of windows: down,
 * or up with ceil_mode); false where they are not known.
 */
static bool spatial(const Cv *c, int v, int64_t hw[2])
{
	const Ir *ir = c->ir;
	if (v == ir->input) {
		hw[0] = ir->in_ndim == 4 ? ir->in_dims[2] : 0;
		hw[1] = ir->in_ndim == 4 ? ir->in_dims[3] : 0;
		return ir->in_ndim == 4;
	}
	int i = ir->v[v].producer;
	if (i < 0 || ir->node[i].nin < 1 || ir->node[i].in[0] < 0 || !spatial(c, ir->node[i].in[0], hw))
		return false;
	const IrNode *n = &ir->node[i];
	const char *op = n->p->op_type;
	if (strcmp(op, "GlobalAveragePool") == 0) {
		hw[0] = hw[1] = 1;
	} else if (strcmp(op, "Conv") == 0 || strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0) {
		int64_t k[2] = {1, 1}, s[2] = {1, 1}, p[4] = {0, 0, 0, 0};
		ir_attr_ints(n, "kernel_shape", k, 2);
		ir_attr_ints(n, "strides", s, 2);
		ir_attr_ints(n, "pads", p, 4);
		bool up = ir_attr_int(n, "ceil_mode", 0) != 0;
		if (!window_ok(k, s, p))
			return false;
		for (int d = 0; d < 2; d++) {
			int64_t span = hw[d] + p[d] + p[d + 2] - k[d];
			if (span < 0)
				return false;
			hw[d] = (up ? (span + s[d] - 1) / s[d] : span / s[d]) + 1;
		}
	} else if (strcmp(op, "Flatten") == 0 || strcmp(op, "Gemm") == 0) {
		return false;
	}
	return true; /* elementwise, batchnorm, concat and add keep the first input's */
}

/* A window's attributes: kernel, strides and symmetric pads as .net's "KHxKW" pairs; false if not expressible. */
static bool window(Cv *c, int i, int64_t *k, int64_t *s, int64_t *p)
{
	const IrNode *n = &c->ir->node[i];
	int64_t d[4] = {1, 1, 1, 1}, pads[4] = {0, 0, 0, 0};
	s[0] = s[1] = 1;
	int nk = ir_attr_ints(n, "kernel_shape", k, 2), ns = ir_attr_ints(n, "strides", s, 2);
	int np = ir_attr_ints(n, "pads", pads, 4), nd = ir_attr_ints(n, "dilations", d, 2);
	const Onnx__AttributeProto *ap = ir_attr(n, "auto_pad");
	bool auto_pad = ap && ap->has_s && !(ap->s.len == 6 && memcmp(ap->s.data, "NOTSET", 6) == 0);
	if (nk != 2 || (ns && ns != 2) || (np && np != 4) || (nd && nd != 2) || d[0] != 1 || d[1] != 1 || auto_pad)
		return cv_fail(c, "%s: not a 2-D window without dilation and auto_pad", who(c, i));
	if (!window_ok(k, s, pads))
		return cv_fail(c, "%s: a kernel, stride or pad out of range", who(c, i));
	if (pads[0] != pads[2] || pads[1] != pads[3])
		return cv_fail(c, "%s: asymmetric padding [%lld, %lld, %lld, %lld]; .net pads both sides alike", who(c, i),
		               (long long)pads[0], (long long)pads[1], (long long)pads[2], (long long)pads[3]);
	int64_t hw[2];
	if (ir_attr_int(n, "ceil_mode", 0) != 0 &&
	    !(spatial(c, n->in[0], hw) && (hw[0] + 2 * pads[0] - k[0]) % s[0] == 0 && (hw[1] + 2 * pads[1] - k[1]) % s[1] == 0))
		return cv_fail(c, "%s: ceil_mode = 1 where rounding up gives another size (.net windows round down; "
		                  "export at an input size whose windows divide evenly)", who(c, i));
	p[0] = pads[0], p[1] = pads[1];
	return true;
}

/* " , stride = 2x2" where not 1, and so on: an optional pair argument. */
static void pair_arg(Cv *c, const char *name, const int64_t *v, int64_t dflt)
{
	if (v[0] != dflt || v[1] != dflt)
		put(c, ", %s = %lldx%lld", name, (long long)v[0], (long long)v[1]);
}

static bool emit_conv(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *w = const_in(c, i, 1, 4, "weight"), *b = n->nin > 2 && n->in[2] >= 0 ? const_in(c, i, 2, 1, "bias") : NULL;
	int64_t k[2], s[2], p[2], g = ir_attr_int(n, "group", 1);
	if (!w || (n->nin > 2 && n->in[2] >= 0 && !b) || !window(c, i, k, s, p))
		return false;
	if (w->dims[2] != k[0] || w->dims[3] != k[1] || g < 1 || g > w->dims[0] || w->dims[0] % g != 0)
		return cv_fail(c, "%s: kernel_shape and group disagree with the weight", who(c, i));
	start_layer(c, n->in[1], i, false);
	put(c, "conv(%lldx%lld, %lld => %lld", (long long)k[0], (long long)k[1], (long long)(w->dims[1] * g),
	    (long long)w->dims[0]);
	pair_arg(c, "stride", s, 1);
	pair_arg(c, "pad", p, 0);
	if (g != 1)
		put(c, ", groups = %lld", (long long)g);
	put(c, "%s)", b ? "" : ", bias = false");
	add_param(c, n->in[1], w, false, false);
	if (b)
		add_param(c, n->in[2], b, false, false);
	return true;
}

static bool emit_batchnorm(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *k[4];
	static const char *const what[4] = {"scale", "bias", "running mean", "running variance"};
	for (int j = 0; j < 4; j++)
		if (!(k[j] = const_in(c, i, 1 + j, 1, what[j])))
			return false;
	/* PyTorch's momentum, from ONNX's float32 1 - momentum, to 6 decimals (0.01, not 0.00999999) */
	double eps = ir_attr_float(n, "epsilon", 1e-5), momentum = round(1e6 * (1 - ir_attr_float(n, "momentum", 0.9))) / 1e6;
	if (!(momentum > 0 && momentum <= 1))
		return cv_fail(c, "%s: momentum %g (ONNX's: the running statistics' own weight); .net's takes a batch's "
		                  "weight in (0, 1]", who(c, i), 1 - momentum);
	start_layer(c, n->in[1], i, false);
	bool eps_dflt = eps > 0.99999e-5 && eps < 1.00001e-5, mom_dflt = momentum > 0.0999 && momentum < 0.1001;
	put(c, "batchnorm");
	if (!eps_dflt || !mom_dflt)
		put(c, "(");
	if (!eps_dflt)
		put(c, "eps = %s%s", num(c, eps), mom_dflt ? "" : ", ");
	if (!mom_dflt)
		put(c, "momentum = %.6g", momentum);
	if (!eps_dflt || !mom_dflt)
		put(c, ")");
	for (int j = 0; j < 4; j++)
		add_param(c, n->in[1 + j], k[j], j >= 2, false);
	return true;
}

static bool emit_gemm(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *w = const_in(c, i, 1, 2, "weight"), *b = n->nin > 2 && n->in[2] >= 0 ? const_in(c, i, 2, 0, "bias") : NULL;
	if (!w || (n->nin > 2 && n->in[2] >= 0 && !b))
		return false;
	bool tb = ir_attr_int(n, "transB", 0) != 0;
	int64_t out = tb ? w->dims[0] : w->dims[1], in = tb ? w->dims[1] : w->dims[0];
	if (ir_attr_int(n, "transA", 0) || ir_attr_float(n, "alpha", 1) != 1 || ir_attr_float(n, "beta", 1) != 1 ||
	    (b && b->n != out))
		return cv_fail(c, "%s: a Gemm other than x W^T + b (transA = 0, alpha = beta = 1, a bias of the outputs)",
		               who(c, i));
	start_layer(c, n->in[1], i, false);
	put(c, "dense(%lld => %lld%s)", (long long)in, (long long)out, b ? "" : ", bias = false");
	add_param(c, n->in[1], w, false, !tb);
	if (b)
		add_param(c, n->in[2], b, false, false);
	return true;
}

static bool emit_pool(Cv *c, int i, const char *kind)
{
	int64_t k[2], s[2], p[2];
	if (!window(c, i, k, s, p))
		return false;
	if (strcmp(kind, "avgpool") == 0 && (p[0] || p[1]) && ir_attr_int(&c->ir->node[i], "count_include_pad", 0) != 1)
		return cv_fail(c, "%s: padding left out of the average (count_include_pad = 0); .net's avgpool counts it",
		               who(c, i));
	line(c);
	put(c, "%s(%lldx%lld", kind, (long long)k[0], (long long)k[1]);
	if (s[0] != k[0] || s[1] != k[1])
		put(c, ", stride = %lldx%lld", (long long)s[0], (long long)s[1]);
	pair_arg(c, "pad", p, 0);
	put(c, ")");
	return true;
}

/* A constant scalar input k of node i (Clip's bounds, Dropout's ratio), or dflt when absent. */
static bool scalar_in(Cv *c, int i, int k, double dflt, double *out)
{
	const IrNode *n = &c->ir->node[i];
	if (k >= n->nin || n->in[k] < 0) {
		*out = dflt;
		return true;
	}
	const IrConst *v = ir_const(c->ir, n->in[k]);
	if (!v || v->n != 1)
		return cv_fail(c, "%s: input %d is not a constant scalar", who(c, i), k);
	*out = v->data[0];
	return true;
}

/* ---- a transformer's layers ------------------------------------------------------ */

/* An embedding of the token ids: Gather(table, ids). */
static bool emit_embedding(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *w = const_in(c, i, 0, 2, "table");
	if (!w)
		return false;
	if (n->in[1] != c->ir->input || !c->ir->input_ids || ir_attr_int(n, "axis", 0) != 0)
		return cv_fail(c, "%s: a Gather other than of rows of a table by the graph's token ids (an embedding)",
		               who(c, i));
	const char *label = start_layer(c, n->in[0], i, false);
	if (!label) {
		label = unique_label(c, "embedding");
		put(c, "%s: ", label);
	}
	put(c, "embedding(%lld => %lld)", (long long)w->dims[0], (long long)w->dims[1]);
	add_param(c, n->in[0], w, false, false);
	if (c->emb_konst < 0) {
		c->emb_konst = c->ir->v[n->in[0]].konst;
		c->emb_path = arena_printf(c->a, "%s%s", c->path, label);
	}
	return true;
}

/* Add(x, rows [T, C] of a table [P, C]): a position embedding (the table folded from Gather(wpe, 0..T-1)). */
static bool emit_positions(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	int rv = n->nin == 2 ? n->in[ir_const(c->ir, n->in[0]) ? 0 : 1] : -1;
	const IrConst *rows = ir_const(c->ir, rv);
	int tv = rows && c->ir->v[rv].from_kind == FROM_ROWS ? c->ir->v[rv].from : rv;
	const IrConst *t = ir_const(c->ir, tv);
	bool lead = t && t->ndim == 3 && t->dims[0] == 1; /* nn.Parameter(torch.zeros(1, T, C)) */
	if (!rows || !(t->ndim == 2 || lead) || rows->dims[rows->ndim - 1] != t->dims[t->ndim - 1] ||
	    rows->n > t->n || !(rows->ndim == 2 || (rows->ndim == 3 && rows->dims[0] == 1)))
		return cv_fail(c, "%s: an Add of a constant other than a position embedding's rows [T, C] (the only "
		                  "constant .net adds)", who(c, i));
	start_layer(c, tv, i, false);
	put(c, "position_embedding(%lld => %lld)", (long long)t->dims[t->ndim - 2], (long long)t->dims[t->ndim - 1]);
	add_param(c, tv, t, false, false);
	return true;
}

static bool emit_layernorm(Cv *c, int i)
{
	const IrNode *n = &c->ir->node[i];
	const IrConst *w = const_in(c, i, 1, 1, "scale"), *b = n->nin > 2 && n->in[2] >= 0 ? const_in(c, i, 2, 1, "bias")
	                                                                                   : NULL;
	if (!w || !b)
		return c->failed ? false : cv_fail(c, "%s: a layer norm without a bias (.net's layernorm has one)", who(c, i));
	if (ir_attr_int(n, "axis", -1) != -1)
		return cv_fail(c, "%s: a layer norm over axis %lld; .net's normalises the last dimension (axis -1)",
		               who(c, i), (long long)ir_attr_int(n, "axis", -1));
	double eps = ir_attr_float(n, "epsilon", 1e-5);
	start_layer(c, n->in[1], i, false);
	if (eps > 0.99999e-5 && eps < 1.00001e-5)
		put(c, "layernorm");
	else
		put(c, "layernorm(eps = %s)", num(c, eps));
	add_param(c, n->in[1], w, false, false);
	add_param(c, n->in[2], b, false, false);
	return true;
}

/* Whether m [C, V] is the transpose of table t [V, C]. */
static bool transposes(const IrConst *m, const IrConst *t)
{
	if (m->ndim != 2 || t->ndim != 2 || m->dims[0] != t->dims[1] || m->dims[1] != t->dims[0])
		return false;
	for (int64_t r = 0; r < t->dims[0]; r++)
		for (int64_t k = 0; k < t->dims[1]; k++)
			if (m->data[k * t->dims[0] + r] != t->data[r * t->dims[1] + k])
				return false;
	return true;
}

/*
 * MatMul(x, W^T) and, where the one reader of its output adds a constant
 * of its outputs, that bias: a dense layer (*last: the Add), tied to the
 * token embedding where W is its table.
 */
static bool emit_matmul(Cv *c, int i, int *last)
{
	const Ir *ir = c->ir;
	const IrNode *n = &ir->node[i];
	const IrConst *w = const_in(c, i, 1, 2, "weight");
	if (!w)
		return false;
	const IrValue *wv = &ir->v[n->in[1]];
	bool orig = wv->from_kind == FROM_TRANSPOSE; /* the Linear's [out, in] weight itself, before the Transpose */
	int src = orig ? wv->from : n->in[1];
	int64_t in = w->dims[0], out = w->dims[1];
	int add = ir_reader(ir, n->out[0]), bias = -1;
	if (add >= 0 && strcmp(ir->node[add].p->op_type, "Add") == 0 && ir->node[add].nin == 2) {
		int k = ir->node[add].in[0] == n->out[0] ? 1 : 0;
		const IrConst *b = ir_const(ir, ir->node[add].in[k]);
		if (b && b->ndim == 1 && b->n == out)
			bias = ir->node[add].in[k];
	}
	const IrConst *emb = c->emb_konst >= 0 ? &ir->konst[c->emb_konst] : NULL;
	bool tied = emb && (orig ? ir->v[src].konst == c->emb_konst : transposes(w, emb));
	start_layer(c, src, i, tied);
	put(c, "dense(%lld => %lld%s", (long long)in, (long long)out, bias < 0 ? ", bias = false" : "");
	if (tied)
		put(c, ", tie = \"%s\"", c->emb_path);
	put(c, ")");
	if (!tied)
		add_param(c, src, orig ? ir_const(ir, src) : w, false, !orig);
	if (bias >= 0) {
		add_param(c, bias, ir_const(ir, bias), false, false);
		*last = add;
	}
	return true;
}

static bool emit_attention(Cv *c, int i, int *last)
{
	IrAttention at;
	char why[400];
	if (!ir_match_attention(c->ir, i, &at, why, sizeof why))
		return cv_fail(c, "%s: a Split that does not begin self-attention as autotmc import recognises it: %s",
		               who(c, i), why);
	line(c);
	put(c, "attention(%lld", at.heads);
	if (at.p > 0)
		put(c, ", p = %s", num(c, at.p));
	put(c, "%s)", at.causal ? "" : ", causal = false");
	*last = at.last;
	return true;
}

/* Node i as one of a transformer's layers (*last as emit_node's); *known false where op is none of them. */
static bool emit_sequence_node(Cv *c, int i, int *last, bool *known)
{
	const char *op = c->ir->node[i].p->op_type;
	*known = true;
	if (strcmp(op, "Gather") == 0)
		return emit_embedding(c, i);
	if (strcmp(op, "Add") == 0)
		return emit_positions(c, i);
	if (strcmp(op, "LayerNormalization") == 0)
		return emit_layernorm(c, i);
	if (strcmp(op, "MatMul") == 0)
		return emit_matmul(c, i, last);
	if (strcmp(op, "Split") == 0)
		return emit_attention(c, i, last);
	if (strcmp(op, "ReduceMean") == 0)
		return cv_fail(c, "%s: a mean over an axis, which autotmc import maps to no layer", who(c, i));
	if (strcmp(op, "Gelu") == 0) {
		const Onnx__AttributeProto *ap = ir_attr(&c->ir->node[i], "approximate");
		if (!ap || !ap->has_s || ap->s.len != 4 || memcmp(ap->s.data, "tanh", 4) != 0)
			return cv_fail(c, "%s: the exact GELU (erf); .net's gelu is the tanh approximation (approximate='tanh')",
			               who(c, i));
		line(c);
		put(c, "gelu");
		return true;
	}
	*known = false;
	return false;
}

/* Node i, whose one data input is the value before it, as a layer; *last: the node whose output follows it
 * (i, or a later node the layer takes in); false (and why) if it has none. */
static bool emit_node(Cv *c, int i, int *last)
{
	bool known;
	*last = i;
	bool ok = emit_sequence_node(c, i, last, &known);
	if (known)
		return ok;
	const IrNode *n = &c->ir->node[i];
	const char *op = n->p->op_type;
	static const char *const same[][2] = {{"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"},
	                                      {"HardSwish", "hardswish"}, {"GlobalAveragePool", "globalavgpool"}};
	for (size_t k = 0; k < sizeof same / sizeof *same; k++)
		if (strcmp(op, same[k][0]) == 0) {
			line(c);
			put(c, "%s", same[k][1]);
			return true;
		}
	if (strcmp(op, "Conv") == 0)
		return emit_conv(c, i);
	if (strcmp(op, "BatchNormalization") == 0)
		return emit_batchnorm(c, i);
	if (strcmp(op, "Gemm") == 0)
		return emit_gemm(c, i);
	if (strcmp(op, "MaxPool") == 0)
		return emit_pool(c, i, "maxpool");
	if (strcmp(op, "AveragePool") == 0)
		return emit_pool(c, i, "avgpool");
	if (strcmp(op, "Identity") == 0 || (strcmp(op, "Concat") == 0 && n->nin == 1)) /* a concat of one */
		return true;
	if (strcmp(op, "Pad") == 0) { /* PyTorch pads before some pools: nothing when every pad is 0 */
		const IrConst *p = n->nin > 1 ? ir_const(c->ir, n->in[1]) : NULL;
		int64_t pads[8] = {0};
		int np = p ? (int)(p->n < 8 ? p->n : 8) : ir_attr_ints(n, "pads", pads, 8);
		bool zero = np <= 8;
		for (int k = 0; k < np && k < 8; k++)
			zero &= (p ? p->data[k] : pads[k]) == 0;
		return zero ? true : cv_fail(c, "%s: a Pad of nonzero pads (.net pads inside conv and pooling layers)", who(c, i));
	}
	if (strcmp(op, "Flatten") == 0) {
		if (ir_attr_int(n, "axis", 1) != 1)
			return cv_fail(c, "%s: Flatten with axis %lld (.net's flatten keeps the batch: axis 1)", who(c, i),
			               (long long)ir_attr_int(n, "axis", 1));
		line(c);
		put(c, "flatten");
		return true;
	}
	if (strcmp(op, "Reshape") == 0) { /* x.view(N, -1): flatten */
		const IrConst *shape = n->nin > 1 ? ir_const(c->ir, n->in[1]) : NULL;
		if (!shape || shape->n != 2 || !(shape->data[1] == -1 || shape->data[1] > 0))
			return cv_fail(c, "%s: a Reshape other than to [batch, -1] (a flatten); export with a fixed batch",
			               who(c, i));
		line(c);
		put(c, "flatten");
		return true;
	}
	if (strcmp(op, "HardSigmoid") == 0) {
		double al = ir_attr_float(n, "alpha", 0.2), be = ir_attr_float(n, "beta", 0.5);
		if (al < 0.16666 || al > 0.16667 || be != 0.5)
			return cv_fail(c, "%s: alpha %g, beta %g; .net's hardsigmoid is PyTorch's (1/6, 1/2)", who(c, i), al, be);
		line(c);
		put(c, "hardsigmoid");
		return true;
	}
	if (strcmp(op, "Clip") == 0) {
		double lo, hi;
		if (!scalar_in(c, i, 1, ir_attr_float(n, "min", -3.4e38), &lo) ||
		    !scalar_in(c, i, 2, ir_attr_float(n, "max", 3.4e38), &hi))
			return false;
		line(c);
		if (lo == 0 && hi == 6)
			put(c, "relu6");
		else
			put(c, "clamp(%s, %s)", num(c, lo), num(c, hi));
		return true;
	}
	if (strcmp(op, "Dropout") == 0) {
		double p;
		if (!scalar_in(c, i, 1, ir_attr_float(n, "ratio", 0.5), &p))
			return false;
		line(c);
		put(c, "dropout(%s)", num(c, p));
		return true;
	}
	return cv_fail(c, "%s: the op %s has no .net layer that autotmc import maps it to (docs/import.md lists those "
	                  "it does)", who(c, i), op);
}

/* ---- structure ---------------------------------------------------------------------- */

static bool seq(Cv *c, int from, int to);
static bool block_body(Cv *c, int v, int j, int a, int b, const char *op);

/*
 * The node that joins the branches forking at value v: walking the nodes
 * in order from v's first reader, each reached node takes its reached
 * inputs' edges off the open ones and adds its output's; the join is the
 * first after which every open edge leaves it. -1 if none.
 */
static int join_of(Cv *c, int v, bool *reached)
{
	const Ir *ir = c->ir;
	reached[v] = true;
	int open = ir->v[v].nuses, first = ir->v[v].uses[0];
	for (int i = first; i < ir->nnode; i++) {
		const IrNode *n = &ir->node[i];
		int k = 0;
		for (int j = 0; j < n->nin; j++)
			k += n->in[j] >= 0 && reached[n->in[j]];
		if (!k)
			continue;
		open -= k;
		int out = n->nout > 0 ? n->out[0] : -1, outs = 0;
		if (out < 0)
			return -1;
		for (int o = 0; o < n->nout; o++) /* a Split's outputs are all reached */
			if (n->out[o] >= 0) {
				reached[n->out[o]] = true;
				outs += ir->v[n->out[o]].nuses;
			}
		open += outs;
		if (open == outs && outs == ir->v[out].nuses)
			return i;
	}
	return -1;
}

/* Whether value `to` is computed from value v (a walk over readers, nodes up to to's producer). */
static bool reaches(Cv *c, int v, int to, bool *seen)
{
	if (v == to)
		return true;
	if (seen[v])
		return false;
	seen[v] = true;
	const IrValue *val = &c->ir->v[v];
	for (int k = 0; k < val->nuses; k++) {
		const IrNode *n = &c->ir->node[val->uses[k]];
		if (val->uses[k] > c->ir->v[to].producer)
			continue;
		for (int o = 0; o < n->nout; o++)
			if (n->out[o] >= 0 && reaches(c, n->out[o], to, seen))
				return true;
	}
	return false;
}

/*
 * The layers of one branch from the fork's value v to the join's input
 * `to`: the one reader of v that leads there, then on from its output.
 */
static bool branch_body(Cv *c, int v, int to)
{
	if (v == to)
		return true;
	const IrValue *val = &c->ir->v[v];
	int first = -1;
	for (int k = 0; k < val->nuses; k++) {
		int u = val->uses[k];
		if (u == first || u > c->ir->v[to].producer)
			continue;
		bool *seen = arena_array(c->a, (size_t)c->ir->nv, sizeof(bool));
		const IrNode *n = &c->ir->node[u];
		if (n->nout < 1 || n->out[0] < 0 || !reaches(c, n->out[0], to, seen))
			continue;
		if (first >= 0)
			return cv_fail(c, "%s: a second path from '%s' to '%s' within one branch (not a block .net can write)",
			               who(c, u), val->name, c->ir->v[to].name);
		first = u;
	}
	if (first < 0)
		return cv_fail(c, "'%s' is not computed from '%s'", c->ir->v[to].name, val->name);
	if (data_inputs(c->ir, first) != 1)
		return cv_fail(c, "%s: it reads more than the branch's value at the start of a branch", who(c, first));
	int last;
	if (!emit_node(c, first, &last))
		return false;
	int out = main_out(c, last);
	return out >= 0 && seq(c, out, to);
}

/* One branch of an add or a concat: its body in `branch { }`. */
static bool branch(Cv *c, int v, int to)
{
	line(c);
	put(c, "branch {");
	c->depth++;
	if (v == to) {
		line(c);
		put(c, "identity");
	}
	bool ok = branch_body(c, v, to);
	c->depth--;
	line(c);
	put(c, "}");
	return ok;
}

/*
 * The module path that every weight of the block's nodes (those after the
 * fork's value v whose output `reached` marks, up to the join j) lies below, if it is below the
 * current block's and longer; else NULL.
 */
static const char *block_module(Cv *c, const bool *reached, int v, int j)
{
	const char *common = NULL;
	size_t len = 0;
	for (int i = 0; i <= j; i++) {
		const IrNode *n = &c->ir->node[i];
		int w = weight_of(c->ir, i); /* the layers label_of labels */
		if (w < 0 || n->nout < 1 || n->out[0] < 0 || n->out[0] == v || !reached[n->out[0]])
			continue;
		const char *m = module_of(c, w);
		if (!m)
			continue;
		if (!common) {
			common = m;
			len = strlen(m);
			continue;
		}
		size_t k = 0, whole = 0; /* the common prefix, cut back to whole parts */
		while (k < len && m[k] && m[k] == common[k]) {
			k++;
			if ((k == len || common[k] == '.') && (!m[k] || m[k] == '.'))
				whole = k;
		}
		len = whole;
	}
	if (!common || !len)
		return NULL;
	const char *p = arena_strndup(c->a, common, len);
	return below(c, p) ? p : NULL;
}

/* One entry of a shape list: a constant, or dimension `val` of the fork's value. */
typedef struct Size {
	bool dim;
	int64_t val;
} Size;

enum { MAX_SIZES = 8 };

/*
 * The list of sizes value w holds, computed from the fork's value v by
 * Shape, Gather of a constant index, Unsqueeze, Squeeze, Cast and Concat,
 * as PyTorch exports x.view(x.size(0), -1) with a symbolic batch; into
 * out, the count returned, -1 if w is not such a list.
 */
static int sizes_of(const Cv *c, int w, int v, Size *out)
{
	const Ir *ir = c->ir;
	const IrConst *k = ir_const(ir, w);
	if (k) {
		if (k->n > MAX_SIZES)
			return -1;
		for (int64_t i = 0; i < k->n; i++)
			out[i] = (Size){false, ir_int(k->data[i])};
		return (int)k->n;
	}
	int i = ir->v[w].producer;
	if (i < 0)
		return -1;
	const IrNode *n = &ir->node[i];
	const char *op = n->p->op_type;
	const IrConst *idx = n->nin > 1 ? ir_const(ir, n->in[1]) : NULL;
	if (strcmp(op, "Gather") == 0 && n->nin == 2 && idx && idx->n == 1 && ir->v[n->in[0]].producer >= 0) {
		const IrNode *sh = &ir->node[ir->v[n->in[0]].producer];
		if (strcmp(sh->p->op_type, "Shape") != 0 || sh->in[0] != v || idx->data[0] < 0)
			return -1;
		out[0] = (Size){true, ir_int(idx->data[0])};
		return 1;
	}
	if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0 || strcmp(op, "Cast") == 0)
		return n->nin >= 1 ? sizes_of(c, n->in[0], v, out) : -1;
	if (strcmp(op, "Concat") != 0)
		return -1;
	int total = 0;
	for (int m = 0; m < n->nin; m++) {
		Size part[MAX_SIZES];
		int got = sizes_of(c, n->in[m], v, part);
		if (got < 0 || total + got > MAX_SIZES)
			return -1;
		memcpy(out + total, part, sizeof(Size) * (size_t)got);
		total += got;
	}
	return total;
}

/* A view of v to [its batch, -1] (x.view(x.size(0), -1) with a symbolic batch) at Reshape node j: flatten. */
static bool view_flatten(Cv *c, int v, int j)
{
	const IrNode *n = &c->ir->node[j];
	Size s[MAX_SIZES];
	if (n->nin != 2 || n->in[0] != v || sizes_of(c, n->in[1], v, s) != 2 || !s[0].dim || s[0].val != 0 ||
	    s[1].dim || !(s[1].val == -1 || s[1].val > 0))
		return cv_fail(c, "%s: a Reshape other than to [batch, -1] (a flatten)", who(c, j));
	line(c);
	put(c, "flatten");
	return true;
}

/* The block that forks at v and joins at node j (reached: what lies between): residual, add, concat or gate. */
static bool block(Cv *c, int v, int *jp, const bool *reached)
{
	int j = *jp;
	const IrNode *n = &c->ir->node[j];
	const char *op = n->p->op_type;
	int a = n->nin > 0 ? n->in[0] : -1, b = n->nin > 1 ? n->in[1] : -1;
	char why[400];
	const char *fn = ir_match_activation(c->ir, v, j, reached, jp, why, sizeof why); /* x sigmoid(x), GELU's formula */
	if (fn) {
		line(c);
		put(c, "%s", fn);
		return true;
	}
	if (why[0])
		return cv_fail(c, "%s: %s", who(c, j), why);
	if (data_inputs(c->ir, j) != n->nin)
		return cv_fail(c, "%s: it joins branches and reads a constant too", who(c, j));
	if (strcmp(op, "Reshape") == 0)
		return view_flatten(c, v, j);
	c->blocks++;
	const char *module = block_module(c, reached, v, j), *outer = c->prefix;
	line(c);
	const char *label = unique_label(c, module ? identifier(c->a, below(c, module), strlen(below(c, module)))
	                                           : arena_printf(c->a, "b%d", c->blocks)), *path = c->path;
	put(c, "%s: ", label);
	/* inside, labels are below the block's module, and a namespace of their own */
	Labels used = c->used;
	c->used = (Labels){0};
	if (module)
		c->prefix = module;
	c->path = arena_printf(c->a, "%s%s.", path, label);
	bool ok = block_body(c, v, j, a, b, op);
	c->prefix = outer;
	c->path = path;
	c->used = used;
	return ok;
}

/* The block's keyword and branches (block). */
static bool block_body(Cv *c, int v, int j, int a, int b, const char *op)
{
	const IrNode *n = &c->ir->node[j];
	bool ok;
	if ((strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0) && n->nin == 2 && (a == v) != (b == v)) {
		put(c, "residual {");
		c->depth++;
		ok = branch_body(c, v, a == v ? b : a);
	} else if (strcmp(op, "Add") == 0 || strcmp(op, "Sum") == 0 ||
	           (strcmp(op, "Concat") == 0 && ir_attr_int(n, "axis", 1) == 1)) {
		put(c, "%s {", op[0] == 'C' ? "concat" : "add");
		c->depth++;
		ok = true;
		for (int k = 0; k < n->nin && ok; k++)
			ok = branch(c, v, n->in[k]);
	} else if (strcmp(op, "Mul") == 0 && n->nin == 2 && (a == v) != (b == v)) {
		put(c, "gate(chain {");
		c->depth++;
		ok = branch_body(c, v, a == v ? b : a);
		c->depth--;
		line(c);
		put(c, "})");
		return ok;
	} else {
		return cv_fail(c, "%s: it joins the branches that fork at '%s'; .net joins branches by add, by concat along "
		                  "the channels (axis 1) or by a gate (a Mul of a value by a function of it)",
		               who(c, j), c->ir->v[v].name);
	}
	c->depth--;
	line(c);
	put(c, "}");
	return ok;
}

/* The layers that turn value `from` into value `to`. */
static bool seq(Cv *c, int from, int to)
{
	const Ir *ir = c->ir;
	for (int v = from; v != to && !c->failed;) {
		const IrValue *val = &ir->v[v];
		if (val->nuses == 0)
			return cv_fail(c, "value '%s' is read by no node on the way to the output '%s'", val->name,
			               ir->v[to].name);
		int i = val->uses[0];
		if (val->nuses == 1 && data_inputs(ir, i) == 1) {
			int last;
			if (!emit_node(c, i, &last))
				return false;
			v = main_out(c, last);
			if (v < 0)
				return false;
			continue;
		}
		bool *reached = arena_array(c->a, (size_t)ir->nv, sizeof(bool));
		int j = join_of(c, v, reached);
		if (j < 0 || j > ir->v[to].producer)
			return cv_fail(c, "%s: the branches that fork at '%s' are never joined into one value before '%s'",
			               who(c, i), val->name, ir->v[to].name);
		if (!block(c, v, &j, reached))
			return false;
		v = main_out(c, j);
		if (v < 0)
			return false;
	}
	return !c->failed;
}

/*
 * A concat of a list that extends another concat's list by one, as
 * DenseNet's layers concatenate every feature map before them:
 * Concat(x0, ..., xk) becomes Concat(Concat(x0, ..., xk-1), xk), the same
 * channels in the same order, so that each is a two-branch block.
 */
static void chain_concats(Ir *ir, Arena *a)
{
	int **orig = arena_array(a, (size_t)ir->nnode + 1, sizeof(int *)), *norig = arena_array(a, (size_t)ir->nnode + 1, sizeof(int));
	for (int i = 0; i < ir->nnode; i++) { /* the lists as exported: a later list extends an earlier one as it was */
		norig[i] = ir->node[i].nin;
		orig[i] = arena_array(a, (size_t)norig[i] + 1, sizeof(int));
		memcpy(orig[i], ir->node[i].in, sizeof(int) * (size_t)norig[i]);
	}
	for (int i = 0; i < ir->nnode; i++) {
		IrNode *n = &ir->node[i];
		if (strcmp(n->p->op_type, "Concat") != 0 || n->nin < 2)
			continue;
		for (int j = i - 1; j >= 0; j--) {
			const IrNode *d = &ir->node[j];
			if (strcmp(d->p->op_type, "Concat") != 0 || norig[j] != n->nin - 1 || d->out[0] < 0 ||
			    ir_attr_int(d, "axis", 0) != ir_attr_int(n, "axis", 0) ||
			    memcmp(orig[j], n->in, sizeof(int) * (size_t)norig[j]) != 0)
				continue;
			n->in[0] = d->out[0];
			n->in[1] = n->in[n->nin - 1];
			n->nin = 2;
			break;
		}
	}
	ir_link_uses(ir, a);
}

/* ---- the file and its weights ----------------------------------------------------- */

/* The model's name from the file's: its base name without .onnx, letters, digits and '_'. */
static const char *model_name(Arena *a, const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path, *dot = strrchr(base, '.');
	return identifier(a, base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
}

/* False (and why) where a layer norm is written as its arithmetic, as PyTorch exports it before opset 17. */
static bool layernorm_ops(Cv *c)
{
	const Ir *ir = c->ir;
	for (int i = 0; i < ir->nnode; i++) {
		const IrNode *n = &ir->node[i];
		if (strcmp(n->p->op_type, "ReduceMean") != 0 || n->nin < 1 || n->nout < 1 || n->out[0] < 0)
			continue;
		const IrValue *mean = &ir->v[n->out[0]];
		for (int k = 0; k < mean->nuses; k++) { /* x - mean(x) */
			const IrNode *u = &ir->node[mean->uses[k]];
			if (strcmp(u->p->op_type, "Sub") == 0 && u->nin == 2 && u->in[0] == n->in[0])
				return cv_fail(c, "%s: a layer norm written as its arithmetic (x - mean(x), ...), as PyTorch exports "
				                  "it before opset 17; export with opset_version=17 (one LayerNormalization)", who(c, i));
		}
	}
	return true;
}

static bool write_net(Cv *c, const char *path)
{
	const Ir *ir = c->ir;
	if (!layernorm_ops(c))
		return false;
	int64_t batch = ir->in_dims[0] > 0 ? ir->in_dims[0] : 8;
	put(c, "# imported from %s by autotmc import (%s %s, opset %lld)\n", path,
	    ir->model->producer_name ? ir->model->producer_name : "?",
	    ir->model->producer_version ? ir->model->producer_version : "", (long long)ir->opset);
	put(c, "model %s(batch = %lld)\n\nnetwork = chain {", model_name(c->a, path), (long long)batch);
	c->depth = 1;
	if (!seq(c, ir->input, ir->output))
		return false;
	put(c, "\n}\n\ninput x : %s[batch", ir->input_ids ? "i32" : "f32");
	for (int d = 1; d < ir->in_ndim; d++)
		put(c, ", %lld", (long long)ir->in_dims[d]);
	put(c, "]\nlabels y : class[batch");
	for (int d = 1; d < ir->in_ndim && ir->input_ids; d++) /* a language model: a class at every position */
		put(c, ", %lld", (long long)ir->in_dims[d]);
	put(c, "]\nloss = crossentropy(network(x), y)\noptimizer = sgd(lr = 0.01)\n");
	return true;
}

/* Match the parameters to the .net file's (its evaluation graph: weights and running statistics, in order). */
static bool match_params(Cv *c, const char *net_name, TioOut **out, TioMeta **meta, int *nout)
{
	ElabOptions eo = {.main_text = c->text, .main_len = c->len, .eval = true};
	Graph *g = elaborate(net_name, &eo, c->a);
	if (!g)
		return cv_fail(c, "the imported network does not elaborate (above; %s was not written): the model's shapes "
		                  "disagree, or autotmc import has a bug", net_name);
	TioOut *t = arena_array(c->a, (size_t)c->nparam * 2 + 1, sizeof(TioOut));
	TioMeta *m = arena_array(c->a, (size_t)c->nparam * 2 + 1, sizeof(TioMeta));
	int n = 0, w = 0, s = 0; /* next weight and statistic of c->param */
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *x = g->tensors.v[i];
		bool stat = x->kind == TENSOR_STATE && tensor_is_statistic(x);
		if (x->kind != TENSOR_WEIGHT && !stat)
			continue;
		int *next = stat ? &s : &w;
		while (*next < c->nparam && c->param[*next].stat != stat)
			(*next)++;
		if (*next == c->nparam)
			return cv_fail(c, "the .net file has more parameters than the ONNX model (at '%s'): a bug", x->name);
		const Param *p = &c->param[(*next)++];
		int64_t elems = 1;
		for (int d = 0; d < x->shape.ndim; d++)
			elems *= x->shape.d[d];
		if (elems != p->c->n)
			return cv_fail(c, "'%s': %lld elements in .net, %lld in the ONNX initializer: a bug", x->name,
			               (long long)elems, (long long)p->c->n);
		float *data = p->c->data;
		if (p->transpose) { /* [in, out] -> [out, in] */
			int64_t r = p->c->dims[0], k = p->c->dims[1];
			data = arena_array(c->a, (size_t)p->c->n, sizeof(float));
			for (int64_t a = 0; a < r; a++)
				for (int64_t b = 0; b < k; b++)
					data[b * r + a] = p->c->data[a * k + b];
		}
		m[n] = (TioMeta){(char *)x->name, (char *)p->onnx};
		t[n++] = (TioOut){x->name, x->shape.ndim, x->shape.d, TIO_F32, data};
	}
	for (int i = 0; i < c->nparam; i++)
		if (i >= (c->param[i].stat ? s : w))
			return cv_fail(c, "the ONNX model has parameters the .net file lacks: a bug");
	*out = t;
	*meta = m;
	*nout = n;
	return true;
}

/* The .net text into path (base/outfile.h: atomically, a link followed), or on stdout when NULL. */
static bool write_text(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
	if (path)
		return outfile_write(path, text, len, err, errlen);
	if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
		snprintf(err, errlen, "cannot write the .net file to the standard output: %s", strerror(errno));
		return false;
	}
	return true;
}

int onnx_import(const char *onnx_path, const char *net_path, const char *net_name, const char *weights_path,
                ImportStats *st, char *err, size_t errlen)
{
	Arena a = {0};
	Ir ir;
	int rc = -1;
	Cv c = {.ir = &ir, .a = &a, .err = err, .errlen = errlen, .cap = 4096, .prefix = "", .path = "", .emb_konst = -1};
	c.text = xmalloc(c.cap);
	c.text[0] = '\0';
	TioOut *t = NULL;
	TioMeta *meta = NULL;
	int n = 0;
	if (!onnx_read(onnx_path, &ir, &a, err, errlen))
		goto out;
	ir_fold(&ir, &a);
	chain_concats(&ir, &a);
	if (!write_net(&c, onnx_path) || !match_params(&c, net_name, &t, &meta, &n)) {
		char inner[2048];
		snprintf(inner, sizeof inner, "%s", err);
		snprintf(err, errlen, "%s: %s", onnx_path, inner);
		goto out;
	}
	/* the header's metadata maps each tensor to its initializer in the ONNX file */
	if (weights_path && tio_safetensors_write_meta(weights_path, t, n, meta, n, err, errlen) != 0)
		goto out;
	if (!write_text(net_path, c.text, c.len, err, errlen))
		goto out;
	st->nodes = ir.nnode;
	st->blocks = c.blocks;
	st->tensors = n;
	for (int i = 0; i < n; i++) {
		int64_t e = 1;
		for (int d = 0; d < t[i].ndim; d++)
			e *= t[i].shape[d];
		st->elements += e;
	}
	rc = 0;
out:
	onnx_free(&ir);
	free(c.text);
	free(c.param);
	arena_free(&a);
	return rc;
}
