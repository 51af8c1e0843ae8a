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

#include "autodiff.h"
#include "elaborate.h"
#include "interp.h"
#include "report.h"
#include "schedule.h"
#include "util.h"
#include "autotm/tensorio.h"

#ifndef AUTOTM_VERSION
#define AUTOTM_VERSION "0.1.0"
#endif
#ifndef AUTOTM_STDLIBDIR
#define AUTOTM_STDLIBDIR "/usr/local/share/autotm/stdlib"
#endif

enum { EXIT_USAGE = 2 };

/* Options shared by the commands that read a model. */
typedef struct ModelOpts {
	VEC(const char *) dirs; /* -I and the stdlib, in search order */
	VEC(Define) defines;    /* -D name=value */
	const char *file;       /* the model */
} ModelOpts;

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
	        "\n"
	        "options:\n"
	        "  -h, --help     show this help (or a command's: autotmc COMMAND --help)\n"
	        "  -V, --version  show the version\n"
	        "\n"
	        "Documentation: docs/language.md and docs/cli.md.\n");
}

static void usage_model_opts(FILE *f)
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

static noreturn void usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static noreturn void usage_error(const char *cmd, const char *fmt, ...)
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
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			const char *cands[] = {"%s/stdlib", "%s/../stdlib", "%s/../share/autotm/stdlib"};
			for (size_t i = 0; i < countof(cands); i++) {
				char *d = arena_printf(a, cands[i], exe);
				if (is_dir(d) && access(arena_printf(a, "%s/nn.net", d), R_OK) == 0) {
					add_dir(a, mo, d);
					break;
				}
			}
		}
	}
	add_dir(a, mo, AUTOTM_STDLIBDIR);
}

enum { OPT_VALUE = 256 }; /* first getopt value of a command's own valued option */

/*
 * Parse the options of a model command. `extra` lists the command's own
 * long options (zero-terminated): flags set their flag pointers; an option
 * whose value is OPT_VALUE + i stores its argument in *values[i].
 */
static void parse_model_opts(Arena *a, const char *cmd, int argc, char **argv, ModelOpts *mo,
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

static void verify_or_die(const Graph *g, const char *after)
{
	char err[512];
	if (!graph_verify(g, err, sizeof err))
		ICE("graph verification failed after %s: %s", after, err);
}

/* How far a command runs the pipeline. */
typedef enum Stage { STAGE_FORWARD, STAGE_TRAINING } Stage;

/* What the pipeline has built so far. */
typedef struct Compilation {
	Graph *g;        /* the graph: forward, then training step */
	Schedule *sched; /* order and liveness of the training step */
} Compilation;

/*
 * The pipeline, one pass per line, as far as `stage`. Returns false after
 * printing a diagnostic if the model is wrong.
 */
static bool compile(Arena *a, const ModelOpts *mo, Stage stage, Compilation *c)
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

static long parse_count(const char *cmd, const char *opt, const char *s, long max)
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
