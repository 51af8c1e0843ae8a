/*
 * main.c - the commands of autotmc.
 *
 * `autotmc COMMAND [options] FILE`. Each command parses its command line
 * into Settings (cli.c), runs the pipeline as far as it needs (compile()
 * in driver.c) and shows or runs what it built. sweep is in sweep.c.
 *
 * Exit status: 0 on success, 1 for an error in the model or a failure of
 * the system (a file that cannot be read), 2 for a wrong command line.
 */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "driver.h"
#include "import.h"
#include "interp.h"
#include "profile.h"
#include "profile_gpu.h"
#include "report.h"
#include "report_schedule.h"
#include "sweep.h"
#include "util.h"

#ifndef AUTOTM_VERSION
#define AUTOTM_VERSION "0.1.0"
#endif

static int cmd_check(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, STAGE_TRAINING, &c))
		return 1;
	report_summary(stdout, c.g, c.sched, s->file);
	if (!s->no_fuse) { /* the step again without fusion: its kernels, its peak */
		Settings unfused = *s;
		unfused.no_fuse = true;
		unfused.attention = ATTENTION_DEFAULT; /* composed, as --no-fuse has it */
		Compilation u;
		char b[32];
		if (!compile(a, &unfused, STAGE_TRAINING, &u))
			return 1;
		if (u.g->nodes.n != c.g->nodes.n)
			printf("with --no-fuse: %d kernels, peak live bytes %" PRId64 " (%s)\n", u.g->nodes.n, u.sched->peak,
			       fmt_bytes(u.sched->peak, b, sizeof b));
	}
	return 0;
}

/* import: the .net file on stdout or in -o, a summary on stderr (stdout may be the file) */
static int cmd_import(const Settings *s, Arena *a)
{
	(void)a;
	char err[2048];
	ImportStats st = {0};
	const char *name = s->output ? s->output : "imported.net";
	if (onnx_import(s->file, s->output, name, s->import_weights, &st, err, sizeof err) != 0) {
		error_plain("%s", err);
		return 1;
	}
	char b[32];
	fprintf(stderr, "autotmc: imported %s: %d nodes as %s, %d blocks; %d tensors of weights and statistics (%s)%s%s\n",
	        s->file, st.nodes, s->output ? s->output : "the standard output", st.blocks, st.tensors,
	        fmt_bytes(4 * st.elements, b, sizeof b), s->import_weights ? " in " : ", not written (--weights)",
	        s->import_weights ? s->import_weights : "");
	return 0;
}

static int cmd_graph(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, s->train ? STAGE_TRAINING : STAGE_FORWARD, &c))
		return 1;
	if (s->dot)
		report_dot(stdout, c.g);
	else if (s->json)
		report_json(stdout, c.g, c.sched);
	else
		report_graph(stdout, c.g, c.sched);
	return 0;
}

static int cmd_interpret(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, STAGE_TRAINING, &c))
		return 1;
	uint64_t seed = s->seed < 0 ? 1 : (uint64_t)s->seed;
	Interp *ip = interp_new(c.g, c.sched, s->f64, seed);
	bool ok = (!s->weights || interp_load_weights(ip, s->weights)) &&
	          (!s->input || interp_load_npy(ip, c.g->input, s->input)) &&
	          (!s->labels || interp_load_npy(ip, c.g->labels, s->labels));
	InterpFeed *feed = NULL;
	long iters = s->iters;
	bool unreadable = false; /* a batch could not be read: the steps taken so far are kept */
	if (ok && s->data)
		ok = (feed = interp_feed_open(ip, s->data, seed, s->epochs, s->iters, &iters)) != NULL;
	for (long i = 0; ok && i < iters; i++) {
		if (feed && !interp_feed_step(ip, feed, i)) {
			ok = false;
			unreadable = true;
			if (s->save_weights)
				fprintf(stderr, "autotmc: stopped before step %ld; saving the weights of the %ld steps taken\n",
				        i + 1, i);
			break;
		}
		double loss = interp_step(ip);
		printf("step %ld: loss %.9g\n", i + 1, loss);
		fflush(stdout);
		if (!isfinite(loss)) {
			error_plain("the loss is not finite at step %ld; lower the learning rate", i + 1);
			ok = false;
		}
	}
	if ((ok || unreadable) && s->save_weights && !interp_save_weights(ip, s->save_weights))
		ok = false;
	interp_feed_close(feed);
	interp_free(ip);
	return ok ? 0 : 1;
}

static int cmd_profile(const Settings *s, Arena *a)
{
	char err[1024];
	if (s->slow_dir) {
		struct stat st;
		if (stat(s->slow_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			error_plain("--slow-dir %s is not a directory", s->slow_dir);
			return 1;
		}
	}
	Compilation c;
	if (!compile(a, s, STAGE_TRAINING, &c))
		return 1;
	if (s->target == TARGET_GPU) { /* the GPU is timed on the GPU machine: write what to time */
		int n = gpu_export_kernels(s->export_path, c.g, c.sched, a, err, sizeof err);
		if (n < 0) {
			error_plain("%s", err);
			return 1;
		}
		printf("wrote %d kernels of %s to %s; on the GPU machine: autotm-gpu-profile %s -o PROFILE.tsv\n", n,
		       c.g->model, s->export_path, s->export_path);
		return 0;
	}
	ProfileOptions po = {.db = s->db, .slow_dir = s->slow_dir, .fast_only = s->fast_only, .quiet = s->quiet,
	                     .model = s->file, .threads = s->threads, .runs = s->runs, .slow_kind = s->slow_kind,
	                     .numa_node = s->numa_node};
	if (!profile_graph(c.g, c.sched, &po, NULL, err, sizeof err)) {
		error_plain("%s", err);
		return 1;
	}
	return 0;
}

static int cmd_schedule(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, STAGE_PLACED, &c))
		return 1;
	Timeline *tl = timeline_make(c.place, c.cm, a);
	if (s->json) {
		schedule_json(stdout, c.g, c.place, tl, c.cm, &c.st);
	} else {
		if (!s->summary)
			schedule_table(stdout, c.g, c.place, tl, c.cm);
		printf("%smodel %s\n", s->summary ? "" : "\n", c.g->model);
		schedule_plan(stdout, c.sched, c.place, c.cm, &c.st, a);
	}
	bool ok = true;
	if (s->trace)
		ok = schedule_trace(s->trace, c.g, c.place, tl) && ok;
	if (s->plot)
		ok = schedule_plot(s->plot, c.g, c.place, place_kernel_scratch(c.sched, c.cm)) && ok;
	return ok ? 0 : 1;
}

static int cmd_build(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, STAGE_PROGRAM, &c))
		return 1;
	schedule_plan(stdout, c.sched, c.place, c.cm, &c.st, a);
	if (c.eval) {
		printf("evaluation pass:\n");
		schedule_plan(stdout, c.eval->sched, c.eval->place, c.eval->cm, &c.eval->st, a);
	}
	if (s->emit_llvm)
		printf("wrote %s and %s.ll\n", c.exe, c.exe);
	else
		printf("wrote %s\n", c.exe);
	return 0;
}

/*
 * The program args[0..n) on s->ranks ranks: mpirun starts them on this
 * machine (ranks_mpirun's arguments), with --threads each (cli.c shares
 * the cores among them).
 */
static int run_ranks(const Settings *s, const char **args, int n, Arena *a)
{
	int k;
	const char **pre = ranks_mpirun(s->ranks, &k, a), **argv = arena_array(a, (size_t)(k + n + 1), sizeof(char *));
	memcpy(argv, pre, sizeof(char *) * (size_t)k);
	memcpy(argv + k, args, sizeof(char *) * (size_t)n);
	argv[k + n] = NULL;
	if (setenv("AUTOTM_STDOUT_TTY", isatty(STDOUT_FILENO) ? "1" : "0", 1) != 0) /* (the ranks' is mpirun's pty) */
		error_plain("cannot set AUTOTM_STDOUT_TTY: %s", strerror(errno));
	execv(argv[0], (char *const *)argv);
	error_plain("cannot run %s for --ranks %d: %s", argv[0], s->ranks, strerror(errno));
	return 1;
}

static int cmd_run(const Settings *s, Arena *a)
{
	Compilation c;
	if (!compile(a, s, STAGE_PROGRAM, &c))
		return 1;
	/* The program's own options: it prints the losses, times and pool sizes. */
	const char *args[48];
	int n = 0;
	args[n++] = c.exe;
	if (s->iters >= 0) { /* not given with --data: the program's one epoch */
		args[n++] = "--iters";
		args[n++] = arena_printf(a, "%ld", s->iters);
	}
	if (s->epochs) {
		args[n++] = "--epochs";
		args[n++] = arena_printf(a, "%ld", s->epochs);
	}
	if (s->seed >= 0) { /* the program's default otherwise, or a checkpoint's */
		args[n++] = "--seed";
		args[n++] = arena_printf(a, "%ld", s->seed);
	}
	if (s->save_every) {
		args[n++] = "--save-every";
		args[n++] = arena_printf(a, "%ld", s->save_every);
	}
	if (s->eval_every) {
		args[n++] = "--eval-every";
		args[n++] = arena_printf(a, "%ld", s->eval_every);
	}
	const struct {
		const char *flag, *value;
	} files[] = {{"--weights", s->weights}, {"--save-weights", s->save_weights}, {"--input", s->input},
	             {"--labels", s->labels},   {"--results", s->results},         {"--slow-dir", s->slow_dir},
	             {"--data", s->data},       {"--checkpoint", s->checkpoint},   {"--resume", s->resume},
	             {"--plot", s->plot},       {"--val", s->val},                 {"--outputs", s->outputs}};
	for (size_t i = 0; i < countof(files); i++)
		if (files[i].value) {
			args[n++] = files[i].flag;
			args[n++] = files[i].value;
		}
	if (s->threads) {
		args[n++] = "--threads";
		args[n++] = arena_printf(a, "%d", s->threads);
	}
	if (s->profile_kernels)
		args[n++] = "--profile-kernels";
	if (s->overcommit)
		args[n++] = "--overcommit";
	if (s->quiet)
		args[n++] = "-q";
	args[n] = NULL;
	if (!s->quiet) {
		printf("program: %s\n", c.exe);
		schedule_plan(stdout, c.sched, c.place, c.cm, &c.st, a);
	}
	if (c.eval && !s->quiet) {
		printf("evaluation pass:\n");
		schedule_plan(stdout, c.eval->sched, c.eval->place, c.eval->cm, &c.eval->st, a);
	}
	fflush(stdout);
	if (s->ranks > 1)
		return run_ranks(s, args, n, a);
	execv(c.exe, (char *const *)args);
	error_plain("cannot run %s: %s", c.exe, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0) {
		printf("autotmc %s\n", AUTOTM_VERSION);
		return 0;
	}
	static int (*const run[NUM_COMMANDS])(const Settings *s, Arena *a) = {
		[CMD_CHECK] = cmd_check,       [CMD_GRAPH] = cmd_graph, [CMD_INTERPRET] = cmd_interpret,
		[CMD_PROFILE] = cmd_profile,   [CMD_SCHEDULE] = cmd_schedule, [CMD_BUILD] = cmd_build,
		[CMD_RUN] = cmd_run,           [CMD_EVAL] = cmd_run,     [CMD_SWEEP] = cmd_sweep,
		[CMD_IMPORT] = cmd_import,
	};
	Command cmd;
	if (!command_find(name, &cmd))
		usage_error(NUM_COMMANDS, "unknown command '%s'", name);
	Arena a = {0};
	Settings s;
	settings_parse(&a, cmd, argc - 1, argv + 1, &s);
	int rc = run[cmd](&s, &a);
	arena_free(&a);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("autotmc: error writing output");
		return 1;
	}
	return rc;
}
