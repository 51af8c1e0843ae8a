/*
 * weights.h - how each tensor of a training program starts: weights as
 * PyTorch initialises each layer kind, optimizer state at zero, synthetic
 * input and labels, all from one seed.
 */
#ifndef AUTOTM_WEIGHTS_H
#define AUTOTM_WEIGHTS_H

#include <stdint.h>

#include "graph.h"

#include "autotm/random.h"

/* The generator of a tensor's initial values (RT_INIT_* in autotm/random.h). */
typedef RtInit InitSpec;

/*
 * The initialisation of a graph input, weight or state tensor:
 * conv and dense weights and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * (PyTorch's kaiming_uniform_(a=sqrt(5)) and bias defaults), batchnorm
 * weight 1 and bias 0, optimizer state 0, the input N(0, 1), the labels
 * one-hot with uniformly drawn classes.
 */
InitSpec init_spec(const Tensor *t, uint64_t seed);

/* Fill t's elements as spec says (the runtime uses the same generator). */
void init_fill(const InitSpec *spec, const Tensor *t, double *out);

#endif
