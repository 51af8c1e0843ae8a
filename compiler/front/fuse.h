/*
 * fuse.h - the fusion pass: activations folded into the kernel that
 * produces their input, on the training step after autodiff and before
 * scheduling (docs/training.md, "Fusion").
 *
 * An activation whose gradient reads its output (relu, sigmoid, tanh:
 * ACT_FROM_Y) and whose input is a forward conv2d or dense output (relu
 * also after batchnorm and after an add of two, a residual block's) that
 * nothing else reads becomes that node's
 * epilogue (Attrs.post_act): the node writes act(z) directly, z is never
 * stored, and the activation's node is gone. The backward pass needs no
 * change: it already read the activation's output. Then a relu folded
 * into a batchnorm has its gradient folded into batchnorm's backward when
 * nothing else reads it: batchnorm_bwd takes the relu's output as a sixth
 * input and post_act relu, and masks dy itself. Sums, roundings and
 * gradients are those of the unfused step but for the one rounding of z
 * the fused kernel skips.
 *
 * The gradient of an activation (relu, sigmoid, tanh, GELU) whose output
 * a bias_grad reads becomes act_bias_grad with attr.post_act the
 * activation: one node writes the gradient and the bias gradient (the
 * CPU's kernel sums each block while it is in the cache, in bias_grad's
 * order: the same bits).
 *
 * A sum add(a, dx) of two where nothing else reads dx is added by the node
 * that wrote dx, as it writes it (its sum input: node_sum_input): a
 * batchnorm_bwd's or a layernorm_bwd's gradient sum (a densenet's, a
 * residual's), a forward dropout's or a dense's (with its bias) residual
 * add. Where a batchnorm_bwd's a is the first channels of a wider gradient
 * (a slice at offset 0 along axis 1, the gradient of a concatenation's
 * first input: a densenet's layers), batchnorm_bwd reads them there and
 * the slice is not copied. dx is rounded to its type before the sum, as
 * the add did: the same bits as unfused; a dense adds the float32 product
 * (oneDNN's binary post-op, after the activation), which in bf16 skips the
 * product's rounding.
 *
 * The loss by class ids and the first node of the backward pass, its
 * gradient, become one node, softmax_crossentropy_ids_grad: the logits are
 * read once less, and the gradient may be written over them (they die
 * there), which over a GPT's vocabulary is a large part of the peak. In
 * bf16 it reads the bf16 logits and writes their bf16 gradient itself,
 * the casts to float32 and back folded in.
 *
 * Then a language model's output layer, a dense without bias (float32, or
 * bf16 with its weight's gradient cast to float32) whose logits only the
 * fused loss reads, the loss, and the two products
 * of the layer's backward pass (dx = dz w, dw = dz^T x) become one node,
 * dense_crossentropy_ids_grad (fuse_head): it computes the logits a block
 * of rows at a time, the loss and their gradient over the block (in
 * place), then the block's share of dx and dw, so that neither the logits
 * nor their gradient, [rows, vocabulary] each, is ever a tensor: over
 * GPT-2's 50,257 tokens they are the largest of the step. dw is summed
 * over the blocks in another order than the unfused product: equal within
 * float rounding. In bf16 the logits and their gradient are rounded to
 * bf16 as the unfused tensors were, and dw, summed in float32, is the
 * float32 gradient itself (the unfused step rounded it to bf16 and cast it
 * back: the cast goes). In bf16 the CPU kernel is matmul primitives a
 * block (runtime/cpu/head.c), as fast as the separate kernels. The driver
 * folds the head on the CPU by default, and for the GPU only when asked
 * (--head-loss fused: its kernel, runtime/cuda/head.c, has not yet run on
 * a GPU).
 *
 * Last, in a bf16 program, autocast's casts beside kernels that take the
 * bf16 tensor themselves (fuse_casts; base/ops.h's op_bf16_arg):
 * a weight's gradient cast to float32 only for its update and the
 * clipping's sum of squares is read by them in bf16, and so are a
 * layernorm_bwd's dy and an add's input (a residual add of a bf16
 * product: the CPU's own kernel, oneDNN's sum being slow on mixed types;
 * the GPU's add takes any); a layernorm whose output only a cast to bf16 reads
 * writes bf16 itself (rounding to float32, then to bf16, as the two
 * kernels did). Widening is exact, so every fold gives the unfused bits,
 * one kernel and one float32 tensor fewer; a gradient lives to its update
 * in half the bytes (with clipping, every gradient lives to the end of
 * the backward pass). After fuse_head, whose float32 dw replaces such a
 * cast.
 *
 * (Attention is fused where it is built: compiler/front/builtins.c.)
 */
#ifndef AUTOTM_FUSE_H
#define AUTOTM_FUSE_H

#include "graph.h"

/* Fold what can be folded in g (the CPU's kernels); returns the number of nodes folded (activations,
   gradients, sums, the loss's). */
int fuse_epilogues(Graph *g);

/* Only the loss and its gradient (the GPU's default); returns 1 if folded, else 0. */
int fuse_loss(Graph *g);

/* After fuse_loss: the output layer, the fused loss and their gradients as one node; 1 if folded, else 0. */
int fuse_head(Graph *g);

/* After fuse_head: autocast's casts folded into the kernels beside them; returns their number. */
int fuse_casts(Graph *g);

#endif
