/*
 * autodiff.h - turn a forward graph into a training step.
 */
#ifndef AUTOTM_AUTODIFF_H
#define AUTOTM_AUTODIFF_H

#include <stdbool.h>

#include "graph.h"

typedef struct AutodiffOptions {
	bool input_grad; /* also compute the gradient of the input (gradient checks) */
} AutodiffOptions;

/*
 * Append the backward pass and the SGD updates to g, whose nodes must be
 * the forward pass ending in the loss. opt may be NULL.
 */
bool autodiff(Graph *g, const AutodiffOptions *opt);

/*
 * A bound on the bytes of every tensor of the training step autodiff
 * makes of the forward graph g: each forward tensor, and per tensor a
 * gradient contribution and a partial sum for each of its users, its
 * gradient and a velocity, saturating at INT64_MAX. *at is the forward
 * tensor whose share takes the running total over `limit` (NULL while it
 * does not).
 */
int64_t autodiff_bytes_bound(const Graph *g, int64_t limit, const Tensor **at);

#endif
