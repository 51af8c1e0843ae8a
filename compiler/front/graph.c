/*
 * graph.c - building the graph IR, with the shape rule of every op.
 *
 * Nodes are checked where they are built (as ggml's constructors do): the
 * shape rule of the op computes the output shapes from the inputs and
 * attributes, and refuses inconsistent ones with a message naming the
 * shapes. The elaborator adds the layer's name and source location.
 */
#include "graph.h"
#include "format.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return false; } while (0)

static bool shape_conv2d(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_dense(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_pool(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_globalavgpool(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_batchnorm(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_batchnorm_eval(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_layernorm(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_layernorm_bwd(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_first(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_first_sum(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_softmax(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_reshape(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_add(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_concat(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_xent(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_attr(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_conv2d_bwd_filter(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_bias_grad(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_act_bias_grad(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_dense_bwd_data(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_dense_bwd_weight(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_batchnorm_bwd(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_slice(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_batchnorm_stats(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_update(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_grad_sumsq(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_embedding(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_position(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_xent_ids(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_matmul(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_split_heads(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_merge_heads(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_causal_softmax(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_transpose(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_broadcast(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_mean(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_mul(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_attention(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_xent_ids_grad(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_attention_bwd(const Node *n, Shape *out, char *err, size_t errlen);
static bool shape_dense_xent_grad(const Node *n, Shape *out, char *err, size_t errlen);

/* Each op's shape rule: ops.def's shape_rule column. */
typedef bool (*ShapeRule)(const Node *n, Shape *out, char *err, size_t errlen);
static const ShapeRule shape_rule[NUM_OPS] = {
#define OP(id, nm, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act, attrs, scratch) [OP_##id] = shape,
#include "ops.def"
#undef OP
};

Shape shape_make(int ndim, const int64_t *d)
{
	Shape s = {.ndim = ndim};
	for (int i = 0; i < ndim; i++)
		s.d[i] = d[i];
	return s;
}

int64_t shape_elems(Shape s)
{
	int64_t n = 1;
	for (int i = 0; i < s.ndim; i++)
		if (s.d[i] <= 0 || __builtin_mul_overflow(n, s.d[i], &n))
			return -1;
	return n;
}

int64_t shape_bytes(Shape s, DType dt)
{
	int64_t n = shape_elems(s), b;
	if (n < 0 || __builtin_mul_overflow(n, dtype_size(dt), &b))
		return -1;
	return b;
}

bool shape_eq(Shape a, Shape b)
{
	if (a.ndim != b.ndim)
		return false;
	for (int i = 0; i < a.ndim; i++)
		if (a.d[i] != b.d[i])
			return false;
	return true;
}

const char *shape_str(Shape s, char *buf, size_t size)
{
	return fmt_shape(s.ndim, s.d, NULL, buf, size);
}

int dtype_size(DType dt)
{
	switch (dt) {
	case DT_F64: return 8;
	case DT_F32:
	case DT_I32: return 4;
	case DT_BF16: return 2;
	}
	unreachable();
}

bool dtype_is_float(DType dt)
{
	return dt != DT_I32;
}

const char *dtype_name(DType dt)
{
	switch (dt) {
	case DT_F64: return "f64";
	case DT_F32: return "f32";
	case DT_I32: return "i32";
	case DT_BF16: return "bf16";
	}
	unreachable();
}

const char *precision_name(Precision p)
{
	return p == PREC_BF16 ? "bf16" : "fp32";
}

const char *tensor_type_str(const Tensor *t, char *buf, size_t size)
{
	char s[128];
	const char *type = t->kind != TENSOR_LABELS ? dtype_name(t->dtype) : t->dtype == DT_I32 ? "class" : "onehot";
	snprintf(buf, size, "%s%s", type,
	         shape_str(t->shape, s, sizeof s));
	return buf;
}

bool tensor_is_statistic(const Tensor *t)
{
	return t->kind == TENSOR_STATE && t->users.n > 0 &&
	       (t->users.v[0]->op == OP_BATCHNORM_STATS || t->users.v[0]->op == OP_BATCHNORM_EVAL);
}

bool tensor_persists(const Tensor *t)
{
	return t->kind == TENSOR_WEIGHT || t->kind == TENSOR_STATE;
}

const char *tensor_kind_name(TensorKind k)
{
	switch (k) {
	case TENSOR_INPUT: return "input";
	case TENSOR_LABELS: return "labels";
	case TENSOR_WEIGHT: return "weight";
	case TENSOR_ACTIVATION: return "activation";
	case TENSOR_GRADIENT: return "gradient";
	case TENSOR_WORKSPACE: return "workspace";
	case TENSOR_STATE: return "state";
	}
	unreachable();
}

Graph *graph_new(Arena *a)
{
	Graph *g = arena_alloc(a, sizeof *g);
	g->arena = a;
	return g;
}

Tensor *graph_tensor(Graph *g, TensorKind kind, const char *name, Shape shape, SrcLoc loc)
{
	int64_t bytes = shape_bytes(shape, DT_F32);
	if (bytes < 0)
		return NULL;
	Tensor *t = arena_alloc(g->arena, sizeof *t);
	t->id = g->tensors.n;
	t->name = arena_strdup(g->arena, name);
	t->shape = shape;
	t->dtype = DT_F32;
	t->bytes = bytes;
	t->kind = kind;
	t->loc = loc;
	vec_push(g->arena, &g->tensors, t);
	return t;
}

/*
 * The element type of output i of n: a cast's is its attribute; losses,
 * the norms' saved statistics and their weights' gradients, and sums of
 * squares are f32; any other output has its first real input's type (a
 * forward op runs in its input's type, a backward op writes the gradient
 * in the type of the value it belongs to). autocast.c chooses the inputs.
 */
static DType out_dtype(const Node *n, int i)
{
	switch (n->op) {
	case OP_CAST:
		return n->attr.dtype;
	case OP_SOFTMAX_XENT:
	case OP_SOFTMAX_XENT_BWD:
	case OP_SOFTMAX_XENT_IDS:
	case OP_SOFTMAX_XENT_IDS_BWD:
	case OP_GRAD_SUMSQ:
		return DT_F32;
	default:
		break;
	}
	if (i > 0)
		return DT_F32;
	for (int k = 0; k < n->nin; k++)
		if (dtype_is_float(n->in[k]->dtype))
			return n->in[k]->dtype;
	return DT_F32;
}

Node *graph_node(Graph *g, Op op, Tensor **in, int nin, const Attrs *attr, TensorKind kind,
                 const char *name, SrcLoc loc, char *err, size_t errlen)
{
	const OpInfo *info = &op_info[op];
	if (nin < info->min_in)
		ICE("%s built with %d inputs", info->name, nin);
	if (nin > info->max_in) {
		/* only the variadic ops (add, concat) can get here from a model */
		snprintf(err, errlen, "%d inputs, but a kernel takes at most %d (group the branches into nested blocks)",
		         nin, info->max_in);
		return NULL;
	}
	Node *n = arena_alloc(g->arena, sizeof *n);
	n->op = op;
	if (attr)
		n->attr = *attr;
	n->in = arena_array(g->arena, (size_t)nin, sizeof(Tensor *));
	memcpy(n->in, in, (size_t)nin * sizeof(Tensor *));
	n->nin = nin;
	n->name = arena_strdup(g->arena, name);
	n->loc = loc;

	Shape shapes[4];
	if (info->nout > (int)countof(shapes))
		ICE("%s has too many outputs", info->name);
	if (!node_shapes(n, shapes, err, errlen))
		return NULL;
	n->nout = info->nout;
	n->out = arena_array(g->arena, (size_t)n->nout, sizeof(Tensor *));
	for (int i = 0; i < n->nout; i++) {
		const char *oname = i == 0 ? name : arena_printf(g->arena, "%s.%d", name, i);
		Tensor *t = graph_tensor(g, kind, oname, shapes[i], loc);
		if (!t) {
			char s[128];
			snprintf(err, errlen, "output shape %s is too large", shape_str(shapes[i], s, sizeof s));
			g->tensors.n -= i; /* forget the outputs made so far */
			return NULL;
		}
		t->producer = n;
		t->dtype = out_dtype(n, i);
		t->bytes = shape_bytes(t->shape, t->dtype); /* not more than f32's */
		n->out[i] = t;
	}
	n->id = g->nodes.n;
	vec_push(g->arena, &g->nodes, n);
	for (int i = 0; i < nin; i++)
		vec_push(g->arena, &in[i]->users, n);
	return n;
}

bool node_shapes(const Node *n, Shape *out, char *err, size_t errlen)
{
	return shape_rule[n->op](n, out, err, errlen);
}

bool node_uses(const Node *n, const Tensor *t)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] == t)
			return true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] == t)
			return true;
	return false;
}

bool node_overwrites(const Node *n, const Tensor *t)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] == t && (op_info[n->op].inplace >> k & 1))
			return true;
	return false;
}

void tensor_rename(Graph *g, Tensor *t, const char *name)
{
	t->name = arena_strdup(g->arena, name);
}

static int by_name_then_id(const void *a, const void *b)
{
	const Tensor *x = *(const Tensor *const *)a, *y = *(const Tensor *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* A tensor named like an earlier one, and the first tensor of that name. */
typedef struct Clash { Tensor *dup, *orig; } Clash;

static int by_dup_id(const void *a, const void *b)
{
	const Clash *x = a, *y = b;
	return (x->dup->id > y->dup->id) - (x->dup->id < y->dup->id);
}

int graph_name_clashes(const Graph *g, Tensor **dup, Tensor **orig)
{
	int n = g->tensors.n, nclash = 0;
	Tensor **sorted = xmalloc(sizeof(Tensor *) * (size_t)(n + 1));
	Clash *cl = xmalloc(sizeof(Clash) * (size_t)(n + 1));
	memcpy(sorted, g->tensors.v, sizeof(Tensor *) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof *sorted, by_name_then_id);
	for (int i = 1, first = 0; i < n; i++) {
		if (strcmp(sorted[i]->name, sorted[first]->name) != 0)
			first = i;
		else
			cl[nclash++] = (Clash){sorted[i], sorted[first]};
	}
	qsort(cl, (size_t)nclash, sizeof *cl, by_dup_id);
	for (int k = 0; k < nclash; k++) {
		dup[k] = cl[k].dup;
		orig[k] = cl[k].orig;
	}
	free(cl);
	free(sorted);
	return nclash;
}

const char *node_op_label(const Node *n, char *buf, size_t size)
{
	bool sum = node_sum_input(n) >= 0;
	if (n->attr.post_act == ACT_NONE && !sum)
		return op_info[n->op].name;
	snprintf(buf, size, "%s%s%s%s", op_info[n->op].name, n->attr.post_act == ACT_NONE ? "" : "+",
	         n->attr.post_act == ACT_NONE ? "" : act_name(n->attr.post_act), sum ? "+sum" : "");
	return buf;
}

int node_sum_input(const Node *n)
{
	return op_sum_input(n->op, n->nin, n->attr.post_act);
}

void graph_pop_node(Graph *g)
{
	if (g->nodes.n == 0)
		ICE("pop from an empty graph");
	Node *n = g->nodes.v[g->nodes.n - 1];
	for (int i = 0; i < n->nout; i++) {
		if (n->out[i]->users.n)
			ICE("popped node %s has users", n->name);
		if (n->out[i]->id != g->tensors.n - n->nout + i)
			ICE("popped node %s does not own the last tensors", n->name);
	}
	for (int i = 0; i < n->nin; i++) {
		Tensor *t = n->in[i];
		if (t->users.n == 0 || t->users.v[t->users.n - 1] != n)
			ICE("popped node %s is not the last user of its input", n->name);
		t->users.n--;
	}
	g->tensors.n -= n->nout;
	g->nodes.n--;
}

/* ---- shape rules ---------------------------------------------------- */

/* Output size of a sliding window, or <= 0 if the window does not fit. */
static int64_t window_out(int64_t in, int k, int s, int p)
{
	int64_t span = in + 2 * (int64_t)p - k;
	if (span < 0)
		return 0;
	return span / s + 1;
}

static bool shape_conv2d(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, w = n->in[1]->shape;
	const Attrs *a = &n->attr;
	char s1[128], s2[128];
	if (x.ndim != 4)
		FAIL("expects an NCHW input, got %s", shape_str(x, s1, sizeof s1));
	if (w.ndim != 4 || a->groups < 1 || w.d[1] * a->groups != x.d[1] || w.d[2] != a->kh || w.d[3] != a->kw)
		FAIL("weight %s does not fit input %s", shape_str(w, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	if (n->nin == 3 && (n->in[2]->shape.ndim != 1 || n->in[2]->shape.d[0] != w.d[0]))
		FAIL("bias %s does not fit weight %s", shape_str(n->in[2]->shape, s1, sizeof s1),
		     shape_str(w, s2, sizeof s2));
	if (a->sh < 1 || a->sw < 1 || a->ph < 0 || a->pw < 0)
		FAIL("stride must be positive and padding non-negative");
	int64_t ho = window_out(x.d[2], a->kh, a->sh, a->ph), wo = window_out(x.d[3], a->kw, a->sw, a->pw);
	if (ho <= 0 || wo <= 0)
		FAIL("a %dx%d kernel with padding (%d, %d) does not fit input %s", a->kh, a->kw, a->ph, a->pw,
		     shape_str(x, s1, sizeof s1));
	out[0] = shape_make(4, (int64_t[]){x.d[0], w.d[0], ho, wo});
	return true;
}

static bool shape_dense(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, w = n->in[1]->shape;
	char s1[128], s2[128];
	if (x.ndim < 2 || x.ndim > 3 || w.ndim != 2 || w.d[1] != x.d[x.ndim - 1])
		FAIL("weight %s does not fit input %s", shape_str(w, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	if (n->nin >= 3 && (n->in[2]->shape.ndim != 1 || n->in[2]->shape.d[0] != w.d[0]))
		FAIL("bias %s does not fit weight %s", shape_str(n->in[2]->shape, s1, sizeof s1),
		     shape_str(w, s2, sizeof s2));
	out[0] = x;
	out[0].d[x.ndim - 1] = w.d[0];
	if (n->nin == 4 && !shape_eq(n->in[3]->shape, out[0]))
		FAIL("the tensor %s added to the output differs from it, %s", shape_str(n->in[3]->shape, s1, sizeof s1),
		     shape_str(out[0], s2, sizeof s2));
	return true;
}

static bool shape_pool(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	const Attrs *a = &n->attr;
	char s1[128];
	if (x.ndim != 4)
		FAIL("expects an NCHW input, got %s", shape_str(x, s1, sizeof s1));
	if (a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->ph < 0 || a->pw < 0)
		FAIL("window, stride must be positive and padding non-negative");
	if (2 * a->ph > a->kh || 2 * a->pw > a->kw)
		FAIL("padding (%d, %d) is more than half the %dx%d window", a->ph, a->pw, a->kh, a->kw);
	int64_t ho = window_out(x.d[2], a->kh, a->sh, a->ph), wo = window_out(x.d[3], a->kw, a->sw, a->pw);
	if (ho <= 0 || wo <= 0)
		FAIL("a %dx%d window with padding (%d, %d) does not fit input %s", a->kh, a->kw, a->ph, a->pw,
		     shape_str(x, s1, sizeof s1));
	out[0] = shape_make(4, (int64_t[]){x.d[0], x.d[1], ho, wo});
	return true;
}

static bool shape_globalavgpool(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128];
	if (x.ndim != 4)
		FAIL("expects an NCHW input, got %s", shape_str(x, s1, sizeof s1));
	out[0] = shape_make(4, (int64_t[]){x.d[0], x.d[1], 1, 1});
	return true;
}

/* batchnorm and batchnorm_eval: x [N, C] or [N, C, H, W], then every other input [C]; y like x. */
static bool shape_bn_common(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128], s2[128];
	if (x.ndim != 2 && x.ndim != 4)
		FAIL("expects an input [N, C] or [N, C, H, W], got %s", shape_str(x, s1, sizeof s1));
	for (int i = 1; i < n->nin; i++)
		if (n->in[i]->shape.ndim != 1 || n->in[i]->shape.d[0] != x.d[1])
			FAIL("parameter %s does not fit input %s", shape_str(n->in[i]->shape, s1, sizeof s1),
			     shape_str(x, s2, sizeof s2));
	if (!(n->attr.eps > 0))
		FAIL("epsilon must be positive");
	out[0] = x;
	return true;
}

static bool shape_batchnorm(const Node *n, Shape *out, char *err, size_t errlen)
{
	if (!shape_bn_common(n, out, err, errlen))
		return false;
	out[1] = out[2] = shape_make(1, &out[0].d[1]);
	return true;
}

static bool shape_batchnorm_eval(const Node *n, Shape *out, char *err, size_t errlen)
{
	return shape_bn_common(n, out, err, errlen);
}

/* x [..., C]: its rows, [elements / C] */
static Shape layernorm_rows(Shape x)
{
	return shape_make(1, (int64_t[]){shape_elems(x) / x.d[x.ndim - 1]});
}

static bool shape_layernorm(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128], s2[128];
	for (int i = 1; i < 3; i++)
		if (n->in[i]->shape.ndim != 1 || n->in[i]->shape.d[0] != x.d[x.ndim - 1])
			FAIL("parameter %s does not fit input %s (the last dimension's size)",
			     shape_str(n->in[i]->shape, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	if (!(n->attr.eps > 0))
		FAIL("epsilon must be positive");
	out[0] = x;
	out[1] = out[2] = layernorm_rows(x);
	return true;
}

static bool shape_layernorm_bwd(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, rows = layernorm_rows(x);
	char s1[128], s2[128];
	if (!shape_eq(x, n->in[4]->shape))
		FAIL("input %s and gradient %s differ", shape_str(x, s1, sizeof s1),
		     shape_str(n->in[4]->shape, s2, sizeof s2));
	if (n->in[1]->shape.ndim != 1 || n->in[1]->shape.d[0] != x.d[x.ndim - 1])
		FAIL("weight %s does not fit input %s", shape_str(n->in[1]->shape, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	for (int i = 2; i < 4; i++)
		if (!shape_eq(n->in[i]->shape, rows))
			FAIL("statistic %s does not fit input %s", shape_str(n->in[i]->shape, s1, sizeof s1),
			     shape_str(x, s2, sizeof s2));
	if (n->nin > 5 && !shape_eq(x, n->in[5]->shape))
		FAIL("the gradient %s added to dx differs from input %s", shape_str(n->in[5]->shape, s1, sizeof s1),
		     shape_str(x, s2, sizeof s2));
	out[0] = x;
	out[1] = out[2] = n->in[1]->shape;
	return true;
}

/* x [, sum] -> y like x: an elementwise op, and the tensor of x's shape it adds to y where one is fused in (fuse.h) */
static bool shape_first_sum(const Node *n, Shape *out, char *err, size_t errlen)
{
	char s1[128], s2[128];
	if (n->nin > 1 && !shape_eq(n->in[0]->shape, n->in[1]->shape))
		FAIL("the tensor %s added to the output differs from input %s", shape_str(n->in[1]->shape, s1, sizeof s1),
		     shape_str(n->in[0]->shape, s2, sizeof s2));
	out[0] = n->in[0]->shape;
	return true;
}

static bool shape_first(const Node *n, Shape *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	out[0] = n->in[0]->shape;
	return true;
}

static bool shape_softmax(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128];
	if (x.ndim < 2)
		FAIL("expects an input [N, C] or [N, ..., C], got %s", shape_str(x, s1, sizeof s1));
	out[0] = x;
	return true;
}

static bool shape_transpose(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128];
	if (x.ndim != 3)
		FAIL("expects an input [N, A, B], got %s", shape_str(x, s1, sizeof s1));
	out[0] = shape_make(3, (int64_t[]){x.d[0], x.d[2], x.d[1]});
	return true;
}

static bool shape_mean(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	int ax = n->attr.axis;
	char s1[128];
	if (ax < 1 || ax >= x.ndim || x.ndim < 2)
		FAIL("cannot take the mean of %s over dimension %d (1 to %d)", shape_str(x, s1, sizeof s1), ax, x.ndim - 1);
	Shape y = {.ndim = x.ndim - 1};
	for (int d = 0, k = 0; d < x.ndim; d++)
		if (d != ax)
			y.d[k++] = x.d[d];
	out[0] = y;
	return true;
}

static bool shape_mul(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, sc = n->in[1]->shape;
	char s1[128], s2[128];
	bool ok = sc.ndim == x.ndim && x.ndim >= 2;
	for (int d = 0; ok && d < x.ndim; d++)
		ok = sc.d[d] == x.d[d] || (d >= 2 && sc.d[d] == 1);
	if (!ok)
		FAIL("cannot multiply %s by %s (the same shape, or 1 in its dimensions after the channels)",
		     shape_str(x, s1, sizeof s1), shape_str(sc, s2, sizeof s2));
	out[0] = x;
	return true;
}

static bool shape_broadcast(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape w = n->in[0]->shape, y = n->attr.shape;
	char s1[128], s2[128];
	if (w.ndim != 1 || y.ndim < 2 || y.ndim > MAX_DIMS || y.d[y.ndim - 1] != w.d[0])
		FAIL("cannot repeat %s into %s", shape_str(w, s1, sizeof s1), shape_str(y, s2, sizeof s2));
	out[0] = y;
	return true;
}

static bool shape_reshape(const Node *n, Shape *out, char *err, size_t errlen)
{
	char s1[128], s2[128];
	Shape x = n->in[0]->shape, y = n->attr.shape;
	if (y.ndim < 1 || y.ndim > MAX_DIMS || shape_elems(y) != shape_elems(x))
		FAIL("cannot reshape %s to %s", shape_str(x, s1, sizeof s1), shape_str(y, s2, sizeof s2));
	out[0] = y;
	return true;
}

static bool shape_add(const Node *n, Shape *out, char *err, size_t errlen)
{
	char s1[128], s2[128];
	for (int i = 1; i < n->nin; i++)
		if (!shape_eq(n->in[i]->shape, n->in[0]->shape))
			FAIL("input %d has shape %s but input 1 has shape %s", i + 1,
			     shape_str(n->in[i]->shape, s1, sizeof s1), shape_str(n->in[0]->shape, s2, sizeof s2));
	out[0] = n->in[0]->shape;
	return true;
}

static bool shape_concat(const Node *n, Shape *out, char *err, size_t errlen)
{
	char s1[128], s2[128];
	Shape r = n->in[0]->shape;
	int ax = n->attr.axis;
	if (ax < 0 || ax >= r.ndim)
		FAIL("axis %d is out of range for %s", ax, shape_str(r, s1, sizeof s1));
	for (int i = 1; i < n->nin; i++) {
		Shape s = n->in[i]->shape;
		bool ok = s.ndim == r.ndim;
		for (int d = 0; ok && d < s.ndim; d++)
			ok = d == ax || s.d[d] == r.d[d];
		if (!ok)
			FAIL("input %d has shape %s, which does not match input 1's %s outside dimension %d", i + 1,
			     shape_str(s, s1, sizeof s1), shape_str(n->in[0]->shape, s2, sizeof s2), ax);
		if (__builtin_add_overflow(r.d[ax], s.d[ax], &r.d[ax]))
			FAIL("concatenated size overflows");
	}
	out[0] = r;
	return true;
}

static bool shape_xent(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, y = n->in[1]->shape;
	char s1[128], s2[128];
	if (x.ndim != 2 || !shape_eq(x, y))
		FAIL("network output %s does not match labels %s", shape_str(x, s1, sizeof s1),
		     shape_str(y, s2, sizeof s2));
	out[0] = shape_make(1, (int64_t[]){1});
	return true;
}

/* Backward ops whose output shape is not derivable carry it in attr.shape. */
static bool shape_attr(const Node *n, Shape *out, char *err, size_t errlen)
{
	if (n->attr.shape.ndim < 1 || n->attr.shape.ndim > MAX_DIMS || shape_elems(n->attr.shape) < 0)
		FAIL("missing or invalid output shape attribute");
	out[0] = n->attr.shape;
	return true;
}

static bool shape_conv2d_bwd_filter(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, dy = n->in[1]->shape;
	const Attrs *a = &n->attr;
	char s1[128], s2[128];
	if (x.ndim != 4 || dy.ndim != 4 || x.d[0] != dy.d[0] || a->groups < 1 || x.d[1] % a->groups)
		FAIL("input %s and output gradient %s do not fit", shape_str(x, s1, sizeof s1), shape_str(dy, s2, sizeof s2));
	out[0] = shape_make(4, (int64_t[]){dy.d[1], x.d[1] / a->groups, a->kh, a->kw});
	return true;
}

static bool shape_bias_grad(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape dy = n->in[0]->shape;
	char s1[128];
	int ax = n->attr.axis > 0 ? n->attr.axis : 1;
	if (dy.ndim < 2 || ax >= dy.ndim)
		FAIL("expects a gradient with a batch dimension and dimension %d, got %s", ax, shape_str(dy, s1, sizeof s1));
	out[0] = shape_make(1, &dy.d[ax]);
	return true;
}

/* saved, dy -> dx like dy, and the bias gradient of dx (shape_bias_grad) */
static bool shape_act_bias_grad(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape dy = n->in[1]->shape;
	char s1[128], s2[128];
	if (!shape_eq(n->in[0]->shape, dy))
		FAIL("the activation's tensor %s and gradient %s differ", shape_str(n->in[0]->shape, s1, sizeof s1),
		     shape_str(dy, s2, sizeof s2));
	int ax = n->attr.axis > 0 ? n->attr.axis : 1;
	if (dy.ndim < 2 || ax >= dy.ndim)
		FAIL("expects a gradient with a batch dimension and dimension %d, got %s", ax, shape_str(dy, s1, sizeof s1));
	out[0] = dy;
	out[1] = shape_make(1, &dy.d[ax]);
	return true;
}

static bool shape_dense_bwd_data(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape dy = n->in[0]->shape, w = n->in[1]->shape;
	char s1[128], s2[128];
	if (dy.ndim < 2 || dy.ndim > 3 || w.ndim != 2 || dy.d[dy.ndim - 1] != w.d[0])
		FAIL("gradient %s does not fit weight %s", shape_str(dy, s1, sizeof s1), shape_str(w, s2, sizeof s2));
	out[0] = dy;
	out[0].d[dy.ndim - 1] = w.d[1];
	return true;
}

static bool shape_dense_bwd_weight(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, dy = n->in[1]->shape;
	char s1[128], s2[128];
	bool ok = x.ndim >= 2 && x.ndim <= 3 && dy.ndim == x.ndim;
	for (int i = 0; ok && i + 1 < x.ndim; i++)
		ok = x.d[i] == dy.d[i];
	if (!ok)
		FAIL("input %s does not fit gradient %s", shape_str(x, s1, sizeof s1), shape_str(dy, s2, sizeof s2));
	out[0] = shape_make(2, (int64_t[]){dy.d[dy.ndim - 1], x.d[x.ndim - 1]});
	return true;
}

static bool shape_batchnorm_bwd(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128], s2[128];
	if (!shape_eq(x, n->in[4]->shape))
		FAIL("input %s and gradient %s differ", shape_str(x, s1, sizeof s1),
		     shape_str(n->in[4]->shape, s2, sizeof s2));
	bool act = n->attr.post_act != ACT_NONE;
	if (n->nin < 5 + act || (act && !shape_eq(x, n->in[5]->shape)))
		FAIL("a fused activation's gradient needs the activation's output, of the input's shape %s",
		     shape_str(x, s1, sizeof s1));
	int s = node_sum_input(n);
	if (s >= 0) { /* a gradient whose first C channels dx adds: [N, C' >= C, ...] otherwise as x */
		Shape g = n->in[s]->shape;
		bool fits = g.ndim == x.ndim && x.ndim >= 2 && g.d[1] >= x.d[1];
		for (int i = 0; fits && i < x.ndim; i++)
			fits = i == 1 || g.d[i] == x.d[i];
		if (!fits)
			FAIL("the gradient %s added to dx does not hold input %s's channels",
			     shape_str(g, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	}
	for (int i = 1; i < 4; i++)
		if (n->in[i]->shape.ndim != 1 || n->in[i]->shape.d[0] != x.d[1])
			FAIL("statistic %s does not fit input %s", shape_str(n->in[i]->shape, s1, sizeof s1),
			     shape_str(x, s2, sizeof s2));
	out[0] = x;
	out[1] = out[2] = n->in[1]->shape;
	return true;
}

static bool shape_slice(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, y = n->attr.shape;
	int ax = n->attr.axis;
	char s1[128], s2[128];
	bool ok = y.ndim == x.ndim && ax >= 0 && ax < x.ndim && n->attr.offset >= 0 &&
	          n->attr.offset + y.d[ax] <= x.d[ax];
	for (int d = 0; ok && d < x.ndim; d++)
		ok = d == ax || x.d[d] == y.d[d];
	if (!ok)
		FAIL("cannot slice %s from %s at offset %lld", shape_str(y, s1, sizeof s1), shape_str(x, s2, sizeof s2),
		     (long long)n->attr.offset);
	out[0] = y;
	return true;
}

/* The update ops write their inputs in place and have no outputs. */
static bool shape_batchnorm_stats(const Node *n, Shape *out, char *err, size_t errlen)
{
	(void)out;
	const Shape *c = &n->in[0]->shape;
	if (c->ndim != 1 || n->attr.shape.ndim < 2 || n->attr.shape.d[1] != c->d[0])
		FAIL("%s is not [C] for a batchnorm input of C channels", n->in[0]->name);
	for (int i = 1; i < 5; i++)
		if (i != 2 && !shape_eq(n->in[i]->shape, *c))
			FAIL("%s does not have the shape of %s", n->in[i]->name, n->in[0]->name);
	if (n->in[2]->shape.ndim != 1 || n->in[2]->shape.d[0] != 1)
		FAIL("%s is not [1]", n->in[2]->name);
	return true;
}

static bool is_scalar1(Shape s)
{
	return s.ndim == 1 && s.d[0] == 1;
}

/* An update: the weight's gradient and state have its shape; the optional last input is [1]. */
static bool shape_update(const Node *n, Shape *out, char *err, size_t errlen)
{
	(void)out;
	for (int i = 1; i < n->nin; i++) {
		if (i == op_info[n->op].max_in - 1 && i >= op_info[n->op].min_in) {
			if (!is_scalar1(n->in[i]->shape))
				FAIL("%s is not [1]", n->in[i]->name);
		} else if (!shape_eq(n->in[i]->shape, n->in[0]->shape)) {
			FAIL("%s does not have the shape of %s", n->in[i]->name, n->in[0]->name);
		}
	}
	return true;
}

static bool shape_grad_sumsq(const Node *n, Shape *out, char *err, size_t errlen)
{
	if (n->nin == 2 && !is_scalar1(n->in[1]->shape))
		FAIL("%s is not [1]", n->in[1]->name);
	out[0] = shape_make(1, (int64_t[]){1});
	return true;
}


/* ids: an integer tensor of token or class ids */
static bool is_ids(const Tensor *t)
{
	return t->dtype == DT_I32;
}

static bool shape_embedding(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, w = n->in[1]->shape;
	char s1[128], s2[128];
	if (!is_ids(n->in[0]))
		FAIL("expects integer ids (i32), got %s%s", dtype_name(n->in[0]->dtype), shape_str(x, s1, sizeof s1));
	if (x.ndim >= MAX_DIMS || w.ndim != 2)
		FAIL("weight %s does not fit ids %s", shape_str(w, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	out[0] = x;
	out[0].d[out[0].ndim++] = w.d[1];
	return true;
}

static bool shape_position(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, w = n->in[1]->shape;
	char s1[128], s2[128];
	if (x.ndim != 3 || w.ndim != 2 || w.d[1] != x.d[2] || w.d[0] < x.d[1])
		FAIL("positions %s do not fit input %s", shape_str(w, s1, sizeof s1), shape_str(x, s2, sizeof s2));
	out[0] = x;
	return true;
}

static bool shape_xent_ids(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, y = n->in[1]->shape;
	char s1[128], s2[128];
	bool ok = is_ids(n->in[1]) && x.ndim == y.ndim + 1;
	for (int i = 0; ok && i < y.ndim; i++)
		ok = x.d[i] == y.d[i];
	if (!ok)
		FAIL("network output %s does not match class ids %s", shape_str(x, s1, sizeof s1),
		     shape_str(y, s2, sizeof s2));
	out[0] = shape_make(1, (int64_t[]){1});
	return true;
}

static bool shape_matmul(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape a = n->in[0]->shape, b = n->in[1]->shape;
	char s1[128], s2[128];
	bool ok = a.ndim >= 2 && a.ndim == b.ndim;
	for (int d = 0; ok && d < a.ndim - 2; d++)
		ok = a.d[d] == b.d[d];
	int r = a.ndim - 2;
	int64_t m = a.d[r + n->attr.trans_a], ka = a.d[r + !n->attr.trans_a];
	int64_t kb = b.d[r + n->attr.trans_b], nn = b.d[r + !n->attr.trans_b];
	if (!ok || ka != kb)
		FAIL("cannot multiply %s%s by %s%s", shape_str(a, s1, sizeof s1), n->attr.trans_a ? " transposed" : "",
		     shape_str(b, s2, sizeof s2), n->attr.trans_b ? " transposed" : "");
	out[0] = a;
	out[0].d[r] = m;
	out[0].d[r + 1] = nn;
	return true;
}

static bool shape_split_heads(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, y = n->attr.shape;
	char s1[128], s2[128];
	if (x.ndim != 3 || y.ndim != 4 || y.d[0] != x.d[0] || y.d[2] != x.d[1] || n->attr.offset < 0 ||
	    n->attr.offset + y.d[1] * y.d[3] > x.d[2])
		FAIL("cannot take heads %s from %s at column %lld", shape_str(y, s1, sizeof s1),
		     shape_str(x, s2, sizeof s2), (long long)n->attr.offset);
	out[0] = y;
	return true;
}

static bool shape_merge_heads(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128], s2[128];
	if (x.ndim != 4)
		FAIL("expects heads [N, H, T, D], got %s", shape_str(x, s1, sizeof s1));
	for (int k = 1; k < n->nin; k++)
		if (!shape_eq(n->in[k]->shape, x))
			FAIL("heads %s and %s differ", shape_str(x, s1, sizeof s1), shape_str(n->in[k]->shape, s2, sizeof s2));
	out[0] = shape_make(3, (int64_t[]){x.d[0], x.d[2], n->nin * x.d[1] * x.d[3]});
	return true;
}

static bool shape_causal_softmax(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape;
	char s1[128];
	if (x.ndim < 2 || x.d[x.ndim - 1] != x.d[x.ndim - 2])
		FAIL("expects scores [..., T, T], got %s", shape_str(x, s1, sizeof s1));
	out[0] = x;
	return true;
}

/* logits, ids -> dlogits like logits, loss [1]: the loss's rule, then the gradient's shape */
static bool shape_xent_ids_grad(const Node *n, Shape *out, char *err, size_t errlen)
{
	if (!shape_xent_ids(n, &out[1], err, errlen))
		return false;
	out[0] = n->in[0]->shape;
	return true;
}

/* x [..., C], weight [V, C], ids [...] -> dx like x, dweight [V, C], loss [1] */
static bool shape_dense_xent_grad(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, w = n->in[1]->shape, y = n->in[2]->shape;
	char s1[128], s2[128], s3[128];
	bool ok = is_ids(n->in[2]) && x.ndim == y.ndim + 1 && w.ndim == 2 && w.d[1] == x.d[x.ndim - 1];
	for (int i = 0; ok && i < y.ndim; i++)
		ok = x.d[i] == y.d[i];
	if (!ok)
		FAIL("an output layer of weight %s over %s does not match class ids %s", shape_str(w, s1, sizeof s1),
		     shape_str(x, s2, sizeof s2), shape_str(y, s3, sizeof s3));
	out[0] = x;
	out[1] = w;
	out[2] = shape_make(1, (int64_t[]){1});
	return true;
}

/* x [N, T, 3 H D] with heads attr.shape [N, H, T, D] -> y [N, T, H D], lse [N, H, T] */
static bool shape_attention(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape x = n->in[0]->shape, h = n->attr.shape;
	char s1[128], s2[128];
	if (x.ndim != 3 || h.ndim != 4 || h.d[0] != x.d[0] || h.d[2] != x.d[1] || 3 * h.d[1] * h.d[3] != x.d[2])
		FAIL("cannot take the heads %s of q, k and v side by side from %s", shape_str(h, s1, sizeof s1),
		     shape_str(x, s2, sizeof s2));
	if (!(n->attr.alpha > 0))
		FAIL("the scores' scale must be positive");
	out[0] = shape_make(3, (int64_t[]){x.d[0], x.d[1], h.d[1] * h.d[3]});
	out[1] = shape_make(3, h.d);
	return true;
}

/* x, y, lse, dy (attention's input, outputs, and y's gradient) -> dx like x */
static bool shape_attention_bwd(const Node *n, Shape *out, char *err, size_t errlen)
{
	Shape fwd[2];
	char s1[128], s2[128], s3[128];
	if (!shape_attention(n, fwd, err, errlen))
		return false;
	if (!shape_eq(n->in[1]->shape, fwd[0]) || !shape_eq(n->in[2]->shape, fwd[1]) || !shape_eq(n->in[3]->shape, fwd[0]))
		FAIL("the output, statistics and gradient %s, %s, %s do not fit the attention's",
		     shape_str(n->in[1]->shape, s1, sizeof s1), shape_str(n->in[2]->shape, s2, sizeof s2),
		     shape_str(n->in[3]->shape, s3, sizeof s3));
	out[0] = n->in[0]->shape;
	return true;
}

int64_t tensor_id_range(const Tensor *t)
{
	int64_t range = MAX_IDS;
	for (int i = 0; i < t->users.n; i++) {
		const Node *u = t->users.v[i];
		int64_t r = u->op == OP_EMBEDDING && u->in[0] == t ? u->in[1]->shape.d[0]
		          : (u->op == OP_SOFTMAX_XENT_IDS || u->op == OP_SOFTMAX_XENT_IDS_GRAD) && u->in[1] == t
		          ? u->in[0]->shape.d[u->in[0]->shape.ndim - 1]
		          : u->op == OP_DENSE_XENT_IDS_GRAD && u->in[2] == t ? u->in[1]->shape.d[0]
		          : range;
		if (r < range)
			range = r;
	}
	return range;
}
