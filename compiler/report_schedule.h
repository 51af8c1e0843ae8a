/*
 * report_schedule.h - `autotmc schedule`: the placement step by step.
 */
#ifndef AUTOTM_REPORT_SCHEDULE_H
#define AUTOTM_REPORT_SCHEDULE_H

#include <stdbool.h>
#include <stdio.h>

#include "costmodel.h"
#include "memplan.h"
#include "place.h"

/* Predicted times of every kernel and move of a placement. */
typedef struct Timeline {
	double *kernel_start; /* step -> when its kernel starts (seconds from the step's start) */
	double *kernel_time;  /* step -> the kernel's own time */
	double *step_time;    /* step -> sync moves and recomputes before it + max(kernel, async moves issued with it) */
	double *move_start;   /* move -> when it starts */
	double *move_time;    /* move -> its duration */
	double *recompute_start; /* recompute -> when it starts */
	double *recompute_time;  /* recompute -> its duration */
	double total;         /* predicted step time */
} Timeline;

Timeline *timeline_make(const Placement *p, const CostModel *cm, Arena *a);

/*
 * One line per step (kernel, each argument's tier) with its moves and
 * recomputes before it, each with its reason (reasons.h); names longer
 * than 56 characters shortened in the middle.
 */
void schedule_table(FILE *f, const Graph *g, const Placement *p, const Timeline *tl, const CostModel *cm);
/* The schedule as JSON (docs/schedule.md), with the solver's figures and checkpoint's segments from st. */
void schedule_json(FILE *f, const Graph *g, const Placement *p, const Timeline *tl, const CostModel *cm,
                   const PlaceStats *st);
/* The summary: moves and bytes each way, the pools against the limit and their fragmentation, the
   recomputes, the solver's figures, the predicted step time (schedule, build, run). */
void schedule_plan(FILE *f, const Schedule *s, const Placement *p, const CostModel *cm, const PlaceStats *st,
                   Arena *a);
/* The solver's figures as a JSON object (free() it), or NULL when no ILP was solved. */
char *schedule_solver_json(const PlaceStats *st);
/* The compile-time fields of the results record, a JSON object (AutoTM's names; docs/cli.md). */
char *schedule_record(const Graph *g, const Schedule *s, const Placement *p, const CostModel *cm,
                      const PlaceStats *st, TargetId target, const char *source, Arena *a);
/* Chrome Trace Event format: kernels and recomputes on one lane, moves on two others. */
bool schedule_trace(const char *path, const Graph *g, const Placement *p, const Timeline *tl);
/*
 * The bytes of each tier over the step, plotted with gnuplot (.png or
 * .svg), with the fast limit, the limit left to the tensors beside the
 * kernels' scratch (where there is scratch) and the packed fast pool.
 */
bool schedule_plot(const char *path, const Graph *g, const Placement *p, int64_t scratch);

#endif
