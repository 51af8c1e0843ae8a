/*
 * autocast.h - the casts of a bf16 program, as PyTorch's autocast makes
 * them (docs/training.md, "Precision").
 */
#ifndef AUTOTM_AUTOCAST_H
#define AUTOTM_AUTOCAST_H

#include "graph.h"

/* The copies made so far: copies[0] tensor id -> its f32 copy, copies[1] its bf16 copy (NULL: none yet). */
typedef VEC(Tensor *) TensorVec;
typedef struct Autocast {
	TensorVec copies[2];
} Autocast;

/*
 * Before a forward node of op is built from in[0..nin) in a bf16 program
 * (g->precision): replace each input by a copy in the type the op runs in,
 * made by a cast node at its first need and shared by later users (a
 * weight is cast once per step). Does nothing in an fp32 program. On an
 * error (a cast that cannot be built) returns false with a message in err.
 */
bool autocast_inputs(Graph *g, Autocast *ac, Op op, Tensor **in, int nin, SrcLoc loc, char *err, size_t errlen);

#endif
