/*
 * autodiff.c - reverse-mode automatic differentiation: the training step.
 *
 * The forward graph ends in the loss. Autodiff walks the forward nodes
 * backwards and, for each node whose output has a gradient, builds the
 * nodes computing the gradients of its inputs, with the same constructor
 * (graph_node) the elaborator uses; so the backward pass is ordinary graph
 * that scheduling, placement and code generation treat like the forward
 * one. One switch case per op.
 *
 * Gradients of a tensor with several users arrive as several
 * contributions; when the tensor's gradient is first needed they are
 * summed by one `add` node (a chain of them beyond the inputs an add
 * takes). A tensor needs a gradient if it is a weight or depends on one
 * (the input does not, unless asked for by gradient checks). Names follow
 * the forward tensor's with `d` before the last component: the gradient
 * of `stage1.conv1.weight` is `stage1.conv1.dweight`, partial
 * contributions are `...dweight.1`, `...dweight.2`; a name that a forward
 * tensor has already gets a prime (`dh'`).
 *
 * The update is the model's optimizer (base/optim.h), as in-place nodes
 * on the weights and their state (a velocity for SGD with momentum,
 * AdamW's two moments); batchnorm's running statistics are updated in
 * place too, after its backward. Each weight is updated as soon as its
 * gradient is complete, i.e. right after the backward of its (first)
 * forward user, so its gradient dies at once; unless the optimizer clips
 * by the global norm, which needs every gradient first: then each
 * gradient's squares are summed when it is complete (grad_sumsq) and the
 * updates come after the whole backward pass.
 */
#include "autodiff.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct Grad {
	VEC(Tensor *) parts; /* contributions, in arrival order */
	bool owned;          /* parts.v[0] was made for this tensor alone (may be renamed) */
	Tensor *sum;         /* the complete gradient, once summed */
	bool done;           /* a weight's: its update (or its norm's part) is emitted */
} Grad;

typedef struct AD {
	Graph *g;         /* the graph being extended */
	Grad *grads;      /* tensor id -> its gradient (forward tensors only) */
	bool *needs;      /* tensor id -> whether it needs a gradient */
	int ntensors;     /* tensors of the forward graph */
	const Node *fwd;  /* forward node being differentiated */
	Tensor *sumsq;    /* clipping: the squared norm of the gradients so far */
	VEC(Tensor *) clipped; /* clipping: the weights whose update waits for the norm */
} AD;

/* "a.b.c" -> "a.b.dc" */
static const char *grad_name(Graph *g, const Tensor *t)
{
	const char *dot = strrchr(t->name, '.');
	if (!dot)
		return arena_printf(g->arena, "d%s", t->name);
	return arena_printf(g->arena, "%.*s.d%s", (int)(dot - t->name), t->name, dot + 1);
}

/* The name a new contribution to t's gradient gets. */
static const char *part_name(AD *ad, const Tensor *t)
{
	Grad *gr = &ad->grads[t->id];
	const char *base = grad_name(ad->g, t);
	if (gr->parts.n == 0)
		return base;
	if (gr->parts.n == 1 && gr->owned)
		tensor_rename(ad->g, gr->parts.v[0], arena_printf(ad->g->arena, "%s.1", base));
	return arena_printf(ad->g->arena, "%s.%d", base, gr->parts.n + 1);
}

static void add_part(AD *ad, const Tensor *t, Tensor *part, bool owned)
{
	Grad *gr = &ad->grads[t->id];
	if (part->dtype != t->dtype) /* a gradient has its value's type (casts convert between them) */
		ICE("the gradient %s of %s is %s, not %s", part->name, t->name, dtype_name(part->dtype),
		    dtype_name(t->dtype));
	if (gr->parts.n == 0)
		gr->owned = owned;
	vec_push(ad->g->arena, &gr->parts, part);
}

/* A backward node of the forward node being differentiated. */
static Node *bwd_node(AD *ad, Op op, Tensor **in, int nin, const Attrs *attr, const char *name)
{
	char err[512];
	const Node *f = ad->fwd;
	Node *n = graph_node(ad->g, op, in, nin, attr, TENSOR_GRADIENT, name, f->loc, err, sizeof err);
	if (!n)
		ICE("autodiff of %s (%s): %s", f->name, op_info[f->op].name, err);
	n->phase = PHASE_BACKWARD;
	return n;
}

/* Build a node whose single output is a contribution to t's gradient. */
static void emit_grad(AD *ad, const Tensor *t, Op op, Tensor **in, int nin, const Attrs *attr)
{
	if (!ad->needs[t->id])
		return;
	Node *n = bwd_node(ad, op, in, nin, attr, part_name(ad, t));
	add_part(ad, t, n->out[0], true);
}

/*
 * The complete gradient of t: its single contribution or their sum. An
 * add takes at most op_info[OP_ADD].max_in inputs, so more contributions
 * (a tensor read by many branches) are summed in a chain of adds, each
 * adding the next ones to the partial sum so far (`dx.sum1`, `dx.sum2`,
 * ..., then `dx`).
 */
static Tensor *grad_of(AD *ad, const Tensor *t)
{
	Grad *gr = &ad->grads[t->id];
	if (gr->sum || gr->parts.n == 0)
		return gr->sum;
	if (gr->parts.n == 1) {
		gr->sum = gr->parts.v[0];
		return gr->sum;
	}
	Graph *g = ad->g;
	const char *name = grad_name(g, t);
	int max_in = op_info[OP_ADD].max_in, next = 0, nsums = 0;
	Tensor *sum = NULL;
	while (next < gr->parts.n) {
		Tensor *in[OP_MAX_ARGS];
		int nin = 0;
		if (sum)
			in[nin++] = sum;
		while (nin < max_in && next < gr->parts.n)
			in[nin++] = gr->parts.v[next++];
		const char *sname = next == gr->parts.n ? name : arena_printf(g->arena, "%s.sum%d", name, ++nsums);
		char err[512];
		Node *n = graph_node(g, OP_ADD, in, nin, NULL, TENSOR_GRADIENT, sname,
		                     t->producer ? t->producer->loc : t->loc, err, sizeof err);
		if (!n)
			ICE("summing the gradient of %s: %s", t->name, err);
		n->phase = PHASE_BACKWARD;
		sum = n->out[0];
	}
	gr->sum = sum;
	return gr->sum;
}

/* Optimizer state of weight w, named after it (PyTorch's buffers: `W.exp_avg`, ...). */
static Tensor *state_of(Graph *g, Tensor *w, const char *what)
{
	Tensor *t = graph_tensor(g, TENSOR_STATE, arena_printf(g->arena, "%s.%s", w->name, what), w->shape, w->loc);
	if (!t)
		ICE("%s of %s", what, w->name);
	return t;
}

/*
 * The update of weight w from its complete gradient dw, by the model's
 * optimizer; sumsq: the squared global norm of all gradients, when the
 * optimizer clips (NULL otherwise).
 */
static void emit_update(AD *ad, Tensor *w, Tensor *dw, Tensor *sumsq)
{
	Graph *g = ad->g;
	const OptimHyper *h = &g->opt.h;
	Attrs a = {.upd = *h};
	Tensor *in[5] = {w, dw};
	int nin = 2;
	Op op = OP_SGD;
	if (h->kind == OPTIM_ADAMW) {
		op = OP_ADAMW;
		in[nin++] = state_of(g, w, "exp_avg");
		in[nin++] = state_of(g, w, "exp_avg_sq");
	} else if (h->momentum > 0) {
		op = OP_SGD_MOMENTUM;
		in[nin++] = state_of(g, w, "velocity");
	}
	if (sumsq)
		in[nin++] = sumsq;
	char err[512];
	Node *n = graph_node(g, op, in, nin, &a, TENSOR_WEIGHT, arena_printf(g->arena, "%s.%s", w->name, g->opt.name),
	                     w->loc, err, sizeof err);
	if (!n)
		ICE("update of %s: %s", w->name, err);
	n->phase = PHASE_UPDATE;
}

/*
 * Weight w's gradient is complete. Without clipping it is applied at
 * once, so that the gradient dies; with clipping its squares are added
 * to the running sum (`dW.sumsq`) and the update waits until every
 * gradient is known (finish_updates).
 */
static void gradient_done(AD *ad, Tensor *w)
{
	Graph *g = ad->g;
	if (ad->grads[w->id].done)
		return;
	ad->grads[w->id].done = true;
	Tensor *dw = grad_of(ad, w);
	if (!dw)
		return; /* does not influence the loss */
	if (!(g->opt.h.clip > 0)) {
		emit_update(ad, w, dw, NULL);
		return;
	}
	Tensor *in[2] = {dw, ad->sumsq};
	char err[512];
	Node *n = graph_node(g, OP_GRAD_SUMSQ, in, ad->sumsq ? 2 : 1, NULL, TENSOR_GRADIENT,
	                     arena_printf(g->arena, "%s.sumsq", dw->name), w->loc, err, sizeof err);
	if (!n)
		ICE("norm of %s: %s", dw->name, err);
	n->phase = PHASE_UPDATE;
	ad->sumsq = n->out[0];
	vec_push(g->arena, &ad->clipped, w);
}

/* With clipping: every weight's update, by the norm of all gradients. */
static void finish_updates(AD *ad)
{
	for (int i = 0; i < ad->clipped.n; i++) {
		Tensor *w = ad->clipped.v[i];
		emit_update(ad, w, grad_of(ad, w), ad->sumsq);
	}
}

/*
 * The running statistics of batchnorm f, updated from its batch mean and
 * variance right after its backward (the last reader of those until now,
 * so they live no longer): state tensors named like PyTorch's buffers
 * beside the layer's weight, `PATH.running_mean`, `PATH.running_var`,
 * `PATH.num_batches_tracked`.
 */
static void emit_batchnorm_stats(AD *ad, const Node *f)
{
	Graph *g = ad->g;
	const char *wname = f->in[1]->name, *dot = strrchr(wname, '.');
	const char *path = dot ? arena_printf(g->arena, "%.*s", (int)(dot - wname), wname) : f->name;
	const char *names[3] = {"running_mean", "running_var", "num_batches_tracked"};
	Tensor *in[5] = {NULL, NULL, NULL, f->out[1], f->out[2]};
	for (int k = 0; k < 3; k++) {
		Shape s = k == 2 ? shape_make(1, (int64_t[]){1}) : f->out[1]->shape;
		in[k] = graph_tensor(g, TENSOR_STATE, arena_printf(g->arena, "%s.%s", path, names[k]), s, f->loc);
		if (!in[k])
			ICE("%s.%s", path, names[k]);
	}
	Attrs a = {.momentum = f->attr.momentum > 0 ? f->attr.momentum : 0.1, .shape = f->in[0]->shape};
	char err[512];
	Node *n = graph_node(g, OP_BATCHNORM_STATS, in, 5, &a, TENSOR_STATE, arena_printf(g->arena, "%s.stats", path),
	                     f->loc, err, sizeof err);
	if (!n)
		ICE("running statistics of %s: %s", f->name, err);
	n->phase = PHASE_UPDATE;
}

/* A contribution to t's gradient: alpha op(x) op(y). */
static void emit_matmul(AD *ad, const Tensor *t, Tensor *x, Tensor *y, bool trans_x, bool trans_y, double alpha)
{
	Attrs a = {.trans_a = trans_x, .trans_b = trans_y, .alpha = alpha};
	emit_grad(ad, t, OP_MATMUL, (Tensor *[]){x, y}, 2, &a);
}

/*
 * The split_heads nodes of tensor x: its forward users, which must all be
 * split_heads taking consecutive column ranges that cover x from column 0
 * (attention's q, k and v of one projection), with nothing reading their
 * outputs before the last of them. Returns how many, into `parts`.
 */
static int split_group(const Tensor *x, const Node **parts)
{
	int n = 0;
	int64_t next = 0, width = x->shape.d[x->shape.ndim - 1];
	for (int i = 0; i < x->users.n; i++) {
		const Node *u = x->users.v[i];
		if (u->phase != PHASE_FORWARD)
			continue;
		const Shape *h = &u->attr.shape;
		if (u->op != OP_SPLIT_HEADS || n == op_info[OP_MERGE_HEADS].max_in || u->attr.offset != next)
			ICE("%s is read by %s, not only by split_heads partitioning it", x->name, u->name);
		next += h->d[1] * h->d[3];
		parts[n++] = u;
	}
	if (next != width)
		ICE("the split_heads of %s cover %lld of its %lld columns", x->name, (long long)next, (long long)width);
	for (int k = 0; k < n; k++)
		for (int i = 0; i < parts[k]->out[0]->users.n; i++)
			if (parts[k]->out[0]->users.v[i]->id < parts[n - 1]->id)
				ICE("%s is read before the last split of %s", parts[k]->out[0]->name, x->name);
	return n;
}

/* f's input k, if a weight whose last contribution f's backward has just made: its update now. */
static void weight_complete(AD *ad, const Node *f, int k)
{
	Tensor *w = f->in[k];
	if (w->kind == TENSOR_WEIGHT && w->users.v[0] == f)
		gradient_done(ad, w);
}

/*
 * The gradients of a convolution or dense layer f with output gradient
 * dy: its weight's (and bias's) and its input's, which are independent.
 * The weight's update must wait for the input's gradient, which reads
 * the weight, so dW lives until then; made first, it lets the input x be
 * read for the last time in this layer before dx exists (x is often read
 * again later, by the gradient of the activation that made it, and need
 * not be fast in between). So the weight's gradient comes first where
 * the weight is no larger than x (convolutions: VGG's first stage at
 * batch 64 reads x, dy and dx of 822 MB each), the input's first where
 * it is larger (VGG's classifier: a 411 MB weight against a 6 MB x).
 */
static void emit_layer_grads(AD *ad, const Node *f, Tensor *dy, Op data_op, Op weight_op, const Attrs *a,
                             const Attrs *bias_attr)
{
	Tensor *x = f->in[0], *w = f->in[1];
	bool weight_first = w->bytes <= x->bytes;
	if (!weight_first)
		emit_grad(ad, x, data_op, (Tensor *[]){dy, w}, 2, a);
	emit_grad(ad, w, weight_op, (Tensor *[]){x, dy}, 2, a);
	if (f->nin == 3) {
		emit_grad(ad, f->in[2], OP_BIAS_GRAD, &dy, 1, bias_attr);
		weight_complete(ad, f, 2);
	}
	if (weight_first)
		emit_grad(ad, x, data_op, (Tensor *[]){dy, w}, 2, a);
}

/* dense: dx (dense_bwd_data) and dw (dense_bwd_weight), and db over the rows (bias_grad). */
static void grad_dense(AD *ad, const Node *f, Tensor *dy)
{
	Attrs b = {.axis = dy->shape.ndim > 2 ? dy->shape.ndim - 1 : 0}; /* the last dimension's (0: 1) */
	emit_layer_grads(ad, f, dy, OP_DENSE_BWD_DATA, OP_DENSE_BWD_WEIGHT, NULL, &b);
}

/* batchnorm, layernorm: one node gives all three gradients; outputs not needed are named anyway. */
static void grad_norm(AD *ad, const Node *f, Tensor *dy)
{
	Graph *g = ad->g;
	Tensor *x = f->in[0];
	const Attrs *fa = &f->attr;
	/* One node gives all three gradients; outputs not needed are named anyway. */
	Tensor *in[5] = {x, f->in[1], f->out[1], f->out[2], dy};
	Node *n = bwd_node(ad, f->op == OP_BATCHNORM ? OP_BATCHNORM_BWD : OP_LAYERNORM_BWD, in, 5, fa,
	                   arena_printf(g->arena, "%s.bwd", f->name));
	for (int k = 0; k < 3; k++) {
		const Tensor *t = k == 0 ? x : f->in[k];
		if (k == 0 && !ad->needs[t->id]) {
			tensor_rename(g, n->out[0], arena_printf(g->arena, "%s.unused", grad_name(g, x)));
			continue;
		}
		tensor_rename(g, n->out[k], part_name(ad, t));
		add_part(ad, t, n->out[k], true);
	}
	if (f->op == OP_BATCHNORM)
		emit_batchnorm_stats(ad, f);
}

/* An activation: the gradient op of ops.def's act column reads y or x, and dy. */
static void grad_activation(AD *ad, const Node *f, Tensor *dy)
{
	Tensor *x = f->in[0];
	Act act = op_info[f->op].act;
	Tensor *saved = act_from(act) == ACT_FROM_X ? x : f->out[0];
	emit_grad(ad, x, op_grad_of_act(act), (Tensor *[]){saved, dy}, 2, NULL);
}

/* concat: each input's gradient is its slice of dy. */
static void grad_concat(AD *ad, const Node *f, Tensor *dy)
{
	const Attrs *fa = &f->attr;
	int64_t off = 0;
	for (int k = 0; k < f->nin; k++) {
		Attrs s = {.axis = fa->axis, .offset = off, .shape = f->in[k]->shape};
		emit_grad(ad, f->in[k], OP_SLICE, &dy, 1, &s);
		off += f->in[k]->shape.d[fa->axis];
	}
}

/* c = alpha op(a) op(b): each gradient is a product of dc with the other factor. */
static void grad_matmul(AD *ad, const Node *f, Tensor *dy)
{
	const Attrs *fa = &f->attr;
	/* c = alpha op(a) op(b): each gradient is a product of dc with the other factor */
	Tensor *A = f->in[0], *B = f->in[1];
	bool ta = fa->trans_a, tb = fa->trans_b;
	if (!ta)
		emit_matmul(ad, A, dy, B, false, !tb, fa->alpha);
	else
		emit_matmul(ad, A, B, dy, tb, true, fa->alpha);
	if (!tb)
		emit_matmul(ad, B, A, dy, !ta, false, fa->alpha);
	else
		emit_matmul(ad, B, dy, A, true, ta, fa->alpha);
}

/* split_heads: the splits of one tensor get one gradient, their gradients' heads merged. */
static void grad_split_heads(AD *ad, const Node *f)
{
	Tensor *x = f->in[0];
	/* The splits of one tensor get one gradient: their gradients' heads merged, made
	   when the last split (the first one met here) is differentiated. */
	const Node *parts[OP_MAX_ARGS];
	int n = split_group(x, parts);
	if (parts[n - 1] != f || !ad->needs[x->id])
		return;
	Tensor *in[OP_MAX_ARGS];
	for (int k = 0; k < n; k++)
		if (!(in[k] = grad_of(ad, parts[k]->out[0])))
			ICE("%s has no gradient", parts[k]->out[0]->name);
	emit_grad(ad, x, OP_MERGE_HEADS, in, n, NULL);
}

/* merge_heads: each input's gradient is its heads split off dy. */
static void grad_merge_heads(AD *ad, const Node *f, Tensor *dy)
{
	int64_t off = 0;
	for (int k = 0; k < f->nin; k++) {
		const Shape *h = &f->in[k]->shape;
		Attrs s = {.offset = off, .shape = *h};
		emit_grad(ad, f->in[k], OP_SPLIT_HEADS, &dy, 1, &s);
		off += h->d[1] * h->d[3];
	}
}

static void differentiate(AD *ad, const Node *f)
{
	Tensor *dy = grad_of(ad, f->out[0]);
	if (!dy)
		return; /* the output does not reach the loss */
	Tensor *x = f->in[0];
	const Attrs *fa = &f->attr;
	Attrs a = *fa;
	switch (f->op) {
	case OP_CONV2D:
		a.shape = x->shape;
		emit_layer_grads(ad, f, dy, OP_CONV2D_BWD_DATA, OP_CONV2D_BWD_FILTER, &a, NULL);
		break;
	case OP_DENSE:
		grad_dense(ad, f, dy);
		break;
	case OP_EMBEDDING: /* the ids have no gradient */
		a.shape = f->in[1]->shape;
		emit_grad(ad, f->in[1], OP_EMBEDDING_BWD, (Tensor *[]){dy, x}, 2, &a);
		break;
	case OP_POSITION: /* y = x + weight[t]: x's gradient is dy */
		if (ad->needs[x->id])
			add_part(ad, x, dy, false);
		a.shape = f->in[1]->shape;
		emit_grad(ad, f->in[1], OP_POSITION_BWD, &dy, 1, &a);
		break;
	case OP_MAXPOOL:
		emit_grad(ad, x, OP_MAXPOOL_BWD, (Tensor *[]){x, dy}, 2, fa);
		break;
	case OP_AVGPOOL:
		a.shape = x->shape;
		emit_grad(ad, x, OP_AVGPOOL_BWD, &dy, 1, &a);
		break;
	case OP_GLOBALAVGPOOL:
		a.shape = x->shape;
		emit_grad(ad, x, OP_GLOBALAVGPOOL_BWD, &dy, 1, &a);
		break;
	case OP_BATCHNORM:
	case OP_LAYERNORM:
		grad_norm(ad, f, dy);
		break;
	case OP_RELU: /* activations: the gradient op of ops.def's act column reads y or x, and dy */
	case OP_SIGMOID:
	case OP_TANH:
	case OP_GELU:
	case OP_RELU6:
	case OP_HARDSIGMOID:
	case OP_HARDSWISH:
	case OP_SILU:
		grad_activation(ad, f, dy);
		break;
	case OP_SOFTMAX:
		emit_grad(ad, x, OP_SOFTMAX_BWD, (Tensor *[]){f->out[0], dy}, 2, NULL);
		break;
	case OP_RESHAPE:
		a.shape = x->shape;
		emit_grad(ad, x, OP_RESHAPE, &dy, 1, &a);
		break;
	case OP_DROPOUT:
		emit_grad(ad, x, OP_DROPOUT_BWD, &dy, 1, fa);
		break;
	case OP_ADD:
		/* d(x1 + x2 + ...) / dxi = identity: every input shares dy. */
		for (int k = 0; k < f->nin; k++)
			if (ad->needs[f->in[k]->id])
				add_part(ad, f->in[k], dy, false);
		break;
	case OP_CONCAT:
		grad_concat(ad, f, dy);
		break;
	case OP_MATMUL:
		grad_matmul(ad, f, dy);
		break;
	case OP_SPLIT_HEADS:
		grad_split_heads(ad, f);
		break;
	case OP_MERGE_HEADS:
		grad_merge_heads(ad, f, dy);
		break;
	case OP_CAUSAL_SOFTMAX:
		emit_grad(ad, x, OP_CAUSAL_SOFTMAX_BWD, (Tensor *[]){f->out[0], dy}, 2, NULL);
		break;
	case OP_ATTENTION: /* from its output and the rows' log-sum-exp */
		emit_grad(ad, x, OP_ATTENTION_BWD, (Tensor *[]){x, f->out[0], f->out[1], dy}, 4, fa);
		break;
	case OP_MUL: /* y = x s: dx = dy s (s repeated), ds = dy x summed where s was repeated */
		emit_grad(ad, x, OP_MUL, (Tensor *[]){dy, f->in[1]}, 2, NULL);
		a.shape = f->in[1]->shape;
		emit_grad(ad, f->in[1], OP_MUL_BWD_SCALE, (Tensor *[]){dy, x}, 2, &a);
		break;
	case OP_CLAMP: /* dy where x is in the range (bounds included, as torch.clamp) */
		emit_grad(ad, x, OP_CLAMP_BWD, (Tensor *[]){x, dy}, 2, fa);
		break;
	case OP_MEAN: /* dy spread evenly over the dimension taken away */
		a = *fa;
		a.shape = x->shape;
		emit_grad(ad, x, OP_MEAN_BWD, &dy, 1, &a);
		break;
	case OP_CAST: /* back to the type of x (a bf16 copy's gradient reaches its f32 weight in f32) */
		a.dtype = x->dtype;
		emit_grad(ad, x, OP_CAST, &dy, 1, &a);
		break;
	case OP_TRANSPOSE: /* a swap of two dimensions is its own inverse */
		emit_grad(ad, x, OP_TRANSPOSE, &dy, 1, NULL);
		break;
	case OP_BROADCAST: /* the sum of dy over the repeated dimensions: the last axis kept */
		a.axis = f->out[0]->shape.ndim - 1;
		emit_grad(ad, x, OP_BIAS_GRAD, &dy, 1, &a);
		break;
	case OP_SLICE: /* dy back in its place, zeros around it */
		a = *fa;
		a.shape = x->shape;
		emit_grad(ad, x, OP_SLICE_BWD, &dy, 1, &a);
		break;
	case OP_SOFTMAX_XENT: /* the loss: its gradient starts the backward pass (autodiff below) */
	case OP_SOFTMAX_XENT_IDS:
	case OP_SOFTMAX_XENT_BWD: /* the ops autodiff creates: never differentiated */
	case OP_SOFTMAX_XENT_IDS_BWD:
	case OP_EMBEDDING_BWD:
	case OP_POSITION_BWD:
	case OP_CONV2D_BWD_DATA:
	case OP_CONV2D_BWD_FILTER:
	case OP_BIAS_GRAD:
	case OP_DENSE_BWD_DATA:
	case OP_DENSE_BWD_WEIGHT:
	case OP_MAXPOOL_BWD:
	case OP_AVGPOOL_BWD:
	case OP_GLOBALAVGPOOL_BWD:
	case OP_BATCHNORM_BWD:
	case OP_RELU_BWD:
	case OP_SIGMOID_BWD:
	case OP_TANH_BWD:
	case OP_GELU_BWD:
	case OP_RELU6_BWD:
	case OP_HARDSIGMOID_BWD:
	case OP_HARDSWISH_BWD:
	case OP_SILU_BWD:
	case OP_SOFTMAX_BWD:
	case OP_DROPOUT_BWD:
	case OP_SLICE_BWD:
	case OP_MEAN_BWD:
	case OP_MUL_BWD_SCALE:
	case OP_CLAMP_BWD:
	case OP_GRAD_SUMSQ:
	case OP_SGD:
	case OP_SGD_MOMENTUM:
	case OP_ADAMW:
	case OP_BATCHNORM_STATS:
	case OP_LAYERNORM_BWD:
	case OP_CAUSAL_SOFTMAX_BWD:
	case OP_ATTENTION_BWD:
	case OP_SOFTMAX_XENT_IDS_GRAD: /* made by the fusion pass, after autodiff */
	case OP_DENSE_XENT_IDS_GRAD:
	case OP_ACT_BIAS_GRAD:
	case OP_ALLREDUCE:             /* made by the ranks pass, after autodiff */
	case OP_BATCHNORM_EVAL: /* only in evaluation graphs, which are never differentiated */
	case NUM_OPS:
		ICE("no gradient rule for %s", op_info[f->op].name);
	}
	/* Weights whose last contribution this was get their update now. */
	for (int k = 0; k < f->nin; k++)
		weight_complete(ad, f, k);
}

/*
 * A gradient's name can be a forward tensor's: the gradient of `h` is `dh`,
 * which a layer labelled `dh` beside it names too. Forward names are
 * unique and made of identifiers and dots, and gradient names are unique
 * among themselves, so a prime after such a gradient's name (`dh'`) makes
 * every name unique again.
 */
static void prime_clashing_names(Graph *g)
{
	Tensor **dup = xmalloc(sizeof(Tensor *) * (size_t)(g->tensors.n + 1));
	Tensor **orig = xmalloc(sizeof(Tensor *) * (size_t)(g->tensors.n + 1));
	int n = graph_name_clashes(g, dup, orig);
	for (int k = 0; k < n; k++) {
		if (dup[k]->id < g->nforward_tensors || orig[k]->id >= g->nforward_tensors)
			ICE("tensors %d and %d are both named %s", orig[k]->id, dup[k]->id, dup[k]->name);
		tensor_rename(g, dup[k], arena_printf(g->arena, "%s'", dup[k]->name));
	}
	free(orig);
	free(dup);
}

bool autodiff(Graph *g, const AutodiffOptions *opt)
{
	if (g->training)
		ICE("autodiff applied twice");
	int nfwd = g->nodes.n;
	if (!g->loss || nfwd == 0 || g->nodes.v[nfwd - 1] != g->loss->producer)
		ICE("autodiff needs a forward graph ending in its loss");
	AD ad = {.g = g, .ntensors = g->tensors.n};
	ad.grads = arena_array(g->arena, (size_t)ad.ntensors, sizeof(Grad));
	ad.needs = arena_array(g->arena, (size_t)ad.ntensors, sizeof(bool));
	for (int i = 0; i < ad.ntensors; i++) {
		const Tensor *t = g->tensors.v[i];
		ad.needs[i] = t->kind == TENSOR_WEIGHT ||
		              (t->kind == TENSOR_INPUT && t->dtype != DT_I32 && opt && opt->input_grad);
	}
	for (int i = 0; i < nfwd; i++) {
		const Node *n = g->nodes.v[i];
		bool any = false;
		for (int k = 0; k < n->nin; k++)
			any |= ad.needs[n->in[k]->id];
		for (int k = 0; k < n->nout; k++)
			ad.needs[n->out[k]->id] = any;
	}

	/* The loss: d loss / d logits = (softmax(logits) - labels) / N. */
	const Node *loss = g->loss->producer;
	ad.fwd = loss;
	Tensor *logits = loss->in[0];
	emit_grad(&ad, logits, loss->op == OP_SOFTMAX_XENT_IDS ? OP_SOFTMAX_XENT_IDS_BWD : OP_SOFTMAX_XENT_BWD,
	          (Tensor *[]){logits, loss->in[1]}, 2, NULL);
	for (int i = nfwd - 2; i >= 0; i--) {
		const Node *f = g->nodes.v[i];
		if (!ad.needs[f->out[0]->id])
			continue;
		ad.fwd = f;
		differentiate(&ad, f);
	}
	finish_updates(&ad);
	if (opt && opt->input_grad && ad.needs[g->input->id])
		g->dinput = grad_of(&ad, g->input);
	prime_clashing_names(g);
	g->training = true;
	return true;
}

int64_t autodiff_bytes_bound(const Graph *g, int64_t limit, const Tensor **at)
{
	int64_t total = 0;
	*at = NULL;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		int64_t share;
		if (__builtin_mul_overflow(t->bytes, 2 * ((int64_t)t->users.n + 1), &share) ||
		    __builtin_add_overflow(total, share, &total))
			total = INT64_MAX;
		if (total > limit && !*at)
			*at = t;
	}
	return total;
}
