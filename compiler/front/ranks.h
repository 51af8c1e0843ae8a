/*
 * ranks.h - data parallel: the gradients averaged over the ranks, as
 * nodes of the training step (docs/distributed.md).
 */
#ifndef AUTOTM_RANKS_H
#define AUTOTM_RANKS_H

#include "graph.h"

/*
 * Put an allreduce node between each weight's gradient (what the
 * optimizer's update reads) and every reader of it: the update and, when
 * the optimizer clips, the sum of squares, which then clips by the norm
 * of the averaged gradient, as PyTorch's DDP does. The node is a gradient
 * in, its mean over the ranks out, of the same size: the placement sees
 * it (its time, its output's bytes) like any kernel, and its output may
 * take its input's memory. It comes right after the gradient is made, and
 * the updates after the whole backward pass, so that the runtime's
 * exchange overlaps the backward kernels (every weight's gradient is then
 * live until the updates, as in PyTorch). Returns the nodes added; false
 * (and why) in err where a node cannot be built.
 */
bool ranks_allreduce(Graph *g, int *added, char *err, size_t errlen);

#endif
