/*
 * driver.h - what the commands of autotmc share: model options, the
 * pipeline (compile()), the placement options and the program cache.
 * main.c holds the commands and these; sweep.c is a command of its own.
 */
#ifndef AUTOTM_DRIVER_H
#define AUTOTM_DRIVER_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdnoreturn.h>

#include "arena.h"
#include "costmodel.h"
#include "elaborate.h"
#include "graph.h"
#include "place.h"
#include "schedule.h"

/* Options shared by the commands that read a model. */
typedef struct ModelOpts {
	VEC(const char *) dirs; /* -I and the stdlib, in search order */
	VEC(Define) defines;    /* -D name=value */
	const char *file;       /* the model */
} ModelOpts;

enum { OPT_VALUE = 256 }; /* first getopt value of a command's own valued option */


/* How far a command runs the pipeline. */
typedef enum Stage { STAGE_FORWARD, STAGE_TRAINING, STAGE_PROGRAM } Stage;

/* The options of the commands that place tensors (build, run, schedule). */
typedef struct PlaceArgs {
	const char *optimizer;   /* --optimizer */
	const char *limit;       /* --limit BYTES */
	const char *ratio;       /* --ratio S:F */
	const char *hw;          /* --hw FILE */
	const char *db;          /* --profile-db PATH */
	const char *solver;      /* --solver cbc|lp_solve */
	const char *solver_time; /* --solver-time SECONDS */
	const char *threads;     /* --threads N (the profile is per thread count) */
	const char *backend;     /* --backend cpu|gpu (NULL: cpu) */
	const char *gpu_profile; /* --gpu-profile P.tsv: times measured by autotm-gpu-profile */
	const char *slow_dir;    /* --slow-dir DIR of run (its file system is part of the machine's identity) */
} PlaceArgs;

typedef struct Compilation Compilation;
/* What the pipeline has built so far. */
struct Compilation {
	Graph *g;            /* the graph: forward, then training step */
	Schedule *sched;     /* order and liveness of the training step */
	const PlaceArgs *pa; /* how to place (STAGE_PROGRAM) */
	const char *file;    /* the model's file */
	CostModel *cm;       /* kernel and move times (NULL: none needed, none available) */
	PlaceStats st;       /* what the optimizer did */
	Placement *place;    /* where every tensor lives at every step, with offsets */
};

/* The placement options, first among a command's valued options (OPT_VALUE + i). */
#define PLACE_LONG_OPTIONS                                                     \
	{"optimizer", required_argument, NULL, OPT_VALUE + 0},                 \
	{"limit", required_argument, NULL, OPT_VALUE + 1},                     \
	{"ratio", required_argument, NULL, OPT_VALUE + 2},                     \
	{"hw", required_argument, NULL, OPT_VALUE + 3},                        \
	{"profile-db", required_argument, NULL, OPT_VALUE + 4},                \
	{"solver", required_argument, NULL, OPT_VALUE + 5},                    \
	{"solver-time", required_argument, NULL, OPT_VALUE + 6},               \
	{"threads", required_argument, NULL, OPT_VALUE + 7},                   \
	{"backend", required_argument, NULL, OPT_VALUE + 8},                   \
	{"gpu-profile", required_argument, NULL, OPT_VALUE + 9}
#define PLACE_VALUES(pa) &(pa).optimizer, &(pa).limit, &(pa).ratio, &(pa).hw, &(pa).db, &(pa).solver, \
	&(pa).solver_time, &(pa).threads, &(pa).backend, &(pa).gpu_profile
enum { NPLACE_OPTIONS = 10 };

/*
 * Parse the options of a model command. `extra` lists the command's own
 * long options (zero-terminated): flags set their flag pointers; an option
 * whose value is OPT_VALUE + i stores its argument in *values[i].
 */
void parse_model_opts(Arena *a, const char *cmd, int argc, char **argv, ModelOpts *mo,
                      const struct option *extra, void (*usage)(FILE *), const char **const *values);
/* "autotmc: MESSAGE\nTry 'autotmc CMD--help'." and exit 2 (cmd: "run " or NULL). */
noreturn void usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A whole number from 0 to max, or a usage error naming opt. */
long parse_count(const char *cmd, const char *opt, const char *s, long max);
void usage_place_opts(FILE *f);
void usage_model_opts(FILE *f);

/*
 * The pipeline, one pass per line, as far as `stage`. Returns false after
 * printing a diagnostic if the model is wrong.
 */
bool compile(Arena *a, const ModelOpts *mo, Stage stage, Compilation *c);
/* The placement's pools, moves and solver figures, a few lines. */
void print_plan(FILE *f, const Compilation *c, Arena *a);
/*
 * The executable of c's program, built unless the cache
 * ($XDG_CACHE_HOME/autotm/programs) already holds it. NULL after an error
 * message.
 */
const char *program_cached(Arena *a, const Compilation *c, const char *source, bool emit_ll);

/* static, sync, async, first-touch, all-fast, all-slow, spill-all or um */
bool optimizer_known(const char *o);

/* autotmc sweep (sweep.c) */
int cmd_sweep(int argc, char **argv);
void usage_sweep(FILE *f);

#endif
