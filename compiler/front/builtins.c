/*
 * builtins.c - the language's built-in layers (dense, conv, pools, norms,
 * embeddings, activations, attention, ...): each checks its arguments
 * and its input's shape, makes its weights and adds its nodes. The table
 * at the end names them and their parameters; elaborate.c applies them.
 */
#include "elab.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "util.h"

/* ---- built-in layers: argument access ------------------------------- */

int64_t elab_want_int(const Value *v, const char *param, const char *layer)
{
	if (v->kind != V_INT)
		error_at(v->loc, "'%s' of %s must be an integer, not %s", param, layer, elab_kind_name(v->kind));
	return v->i;
}

static int small_int(const Value *v, int64_t x, int64_t min, const char *param, const char *layer)
{
	if (x < min)
		error_at(v->loc, "'%s' of %s must be %s, got %" PRId64, param, layer,
		         min > 0 ? "positive" : "non-negative", x);
	if (x > MAX_WINDOW)
		error_at(v->loc, "'%s' of %s is too large (%" PRId64 " > %d)", param, layer, x, MAX_WINDOW);
	return (int)x;
}

/* An integer or (h, w) pair argument, each part at least `min`. */
static void want_pair(const Value *v, int *h, int *w, int64_t min, const char *param, const char *layer)
{
	if (v->kind == V_INT) {
		*h = *w = small_int(v, v->i, min, param, layer);
	} else if (v->kind == V_PAIR) {
		*h = small_int(v, v->p.a, min, param, layer);
		*w = small_int(v, v->p.b, min, param, layer);
	} else {
		error_at(v->loc, "'%s' of %s must be an integer or a pair such as 3x3 or (1, 7), not %s", param,
		         layer, elab_kind_name(v->kind));
	}
}

double elab_want_float(const Value *v, const char *param, const char *layer)
{
	if (v->kind == V_INT)
		return (double)v->i;
	if (v->kind != V_FLOAT)
		error_at(v->loc, "'%s' of %s must be a number, not %s", param, layer, elab_kind_name(v->kind));
	return v->f;
}

bool elab_want_bool(const Value *v, const char *param, const char *layer)
{
	if (v->kind != V_BOOL)
		error_at(v->loc, "'%s' of %s must be true or false, not %s", param, layer, elab_kind_name(v->kind));
	return v->b;
}

/* The channel pair `in => out` of dense and conv. */
static void want_channels(const Value *v, int64_t *in, int64_t *out, const char *layer)
{
	if (v->kind != V_CHANNELS)
		error_at(v->loc, "%s expects its channels as 'in => out', not %s", layer, elab_kind_name(v->kind));
	if (v->p.a <= 0 || v->p.b <= 0)
		error_at(v->loc, "channels of %s must be positive, got %" PRId64 " => %" PRId64, layer, v->p.a, v->p.b);
	*in = v->p.a;
	*out = v->p.b;
}

static Value *need(Value **args, int i, const Builtin *b, SrcLoc loc)
{
	if (!args[i])
		error_at(loc, "%s needs its '%s' argument", b->name, b->params[i]);
	return args[i];
}

static Tensor *new_weight(Ctx *c, const char *path, const char *what, int ndim, const int64_t *d, SrcLoc loc)
{
	const char *name = elab_join(c, path, what);
	Shape shape = shape_make(ndim, d);
	Tensor *t = graph_tensor(c->g, TENSOR_WEIGHT, name, shape, loc);
	if (!t) {
		char buf[128];
		error_at(loc, "parameter '%s' of shape %s is too large: its size in bytes overflows 64 bits", name,
		         shape_str(shape, buf, sizeof buf));
	}
	return t;
}

/* Add a node, reporting a shape error as a diagnostic at the layer. */
Tensor *elab_add_node(Ctx *c, Op op, Tensor **in, int nin, const Attrs *attr, const char *kind,
                        const char *path, SrcLoc loc)
{
	if (c->g->nodes.n >= MAX_NODES)
		error_at(loc, "network too large: more than %d nodes", MAX_NODES);
	for (int k = 0; k < nin; k++)
		if (in[k]->dtype == DT_I32 && !(op == OP_EMBEDDING && k == 0) && !(op == OP_SOFTMAX_XENT_IDS && k == 1))
			error_at(loc, "%s '%s' expects values but gets the integer ids %s; ids go through an embedding first",
			         kind, path, elab_type_str(c, in[k]));
	char err[512];
	Node *n = autocast_inputs(c->g, &c->autocast, op, in, nin, loc, err, sizeof err)
	          ? graph_node(c->g, op, in, nin, attr, TENSOR_ACTIVATION, path, loc, err, sizeof err) : NULL;
	if (!n)
		error_at(loc, "%s '%s': %s", kind, path, err);
	return n->out[0];
}

/* Apply the optional activation argument `act` after a layer. */
static Tensor *apply_act(Ctx *c, Value *act, Tensor *y, const char *path, SrcLoc loc)
{
	if (!act)
		return y;
	if (act->kind != V_LAYER)
		error_at(act->loc, "the activation must be a layer such as relu, not %s", elab_kind_name(act->kind));
	const char *kind = act->layer.decl ? act->layer.decl->name
	                 : act->layer.builtin ? act->layer.builtin->name : "act";
	return elab_apply_value(c, act, y, elab_scope_new(c, elab_join(c, path, kind)), loc);
}

static void need_4d(const Builtin *b, const char *path, Tensor *x, SrcLoc loc, Ctx *c)
{
	if (x->shape.ndim != 4)
		error_at(loc, "%s '%s' expects an input [N, C, H, W] but got %s", b->name, path, elab_type_str(c, x));
}

/* ---- built-in layers ------------------------------------------------- */

/*
 * The weight of layer `path` (as the graph names it: "wte" for a label wte
 * in the network's chain), for a layer that ties its weight to it.
 */
static Tensor *tied_weight(Ctx *c, const Value *v, const char *layer, const char *path)
{
	if (v->kind != V_STRING)
		error_at(v->loc, "'tie' of %s must name a layer as a string (tie = \"wte\"), not %s", layer,
		         elab_kind_name(v->kind));
	const char *name = elab_join(c, v->s, "weight");
	for (int i = 0; i < c->g->tensors.n; i++) {
		Tensor *t = c->g->tensors.v[i];
		if (t->kind == TENSOR_WEIGHT && strcmp(t->name, name) == 0)
			return t;
	}
	error_at(v->loc, "%s '%s' ties its weight to '%s', but no layer before it has a weight '%s'", layer, path,
	         v->s, name);
}

/* dense(in => out, act = identity, bias = true, tie = "layer") */
static Tensor *b_dense(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	int64_t in, out;
	want_channels(need(args, 0, b, loc), &in, &out, "dense");
	bool bias = args[2] ? elab_want_bool(args[2], "bias", "dense") : true;
	if (x->shape.ndim != 2 && x->shape.ndim != 3) {
		error_at(loc, "dense '%s' expects an input [N, %" PRId64 "] or [N, T, %" PRId64 "] but got %s%s", path, in,
		         in, elab_type_str(c, x), x->shape.ndim == 4 ? "; add 'flatten' before it" : "");
	}
	if (x->shape.d[x->shape.ndim - 1] != in)
		error_at(loc, "dense '%s' expects an input [%s%" PRId64 "] but got %s", path,
		         x->shape.ndim == 3 ? "N, T, " : "N, ", in, elab_type_str(c, x));
	Tensor *w;
	if (args[3]) { /* the same tensor: one parameter, its gradient summed over both uses */
		w = tied_weight(c, args[3], "dense", path);
		if (w->shape.ndim != 2 || w->shape.d[0] != out || w->shape.d[1] != in)
			error_at(args[3]->loc,
			         "dense '%s' (%" PRId64 " => %" PRId64 ") needs a weight [%" PRId64 ", %" PRId64
			         "], but the weight it ties to, '%s', is %s",
			         path, in, out, out, in, w->name, elab_type_str(c, w));
	} else {
		w = new_weight(c, path, "weight", 2, (int64_t[]){out, in}, loc);
	}
	Tensor *in_t[3] = {x, w, NULL};
	if (bias)
		in_t[2] = new_weight(c, path, "bias", 1, (int64_t[]){out}, loc);
	Tensor *y = elab_add_node(c, OP_DENSE, in_t, bias ? 3 : 2, NULL, "dense", path, loc);
	return apply_act(c, args[1], y, path, loc);
}

/* conv(kernel, in => out, act = identity, stride = 1, pad = 0, groups = 1, bias = true) */
static Tensor *b_conv(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Attrs a = {.sh = 1, .sw = 1, .groups = 1};
	int64_t in, out;
	want_pair(need(args, 0, b, loc), &a.kh, &a.kw, 1, "kernel", "conv");
	want_channels(need(args, 1, b, loc), &in, &out, "conv");
	if (args[3])
		want_pair(args[3], &a.sh, &a.sw, 1, "stride", "conv");
	if (args[4])
		want_pair(args[4], &a.ph, &a.pw, 0, "pad", "conv");
	if (args[5])
		a.groups = small_int(args[5], elab_want_int(args[5], "groups", "conv"), 1, "groups", "conv");
	bool bias = args[6] ? elab_want_bool(args[6], "bias", "conv") : true;
	if (in % a.groups || out % a.groups)
		error_at(args[5]->loc, "conv '%s': %d groups do not divide %" PRId64 " => %" PRId64 " channels", path,
		         a.groups, in, out);
	need_4d(b, path, x, loc, c);
	if (x->shape.d[1] != in)
		error_at(loc, "conv '%s' expects %" PRId64 " input channels but its input is %s", path, in,
		         elab_type_str(c, x));
	Tensor *in_t[3] = {x, new_weight(c, path, "weight", 4, (int64_t[]){out, in / a.groups, a.kh, a.kw}, loc),
	                   NULL};
	if (bias)
		in_t[2] = new_weight(c, path, "bias", 1, (int64_t[]){out}, loc);
	Tensor *y = elab_add_node(c, OP_CONV2D, in_t, bias ? 3 : 2, &a, "conv", path, loc);
	return apply_act(c, args[2], y, path, loc);
}

/* maxpool(kernel, stride = kernel, pad = 0), avgpool(...) */
static Tensor *b_pool(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Attrs a = {0};
	want_pair(need(args, 0, b, loc), &a.kh, &a.kw, 1, "kernel", b->name);
	a.sh = a.kh;
	a.sw = a.kw;
	if (args[1])
		want_pair(args[1], &a.sh, &a.sw, 1, "stride", b->name);
	if (args[2])
		want_pair(args[2], &a.ph, &a.pw, 0, "pad", b->name);
	need_4d(b, path, x, loc, c);
	return elab_add_node(c, b->op, &x, 1, &a, b->name, path, loc);
}

/* The `eps` argument of a normalisation layer fn, 1e-5 when not given. */
static double want_eps(const Value *v, const char *fn)
{
	if (!v)
		return 1e-5;
	double eps = elab_want_float(v, "eps", fn);
	if (!(eps > 0) || !isfinite(eps))
		error_at(v->loc, "'eps' of %s must be positive", fn);
	return eps;
}

/* batchnorm(eps = 1e-5, momentum = 0.1): momentum is PyTorch's, the running statistics' weight of a batch */
static Tensor *b_batchnorm(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Attrs a = {.eps = want_eps(args[0], "batchnorm"), .momentum = 0.1};
	if (args[1]) {
		a.momentum = elab_want_float(args[1], "momentum", "batchnorm");
		if (!(a.momentum > 0 && a.momentum <= 1))
			error_at(args[1]->loc, "'momentum' of batchnorm must be in (0, 1] (PyTorch's: the weight of a batch)");
	}
	if (x->shape.ndim != 2 && x->shape.ndim != 4)
		error_at(loc, "batchnorm '%s' expects an input [N, C] or [N, C, H, W] but got %s", path,
		         elab_type_str(c, x));
	int64_t ch = x->shape.d[1];
	Tensor *in_t[3] = {x, new_weight(c, path, "weight", 1, &ch, loc), new_weight(c, path, "bias", 1, &ch, loc)};
	(void)b;
	if (c->opt->eval) { /* normalised by the running statistics the training step keeps */
		Tensor *in_e[5] = {in_t[0], in_t[1], in_t[2], NULL, NULL};
		const char *stat[2] = {"running_mean", "running_var"};
		for (int k = 0; k < 2; k++)
			if (!(in_e[3 + k] = graph_tensor(c->g, TENSOR_STATE, elab_join(c, path, stat[k]), shape_make(1, &ch), loc)))
				ICE("%s.%s", path, stat[k]);
		return elab_add_node(c, OP_BATCHNORM_EVAL, in_e, 5, &a, "batchnorm", path, loc);
	}
	Tensor *y = elab_add_node(c, OP_BATCHNORM, in_t, 3, &a, "batchnorm", path, loc);
	tensor_rename(c->g, y->producer->out[1], elab_join(c, path, "mean"));
	tensor_rename(c->g, y->producer->out[2], elab_join(c, path, "var"));
	return y;
}

/* layernorm(eps = 1e-5): over the last dimension */
static Tensor *b_layernorm(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Attrs a = {.eps = want_eps(args[0], "layernorm")};
	(void)b;
	int64_t ch = x->shape.d[x->shape.ndim - 1];
	Tensor *in_t[3] = {x, new_weight(c, path, "weight", 1, &ch, loc), new_weight(c, path, "bias", 1, &ch, loc)};
	Tensor *y = elab_add_node(c, OP_LAYERNORM, in_t, 3, &a, "layernorm", path, loc);
	tensor_rename(c->g, y->producer->out[1], elab_join(c, path, "mean"));
	tensor_rename(c->g, y->producer->out[2], elab_join(c, path, "rstd"));
	return y;
}

/* embedding(vocab => width): a row of the weight [vocab, width] for every integer id */
static Tensor *b_embedding(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	int64_t vocab, width;
	want_channels(need(args, 0, b, loc), &vocab, &width, "embedding");
	if (vocab > MAX_IDS)
		error_at(args[0]->loc, "embedding '%s': at most %d ids, not %" PRId64, path, MAX_IDS, vocab);
	if (x->dtype != DT_I32)
		error_at(loc, "embedding '%s' expects integer ids (an input i32[batch, seq]) but got %s", path,
		         elab_type_str(c, x));
	if (x->shape.ndim + 1 > MAX_DIMS)
		error_at(loc, "embedding '%s': ids %s have too many dimensions", path, elab_type_str(c, x));
	Tensor *in_t[2] = {x, new_weight(c, path, "weight", 2, (int64_t[]){vocab, width}, loc)};
	return elab_add_node(c, OP_EMBEDDING, in_t, 2, NULL, "embedding", path, loc);
}

/* position_embedding(positions => width): adds row t of the weight [positions, width] at position t */
static Tensor *b_position(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	int64_t npos, width;
	want_channels(need(args, 0, b, loc), &npos, &width, "position_embedding");
	if (x->shape.ndim != 3 || !dtype_is_float(x->dtype))
		error_at(loc, "position_embedding '%s' expects an input [N, T, %" PRId64 "] but got %s", path, width,
		         elab_type_str(c, x));
	if (x->shape.d[2] != width)
		error_at(loc, "position_embedding '%s' is %" PRId64 " wide but its input is %s", path, width, elab_type_str(c, x));
	if (x->shape.d[1] > npos)
		error_at(loc, "position_embedding '%s' has %" PRId64 " positions but its input has %" PRId64 " (%s)", path,
		         npos, x->shape.d[1], elab_type_str(c, x));
	Tensor *in_t[2] = {x, new_weight(c, path, "weight", 2, (int64_t[]){npos, width}, loc)};
	return elab_add_node(c, OP_POSITION, in_t, 2, NULL, "position_embedding", path, loc);
}

/* the activations (relu, sigmoid, tanh, gelu), globalavgpool: one op, no arguments */
static Tensor *b_simple(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	if (b->op == OP_GLOBALAVGPOOL)
		need_4d(b, path, x, loc, c);
	return elab_add_node(c, b->op, &x, 1, NULL, b->name, path, loc);
}

static Tensor *b_softmax(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	(void)b;
	if (x->shape.ndim != 2 && x->shape.ndim != 3)
		error_at(loc, "softmax '%s' expects an input [N, C] or [N, T, C] but got %s%s", path, elab_type_str(c, x),
		         x->shape.ndim == 4 ? "; add 'flatten' before it" : "");
	return elab_add_node(c, OP_SOFTMAX, &x, 1, NULL, "softmax", path, loc);
}

static Tensor *b_flatten(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	(void)b;
	if (x->shape.ndim == 2)
		return x; /* already [N, features] */
	Attrs a = {.shape = shape_make(2, (int64_t[]){x->shape.d[0], shape_elems(x->shape) / x->shape.d[0]})};
	return elab_add_node(c, OP_RESHAPE, &x, 1, &a, "flatten", path, loc);
}

/* A dropout of x with probability p and the next mask stream; the identity in evaluation. */
static Tensor *dropout_node(Ctx *c, Tensor *x, double p, const char *path, SrcLoc loc)
{
	Attrs a = {.p = p, .seed = c->ndropout++};
	if (c->opt->eval)
		return x;
	return elab_add_node(c, OP_DROPOUT, &x, 1, &a, "dropout", path, loc);
}

/* dropout(p) */
static Tensor *b_dropout(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *pv = need(args, 0, b, loc);
	double p = elab_want_float(pv, "p", "dropout");
	if (!(p >= 0 && p < 1))
		error_at(pv->loc, "'p' of dropout must be in [0, 1), got %g", p);
	return dropout_node(c, x, p, path, loc);
}

/*
 * attention(heads, p = 0, causal = true): multi-head scaled dot-product
 * self-attention of q, k, v side by side in x [N, T, 3C] (a projection's
 * output) -> [N, T, C]: each of the heads attends over C / heads columns,
 * position t to positions 0..t when causal; p is the dropout of the
 * attention weights. Fused (ElabOptions.fused_attention, without dropout)
 * it is one attention op reading the heads where the projection wrote
 * them, whose only tensor beside its output is the rows' log-sum-exp
 * [N, H, T]; composed, it is graph ops, and the placement sees the scores
 * [N, H, T, T] as tensors it can move or recompute.
 */
static Tensor *b_attention(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *hv = need(args, 0, b, loc);
	int64_t heads = elab_want_int(hv, "heads", "attention");
	double p = args[1] ? elab_want_float(args[1], "p", "attention") : 0;
	bool causal = args[2] ? elab_want_bool(args[2], "causal", "attention") : true;
	if (heads < 1)
		error_at(hv->loc, "'heads' of attention must be positive, got %" PRId64, heads);
	if (!(p >= 0 && p < 1))
		error_at(args[1]->loc, "'p' of attention must be in [0, 1), got %g", p);
	if (x->shape.ndim != 3 || !dtype_is_float(x->dtype) || x->shape.d[2] % 3)
		error_at(loc, "attention '%s' expects q, k and v side by side, an input [N, T, 3 C], but got %s", path,
		         elab_type_str(c, x));
	int64_t n = x->shape.d[0], t = x->shape.d[1], width = x->shape.d[2] / 3;
	if (width % heads)
		error_at(hv->loc, "attention '%s': %" PRId64 " heads do not divide the width %" PRId64 " (input %s)", path,
		         heads, width, elab_type_str(c, x));
	int64_t d = width / heads;
	Shape hs = shape_make(4, (int64_t[]){n, heads, t, d});
	if (c->opt->fused_attention && p == 0) {
		Attrs fa = {.alpha = 1 / sqrt((double)d), .causal = causal, .shape = hs};
		Tensor *y = elab_add_node(c, OP_ATTENTION, &x, 1, &fa, "attention", path, loc);
		tensor_rename(c->g, y->producer->out[1], elab_join(c, path, "lse"));
		return y;
	}
	Tensor *qkv[3];
	static const char *part[3] = {"q", "k", "v"};
	for (int k = 0; k < 3; k++) {
		Attrs a = {.offset = k * width, .shape = hs};
		qkv[k] = elab_add_node(c, OP_SPLIT_HEADS, &x, 1, &a, "attention", elab_join(c, path, part[k]), loc);
	}
	Attrs sa = {.trans_b = true, .alpha = 1 / sqrt((double)d)};
	Tensor *w = elab_add_node(c, OP_MATMUL, (Tensor *[]){qkv[0], qkv[1]}, 2, &sa, "attention",
	                          elab_join(c, path, "scores"), loc);
	w = elab_add_node(c, causal ? OP_CAUSAL_SOFTMAX : OP_SOFTMAX, &w, 1, NULL, "attention",
	                  elab_join(c, path, "weights"), loc);
	if (p > 0)
		w = dropout_node(c, w, p, elab_join(c, path, "dropout"), loc);
	Attrs ma = {.alpha = 1};
	Tensor *y = elab_add_node(c, OP_MATMUL, (Tensor *[]){w, qkv[2]}, 2, &ma, "attention",
	                          elab_join(c, path, "context"), loc);
	return elab_add_node(c, OP_MERGE_HEADS, &y, 1, NULL, "attention", path, loc);
}

/* tokens: an image's positions as a sequence, [N, C, H, W] -> [N, H W, C] (a reshape, then transpose) */
static Tensor *b_tokens(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	need_4d(b, path, x, loc, c);
	const int64_t *d = x->shape.d;
	Attrs a = {.shape = shape_make(3, (int64_t[]){d[0], d[1], d[2] * d[3]})};
	Tensor *y = elab_add_node(c, OP_RESHAPE, &x, 1, &a, "tokens", elab_join(c, path, "flat"), loc);
	return elab_add_node(c, OP_TRANSPOSE, &y, 1, NULL, "tokens", path, loc);
}

/* transpose: [N, A, B] -> [N, B, A] */
static Tensor *b_transpose(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	if (x->shape.ndim != 3)
		error_at(loc, "%s '%s' expects an input [N, A, B] but got %s", b->name, path, elab_type_str(c, x));
	return elab_add_node(c, OP_TRANSPOSE, &x, 1, NULL, b->name, path, loc);
}

/* class_token: a learned token [C] in front of every sequence, [N, T, C] -> [N, T + 1, C] */
static Tensor *b_class_token(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)args;
	if (x->shape.ndim != 3 || !dtype_is_float(x->dtype))
		error_at(loc, "%s '%s' expects an input [N, T, C] but got %s", b->name, path, elab_type_str(c, x));
	int64_t n = x->shape.d[0], ch = x->shape.d[2];
	Tensor *w = new_weight(c, path, "weight", 1, &ch, loc);
	Attrs ba = {.shape = shape_make(3, (int64_t[]){n, 1, ch})};
	Tensor *t = elab_add_node(c, OP_BROADCAST, &w, 1, &ba, b->name, elab_join(c, path, "tokens"), loc);
	Attrs ca = {.axis = 1};
	return elab_add_node(c, OP_CONCAT, (Tensor *[]){t, x}, 2, &ca, b->name, path, loc);
}

/* token(i): token i of every sequence, [N, T, C] -> [N, C] (the class token's output: token(0)) */
static Tensor *b_token(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *iv = need(args, 0, b, loc);
	int64_t i = elab_want_int(iv, "index", b->name);
	if (x->shape.ndim != 3)
		error_at(loc, "%s '%s' expects an input [N, T, C] but got %s", b->name, path, elab_type_str(c, x));
	if (i < 0 || i >= x->shape.d[1])
		error_at(iv->loc, "%s '%s': index %" PRId64 " is not a position of %s", b->name, path, i,
		         elab_type_str(c, x));
	int64_t n = x->shape.d[0], ch = x->shape.d[2];
	Attrs sa = {.axis = 1, .offset = i, .shape = shape_make(3, (int64_t[]){n, 1, ch})};
	Tensor *y = elab_add_node(c, OP_SLICE, &x, 1, &sa, b->name, elab_join(c, path, "slice"), loc);
	Attrs ra = {.shape = shape_make(2, (int64_t[]){n, ch})};
	return elab_add_node(c, OP_RESHAPE, &y, 1, &ra, b->name, path, loc);
}

/* mean(axis): the mean over a dimension after the batch ([N, T, C] -> [N, C] over the tokens: mean(1)) */
static Tensor *b_mean(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *av = need(args, 0, b, loc);
	int64_t ax = elab_want_int(av, "axis", b->name);
	if (ax < 1 || ax >= x->shape.ndim)
		error_at(av->loc, "%s '%s': axis %" PRId64 " is not a dimension of %s after the batch (1 to %d)", b->name,
		         path, ax, elab_type_str(c, x), x->shape.ndim - 1);
	Attrs a = {.axis = (int)ax};
	return elab_add_node(c, OP_MEAN, &x, 1, &a, b->name, path, loc);
}

/*
 * gate(L): the input times L applied to it, L's output repeated over the
 * input's dimensions where it has 1: squeeze-and-excitation's
 * x * sigmoid(fc(relu(fc(pool(x))))) with L = a chain ending in [N, C, 1, 1].
 */
static Tensor *b_gate(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *lv = need(args, 0, b, loc);
	if (lv->kind != V_LAYER)
		error_at(lv->loc, "'layer' of gate must be a layer such as chain { ... }, not %s", elab_kind_name(lv->kind));
	const char *kind = lv->layer.decl ? lv->layer.decl->name : lv->layer.builtin ? lv->layer.builtin->name : "branch";
	Tensor *s = elab_apply_value(c, lv, x, elab_scope_new(c, elab_join(c, path, kind)), loc);
	return elab_add_node(c, OP_MUL, (Tensor *[]){x, s}, 2, NULL, b->name, path, loc);
}

/* clamp(lo, hi): every element into [lo, hi] (torch.clamp; relu6 is clamp(0, 6)) */
static Tensor *b_clamp(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	Value *lv = need(args, 0, b, loc), *hv = need(args, 1, b, loc);
	Attrs a = {.lo = elab_want_float(lv, "lo", b->name), .hi = elab_want_float(hv, "hi", b->name)};
	if (!isfinite(a.lo) || !isfinite(a.hi) || a.lo > a.hi)
		error_at(lv->loc, "clamp '%s': the range [%g, %g] is not a range of finite numbers, lo first", path, a.lo,
		         a.hi);
	return elab_add_node(c, OP_CLAMP, &x, 1, &a, b->name, path, loc);
}

static Tensor *b_identity(Ctx *c, const Builtin *b, Value **args, Tensor *x, const char *path, SrcLoc loc)
{
	(void)c, (void)b, (void)args, (void)path, (void)loc;
	return x;
}

static const Builtin builtins[] = {
	{"dense", {"channels", "act", "bias", "tie"}, b_dense, OP_DENSE},
	{"conv", {"kernel", "channels", "act", "stride", "pad", "groups", "bias"}, b_conv, OP_CONV2D},
	{"maxpool", {"kernel", "stride", "pad"}, b_pool, OP_MAXPOOL},
	{"avgpool", {"kernel", "stride", "pad"}, b_pool, OP_AVGPOOL},
	{"globalavgpool", {NULL}, b_simple, OP_GLOBALAVGPOOL},
	{"batchnorm", {"eps", "momentum"}, b_batchnorm, OP_BATCHNORM},
	{"layernorm", {"eps"}, b_layernorm, OP_LAYERNORM},
	{"embedding", {"channels"}, b_embedding, OP_EMBEDDING},
	{"position_embedding", {"channels"}, b_position, OP_POSITION},
	/* every activation of base/activation.h, by its op (OP_ID) */
#define ACT_BUILTIN(id, name, from) {#name, {NULL}, b_simple, OP_##id},
	ACTIVATIONS(ACT_BUILTIN)
#undef ACT_BUILTIN
	{"softmax", {NULL}, b_softmax, OP_SOFTMAX},
	{"flatten", {NULL}, b_flatten, OP_RESHAPE},
	{"dropout", {"p"}, b_dropout, OP_DROPOUT},
	{"attention", {"heads", "p", "causal"}, b_attention, OP_MERGE_HEADS},
	{"tokens", {NULL}, b_tokens, OP_TRANSPOSE},
	{"transpose", {NULL}, b_transpose, OP_TRANSPOSE},
	{"class_token", {NULL}, b_class_token, OP_CONCAT},
	{"token", {"index"}, b_token, OP_RESHAPE},
	{"mean", {"axis"}, b_mean, OP_MEAN},
	{"gate", {"layer"}, b_gate, OP_MUL},
	{"clamp", {"lo", "hi"}, b_clamp, OP_CLAMP},
	{"identity", {NULL}, b_identity, NUM_OPS},
};

const char *elab_builtin_name(size_t i)
{
	return i < countof(builtins) ? builtins[i].name : NULL;
}

const Builtin *elab_find_builtin(const char *name)
{
	for (size_t i = 0; i < countof(builtins); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return &builtins[i];
	return NULL;
}
