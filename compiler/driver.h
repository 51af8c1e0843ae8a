/*
 * driver.h - the compiler's pipeline, from a .net file to an executable
 * (driver.c), as far as a command needs it.
 */
#ifndef AUTOTM_DRIVER_H
#define AUTOTM_DRIVER_H

#include <stdbool.h>

#include "arena.h"
#include "cli.h"
#include "costmodel.h"
#include "graph.h"
#include "place.h"
#include "schedule.h"

/* How far a command runs the pipeline. */
typedef enum Stage {
	STAGE_FORWARD,  /* the forward graph (check, graph) */
	STAGE_TRAINING, /* the training step, scheduled (interpret, profile) */
	STAGE_PLACED,   /* tiers, moves and offsets of every tensor (schedule) */
	STAGE_PROGRAM,  /* the executable (build: -o; run, sweep: the program cache) */
} Stage;

/* What the pipeline has built so far. */
typedef struct Compilation {
	const Settings *set; /* the command line */
	Graph *g;            /* the graph: forward, then training step */
	Schedule *sched;     /* order and liveness of the training step */
	CostModel *cm;       /* kernel and move times */
	PlaceStats st;       /* what the optimizer did */
	Placement *place;    /* where every tensor lives at every step, with offsets */
	struct Compilation *eval; /* the evaluation pass of a training program (--val, --with-eval), or NULL */
	const char *exe;     /* the executable */
	bool cached;         /* exe was in the program cache already */
} Compilation;

/*
 * Run the passes, one per line, as far as `stage`. Returns false after
 * printing a diagnostic or an error message.
 */
bool compile(Arena *a, const Settings *s, Stage stage, Compilation *c);

#endif
