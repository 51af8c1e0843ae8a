/*
 * cli.h - the command line of autotmc, parsed into typed settings before
 * any pass runs.
 *
 * Every option is one row of the table in cli.c: its name, the commands
 * that take it, the kind of value (a count, a size, a ratio, an
 * optimizer, ...) and where it goes in Settings. Values are checked as
 * they are parsed, and the combinations (a limit for an optimizer that
 * needs one, --gpu-profile with the GPU backend, ...) right after: a wrong
 * command line is "autotmc: MESSAGE" and exit status 2, before any work.
 * Each command's --help lists its rows.
 */
#ifndef AUTOTM_CLI_H
#define AUTOTM_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>

#include "arena.h"
#include "elaborate.h"
#include "optimizer.h"

enum { EXIT_USAGE = 2 }; /* a wrong command line; 1: an error in the model or a failure */

typedef enum Command {
	CMD_CHECK,
	CMD_GRAPH,
	CMD_INTERPRET,
	CMD_PROFILE,
	CMD_SCHEDULE,
	CMD_BUILD,
	CMD_RUN,
	CMD_EVAL,
	CMD_SWEEP,
	CMD_IMPORT,
	NUM_COMMANDS
} Command;

/* Everything the command line says, typed. Fields not given keep the defaults of settings_parse. */
/* --attention: how attention layers are built (compiler/front/builtins.c) */
typedef enum AttentionMode {
	ATTENTION_DEFAULT,  /* fused on the CPU (unless --no-fuse), composed for the GPU */
	ATTENTION_FUSED,    /* one attention op and its gradient (flash attention) */
	ATTENTION_COMPOSED, /* products, a softmax, dropout: the scores are tensors */
} AttentionMode;

/* --head-loss: whether a language model's output layer and its loss are one kernel (compiler/front/fuse.h) */
typedef enum HeadMode {
	HEAD_DEFAULT,  /* fused on the CPU (unless --no-fuse); separate on the GPU (its kernel is not yet measured) */
	HEAD_FUSED,    /* dense_crossentropy_ids_grad: no logits stored */
	HEAD_SEPARATE, /* dense, the loss and their gradients: the logits are tensors */
} HeadMode;

typedef struct Settings {
	Command cmd;              /* the command */
	/* the model */
	const char *file;         /* the .net file */
	VEC(const char *) dirs;   /* -I and the standard library, in search order */
	VEC(Define) defines;      /* -D NAME=VALUE */
	/* placement and its cost model (schedule, build, run, sweep) */
	OptimizerId optimizer;    /* --optimizer (default: auto with a limit or ratio, else all-fast) */
	int segments;             /* --segments K for checkpoint (0: the fastest that fits the limit) */
	int span;                 /* --span K for auto (0: PLACE_SPAN; 1: AutoTM's moves only) */
	bool no_offload;          /* --no-offload: auto keeps weights and optimizer state in one tier per step */
	TargetId target;          /* --backend (default cpu) */
	int64_t limit;            /* --limit in bytes; -1: not given */
	const char *ratio;        /* --ratio as written; NULL: not given */
	double fast_fraction;     /* --ratio S:F as F / (S + F) */
	const char *hw;           /* --hw NAME or FILE */
	const char *db;           /* --profile-db PATH */
	const char *gpu_profile;  /* --gpu-profile P.tsv */
	bool nondeterministic;    /* --nondeterministic: cuDNN's nondeterministic algorithms too */
	const char *solver;       /* --solver cbc|lp_solve (NULL: cbc) */
	double solver_time;       /* --solver-time SECONDS (0: the default) */
	int solver_jobs;          /* --solver-jobs N (0: one per core) */
	int threads;              /* --threads N (0: every core; with --ranks, the cores shared among the ranks) */
	int ranks;                /* --ranks N: data parallel over N ranks (0 or 1: one process) */
	const char *ranks_link;   /* --ranks-bandwidth BW: the link between the ranks, as a bandwidth ("450GB/s") */
	bool threads_auto;        /* sweep --threads auto */
	const char *slow_dir;     /* --slow-dir DIR */
	/* what to write or show */
	const char *output;       /* -o: build's program, sweep's results */
	bool emit_llvm;           /* --emit-llvm */
	bool tf32;                /* --tf32 */
	bool no_fuse;             /* --no-fuse */
	bool fuse_gpu;            /* --fuse: the GPU backend fuses as the CPU's */
	AttentionMode attention;  /* --attention fused|composed */
	HeadMode head;            /* --head-loss fused|separate */
	bool json, dot, train;    /* --json, --dot, --train */
	bool summary;             /* schedule --summary */
	const char *trace, *plot; /* schedule --trace, --plot */
	/* training (interpret, run, sweep) */
	long iters;               /* --iters (-1: the command's default) */
	long seed;                /* --seed (-1: not given; 1 by default) */
	bool f64;                 /* interpret --f64 */
	Precision precision;      /* --precision fp32|bf16 (default fp32) */
	const char *weights;      /* --weights W */
	const char *save_weights; /* --save-weights OUT */
	const char *import_weights; /* import --weights OUT: the initializers as safetensors */
	const char *input;        /* --input X.npy */
	const char *labels;       /* --labels Y.npy */
	const char *data;         /* --data DIR: a dataset (autotm/dataset.h) */
	long epochs;              /* --epochs E (0: not given) */
	const char *results;      /* --results R.json */
	bool profile_kernels;     /* run --profile-kernels */
	bool overcommit;          /* run, eval --overcommit: passed to the program */
	const char *checkpoint;   /* run --checkpoint DIR */
	long save_every;          /* run --save-every K (0: not given) */
	const char *resume;       /* run --resume DIR */
	const char *val;          /* run --val DIR: evaluate on it (compiles the evaluation pass) */
	long eval_every;          /* run --eval-every K (0: not given) */
	bool with_eval;           /* build --with-eval: compile the evaluation pass */
	bool eval_graph;          /* schedule --eval: place the evaluation graph instead of the training step */
	const char *outputs;      /* eval --outputs OUT.npy */
	/* profile */
	int runs;                 /* --runs N (0: the default) */
	int slow_kind;            /* --slow pmem|dax-kmem|numa:N (RT_SLOW_TIER_*) */
	int numa_node;            /* --slow numa:N */
	bool fast_only;           /* --fast-only */
	bool quiet, verbose;      /* --quiet: errors and warnings only; --verbose: every profiled kernel */
	bool strict;              /* --strict: a --ratio that cannot hold the step is an error */
	const char *export_path;  /* --export K.tsv */
	/* sweep */
	const char *optimizers;   /* --optimizers LIST */
	const char *ratios;       /* --ratios LIST */
	const char *plots;        /* --plots png|svg|none */
} Settings;

/*
 * Parse `autotmc CMD ARGS...` (argv[0] is the command's name) into s:
 * --help prints the command's usage and exits 0; a wrong command line
 * exits 2 with a message.
 */
void settings_parse(Arena *a, Command cmd, int argc, char **argv, Settings *s);

/* The command named name; false if none is. */
bool command_find(const char *name, Command *out);

/* The usage of autotmc, and of one command with its options. */
void usage_main(FILE *f);
void usage_command(FILE *f, Command cmd);

/* "autotmc: MESSAGE\nTry 'autotmc CMD --help'." and exit 2. */
noreturn void usage_error(Command cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "2GiB", "512MiB", "1.5 GiB", "123456" (bytes); -1 if malformed or too large. */
int64_t parse_bytes(const char *s);
/* "S:F" as F / (S + F); false if malformed. */
bool parse_ratio(const char *s, double *fast_fraction);

#endif
