/*
 * placement.h - where every tensor lives at every step, and the moves:
 * the data structure every optimizer fills (placement.c).
 *
 * A placement gives each tensor one or more residencies: a copy of the
 * tensor in one tier (fast or slow) that holds its value over an interval of
 * steps. A kernel at step s reads and writes the residency of each argument
 * that covers s in the tier the placement chose for it. Moves copy a
 * tensor from one residency to another between two steps: a synchronous
 * move runs before the kernel of step `at`; an asynchronous one starts
 * before the kernel of step `start` and is waited for before step `at`.
 * memplan.c then gives every residency an offset in its tier's pool.
 *
 * An asynchronous move runs on a copy engine (one per direction where the
 * target's copies are duplex, else one) while kernels start..at-1 run;
 * `share` divides the engine's work among them, and the runtime issues the
 * copy in chunks of those sizes, one before each of those kernels, so that
 * the engine follows the plan. The destination is held from the issue, the
 * source until the move is waited for.
 *
 * Residencies are given in steps; memplan.c refines them to time points
 * (kernel s at 2s, the boundary before it at 2s-1) so that a copy read by
 * a move at a boundary never shares memory with a copy written at the same
 * boundary. Moves at one boundary run in the order of `moves`.
 *
 * A recompute runs a kernel of the step again, at the boundary before the
 * kernel of step `at`, to make a fast copy of a tensor that was dropped
 * after its earlier uses: the tensor's producer, and before it the
 * producers of values the chain needs that are no longer live, whose
 * outputs go to scratch residencies that live at that boundary only. At
 * a boundary, first the moves that finish there run (synchronous moves,
 * and waits for asynchronous ones), then the recomputes in schedule order
 * of their kernels, then the asynchronous moves issued there start.
 */
#ifndef AUTOTM_PLACEMENT_H
#define AUTOTM_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "optimizer.h"
#include "schedule.h"

typedef enum Tier { TIER_FAST, TIER_SLOW } Tier;

typedef struct KernelAlgo KernelAlgo; /* costmodel.h */

typedef struct Residency {
	int id;           /* index in Placement.res */
	const Tensor *t;  /* the tensor */
	Tier tier;        /* where this copy is */
	int first, last;  /* steps over which the memory holds the value (inclusive) */
	int64_t offset;   /* byte offset in the tier's pool (memplan.c) */
	bool scratch;     /* written and read by recomputes at the boundary before `first` only (first == last);
	                     never the residency of a kernel's argument */
} Residency;

typedef struct Move {
	const Tensor *t;   /* the tensor moved */
	Residency *from;   /* source copy */
	Residency *to;     /* destination copy */
	int at;            /* done before the kernel of this step */
	bool async;        /* overlaps kernels (start..at-1) */
	int start;         /* async: issued before the kernel of this step */
	const double *share; /* async: the fraction of its time the copy engine spends on it during each kernel
	                        start..at-1 (at - start of them, summing to 1); NULL: all of it during kernel
	                        start (AutoTM's charge) */
} Move;

typedef VEC(Residency *) ResidencyVec;

typedef struct Recompute {
	const Node *node;  /* the kernel run again */
	int step;          /* its step in the schedule */
	const Tensor *t;   /* the tensor whose dropped value the chain this belongs to makes again */
	int at;            /* at the boundary before the kernel of this step */
	Residency **args;  /* node->nin + node->nout: the residencies it reads and writes */
} Recompute;

typedef struct Placement {
	OptimizerId optimizer;   /* the optimizer that made it */
	const Schedule *s;       /* the schedule it is for */
	ResidencyVec res;        /* every residency */
	ResidencyVec *of;        /* tensor id -> its residencies */
	VEC(Move) moves;         /* every move, in order of `at` */
	VEC(Recompute) recomputes; /* every recompute, in order of `at`, then of its kernel's step */
	int64_t limit;           /* fast-tier byte limit it was made for (0: none) */
	int64_t fast_bytes;      /* pool sizes, from memplan */
	int64_t slow_bytes;
	const KernelAlgo **algo; /* step -> the algorithm its kernel runs with; NULL: no choice made */
	/*
	 * With ws_in_pool, the algorithms' workspaces are blocks of the fast
	 * pool that live while they are used (memplan.c): ws_offset[step] the
	 * kernel's, rc_ws_offset[step] the one the recomputes at the boundary
	 * before it share (they run one after another); -1 where none is
	 * needed. Else (unified memory) the runtime holds one workspace, the
	 * largest, beside the pool, and `workspace` counts it.
	 */
	bool ws_in_pool;
	int64_t *ws_offset, *rc_ws_offset;
	int64_t workspace;       /* fast memory the runtime holds beside the fast pool, counted against the
	                            limit: the kernels' scratch (place_kernel_scratch), and without
	                            ws_in_pool the largest workspace of the algorithms */
} Placement;

/* The workspace bytes of step's kernel's algorithm (0: none chosen, or none needed). */
int64_t placement_kernel_ws(const Placement *p, int step);
/* The workspace bytes the recomputes at the boundary before step need: the most any of their algorithms needs
   (p finished: its recomputes in order of `at`). */
int64_t placement_boundary_ws(const Placement *p, int step);

/* An empty placement of g (no residencies yet), for the optimizers. */
Placement *placement_new(const Graph *g, const Schedule *s, Arena *a, OptimizerId optimizer);

/* The residency of t that step `step` uses: its fast copy if one covers the step. */
Residency *placement_at(const Placement *p, const Tensor *t, int step);

/* Add a residency / a move (used by the optimizers). */
Residency *placement_add(Placement *p, Arena *a, const Tensor *t, Tier tier, int first, int last);
void placement_move(Placement *p, Arena *a, Residency *from, Residency *to, int at);

/*
 * Make t's value again at the boundary before step `at` into the fast
 * residency `dest` (which starts at `at`): the recomputes of the chain
 * recompute_chain() finds (recompute.h), with scratch residencies for the
 * values that are needed only during it. The chain must exist (ICE).
 */
void placement_recompute(Placement *p, Arena *a, const Tensor *t, int at, Residency *dest);

/*
 * The fraction of an asynchronous move's time that its copy engine spends
 * during kernel `step`: share[step - start] over start..at-1, or all of it
 * at `start` for a move without shares. 0 for a synchronous move.
 */
double move_share(const Move *m, int step);

/*
 * The bytes of asynchronous move m issued before kernel `step`: its
 * chunk [*off, *off + *len), the shares' cumulative fractions of its
 * bytes rounded down to MEMPLAN_ALIGN, the last chunk ending at the
 * tensor's size; a move without shares is one chunk at `start`. False
 * where nothing is issued there (zero bytes, or outside the move).
 */
bool move_chunk(const Move *m, int step, int64_t *off, int64_t *len);

/*
 * The kernels that write their output over the input dying there (in
 * place): reused[r->id] for each residency r of such an output, the
 * input's residency whose memory it takes; NULL for every other
 * residency (reused has p->res.n entries). An output takes its input's
 * memory where schedule_reuse names the input, both copies the kernel
 * uses are fast, the input's ends at the step with no move still reading
 * it after, and the output's begins there. memplan.c gives the two one
 * block; the ILP counts them once (docs/placement.md, "In place").
 */
void placement_reuses(const Placement *p, const Residency **reused);

/* Sort the moves and recomputes into their order and resolve the recomputes' live arguments. */
void placement_finish(Placement *p);

/* Check the placement's invariants; describe the first one broken. */
bool placement_verify(const Graph *g, const Placement *p, char *err, size_t errlen);

/* Totals for reports: moves and bytes each way. */
typedef struct MoveStats {
	int nmoves, nasync;             /* moves, of which asynchronous */
	int nspanning;                  /* asynchronous moves over more than one kernel */
	int64_t bytes, bytes_to_fast, bytes_to_slow, bytes_async;
	int nrecomputed;                /* tensors made again by recomputation (chains) */
	int nrecompute_kernels;         /* kernels those chains run */
	int noffloaded;                 /* weights and optimizer state written back to a slow home after their update */
	int64_t bytes_offloaded;        /* their bytes */
	int nin_place;                  /* outputs written over their kernel's dying input (placement_reuses) */
	int64_t bytes_in_place;         /* their bytes */
} MoveStats;
MoveStats placement_stats(const Placement *p);

/* The name of the optimizer that made p, for reports. */
const char *placement_name(const Placement *p);

#endif
