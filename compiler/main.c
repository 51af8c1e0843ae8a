/*
 * main.c - the autotmc command line and the compiler driver.
 *
 * `autotmc COMMAND [options] FILE`. Each command parses its own options
 * with getopt_long and then runs the pipeline (compile(), below) as far as
 * it needs:
 *
 *   load + parse + elaborate   .net -> forward graph  (lang/, elaborate.c)
 *   autodiff                   -> training step       (autodiff.c)
 *   schedule                   -> order + liveness    (schedule.c)
 *   report / interpret         what the command shows or runs
 *
 * Exit status: 0 on success, 1 for an error in the model or a failure of
 * the system (a file that cannot be read), 2 for a wrong command line.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sys/wait.h>

#include "autodiff.h"
#include "driver.h"
#include "elaborate.h"
#include "emit_llvm.h"
#include "interp.h"
#include "link.h"
#include "memplan.h"
#include "gpuprofile.h"
#include "hwmodel.h"
#include "place.h"
#include "predict.h"
#include "profile.h"
#include "report_schedule.h"
#include "report.h"
#include "schedule.h"
#include "util.h"
#include "autotm/rt.h"
#include "autotm/tensorio.h"

#ifndef AUTOTM_VERSION
#define AUTOTM_VERSION "0.1.0"
#endif
#ifndef AUTOTM_STDLIBDIR
#define AUTOTM_STDLIBDIR "/usr/local/share/autotm/stdlib"
#endif

enum { EXIT_USAGE = 2 };


static const char *prog = "autotmc";


static void usage_main(FILE *f)
{
	fprintf(f,
	        "usage: autotmc COMMAND [OPTIONS] FILE\n"
	        "\n"
	        "Compile neural-network training programs written in the .net language\n"
	        "for machines with a fast and a slow memory tier.\n"
	        "\n"
	        "commands:\n"
	        "  check FILE      parse and elaborate a model; print its summary\n"
	        "  graph FILE      print the graph IR (--train: the training step; --dot, --json)\n"
	        "  interpret FILE  train with the reference interpreter (the correctness oracle)\n"
	        "  profile FILE    time every kernel of the training step in each memory tier\n"
	        "  schedule FILE   place the tensors and show the move schedule\n"
	        "  build FILE      compile the training program to an executable\n"
	        "  run FILE        build (cached) and run the training program\n"
	        "  sweep FILE      run every optimizer at every fast-tier size (and thread count)\n"
	        "\n"
	        "options:\n"
	        "  -h, --help     show this help (or a command's: autotmc COMMAND --help)\n"
	        "  -V, --version  show the version\n"
	        "\n"
	        "Documentation: docs/language.md and docs/cli.md.\n");
}

void usage_model_opts(FILE *f)
{
	fprintf(f,
	        "  -D NAME=VALUE  override the model parameter NAME (repeatable)\n"
	        "  -I DIR         search DIR for imports after the importing file's directory\n"
	        "  -h, --help     show this help\n");
}

static void usage_check(FILE *f)
{
	fprintf(f,
	        "usage: autotmc check [OPTIONS] FILE\n"
	        "\n"
	        "Parse and elaborate FILE, verify its graph and print a summary: parameters,\n"
	        "nodes, tensors, forward FLOPs, input, labels and output shapes, and the\n"
	        "training step's size and peak live bytes.\n"
	        "\n"
	        "options:\n");
	usage_model_opts(f);
}

static void usage_graph(FILE *f)
{
	fprintf(f,
	        "usage: autotmc graph [OPTIONS] FILE\n"
	        "\n"
	        "Print the graph IR of FILE: graph inputs and weights, then one node per line\n"
	        "with its inputs, attributes, output type, name and source location.\n"
	        "\n"
	        "options:\n"
	        "  --train        the training step (forward, backward, update) in execution\n"
	        "                 order, with every tensor's live interval\n"
	        "  --dot          print Graphviz dot instead (weights omitted)\n"
	        "  --json         print JSON instead (format in docs/training.md)\n");
	usage_model_opts(f);
}

static void usage_build(FILE *f)
{
	fprintf(f,
	        "usage: autotmc build [OPTIONS] FILE -o PROG\n"
	        "\n"
	        "Compile FILE's training step to LLVM IR, compile that to an object for this\n"
	        "machine and link it with the runtime into the executable PROG. PROG --help\n"
	        "lists the options of the program (iterations, threads, weights, data, ...).\n"
	        "\n"
	        "options:\n"
	        "  -o PROG              the executable to write\n"
	        "  --emit-llvm          also write the LLVM module as PROG.ll\n");
	usage_place_opts(f);
	usage_model_opts(f);
}

static void usage_run(FILE *f)
{
	fprintf(f,
	        "usage: autotmc run [OPTIONS] FILE\n"
	        "\n"
	        "Build FILE's training program (cached by content under\n"
	        "$XDG_CACHE_HOME/autotm/programs) and run it: the loss of every step, the\n"
	        "median step time and the sizes of the fast and slow pools.\n"
	        "\n"
	        "options:\n"
	        "  --iters N            training steps (default 10)\n"
	        "  --seed S             seed of weights and synthetic data (default 1)\n"
	        "  --weights W          load the weights from a safetensors file\n"
	        "  --save-weights OUT   save the weights after training\n"
	        "  --input X.npy        the input batch\n"
	        "  --labels Y.npy       the labels (one-hot floats or class indices)\n"
	        "  --results R.json     write the results record\n"
	        "  --slow-dir DIR       directory of the slow tier's file (default: a temporary one)\n"
	        "  --profile-kernels    print the time of every kernel\n"
	        "  --emit-llvm          also write the LLVM module next to the cached program\n");
	usage_place_opts(f);
	usage_model_opts(f);
}

static void usage_schedule(FILE *f)
{
	fprintf(f,
	        "usage: autotmc schedule [OPTIONS] FILE\n"
	        "\n"
	        "Place FILE's training step and show the result: for every step the kernel,\n"
	        "where each input and output lives and the moves before it; then moves and\n"
	        "bytes each way, the pools against the limit, the predicted step time and the\n"
	        "solver's size, time and gap (docs/schedule.md).\n"
	        "\n"
	        "options:\n"
	        "  --json               print the schedule as JSON instead\n"
	        "  --trace T.json       also write it in Chrome Trace Event format (Perfetto)\n"
	        "  --plot P.png|P.svg   also plot the bytes in each tier over the step (gnuplot)\n"
	        "  --summary            print only the summary\n");
	usage_place_opts(f);
	usage_model_opts(f);
}

static void usage_interpret(FILE *f)
{
	fprintf(f,
	        "usage: autotmc interpret [OPTIONS] FILE\n"
	        "\n"
	        "Train FILE with the reference interpreter: naive C for every op, on host memory.\n"
	        "It is slow and meant as the oracle other backends are checked against. Prints\n"
	        "the loss of every step.\n"
	        "\n"
	        "options:\n"
	        "  --iters N              training steps (default 3; 0 only initialises)\n"
	        "  --seed S               seed of weights and synthetic data (default 1)\n"
	        "  --f64                  compute in float64 (default: float32 results)\n"
	        "  --weights W            load the weights from the safetensors file W\n"
	        "  --save-weights OUT     save the weights after training to OUT (safetensors, F32)\n"
	        "  --input X.npy          the input batch (default: N(0, 1) from the seed)\n"
	        "  --labels Y.npy         the labels: one-hot [N, K] floats or [N] class indices\n");
	usage_model_opts(f);
}

noreturn void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'autotmc %s--help'.\n", cmd ? cmd : "");
	exit(EXIT_USAGE);
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Append dir to the search path unless the same directory is already on it. */
static void add_dir(Arena *a, ModelOpts *mo, const char *dir)
{
	char *real = realpath(dir, NULL);
	for (int i = 0; real && i < mo->dirs.n; i++) {
		char *other = realpath(mo->dirs.v[i], NULL);
		bool same = other && strcmp(other, real) == 0;
		free(other);
		if (same) {
			free(real);
			return;
		}
	}
	free(real);
	vec_push(a, &mo->dirs, dir);
}

/*
 * The standard library: $AUTOTM_STDLIB, then next to the executable (a
 * build tree's ../stdlib, an install's ../share/autotm/stdlib), then the
 * configured directory.
 */
static void add_stdlib_dirs(Arena *a, ModelOpts *mo)
{
	const char *env = getenv("AUTOTM_STDLIB");
	if (env && env[0])
		add_dir(a, mo, env);
	const char *exe = exe_dir();
	const char *cands[] = {"%s/stdlib", "%s/../stdlib", "%s/../share/autotm/stdlib"};
	for (size_t i = 0; exe && i < countof(cands); i++) {
		char *d = arena_printf(a, cands[i], exe);
		if (is_dir(d) && access(arena_printf(a, "%s/nn.net", d), R_OK) == 0) {
			add_dir(a, mo, d);
			break;
		}
	}
	add_dir(a, mo, AUTOTM_STDLIBDIR);
}


/*
 * Parse the options of a model command. `extra` lists the command's own
 * long options (zero-terminated): flags set their flag pointers; an option
 * whose value is OPT_VALUE + i stores its argument in *values[i].
 */
void parse_model_opts(Arena *a, const char *cmd, int argc, char **argv, ModelOpts *mo,
                             const struct option *extra, void (*usage)(FILE *), const char **const *values)
{
	struct option opts[32];
	int n = 0;
	opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
	opts[n++] = (struct option){"define", required_argument, NULL, 'D'};
	opts[n++] = (struct option){"include", required_argument, NULL, 'I'};
	for (int i = 0; extra && extra[i].name; i++)
		opts[n++] = extra[i];
	opts[n] = (struct option){0};
	char cmdsp[64];
	snprintf(cmdsp, sizeof cmdsp, "%s ", cmd);
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":hD:I:", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'D': {
			const char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg || !eq[1])
				usage_error(cmdsp, "-D expects NAME=VALUE, got '%s'", optarg);
			Define d = {arena_strndup(a, optarg, (size_t)(eq - optarg)), eq + 1};
			vec_push(a, &mo->defines, d);
			break;
		}
		case 'I':
			add_dir(a, mo, optarg);
			break;
		case 0:
			break; /* a flag option */
		case ':':
			usage_error(cmdsp, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (values && ch >= OPT_VALUE && ch < OPT_VALUE + 64) {
				*values[ch - OPT_VALUE] = optarg;
				break;
			}
			usage_error(cmdsp, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		usage_error(cmdsp, "no model file given");
	if (optind + 1 < argc)
		usage_error(cmdsp, "unexpected argument '%s' (one model file at a time)", argv[optind + 1]);
	mo->file = argv[optind];
	add_stdlib_dirs(a, mo);
}

static bool place_options(Arena *a, Compilation *c, PlaceOptions *po);

static void verify_or_die(const Graph *g, const char *after)
{
	char err[512];
	if (!graph_verify(g, err, sizeof err))
		ICE("graph verification failed after %s: %s", after, err);
}




/*
 * The pipeline, one pass per line, as far as `stage`. Returns false after
 * printing a diagnostic if the model is wrong.
 */
bool compile(Arena *a, const ModelOpts *mo, Stage stage, Compilation *c)
{
	ElabOptions eo = {
		.dirs = mo->dirs.v, .ndirs = mo->dirs.n,
		.defines = mo->defines.v, .ndefines = mo->defines.n,
	};
	c->g = elaborate(mo->file, &eo, a);                 /* .net -> forward graph */
	if (!c->g)
		return false;
	verify_or_die(c->g, "elaboration");
	if (stage == STAGE_FORWARD)
		return true;
	autodiff(c->g, NULL);                                /* -> training step */
	verify_or_die(c->g, "autodiff");
	c->sched = schedule_graph(c->g, a);                 /* -> order + liveness */
	if (stage == STAGE_TRAINING)
		return true;
	PlaceOptions po;
	if (!place_options(a, c, &po))
		return false;
	char err[1024];
	bool um = strcmp(po.optimizer, "um") == 0;
	if (um)
		po.optimizer = "all-fast"; /* every tensor in managed memory; the driver pages it */
	c->place = place_optimize(c->g, c->sched, &po, a, &c->st, err, sizeof err); /* -> tiers, moves, offsets */
	if (um && c->place) {
		c->place->optimizer = "um";
		c->place->limit = po.limit;
	}
	if (!c->place && c->pa->ratio && c->st.min_limit > po.limit) {
		/*
		 * A ratio is relative: below what can work, it means as little as
		 * can work. The stated minimum is a lower bound (exact on a CPU;
		 * on a GPU, or after packing, a little more may be needed), so a
		 * few growing limits are tried, up to the peak.
		 */
		char b1[64], b2[64];
		int64_t floor = c->st.min_limit;
		fprintf(stderr, "autotmc: note: --ratio %s gives the fast tier %s, less than the smallest feasible "
		                "limit; placing for %s\n", c->pa->ratio, fmt_bytes(po.limit, b1, sizeof b1),
		        fmt_bytes(floor, b2, sizeof b2));
		for (int i = 0; i < 6 && !c->place; i++) {
			po.limit = i == 0 ? floor : (int64_t)((double)floor * (1 + 0.025 * (1 << i)));
			if (po.limit > c->sched->peak && i > 0)
				po.limit = c->sched->peak;
			if (i > 0)
				fprintf(stderr, "autotmc: note: %s did not fit; placing for %s\n", fmt_bytes(floor, b1, sizeof b1),
				        fmt_bytes(po.limit, b2, sizeof b2));
			c->st = (PlaceStats){0};
			c->place = place_optimize(c->g, c->sched, &po, a, &c->st, err, sizeof err);
			if (po.limit >= c->sched->peak)
				break;
		}
	}
	if (!c->place) {
		error_plain("%s", err);
		return false;
	}
	if (!placement_verify(c->g, c->place, err, sizeof err))
		ICE("placement %s is inconsistent: %s", c->place->optimizer, err);
	if (!memplan_verify(c->place, a, err, sizeof err))
		ICE("memory plan of %s is inconsistent: %s", c->place->optimizer, err);
	return true;
}

static const char *const optimizers[] = {"static", "sync", "async", "first-touch", "all-fast", "all-slow",
                                          "spill-all", "um"};

/* The placement is for the GPU backend. */
static bool on_gpu(const PlaceArgs *pa)
{
	return pa->backend && strcmp(pa->backend, "gpu") == 0;
}

bool optimizer_known(const char *o)
{
	for (size_t i = 0; i < countof(optimizers); i++)
		if (strcmp(o, optimizers[i]) == 0)
			return true;
	return false;
}

static bool is_ilp(const char *o)
{
	return strcmp(o, "static") == 0 || strcmp(o, "sync") == 0 || strcmp(o, "async") == 0;
}

/* "2GiB", "512MiB", "1.5 GiB", "123456" (bytes); -1 if malformed. */
static int64_t parse_bytes(const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0))
		return -1;
	while (*end == ' ')
		end++;
	static const struct { const char *unit; double scale; } units[] = {
		{"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
		{"TiB", 1099511627776.0}, {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0},
	};
	for (size_t i = 0; i < countof(units); i++)
		if (strcmp(end, units[i].unit) == 0 && v * units[i].scale < 9.0e18)
			return (int64_t)(v * units[i].scale);
	return -1;
}

/* The cost model of a placement with every tensor fast: measured all-fast times only. */
static double fast_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	if (slow)
		ICE("an all-fast cost model asked for %s with slow arguments", n->name);
	return ((const double *)cm->data)[n->id];
}

static double no_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	(void)cm, (void)bytes, (void)from, (void)to, (void)async;
	ICE("an all-fast cost model asked for a move");
}

/*
 * The kernel and move times: a hw description on measured all-fast times,
 * or the profile of this machine. Whatever the database lacks is measured
 * first (autotmc profile does the same on its own).
 */
static CostModel *cost_model(Arena *a, Compilation *c, bool fast_only)
{
	const PlaceArgs *pa = c->pa;
	ProfileOptions po = {.db = pa->db, .model = c->file, .fast_only = fast_only || pa->hw, .slow_dir = pa->slow_dir};
	if (pa->threads)
		po.threads = (int)strtol(pa->threads, NULL, 10);
	char err[1024];
	int missing = profile_missing(c->g, c->sched, &po, err, sizeof err);
	if (missing < 0) {
		error_plain("%s", err);
		return NULL;
	}
	if (missing > 0 && !profile_graph(c->g, c->sched, &po, NULL, err, sizeof err)) { /* -> profile database */
		error_plain("%s", err);
		return NULL;
	}
	if (!pa->hw) {
		CostModel *cm = fast_only ? NULL : costmodel_from_profile(c->g, c->sched, &po, a, err, sizeof err);
		if (!fast_only && !cm)
			error_plain("%s", err);
		if (fast_only) {
			double *fast = profile_fast_times(c->g, c->sched, &po, a, err, sizeof err);
			if (!fast) {
				error_plain("%s", err);
				return NULL;
			}
			cm = arena_alloc(a, sizeof *cm);
			cm->source = "profile (all-fast times)";
			cm->kernel_time = fast_kernel_time;
			cm->move_time = no_move_time;
			cm->data = fast;
		}
		return cm;
	}
	HwModel hw;
	const char *path = hw_find(pa->hw, a, err, sizeof err);
	if (!path || !hw_load(path, &hw, err, sizeof err)) {
		error_plain("%s", err);
		return NULL;
	}
	double *fast = profile_fast_times(c->g, c->sched, &po, a, err, sizeof err);
	if (!fast) {
		error_plain("%s", err);
		return NULL;
	}
	return costmodel_from_hw(&hw, c->g, fast, a);
}

/*
 * The kernel and move times of the GPU backend: this machine's profile
 * says nothing of a GPU, so they come from a profile measured on the GPU
 * (autotm-gpu-profile), or else kernel times from the [compute] section
 * of the hw description (a roofline: modeled) and moves from its link.
 */
static CostModel *gpu_cost_model(Arena *a, Compilation *c)
{
	const PlaceArgs *pa = c->pa;
	char err[1024];
	if (pa->gpu_profile) {
		if (pa->hw) {
			error_plain("give the GPU's times as --gpu-profile (measured) or --hw (modeled), not both");
			return NULL;
		}
		CostModel *cm = costmodel_gpu_profile(pa->gpu_profile, c->g, c->sched, a, err, sizeof err);
		if (!cm)
			error_plain("%s", err);
		else
			cm->duplex = true; /* a copy stream per direction */
		return cm;
	}
	if (!pa->hw) {
		error_plain("the GPU backend plans with a profile measured on the GPU (--gpu-profile P.tsv) or with a "
		            "hardware description that has a [compute] section (--hw h100-pcie5); docs/gpu.md");
		return NULL;
	}
	HwModel hw;
	const char *path = hw_find(pa->hw, a, err, sizeof err);
	if (!path || !hw_load(path, &hw, err, sizeof err)) {
		error_plain("%s", err);
		return NULL;
	}
	if (!(hw.flop_rate > 0)) {
		error_plain("%s has no [compute] section: the GPU backend needs its flops to model kernel times "
		            "(docs/profiling.md)", path);
		return NULL;
	}
	CostModel *cm = costmodel_from_hw(&hw, c->g, hw_roofline_times(&hw, c->g, a), a);
	cm->source = arena_printf(a, "%s, kernels by roofline", cm->source);
	cm->duplex = true; /* a copy stream per direction */
	return cm;
}

/* Turn the command line into PlaceOptions; the limit from --limit or --ratio. */
static bool place_options(Arena *a, Compilation *c, PlaceOptions *po)
{
	const PlaceArgs *pa = c->pa;
	*po = (PlaceOptions){.optimizer = pa->optimizer, .solver = pa->solver};
	if (pa->backend && !on_gpu(pa) && strcmp(pa->backend, "cpu") != 0) {
		error_plain("unknown backend '%s' (cpu or gpu)", pa->backend);
		return false;
	}
	if (pa->gpu_profile && !on_gpu(pa)) {
		error_plain("--gpu-profile is for the GPU backend: give --backend gpu");
		return false;
	}
	if (on_gpu(pa) && strcmp(pa->optimizer, "sync") && strcmp(pa->optimizer, "async") &&
	    strcmp(pa->optimizer, "all-fast") && strcmp(pa->optimizer, "um")) {
		error_plain("optimizer '%s' does not run on the GPU backend, whose kernels read device memory only "
		            "(sync, async, all-fast or um)", pa->optimizer);
		return false;
	}
	if (!on_gpu(pa) && strcmp(pa->optimizer, "um") == 0) {
		error_plain("optimizer 'um' (unified memory) is a baseline of the GPU backend (--backend gpu)");
		return false;
	}
	po->kernels_fast = on_gpu(pa);
	if (!optimizer_known(pa->optimizer)) {
		error_plain("unknown optimizer '%s' (static, sync, async, first-touch, all-fast, all-slow, spill-all, um)",
		            pa->optimizer);
		return false;
	}
	if (pa->limit && pa->ratio) {
		error_plain("give the fast tier's size as --limit or as --ratio, not both");
		return false;
	}
	if (pa->limit) {
		po->limit = parse_bytes(pa->limit);
		if (po->limit < 0) {
			error_plain("--limit %s: expected a size such as 2GiB, 512MiB or 1000000 (bytes)", pa->limit);
			return false;
		}
	} else if (pa->ratio) {
		double s, f;
		char tail;
		if (sscanf(pa->ratio, "%lf:%lf%c", &s, &f, &tail) != 2 || s < 0 || f < 0 || s + f <= 0) {
			error_plain("--ratio %s: expected SLOW:FAST such as 4:1", pa->ratio);
			return false;
		}
		po->limit = (int64_t)((double)c->sched->peak * f / (s + f));
	} else if (is_ilp(pa->optimizer) || strcmp(pa->optimizer, "first-touch") == 0 ||
	           strcmp(pa->optimizer, "um") == 0) {
		error_plain("optimizer '%s' needs the fast tier's size: --limit BYTES or --ratio SLOW:FAST", pa->optimizer);
		return false;
	}
	if (pa->solver && strcmp(pa->solver, "cbc") != 0 && strcmp(pa->solver, "lp_solve") != 0) {
		error_plain("unknown solver '%s' (cbc or lp_solve)", pa->solver);
		return false;
	}
	if (pa->solver_time) {
		char *end;
		po->time_limit = strtod(pa->solver_time, &end);
		if (*end || !(po->time_limit > 0)) {
			error_plain("--solver-time %s: expected a positive number of seconds", pa->solver_time);
			return false;
		}
	}
	c->cm = on_gpu(pa) ? gpu_cost_model(a, c) : cost_model(a, c, strcmp(pa->optimizer, "all-fast") == 0);
	if (!c->cm)
		return false;
	po->cm = c->cm;
	return true;
}

/* The compile-time fields of the results record, as a JSON object (AutoTM's names). */
static char *program_record(const Compilation *c, const char *source, Arena *a)
{
	const Placement *p = c->place;
	MoveStats ms = placement_stats(p);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "model", c->g->model);
	cJSON_AddStringToObject(r, "source", source);
	cJSON_AddStringToObject(r, "optimizer", p->optimizer);
	cJSON_AddNumberToObject(r, "num_nodes", c->g->nodes.n);
	cJSON_AddNumberToObject(r, "peak_live_bytes", (double)c->sched->peak);
	cJSON_AddNumberToObject(r, "fast_pool_lower_bound", (double)memplan_fast_peak(p, a));
	cJSON_AddNumberToObject(r, "num_move_nodes", ms.nmoves);
	cJSON_AddNumberToObject(r, "bytes_moved", (double)ms.bytes);
	cJSON_AddNumberToObject(r, "bytes_moved_dram", (double)ms.bytes_to_fast);
	cJSON_AddNumberToObject(r, "bytes_moved_pmem", (double)ms.bytes_to_slow);
	cJSON_AddNumberToObject(r, "num_async_move_nodes", ms.nasync);
	cJSON_AddNumberToObject(r, "bytes_async_moved", (double)ms.bytes_async);
	cJSON_AddNumberToObject(r, "dram_limit", (double)p->limit);
	if (p->workspace > 0)
		cJSON_AddNumberToObject(r, "workspace_bytes", (double)p->workspace);
	cJSON_AddStringToObject(r, "times", c->cm->source);
	cJSON_AddBoolToObject(r, "modeled", c->cm->modeled);
	if (strcmp(p->optimizer, "um") != 0) /* the driver's paging is not modeled */
		cJSON_AddNumberToObject(r, "predicted_runtime", placement_predict(p, c->cm, NULL));
	cJSON_AddStringToObject(r, "compiled_for", on_gpu(c->pa) ? "gpu" : "cpu");
	if (c->st.nattempts > 0) {
		cJSON *ct = cJSON_AddArrayToObject(r, "creation_times"), *ot = cJSON_AddArrayToObject(r, "optimization_times");
		for (int i = 0; i < c->st.nattempts; i++) {
			cJSON_AddItemToArray(ct, cJSON_CreateNumber(c->st.creation_times[i]));
			cJSON_AddItemToArray(ot, cJSON_CreateNumber(c->st.optimization_times[i]));
		}
		cJSON_AddNumberToObject(r, "ilp_total_seconds", c->st.total_time);
		cJSON_AddNumberToObject(r, "ilp_rows", c->st.rows);
		cJSON_AddNumberToObject(r, "ilp_columns", c->st.cols);
		cJSON_AddNumberToObject(r, "ilp_integers", c->st.integers);
		cJSON_AddNumberToObject(r, "ilp_nonzeros", (double)c->st.nonzeros);
		cJSON_AddNumberToObject(r, "ilp_objective", c->st.objective);
		cJSON_AddNumberToObject(r, "ilp_gap", c->st.gap);
		cJSON_AddStringToObject(r, "ilp_status", c->st.status ? c->st.status : "");
	}
	char *text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	if (!text)
		fatal_sys("out of memory");
	char *s = arena_strdup(a, text);
	free(text);
	return s;
}

/* Emit the program of c (IR text only when obj is NULL) and link it into exe. */
static bool generate(Arena *a, const Compilation *c, const char *source, const char *obj, const char *ll,
                     char **ir_text, const char *exe)
{
	bool um = strcmp(c->place->optimizer, "um") == 0;
	EmitOptions eo = {.obj_path = obj, .ll_path = ll, .record = program_record(c, source, a), .ir_text = ir_text,
	                  .predicted_seconds = um ? 0 : placement_predict(c->place, c->cm, NULL),
	                  .program_flags = um ? RT_PROGRAM_MANAGED : 0};
	char err[512];
	if (!emit_program(c->g, c->sched, c->place, &eo, a, err, sizeof err)) {   /* -> LLVM module, object */
		error_plain("%s", err);
		return false;
	}
	if (exe && !link_program(obj, exe, on_gpu(c->pa), err, sizeof err)) {                     /* -> executable */
		error_plain("%s", err);
		return false;
	}
	return true;
}

static int cmd_check(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	parse_model_opts(&a, "check", argc, argv, &mo, NULL, usage_check, NULL);
	Compilation c = {0};
	bool ok = compile(&a, &mo, STAGE_TRAINING, &c);
	if (ok)
		report_summary(stdout, c.g, c.sched, mo.file);
	arena_free(&a);
	return ok ? 0 : 1;
}

static int cmd_graph(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int dot, json, train;
	const struct option extra[] = {
		{"dot", no_argument, &dot, 1},
		{"json", no_argument, &json, 1},
		{"train", no_argument, &train, 1},
		{0},
	};
	parse_model_opts(&a, "graph", argc, argv, &mo, extra, usage_graph, NULL);
	if (dot && json)
		usage_error("graph ", "--dot and --json cannot be combined");
	Compilation c = {0};
	bool ok = compile(&a, &mo, train ? STAGE_TRAINING : STAGE_FORWARD, &c);
	if (ok) {
		if (dot)
			report_dot(stdout, c.g);
		else if (json)
			report_json(stdout, c.g, c.sched);
		else
			report_graph(stdout, c.g, c.sched);
	}
	arena_free(&a);
	return ok ? 0 : 1;
}

/* Fill a data tensor from a .npy file, checking its shape. */
static bool load_npy(Interp *ip, const Tensor *t, const char *path)
{
	TioFile *f;
	char err[512], s1[128];
	if (tio_npy_open(path, &f, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	const TioTensor *a = &f->t[0];
	const Shape *s = &t->shape;
	bool ok = a->ndim == s->ndim;
	for (int i = 0; ok && i < s->ndim; i++)
		ok = a->shape[i] == s->d[i];
	bool classes = t->kind == TENSOR_LABELS && a->ndim == 1 && a->shape[0] == s->d[0] &&
	               (a->dtype == TIO_I32 || a->dtype == TIO_I64);
	if (classes) {
		double *cls = xmalloc(sizeof(double) * (size_t)a->nelems);
		tio_to_f64(a, cls);
		double *y = ip->buf[t->id];
		for (int64_t r = 0; r < s->d[0]; r++) {
			int64_t k = (int64_t)cls[r];
			if (k < 0 || k >= s->d[1]) {
				error_plain("%s: label %lld of row %lld is not a class in [0, %lld)", path, (long long)k,
				            (long long)r, (long long)s->d[1]);
				free(cls);
				tio_close(f);
				return false;
			}
			for (int64_t j = 0; j < s->d[1]; j++)
				y[r * s->d[1] + j] = j == k;
		}
		free(cls);
	} else if (ok && (a->dtype == TIO_F32 || a->dtype == TIO_F64)) {
		tio_to_f64(a, ip->buf[t->id]);
		if (!ip->f64)
			for (int64_t i = 0; i < a->nelems; i++)
				ip->buf[t->id][i] = (float)ip->buf[t->id][i];
	} else {
		char got[256] = "[";
		for (int i = 0; i < a->ndim; i++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)a->shape[i]);
		error_plain("%s: the array is %s%s] but %s '%s' is %s%s", path, tio_dtype_name(a->dtype), got,
		            tensor_kind_name(t->kind), t->name, dtype_name(t->dtype), shape_str(*s, s1, sizeof s1));
		tio_close(f);
		return false;
	}
	tio_close(f);
	return true;
}

/* Replace every weight by the tensor of the same name in a safetensors file. */
static bool load_weights(Interp *ip, const char *path)
{
	TioFile *f;
	char err[512], s1[128];
	if (tio_safetensors_open(path, &f, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	const Graph *g = ip->g;
	int used = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->kind != TENSOR_WEIGHT)
			continue;
		const TioTensor *w = tio_find(f, t->name);
		if (!w) {
			error_plain("%s has no tensor '%s' (the model's weights are listed by 'autotmc graph')", path,
			            t->name);
			tio_close(f);
			return false;
		}
		bool same = w->ndim == t->shape.ndim;
		for (int k = 0; same && k < w->ndim; k++)
			same = w->shape[k] == t->shape.d[k];
		if (!same) {
			char got[256] = "[";
			for (int k = 0; k < w->ndim; k++)
				snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "",
				         (long long)w->shape[k]);
			error_plain("%s: tensor '%s' has shape %s] in the file but %s in the model", path, t->name, got,
			            shape_str(t->shape, s1, sizeof s1));
			tio_close(f);
			return false;
		}
		tio_to_f64(w, ip->buf[t->id]);
		if (!ip->f64)
			for (int64_t k = 0; k < w->nelems; k++)
				ip->buf[t->id][k] = (float)ip->buf[t->id][k];
		used++;
	}
	if (used < f->n)
		fprintf(stderr, "autotmc: warning: %s holds %d tensors that the model does not use\n", path, f->n - used);
	tio_close(f);
	return true;
}

static bool save_weights(const Interp *ip, const char *path)
{
	const Graph *g = ip->g;
	TioOut *out = xcalloc((size_t)g->tensors.n, sizeof *out);
	int n = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->kind != TENSOR_WEIGHT)
			continue;
		out[n++] = (TioOut){t->name, t->shape.ndim, t->shape.d, TIO_F64, ip->buf[t->id]};
	}
	char err[512];
	int rc = tio_safetensors_write(path, out, n, err, sizeof err);
	free(out);
	if (rc)
		error_plain("%s", err);
	return rc == 0;
}

/* The memory plan against its lower bound (the fragmentation). */
void print_plan(FILE *f, const Compilation *c, Arena *a)
{
	const Placement *p = c->place;
	char b1[64], b2[64], b3[64];
	int64_t bound = memplan_fast_peak(p, a);
	MoveStats ms = placement_stats(p);
	fprintf(f, "placement: %s; %d moves, %s to fast, %s to slow\n", p->optimizer, ms.nmoves,
	        fmt_bytes(ms.bytes_to_fast, b1, sizeof b1), fmt_bytes(ms.bytes_to_slow, b2, sizeof b2));
	fprintf(f, "fast pool: %s for %s live at once (fragmentation %.1f%%); slow pool: %s\n",
	        fmt_bytes(p->fast_bytes, b1, sizeof b1), fmt_bytes(bound, b2, sizeof b2),
	        bound ? 100.0 * (double)(p->fast_bytes - bound) / (double)bound : 0.0,
	        fmt_bytes(p->slow_bytes, b3, sizeof b3));
	if (p->limit > 0)
		fprintf(f, "limit: %s (%.1f%% of the peak of live bytes)\n", fmt_bytes(p->limit, b1, sizeof b1),
		        100.0 * (double)p->limit / (double)c->sched->peak);
	if (c->st.nattempts > 0)
		fprintf(f, "ILP: %d rows, %d columns, %d integers, %ld nonzeros; built in %.2f s, solved in %.2f s; "
		           "%.2f s in all (%d attempt%s), %s, gap %.2f%%\n",
		        c->st.rows, c->st.cols, c->st.integers, c->st.nonzeros, c->st.creation_time, c->st.solve_time,
		        c->st.total_time, c->st.nattempts, c->st.nattempts == 1 ? "" : "s",
		        c->st.status ? c->st.status : "?", 100.0 * c->st.gap);
	if (strcmp(p->optimizer, "um") == 0)
		fprintf(f, "predicted step time: none (unified memory: the driver pages on demand)\n");
	else
		fprintf(f, "predicted step time: %.3f ms (%s)\n", 1e3 * placement_predict(p, c->cm, NULL),
		        c->cm->source);
}


void usage_place_opts(FILE *f)
{
	fprintf(f,
	        "  --optimizer O        where tensors live: static, sync, async (the ILP), first-touch,\n"
	        "                       all-fast, all-slow, or spill-all (a test placement that moves\n"
	        "                       every activation through the slow tier)\n"
	        "  --limit BYTES        the fast tier's size: 2GiB, 512MiB, ... (B/KiB/MiB/GiB)\n"
	        "  --ratio S:F          or slow:fast relative to the peak of live bytes (4:1: a fifth)\n"
	        "  --hw FILE            model slow-tier times with a hardware description (hw/*.hw);\n"
	        "                       every prediction then says 'modeled'\n"
	        "  --profile-db PATH    the profile database (default ~/.cache/autotm/profiles.db)\n"
	        "  --solver S           cbc (default) or lp_solve\n"
	        "  --solver-time SEC    the solver's time for a placement, all its attempts (default 60)\n"
	        "  --threads N          threads (profiles are per thread count)\n"
	        "  --backend cpu|gpu    where the program runs (default cpu); gpu: device memory\n"
	        "                       and pinned host memory, optimizers sync, async, all-fast\n"
	        "                       and um (unified memory), times from --gpu-profile or --hw\n"
	        "  --gpu-profile P.tsv  the GPU's kernel and link times, measured by autotm-gpu-profile\n"
	        "                       (docs/gpu.md)\n");
}

static int cmd_build(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int emit_ll;
	static const char *out;
	static PlaceArgs pa = {.optimizer = "all-fast"};
	const struct option extra[] = {
		PLACE_LONG_OPTIONS,
		{"output", required_argument, NULL, OPT_VALUE + NPLACE_OPTIONS},
		{"emit-llvm", no_argument, &emit_ll, 1},
		{0},
	};
	const char **const values[] = {PLACE_VALUES(pa), &out};
	/* -o is the short form of --output */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-o") == 0)
			argv[i] = "--output";
	parse_model_opts(&a, "build", argc, argv, &mo, extra, usage_build, values);
	if (!out)
		usage_error("build ", "no output given (-o PROG)");
	Compilation c = {.pa = &pa, .file = mo.file};
	bool ok = compile(&a, &mo, STAGE_PROGRAM, &c);
	if (ok) {
		const char *obj = arena_printf(&a, "%s.o", out);
		const char *ll = emit_ll ? arena_printf(&a, "%s.ll", out) : NULL;
		ok = generate(&a, &c, mo.file, obj, ll, NULL, out);
		unlink(obj);
		if (ok) {
			print_plan(stdout, &c, &a);
			printf("wrote %s%s%s\n", out, ll ? " and " : "", ll ? ll : "");
		}
	}
	arena_free(&a);
	return ok ? 0 : 1;
}

/* $XDG_CACHE_HOME/autotm/programs (or ~/.cache/...), created if missing. */
static const char *cache_dir(Arena *a)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *root = xdg && xdg[0] ? xdg : arena_printf(a, "%s/.cache", home && home[0] ? home : "/tmp");
	const char *parts[] = {root, "autotm", "programs"};
	char *dir = arena_strdup(a, parts[0]);
	for (size_t i = 0; i < countof(parts); i++) {
		if (i)
			dir = arena_printf(a, "%s/%s", dir, parts[i]);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			error_plain("cannot create the cache directory %s: %s", dir, strerror(errno));
			return NULL;
		}
	}
	return dir;
}

/*
 * The executable of c's program, built unless the cache already holds it:
 * the cache key is the program itself, a hash of its LLVM IR. NULL after
 * an error message.
 */
const char *program_cached(Arena *a, const Compilation *c, const char *source, bool emit_ll)
{
	const char *dir = cache_dir(a);
	char *ir = NULL;
	if (!dir || !generate(a, c, source, NULL, NULL, &ir, NULL))
		return NULL;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const unsigned char *s = (const unsigned char *)ir; *s; s++)
		h = (h ^ *s) * 0x100000001b3ULL;
	free(ir);
	const char *exe = arena_printf(a, "%s/%s-%016llx", dir, c->g->model, (unsigned long long)h);
	if (access(exe, X_OK) == 0)
		return exe;
	const char *tmp = arena_printf(a, "%s.tmp%d", exe, (int)getpid());
	const char *obj = arena_printf(a, "%s.o", tmp);
	bool ok = generate(a, c, source, obj, emit_ll ? arena_printf(a, "%s.ll", exe) : NULL, NULL, tmp);
	unlink(obj);
	if (ok && rename(tmp, exe) != 0) {
		error_plain("cannot rename %s to %s: %s", tmp, exe, strerror(errno));
		ok = false;
	}
	if (!ok)
		unlink(tmp);
	return ok ? exe : NULL;
}

static int cmd_run(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int emit_ll, profile;
	static const char *pass[8];
	static PlaceArgs pa = {.optimizer = "all-fast"};
	static const char *const pass_names[] = {"--iters", "--seed", "--weights", "--save-weights",
	                                         "--input", "--labels", "--results", "--slow-dir"};
	enum { O_PASS = OPT_VALUE + NPLACE_OPTIONS };
	const struct option extra[] = {
		PLACE_LONG_OPTIONS,
		{"iters", required_argument, NULL, O_PASS + 0},
		{"seed", required_argument, NULL, O_PASS + 1},
		{"weights", required_argument, NULL, O_PASS + 2},
		{"save-weights", required_argument, NULL, O_PASS + 3},
		{"input", required_argument, NULL, O_PASS + 4},
		{"labels", required_argument, NULL, O_PASS + 5},
		{"results", required_argument, NULL, O_PASS + 6},
		{"slow-dir", required_argument, NULL, O_PASS + 7},
		{"emit-llvm", no_argument, &emit_ll, 1},
		{"profile-kernels", no_argument, &profile, 1},
		{0},
	};
	const char **const values[] = {PLACE_VALUES(pa), &pass[0], &pass[1], &pass[2], &pass[3], &pass[4], &pass[5],
	                               &pass[6], &pass[7]};
	parse_model_opts(&a, "run", argc, argv, &mo, extra, usage_run, values);
	pa.slow_dir = pass[7];
	Compilation c = {.pa = &pa, .file = mo.file};
	if (!compile(&a, &mo, STAGE_PROGRAM, &c)) {
		arena_free(&a);
		return 1;
	}
	const char *exe = program_cached(&a, &c, mo.file, emit_ll);
	if (!exe) {
		arena_free(&a);
		return 1;
	}
	/* Run it: the program prints the losses, times and pool sizes. */
	const char *args[32];
	int n = 0;
	args[n++] = exe;
	for (size_t i = 0; i < countof(pass); i++)
		if (pass[i]) {
			args[n++] = pass_names[i];
			args[n++] = pass[i];
		}
	if (pa.threads) {
		args[n++] = "--threads";
		args[n++] = pa.threads;
	}
	if (profile)
		args[n++] = "--profile-kernels";
	args[n] = NULL;
	printf("program: %s\n", exe);
	print_plan(stdout, &c, &a);
	fflush(stdout);
	execv(exe, (char *const *)args);
	error_plain("cannot run %s: %s", exe, strerror(errno));
	arena_free(&a);
	return 1;
}

static void usage_profile(FILE *f)
{
	fprintf(f,
	        "usage: autotmc profile [OPTIONS] FILE\n"
	        "\n"
	        "Time every distinct kernel of FILE's training step on this machine with its\n"
	        "inputs and outputs in each tier (the IO configurations the placement chooses\n"
	        "from), and the copies between the tiers, and store the times in the profile\n"
	        "database. Only what the database lacks is measured: a second profile of the\n"
	        "same model measures nothing, and an interrupted one resumes.\n"
	        "\n"
	        "options:\n"
	        "  --profile-db PATH  the database (default: $XDG_CACHE_HOME/autotm/profiles.db,\n"
	        "                     or ~/.cache/autotm/profiles.db)\n"
	        "  --threads N        kernel threads (default: every core, as the programs use)\n"
	        "  --runs N           timed runs per measurement, at most (default 5; the median\n"
	        "                     is kept; runs stop after 1 s once 3 are done)\n"
	        "  --slow KIND        the slow tier: pmem (default), dax-kmem or numa:N\n"
	        "  --slow-dir DIR     where the pmem slow tier's file goes (default: $TMPDIR or /tmp)\n"
	        "  --fast-only        measure only the all-fast time of each kernel and no moves:\n"
	        "                     what modeling another machine with --hw needs\n"
	        "  --quiet            print nothing but errors\n"
	        "  --backend gpu --export K.tsv\n"
	        "                     write the step's distinct kernels for autotm-gpu-profile,\n"
	        "                     which times them on a GPU (docs/gpu.md)\n");
	usage_model_opts(f);
	fprintf(f, "\nDocumentation: docs/profiling.md.\n");
}

static int cmd_profile(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int fast_only, quiet;
	static const char *db, *threads, *runs, *slow, *slow_dir, *backend, *export;
	const struct option extra[] = {
		{"backend", required_argument, NULL, OPT_VALUE + 5},
		{"export", required_argument, NULL, OPT_VALUE + 6},
		{"profile-db", required_argument, NULL, OPT_VALUE + 0},
		{"threads", required_argument, NULL, OPT_VALUE + 1},
		{"runs", required_argument, NULL, OPT_VALUE + 2},
		{"slow", required_argument, NULL, OPT_VALUE + 3},
		{"slow-dir", required_argument, NULL, OPT_VALUE + 4},
		{"fast-only", no_argument, &fast_only, 1},
		{"quiet", no_argument, &quiet, 1},
		{0},
	};
	const char **const values[] = {&db, &threads, &runs, &slow, &slow_dir, &backend, &export};
	parse_model_opts(&a, "profile", argc, argv, &mo, extra, usage_profile, values);
	if (backend && strcmp(backend, "gpu") != 0 && strcmp(backend, "cpu") != 0)
		usage_error("profile ", "--backend expects cpu or gpu, got '%s'", backend);
	bool gpu = backend && strcmp(backend, "gpu") == 0;
	if (gpu != (export != NULL))
		usage_error("profile ", gpu ? "the GPU is profiled by autotm-gpu-profile on the GPU machine: give "
		                              "--export KERNELS.tsv to write the kernels it times (docs/gpu.md)"
		                            : "--export writes the kernels of the GPU backend: give --backend gpu");
	if (gpu) {
		Compilation c = {.file = mo.file};
		bool ok = compile(&a, &mo, STAGE_TRAINING, &c);
		char err[1024];
		int n = ok ? gpu_export_kernels(export, c.g, c.sched, &a, err, sizeof err) : -1;
		if (ok && n < 0)
			error_plain("%s", err);
		else if (ok)
			printf("wrote %d kernels of %s to %s; on the GPU machine: autotm-gpu-profile %s -o PROFILE.tsv\n", n,
			       c.g->model, export, export);
		arena_free(&a);
		return n >= 0 ? 0 : 1;
	}
	ProfileOptions po = {.db = db, .slow_dir = slow_dir, .fast_only = fast_only, .quiet = quiet, .model = mo.file};
	if (threads && (po.threads = (int)parse_count("profile ", "--threads", threads, 4096)) < 1)
		usage_error("profile ", "--threads expects at least 1");
	if (runs && (po.runs = (int)parse_count("profile ", "--runs", runs, 1000)) < 1)
		usage_error("profile ", "--runs expects at least 1");
	if (slow) {
		if (strcmp(slow, "pmem") == 0) {
			po.slow_kind = RT_SLOW_TIER_PMEM;
		} else if (strcmp(slow, "dax-kmem") == 0) {
			po.slow_kind = RT_SLOW_TIER_DAX;
		} else if (strncmp(slow, "numa:", 5) == 0) {
			po.slow_kind = RT_SLOW_TIER_NUMA;
			po.numa_node = (int)parse_count("profile ", "--slow numa:N", slow + 5, 1023);
		} else {
			usage_error("profile ", "--slow expects pmem, dax-kmem or numa:N, got '%s'", slow);
		}
	}
	if (po.slow_dir && po.slow_kind != RT_SLOW_TIER_PMEM)
		usage_error("profile ", "--slow-dir applies only to --slow pmem");
	if (po.slow_dir && !is_dir(po.slow_dir)) {
		error_plain("--slow-dir %s is not a directory", po.slow_dir);
		arena_free(&a);
		return 1;
	}
	Compilation c = {.file = mo.file};
	bool ok = compile(&a, &mo, STAGE_TRAINING, &c);
	char err[1024];
	if (ok && !profile_graph(c.g, c.sched, &po, NULL, err, sizeof err)) { /* -> profile database */
		error_plain("%s", err);
		ok = false;
	}
	arena_free(&a);
	return ok ? 0 : 1;
}

static int cmd_schedule(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int json, summary;
	static const char *trace, *plot;
	static PlaceArgs pa = {.optimizer = "sync"};
	const struct option extra[] = {
		PLACE_LONG_OPTIONS,
		{"trace", required_argument, NULL, OPT_VALUE + NPLACE_OPTIONS},
		{"plot", required_argument, NULL, OPT_VALUE + NPLACE_OPTIONS + 1},
		{"json", no_argument, &json, 1},
		{"summary", no_argument, &summary, 1},
		{0},
	};
	const char **const values[] = {PLACE_VALUES(pa), &trace, &plot};
	parse_model_opts(&a, "schedule", argc, argv, &mo, extra, usage_schedule, values);
	Compilation c = {.pa = &pa, .file = mo.file};
	bool ok = compile(&a, &mo, STAGE_PROGRAM, &c);
	if (ok) {
		Timeline *tl = timeline_make(c.place, c.cm, &a);
		if (json) {
			char *solver = NULL;
			if (c.st.nattempts > 0) {
				cJSON *s = cJSON_CreateObject();
				cJSON_AddNumberToObject(s, "rows", c.st.rows);
				cJSON_AddNumberToObject(s, "columns", c.st.cols);
				cJSON_AddNumberToObject(s, "integers", c.st.integers);
				cJSON_AddNumberToObject(s, "nonzeros", (double)c.st.nonzeros);
				cJSON_AddNumberToObject(s, "creation_seconds", c.st.creation_time);
				cJSON_AddNumberToObject(s, "solve_seconds", c.st.solve_time);
				cJSON_AddNumberToObject(s, "total_seconds", c.st.total_time);
				cJSON_AddNumberToObject(s, "objective_seconds", c.st.objective);
				cJSON_AddNumberToObject(s, "gap", c.st.gap);
				cJSON_AddNumberToObject(s, "attempts", c.st.nattempts);
				cJSON_AddStringToObject(s, "status", c.st.status ? c.st.status : "");
				solver = cJSON_PrintUnformatted(s);
				cJSON_Delete(s);
			}
			schedule_json(stdout, c.g, c.place, tl, c.cm, solver);
			free(solver);
		} else {
			if (!summary)
				schedule_table(stdout, c.g, c.place, tl);
			schedule_summary(stdout, c.g, c.place, tl, c.cm);
			print_plan(stdout, &c, &a);
		}
		if (trace)
			ok = schedule_trace(trace, c.g, c.place, tl) && ok;
		if (plot)
			ok = schedule_plot(plot, c.g, c.place) && ok;
	}
	arena_free(&a);
	return ok ? 0 : 1;
}

long parse_count(const char *cmd, const char *opt, const char *s, long max)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < 0 || v > max)
		usage_error(cmd, "%s expects a whole number from 0 to %ld, got '%s'", opt, max, s);
	return v;
}

static int cmd_interpret(int argc, char **argv)
{
	Arena a = {0};
	ModelOpts mo = {0};
	static int f64;
	static const char *iters_s = "3", *seed_s = "1", *weights, *save, *input, *labels;
	enum { O_ITERS = OPT_VALUE, O_SEED, O_WEIGHTS, O_SAVE, O_INPUT, O_LABELS };
	const struct option extra[] = {
		{"iters", required_argument, NULL, O_ITERS},
		{"seed", required_argument, NULL, O_SEED},
		{"f64", no_argument, &f64, 1},
		{"weights", required_argument, NULL, O_WEIGHTS},
		{"save-weights", required_argument, NULL, O_SAVE},
		{"input", required_argument, NULL, O_INPUT},
		{"labels", required_argument, NULL, O_LABELS},
		{0},
	};
	const char **const values[] = {&iters_s, &seed_s, &weights, &save, &input, &labels};
	parse_model_opts(&a, "interpret", argc, argv, &mo, extra, usage_interpret, values);
	long iters = parse_count("interpret ", "--iters", iters_s, 1000000);
	long seed = parse_count("interpret ", "--seed", seed_s, 0x7fffffff);

	Compilation c = {0};
	if (!compile(&a, &mo, STAGE_TRAINING, &c)) {
		arena_free(&a);
		return 1;
	}
	Interp *ip = interp_new(c.g, c.sched, f64, (uint64_t)seed);
	bool ok = (!weights || load_weights(ip, weights)) && (!input || load_npy(ip, c.g->input, input)) &&
	          (!labels || load_npy(ip, c.g->labels, labels));
	for (long i = 0; ok && i < iters; i++) {
		double loss = interp_step(ip);
		printf("step %ld: loss %.9g\n", i + 1, loss);
		fflush(stdout);
		if (!isfinite(loss)) {
			error_plain("the loss is not finite at step %ld; lower the learning rate", i + 1);
			ok = false;
		}
	}
	if (ok && save)
		ok = save_weights(ip, save);
	interp_free(ip);
	arena_free(&a);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
		printf("autotmc %s\n", AUTOTM_VERSION);
		return 0;
	}
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{"check", cmd_check},
		{"graph", cmd_graph},
		{"interpret", cmd_interpret},
		{"profile", cmd_profile},
		{"schedule", cmd_schedule},
		{"build", cmd_build},
		{"run", cmd_run},
		{"sweep", cmd_sweep},
	};
	for (size_t i = 0; i < countof(cmds); i++) {
		if (strcmp(cmd, cmds[i].name) == 0) {
			int rc = cmds[i].fn(argc - 1, argv + 1);
			if (fflush(stdout) != 0 || ferror(stdout)) {
				perror("autotmc: error writing output");
				return 1;
			}
			return rc;
		}
	}
	usage_error(NULL, "unknown command '%s'", cmd);
}
