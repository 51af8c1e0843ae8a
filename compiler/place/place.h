/*
 * place.h - placement: choosing where every tensor lives at every step
 * (placement.h's data structure) with an optimizer of optimizers.def.
 *
 * place() (place.c) is the pass: it dispatches to the baselines
 * (place_baselines.c) or the ILP (place_ilp.c), and holds every policy
 * around them: a --ratio below what can work, the re-solves when
 * fragmentation puts the packed fast pool over the limit, and async's
 * fallback to sync's placement.
 */
#ifndef AUTOTM_PLACE_H
#define AUTOTM_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "optimizer.h"
#include "placement.h"

/* ------------------------------------------------------------ the ILP */

typedef struct CostModel CostModel;

enum {
	PLACE_WINDOW = 6,              /* async decision points before each user */
	PLACE_TINY = 64 << 10,         /* tensors up to this many bytes get one decision point */
	PLACE_TINY_PINNED = 1024,      /* kernels_fast: activations and gradients only up to the limit / this too */
	PLACE_MAX_ATTEMPTS = 12,       /* solves of the fragmentation loop */
	PLACE_FRAG_RADIUS = 10,        /* steps around an overflowing tensor whose limit is tightened */
	PLACE_MAX_SEGMENTS = 32,       /* checkpoint: the most segments tried for a limit */
	PLACE_RECOMPUTE_DEPTH = 1,     /* recomputes of a dropped tensor's dropped inputs, and of theirs, ... */
	PLACE_REPAIR_RADIUS = 16,      /* a plan that does not pack: re-solved around its overflow, this many steps */
	PLACE_REPAIR_MAX_OPEN = 256,   /* ... unless that leaves more tensors open than this and a quarter of them */
	PLACE_SPAN = 32,               /* auto: the most kernels an asynchronous move spans */
	PLACE_WS_REGIONS = 8,          /* the ILP's workspace columns: one for each of this many runs of steps */
	PLACE_MAX_SPAN = 1024,         /* the largest span an option may ask for */
	PLACE_SPAN_MAX_NONZEROS = 600000, /* auto by default leaves spanning moves out of a larger program */
	PLACE_GREEDY_MISSES = 8,       /* auto: checkpoint's plans in a row that give no start with swaps, after which no
	                                  more are tried */
	PLACE_LNS_WIDTH = 8,           /* steps of the first neighbourhoods */
	PLACE_MAX_JOBS = 64,           /* neighbourhoods solved at once, at most */
	PLACE_LNS_EASY = 8,            /* neighbourhoods in a row solved to optimality without gain (or out of
	                                  time) after which they widen (narrow) */
	PLACE_LNS_MIN_NONZEROS = 50000, /* auto: a program with a start and this many nonzeros is
	                                    first improved by re-solving neighbourhoods */
	PLACE_WHOLE_NONZEROS = 100000, /* auto: after the neighbourhoods, a program with spanning moves is solved whole
	                                  (for a bound) only below this many nonzeros (its root can outlast the time) */
	PLACE_SQUEEZE_SMALL = 600,     /* plans packed by first fit (auto's starts and neighbourhoods) that it leaves
	                                  above the limit are squeezed: fully up to this many residencies (a
	                                  squeeze of n costs up to 400 n^2: a few ms at 600 residencies), with the
	                                  fewest passes above (memplan_quick: 16, 30 ms at 2200; a full squeeze
	                                  there takes 0.3 s) */
};
#define PLACE_TIME_LIMIT 60.0      /* seconds per placement */
#define PLACE_OVERFLOW_TIME 2.0    /* seconds to find where a limit nothing fits under overflows (ilp_overflow) */
#define PLACE_SPAN_ROOM 2.0         /* auto: a move is offered spans until its kernels take this many times its transfer */
#define PLACE_LNS_OFFLOAD 0.0       /* auto: the share of the neighbourhoods' time before they open weights and state
                                       (0: open from the first) */
#define PLACE_LNS_WINDOW 0.05      /* auto, recompute: a neighbourhood's time limit, a share of the search's (at least
                                      1 s) */
#define PLACE_LNS_GAP 1e-3          /* auto, recompute: a neighbourhood is solved to within this share of the whole step */
#define PLACE_LNS_GAIN 0.01         /* auto, recompute: gained over the last quarter of their time, the neighbourhoods
                                       take the whole program's time too */
#define PLACE_DEADLINE_GRACE 0.5  /* auto, recompute: seconds past its time limit the whole program's solve after the
                                     neighbourhoods is stopped at (MipOptions.deadline) */
#define PLACE_DEADLINE_LOST 1.5    /* auto, recompute: a whole program's solve with a start that fits is stopped at this
                                     many times its time limit (plus the grace); the start is the answer then */
#define PLACE_GREEDY_SHARE 0.1    /* auto: the share of the time for greedy swaps on checkpoint's plans (a start) */
#define PLACE_START_MARGIN 0.01    /* auto: sync's and async's starts are placed this share below the limit */
#define PLACE_TIGHT 0.05           /* auto: async's start keeps the time the starts before it left only where its
                                      program's relaxation is within this share of the best start so far */
#define PLACE_LNS_SHARE 0.6        /* auto, recompute: the share of a solve's time its neighbourhoods get */
#define PLACE_REPAIR_SHARE 0.2     /* auto, recompute: the share of a whole program's solve kept for a repair */
#define PLACE_REPAIR_ROOM 0.05     /* auto, recompute: without a start that packs, the share is kept only where the
                                      limit is this much above the smallest feasible one */
#define PLACE_MAX_SECONDS 1e6      /* the longest kernel or move time the ILP weighs (microseconds: 1e12) */
#define PLACE_GAP 1e-3             /* relative MIP gap the solver may stop at */
#define PLACE_FRAG_MIN_CUT 0.002   /* the fragmentation loop tightens limits by at least this fraction */
#define PLACE_FIT_MEASURED 0.01    /* a kernel whose all-slow time is the sum of its penalties within this is */
#define PLACE_FIT_MODELED 1e-6     /* separable: for measured times (noise) and for modeled ones (exact) */

typedef struct PlaceOptions {
	OptimizerId optimizer;     /* place_ilp: static, sync or async; place: any */
	TargetId target;           /* place: the target; its kernels_fast is copied below */
	int64_t limit;             /* fast-tier bytes */
	const char *ratio;         /* place: non-NULL: the limit is fast_fraction of the peak of live bytes
	                              (--ratio, this text); below the smallest feasible limit, that limit */
	double fast_fraction;      /* with ratio: F / (S + F) */
	const CostModel *cm;       /* kernel and move times */
	const char *solver;        /* "cbc" (NULL: cbc) or "lp_solve" */
	double time_limit;         /* seconds per solve (place: for all its attempts); 0: PLACE_TIME_LIMIT */
	int window;                /* async: decision points up to this many kernels before each user; 0: PLACE_WINDOW */
	int span;                  /* auto: moves span up to this many kernels; 0: PLACE_SPAN, < 0: one (AutoTM's) */
	int ws_regions;            /* the ILP's workspace columns, each held in a run of steps; 0: PLACE_WS_REGIONS */
	bool span_all;             /* auto: every span up to `span`, not only as far as a move needs (a comparison) */
	int64_t tiny;              /* bytes up to which a tensor gets one decision point; 0: PLACE_TINY, < 0: none */
	double gap;                /* relative gap the solver may stop at; 0: PLACE_GAP, < 0: prove optimality */
	double fit;                /* separable-kernel tolerance; 0: PLACE_FIT_MEASURED or PLACE_FIT_MODELED */
	const int64_t *step_limit; /* per-step limits (n entries; the fragmentation loop), NULL: `limit` at every step */
	bool kernels_fast;         /* every kernel reads and writes the fast tier only (a GPU): tensors move, never
	                              stay slow across a kernel that uses them */
	bool verbose;              /* let the solver log */
	bool strict;               /* place: a --ratio whose limit cannot hold the step is an error, not a larger limit */
	bool unexplained;          /* an infeasible limit's message without where it overflows (ilp_overflow's
	                              solves): place's growing limits, whose messages no one reads */
	int segments;              /* checkpoint: segments; 0: the fastest that fits the limit */
	const Placement *start;    /* a placement of the same schedule for the solver to start from, or NULL */
	int lns;                   /* auto, recompute with a start: improve it by re-solving neighbourhoods first;
	                              0: for auto's programs of PLACE_LNS_MIN_NONZEROS nonzeros or more, > 0: always,
	                              < 0: never */
	int offload;               /* weights and optimizer state may live slow between their uses and be updated in
	                              a fast copy written back to the slow home before the step ends; 0: for auto,
	                              > 0: also sync and async, < 0: never (AutoTM's rule: an update writes the home) */
	int jobs;                  /* neighbourhoods re-solved at once, each in a process of its own; 0: one per
	                              core (at most PLACE_MAX_JOBS) */
	int repair;                /* auto, recompute: a solution that does not pack is re-solved around its overflow
	                              (with the rest fixed) rather than whole under tighter limits; 0: when its solve
	                              took a twentieth of the time limit or more, and kept only if faster than the
	                              start, > 0: always, kept even if not, < 0: never */
	bool first_fit;            /* pack by first fit alone, never squeezed above the limit (memplan_first_fit):
	                              the starts of auto's search, whose neighbourhoods are packed so */
	double cutoff;             /* seconds: a program whose linear relaxation is no faster than this is not solved
	                              (none is placed); 0: none. auto's starts after the first that fits */
	double loose;              /* seconds taken off the solve's time limit where the relaxation is more than
	                              PLACE_TIGHT below the cutoff (auto's async start: the time earlier starts left) */
} PlaceOptions;

/*
 * Pack p (memplan), or by first fit where o->first_fit, and where that
 * leaves it above p->limit, squeezed: by memplan up to
 * PLACE_SQUEEZE_SMALL residencies, else by memplan_quick. Either way a
 * plan that packs packs the same under memplan.
 */
void place_pack(const PlaceOptions *o, Placement *p, Arena *a);

/*
 * AutoTM's fragmentation rule, for p memory-planned (memplan) with its pool
 * above limit: the factor that the limits of the steps where it overflows
 * are scaled by, 1 - max(half the relative excess, least), at least 0.90.
 */
double place_frag_scale(const Placement *p, int64_t limit, double least);

/* Whether residency r of p (memory-planned) is fast and reaches above limit beside the kernels' workspace. */
bool place_above_limit(const Placement *p, const Residency *r, int64_t limit);
/*
 * p packed above limit where only workspaces (Placement.ws_in_pool)
 * reach above it: those kernels get the fastest of o->cm's algorithms
 * that fits the gap the residencies leave at their step (and at each
 * boundary where a recompute runs them), the residencies unchanged; p
 * packed again (place_pack). Returns whether p fits now.
 */
bool place_fit_workspaces(Placement *p, const Schedule *s, const PlaceOptions *o, int64_t limit, Arena *a);
/*
 * Which workspaces of step k in p's fast pool (Placement.ws_in_pool) reach
 * above limit beside p->workspace: PLACE_WS_KERNEL, its kernel's;
 * PLACE_WS_BOUNDARY, the one of the recomputes at the boundary before it;
 * 0: none.
 */
enum { PLACE_WS_KERNEL = 1, PLACE_WS_BOUNDARY = 2 };
int place_ws_above_limit(const Placement *p, int k, int64_t limit);

/* Whether AUTOTM_SOLVER_LOG is set: the solver's log, the fragmentation attempts, neighbourhoods and repairs on stderr. */
bool place_solver_log(void);

/* The kernels' scratch by o->cm: the most any kernel of s needs beside its arguments (0: none known). */
int64_t place_kernel_scratch(const Schedule *s, const CostModel *cm);

/*
 * The size up to which an activation or gradient gets one decision point
 * (weights and state: `tiny`). With kernels_fast (a GPU) one point pins a
 * tensor fast for life, so there it is also at most limit / PLACE_TINY_PINNED.
 */
static inline int64_t place_tiny_pinned(int64_t tiny, int64_t limit, bool kernels_fast)
{
	return kernels_fast && tiny > limit / PLACE_TINY_PINNED ? limit / PLACE_TINY_PINNED : tiny;
}

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
	double total_time;         /* seconds building and solving, all attempts (place) */
	double creation_times[PLACE_MAX_ATTEMPTS];     /* per attempt */
	double optimization_times[PLACE_MAX_ATTEMPTS]; /* per attempt */
	int64_t attempt_limit[PLACE_MAX_ATTEMPTS];     /* smallest per-step limit of each attempt */
	int64_t attempt_pool[PLACE_MAX_ATTEMPTS];      /* fast pool memplan made of its result */
	int segments;              /* checkpoint: the segments of the placement returned */
	int recompute_edges;       /* the ILP's recompute choices (auto, recompute) */
	int start_tensors;         /* tensors whose life the start placement gave the solver */
	long spans_dropped;        /* auto: nonzeros of the program with spanning moves, left out as too large; 0 */
	const char *start_name;    /* the start placement: "sync", "checkpoint" (its lazy form), or NULL */
	double start_time;         /* its predicted seconds */
	int lns_solves, lns_better; /* neighbourhood re-solves (the start's completion included), and those that improved */
	double lns_start, lns_gain; /* the start's objective (seconds), and what the neighbourhoods took off it */
	double lns_time;           /* seconds the neighbourhoods took */
	int lns_jobs;              /* neighbourhoods they solved at once */
	int lns_merges;            /* results solved from a plan that had improved since, merged into the new one */
	bool lns_extended;         /* they were still improving and took the whole program's time too */
	bool lns_bound;            /* after them, the whole program was solved for a bound (false: bound 0) */
	bool lns_stopped;          /* ... and stopped at its deadline (MipOptions.deadline): its bound as its log
	                              last reported it, no solution of its own */
	int repairs;               /* re-solves around the overflow of a solution that did not pack (repair) */
	bool repaired;             /* the last of them made it pack */
	double repair_cost;        /* what that added to the objective (seconds) */
	int64_t ratio_limit;       /* place: the limit --ratio asked for, where it could not hold the step and the
	                              placement is for a larger one (Placement.limit); else 0 */
	const char *ratio_why;     /* ... why it could not (the error that limit alone gave) */
	int ratio_tried;           /* ... the larger limits tried before the one placed */
	Placement *squeezed;       /* with PlaceOptions.first_fit: the fastest solution that packed only squeezed
	                              (memplan), before its repair or re-solve; or NULL */
	double squeezed_time;      /* its predicted seconds */
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
 * A start for auto: all-fast, with the largest tensors written out and
 * read back by spanning moves over the gaps between their uses until the
 * live fast bytes of every step are at most margin x o->limit (a greedy,
 * built on auto's program). With a base (checkpoint's lazy plan), its
 * recomputed tensors keep its plan and the others are swapped so. Where
 * no tensor's gap frees the fullest step, the largest offloadable weight
 * or optimizer state whose path from a slow home frees it is offloaded
 * (unless o->offload < 0), and the greedy goes on. Each
 * step's target leaves room for the least workspace its region needs,
 * and the program's own count of the plan's bytes must fit. NULL where
 * that is not met; *stuck then if some step could not be freed enough
 * (no lower margin can be reached either).
 */
Placement *place_ilp_swaps(const Graph *g, const Schedule *s, const PlaceOptions *o, double margin,
                           const Placement *base, bool *stuck, Arena *a);

/*
 * The placement of optimizer o->optimizer for target o->target, under
 * o->limit or o->fast_fraction of the peak (docs/placement.md):
 *   - baselines are made directly (first-touch walks again with a lower
 *     page budget while packing puts its pool over the limit);
 *   - the ILP optimizers are solved, packed (memplan) and, while
 *     fragmentation puts the fast pool over the limit, solved again with
 *     the per-step limits around the overflowing tensors tightened (every
 *     attempt's times go into st); async falls back to sync's placement
 *     when its re-solves find none;
 *   - a --ratio below the smallest feasible limit places for that limit
 *     (a few growing limits, up to the peak), with a note on stderr.
 * Returns NULL with a message in err when no placement exists or none was
 * found. st may be NULL. The memory plan may or may not have been made:
 * memplan() gives the same offsets again.
 */
Placement *place(const Graph *g, const Schedule *s, const PlaceOptions *o, Arena *a, PlaceStats *st, char *err,
                 size_t errlen);

/* ------------------------------------------------------- the baselines */

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
 * pages are freed after its last use; no moves. One walk with `budget`
 * bytes of fast pages: place() walks again with a lower budget while
 * packing puts the pool over the limit (pages do not fragment; a packed
 * pool can).
 */
enum { PLACE_PAGE = 4096 };

/*
 * PyTorch's checkpoint_sequential policy with `segments` segments: the
 * forward kernels are cut into that many runs of equal length (the last
 * takes the rest); in every run but the last, the activations no later
 * forward kernel reads are dropped after their last forward use and
 * recomputed, all of them, before the run's first backward kernel that
 * needs one. Everything else stays fast, as in all-fast. place() picks
 * the segments when none are given: the fastest that fits the limit.
 * lazy: each dropped tensor is made again only where it is first needed
 * (its own first backward use, or a dropped consumer's recompute), as
 * the ILP can express it; the same recomputes in less memory (a start
 * for the ILP). Tensors of at most `least` bytes are kept.
 */
Placement *place_checkpoint_segments(const Graph *g, const Schedule *s, int segments, bool lazy, int64_t least,
                                     Arena *a);
/*
 * The first step of each of `segments` runs of the forward kernels
 * (1 <= segments <= place_forward_steps(s)), into first[0..segments]
 * (first[segments]: the forward's end): of equal length, the last
 * taking the rest (checkpoint_sequential's), or with balanced of about
 * equal bytes written: run k ends at the first kernel where the outputs
 * so far reach k / segments of the forward's, each run at least one
 * kernel long.
 */
void place_checkpoint_starts(const Schedule *s, int segments, bool balanced, int *first);
/* checkpoint's plan on place_checkpoint_starts' runs, equal or balanced (those: a start for the ILP). */
Placement *place_checkpoint_runs(const Graph *g, const Schedule *s, int segments, bool balanced, bool lazy,
                                 int64_t least, Arena *a);

/* The steps of the forward pass (the first steps, whose kernels are differentiable). */
int place_forward_steps(const Schedule *s);
Placement *place_first_touch_walk(const Graph *g, const Schedule *s, int64_t budget, int64_t limit, Arena *a);

#endif
