/*
 * flops.c - the floating-point operations of a node, by its op's rule
 * (ops.def's flops_rule and flops_k columns).
 *
 * The usual convention: a multiply-add is 2 FLOPs (convolution, dense),
 * elementwise ops count flops_k per element, pooling one per window
 * element, batchnorm and softmax a few per element. Counts saturate at
 * INT64_MAX instead of overflowing: a model that large is reported as
 * such, never with a wrapped-around count.
 */
#include <stdint.h>

#include "graph.h"

/* a * b, or INT64_MAX when it does not fit (a, b >= 0) */
static int64_t mul(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t in0(const Node *n)
{
	return shape_elems(n->in[0]->shape);
}

static int64_t out0(const Node *n)
{
	return n->nout ? shape_elems(n->out[0]->shape) : 0;
}

/* the elements of the window of a pooling op */
static int64_t window(const Node *n)
{
	return (int64_t)n->attr.kh * n->attr.kw;
}

static int64_t flops_none(const Node *n)
{
	(void)n;
	return 0;
}

static int64_t flops_in(const Node *n)
{
	return in0(n);
}

static int64_t flops_out(const Node *n)
{
	return out0(n);
}

static int64_t flops_window_out(const Node *n)
{
	return mul(out0(n), window(n));
}

static int64_t flops_window_in(const Node *n)
{
	return mul(in0(n), window(n));
}

/* the inputs summed into each output element */
static int64_t flops_add(const Node *n)
{
	return mul(out0(n), n->nin - 1);
}

/* 2 x output x (C/g x kh x kw), and the bias */
static int64_t flops_conv2d(const Node *n)
{
	const Shape *w = &n->in[1]->shape;
	return add(mul(mul(2, out0(n)), mul(w->d[1], mul(w->d[2], w->d[3]))), n->nin == 3 ? out0(n) : 0);
}

/* dy x weight: as many multiply-adds as the forward */
static int64_t flops_conv2d_bwd_data(const Node *n)
{
	const Shape *w = &n->in[1]->shape;
	return mul(mul(2, in0(n)), mul(w->d[1], mul(w->d[2], w->d[3])));
}

static int64_t flops_conv2d_bwd_filter(const Node *n)
{
	const Shape *dy = &n->in[1]->shape;
	return mul(mul(2, shape_elems(*dy)), out0(n) / dy->d[1]);
}

static int64_t flops_dense(const Node *n)
{
	return add(mul(mul(2, out0(n)), n->in[1]->shape.d[1]), n->nin >= 3 ? mul(n->nin - 2, out0(n)) : 0);
}

static int64_t flops_dense_bwd_data(const Node *n)
{
	return mul(mul(2, out0(n)), n->in[1]->shape.d[0]);
}

/* 2 per element of the weight and row of x (every dimension of x but the last) */
static int64_t flops_dense_bwd_weight(const Node *n)
{
	Shape x = n->in[0]->shape;
	return mul(mul(2, out0(n)), in0(n) / x.d[x.ndim - 1]);
}

/* 2 M N K per matrix of the batch: the contracted dimension is a's last, or its
   last but one when a is read transposed */
static int64_t flops_matmul(const Node *n)
{
	Shape a = n->in[0]->shape;
	return mul(mul(2, out0(n)), a.d[a.ndim - (n->attr.trans_a ? 2 : 1)]);
}

/* the output layer and its loss: its three products (2 R V C each) and the softmax's 12 R V */
static int64_t flops_dense_xent(const Node *n)
{
	Shape w = n->in[1]->shape;
	int64_t rv = mul(in0(n) / w.d[1], w.d[0]);
	return add(mul(mul(6, rv), w.d[1]), mul(12, rv));
}

/* attention: N H T T D, halved when causal (the scores and the product with v are 2 T T D each, so
   ops.def's factor is 4 forward, 10 backward: FlashAttention's count, five products) */
static int64_t flops_attention(const Node *n)
{
	const int64_t *h = n->attr.shape.d; /* [N, H, T, D] */
	int64_t f = mul(mul(mul(h[0], h[1]), mul(h[2], h[2])), h[3]);
	return n->attr.causal && f != INT64_MAX ? f / 2 : f;
}

static const struct {
	int64_t (*rule)(const Node *n); /* ops.def's flops_rule */
	int64_t k;                      /* ops.def's flops_k */
} flops_of[NUM_OPS] = {
#define OP(id, nm, min_in, max_in, nout, shape, flops, flops_k, grad, inplace, reuse, act, attrs, scratch) [OP_##id] = {flops, flops_k},
#include "ops.def"
#undef OP
};

int64_t node_flops(const Node *n)
{
	return mul(flops_of[n->op].rule(n), flops_of[n->op].k);
}
