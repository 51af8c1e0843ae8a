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

typedef struct KernelAlgo KernelAlgo; /* costmodel.h */

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
	const KernelAlgo **algo; /* step -> the algorithm its kernel runs with; NULL: no choice made */
	int64_t workspace;       /* the largest workspace of those algorithms: device memory the runtime
	                            holds beside the fast pool, counted against the limit */
} Placement;

/* An empty placement of g (no residencies yet), for the optimizers. */
Placement *placement_new(const Graph *g, const Schedule *s, Arena *a, const char *optimizer);

/* Every tensor in the fast tier for its whole live interval; no moves. */
Placement *place_all_fast(const Graph *g, const Schedule *s, Arena *a);

/*
 * A test placement that exercises every move path: each activation is
 * written to the slow tier right after its producer and read back into a
 * fresh fast copy before each of its users.
 */
Placement *place_spill_all(const Graph *g, const Schedule *s, Arena *a);

/*
 * Every tensor in the slow tier for its whole live interval; no moves.
 * Nothing has to be fast: kernels read and write the slow tier directly
 * and the host reads the loss from it.
 */
Placement *place_all_slow(const Graph *g, const Schedule *s, Arena *a);

/*
 * The NUMA first-touch baseline: walk the schedule with a page-granular
 * (4 KiB) count of fast bytes; persistent tensors, input and labels are
 * placed at step 0 in tensor order, then each kernel's outputs when it
 * runs: fast if its pages fit under the limit, else slow; a tensor's
 * pages are freed after its last use; no moves. The memory plan is made
 * here too (memplan): if packing pushes the fast pool over the limit, the
 * page budget is lowered by the excess and the walk repeated.
 */
Placement *place_first_touch(const Graph *g, const Schedule *s, int64_t limit, Arena *a);

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

/* ------------------------------------------------------------ the ILP */

typedef struct CostModel CostModel;

enum {
	PLACE_WINDOW = 6,              /* async decision points before each user */
	PLACE_TINY = 64 << 10,         /* tensors up to this many bytes get one decision point */
	PLACE_MAX_ATTEMPTS = 12,       /* solves of the fragmentation loop */
	PLACE_FRAG_RADIUS = 10,        /* steps around an overflowing tensor whose limit is tightened */
};
#define PLACE_TIME_LIMIT 60.0      /* seconds per placement */
#define PLACE_GAP 1e-3             /* relative MIP gap the solver may stop at */
#define PLACE_FRAG_MIN_CUT 0.002   /* the fragmentation loop tightens limits by at least this fraction */
#define PLACE_FIT_MEASURED 0.01    /* a kernel whose all-slow time is the sum of its penalties within this is */
#define PLACE_FIT_MODELED 1e-6     /* separable: for measured times (noise) and for modeled ones (exact) */

typedef struct PlaceOptions {
	const char *optimizer;     /* "static", "sync" or "async"; place_optimize also takes
	                              "first-touch", "all-fast", "all-slow" and "spill-all" */
	int64_t limit;             /* fast-tier bytes */
	const CostModel *cm;       /* kernel and move times */
	const char *solver;        /* "cbc" (NULL: cbc) or "lp_solve" */
	double time_limit;         /* seconds per solve (place_optimize: for all its attempts); 0: PLACE_TIME_LIMIT */
	int window;                /* async: decision points up to this many kernels before each user; 0: PLACE_WINDOW */
	int64_t tiny;              /* bytes up to which a tensor gets one decision point; 0: PLACE_TINY, < 0: none */
	double gap;                /* relative gap the solver may stop at; 0: PLACE_GAP, < 0: prove optimality */
	double fit;                /* separable-kernel tolerance; 0: PLACE_FIT_MEASURED or PLACE_FIT_MODELED */
	const int64_t *step_limit; /* per-step limits (n entries; the fragmentation loop), NULL: `limit` at every step */
	bool kernels_fast;         /* every kernel reads and writes the fast tier only (a GPU): tensors move, never
	                              stay slow across a kernel that uses them */
	bool verbose;              /* let the solver log */
} PlaceOptions;

typedef struct PlaceStats {
	int rows, cols, integers;  /* size of the last program solved */
	long nonzeros;
	int decision_points;       /* over all tensors */
	int separable, configured, approximated; /* kernels whose cost is separable, by configuration
	                                            binaries, or fitted as separable although it is not */
	double creation_time;      /* seconds to build the last program */
	double solve_time;         /* seconds the solver took on it */
	double objective;          /* predicted seconds of a step, as the ILP counts them */
	double bound;              /* a proved lower bound on it */
	double gap;                /* relative (objective - bound) / objective */
	double predicted_time;     /* placement_predict() of the placement returned */
	const char *status;        /* "optimal", "feasible (time limit)", ... */
	int64_t min_limit;         /* the smallest feasible limit */
	int nattempts;             /* solves of the fragmentation loop */
	double total_time;         /* seconds building and solving, all attempts (place_optimize) */
	double creation_times[PLACE_MAX_ATTEMPTS];     /* per attempt */
	double optimization_times[PLACE_MAX_ATTEMPTS]; /* per attempt */
	int64_t attempt_limit[PLACE_MAX_ATTEMPTS];     /* smallest per-step limit of each attempt */
	int64_t attempt_pool[PLACE_MAX_ATTEMPTS];      /* fast pool memplan made of its result */
} PlaceStats;

/*
 * The placement that minimises the predicted step time under the limit
 * (docs/placement.md has the formulation). Returns NULL with a message in
 * err when the limit is infeasible (the message gives the smallest
 * feasible one), when no solution was found within the time limit, or on
 * a solver error. st may be NULL. No memory plan is made.
 */
Placement *place_ilp(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                     char *err, size_t errlen);

/*
 * The placement of optimizer o->optimizer with its memory plan: for the
 * ILP optimizers place_ilp, then memplan; while fragmentation puts the
 * fast pool over the limit, the per-step limits around the overflowing
 * tensors are tightened and the ILP solved again (every attempt's times
 * go into st). Baselines are made and planned directly.
 */
Placement *place_optimize(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st,
                          char *err, size_t errlen);

#endif
