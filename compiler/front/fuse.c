/*
 * fuse.c - the fusion pass (fuse.h).
 */
#include "fuse.h"

#include <string.h>

#include "util.h"

/* The producer of activation node a's input, if a can be folded into it. */
static Node *foldable(const Graph *g, const Node *a)
{
	Act act = op_info[a->op].act;
	if (a->phase != PHASE_FORWARD || act == ACT_NONE || act_from(act) != ACT_FROM_Y || a->nin != 1 || a->nout != 1)
		return NULL;
	Tensor *z = a->in[0];
	Node *p = z->producer;
	if (!p || p->phase != PHASE_FORWARD || p->out[0] != z || p->attr.post_act != ACT_NONE ||
	    !op_takes_act(p->op, act) || (p->op == OP_ADD && p->nin != 2))
		return NULL;
	if (z->users.n != 1 || z == g->output || z->dtype != a->out[0]->dtype || z->kind != a->out[0]->kind)
		return NULL;
	return p;
}

/* Drop the nodes and tensors marked dead from g's lists, renumbering what stays. */
static void compact(Graph *g, const bool *dead_node, const bool *dead_tensor)
{
	int n = 0, t = 0, nforward = g->nforward, nforward_tensors = g->nforward_tensors;
	for (int i = 0; i < g->nodes.n; i++)
		if (!dead_node[i]) {
			g->nodes.v[n] = g->nodes.v[i];
			g->nodes.v[n]->id = n;
			n++;
		} else if (i < g->nforward) {
			nforward--;
		}
	for (int i = 0; i < g->tensors.n; i++)
		if (!dead_tensor[i]) {
			g->tensors.v[t] = g->tensors.v[i];
			g->tensors.v[t]->id = t;
			t++;
		} else if (i < g->nforward_tensors) {
			nforward_tensors--;
		}
	g->nodes.n = n;
	g->tensors.n = t;
	g->nforward = nforward;
	g->nforward_tensors = nforward_tensors;
}

/* Replace user `from` of t by `to` (t's users stay in graph order: `to` comes right after `from`). */
static void replace_user(Tensor *t, const Node *from, Node *to)
{
	for (int i = 0; i < t->users.n; i++)
		if (t->users.v[i] == from)
			t->users.v[i] = to;
}

/*
 * The gradient of a relu fused onto a batchnorm, folded into batchnorm's
 * backward: r = relu_bwd(y, dy) whose output dz only batchnorm_bwd b
 * reads becomes b's own first step (b reads dy and y; post_act relu).
 * Returns b, or NULL where r is not such a gradient.
 */
static Node *fold_relu_grad(Node *r)
{
	if (r->op != OP_RELU_BWD || r->phase != PHASE_BACKWARD)
		return NULL;
	Tensor *y = r->in[0], *dz = r->out[0];
	const Node *p = y->producer;
	if (!p || p->op != OP_BATCHNORM || p->attr.post_act != ACT_RELU || p->out[0] != y || dz->users.n != 1)
		return NULL;
	Node *b = dz->users.v[0];
	if (b->op != OP_BATCHNORM_BWD || b->nin != 5 || b->in[4] != dz || b->in[0] != p->in[0] ||
	    b->attr.post_act != ACT_NONE || r->in[1]->dtype != dz->dtype)
		return NULL;
	return b;
}

/* Rewrite b to take r's place (fold_relu_grad): b = batchnorm_bwd(x, w, mean, var, dy, y) with post_act relu. */
static void take_relu_grad(Graph *g, Node *r, Node *b)
{
	Tensor *y = r->in[0], *dy = r->in[1];
	Tensor **in = arena_array(g->arena, 6, sizeof(Tensor *));
	for (int k = 0; k < 5; k++)
		in[k] = b->in[k];
	in[4] = dy;
	in[5] = y;
	b->in = in;
	b->nin = 6;
	b->attr.post_act = ACT_RELU;
	replace_user(dy, r, b);
	replace_user(y, r, b);
	r->out[0]->users.n = 0;
	r->out[0]->producer = NULL;
}

/* Drop user `n` of t. */
static void remove_user(Tensor *t, const Node *n)
{
	int k = 0;
	for (int i = 0; i < t->users.n; i++)
		if (t->users.v[i] != n)
			t->users.v[k++] = t->users.v[i];
	t->users.n = k;
}

/*
 * The bias gradient among the users of r's output where r is the gradient
 * of an activation that act_bias_grad takes (those oneDNN's eltwise has:
 * runtime/cpu/actbias.c), else NULL: r and the bias_grad become one node
 * (fold_act_bias).
 */
static Node *act_bias(const Node *r)
{
	Act act = op_info[r->op].act;
	bool eltwise = act == ACT_RELU || act == ACT_SIGMOID || act == ACT_TANH || act == ACT_GELU;
	if (r->phase != PHASE_BACKWARD || op_info[r->op].grad || !eltwise || r->nin != 2 || r->nout != 1 ||
	    r->in[0]->dtype != r->in[1]->dtype || r->out[0]->dtype != r->in[1]->dtype)
		return NULL;
	Tensor *dz = r->out[0];
	for (int i = 0; i < dz->users.n; i++)
		if (dz->users.v[i]->op == OP_BIAS_GRAD && dz->users.v[i]->in[0] == dz)
			return dz->users.v[i];
	return NULL;
}

/* r = act_bwd(saved, dy) and bg = bias_grad(dz) as r = act_bias_grad(saved, dy) -> dz, db; bg dies. */
static void fold_act_bias(Graph *g, Node *r, Node *bg)
{
	Tensor **out = arena_array(g->arena, 2, sizeof(Tensor *));
	out[0] = r->out[0];
	out[1] = bg->out[0];
	out[1]->producer = r;
	r->attr.post_act = op_info[r->op].act;
	r->attr.axis = bg->attr.axis;
	r->op = OP_ACT_BIAS_GRAD;
	r->out = out;
	r->nout = 2;
	remove_user(out[0], bg);
}

/* Make n a user of t, t's users kept in graph order. */
static void insert_user(Graph *g, Tensor *t, Node *n)
{
	vec_push(g->arena, &t->users, n);
	int k = t->users.n - 1;
	for (; k > 0 && t->users.v[k - 1]->id > n->id; k--)
		t->users.v[k] = t->users.v[k - 1];
	t->users.v[k] = n;
}

/*
 * Whether b can add a tensor to its first output: it has no sum input yet,
 * and one more input would be one (base/ops.h's op_sum_input: a dense
 * with its bias, dropout and the normalisations' gradients); dropout and
 * dense in the forward pass only (their gradients have no sum).
 */
static bool sums(const Node *b)
{
	bool fwd_only = b->op == OP_DROPOUT || b->op == OP_DENSE;
	return op_sum_input(b->op, b->nin + 1, b->attr.post_act) == b->nin &&
	       (!fwd_only || b->phase == PHASE_FORWARD);
}

/*
 * A sum s = add(a, dx) of two where node b wrote dx and only s reads it:
 * b adds a to dx itself (its sum input). b is a batchnorm_bwd or a
 * layernorm_bwd (a gradient sum: a densenet's, a residual's), or a
 * forward dropout (a residual branch's end). Where b is a batchnorm_bwd
 * and a is channels 0..C-1 of a wider gradient G (slice along axis 1 at
 * offset 0, read only by s: a concatenation's gradient, as in a
 * densenet), b reads them from G and the slice goes too. a (or G) must
 * exist before b runs. Returns b, or NULL where s is not such a sum;
 * *window says whether a's slice goes.
 */
static Node *summed_by(const Node *s, bool *window)
{
	if (s->op != OP_ADD || s->nin != 2 || s->attr.post_act != ACT_NONE || s->in[0] == s->in[1])
		return NULL;
	for (int j = 0; j < 2; j++) {
		Tensor *dx = s->in[j], *a = s->in[1 - j];
		Node *b = dx->producer, *slice = a->producer;
		if (!b || b->phase != s->phase || !sums(b) || b->out[0] != dx || dx->users.n != 1)
			continue;
		*window = b->op == OP_BATCHNORM_BWD && slice && slice->op == OP_SLICE && slice->attr.axis == 1 &&
		          slice->attr.offset == 0 && a->users.n == 1 && slice->in[0]->dtype == a->dtype &&
		          slice->id < b->id;
		const Tensor *g = *window ? slice->in[0] : a;
		if (g->dtype == dx->dtype && s->out[0]->dtype == dx->dtype && (!g->producer || g->producer->id < b->id) &&
		    !node_uses(b, g))
			return b;
	}
	return NULL;
}

/* Fold sum s into b (summed_by): b's output becomes s's, with a or G its last input. Marks what dies. */
static void take_sum(Graph *g, Node *s, Node *b, bool window, bool *dead_node, bool *dead_tensor)
{
	Tensor *dx = b->out[0], *a = s->in[s->in[0] == dx ? 1 : 0], *sum = a;
	if (window) {
		Node *slice = a->producer;
		sum = slice->in[0];
		remove_user(sum, slice);
		dead_node[slice->id] = true;
		dead_tensor[a->id] = true;
	} else {
		remove_user(a, s);
	}
	insert_user(g, sum, b);
	Tensor **in = arena_array(g->arena, (size_t)b->nin + 1, sizeof(Tensor *));
	memcpy(in, b->in, sizeof(Tensor *) * (size_t)b->nin);
	in[b->nin] = sum;
	b->in = in;
	b->nin++;
	b->out[0] = s->out[0];
	s->out[0]->producer = b;
	dead_node[s->id] = true;
	dead_tensor[dx->id] = true;
}

/*
 * The loss by class ids and its gradient, the last forward node and the
 * first backward one, as one node (softmax_crossentropy_ids_grad: dlogits,
 * then the loss). Returns the gradient's node, now dead, or NULL.
 */
static Node *fold_loss(Graph *g)
{
	Node *l = g->loss ? g->loss->producer : NULL;
	if (!l || l->op != OP_SOFTMAX_XENT_IDS)
		return NULL;
	Tensor *z = l->in[0], *ids = l->in[1];
	Node *b = NULL;
	for (int i = 0; i < z->users.n && !b; i++)
		if (z->users.v[i]->op == OP_SOFTMAX_XENT_IDS_BWD && z->users.v[i]->in[1] == ids)
			b = z->users.v[i];
	if (!b)
		return NULL;
	Tensor **out = arena_array(g->arena, 2, sizeof(Tensor *));
	out[0] = b->out[0];
	out[1] = g->loss;
	l->op = OP_SOFTMAX_XENT_IDS_GRAD;
	l->out = out;
	l->nout = 2;
	out[0]->producer = l;
	remove_user(z, b);
	remove_user(ids, b);
	return b;
}

/*
 * A bf16 program's loss reads a float32 copy of the bf16 logits (autocast
 * casts them), and its gradient is cast back to bf16: the fused loss l
 * reads the bf16 logits and writes the bf16 gradient itself, the casts and
 * both float32 tensors gone (the kernel widens as it reads and rounds once
 * as it writes, as the casts did). Marks what dies; returns whether it
 * folded.
 */
static bool fold_loss_casts(Node *l, bool *dead_node, bool *dead_tensor)
{
	Tensor *z32 = l->in[0], *dz32 = l->out[0];
	Node *c1 = z32->producer, *c2 = dz32->users.n == 1 ? dz32->users.v[0] : NULL;
	if (!c1 || c1->op != OP_CAST || c1->in[0]->dtype != DT_BF16 || z32->users.n != 1 || !c2 || c2->op != OP_CAST ||
	    c2->out[0]->dtype != DT_BF16)
		return false;
	Tensor *zb = c1->in[0], *dzb = c2->out[0];
	l->in[0] = zb;
	replace_user(zb, c1, l);
	l->out[0] = dzb;
	dzb->producer = l;
	dead_node[c1->id] = dead_node[c2->id] = true;
	dead_tensor[z32->id] = dead_tensor[dz32->id] = true;
	return true;
}

/* Whether n's arguments other than t are all float32 (t may be one of several of n's arguments). */
static bool others_f32(const Node *n, const Tensor *t)
{
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != t && n->in[i]->dtype != DT_F32)
			return false;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] != t && n->out[i]->dtype != DT_F32)
			return false;
	return true;
}

/*
 * The input of u that a bf16 t may replace as it is, else -1: base/ops.h's
 * op_bf16_arg (an update's gradient, a sum of squares', a layernorm_bwd's
 * dy), or either input of an add of two (the GPU's add takes any types,
 * the CPU's run_mixed_add); t read there only, the rest float32.
 */
static int widening_slot(const Node *u, const Tensor *t)
{
	int k = op_bf16_arg(u->op);
	if (u->op == OP_ADD && u->nin == 2 && u->attr.post_act == ACT_NONE)
		k = u->in[0] == t ? 0 : 1;
	if (k < 0 || k >= u->nin || u->in[k] != t || !others_f32(u, t))
		return -1;
	for (int i = 0; i < u->nin; i++)
		if (i != k && u->in[i] == t)
			return -1;
	return k;
}

/*
 * A widening cast c (bf16 to float32) whose every reader can take the bf16
 * tensor as it is (widening_slot): they read it, c and its float32 copy
 * go. Widening is exact: the same values, so the same bits. A gradient
 * summed from two uses or all-reduced over ranks keeps its copy.
 */
static bool widened_by_readers(const Node *c)
{
	if (c->op != OP_CAST || c->nin != 1 || c->in[0]->dtype != DT_BF16 || c->out[0]->dtype != DT_F32)
		return false;
	const Tensor *t = c->out[0];
	for (int i = 0; i < t->users.n; i++)
		if (widening_slot(t->users.v[i], t) < 0)
			return false;
	return t->users.n > 0;
}

/* c's readers read its bf16 input instead (widened_by_readers). */
static void fold_widening(Graph *g, Node *c)
{
	Tensor *t16 = c->in[0], *t = c->out[0];
	remove_user(t16, c);
	for (int i = 0; i < t->users.n; i++) {
		Node *u = t->users.v[i];
		u->in[widening_slot(u, t)] = t16;
		insert_user(g, t16, u);
	}
	t->users.n = 0;
	t->producer = NULL;
}

/*
 * A narrowing cast c (float32 to bf16) of an output y that only c reads,
 * y the first output of a node whose kernels write it as bf16 (base/ops.h's
 * op_bf16_arg: a layernorm's): the node writes the bf16 tensor itself,
 * rounding to float32 and then to bf16 as the two kernels did (the same
 * bits). Returns the node, or NULL.
 */
static Node *narrowed_by_writer(const Graph *g, const Node *c)
{
	if (c->op != OP_CAST || c->nin != 1 || c->in[0]->dtype != DT_F32 || c->out[0]->dtype != DT_BF16)
		return NULL;
	Tensor *y = c->in[0];
	Node *p = y->producer;
	if (!p || op_bf16_arg(p->op) != p->nin || p->out[0] != y || y->users.n != 1 || y == g->output ||
	    !others_f32(p, y))
		return NULL;
	return p;
}

/* p writes c's output in y's place (narrowed_by_writer). */
static void fold_narrowing(Node *p, Node *c)
{
	Tensor *y = p->out[0];
	p->out[0] = c->out[0];
	c->out[0]->producer = p;
	y->users.n = 0;
	y->producer = NULL;
}

int fuse_epilogues(Graph *g)
{
	bool *dead_node = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(bool));
	bool *dead_tensor = arena_array(g->arena, (size_t)g->tensors.n + 1, sizeof(bool));
	int folded = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		Node *a = g->nodes.v[i];
		Node *p = foldable(g, a);
		if (!p)
			continue;
		Tensor *z = a->in[0], *y = a->out[0];
		p->out[0] = y; /* p writes act(z) where a wrote it; z is never stored */
		p->attr.post_act = op_info[a->op].act;
		y->producer = p;
		z->users.n = 0;
		z->producer = NULL;
		dead_node[a->id] = true;
		dead_tensor[z->id] = true;
		folded++;
	}
	for (int i = 0; i < g->nodes.n; i++) { /* then the gradients of the relus folded into batchnorms */
		Node *r = g->nodes.v[i], *b = fold_relu_grad(r);
		if (!b)
			continue;
		dead_node[r->id] = true;
		dead_tensor[r->out[0]->id] = true;
		take_relu_grad(g, r, b);
		folded++;
	}
	for (int i = 0; i < g->nodes.n; i++) { /* then the activations' gradients with the bias gradients after them */
		Node *r = g->nodes.v[i], *bg;
		if (dead_node[i] || !(bg = act_bias(r)))
			continue;
		fold_act_bias(g, r, bg);
		dead_node[bg->id] = true;
		folded++;
	}
	g->nfused += folded;
	for (int i = 0; i < g->nodes.n; i++) { /* then the sums that the nodes before them can add themselves */
		Node *s = g->nodes.v[i], *b;
		bool window;
		if (dead_node[i] || !(b = summed_by(s, &window)))
			continue;
		take_sum(g, s, b, window, dead_node, dead_tensor);
		folded++;
	}
	if (folded)
		compact(g, dead_node, dead_tensor);
	return folded + fuse_loss(g);
}

/* The dense_bwd_data and dense_bwd_weight of output layer f = dense(x, w) among dz's users, if they are all. */
static bool head_grads(const Node *f, const Tensor *dz, Node **bd, Node **bw)
{
	*bd = *bw = NULL;
	for (int i = 0; i < dz->users.n; i++) {
		Node *u = dz->users.v[i];
		if (u->op == OP_DENSE_BWD_DATA && u->in[0] == dz && u->in[1] == f->in[1] && !*bd)
			*bd = u;
		else if (u->op == OP_DENSE_BWD_WEIGHT && u->in[0] == f->in[0] && u->in[1] == dz && !*bw)
			*bw = u;
		else
			return false;
	}
	return *bd && *bw && (*bd)->out[0]->dtype == dz->dtype && (*bw)->out[0]->dtype == dz->dtype;
}

/* The float32 gradient of the weight that bw made: its output, or in bf16 the cast of it to float32 (else NULL). */
static Node *head_weight_cast(const Node *bw)
{
	const Tensor *g = bw->out[0];
	if (g->dtype == DT_F32)
		return NULL;
	Node *c = g->users.n == 1 ? g->users.v[0] : NULL;
	return c && c->op == OP_CAST && c->out[0]->dtype == DT_F32 ? c : NULL;
}

int fuse_head(Graph *g)
{
	Node *l = g->loss ? g->loss->producer : NULL, *f, *bd, *bw;
	if (!l || l->op != OP_SOFTMAX_XENT_IDS_GRAD)
		return 0;
	Tensor *z = l->in[0], *ids = l->in[1], *dz = l->out[0];
	f = z->producer;
	DType dt = z->dtype;
	if (!f || f->op != OP_DENSE || f->nin != 2 || f->attr.post_act != ACT_NONE || z->users.n != 1 ||
	    (dt != DT_F32 && dt != DT_BF16) || dz->dtype != dt || f->in[0]->dtype != dt || f->in[1]->dtype != dt ||
	    !head_grads(f, dz, &bd, &bw))
		return 0;
	Node *cast = head_weight_cast(bw); /* bf16: the fused node writes the float32 gradient the cast made */
	if (dt == DT_BF16 && !cast)
		return 0;
	Tensor *x = f->in[0], *w = f->in[1];
	Tensor **in = arena_array(g->arena, 3, sizeof(Tensor *)), **out = arena_array(g->arena, 3, sizeof(Tensor *));
	in[0] = x;
	in[1] = w;
	in[2] = ids;
	out[0] = bd->out[0];
	out[1] = cast ? cast->out[0] : bw->out[0];
	out[2] = g->loss;
	remove_user(x, f);
	remove_user(x, bw);
	remove_user(w, f);
	remove_user(w, bd);
	insert_user(g, x, l);
	insert_user(g, w, l);
	l->op = OP_DENSE_XENT_IDS_GRAD;
	l->in = in;
	l->nin = 3;
	l->out = out;
	l->nout = 3;
	for (int i = 0; i < 2; i++)
		out[i]->producer = l;
	bool *dead_node = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(bool));
	bool *dead_tensor = arena_array(g->arena, (size_t)g->tensors.n + 1, sizeof(bool));
	dead_node[f->id] = dead_node[bd->id] = dead_node[bw->id] = true;
	dead_tensor[z->id] = dead_tensor[dz->id] = true;
	if (cast)
		dead_node[cast->id] = dead_tensor[bw->out[0]->id] = true;
	compact(g, dead_node, dead_tensor);
	return 1;
}

int fuse_loss(Graph *g)
{
	Node *b = fold_loss(g);
	if (!b)
		return 0;
	bool *dead_node = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(bool));
	bool *dead_tensor = arena_array(g->arena, (size_t)g->tensors.n + 1, sizeof(bool));
	dead_node[b->id] = true;
	fold_loss_casts(g->loss->producer, dead_node, dead_tensor);
	compact(g, dead_node, dead_tensor);
	return 1;
}

int fuse_casts(Graph *g)
{
	bool *dead_node = arena_array(g->arena, (size_t)g->nodes.n + 1, sizeof(bool));
	bool *dead_tensor = arena_array(g->arena, (size_t)g->tensors.n + 1, sizeof(bool));
	int folded = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		Node *c = g->nodes.v[i], *p;
		if (widened_by_readers(c)) {
			dead_tensor[c->out[0]->id] = true;
			fold_widening(g, c);
		} else if ((p = narrowed_by_writer(g, c))) {
			dead_tensor[c->in[0]->id] = true;
			fold_narrowing(p, c);
		} else {
			continue;
		}
		dead_node[i] = true;
		folded++;
	}
	g->ncasts_folded += folded;
	if (folded)
		compact(g, dead_node, dead_tensor);
	return folded;
}
