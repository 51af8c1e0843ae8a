/*
 * layout.h - which activations the CPU stores channel-blocked (nChw16c),
 * on the training step after fusion and before scheduling
 * (docs/training.md, "Layouts on the CPU").
 *
 * oneDNN's fastest convolutions read and write nChw16c: 16 channels
 * innermost, a cache line of one pixel. With every tensor row-major, each
 * convolution reorders its input to that layout and its output back, in
 * each of its three kernels: a fifth of a densenet201 step on the CPU.
 * Here a [N, C, H, W] activation or gradient (C a multiple of 16, so the
 * bytes do not change) is stored blocked when every kernel that touches
 * it takes it so; the convolutions' reorders of it are then gone, folded
 * into the kernels next to them, which read and write the blocked layout
 * themselves:
 *
 * - oneDNN's convolutions and concatenation take each argument in either
 *   layout: an argument's layout is its own;
 * - batch normalisation's kernels (runtime/cpu/batchnorm.c; forward,
 *   backward, evaluation), pooling (oneDNN's of two layouts is its
 *   reference implementation; max pooling's backward is ours), the bias
 *   gradients, the same-shape elementwise kernels (activations, their
 *   gradients, add, cast) and a slice of whole channel blocks take their
 *   arguments all blocked or all plain: those tensors go together;
 * - every other kernel (weights, updates, reshapes, dropout, the losses,
 *   the GPU's) takes plain tensors only; a [N, C, 1, 1] tensor has the same
 *   bytes in both layouts and may be read as either.
 *
 * Tensors are grouped by the second rule (union-find) and a group is
 * blocked when no member must be plain. Weights, optimizer state, the
 * input and the labels stay plain: what is saved, loaded and fed never
 * changes. Each value's arithmetic is that of the plain kernels but for
 * the order of a batch normalisation's sums, which the blocked kernel
 * takes in the interpreter's order (batch, then pixels).
 */
#ifndef AUTOTM_LAYOUT_H
#define AUTOTM_LAYOUT_H

#include "graph.h"

/* Mark the tensors of g to store channel-blocked (Tensor.blocked). */
void choose_layouts(Graph *g);

#endif
