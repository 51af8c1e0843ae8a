/*
 * onnx_match.c - a transformer's layers in the small ops PyTorch exports
 * them as (onnx_match.h).
 *
 * An activation is recognised by what it computes, not by how it is
 * written: the region of elementwise nodes between x and the join is
 * evaluated in double at sample points and compared with each .net
 * activation, so that nn.GELU(approximate='tanh'), nanoGPT's NewGELU and
 * any other arrangement of the same formula import as `gelu`, and the
 * exact (erf) GELU is told apart from it (they differ by up to 5e-4).
 *
 * Attention is recognised by its structure, every value inside read by
 * one node only, with the numbers that decide what it computes checked:
 * the scale is 1/sqrt(head size), and the mask hides exactly the later
 * positions (or there is none).
 */
#include "onnx_match.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool no(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool no(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return false;
}

static bool is(const Ir *ir, int i, const char *op)
{
	return i >= 0 && strcmp(ir->node[i].p->op_type, op) == 0;
}

/* ---- activations ------------------------------------------------------------------ */

enum { SAMPLES = 97, MAX_TAIL = 3 };

static double gelu(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double gelu_erf(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double silu(double x) { return x / (1 + exp(-x)); }
static double hardswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }

/* Node op applied to a and b (b unused by the unary ops), or NAN for an op it does not know. */
static double apply(const char *op, double a, double b)
{
	static const struct { const char *op; int kind; } ops[] = {
		{"Add", 0}, {"Sub", 1}, {"Mul", 2}, {"Div", 3}, {"Pow", 4}, {"Tanh", 5}, {"Sigmoid", 6}, {"Erf", 7},
		{"Sqrt", 8}, {"Neg", 9}, {"Exp", 10}, {"Relu", 11}, {"Max", 12}, {"Min", 13}};
	for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
		if (strcmp(op, ops[k].op) == 0)
			switch (ops[k].kind) {
			case 0: return a + b;
			case 1: return a - b;
			case 2: return a * b;
			case 3: return a / b;
			case 4: return pow(a, b);
			case 5: return tanh(a);
			case 6: return 1 / (1 + exp(-a));
			case 7: return erf(a);
			case 8: return sqrt(a);
			case 9: return -a;
			case 10: return exp(a);
			case 11: return fmax(a, 0);
			case 12: return fmax(a, b);
			default: return fmin(a, b);
			}
	return NAN;
}

/* Whether f at the samples xs is g within float rounding. */
static bool same_fn(const double *f, const double *xs, double (*g)(double))
{
	for (int s = 0; s < SAMPLES; s++)
		if (!(fabs(f[s] - g(xs[s])) <= 1e-5 * (1 + fabs(g(xs[s])))))
			return false;
	return true;
}

/* The .net activation that the samples f at xs are, or NULL. */
static const char *known(const double *f, const double *xs)
{
	return same_fn(f, xs, gelu) ? "gelu" : same_fn(f, xs, silu) ? "silu" : same_fn(f, xs, hardswish) ? "hardswish" : NULL;
}

/* The samples of value v in the region from x (slot 0) on, whose nodes start at `first`: one row per node. */
static double *row(const Ir *ir, double *all, int x, int first, int v)
{
	return all + (size_t)(v == x ? 0 : ir->v[v].producer - first + 1) * SAMPLES;
}

const char *ir_match_activation(const Ir *ir, int x, int j, const bool *reached, int *end, char *why, size_t whylen)
{
	*end = j;
	int first = ir->v[x].uses[0];
	double *all = calloc((size_t)(j - first + 2) * SAMPLES, sizeof(double)), *xs = all;
	why[0] = '\0';
	if (!all)
		return no(why, whylen, "out of memory"), NULL;
	for (int s = 0; s < SAMPLES; s++)
		xs[s] = -8 + 16.0 * s / (SAMPLES - 1);
	const char *name = NULL;
	for (int i = first; i <= j; i++) {
		const IrNode *n = &ir->node[i];
		bool in_region = false;
		for (int k = 0; k < n->nin; k++)
			in_region |= n->in[k] >= 0 && reached[n->in[k]];
		if (!in_region)
			continue;
		if (n->nout != 1 || n->out[0] < 0 || n->nin < 1 || n->nin > 2 || isnan(apply(n->p->op_type, 1, 1)))
			goto out; /* not elementwise arithmetic: not an activation, and nothing to say */
		for (int k = 0; k < n->nin; k++) {
			const IrConst *c = ir_const(ir, n->in[k]);
			if (n->in[k] < 0 || (!reached[n->in[k]] && !(c && c->n == 1)))
				goto out; /* it reads another value or a tensor: a block, not an activation */
		}
		double *y = row(ir, all, x, first, n->out[0]);
		for (int s = 0; s < SAMPLES; s++) {
			double arg[2] = {0, 0};
			for (int k = 0; k < n->nin; k++)
				arg[k] = reached[n->in[k]] ? row(ir, all, x, first, n->in[k])[s] : ir_const(ir, n->in[k])->data[0];
			y[s] = apply(n->p->op_type, arg[0], arg[1]);
		}
	}
	/* the join, then up to MAX_TAIL nodes after it that scale or shift its value (0.5 * (...) of GELU's formula) */
	double *f = row(ir, all, x, first, ir->node[j].out[0]);
	for (int tail = 0;; tail++) {
		if ((name = known(f, xs)) != NULL) {
			*end = j;
			break;
		}
		int r = ir_reader(ir, ir->node[j].out[0]);
		const IrNode *n = r >= 0 ? &ir->node[r] : NULL;
		const IrConst *c = n && n->nin == 2 ? ir_const(ir, n->in[n->in[0] == ir->node[j].out[0] ? 1 : 0]) : NULL;
		if (tail == MAX_TAIL || !c || c->n != 1 || n->nout != 1 || isnan(apply(n->p->op_type, 1, 1))) {
			f = row(ir, all, x, first, ir->node[*end].out[0]);
			if (same_fn(f, xs, gelu_erf)) /* else a block's arithmetic (x + relu(x)): nothing to say */
				no(why, whylen, "the exact GELU (erf); .net's gelu is the tanh approximation: build the model with "
				                "nn.GELU(approximate='tanh') (F.gelu(x, approximate='tanh')) and export it again");
			break;
		}
		bool first_arg = n->in[0] == ir->node[j].out[0];
		for (int s = 0; s < SAMPLES; s++)
			f[s] = first_arg ? apply(n->p->op_type, f[s], c->data[0]) : apply(n->p->op_type, c->data[0], f[s]);
		j = r;
	}
out:
	free(all);
	return name;
}

/* ---- attention ------------------------------------------------------------------- */

/* Node i's first output, or -1. */
static int out0(const Ir *ir, int i)
{
	return i >= 0 && ir->node[i].nout >= 1 ? ir->node[i].out[0] : -1;
}

/* Whether Transpose node i has the permutation p of 4. */
static bool perm_is(const Ir *ir, int i, const int64_t *p)
{
	int64_t got[4];
	return is(ir, i, "Transpose") && ir_attr_ints(&ir->node[i], "perm", got, 4) == 4 && !memcmp(got, p, sizeof got);
}

/* The value after a Reshape to [N, T, H, D] at node r and a Transpose to heads of its output; -1 if not so. */
static int to_heads(const Ir *ir, int r, bool key, long long *heads, long long *size, long long *t)
{
	static const int64_t bhtd[4] = {0, 2, 1, 3}, bhdt[4] = {0, 2, 3, 1}, last2[4] = {0, 1, 3, 2};
	const IrConst *shape = is(ir, r, "Reshape") && ir->node[r].nin == 2 ? ir_const(ir, ir->node[r].in[1]) : NULL;
	if (!shape || shape->n != 4)
		return -1;
	*heads = ir_int(shape->data[2]);
	*size = ir_int(shape->data[3]);
	*t = ir_int(shape->data[1]);
	if (*heads < 1 || *size < 1 || *heads > 1 << 24 || *size > 1 << 24) /* (their product fits) */
		return -1;
	int tr = ir_reader(ir, out0(ir, r));
	if (key && perm_is(ir, tr, bhdt))
		return out0(ir, tr);
	if (!perm_is(ir, tr, bhtd))
		return -1;
	if (!key)
		return out0(ir, tr);
	int tr2 = ir_reader(ir, out0(ir, tr)); /* k.transpose(1, 2) then k.transpose(-2, -1) */
	return perm_is(ir, tr2, last2) ? out0(ir, tr2) : -1;
}

/* The mask M [.., T, T] (leading dimensions 1): whether masked(i, j) (M != 0, or M == 0 when keep) is exactly j > i. */
static bool causal_mask(const IrConst *m, bool keep, long long t)
{
	if (m->ndim < 2 || m->dims[m->ndim - 1] != m->dims[m->ndim - 2] || (t > 0 && m->dims[m->ndim - 1] != t))
		return false;
	int64_t n = m->dims[m->ndim - 1];
	if (m->n != n * n)
		return false;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++)
			if (((m->data[i * n + j] != 0) != keep) != (j > i))
				return false;
	return true;
}

/* The scores from node i on: scale factors, a mask, up to the Softmax; its node, or -1 with why. */
static int scores(const Ir *ir, int i, long long t, double *scale, int *masked, char *why, size_t whylen)
{
	for (int cur = out0(ir, i);;) {
		int r = ir_reader(ir, cur);
		const IrNode *n = r >= 0 ? &ir->node[r] : NULL;
		int other = n && n->nin == 2 ? n->in[n->in[0] == cur ? 1 : 0] : -1;
		const IrConst *c = ir_const(ir, other);
		if (is(ir, r, "Softmax")) {
			long long axis = (long long)ir_attr_int(n, "axis", -1);
			return axis == -1 || axis == 3 ? r : (no(why, whylen, "a softmax over axis %lld, not the keys", axis), -1);
		} else if ((is(ir, r, "Mul") || (is(ir, r, "Div") && n->in[0] == cur)) && c && c->n == 1) {
			*scale *= is(ir, r, "Mul") ? c->data[0] : 1 / (double)c->data[0];
		} else if (is(ir, r, "Where") && n->nin == 3 && !*masked) {
			const IrConst *cond = ir_const(ir, n->in[0]), *fill = ir_const(ir, n->in[n->in[1] == cur ? 2 : 1]);
			bool keep = n->in[1] == cur; /* Where(keep, scores, -inf) */
			if (!cond || !fill || fill->n != 1 || !(fill->data[0] <= -1e4f) || !causal_mask(cond, keep, t))
				return no(why, whylen, "node '%s' (Where): a mask other than causal (every later position hidden "
				                       "by a large negative fill)", n->p->name ? n->p->name : "?"), -1;
			*masked = 1;
		} else if (is(ir, r, "Add") && c && !*masked) {
			IrConst m = *c; /* an additive mask: 0 where seen, <= -1e4 where hidden */
			float *hidden = malloc(sizeof(float) * (size_t)(c->n ? c->n : 1));
			bool ok = hidden != NULL;
			for (int64_t e = 0; ok && e < c->n; e++) {
				ok = c->data[e] == 0 || c->data[e] <= -1e4f;
				hidden[e] = c->data[e] != 0;
			}
			m.data = hidden;
			ok = ok && causal_mask(&m, false, t);
			free(hidden);
			if (!ok)
				return no(why, whylen, "node '%s' (Add): a mask other than causal", n->p->name ? n->p->name : "?"), -1;
			*masked = 1;
		} else {
			return no(why, whylen, "after the scores, node '%s' (%s) is not a scale, a causal mask or the softmax",
			          n ? n->p->name : "?", n ? n->p->op_type : "nothing, or several nodes"), -1;
		}
		cur = out0(ir, r);
	}
}

bool ir_match_attention(const Ir *ir, int split, IrAttention *at, char *why, size_t whylen)
{
	const IrNode *s = &ir->node[split];
	long long h[3], d[3], t[3];
	int qkv[3];
	int64_t axis = ir_attr_int(s, "axis", 0);
	if (s->nout != 3 || (axis != 2 && axis != -1))
		return no(why, whylen, "not a Split into q, k and v along the last axis of [N, T, 3C]");
	for (int k = 0; k < 3; k++)
		if ((qkv[k] = to_heads(ir, ir_reader(ir, s->out[k]), k == 1, &h[k], &d[k], &t[k])) < 0)
			return no(why, whylen, "its output %d is not viewed as [N, T, heads, C/heads] and transposed to heads "
			                       "(%s)", k, k == 1 ? "k to [N, heads, C/heads, T]" : "[N, heads, T, C/heads]");
	if (h[1] != h[0] || h[2] != h[0] || d[1] != d[0] || d[2] != d[0])
		return no(why, whylen, "q, k and v are viewed with different heads");
	const IrConst *sizes = s->nin > 1 ? ir_const(ir, s->in[1]) : NULL;
	int64_t attr[3] = {0, 0, 0};
	int nattr = ir_attr_ints(s, "split", attr, 3);
	for (int k = 0; k < 3; k++)
		if ((sizes && (sizes->n != 3 || sizes->data[k] != h[0] * d[0])) || (nattr && (nattr != 3 || attr[k] != h[0] * d[0])))
			return no(why, whylen, "q, k and v are not 3 equal parts of heads x head size %lld", h[0] * d[0]);
	int mm = ir_reader(ir, qkv[0]);
	if (!is(ir, mm, "MatMul") || ir->node[mm].in[0] != qkv[0] || ir->node[mm].in[1] != qkv[1] || ir_reader(ir, qkv[1]) != mm)
		return no(why, whylen, "q and k^T are not multiplied (q @ k.transpose(-2, -1))");
	double scale = 1;
	int masked = 0, sm = scores(ir, mm, t[0], &scale, &masked, why, whylen);
	if (sm < 0)
		return false;
	if (fabs(scale * sqrt((double)d[0]) - 1) > 1e-5)
		return no(why, whylen, "the scores are scaled by %g, not 1/sqrt(%lld) (.net's attention scales so)", scale,
		          d[0]);
	at->p = 0;
	int w = out0(ir, sm), r = ir_reader(ir, w);
	if (is(ir, r, "Dropout")) {
		const IrConst *ratio = ir->node[r].nin > 1 ? ir_const(ir, ir->node[r].in[1]) : NULL;
		at->p = ratio ? ratio->data[0] : ir_attr_float(&ir->node[r], "ratio", 0.5);
		w = out0(ir, r);
		r = ir_reader(ir, w);
	}
	if (!is(ir, r, "MatMul") || ir->node[r].in[0] != w || ir->node[r].in[1] != qkv[2] || ir_reader(ir, qkv[2]) != r)
		return no(why, whylen, "the weights are not multiplied by v");
	static const int64_t back[4] = {0, 2, 1, 3};
	int tr = ir_reader(ir, out0(ir, r)), view = ir_reader(ir, out0(ir, tr));
	const IrConst *shape = is(ir, view, "Reshape") && ir->node[view].nin == 2 ? ir_const(ir, ir->node[view].in[1]) : NULL;
	if (!perm_is(ir, tr, back) || !shape || shape->n != 3 || shape->data[2] != h[0] * d[0])
		return no(why, whylen, "the heads are not transposed back and viewed as [N, T, C] "
		                       "(y.transpose(1, 2).contiguous().view(N, T, C))");
	*at = (IrAttention){.last = view, .heads = h[0], .causal = masked, .p = at->p};
	return true;
}
