/*
 * memplan.h - byte offsets of every residency in its pool.
 */
#ifndef AUTOTM_MEMPLAN_H
#define AUTOTM_MEMPLAN_H

#include "place.h"

enum { MEMPLAN_ALIGN = 64 }; /* every offset is a multiple: cache lines, AVX-512 loads */
enum { MEMPLAN_WS_ALIGN = 256 }; /* a workspace's offset: as cudaMalloc aligns what cuDNN is given */

/* bytes rounded up to MEMPLAN_ALIGN: what a tensor takes in a pool (the ILP counts the same) */
int64_t memplan_round(int64_t bytes);

/*
 * Give every residency of p an offset in its tier's pool so that no two
 * residencies whose lifetimes overlap share a byte, and set the pools'
 * sizes (p->fast_bytes, p->slow_bytes). With p->ws_in_pool the
 * algorithms' workspaces are blocks of the fast pool too, each live while
 * its kernel (or the recomputes at a boundary) runs: p->ws_offset and
 * p->rc_ws_offset. A fast pool that first fit packs above p->limit
 * (beside p->workspace) while its live bytes fit is packed again
 * (squeeze, memplan.c), and one with workspaces that still does not fit,
 * with every workspace on top of the residencies if that is smaller; the
 * same placement always packs the same way.
 */
void memplan(Placement *p, Arena *a);

/*
 * As memplan, by first fit alone: never squeezed above p->limit. For
 * checking many candidate plans quickly; one that packs this way packs
 * the same way under memplan.
 */
void memplan_first_fit(Placement *p, Arena *a);

/*
 * As memplan, with the fewest squeeze passes (MEMPLAN_SQUEEZE_MIN): one
 * that packs this way under p->limit packs under memplan too (its passes
 * are the first of memplan's).
 */
void memplan_quick(Placement *p, Arena *a);

/*
 * The bytes of p's fast residencies live at each time point t (kernel s
 * at 2s, the boundary before it at 2s-1), as live[t + 1] for t from -1 to
 * 2 * p->s->n; without the algorithms' workspaces.
 */
int64_t *memplan_fast_live(const Placement *p, Arena *a);

/*
 * The largest gap below cap in p's packed fast pool between the
 * residencies live at each kernel (kernel[step]) and at the boundary
 * before it (boundary[step], if not NULL): the most a workspace there
 * can take.
 */
void memplan_holes(const Placement *p, int64_t cap, int64_t *kernel, int64_t *boundary);

/* Check that no two residencies live at once share a byte; describe the first that do. */
bool memplan_verify(const Placement *p, Arena *a, char *err, size_t errlen);

/* Sum over time of the bytes the fast pool must hold at once (its lower bound). */
int64_t memplan_fast_peak(const Placement *p, Arena *a);

#endif
