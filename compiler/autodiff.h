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

#endif
