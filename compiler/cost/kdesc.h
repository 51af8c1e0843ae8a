/*
 * kdesc.h - kernel descriptions and kernel signatures.
 *
 * A node of the training step runs as a kernel of the runtime, made from
 * a flat description (autotm/rt.h: op, argument shapes, attributes as
 * int64). Code generation emits the description; profiling keys its
 * measurements by the signature, a canonical text of the description
 * that people can read in the profile database:
 *
 *   conv2d [8,64,56,56] [64,64,3,3] -> [8,64,56,56] kh=3 kw=3 sh=1 sw=1 ph=1 pw=1 groups=1
 *
 * An argument in bfloat16 has `bf16` after its dimensions
 * ([8,64,56,56]bf16), so a bf16 program's kernels are profiled apart
 * from float32 ones.
 *
 * Two nodes with the same signature run the same kernel in the same time
 * (identical layers are profiled once). The dropout stream (RT_D_SEED)
 * is left out: it changes the mask, not the time.
 */
#ifndef AUTOTM_KDESC_H
#define AUTOTM_KDESC_H

#include <stddef.h>
#include <stdint.h>

#include "autotm/rt.h"
#include "graph.h"

/* rt.h's description of node n (RT_DESC_LEN entries, unused ones zero). */
void node_describe(const Node *n, int64_t desc[RT_DESC_LEN]);

/* The signature of a description (at most a few hundred bytes; truncated to size). */
const char *kdesc_signature(const int64_t *desc, char *buf, size_t size);

enum { KDESC_SIGNATURE_MAX = 768 }; /* room for any signature */

#endif
