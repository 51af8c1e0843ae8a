/*
 * rt.c - the life of a generated training program: rt_begin parses the
 * program's command line and makes the pools, the asynchronous copies and
 * the kernels' engine, all through the backend table (rt_backend);
 * rt_kernel / rt_launch create kernels once and launch them by id;
 * rt_move, rt_move_async and rt_move_wait hand copies to the backend;
 * rt_step_begin / rt_step_end time the steps and record the losses; rt_end
 * saves the weights, reports and writes the results record.
 *
 * Generated code is a flat sequence of calls (see autotm/rt.h), so all
 * the policy lives here: defaults, messages, what is measured. A step's
 * time runs from rt_step_begin to rt_step_end and includes waiting for
 * every asynchronous move it started. The program's exit status is what
 * rt_end returns: 0, or 1 after an error message; failures of the system
 * exit(1) on the spot through rt_fatal.
 */
#include "rt_internal.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "outfile.h" /* base/ */
#include "plot.h"    /* base/ */

enum { EXIT_USAGE = 2 };

/* ---- helpers shared by the runtime --------------------------------------- */

/* A progress line is on the terminal without its newline (report_step): end it before other output. */
static bool progress_open;

void rt_end_progress_line(void)
{
	if (progress_open) {
		printf("\n");
		progress_open = false;
	}
}

void rt_clear_progress_line(void)
{
	if (progress_open) {
		printf("\r\033[K");
		progress_open = false;
	}
}

void rt_progress(const char *fmt, ...)
{
	va_list ap;
	printf("\r\033[K");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	progress_open = true;
}

static char prog_name[64] = "autotm";

const char *rt_prog_name(void)
{
	return prog_name;
}

void rt_set_prog_name(const char *argv0)
{
	if (!argv0 || !argv0[0])
		return;
	const char *slash = strrchr(argv0, '/');
	snprintf(prog_name, sizeof prog_name, "%s", slash ? slash + 1 : argv0);
}

/*
 * A fatal error ends the process at once: output flushed, the slow tier's
 * temporary directory removed (by the backend), nothing else torn down. Memory is left to
 * the kernel on purpose, so no exit handler runs (a sanitizer build's leak
 * check is for the paths that end normally).
 */
noreturn void rt_exit_error(int status)
{
	fflush(NULL);
	rt_backend->memory.remove_temp_dirs();
	_exit(status);
}

noreturn void rt_fatal(const char *fmt, ...)
{
	va_list ap;
	rt_end_progress_line();
	fflush(stdout);
	fprintf(stderr, "%s: error: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	rt_exit_error(1);
}

void rt_warn(const char *fmt, ...)
{
	va_list ap;
	rt_end_progress_line();
	fflush(stdout);
	fprintf(stderr, "%s: warning: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

noreturn void rt_ice_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	rt_end_progress_line();
	fflush(stdout);
	fprintf(stderr, "%s: internal error at %s:%d: ", prog_name, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void *rt_alloc_at(const char *file, int line, size_t n, bool zero)
{
	void *p = zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
	if (!p) {
		char b[32];
		rt_fatal("%s:%d: out of memory allocating %s", file, line, fmt_bytes((int64_t)n, b, sizeof b));
	}
	return p;
}

char *rt_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(rt_xmalloc(n), s, n);
}

bool rt_stdout_tty(void)
{
	/* under `autotmc run --ranks`, mpirun gives the ranks a terminal of its own: autotmc says what it has */
	const char *e = getenv("AUTOTM_STDOUT_TTY");
	return e ? strcmp(e, "1") == 0 : isatty(STDOUT_FILENO);
}

double rt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rt_op_arity(int64_t op, int *min_in, int *max_in, int *nout)
{
	if (op < 0 || op >= RT_NUM_OPS)
		RT_ICE("no op %lld", (long long)op);
	*min_in = op_info[op].min_in, *max_in = op_info[op].max_in, *nout = op_info[op].nout;
}

/* ---- the command line ----------------------------------------------------- */

static void usage_eval(FILE *f, const RtProgram *p)
{
	fprintf(f,
	        "usage: %s --data DIR [OPTIONS]\n"
	        "\n"
	        "Evaluate the model '%s' (compiled by autotmc eval) on the dataset DIR (x.npy\n"
	        "and y.npy): every sample once, batchnorm by its running statistics, no\n"
	        "dropout. Prints 'loss: X' (the mean cross-entropy) and 'accuracy: Y' (top-1).\n"
	        "\n"
	        "options:\n"
	        "  --data DIR           the dataset to evaluate\n"
	        "  --weights W          the weights and running statistics (safetensors)\n"
	        "  --outputs OUT.npy    write the network's outputs (the input of the final\n"
	        "                       softmax) of every sample, [N, classes] float32\n"
	        "  --threads N          threads for the kernels (default: every core, %d here)\n"
	        "  --seed S             seed of the weights when --weights is not given\n"
	        "  --results R.json     write the results record (JSON) to R.json\n"
	        "  --slow KIND          the slow tier: pmem (default), dax-kmem or numa:N\n"
	        "  --slow-dir DIR       where the pmem slow pool's file goes\n"
	        "  --overcommit         make the pools even where they need more memory than\n"
	        "                       is free (default: refuse, with the figures)\n"
	        "  --profile-kernels    time every kernel launch and print a table at the end\n"
	        "  -q, --quiet          print only the loss and the accuracy\n"
	        "  -h, --help           show this help\n"
	        "\n"
	        "Documentation: docs/runtime.md.\n",
	        prog_name, p->model ? p->model : "?", rt_backend->kernels.cores());
}

static void usage(FILE *f, const RtProgram *p)
{
	if (p->flags & RT_PROGRAM_EVAL_ONLY) {
		usage_eval(f, p);
		return;
	}
	fprintf(f,
	        "usage: %s [OPTIONS]\n"
	        "\n"
	        "Train the model '%s' (compiled by autotmc): run the training step N times,\n"
	        "printing each step's loss and time, then the median step time and the sizes\n"
	        "of the fast and slow memory pools.\n"
	        "\n"
	        "options:\n"
	        "  --iters N            training steps (default 10, or one epoch of --data;\n"
	        "                       0 only initialises)\n"
	        "  --data DIR           train on the dataset DIR (x.npy and y.npy), in a\n"
	        "                       shuffled order per epoch drawn from --seed\n"
	        "  --epochs E           with --data: train for E epochs\n"
	        "  --threads N          threads for the kernels (default: every core, %d here)\n"
	        "  --seed S             seed of the initial weights and synthetic data (default 1)\n"
	        "  --weights W          load the weights from the safetensors file W\n"
	        "  --save-weights OUT   save the weights after training to OUT (safetensors, F32)\n"
	        "  --input X.npy        the input batch (default: N(0, 1) from the seed)\n"
	        "  --labels Y.npy       the labels: one-hot [N, K] floats, or class indices:\n"
	        "                       [N], or [N, T] for labels per position\n"
	        "  --results R.json     write the results record (JSON) to R.json\n"
	        "  --checkpoint DIR     save the run's state (weights, optimizer state, running\n"
	        "                       statistics, step) to DIR/checkpoint.safetensors at the\n"
	        "                       end, on Ctrl-C, and every --save-every K steps\n"
	        "  --save-every K       with --checkpoint: save a checkpoint every K steps\n"
	        "  --resume DIR         continue the run saved in DIR; --iters and --epochs\n"
	        "                       count from the start of the run\n"
	        "  --plot P.png|P.svg   at the end, plot every step's loss (and each epoch's\n"
	        "                       mean with --data, and the evaluations) with gnuplot\n"
	        "  --val DIR            evaluate on the dataset DIR at the end (programs built\n"
	        "                       with the evaluation pass): loss and top-1 accuracy\n"
	        "  --eval-every K       with --val: also evaluate every K steps\n"
	        "  --slow KIND          the slow tier: 'pmem' (default: a memkind file in\n"
	        "                       --slow-dir), 'dax-kmem' (persistent memory as a NUMA\n"
	        "                       node), or 'numa:N' (memory of NUMA node N)\n"
	        "  --slow-dir DIR       where the pmem slow pool's file goes (default: $TMPDIR\n"
	        "                       or /tmp); a fresh directory is made there and removed\n"
	        "                       at exit\n"
	        "  --overcommit         make the pools even where they need more memory than\n"
	        "                       is free (default: refuse, with the figures)\n"
	        "  --profile-kernels    time every kernel launch and print a table at the end\n"
	        "  -q, --quiet          print nothing but errors and warnings\n"
	        "  -h, --help           show this help\n"
	        "\n"
	        "Documentation: docs/runtime.md.\n",
	        prog_name, p->model ? p->model : "?", rt_backend->kernels.cores());
}

noreturn void rt_usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog_name);
	rt_exit_error(EXIT_USAGE);
}

static long long parse_count(const char *opt, const char *s, long long min, long long max)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max)
		rt_usage_error("%s expects a whole number from %lld to %lld, got '%s'", opt, min, max, s);
	return v;
}

/* The options of evaluation against what the program was compiled with. */
static void check_eval_options(const RtProgram *program, const RtOptions *o)
{
	if (program->flags & RT_PROGRAM_EVAL_ONLY) {
		const struct {
			const char *flag;
			bool given;
		} training[] = {{"--iters", o->iters_given}, {"--epochs", o->epochs != 0}, {"--checkpoint", o->checkpoint},
		                {"--resume", o->resume},     {"--save-weights", o->save_weights}, {"--input", o->input},
		                {"--labels", o->labels},     {"--val", o->val},  {"--eval-every", o->eval_every != 0},
		                {"--plot", o->plot}};
		for (size_t i = 0; i < sizeof training / sizeof training[0]; i++)
			if (training[i].given)
				rt_usage_error("%s is for training; this program evaluates the model on --data DIR", training[i].flag);
		if (!o->data)
			rt_usage_error("this program evaluates the model on a dataset: give --data DIR");
		return;
	}
	if (o->outputs)
		rt_usage_error("--outputs is for evaluation programs (autotmc eval)");
	if (o->eval_every && !o->val)
		rt_usage_error("--eval-every needs --val DIR");
	if (o->val && !(program->flags & RT_PROGRAM_EVAL_PASS))
		rt_usage_error("--val: this program was compiled without the evaluation pass (build it with --with-eval, "
		               "or run it with autotmc run --val DIR)");
}

static void parse_options(int argc, char **argv, const RtProgram *program, RtOptions *o)
{
	enum { O_ITERS = 256, O_THREADS, O_SEED, O_WEIGHTS, O_SAVE, O_INPUT, O_LABELS, O_RESULTS, O_SLOW,
	       O_SLOW_DIR, O_PROFILE, O_DATA, O_EPOCHS, O_CHECKPOINT, O_SAVE_EVERY, O_RESUME, O_PLOT, O_VAL,
	       O_EVAL_EVERY, O_OUTPUTS, O_OVERCOMMIT };
	static const struct option opts[] = {
		{"iters", required_argument, NULL, O_ITERS},
		{"threads", required_argument, NULL, O_THREADS},
		{"seed", required_argument, NULL, O_SEED},
		{"weights", required_argument, NULL, O_WEIGHTS},
		{"save-weights", required_argument, NULL, O_SAVE},
		{"input", required_argument, NULL, O_INPUT},
		{"labels", required_argument, NULL, O_LABELS},
		{"data", required_argument, NULL, O_DATA},
		{"epochs", required_argument, NULL, O_EPOCHS},
		{"results", required_argument, NULL, O_RESULTS},
		{"slow", required_argument, NULL, O_SLOW},
		{"slow-dir", required_argument, NULL, O_SLOW_DIR},
		{"profile-kernels", no_argument, NULL, O_PROFILE},
		{"checkpoint", required_argument, NULL, O_CHECKPOINT},
		{"save-every", required_argument, NULL, O_SAVE_EVERY},
		{"resume", required_argument, NULL, O_RESUME},
		{"plot", required_argument, NULL, O_PLOT},
		{"val", required_argument, NULL, O_VAL},
		{"eval-every", required_argument, NULL, O_EVAL_EVERY},
		{"outputs", required_argument, NULL, O_OUTPUTS},
		{"overcommit", no_argument, NULL, O_OVERCOMMIT},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	if (argc <= 1 || !argv)
		return;
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
		switch (ch) {
		case O_ITERS:
			o->iters = parse_count("--iters", optarg, 0, RT_MAX_STEPS);
			o->iters_given = true;
			break;
		case O_DATA:
			o->data = optarg;
			break;
		case O_EPOCHS:
			o->epochs = parse_count("--epochs", optarg, 1, 1000000);
			break;
		case O_THREADS:
			o->threads = (int)parse_count("--threads", optarg, 1, 4096);
			break;
		case O_SEED:
			o->seed = (uint64_t)parse_count("--seed", optarg, 0, 0x7fffffff);
			o->seed_given = true;
			break;
		case O_CHECKPOINT:
			o->checkpoint = optarg;
			break;
		case O_SAVE_EVERY:
			o->save_every = parse_count("--save-every", optarg, 1, RT_MAX_STEPS);
			break;
		case O_RESUME:
			o->resume = optarg;
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_VAL:
			o->val = optarg;
			break;
		case O_EVAL_EVERY:
			o->eval_every = parse_count("--eval-every", optarg, 1, RT_MAX_STEPS);
			break;
		case O_OUTPUTS:
			o->outputs = optarg;
			break;
		case O_OVERCOMMIT:
			o->overcommit = true;
			break;
		case O_WEIGHTS:
			o->weights = optarg;
			break;
		case O_SAVE:
			o->save_weights = optarg;
			break;
		case O_INPUT:
			o->input = optarg;
			break;
		case O_LABELS:
			o->labels = optarg;
			break;
		case O_RESULTS:
			o->results = optarg;
			break;
		case O_SLOW:
			if (strcmp(optarg, "pmem") == 0)
				o->slow_kind = RT_SLOW_PMEM;
			else if (strcmp(optarg, "dax-kmem") == 0)
				o->slow_kind = RT_SLOW_DAX;
			else if (strncmp(optarg, "numa:", 5) == 0) {
				o->slow_kind = RT_SLOW_NUMA;
				o->numa_node = (int)parse_count("--slow numa:N", optarg + 5, 0, 1023);
			} else
				rt_usage_error("--slow expects pmem, dax-kmem or numa:N, got '%s'", optarg);
			break;
		case O_SLOW_DIR:
			o->slow_dir = optarg;
			break;
		case O_PROFILE:
			o->profile = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout, program);
			exit(0);
		case ':':
			rt_usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			rt_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		rt_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->slow_dir && o->slow_kind != RT_SLOW_PMEM)
		rt_usage_error("--slow-dir applies only to --slow pmem");
	if (o->data && (o->input || o->labels))
		rt_usage_error("--data cannot be combined with --input or --labels");
	if (o->epochs && !o->data)
		rt_usage_error("--epochs needs --data");
	if (o->epochs && o->iters_given)
		rt_usage_error("give --iters or --epochs, not both");
	if (o->save_every && !o->checkpoint)
		rt_usage_error("--save-every needs --checkpoint DIR");
	if (o->resume && o->weights)
		rt_usage_error("--resume loads the weights from the checkpoint; give it or --weights, not both");
}

/* DIR/file in buf, or NULL without a DIR. */
static const char *in_dir(const char *dir, const char *file, char *buf, size_t size)
{
	if (!dir)
		return NULL;
	snprintf(buf, size, "%s/%s", dir, file);
	return buf;
}

/*
 * No output may overwrite another, nor a file the run reads (its weights,
 * its data, the program itself); --checkpoint DIR continues --resume DIR.
 */
static void check_distinct(const RtOptions *o)
{
	char ck[PATH_MAX], re[PATH_MAX], dx[PATH_MAX], dy[PATH_MAX], vx[PATH_MAX], vy[PATH_MAX], exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	const FileUse use[] = {
		{"--save-weights", o->save_weights, true, NULL},
		{"--results", o->results, true, NULL},
		{"--plot", o->plot, true, NULL},
		{"--outputs", o->outputs, true, NULL},
		{"--checkpoint", in_dir(o->checkpoint, "checkpoint.safetensors", ck, sizeof ck), true, "--resume"},
		{"--resume", in_dir(o->resume, "checkpoint.safetensors", re, sizeof re), false, NULL},
		{"--weights", o->weights, false, NULL},
		{"--input", o->input, false, NULL},
		{"--labels", o->labels, false, NULL},
		{"--data", in_dir(o->data, "x.npy", dx, sizeof dx), false, NULL},
		{"--data", in_dir(o->data, "y.npy", dy, sizeof dy), false, NULL},
		{"--val", in_dir(o->val, "x.npy", vx, sizeof vx), false, NULL},
		{"--val", in_dir(o->val, "y.npy", vy, sizeof vy), false, NULL},
		{"the program", n > 0 ? exe : NULL, false, NULL},
	};
	char err[4 * PATH_MAX];
	if (outfile_clash(use, (int)(sizeof use / sizeof use[0]), err, sizeof err))
		rt_usage_error("%s", err);
}

/*
 * The files written at the end (--save-weights, --results) are checked
 * before anything is allocated or trained, so that a run never ends by
 * losing its result to a typing mistake.
 */
static void check_outputs(const RtOptions *o)
{
	if (o->plot && !plot_format_ok(o->plot))
		rt_usage_error("--plot %s: a plot is written as .png or .svg", o->plot);
	const struct {
		const char *flag; /* the option */
		const char *path; /* its value, or NULL */
	} out[] = {{"--save-weights", o->save_weights}, {"--results", o->results}, {"--plot", o->plot},
	           {"--outputs", o->outputs}};
	for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
		char err[PATH_MAX + 128];
		if (out[i].path && !outfile_check(out[i].path, err, sizeof err))
			rt_fatal("%s: %s", out[i].flag, err);
	}
	check_distinct(o);
}

/* ---- begin and end -------------------------------------------------------- */

RtCtx *rt_begin(int argc, char **argv, const RtProgram *program)
{
	const RtBackend *b = rt_backend;
	b->kernels.prepare(argc, argv);
	if (argc > 0 && argv)
		rt_set_prog_name(argv[0]);
	RtCtx *ctx = rt_xcalloc(sizeof *ctx);
	ctx->program = program;
	ctx->backend = b;
	ctx->opt = (RtOptions){.iters = 10, .threads = b->kernels.cores(), .seed = 1};
	parse_options(argc, argv, program, &ctx->opt);
	check_eval_options(program, &ctx->opt);
	check_outputs(&ctx->opt);
	rt_ranks_begin(ctx);

	rt_check_memory(ctx);
	if (program->flags & RT_PROGRAM_MANAGED)
		b->memory.open_managed(&ctx->fast, program->fast_bytes, program->fast_limit);
	else
		b->memory.open_fast(&ctx->fast, program->fast_bytes, program->fast_limit);
	b->memory.open_slow(&ctx->slow, program->slow_bytes, ctx->opt.slow_kind, ctx->opt.slow_dir, ctx->opt.numa_node);
	ctx->copier = b->copies.open();
	/* what the kernels' scratch may take: the limit less the fast pool (a managed pool is not held under it) */
	int64_t scratch_budget = -1;
	if (program->fast_limit > 0 && !(program->flags & RT_PROGRAM_MANAGED))
		scratch_budget = program->fast_limit > ctx->fast.bytes ? program->fast_limit - ctx->fast.bytes : 0;
	if ((program->flags & RT_PROGRAM_TF32) && setenv("AUTOTM_TF32", "1", 1) != 0)
		rt_fatal("cannot set AUTOTM_TF32 for --tf32: %s", strerror(errno));
	ctx->kernel_state = b->kernels.open(ctx->opt.threads, scratch_budget);
	if (program->nkernels > 0) {
		ctx->nkernel_slots = program->nkernels;
		ctx->kernels = rt_xcalloc(sizeof *ctx->kernels * (size_t)program->nkernels);
	}
	if (ctx->opt.weights) {
		char err[512];
		if (tio_safetensors_open(ctx->opt.weights, &ctx->weights_file, err, sizeof err))
			rt_fatal("%s", err);
	}
	rt_checkpoint_begin(ctx); /* after the pools: its signal handlers come before theirs */
	return ctx;
}

void rt_pool_fast_check(int64_t bytes, int64_t limit)
{
	char b1[32], b2[32];
	if (bytes < 0)
		RT_ICE("negative fast pool size %lld", (long long)bytes);
	if (limit > 0 && bytes > limit)
		rt_fatal("the fast pool (%s) exceeds the limit (%s)", fmt_bytes(bytes, b1, sizeof b1),
		         fmt_bytes(limit, b2, sizeof b2));
}

void *rt_pool_base(RtCtx *ctx, int32_t pool)
{
	if (pool == RT_POOL_FAST)
		return ctx->fast.base;
	if (pool == RT_POOL_SLOW)
		return ctx->slow.base;
	RT_ICE("rt_pool_base: no pool %d", pool);
}

int64_t rt_iters(RtCtx *ctx)
{
	if (ctx->opt.data && !ctx->feed)
		rt_feed_open(ctx); /* sets opt.iters from the dataset's epochs */
	rt_checkpoint_iters(ctx);
	return ctx->opt.iters - (int64_t)ctx->first_step; /* --resume: the steps still to take */
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double rt_median(const double *v, int64_t n)
{
	if (n == 0)
		return 0;
	double *s = rt_xmalloc(sizeof *s * (size_t)n);
	memcpy(s, v, sizeof *s * (size_t)n);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
	free(s);
	return m;
}

static int cmp_slot_time(const void *a, const void *b, void *arg)
{
	const RtKernelSlot *k = arg;
	double x = k[*(const int32_t *)a].seconds, y = k[*(const int32_t *)b].seconds;
	return (x < y) - (x > y);
}

/* --profile-kernels: one line per kernel, slowest first. */
static void print_profile(RtCtx *ctx)
{
	int32_t *order = rt_xmalloc(sizeof *order * (size_t)(ctx->nkernel_slots + 1));
	int32_t n = 0;
	double total = 0;
	int64_t calls = 0;
	for (int32_t i = 0; i < ctx->nkernel_slots; i++)
		if (ctx->kernels[i].impl) {
			order[n++] = i;
			total += ctx->kernels[i].seconds;
			calls += ctx->kernels[i].calls;
		}
	/* insertion sort by time: qsort_r is a GNU extension */
	for (int32_t i = 1; i < n; i++)
		for (int32_t j = i; j > 0 && cmp_slot_time(&order[j - 1], &order[j], ctx->kernels) > 0; j--) {
			int32_t t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	printf("kernel profile: %d kernels, %lld launches, %.3f ms in kernels\n", n, (long long)calls, 1e3 * total);
	printf("%6s  %-26s %-28s %7s %12s %11s %7s\n", "id", "op", "implementation", "calls", "total ms", "mean ms",
	       "share");
	for (int32_t i = 0; i < n; i++) {
		const RtKernelSlot *k = &ctx->kernels[order[i]];
		printf("%6d  %-26s %-28s %7lld %12.3f %11.4f %6.1f%%\n", order[i], op_name(k->op),
		       ctx->backend->kernels.impl_name(k->impl), (long long)k->calls, 1e3 * k->seconds,
		       k->calls ? 1e3 * k->seconds / (double)k->calls : 0.0, total > 0 ? 100 * k->seconds / total : 0.0);
	}
	free(order);
}

/*
 * --plot: every step's loss against the step (numbered from the run's
 * start, across --resume), on a log scale when it spans more than a
 * factor of 20, with --data each epoch's mean loss at its last step, and
 * with --val each evaluation's loss, and its accuracy on the right axis.
 */
static bool plot_losses(const RtCtx *ctx)
{
	Plot p;
	if (!plot_open(&p, ctx->opt.plot, 900, 500, rt_prog_name()))
		return false;
	FILE *f = p.f;
	double lo = INFINITY, hi = 0;
	for (int64_t i = 0; i < ctx->nsteps; i++)
		if (isfinite(ctx->losses[i]) && ctx->losses[i] > 0) {
			lo = fmin(lo, ctx->losses[i]);
			hi = fmax(hi, ctx->losses[i]);
		}
	const char *model = ctx->program->model ? ctx->program->model : "?";
	fprintf(f, "set title \"training loss: %s\" noenhanced\n", model);
	fprintf(f, "set xlabel 'step'\nset ylabel 'loss'\nset format y '%%g'\nset grid\nset key top right\n%s",
	        hi > 20 * lo ? "set logscale y\n" : "");
	int64_t spe;
	rt_feed_epoch(ctx, 0, &spe);
	int nev;
	double batch, predicted;
	const RtEvalResult *ev = rt_eval_results(ctx, &nev, &batch, &predicted);
	if (nev) /* the evaluations' accuracy on the right axis */
		fprintf(f, "set y2label 'validation accuracy (%%)'\nset y2range [0:100]\nset y2tics\nset ytics nomirror\n");
	fprintf(f, "plot '-' using 1:2 with lines lw 1 title 'loss of each step'%s%s\n",
	        spe ? ", '-' using 1:2 with linespoints lw 2 pt 7 title 'mean loss of each epoch'" : "",
	        nev ? ", '-' using 1:2 with linespoints lw 2 pt 5 title 'validation loss'"
	              ", '-' using 1:2 axes x1y2 with linespoints lw 2 pt 9 title 'validation accuracy'"
	            : "");
	for (int64_t i = 0; i < ctx->nsteps; i++)
		fprintf(f, "%lld %.9g\n", (long long)(ctx->first_step + (uint64_t)i + 1), ctx->losses[i]);
	fprintf(f, "e\n");
	if (spe) {
		int64_t first = (int64_t)ctx->first_step, end = first + ctx->nsteps;
		for (int64_t e0 = first / spe * spe; e0 < end; e0 += spe) {
			int64_t a = e0 > first ? e0 : first, b = e0 + spe < end ? e0 + spe : end;
			double sum = 0;
			for (int64_t i = a; i < b; i++)
				sum += ctx->losses[i - first];
			if (b > a)
				fprintf(f, "%lld %.9g\n", (long long)b, sum / (double)(b - a));
		}
		fprintf(f, "e\n");
	}
	for (int k = 0; nev && k < 2; k++) {
		for (int i = 0; i < nev; i++)
			fprintf(f, "%lld %.9g\n", (long long)ev[i].step, k ? 100 * ev[i].accuracy : ev[i].loss);
		fprintf(f, "e\n");
	}
	return plot_close(&p);
}

static void check_fast_total(const RtCtx *ctx);

/*
 * The end of a run: the median step time (an evaluation program's: its
 * median batch time) against the prediction, the pools, the kernels.
 */
static void report_end(const RtCtx *ctx, double med)
{
	const RtProgram *p = ctx->program;
	const RtBackend *b = ctx->backend;
	double predicted = p->predicted_seconds;
	const char *what = "step";
	if (p->flags & RT_PROGRAM_EVAL_ONLY) {
		int n;
		const RtEvalResult *r = rt_eval_results(ctx, &n, &med, &predicted);
		if (n == 0)
			return;
		what = "batch";
		printf("evaluated %lld samples in %.3f s; median batch time: %.3f ms\n", (long long)r[n - 1].samples,
		       r[n - 1].seconds, 1e3 * med);
	} else {
		printf("median step time: %.3f ms over %lld steps\n", 1e3 * med, (long long)ctx->nsteps);
	}
	if (predicted > 0)
		printf("predicted %s time: %.3f ms (actual / predicted = %.3f)\n", what, 1e3 * predicted, med / predicted);
	char b1[32], b2[32], b3[32], w[512], fw[64];
	int64_t nmoves, moved;
	b->copies.stats(ctx->copier, &nmoves, &moved);
	printf("fast pool: %s (%s", fmt_bytes(ctx->fast.bytes, b1, sizeof b1), b->memory.where(&ctx->fast, fw, sizeof fw));
	if (p->fast_limit > 0)
		printf(", limit %s", fmt_bytes(p->fast_limit, b2, sizeof b2));
	printf("); slow pool: %s", fmt_bytes(ctx->slow.bytes, b3, sizeof b3));
	if (ctx->slow.bytes > 0)
		printf(" (%s)", b->memory.where(&ctx->slow, w, sizeof w));
	printf("\nkernels: %d (scratch %s); asynchronous moves: %lld (%s); threads: %d\n", ctx->nkernels,
	       fmt_bytes(b->kernels.scratch_bytes(ctx->kernel_state), b2, sizeof b2), (long long)nmoves,
	       fmt_bytes(moved, b1, sizeof b1), ctx->opt.threads);
}

/* What the run wrote at its end, in one line: "wrote w.safetensors (weights), r.json (results), p.png (plot)". */
static void report_written(const RtCtx *ctx, bool saved, bool recorded, bool plotted)
{
	const struct {
		bool wrote;
		const char *path, *what;
	} out[] = {{saved, ctx->opt.save_weights, "weights"},
	           {recorded, ctx->opt.results, "results"},
	           {plotted, ctx->opt.plot, "plot"},
	           {ctx->opt.checkpoint && !ctx->checkpoint_failed, ctx->opt.checkpoint, "checkpoint"}};
	int n = 0;
	for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
		if (out[i].wrote)
			printf("%s%s (%s)", n++ ? ", " : "wrote ", out[i].path, out[i].what);
	if (n) {
		printf("\n");
		fflush(stdout);
	}
}

int rt_end(RtCtx *ctx)
{
	int status = 0;
	if (ctx->in_step)
		RT_ICE("rt_end inside a step");
	rt_data_finish_loading(ctx);
	rt_end_progress_line();
	const RtBackend *b = ctx->backend;
	b->copies.drain(ctx->copier);
	if (!ctx->stopped && rt_eval_due(ctx, true)) {
		check_fast_total(ctx);
		if (!rt_evaluate(ctx))
			status = 1;
	}
	if (ctx->eval_failed)
		status = 1;
	if (!rt_ranks_end(ctx))
		status = 1;
	bool saved = ctx->opt.save_weights && rt_data_save_weights(ctx);
	if (ctx->opt.save_weights && !saved)
		status = 1;
	if (ctx->opt.checkpoint && ctx->checkpoint_step != ctx->step)
		rt_checkpoint_save(ctx); /* the run's last state */
	if (ctx->checkpoint_failed)
		status = 1;

	double med = rt_median(ctx->step_times, ctx->nsteps);
	if (!ctx->opt.quiet)
		report_end(ctx, med);
	if (ctx->opt.profile)
		print_profile(ctx);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		rt_warn("error writing the output: %s", strerror(errno));
		status = 1;
	}
	bool recorded = ctx->opt.results && rt_results_write(ctx, ctx->opt.results, med);
	if (ctx->opt.results && !recorded)
		status = 1;
	bool plotted = ctx->opt.plot && plot_losses(ctx);
	if (ctx->opt.plot && !plotted)
		status = 1;
	if (!ctx->opt.quiet)
		report_written(ctx, saved, recorded, plotted);

	rt_feed_close(ctx);
	rt_eval_free(ctx);
	for (int32_t i = 0; i < ctx->nkernel_slots; i++)
		if (ctx->kernels[i].impl)
			b->kernels.destroy(ctx->kernel_state, ctx->kernels[i].impl);
	free(ctx->kernels);
	b->kernels.close(ctx->kernel_state);
	b->copies.close(ctx->copier);
	b->memory.close(&ctx->fast);
	b->memory.close(&ctx->slow);
	rt_data_free(ctx);
	free(ctx->step_times);
	free(ctx->losses);
	free(ctx->checkpoint_path);
	free(ctx->resume_path);
	free(ctx);
	return status;
}

/* ---- moves ---------------------------------------------------------------- */

void rt_move(RtCtx *ctx, void *dst, const void *src, int64_t bytes)
{
	if (bytes < 0)
		RT_ICE("rt_move of %lld bytes", (long long)bytes);
	rt_exchange_need((void *const[]){dst, (void *)src}, 2); /* (returns at once where nothing is on its way) */
	ctx->backend->copies.move(dst, src, (size_t)bytes);
}

int32_t rt_move_async(RtCtx *ctx, void *dst, const void *src, int64_t bytes)
{
	if (bytes < 0)
		RT_ICE("rt_move_async of %lld bytes", (long long)bytes);
	rt_exchange_need((void *const[]){dst, (void *)src}, 2); /* (returns at once where nothing is on its way) */
	return ctx->backend->copies.submit(ctx->copier, dst, src, (size_t)bytes);
}

void rt_move_wait(RtCtx *ctx, int32_t handle)
{
	ctx->backend->copies.wait(ctx->copier, handle);
}

/* ---- kernels -------------------------------------------------------------- */

/* Check a description against ops.def before the backend reads it. */
static void check_desc(int32_t id, const int64_t *desc)
{
	int64_t op = desc[RT_D_OP], nin = desc[RT_D_NIN], nout = desc[RT_D_NOUT];
	if (op < 0 || op >= RT_NUM_OPS)
		RT_ICE("kernel %d: no op %lld", id, (long long)op);
	const char *name = op_info[op].name;
	if (nin < op_info[op].min_in || nin > op_info[op].max_in ||
	    nout != op_info[op].nout || nin + nout > RT_MAX_ARGS)
		RT_ICE("kernel %d (%s): %lld inputs and %lld outputs do not match ops.def", id, name, (long long)nin,
		       (long long)nout);
	for (int64_t i = 0; i < nin + nout; i++) {
		int64_t nd = RT_ARG_NDIM(desc, i);
		if (nd < 1 || nd > RT_MAX_DIMS)
			RT_ICE("kernel %d (%s): argument %lld has %lld dimensions", id, name, (long long)i, (long long)nd);
		for (int64_t d = 0; d < nd; d++)
			if (RT_ARG_DIM(desc, i, d) < 1)
				RT_ICE("kernel %d (%s): argument %lld has size %lld in dimension %lld", id, name,
				       (long long)i, (long long)RT_ARG_DIM(desc, i, d), (long long)d);
	}
}

void rt_kernel(RtCtx *ctx, int32_t id, const int64_t *desc)
{
	if (id < 0)
		RT_ICE("rt_kernel: negative kernel id %d", id);
	if (id >= ctx->nkernel_slots) {
		int32_t n = ctx->nkernel_slots ? ctx->nkernel_slots : 16;
		while (n <= id)
			n *= 2;
		RtKernelSlot *k = rt_xcalloc(sizeof *k * (size_t)n);
		if (ctx->nkernel_slots)
			memcpy(k, ctx->kernels, sizeof *k * (size_t)ctx->nkernel_slots);
		free(ctx->kernels);
		ctx->kernels = k;
		ctx->nkernel_slots = n;
	}
	if (ctx->kernels[id].impl)
		RT_ICE("kernel %d created twice", id);
	check_desc(id, desc);
	ctx->kernels[id].impl = ctx->backend->kernels.create(ctx->kernel_state, id, desc);
	ctx->kernels[id].op = desc[RT_D_OP];
	ctx->kernels[id].nargs = (int)(desc[RT_D_NIN] + desc[RT_D_NOUT]);
	ctx->nkernels++;
}

void rt_launch(RtCtx *ctx, int32_t id, void *const *args)
{
	if (id < 0 || id >= ctx->nkernel_slots || !ctx->kernels[id].impl)
		RT_ICE("rt_launch: kernel %d was never created", id);
	RtKernelSlot *k = &ctx->kernels[id];
	const RtKernelOps *ko = &ctx->backend->kernels;
	/* a gradient it reads may still be on its way: from the other ranks, or in a bucket not yet sent (a GPU
	   program's all-reduce kernels run alone average over NCCL's one rank, in buckets too) */
	rt_exchange_need(args, k->nargs);
	if (!ctx->opt.profile) {
		ko->launch(ctx->kernel_state, k->impl, args, ctx->step);
		return;
	}
	double t0 = rt_now();
	ko->launch(ctx->kernel_state, k->impl, args, ctx->step);
	ko->sync(ctx->kernel_state);
	k->seconds += rt_now() - t0;
	k->calls++;
}

/* ---- steps ---------------------------------------------------------------- */

/*
 * Before the first step, every kernel is made and its scratch known: the
 * fast pool and the kernels' scratch together must stay within the limit
 * the program was placed for. The compiler counts the scratch its profile
 * measured; a program run on another machine, or with another --threads,
 * can need more (oneDNN chooses by the CPU and the thread count).
 */
static void check_fast_total(const RtCtx *ctx)
{
	int64_t limit = ctx->program->fast_limit, pool = ctx->fast.bytes;
	int64_t scratch = ctx->backend->kernels.scratch_bytes(ctx->kernel_state);
	if (limit <= 0 || pool + scratch <= limit || (ctx->program->flags & RT_PROGRAM_MANAGED))
		return; /* a managed pool is all of the program's data, paged by the driver, not held under the limit */
	char b1[32], b2[32], b3[32];
	rt_fatal("the fast pool (%s) and the kernels' scratch (%s) exceed the fast-tier limit (%s) the program was "
	         "placed for: its kernels need more scratch here than the profile it was compiled with measured "
	         "(compile it again on this machine, with the --threads it runs with)",
	         fmt_bytes(pool, b1, sizeof b1), fmt_bytes(scratch, b2, sizeof b2), fmt_bytes(limit, b3, sizeof b3));
}

/* "1:02:03" or "2:03" */
static const char *fmt_duration(double seconds, char *buf, size_t size)
{
	long long s = seconds > 0 && seconds < 1e9 ? (long long)(seconds + 0.5) : 0;
	if (s >= 3600)
		snprintf(buf, size, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, size, "%lld:%02lld", s / 60, s % 60);
	return buf;
}

/*
 * After each step: on a terminal, one progress line rewritten in place
 * (at most ten times a second, and after the last step); elsewhere a line
 * a step, which is what scripts and logs read. With --data, a line at the
 * end of every epoch with its mean loss.
 */
static void report_step(RtCtx *ctx)
{
	/* steps are numbered from the start of the run, across --resume; done: by this process */
	int64_t done = ctx->nsteps, step = (int64_t)ctx->first_step + done, total = ctx->opt.iters, spe;
	int64_t epoch = rt_feed_epoch(ctx, step - 1, &spe);
	double now = rt_now(), l = ctx->losses[done - 1];
	if (ctx->progress_tty) {
		if (now - ctx->progress_shown >= 0.1 || step == total || (spe && step % spe == 0)) {
			double elapsed = now - ctx->run_start, rate = elapsed > 0 ? (double)done / elapsed : 0;
			int64_t batch = ctx->batch[RT_DATA_INPUT].data ? ctx->batch[RT_DATA_INPUT].shape[0] : 0;
			char eta[32];
			printf("\r\033[Kstep %lld/%lld", (long long)step, (long long)total);
			if (spe)
				printf("  epoch %lld/%lld", (long long)epoch + 1, (long long)((total + spe - 1) / spe));
			printf("  loss %.4g", l);
			if (batch && rate > 0)
				printf("  %.0f samples/s", rate * (double)batch);
			printf("  ETA %s", fmt_duration(rate > 0 ? (double)(total - step) / rate : 0, eta, sizeof eta));
			ctx->progress_shown = now;
			progress_open = true;
		}
	} else {
		printf("step %lld: loss %.9g (%.3f ms)\n", (long long)step, l, 1e3 * ctx->step_times[done - 1]);
	}
	if (spe && (step % spe == 0 || step == total)) {
		int64_t first = epoch * spe > (int64_t)ctx->first_step ? epoch * spe : (int64_t)ctx->first_step;
		int64_t n = step - first;
		double sum = 0, secs = 0;
		for (int64_t i = first; i < step; i++) {
			sum += ctx->losses[i - (int64_t)ctx->first_step];
			secs += ctx->step_times[i - (int64_t)ctx->first_step];
		}
		if (progress_open)
			printf("\r\033[K");
		printf("epoch %lld: mean loss %.6g over %lld steps%s (%.2f s)\n", (long long)epoch + 1, sum / (double)n,
		       (long long)n, n < spe ? " (a partial epoch)" : "", secs);
		progress_open = false;
	}
	fflush(stdout);
}

/*
 * A batch that cannot be read (a dataset file changed or truncated under
 * the run) ends it as Ctrl-C does: what the steps taken so far trained is
 * kept (--save-weights, and a last checkpoint to resume from once the data
 * is whole again), then exit 1.
 */
static noreturn void stop_unreadable(RtCtx *ctx, const char *why)
{
	ctx->in_step = false;
	rt_end_progress_line();
	fprintf(stderr, "%s: error: %s\n", prog_name, why);
	if (ctx->opt.save_weights || ctx->opt.checkpoint)
		fprintf(stderr, "%s: stopped before step %" PRIu64 "; saving what the %lld steps taken trained\n", prog_name,
		        ctx->step + 1, (long long)ctx->nsteps);
	ctx->stopped = true; /* no evaluation at this end */
	rt_end(ctx);
	rt_exit_error(1);
}

void rt_step_begin(RtCtx *ctx)
{
	if (ctx->in_step)
		RT_ICE("rt_step_begin twice without rt_step_end");
	if (ctx->nsteps == 0) {
		rt_data_finish_loading(ctx);
		check_fast_total(ctx);
		ctx->run_start = rt_now();
		ctx->progress_tty = rt_stdout_tty();
	}
	ctx->in_step = true;
	ctx->step_start = rt_now();
	char err[1024];
	if (ctx->feed && !rt_feed_next(ctx, err, sizeof err)) /* this step's batch: waited for within the step */
		stop_unreadable(ctx, err);
}

void rt_step_end(RtCtx *ctx, const float *loss)
{
	if (!ctx->in_step)
		RT_ICE("rt_step_end without rt_step_begin");
	ctx->backend->copies.drain(ctx->copier); /* a step is over when its moves and kernels are */
	ctx->backend->kernels.sync(ctx->kernel_state);
	double t = rt_now() - ctx->step_start;
	float lv = NAN;
	if (loss)
		ctx->backend->memory.load(&lv, loss, sizeof lv);
	double l = rt_ranks_mean(lv); /* the step's loss over every rank's shard */
	ctx->in_step = false;
	if (ctx->nsteps == ctx->steps_cap) {
		int64_t cap = ctx->steps_cap ? 2 * ctx->steps_cap : 64;
		double *st = rt_xmalloc(sizeof *st * (size_t)cap), *ls = rt_xmalloc(sizeof *ls * (size_t)cap);
		if (ctx->nsteps) {
			memcpy(st, ctx->step_times, sizeof *st * (size_t)ctx->nsteps);
			memcpy(ls, ctx->losses, sizeof *ls * (size_t)ctx->nsteps);
		}
		free(ctx->step_times);
		free(ctx->losses);
		ctx->step_times = st;
		ctx->losses = ls;
		ctx->steps_cap = cap;
	}
	ctx->step_times[ctx->nsteps] = t;
	ctx->losses[ctx->nsteps] = l;
	ctx->nsteps++;
	ctx->step++;
	rt_ranks_step_end(ctx);
	if (!ctx->opt.quiet)
		report_step(ctx);
	if (loss && !isfinite(l))
		rt_fatal("the loss is not finite at step %lld; lower the learning rate", (long long)ctx->step);
	int sig = rt_checkpoint_stop_signal();
	if (!sig && rt_eval_due(ctx, false) && !rt_evaluate(ctx))
		ctx->eval_failed = true;
	if (ctx->opt.checkpoint && (sig || (ctx->opt.save_every && ctx->step % (uint64_t)ctx->opt.save_every == 0)))
		rt_checkpoint_save(ctx);
	if (sig) { /* --checkpoint and Ctrl-C: the run ends here, reported as at its end */
		rt_end_progress_line();
		printf("stopped by signal %d after step %llu\n", sig, (unsigned long long)ctx->step);
		ctx->stopped = true; /* no evaluation at this end */
		int status = rt_end(ctx);
		exit(status ? status : 128 + sig);
	}
}
