/*
 * solver.h - a small mixed-integer linear program and two solvers for it.
 *
 * The placement optimizer (place_ilp.c) states its problem here once:
 * columns with bounds, integrality and an objective coefficient, and
 * sparse rows with lower and upper bounds. mip_solve() hands it to CBC
 * (the default) or lp_solve and returns the best solution found within
 * the time limit, with the best bound the solver proved and the gap
 * between them. The objective is always minimised. Carry a constant term
 * by an integer column fixed at 1, never by a fixed continuous column:
 * lp_solve 5.5.2.5 returns a wrong "optimal" value for the latter.
 */
#ifndef AUTOTM_SOLVER_H
#define AUTOTM_SOLVER_H

#include <stdbool.h>
#include <stddef.h>

#define MIP_INF 1e30 /* a bound at or beyond this is infinite */

typedef struct Mip Mip;

/*
 * What a row states, for messages: its kind (the caller's enumeration,
 * which names it), the step and the object (a tensor, a kernel) it is
 * about; -1 where it is about none.
 */
typedef struct MipTag {
	int kind, step, object;
} MipTag;
#define MIP_UNTAGGED ((MipTag){0, -1, -1})

typedef enum MipStatus {
	MIP_OPTIMAL,     /* proved optimal (within the requested gap) */
	MIP_FEASIBLE,    /* a solution, not proved optimal (time limit) */
	MIP_NO_SOLUTION, /* the time limit came before any solution */
	MIP_INFEASIBLE,  /* proved to have no solution */
	MIP_ERROR,       /* the solver failed (numerics, memory, unknown backend) */
} MipStatus;

typedef struct MipOptions {
	const char *backend; /* "cbc" (NULL: cbc) or "lp_solve" */
	double time_limit;   /* seconds; <= 0: none */
	double gap;          /* stop at this relative gap; <= 0: the solver's own tolerance */
	double abs_gap;      /* and at this absolute gap (objective units); <= 0: none */
	bool verbose;        /* let the solver log on stdout */
	const double *start; /* a known solution to start from (CBC; one value per column, NAN: not given), or NULL */
	bool no_preprocess;  /* CBC: without its integer preprocessing (CglPreProcess), which crashes or wrongly
	                        calls some programs with most columns fixed infeasible */
	bool no_probing;     /* CBC: without probing cuts (a window of the placement's neighbourhood search
	                        is solved in about half the time without them) */
	double deadline;     /* CBC: > 0: seconds after which the solve is stopped, wherever CBC is (see below) */
	double deadline_late; /* ... but if its log has reported a solution below `beat` by then, at this many */
	double beat;          /* (when > deadline) */
	bool relax;          /* solve the linear relaxation only (integrality dropped): its optimum, the
	                        program's bound, is the objective and the bound of an MIP_OPTIMAL result */
} MipOptions;

/*
 * CBC looks at its time limit between the phases of its search; one
 * phase at the root of a large program (a pass of cuts, a heuristic) can
 * run on for seconds past it. With a deadline the solve runs in a child
 * process, stopped (SIGKILL) at the deadline if it has not returned: the
 * result is then MIP_NO_SOLUTION, its solution lost, with `stopped` set
 * and, as `bound`, the best bound CBC's log had reported by then (0
 * where it had reported none; every objective here is a time, never
 * negative, so 0 is a bound). For solves whose caller has a solution
 * already and wants the solver's improvement and bound only within its
 * time. Stopping loses what CBC has found and not yet returned: where
 * its log has reported a solution better than `beat` by the deadline,
 * the solve is stopped only at `deadline_late` (when that is later).
 */
typedef struct MipResult {
	MipStatus status;   /* outcome */
	double objective;   /* objective of the solution (no constant) */
	double bound;       /* a proved lower bound: CBC's best bound, lp_solve's root LP relaxation (CBC: also
	                       without a solution, where its search proved one; else 0) */
	double gap;         /* (objective - bound) / max(|objective|, 1e-9), 0 if optimal */
	double *x;          /* column values, NULL without a solution; freed by mip_result_free */
	double time;        /* seconds spent in the solver */
	bool stopped;       /* stopped at MipOptions.deadline */
} MipResult;

Mip *mip_new(void);
void mip_free(Mip *m);

/* A column lo <= x <= hi with objective coefficient obj; returns its index. */
int mip_add_col(Mip *m, double lo, double hi, double obj, bool integer);

/* A row lo <= sum vals[i] * x[cols[i]] <= hi; duplicate columns are summed, zeros dropped. Returns its index. */
int mip_add_row(Mip *m, MipTag tag, int n, const int *cols, const double *vals, double lo, double hi);

/* A row's tag; its activity under x (every column given); its bounds. */
MipTag mip_row_tag(const Mip *m, int row);
double mip_row_activity(const Mip *m, int row, const double *x);
void mip_row_bounds(const Mip *m, int row, double *lo, double *hi);

/* Add coef to a column's objective coefficient. */
void mip_add_obj(Mip *m, int col, double coef);

/* Change a column's bounds (after it was added). */
void mip_set_bounds(Mip *m, int col, double lo, double hi);

/*
 * The program with its objective dropped and, for every row that soft()
 * accepts, its upper bound softened by a slack column s >= 0 of
 * objective 1 (sum - s <= hi; a row with a lower bound stays hard): minimised, the least excess over those
 * rows' bounds that the other rows allow. slack[i] gets row i's slack
 * column, -1 for a hard row.
 */
Mip *mip_elastic(const Mip *m, bool (*soft)(MipTag), int *slack);

/* Size of the program. */
int mip_ncols(const Mip *m);
int mip_nrows(const Mip *m);
int mip_nintegers(const Mip *m);
long mip_nnz(const Mip *m);

/*
 * The first row that x breaks by more than tol, among the rows whose
 * columns x all gives (NAN: not given); -1 if none.
 */
int mip_broken_row(const Mip *m, const double *x, double tol);

/*
 * The program with the columns that fix[] gives a number (NAN: free) fixed
 * there and left out: each row keeps its free columns, its bounds less
 * the fixed columns' part. A row that any values of its free columns
 * within their bounds meet (one with none left, too) is left out, a row
 * with one free column becomes that column's bounds (rounded inwards for
 * an integer column); if no values can meet a row (by more than 1e-6),
 * the result is NULL (no solution). Rows keep their tags. col_of[j] gets the restricted
 * program's column of column j, -1 for a fixed one; *constant the fixed
 * columns' objective.
 */
Mip *mip_restrict(const Mip *m, const double *fix, int *col_of, double *constant);

/*
 * Solve; fills r (status always set). Returns false only when the solver
 * could not be run at all (unknown backend), with a message in err.
 */
bool mip_solve(const Mip *m, const MipOptions *o, MipResult *r, char *err, size_t errlen);
/* Whether a back end of that name exists (MipOptions.backend). */
bool mip_backend_known(const char *name);
/* "cbc or lp_solve", the back ends, into buf. */
const char *mip_backend_names(char *buf, size_t size);
void mip_result_free(MipResult *r);

/*
 * The lower bound one line of CBC's log reports, if it reports one: the
 * root relaxation ("Continuous objective value is B - ..."), the root's
 * cuts ("... changed objective from A to B ..."), the search's progress
 * and end ("... best possible B ..."). Returns whether it did, into *bound.
 */
bool mip_log_bound(const char *line, double *bound);

/* The objective of a solution one line of CBC's log reports ("Integer solution of V found ..."), if it does. */
bool mip_log_solution(const char *line, double *objective);

/* Whether a solution as the log reports it (rounded) is better than beat (MipOptions.beat). */
bool mip_log_beats(double logged, double beat);

const char *mip_status_name(MipStatus s);

#endif
