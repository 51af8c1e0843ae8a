/*
 * cli.c - the command line of autotmc (cli.h): the commands, the table of
 * options, parsing into Settings and the usage texts made from the table.
 *
 * To add an option: a field in Settings (cli.h), one row in `options`
 * below (its name, the commands that take it, the kind of its value and
 * its help line), and, if it combines with others, a line in
 * check_settings. The parser, --help and the errors follow from the row.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autotm/profile.h"
#include "cache.h"
#include "hwmodel.h"
#include "outfile.h"
#include "plot.h"
#include "solver.h"
#include "util.h"

#ifndef AUTOTM_STDLIBDIR
#define AUTOTM_STDLIBDIR "/usr/local/share/autotm/stdlib"
#endif

/* ---- the commands ------------------------------------------------------- */

static const struct {
	const char *name;    /* autotmc NAME */
	const char *args;    /* after the name in the usage line */
	const char *summary; /* one line for autotmc --help */
	const char *about;   /* the paragraph of its --help */
} commands[NUM_COMMANDS] = {
	[CMD_CHECK] = {"check", "[OPTIONS] FILE", "parse and elaborate a model; print its summary",
	               "Parse and elaborate FILE, verify its graph and print a summary: parameters,\n"
	               "nodes, tensors, forward FLOPs, input, labels and output shapes, and the\n"
	               "training step's size and peak live bytes."},
	[CMD_GRAPH] = {"graph", "[OPTIONS] FILE", "print the graph IR (--train: the training step; --dot, --json)",
	               "Print the graph IR of FILE: graph inputs and weights, then one node per line\n"
	               "with its inputs, attributes, output type, name and source location."},
	[CMD_INTERPRET] = {"interpret", "[OPTIONS] FILE", "train with the reference interpreter (the correctness oracle)",
	                   "Train FILE with the reference interpreter: naive C for every op, on host memory.\n"
	                   "It is slow and meant as the oracle other backends are checked against. Prints\n"
	                   "the loss of every step."},
	[CMD_PROFILE] = {"profile", "[OPTIONS] FILE", "time every kernel of the training step in each memory tier",
	                 "Time every distinct kernel of FILE's training step on this machine with its\n"
	                 "inputs and outputs in each tier (the IO configurations the placement chooses\n"
	                 "from), and the copies between the tiers, and store the times in the profile\n"
	                 "database. Only what the database lacks is measured: a second profile of the\n"
	                 "same model measures nothing, and an interrupted one resumes.\n"
	                 "Documentation: docs/profiling.md."},
	[CMD_SCHEDULE] = {"schedule", "[OPTIONS] FILE", "place the tensors and show the move schedule",
	                  "Place FILE's training step and show the result: for every step the kernel,\n"
	                  "where each input and output lives and the moves before it; then moves and\n"
	                  "bytes each way, the pools against the limit, the predicted step time and the\n"
	                  "solver's size, time and gap (docs/schedule.md)."},
	[CMD_BUILD] = {"build", "[OPTIONS] FILE -o PROG", "compile the training program to an executable",
	               "Compile FILE's training step to LLVM IR, compile that to an object for this\n"
	               "machine and link it with the runtime into the executable PROG. PROG --help\n"
	               "lists the options of the program (iterations, threads, weights, data, ...)."},
	[CMD_RUN] = {"run", "[OPTIONS] FILE", "build (cached) and run the training program",
	             "Build FILE's training program (cached by content under\n"
	             "$XDG_CACHE_HOME/autotm/programs) and run it: the loss of every step, the\n"
	             "median step time and the sizes of the fast and slow pools."},
	[CMD_EVAL] = {"eval", "[OPTIONS] FILE --weights W --data DIR",
	              "evaluate trained weights on a dataset: loss and accuracy",
	              "Build FILE's evaluation program (the network in evaluation mode: batchnorm\n"
	              "by its running statistics, no dropout; placed under --limit like a training\n"
	              "step) and run it on every sample of the dataset DIR with the weights and\n"
	              "running statistics of W. Prints 'loss: X' (the mean cross-entropy) and\n"
	              "'accuracy: Y' (top-1)."},
	[CMD_SWEEP] = {"sweep", "[OPTIONS] FILE -o RESULTS.json",
	               "run every optimizer at every fast-tier size (and thread count)",
	               "Build and run FILE's training program for every optimizer at every ratio of\n"
	               "slow to fast memory (and, with --threads auto, every thread count tried), and\n"
	               "write every run's results record to one JSON file, with plots of the speedup\n"
	               "over all-slow and of predicted against measured step time."},
	[CMD_IMPORT] = {"import", "[OPTIONS] MODEL.onnx", "turn an ONNX model into a .net file and its weights",
	                "Read MODEL.onnx (exported from PyTorch: docs/import.md) and write it as a .net\n"
	                "file (-o, default the standard output) and, with --weights, its initializers\n"
	                "as safetensors under the .net file's names, to train from them with\n"
	                "`autotmc run MODEL.net --weights OUT`. An op or a structure the .net language\n"
	                "has no layer for is refused, naming the node, its op type and inputs."},
};

bool command_find(const char *name, Command *out)
{
	for (int i = 0; i < NUM_COMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0) {
			*out = (Command)i;
			return true;
		}
	return false;
}

/* ---- the options -------------------------------------------------------- */

#define C(cmd) (1u << CMD_##cmd)
#define C_ALL (((1u << NUM_COMMANDS) - 1) & ~C(IMPORT)) /* every command that reads a .net file */
#define C_PLACE (C(SCHEDULE) | C(BUILD) | C(RUN) | C(EVAL))
#define C_COST (C_PLACE | C(SWEEP))
#define C_TRAIN (C(INTERPRET) | C(RUN))

/* The kinds of value an option takes: how it is parsed and where it is stored. */
typedef enum ValueKind {
	V_FLAG,      /* none: sets a bool */
	V_TEXT,      /* any text (a path, a list checked later): a const char * */
	V_SWEEPS,    /* a list of the optimizers a sweep varies (sweepable), checked later: a const char * */
	V_OUTPUT,    /* a file to write: a const char *, checked writable before any work */
	V_LONG,      /* a whole number from min to max: a long */
	V_INT,       /* the same, into an int */
	V_BYTES,     /* a size such as 2GiB: an int64_t */
	V_RATIO,     /* SLOW:FAST: the text, and fast_fraction */
	V_SECONDS,   /* a positive number of seconds: a double */
	V_OPTIMIZER, /* an optimizer of optimizers.def: an OptimizerId */
	V_BACKEND,   /* a target of targets.def: a TargetId */
	V_SOLVER,    /* cbc or lp_solve: a const char * */
	V_THREADS,   /* 1 to max, or (sweep) auto: an int and threads_auto */
	V_SLOW,      /* pmem, dax-kmem or numa:N: slow_kind and numa_node */
	V_PLOTS,     /* png, svg or none: a const char * */
	V_PRECISION, /* fp32 or bf16: a Precision */
	V_ATTENTION, /* fused or composed: an AttentionMode */
	V_HEAD,      /* fused or separate: a HeadMode */
	V_DEFINE,    /* NAME=VALUE, appended to defines */
	V_INCLUDE,   /* a directory, appended to dirs */
} ValueKind;

typedef struct Option {
	const char *name;    /* --name */
	char short_name;     /* -x, or 0 */
	ValueKind kind;      /* its value */
	size_t field;        /* offsetof(Settings, ...) */
	unsigned cmds;       /* C(...) mask of the commands that take it */
	long min, max;       /* V_LONG, V_INT, V_THREADS: the range */
	const char *metavar; /* the value in the usage ("N", "BYTES") */
	const char *help;    /* its usage line(s) */
} Option;

#define F(field) offsetof(Settings, field)

static const Option options[] = {
	/* the program */
	{"precision", 0, V_PRECISION, F(precision), C_ALL, 0, 0, "P",
	 "fp32 (default), or bf16: mixed precision as PyTorch's autocast (bf16 products,\n"
	 "f32 softmax, norms, losses, weights and optimizer state; docs/training.md)"},
	/* placement */
	{"optimizer", 0, V_OPTIMIZER, F(optimizer), C_PLACE, 0, 0, "O",
	 "where tensors live: auto (moves and recomputation), recompute, static,\n"
	 "sync, async (the ILP), checkpoint, first-touch, all-fast, all-slow,\n"
	 "spill-all (a test placement), um (GPU: unified memory); default auto with\n"
	 "--limit or --ratio, else all-fast"},
	{"segments", 0, V_INT, F(segments), C_PLACE, 1, 100000, "K",
	 "checkpoint: K segments (default: the fastest that fits the limit)"},
	{"span", 0, V_INT, F(span), C_PLACE, 1, 1024, "K",
	 "auto: an asynchronous move may span up to K kernels (default 32; 1: AutoTM's moves only)"},
	{"no-offload", 0, V_FLAG, F(no_offload), C_PLACE, 0, 0, NULL,
	 "auto: keep each weight and optimizer state in one tier for the whole step\n"
	 "(AutoTM's rule; default: a slow one may be updated in a fast copy, written back)"},
	{"limit", 0, V_BYTES, F(limit), C_PLACE, 0, 0, "BYTES", "the fast tier's size: 2GiB, 512MiB, ... (B/KiB/MiB/GiB/TiB)"},
	{"ratio", 0, V_RATIO, F(ratio), C_PLACE, 0, 0, "S:F", "or slow:fast relative to the all-fast footprint (4:1: a fifth)"},
	{"backend", 0, V_BACKEND, F(target), C_PLACE | C(PROFILE), 0, 0, "cpu|gpu",
	 "where the program runs (default cpu); gpu: device memory and pinned host\n"
	 "memory, optimizers auto, recompute, checkpoint, sync, async, all-fast and um,\n"
	 "times from --gpu-profile or --hw"},
	{"hw", 0, V_TEXT, F(hw), C_COST, 0, 0, "FILE",
	 "model slow-tier times with a hardware description (hw/*.hw); every\nprediction then says 'modeled'"},
	{"gpu-profile", 0, V_TEXT, F(gpu_profile), C_PLACE, 0, 0, "P.tsv",
	 "the GPU's kernel and link times, measured by autotm-gpu-profile (docs/gpu.md)"},
	{"nondeterministic", 0, V_FLAG, F(nondeterministic), C_PLACE, 0, 0, NULL,
	 "with --gpu-profile: also offer cuDNN's nondeterministic convolution\n"
	 "algorithms (sums with atomics, as PyTorch's default): faster, but runs\n"
	 "differ in their last bits"},
	{"profile-db", 0, V_TEXT, F(db), C_COST | C(PROFILE), 0, 0, "PATH",
	 "the profile database (default $XDG_CACHE_HOME/autotm/profiles.db or\n~/.cache/autotm/profiles.db)"},
	{"solver", 0, V_SOLVER, F(solver), C_COST, 0, 0, "S", "cbc (default) or lp_solve"},
	{"solver-time", 0, V_SECONDS, F(solver_time), C_COST, 0, 0, "SEC",
	 "the solver's time for a placement, all its attempts (default 60)"},
	{"solver-jobs", 0, V_INT, F(solver_jobs), C_COST, 1, 64, "N",
	 "auto: neighbourhoods of the placement re-solved at once, one process each\n(default: one per core)"},
	{"threads", 0, V_THREADS, F(threads), C_COST | C(PROFILE), 1, 4096, "N",
	 "kernel threads (default: every core; profiles are per thread count);\nsweep: also auto"},
	{"ranks", 0, V_INT, F(ranks), C(CHECK) | C(GRAPH) | C_PLACE, 1, 4096, "N",
	 "data parallel: N processes under mpirun, each training on its shard of every\n"
	 "batch (`batch` is each rank's), the gradients averaged over them by all-reduce\n"
	 "nodes of the training step (docs/distributed.md; MPI on the CPU, NCCL on GPUs)"},
	{"ranks-bandwidth", 0, V_TEXT, F(ranks_link), C(SCHEDULE) | C(BUILD) | C(RUN), 0, 0, "BW",
	 "the bandwidth of the link between the ranks, as 450GB/s (default: the --hw file's\n"
	 "[ranks] section, else this machine's, measured by autotm-ranks-probe once and kept)"},
	{"slow-dir", 0, V_TEXT, F(slow_dir), C(RUN) | C(EVAL) | C(PROFILE) | C(SWEEP), 0, 0, "DIR",
	 "directory of the slow tier's file (default: a temporary one in $TMPDIR or /tmp)"},
	/* what to write or show */
	{"output", 'o', V_OUTPUT, F(output), C(BUILD) | C(SWEEP) | C(IMPORT), 0, 0, "FILE",
	 "build: the executable to write; sweep: the results (default MODEL-sweep.json),\n"
	 "rewritten after every run; import: the .net file (default the standard output)"},
	{"weights", 0, V_OUTPUT, F(import_weights), C(IMPORT), 0, 0, "OUT.safetensors",
	 "also write the model's initializers (weights, running statistics) under the\n"
	 ".net file's names"},
	{"no-fuse", 0, V_FLAG, F(no_fuse), C_ALL, 0, 0, NULL,
	 "keep every activation a kernel of its own (default on the CPU: relu, sigmoid and\n"
	 "tanh after a convolution or dense layer, relu after batchnorm, run in the\n"
	 "producer's kernel)"},
	{"fuse", 0, V_FLAG, F(fuse_gpu), C_ALL, 0, 0, NULL,
	 "GPU: fold activations, their gradients and residual sums into the kernels\n"
	 "before them as on the CPU (default there: only the loss with its gradient,\n"
	 "until the GPU's fused kernels are measured)"},
	{"attention", 0, V_ATTENTION, F(attention), C_ALL, 0, 0, "A",
	 "fused: each attention layer without dropout is one kernel, forward and backward,\n"
	 "that never stores the [T, T] scores (flash attention; default on the CPU);\n"
	 "composed: products and a softmax whose scores the placement sees (the GPU's)"},
	{"head-loss", 0, V_HEAD, F(head), C_ALL, 0, 0, "H",
	 "fused: a language model's output layer (without bias), its loss by class ids and\n"
	 "their gradients are one kernel that takes the logits a block of rows at a time and\n"
	 "never stores them (default on the CPU; for the GPU backend asked for only: its\n"
	 "kernel is not yet measured on a GPU);\n"
	 "separate: the logits are tensors"},
	{"tf32", 0, V_FLAG, F(tf32), C(BUILD) | C(RUN) | C(EVAL), 0, 0, NULL,
	 "GPU: let float32 convolutions and products use TF32 tensor cores, as PyTorch's\n"
	 "allow_tf32 (default: off, full float32)"},
	{"emit-llvm", 0, V_FLAG, F(emit_llvm), C(BUILD) | C(RUN) | C(EVAL), 0, 0, NULL,
	 "also write the LLVM module (PROG.ll, or beside the cached program)"},
	{"train", 0, V_FLAG, F(train), C(GRAPH), 0, 0, NULL,
	 "the training step (forward, backward, update) in execution order, with every\ntensor's live interval"},
	{"dot", 0, V_FLAG, F(dot), C(GRAPH), 0, 0, NULL, "print Graphviz dot instead (weights omitted)"},
	{"json", 0, V_FLAG, F(json), C(GRAPH) | C(SCHEDULE), 0, 0, NULL,
	 "print JSON instead (docs/training.md, docs/schedule.md)"},
	{"summary", 0, V_FLAG, F(summary), C(SCHEDULE), 0, 0, NULL, "print only the summary"},
	{"trace", 0, V_OUTPUT, F(trace), C(SCHEDULE), 0, 0, "T.json", "also write the schedule in Chrome Trace Event format (Perfetto)"},
	{"plot", 0, V_OUTPUT, F(plot), C(SCHEDULE) | C(RUN), 0, 0, "P.png|P.svg",
	 "schedule: also plot the bytes in each tier over the step; run: plot every\nstep's loss at the end (gnuplot)"},
	/* training */
	{"iters", 0, V_LONG, F(iters), C_TRAIN | C(SWEEP), 0, 1000000, "N",
	 "training steps (default: interpret 3, run 10, sweep 5, or one epoch of --data;\n0 only initialises)"},
	{"data", 0, V_TEXT, F(data), C_TRAIN | C(EVAL), 0, 0, "DIR",
	 "train on the dataset DIR (x.npy, y.npy), shuffled each epoch from --seed;\neval: the dataset to evaluate"},
	{"epochs", 0, V_LONG, F(epochs), C_TRAIN, 1, 1000000, "E", "with --data: train for E epochs"},
	{"seed", 0, V_LONG, F(seed), C_TRAIN, 0, 0x7fffffff, "S", "seed of weights and synthetic data (default 1)"},
	{"f64", 0, V_FLAG, F(f64), C(INTERPRET), 0, 0, NULL, "compute in float64 (default: float32 results)"},
	{"weights", 0, V_TEXT, F(weights), C_TRAIN | C(EVAL), 0, 0, "W", "load the weights from the safetensors file W"},
	{"save-weights", 0, V_OUTPUT, F(save_weights), C_TRAIN, 0, 0, "OUT", "save the weights after training (safetensors)"},
	{"input", 0, V_TEXT, F(input), C_TRAIN, 0, 0, "X.npy", "the input batch (default: N(0, 1) from the seed)"},
	{"labels", 0, V_TEXT, F(labels), C_TRAIN, 0, 0, "Y.npy", "the labels: one-hot [N, K] floats, or class indices ([N]; [N, T] for labels per position)"},
	{"results", 0, V_OUTPUT, F(results), C(RUN) | C(EVAL), 0, 0, "R.json", "write the results record"},
	{"profile-kernels", 0, V_FLAG, F(profile_kernels), C(RUN), 0, 0, NULL, "print the time of every kernel"},
	{"overcommit", 0, V_FLAG, F(overcommit), C(RUN) | C(EVAL), 0, 0, NULL,
	 "make the memory pools even where they need more memory than is free\n(default: refuse before any step, with the figures)"},
	{"checkpoint", 0, V_TEXT, F(checkpoint), C(RUN), 0, 0, "DIR",
	 "save the run's state to DIR/checkpoint.safetensors at the end, on Ctrl-C and\nevery --save-every K steps"},
	{"save-every", 0, V_LONG, F(save_every), C(RUN), 1, 1000000000, "K", "with --checkpoint: a checkpoint every K steps"},
	{"resume", 0, V_TEXT, F(resume), C(RUN), 0, 0, "DIR",
	 "continue the run saved in DIR (--iters, --epochs count from its start)"},
	{"val", 0, V_TEXT, F(val), C(RUN), 0, 0, "DIR",
	 "evaluate on the dataset DIR at the end (loss, top-1 accuracy) with the\nforward-only evaluation pass, placed under the same limit"},
	{"eval-every", 0, V_LONG, F(eval_every), C(RUN), 1, 1000000000, "K", "with --val: also evaluate every K steps"},
	{"eval", 0, V_FLAG, F(eval_graph), C(SCHEDULE), 0, 0, NULL,
	 "place the evaluation graph (forward only, as autotmc eval runs it) instead of\nthe training step"},
	{"with-eval", 0, V_FLAG, F(with_eval), C(BUILD), 0, 0, NULL,
	 "also compile the evaluation pass, for PROG --val DIR"},
	{"outputs", 0, V_OUTPUT, F(outputs), C(EVAL), 0, 0, "OUT.npy",
	 "write the network's outputs (the input of the final softmax) of every sample,\n[N, classes] float32"},
	/* profile */
	{"runs", 0, V_INT, F(runs), C(PROFILE), 1, 1000, "N",
	 "timed runs per measurement, at most (default 5; the median is kept; runs stop\nafter 1 s once 3 are done)"},
	{"slow", 0, V_SLOW, F(slow_kind), C(PROFILE), 0, 0, "KIND", "the slow tier: pmem (default), dax-kmem or numa:N"},
	{"fast-only", 0, V_FLAG, F(fast_only), C(PROFILE), 0, 0, NULL,
	 "measure only the all-fast time of each kernel and no moves: what modeling\nanother machine with --hw needs"},
	{"quiet", 'q', V_FLAG, F(quiet), C_COST | C(PROFILE), 0, 0, NULL,
	 "print nothing but errors, warnings and what a command exists to print (schedule's plan, run's losses "
	 "go too)"},
	{"strict", 0, V_FLAG, F(strict), C_PLACE, 0, 0, NULL,
	 "a --ratio whose limit cannot hold the step is an error (else the plan is placed for the smallest larger "
	 "limit that works, and its summary says so)"},
	{"verbose", 0, V_FLAG, F(verbose), C_COST, 0, 0, NULL,
	 "print each kernel profiled and the moves' bandwidths (else one line for a profile)"},
	{"export", 0, V_OUTPUT, F(export_path), C(PROFILE), 0, 0, "K.tsv",
	 "with --backend gpu: write the step's distinct kernels for autotm-gpu-profile,\n"
	 "which times them on a GPU (docs/gpu.md)"},
	/* sweep */
	{"optimizers", 0, V_SWEEPS, F(optimizers), C(SWEEP), 0, 0, "LIST", "comma-separated (default static,sync,first-touch) of"},
	{"ratios", 0, V_TEXT, F(ratios), C(SWEEP), 0, 0, "LIST",
	 "slow:fast ratios (default 1:0,8:1,4:1,1:1,0:1; 1:0 gives the fast tier\nnothing, 0:1 the whole all-fast footprint)"},
	{"plots", 0, V_PLOTS, F(plots), C(SWEEP), 0, 0, "png|svg|none",
	 "the plots' format (default svg): R-speedup.svg and R-predicted.svg beside R.json"},
	/* the model */
	{"define", 'D', V_DEFINE, 0, C_ALL, 0, 0, "NAME=VALUE", "override the model parameter NAME (repeatable)"},
	{"include", 'I', V_INCLUDE, 0, C_ALL, 0, 0, "DIR", "search DIR for imports after the importing file's directory"},
};

enum { NUM_CLI_OPTIONS = (int)(sizeof options / sizeof options[0]) };

/* ---- usage -------------------------------------------------------------- */

void usage_main(FILE *f)
{
	fprintf(f, "usage: autotmc COMMAND [OPTIONS] FILE\n\n"
	           "Compile neural-network training programs written in the .net language\n"
	           "for machines with a fast and a slow memory tier.\n\ncommands:\n");
	for (int i = 0; i < NUM_COMMANDS; i++)
		fprintf(f, "  %-10s FILE  %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\noptions:\n"
	           "  -h, --help     show this help (or a command's: autotmc COMMAND --help)\n"
	           "  -V, --version  show the version\n\n"
	           "Documentation: docs/language.md and docs/cli.md.\n");
}

static bool sweepable(OptimizerId o);

void usage_command(FILE *f, Command cmd)
{
	fprintf(f, "usage: autotmc %s %s\n\n%s\n\noptions:\n", commands[cmd].name, commands[cmd].args,
	        commands[cmd].about);
	for (int i = 0; i < NUM_CLI_OPTIONS; i++) {
		const Option *o = &options[i];
		if (!(o->cmds >> cmd & 1))
			continue;
		char head[64];
		if (o->short_name)
			snprintf(head, sizeof head, "-%c, --%s%s%s", o->short_name, o->name, o->metavar ? " " : "",
			         o->metavar ? o->metavar : "");
		else
			snprintf(head, sizeof head, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
		/* the help wrapped to 79 columns, beside the option or, when it is long, under it */
		char text[512], names[256];
		snprintf(text, sizeof text, "%s%s%s", o->help, o->kind == V_SWEEPS ? " " : "",
		         o->kind == V_SWEEPS ? optimizer_names_if(sweepable, names, sizeof names) : "");
		for (char *c = text; *c; c++)
			if (*c == '\n')
				*c = ' ';
		const char *h = text;
		bool beside = strlen(head) < 21;
		if (!beside)
			fprintf(f, "  %s\n", head);
		while (*h) {
			int len = 0, fit = 0;
			while (h[len] && len <= 56) {
				if (h[len] == ' ')
					fit = len;
				len++;
			}
			if (!h[len] || len <= 56)
				fit = len;
			else if (fit == 0)
				fit = len;
			fprintf(f, "  %-21s%.*s\n", beside ? head : "", fit, h);
			beside = false;
			h += fit;
			while (*h == ' ')
				h++;
		}
	}
	fprintf(f, "  %-21s%s\n", "-h, --help", "show this help");
}

noreturn void usage_error(Command cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("autotmc: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd < NUM_COMMANDS)
		fprintf(stderr, "\nTry 'autotmc %s --help'.\n", commands[cmd].name);
	else
		fprintf(stderr, "\nTry 'autotmc --help'.\n");
	exit(EXIT_USAGE);
}

/* ---- values ------------------------------------------------------------- */

int64_t parse_bytes(const char *s)
{
	static const struct {
		const char *unit;
		int64_t scale;
	} units[] = {
		{"", 1}, {"B", 1}, {"KiB", 1LL << 10}, {"MiB", 1LL << 20}, {"GiB", 1LL << 30}, {"TiB", 1LL << 40},
		{"K", 1LL << 10}, {"M", 1LL << 20}, {"G", 1LL << 30}, {"T", 1LL << 40},
	};
	/* a whole number is taken exactly; a fraction ("1.5GiB") through a double */
	const char *p = s;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == s)
		return -1;
	bool fraction = *p == '.';
	const char *q = p + fraction;
	while (fraction && *q >= '0' && *q <= '9')
		q++;
	const char *unit = q;
	while (*unit == ' ')
		unit++;
	for (size_t i = 0; i < countof(units); i++) {
		if (strcmp(unit, units[i].unit) != 0)
			continue;
		if (fraction) {
			errno = 0;
			double v = strtod(s, NULL) * (double)units[i].scale;
			return errno || !(v < 9.2e18) ? -1 : (int64_t)v;
		}
		errno = 0;
		long long v = strtoll(s, NULL, 10);
		long long r;
		if (errno || __builtin_mul_overflow(v, (long long)units[i].scale, &r))
			return -1;
		return (int64_t)r;
	}
	return -1;
}

bool parse_ratio(const char *s, double *fast_fraction)
{
	double sl, fa;
	char tail;
	if (sscanf(s, "%lf:%lf%c", &sl, &fa, &tail) != 2 || !(sl >= 0) || !(fa >= 0) || !(sl + fa > 0) ||
	    sl + fa > 1e300)
		return false;
	*fast_fraction = fa / (sl + fa);
	return true;
}

/* A whole number from min to max, or a usage error naming the option. */
static long parse_long(Command cmd, const Option *o, const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < o->min || v > o->max)
		usage_error(cmd, "--%s expects a whole number from %ld to %ld, got '%s'", o->name, o->min, o->max, s);
	return v;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Append dir to the search path unless the same directory is already on it. */
static void add_dir(Arena *a, Settings *s, const char *dir)
{
	char *real = realpath(dir, NULL);
	for (int i = 0; real && i < s->dirs.n; i++) {
		char *other = realpath(s->dirs.v[i], NULL);
		bool same = other && strcmp(other, real) == 0;
		free(other);
		if (same) {
			free(real);
			return;
		}
	}
	free(real);
	vec_push(a, &s->dirs, dir);
}

/*
 * The standard library: $AUTOTM_STDLIB, then next to the executable (a
 * build tree's ../stdlib, an install's ../share/autotm/stdlib), then the
 * configured directory.
 */
static void add_stdlib_dirs(Arena *a, Settings *s)
{
	const char *env = getenv("AUTOTM_STDLIB");
	if (env && env[0])
		add_dir(a, s, env);
	const char *exe = exe_dir();
	const char *cands[] = {"%s/stdlib", "%s/../stdlib", "%s/../share/autotm/stdlib"};
	for (size_t i = 0; exe && i < countof(cands); i++) {
		char *d = arena_printf(a, cands[i], exe);
		if (is_dir(d) && access(arena_printf(a, "%s/nn.net", d), R_OK) == 0) {
			add_dir(a, s, d);
			break;
		}
	}
	add_dir(a, s, AUTOTM_STDLIBDIR);
}

/* Store the value v of option o into s. */
static void set_value(Arena *a, Settings *s, const Option *o, const char *v)
{
	char *field = (char *)s + o->field;
	Command cmd = s->cmd;
	switch (o->kind) {
	case V_FLAG:
		*(bool *)field = true;
		break;
	case V_TEXT:
	case V_SWEEPS:
	case V_OUTPUT:
		if (!*v)
			usage_error(cmd, "--%s expects a value, got an empty one", o->name);
		*(const char **)field = v;
		break;
	case V_LONG:
		*(long *)field = parse_long(cmd, o, v);
		break;
	case V_INT:
		*(int *)field = (int)parse_long(cmd, o, v);
		break;
	case V_BYTES:
		if ((*(int64_t *)field = parse_bytes(v)) < 0)
			usage_error(cmd, "--%s %s: expected a size such as 2GiB, 512MiB or 1000000 (bytes)", o->name, v);
		break;
	case V_RATIO:
		if (!parse_ratio(v, &s->fast_fraction))
			usage_error(cmd, "--%s %s: expected SLOW:FAST such as 4:1", o->name, v);
		*(const char **)field = v;
		break;
	case V_SECONDS: {
		char *end;
		double t = strtod(v, &end);
		if (!*v || *end || !(t > 0) || t > 1e9)
			usage_error(cmd, "--%s %s: expected a positive number of seconds", o->name, v);
		*(double *)field = t;
		break;
	}
	case V_OPTIMIZER: {
		char names[256];
		if (!optimizer_find(v, (OptimizerId *)field))
			usage_error(cmd, "unknown optimizer '%s' (%s)", v, optimizer_names(~0u, names, sizeof names));
		break;
	}
	case V_BACKEND:
		if (!target_find(v, (TargetId *)field))
			usage_error(cmd, "unknown backend '%s' (cpu or gpu)", v);
		break;
	case V_SOLVER:
		if (!mip_backend_known(v)) {
			char names[64];
			usage_error(cmd, "unknown solver '%s' (%s)", v, mip_backend_names(names, sizeof names));
		}
		*(const char **)field = v;
		break;
	case V_THREADS:
		if (cmd == CMD_SWEEP && strcmp(v, "auto") == 0)
			s->threads_auto = true;
		else
			*(int *)field = (int)parse_long(cmd, o, v);
		break;
	case V_SLOW:
		if (strcmp(v, "pmem") == 0) {
			s->slow_kind = RT_SLOW_TIER_PMEM;
		} else if (strcmp(v, "dax-kmem") == 0) {
			s->slow_kind = RT_SLOW_TIER_DAX;
		} else if (strncmp(v, "numa:", 5) == 0) {
			static const Option node = {"slow numa:N", 0, V_INT, 0, 0, 0, 1023, NULL, NULL};
			s->slow_kind = RT_SLOW_TIER_NUMA;
			s->numa_node = (int)parse_long(cmd, &node, v + 5);
		} else {
			usage_error(cmd, "--slow expects pmem, dax-kmem or numa:N, got '%s'", v);
		}
		break;
	case V_PLOTS:
		if (strcmp(v, "svg") != 0 && strcmp(v, "png") != 0 && strcmp(v, "none") != 0)
			usage_error(cmd, "--%s %s: expected png, svg or none", o->name, v);
		*(const char **)field = v;
		break;
	case V_PRECISION:
		if (strcmp(v, "fp32") != 0 && strcmp(v, "bf16") != 0)
			usage_error(cmd, "--precision expects fp32 or bf16, got '%s'", v);
		*(Precision *)field = strcmp(v, "bf16") == 0 ? PREC_BF16 : PREC_FP32;
		break;
	case V_ATTENTION:
		if (strcmp(v, "fused") != 0 && strcmp(v, "composed") != 0)
			usage_error(cmd, "--attention expects fused or composed, got '%s'", v);
		*(AttentionMode *)field = strcmp(v, "fused") == 0 ? ATTENTION_FUSED : ATTENTION_COMPOSED;
		break;
	case V_HEAD:
		if (strcmp(v, "fused") != 0 && strcmp(v, "separate") != 0)
			usage_error(cmd, "--head-loss expects fused or separate, got '%s'", v);
		*(HeadMode *)field = strcmp(v, "fused") == 0 ? HEAD_FUSED : HEAD_SEPARATE;
		break;
	case V_DEFINE: {
		const char *eq = strchr(v, '=');
		if (!eq || eq == v || !eq[1])
			usage_error(cmd, "-D expects NAME=VALUE, got '%s'", v);
		Define d = {arena_strndup(a, v, (size_t)(eq - v)), eq + 1};
		vec_push(a, &s->defines, d);
		break;
	}
	case V_INCLUDE:
		add_dir(a, s, v);
		break;
	}
}

/* ---- combinations ------------------------------------------------------- */

/* Whether every entry of the comma-separated list is valid by ok(); false for an empty entry. */
static bool each_in_list(Arena *a, const char *list, bool (*ok)(const char *item), const char **bad)
{
	for (const char *p = list;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *item = arena_strndup(a, p, len);
		if (len == 0 || !ok(item)) {
			*bad = item;
			return false;
		}
		if (!e)
			return true;
		p = e + 1;
	}
}

/* What an option that one kind of optimizer takes asks of the chosen one (optimizers.def's columns). */
static bool has_segments(OptimizerId o)
{
	return optimizer_has(o, OFLAG_SEGMENTS);
}

static bool spans(OptimizerId o)
{
	return optimizer_info[o].moves == MOVES_SPANNING;
}

static bool offloads(OptimizerId o)
{
	return optimizer_has(o, OFLAG_OFFLOADS);
}

/* An optimizer a sweep varies: one that takes a limit and runs on the CPU. */
/* The optimizers a sweep varies: those that place for a fast-tier size, on the CPU. */
static bool sweepable(OptimizerId o)
{
	return optimizer_info[o].limit == LIMIT_NEEDED && optimizer_allowed(o, TARGET_CPU);
}

static bool sweep_optimizer(const char *name)
{
	OptimizerId o;
	return optimizer_find(name, &o) && sweepable(o);
}

static bool ratio_ok(const char *s)
{
	double f;
	return parse_ratio(s, &f);
}

static void check_placement(Settings *s)
{
	Command cmd = s->cmd;
	const OptimizerInfo *oi = &optimizer_info[s->optimizer];
	const char *tname = target_info[s->target].name;
	if (s->limit >= 0 && s->ratio)
		usage_error(cmd, "give the fast tier's size as --limit or as --ratio, not both");
	if (s->hw && s->gpu_profile)
		usage_error(cmd, "give the GPU's times as --gpu-profile (measured) or --hw (modeled), not both");
	if (s->gpu_profile && s->target != TARGET_GPU)
		usage_error(cmd, "--gpu-profile is for the GPU backend: give --backend gpu");
	if (s->nondeterministic && !s->gpu_profile)
		usage_error(cmd, "--nondeterministic chooses among the algorithms of a measured profile: give --backend gpu "
		                 "--gpu-profile P.tsv");
	if (!optimizer_allowed(s->optimizer, s->target)) {
		char names[256], where[64] = "";
		for (int t = 0; t < NUM_TARGETS; t++)
			if (oi->targets >> t & 1)
				snprintf(where + strlen(where), sizeof where - strlen(where), "%s%s", where[0] ? ", " : "",
				         target_info[t].name);
		usage_error(cmd, "optimizer '%s' does not run on the %s backend but on %s (--backend); the %s backend's: %s",
		            oi->name, tname, where, tname, optimizer_names(1u << s->target, names, sizeof names));
	}
	bool sized = s->limit >= 0 || s->ratio;
	if (oi->limit == LIMIT_NEEDED && !sized)
		usage_error(cmd, "optimizer '%s' needs the fast tier's size: --limit BYTES or --ratio SLOW:FAST", oi->name);
	if (oi->limit == LIMIT_NONE && sized)
		usage_error(cmd, "optimizer '%s' takes no fast-tier size (%s): drop --limit and --ratio", oi->name,
		            oi->summary);
	bool segments = optimizer_has(s->optimizer, OFLAG_SEGMENTS);
	char which[256];
	if (segments && !sized && s->segments == 0)
		usage_error(cmd, "optimizer '%s' needs --segments K or the fast tier's size (--limit or --ratio)", oi->name);
	if (!segments && s->segments != 0)
		usage_error(cmd, "--segments is for --optimizer %s", optimizer_names_if(has_segments, which, sizeof which));
	if (oi->moves != MOVES_SPANNING && s->span != 0)
		usage_error(cmd, "--span is for --optimizer %s", optimizer_names_if(spans, which, sizeof which));
	if (!optimizer_has(s->optimizer, OFLAG_OFFLOADS) && s->no_offload)
		usage_error(cmd, "--no-offload is for --optimizer %s", optimizer_names_if(offloads, which, sizeof which));
}

/* DIR/file, or NULL without a DIR. */
static const char *in_dir(Arena *a, const char *dir, const char *file)
{
	return dir ? arena_printf(a, "%s/%s", dir, file) : NULL;
}

/*
 * No file the command writes may be another it writes, nor one it reads
 * (the model, its weights and data, the profiles): a wrong command line,
 * refused before any work. --checkpoint DIR continues --resume DIR.
 */
static void check_distinct(Arena *a, const Settings *s, const char *hw_path)
{
	FileUse use[NUM_CLI_OPTIONS + 16];
	int n = 0;
	for (int i = 0; i < NUM_CLI_OPTIONS; i++) {
		const Option *o = &options[i];
		const char *path = o->kind == V_OUTPUT && (o->cmds >> s->cmd & 1) ? *(const char **)((char *)s + o->field)
		                                                                   : NULL;
		if (!path)
			continue;
		const char *flag = o->short_name ? arena_printf(a, "-%c", o->short_name) : arena_printf(a, "--%s", o->name);
		use[n++] = (FileUse){flag, path, true, NULL};
		if (o->field == F(output) && s->emit_llvm)
			use[n++] = (FileUse){"--emit-llvm", arena_printf(a, "%s.ll", path), true, NULL};
	}
	const FileUse more[] = {
		{"--checkpoint", in_dir(a, s->checkpoint, "checkpoint.safetensors"), true, "--resume"},
		{"--resume", in_dir(a, s->resume, "checkpoint.safetensors"), false, NULL},
		{"the model", s->file, false, NULL},
		{"--weights", s->weights, false, NULL},
		{"--input", s->input, false, NULL},
		{"--labels", s->labels, false, NULL},
		{"--data", in_dir(a, s->data, "x.npy"), false, NULL},
		{"--data", in_dir(a, s->data, "y.npy"), false, NULL},
		{"--val", in_dir(a, s->val, "x.npy"), false, NULL},
		{"--val", in_dir(a, s->val, "y.npy"), false, NULL},
		{"--profile-db", s->db, false, NULL},
		{"--gpu-profile", s->gpu_profile, false, NULL},
		{"--hw", hw_path, false, NULL},
	};
	for (size_t i = 0; i < countof(more); i++)
		use[n++] = more[i];
	char err[8192];
	if (outfile_clash(use, n, err, sizeof err))
		usage_error(s->cmd, "%s", err);
}

/*
 * Every file the command will write must be writable now, and the hw
 * file it reads readable and valid, before any work: a wrong path is an
 * error of the system (exit 1), not of the command line.
 */
static void check_files(Arena *a, const Settings *s)
{
	/* an input that decides the cost model: read now, not after an hour of profiling */
	const char *hw_path = NULL;
	if (s->hw) {
		char err[1024];
		HwModel hw;
		hw_path = hw_find(s->hw, a, err, sizeof err);
		if (!hw_path || !hw_load(hw_path, &hw, err, sizeof err)) {
			fprintf(stderr, "autotmc: error: %s\n", err);
			exit(1);
		}
	}
	check_distinct(a, s, hw_path);
	char cerr[PATH_MAX + 256];
	if ((s->cmd == CMD_RUN || s->cmd == CMD_EVAL || s->cmd == CMD_SWEEP) && !cache_check(a, cerr, sizeof cerr)) {
		fprintf(stderr, "autotmc: error: %s\n", cerr);
		exit(1);
	}
	for (int i = 0; i < NUM_CLI_OPTIONS; i++) {
		const Option *o = &options[i];
		const char *path = o->kind == V_OUTPUT && (o->cmds >> s->cmd & 1) ? *(const char **)((char *)s + o->field)
		                                                                   : NULL;
		const char *ll = path && o->field == F(output) && s->emit_llvm ? arena_printf(a, "%s.ll", path) : NULL;
		char err[512];
		if ((path && !outfile_check(path, err, sizeof err)) || (ll && !outfile_check(ll, err, sizeof err))) {
			fprintf(stderr, "autotmc: error: %s\n", err);
			exit(1);
		}
	}
}

/* The combinations of options that no single row can check, and each command's defaults. */
static void check_settings(Arena *a, Settings *s)
{
	Command cmd = s->cmd;
	const char *bad;
	if (s->data && (s->input || s->labels))
		usage_error(cmd, "--data cannot be combined with --input or --labels");
	if (s->epochs && !s->data)
		usage_error(cmd, "--epochs needs --data");
	if (s->epochs && s->iters >= 0)
		usage_error(cmd, "give --iters or --epochs, not both");
	if (s->save_every && !s->checkpoint)
		usage_error(cmd, "--save-every needs --checkpoint DIR");
	if (s->resume && s->weights)
		usage_error(cmd, "--resume loads the weights from the checkpoint; give it or --weights, not both");
	if (s->eval_every && !s->val)
		usage_error(cmd, "--eval-every needs --val DIR");
	if (s->tf32 && s->target != TARGET_GPU)
		usage_error(cmd, "--tf32 is for the GPU backend's float32 kernels: give --backend gpu");

	if (cmd == CMD_RUN && (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE")))
		usage_error(cmd, "autotmc run is started once, not under mpirun: --ranks N starts the ranks itself (or "
		                 "build with --ranks N -o PROG and start PROG under mpirun)");
	if (s->ranks_link && s->ranks < 2)
		usage_error(cmd, "--ranks-bandwidth is the link between ranks: give --ranks N with N >= 2 too");
	if (s->ranks > 1 && !s->threads) /* the cores, shared: the profiles are made at the threads each rank runs */
		s->threads = online_cores() / s->ranks > 1 ? online_cores() / s->ranks : 1;
	if (s->precision == PREC_BF16 && s->f64)
		usage_error(cmd, "--f64 computes everything in float64: give it or --precision bf16, not both");
	if (s->fuse_gpu && s->no_fuse)
		usage_error(cmd, "--fuse and --no-fuse: give one");
	if (s->fuse_gpu && s->target != TARGET_GPU)
		usage_error(cmd, "--fuse is the CPU's default; it asks the GPU backend to fuse as well: give --backend gpu");
	if (s->attention == ATTENTION_FUSED && s->no_fuse)
		usage_error(cmd, "--no-fuse builds every kernel unfused: give it or --attention fused, not both");
	if (s->head == HEAD_FUSED && s->no_fuse)
		usage_error(cmd, "--no-fuse builds every kernel unfused: give it or --head-loss fused, not both");
	switch (cmd) {
	case CMD_EVAL:
		if (!s->data)
			usage_error(cmd, "give the dataset to evaluate: --data DIR");
		if (!s->weights)
			usage_error(cmd, "give the weights to evaluate: --weights W (from --save-weights or a checkpoint)");
		/* fall through */
	case CMD_SCHEDULE:
	case CMD_BUILD:
	case CMD_RUN:
		if (s->optimizer == NUM_OPTIMIZERS)
			s->optimizer = optimizer_default(s->limit >= 0 || s->ratio);
		check_placement(s);
		if ((s->val || s->with_eval || cmd == CMD_EVAL) && optimizer_has(s->optimizer, OFLAG_MANAGED))
			usage_error(cmd, "the evaluation pass is not built for --optimizer %s", optimizer_info[s->optimizer].name);
		if (cmd == CMD_BUILD && !s->output)
			usage_error(cmd, "no output given (-o PROG)");
		if (cmd == CMD_RUN && s->iters < 0 && !s->data)
			s->iters = 10; /* with --data the program's default: one epoch */
		break;
	case CMD_PROFILE:
		if ((s->target == TARGET_GPU) != (s->export_path != NULL))
			usage_error(cmd, s->target == TARGET_GPU
			                     ? "the GPU is profiled by autotm-gpu-profile on the GPU machine: give --export "
			                       "KERNELS.tsv to write the kernels it times (docs/gpu.md)"
			                     : "--export writes the kernels of the GPU backend: give --backend gpu");
		if (s->slow_dir && s->slow_kind != RT_SLOW_TIER_PMEM)
			usage_error(cmd, "--slow-dir applies only to --slow pmem");
		break;
	case CMD_SWEEP:
		if (!each_in_list(a, s->optimizers, sweep_optimizer, &bad)) {
			char names[256];
			usage_error(cmd, "--optimizers: '%s' is not an optimizer a sweep varies (%s; all-slow and all-fast "
			                 "always run)", bad, optimizer_names_if(sweepable, names, sizeof names));
		}
		if (!each_in_list(a, s->ratios, ratio_ok, &bad))
			usage_error(cmd, "--ratios: '%s' is not a ratio SLOW:FAST such as 4:1", bad);
		if (s->iters < 0)
			s->iters = 5;
		if (s->iters == 0)
			usage_error(cmd, "--iters must be at least 1");
		break;
	case CMD_INTERPRET:
		if (s->iters < 0 && !s->data)
			s->iters = 3; /* with --data: one epoch (main.c) */
		break;
	case CMD_CHECK:
	case CMD_GRAPH:
	case CMD_IMPORT:
	case NUM_COMMANDS:
		break;
	}
	if (s->dot && s->json)
		usage_error(cmd, "--dot and --json cannot be combined");
	if (s->plot && !plot_format_ok(s->plot))
		usage_error(cmd, "--plot %s: a plot is written as .png or .svg", s->plot);
	check_files(a, s);
}

/* ---- parsing ------------------------------------------------------------ */

/* The option of cmd named exactly name (len bytes), or NULL. */
static const Option *find_option(Command cmd, const char *name, size_t len)
{
	for (int i = 0; i < NUM_CLI_OPTIONS; i++)
		if ((options[i].cmds >> cmd & 1) && strlen(options[i].name) == len && !strncmp(options[i].name, name, len))
			return &options[i];
	return NULL;
}

/*
 * getopt_long takes any unambiguous prefix of a long option; autotmc
 * takes whole names only, so that --optimizer is never sweep's
 * --optimizers, and an option added later cannot change what an old
 * abbreviation meant.
 */
static void check_long_names(Command cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "--") == 0)
			return;
		if (strncmp(arg, "--", 2) != 0)
			continue;
		const char *name = arg + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		if (len == 4 && !strncmp(name, "help", 4))
			continue;
		const Option *o = find_option(cmd, name, len);
		if (o) {
			i += !eq && o->kind != V_FLAG; /* its value */
			continue;
		}
		for (int k = 0; k < NUM_CLI_OPTIONS; k++)
			if ((options[k].cmds >> cmd & 1) && !strncmp(options[k].name, name, len))
				usage_error(cmd, "unknown option '--%.*s' (did you mean --%s%s%s?)", (int)len, name,
				            options[k].name, options[k].metavar ? " " : "",
				            options[k].metavar ? options[k].metavar : "");
		char given[64];
		snprintf(given, sizeof given, "%.*s", (int)len, name);
		NearName near = {.name = given};
		for (int k = 0; k < NUM_CLI_OPTIONS; k++)
			if (options[k].cmds >> cmd & 1)
				near_consider(&near, options[k].name);
		if (near.best)
			usage_error(cmd, "unknown option '--%.*s' (did you mean --%s?)", (int)len, name, near.best);
		usage_error(cmd, "unknown option '--%.*s'", (int)len, name);
	}
}

void settings_parse(Arena *a, Command cmd, int argc, char **argv, Settings *s)
{
	*s = (Settings){
		.cmd = cmd, .optimizer = NUM_OPTIMIZERS, .target = TARGET_CPU, .limit = -1, .iters = -1, .seed = -1,
		.slow_kind = RT_SLOW_TIER_PMEM, .optimizers = "static,sync,first-touch", .ratios = "1:0,8:1,4:1,1:1,0:1",
		.plots = "svg",
	};
	struct option longopts[NUM_CLI_OPTIONS + 2];
	char shorts[32] = ":h";
	int n = 0;
	longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	for (int i = 0; i < NUM_CLI_OPTIONS; i++) {
		const Option *o = &options[i];
		if (!(o->cmds >> cmd & 1))
			continue;
		longopts[n++] = (struct option){o->name, o->kind == V_FLAG ? no_argument : required_argument, NULL, 256 + i};
		if (o->short_name) {
			size_t len = strlen(shorts);
			shorts[len] = o->short_name;
			shorts[len + 1] = o->kind == V_FLAG ? '\0' : ':';
			shorts[len + 2] = '\0';
		}
	}
	longopts[n] = (struct option){0};
	check_long_names(cmd, argc, argv);
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		if (ch == 'h') {
			usage_command(stdout, cmd);
			exit(0);
		}
		if (ch == ':')
			usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		int i = -1;
		if (ch >= 256)
			i = ch - 256;
		for (int k = 0; ch < 256 && k < NUM_CLI_OPTIONS; k++)
			if (options[k].short_name == ch && (options[k].cmds >> cmd & 1))
				i = k;
		if (i < 0)
			usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		set_value(a, s, &options[i], optarg);
	}
	if (optind >= argc)
		usage_error(cmd, cmd == CMD_IMPORT ? "no ONNX file given" : "no model file given");
	if (optind + 1 < argc)
		usage_error(cmd, "unexpected argument '%s' (one model file at a time)", argv[optind + 1]);
	s->file = argv[optind];
	check_settings(a, s);
	add_stdlib_dirs(a, s);
}
