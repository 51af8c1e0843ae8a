/*
 * place.h - where every tensor lives at every step, and the moves.
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
 * Residencies are given in steps; memplan.c refines them to time points
 * (kernel s at 2s, the boundary before it at 2s-1) so that a copy read by
 * a move at a boundary never shares memory with a copy written at the same
 * boundary. Moves at one boundary run in the order of `moves`.
 */
#ifndef AUTOTM_PLACE_H
#define AUTOTM_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "schedule.h"

typedef enum Tier { TIER_FAST, TIER_SLOW } Tier;

typedef struct Residency {
	int id;           /* index in Placement.res */
	const Tensor *t;  /* the tensor */
	Tier tier;        /* where this copy is */
	int first, last;  /* steps over which the memory holds the value (inclusive) */
	int64_t offset;   /* byte offset in the tier's pool (memplan.c) */
} Residency;

typedef struct Move {
	const Tensor *t;   /* the tensor moved */
	Residency *from;   /* source copy */
	Residency *to;     /* destination copy */
	int at;            /* done before the kernel of this step */
	bool async;        /* overlaps kernels (start..at-1) */
	int start;         /* async: issued before the kernel of this step */
} Move;

typedef VEC(Residency *) ResidencyVec;

typedef struct Placement {
	const char *optimizer;   /* the optimizer that made it */
	const Schedule *s;       /* the schedule it is for */
	ResidencyVec res;        /* every residency */
	ResidencyVec *of;        /* tensor id -> its residencies */
	VEC(Move) moves;         /* every move, in order of `at` */
	int64_t limit;           /* fast-tier byte limit it was made for (0: none) */
	int64_t fast_bytes;      /* pool sizes, from memplan */
	int64_t slow_bytes;
} Placement;

/* Every tensor in the fast tier for its whole live interval; no moves. */
Placement *place_all_fast(const Graph *g, const Schedule *s, Arena *a);

/*
 * A test placement that exercises every move path: each activation is
 * written to the slow tier right after its producer and read back into a
 * fresh fast copy before each of its users.
 */
Placement *place_spill_all(const Graph *g, const Schedule *s, Arena *a);

/* The residency of t that step `step` uses: its fast copy if one covers the step. */
Residency *placement_at(const Placement *p, const Tensor *t, int step);

/* Add a residency / a move (used by the optimizers). */
Residency *placement_add(Placement *p, Arena *a, const Tensor *t, Tier tier, int first, int last);
void placement_move(Placement *p, Arena *a, Residency *from, Residency *to, int at);

/* Check the placement's invariants; describe the first one broken. */
bool placement_verify(const Graph *g, const Placement *p, char *err, size_t errlen);

/* Totals for reports: moves and bytes each way. */
typedef struct MoveStats {
	int nmoves, nasync;             /* moves, of which asynchronous */
	int64_t bytes, bytes_to_fast, bytes_to_slow, bytes_async;
} MoveStats;
MoveStats placement_stats(const Placement *p);

#endif
