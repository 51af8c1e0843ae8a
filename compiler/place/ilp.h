/*
 * ilp.h - the integer linear program of a placement, shared by the files
 * that build, search and start it (not an interface of the compiler: the
 * placement's is place.h's place_ilp and place_ilp_swaps).
 *
 *   ilp_program.c  the program: decision points, flows, kernels, capacity,
 *                  a start from a placement, a solution's placement
 *   ilp_rows.c     its rows in words: kinds, what binds, where a limit
 *                  that nothing fits under overflows
 *   ilp_search.c   improving a start: neighbourhoods, solved in worker
 *                  processes, and the repair of what does not pack
 *   ilp_swaps.c    a start with swaps: the greedy's plans
 *   place_ilp.c    the pass: build, start, solve, search, extract
 *
 * Calls go down that list, never up (docs/compiler.md).
 */
#ifndef AUTOTM_ILP_H
#define AUTOTM_ILP_H

#include "place.h"

#include <stdbool.h>
#include <stdint.h>

#include "costmodel.h"
#include "recompute.h"
#include "solver.h"

enum { V_PRE, V_COPY, V_SLOW, V_GONE, NV }; /* vertices of a decision point */
enum { MAX_CONFIG_TENSORS = 10 };     /* at most 2^10 configuration binaries per kernel */
enum { MAX_SPANS = 11 };              /* spanning writes per point: lengths 1, 2, 4, .., PLACE_MAX_SPAN */
enum { MAX_IN_FAST = 40 };            /* columns of one inFast expression */
#define US 1e6                        /* objective unit: microseconds */
#define MIB (1024.0 * 1024.0)         /* capacity unit: MiB */

/*
 * What each row of the program states (its MipTag's kind), for the
 * solver's diagnostics and the message of a limit that binds
 * (ilp_row_name): ROW_X's name is row_kind_name[ROW_X] (ilp_rows.c).
 */
typedef enum RowKind {
	ROW_NONE,
	ROW_SOURCE,        /* a tensor's one unit of flow leaves its source */
	ROW_FLOW,          /* a vertex of a tensor's network at a point: inflow = outflow */
	ROW_COPY_KEPT,     /* an async read's copy is still there after its kernel */
	ROW_HOME,          /* an offloaded tensor ends the step in its home's tier */
	ROW_READY,         /* a recompute reads its chain's inputs where they are ready */
	ROW_IN_PLACE,      /* an output written over its dying input: both fast in the copies the kernel uses */
	ROW_ARGS_FAST,     /* kernels read and write fast memory only */
	ROW_ALGO,          /* a kernel runs one of its algorithms */
	ROW_ALGO_SPACE,    /* its region's workspace holds the chosen algorithm's */
	ROW_CONFIG,        /* a kernel runs in one configuration of its arguments' tiers */
	ROW_CONFIG_FAST,   /* that configuration agrees with an argument's tier */
	ROW_OVERLAP,       /* the moves charged to a kernel hide behind it or cost their excess */
	ROW_OVERLAP_CUT,   /* a move longer than its kernel can take costs its excess on its own */
	ROW_RC_SPACE,      /* a recompute's workspace in another region */
	ROW_RC_ALGO,       /* a recompute runs its step's algorithm, charged its time */
	ROW_SPAN_CUT,      /* a spanning move costs its excess over the kernels it spans */
	ROW_FAST_BYTES,    /* the fast bytes at a step: those before and what changes there */
	ROW_CAPACITY,      /* the fast bytes at a step within the limit (a column bound, a row in ilp_overflow) */
	ROW_CAP_SPACE,     /* ... with the workspace of its kernel */
	ROW_CAP_BOUNDARY,  /* ... at the boundary before it, where outputs are made and copies written out */
	ROW_NKINDS
} RowKind;
#define ROW_TAG(kind, step, object) ((MipTag){(kind), (step), (object)})

/* One decision point of a tensor's flow network; edge fields are MIP columns, -1 if absent. */
typedef struct Point {
	int step;          /* the kernel at this point */
	bool user;         /* that kernel reads or writes the tensor */
	bool copy;         /* the COPY vertex exists here */
	int keep[NV];      /* each vertex to itself at the next point (after the last: the sink) */
	int write, awrite; /* PRE -> SLOW of the next point: sync after this kernel, async overlapping it */
	int drop;          /* COPY -> SLOW of the next point */
	int read, aread;   /* SLOW -> COPY here: sync before this kernel, async overlapping it */
	int discard;       /* PRE -> GONE of the next point: freed after this kernel, made again if needed */
	int dirty;         /* offload: COPY -> PRE here: this kernel updates the fast copy, the home is stale */
	bool overwrite;    /* this kernel overwrites the tensor (an update) */
	int recomp;        /* GONE -> PRE here: recomputed before this kernel */
	bool gone;         /* the GONE vertex exists here */
	const Chain *chain; /* recomp: the kernels that make the value again here */
	bool anchor;       /* the first point, a user, or where a recompute reads it */
	int sread;         /* auto: SLOW here -> COPY at point sread_to, the copy spread over the kernels between */
	int sread_to;
	int nswrite;       /* auto: PRE here -> SLOW at point swrite_to[i], a copy over swrite_len[i] kernels */
	int swrite[MAX_SPANS], swrite_len[MAX_SPANS], swrite_to[MAX_SPANS];
	VEC(int) in_copy;  /* spanning reads arriving in COPY here */
	VEC(int) in_slow;  /* spanning writes arriving in SLOW here */
} Point;

/* A spanning move in flight: the tensor is fast (memory held) at kernels lo..hi because of column col. */
typedef struct Transit {
	int col;
	int lo, hi;
	bool read;         /* a read: its copy is ready only at hi */
} Transit;

/* The flow network of one tensor. */
typedef struct Flow {
	const Tensor *t;
	int first, last;   /* live interval (steps) */
	double mib;        /* size rounded to MEMPLAN_ALIGN, in MiB */
	int64_t size;      /* the same in bytes */
	bool persistent;   /* weight or optimizer state: same residency at the start and end of a step */
	bool forced;       /* must stay fast (the loss) */
	bool offload;      /* persistent, and may be updated in a fast copy of a slow home, written back */
	int updated;       /* offload: the first step whose kernel overwrites it */
	int src[NV];       /* source -> PRE / SLOW of point 0 */
	Point *pt;         /* decision points in step order */
	int m;             /* their number */
	VEC(Transit) transit; /* spanning moves */
} Flow;

typedef struct Term {
	int col;      /* MIP column */
	double coef;  /* its coefficient */
	bool span;    /* a part of a spanning move */
} Term;

/* A spanning move's column: us microseconds of copy over kernels lo..hi-1. */
typedef struct Span {
	int col;
	double us;
	int lo, hi;
} Span;
typedef VEC(Term) TermVec;

/* A short sum of columns: a tensor's inFast at one step. */
typedef struct ColSum {
	int n;
	int col[MAX_IN_FAST];
} ColSum;

/* The steps at which one tensor may be recomputed, with their chains. */
typedef struct RecomputeAt {
	VEC(int) step;
	VEC(Chain *) chain;
	VEC(int) depth;   /* the least depth each step was reached at (find_recomputes) */
	VEC(int) support; /* steps where a consumer's recompute reads it: decision points */
} RecomputeAt;

typedef struct Ilp {
	const Graph *g;
	const Schedule *s;
	const CostModel *cm;
	Arena *a;
	Mip *mip;
	Flow *flow;         /* tensor id -> its network */
	TermVec *async;     /* step -> async edges charged to its kernel (coef: microseconds) */
	TermVec *async_out; /* duplex: step -> its async writes, which run beside the reads */
	bool duplex;        /* the cost model's moves of the two directions overlap (two copy engines) */
	TermVec *cap;       /* step -> terms of D_s - D_{s-1} (coef: MiB) */
	TermVec *writeout;  /* step -> write edges whose fast copy is freed at the boundary before it */
	double constant;    /* objective constant, microseconds */
	int one;            /* the integer column fixed at 1 carrying it */
	bool is_async;      /* optimizer async */
	bool is_static;     /* optimizer static */
	bool moves;         /* tensors may move between the tiers (all but recompute) */
	bool recompute;     /* tensors may be dropped and recomputed (auto, recompute) */
	RecomputeAt *rc;    /* tensor id -> where it may be recomputed (with recompute) */
	bool kernels_fast;  /* every kernel argument must be fast (a GPU) */
	bool offload;       /* weights and optimizer state may be updated in fast copies of slow homes */
	int *algo_col;      /* step -> the first of its algorithm binaries (cm->algos), or -1 */
	VEC(int) *rc_edges; /* step -> the recompute edges whose chain runs its kernel, where it has algorithms */
	VEC(int) *rc_at;    /* step -> the boundary of each of those edges (its recompute runs before that step) */
	int *reuse_col;     /* step -> without kernels_fast, build_reuse's column (1: its output over its input), or -1 */
	int *region;        /* step -> its workspace region: runs of consecutive steps, each with its own column */
	int *workspace;     /* region -> its workspace column (MiB), -1 until one of its kernels has algorithms */
	int window;         /* async window */
	int span;           /* auto: the most kernels a spanning move overlaps; 0: none */
	bool span_all;      /* every span up to it (PlaceOptions.span_all), not only as far as a move needs */
	double *omega;      /* step -> all-fast kernel time: a spanning move's work is spread in proportion */
	VEC(Span) spans;    /* every spanning move's column */
	int *ecol;          /* step -> its excess column e, or -1 */
	double *tmax;       /* step -> the longest its kernel can take (us) */
	int64_t tiny;       /* bytes up to which a tensor gets one point; <= 0: none */
	int64_t tiny_pinned; /* the same for activations and gradients: tiny, with kernels_fast at most a share of the limit */
	double fit;         /* relative misfit of all-slow time and the sum of penalties taken as separable */
	int npoints;        /* decision points in all */
	int separable, configured, approximated; /* kernels by cost form */
	int nrecompute;     /* recompute edges */
	int *dcol;          /* step -> its column D_s, the fast MiB live there */
	double *reuse_mib;  /* step -> with kernels_fast, the MiB of the output its kernel writes over its dying input
	                       (build_reuse), always: taken off D_s as a constant */
	int64_t *wscap;     /* step -> the most its algorithm's workspace may take where tighten capped it (the
	                       gap its packed plan left there), -1: no cap */
	double *dmax;       /* step -> D_s's upper bound: the step's limit, or less where the neighbourhoods
	                       tightened it for packing */
} Ilp;

/* ---- ilp_program.c: the program ---- */

/*
 * Build the program of o into ip: every tensor's flow network, every
 * kernel's time, the capacity rows under the per-step limits.
 */
void ilp_build(Ilp *ip, const Graph *g, const Schedule *s, const PlaceOptions *o, const double *limit_mib, Arena *a,
               PlaceStats *st);
/* Whether o's program offloads weights and optimizer state (PlaceOptions.offload). */
bool ilp_offload_on(const PlaceOptions *o);
/*
 * Bytes that must be fast at each step, into forced[]; returns their
 * maximum (a lower bound of any limit): the loss; with kernels_fast also
 * the arguments of each kernel and the weights and optimizer state.
 */
int64_t ilp_forced_bytes(const Graph *g, const Schedule *s, bool kernels_fast, bool offload, int64_t tiny,
                         int64_t *forced);
/* Node n's measured algorithms where the ILP chooses among them (a GPU profile's algo lines), into *al; else 0. */
int ilp_kernel_algos(const Ilp *ip, const Node *n, const KernelAlgo **al);
/*
 * The shares of a spanning move over kernels lo..hi-1: in proportion to
 * their all-fast times (evenly if those are all zero).
 */
void ilp_span_shares(const Ilp *ip, int lo, int hi, double *share);
/* f's columns that say its tensor is fast at kernel `step` (in a copy, or in a move's flight). */
ColSum ilp_fast_at(const Flow *f, int step);
/* Fast at kernel `step` in a copy the kernel reads or writes: not in a spanning move's flight. */
ColSum ilp_held_at(const Flow *f, int step);


/* ---- ilp_rows.c: the rows in words ---- */

/* Row `row` of ip's program in words: "capacity with workspace at step 37 (conv2)", into buf. */
const char *ilp_row_name(const Ilp *ip, int row, char *buf, size_t size);
/* Whether a row kind bounds the fast tier's bytes (ROW_CAPACITY, ROW_CAP_SPACE, ROW_CAP_BOUNDARY). */
bool ilp_capacity_row(MipTag t);
/*
 * The steps whose capacity binds in solution x (within 1% of the limit):
 * "the fast tier is within 1% of its limit at 3 of 120 steps: 37-39 (...)".
 */
const char *ilp_binding(const Ilp *ip, const double *x, char *buf, size_t size);
/*
 * For a limit under which the solver proved nothing fits: where the fast
 * tier overflows it least ("; even with moves in fractions it overflows
 * at 37-41 (conv5 .. relu7), by up to 2.25 MiB"), from the relaxation of
 * the elastic program, or where it fits, from its search of at most
 * PLACE_OVERFLOW_TIME; "" where neither tells.
 */
const char *ilp_overflow(const Ilp *ip, const PlaceOptions *o, char *buf, size_t size);

/* Whether a binary column is on in solution x. */
bool ilp_on(const double *x, int col);
/* The placement of the solution x: every tensor's path, each kernel's algorithm, the moves in order. */
Placement *ilp_extract(const Ilp *ip, const PlaceOptions *o, const double *x, Arena *a);

/* The columns of a point's edges, into e (MAX_POINT_EDGES); returns how many. */
enum { MAX_POINT_EDGES = 13 + MAX_SPANS };
int ilp_point_edges(const Point *pt, int *e);
/*
 * The columns of f's network that give its tensor the life p0 gives it,
 * into x (and their indices into cols); false, x untouched for f, where
 * p0 does something f cannot express.
 */
bool ilp_start_flow(const Flow *f, const Placement *p0, double *x, int *cols);
/*
 * A start for the solver from a placement p0 of the same schedule: the
 * edge columns of every tensor whose life the program can express, NAN
 * for the rest (the solver completes them). Returns how many tensors it
 * gave.
 */
int ilp_start(const Ilp *ip, const Placement *p0, double *x);

/* ---- ilp_search.c: improving a solution ---- */

/* owner[col]: the tensor whose flow network has the column; -1 for the others (capacity, excess, kernels). */
int *ilp_column_owners(const Ilp *ip);
/* r's objective and bound become obj and min(bound, obj), its gap theirs. */
void ilp_set_objective(MipResult *r, double obj, double bound);
/*
 * Whether the placement of solution x packs under the limit, and if so,
 * into excess[k], what its step k costs beyond its kernel's all-fast time.
 */
bool ilp_packs(const Ilp *ip, const PlaceOptions *o, const double *x, double *excess);
/*
 * r's solution, which does not pack under the limit, repaired: the steps
 * where it overflows tightened and their neighbourhoods solved again,
 * within `seconds` (ilp_search.c says how).
 */
void ilp_repair(Ilp *ip, const PlaceOptions *o, const int *owner, MipResult *r, double cap, double seconds,
                PlaceStats *st);
/*
 * Improve the solution x by neighbourhoods for `seconds` (and `more` where
 * it is still gaining); returns its objective, INFINITY (and *uncompleted)
 * when not even the start could be completed to a solution that packs.
 */
double ilp_improve(Ilp *ip, const PlaceOptions *opts, const int *owner, double *x, double seconds, double more,
                   PlaceStats *st, bool *uncompleted);

#endif
