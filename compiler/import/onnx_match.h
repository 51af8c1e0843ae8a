/*
 * onnx_match.h - the patterns PyTorch exports a transformer's layers as,
 * recognised in an ONNX graph (compiler/import/onnx_match.c): an
 * activation written as arithmetic (GELU), and self-attention written as
 * products, a mask and a softmax.
 */
#ifndef AUTOTM_ONNX_MATCH_H
#define AUTOTM_ONNX_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "onnx_ir.h"

/*
 * The .net activation ("gelu", "silu", "hardswish") that the nodes between
 * value x and node j, or a few nodes after j that scale or shift its
 * value (*end: the last), compute elementwise from x (reached marks x and the
 * values computed from it, as onnx_net.c's join_of walks them), by
 * evaluating them at sample points. NULL with the reason in why where
 * they compute the exact GELU, which .net lacks; NULL with why empty
 * otherwise (a block, such as x + relu(x)).
 */
const char *ir_match_activation(const Ir *ir, int x, int j, const bool *reached, int *end, char *why, size_t whylen);

/* Self-attention as ir_match_attention found it. */
typedef struct IrAttention {
	int last;      /* the node whose output is the attention's [N, T, C] */
	long long heads;
	bool causal;   /* a mask hides position t from positions before it */
	double p;      /* dropout of the weights */
} IrAttention;

/*
 * Self-attention from the Split of q, k and v at node `split` (nanoGPT's
 * `q, k, v = c_attn(x).split(C, dim=2)` and what follows: views to
 * heads, q k^T scaled by 1/sqrt(C/heads), an optional causal mask, a
 * softmax, an optional dropout, the product with v and the view back to
 * [N, T, C]); false, with where it departs in why, otherwise.
 */
bool ir_match_attention(const Ir *ir, int split, IrAttention *at, char *why, size_t whylen);

#endif
