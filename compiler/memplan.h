/*
 * memplan.h - byte offsets of every residency in its pool.
 */
#ifndef AUTOTM_MEMPLAN_H
#define AUTOTM_MEMPLAN_H

#include "place.h"

enum { MEMPLAN_ALIGN = 64 }; /* every offset is a multiple: cache lines, AVX-512 loads */

/* bytes rounded up to MEMPLAN_ALIGN: what a tensor takes in a pool (the ILP counts the same) */
int64_t memplan_round(int64_t bytes);

/*
 * Give every residency of p an offset in its tier's pool so that no two
 * residencies whose lifetimes overlap share a byte, and set the pools'
 * sizes (p->fast_bytes, p->slow_bytes). A fast pool that first fit packs
 * above p->limit (beside p->workspace) while its live bytes fit is packed
 * again (squeeze, memplan.c); the same placement always packs the same way.
 */
void memplan(Placement *p, Arena *a);

/*
 * As memplan, by first fit alone: never squeezed above p->limit. For
 * checking many candidate plans quickly; one that packs this way packs
 * the same way under memplan.
 */
void memplan_first_fit(Placement *p, Arena *a);

/* Check that no two residencies live at once share a byte; describe the first that do. */
bool memplan_verify(const Placement *p, Arena *a, char *err, size_t errlen);

/* Sum over time of the bytes the fast pool must hold at once (its lower bound). */
int64_t memplan_fast_peak(const Placement *p, Arena *a);

#endif
