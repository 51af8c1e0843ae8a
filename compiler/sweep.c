/*
 * sweep.c - autotmc sweep: build and run a model under every combination
 * of optimizer, fast-tier ratio and (optionally) thread count, and collect
 * the results records into one JSON file with plots.
 *
 * For each thread count the sweep runs the two baselines first (all-slow,
 * against which every speedup is taken, and all-fast, whose step time
 * steers --threads auto), then every optimizer at every ratio. The
 * results file is rewritten (atomically) after every run, so an
 * interrupted sweep keeps what it finished. docs/cli.md describes the
 * file; docs/placement.md the optimizers.
 *
 * --threads auto starts at every core and goes down: to half the count
 * while the all-fast step time stays within 10% of the time on every core,
 * by one otherwise, down to one thread. The runs form the matrix
 * (threads x fast-tier bytes -> step time) a scheduler packing jobs on a
 * machine needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "diag.h"
#include "driver.h"
#include "sweep.h"
#include "plot.h"
#include "outfile.h"
#include "util.h"

/* Split a comma-separated list (cli.c has checked its entries). */
static int split_list(Arena *a, const char *s, const char ***out)
{
	int n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	const char **v = arena_alloc(a, (size_t)n * sizeof *v);
	int k = 0;
	for (const char *p = s;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		v[k++] = arena_strndup(a, p, len);
		if (!e)
			break;
		p = e + 1;
	}
	*out = v;
	return k;
}

typedef struct Sweep {
	const Settings *base;  /* the command line: --hw, --profile-db, --solver, ... */
	const char *iters;     /* --iters */
	const char *out;       /* the results file */
	const char *tmpdir;    /* the runs' results records */
	cJSON *doc;            /* the results file's contents */
	cJSON *runs;           /* its "runs" */
	int nrun;              /* runs done */
	int total;             /* runs expected (0: not known in advance) */
	int failed;            /* runs without a result */
} Sweep;

/* Write the results document (atomically where it is a file: base/outfile.h). */
static bool save(const Sweep *sw)
{
	char *text = cJSON_Print(sw->doc);
	if (!text)
		fatal_sys("out of memory printing %s", sw->out);
	char err[512];
	size_t len = strlen(text);
	text[len] = '\n'; /* cJSON's terminating NUL becomes the last line's end */
	bool ok = outfile_write(sw->out, text, len + 1, err, sizeof err);
	if (!ok)
		error_plain("%s", err);
	free(text);
	return ok;
}

/* Run exe, its output discarded; its results record (parsed) or NULL after an error message. */
static cJSON *execute(const Sweep *sw, const char *exe, const char *threads, const char *record)
{
	const char *args[16];
	int n = 0;
	args[n++] = exe;
	args[n++] = "--iters";
	args[n++] = sw->iters;
	args[n++] = "--threads";
	args[n++] = threads;
	args[n++] = "--results";
	args[n++] = record;
	if (sw->base->slow_dir) {
		args[n++] = "--slow-dir";
		args[n++] = sw->base->slow_dir;
	}
	args[n] = NULL;
	unlink(record);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execv(exe, (char *const *)args);
		fprintf(stderr, "autotmc: error: cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		error_plain("cannot run %s: %s", exe, strerror(errno));
		return NULL;
	}
	if (WIFSIGNALED(status)) {
		error_plain("%s was killed by signal %d", exe, WTERMSIG(status));
		return NULL;
	}
	if (WEXITSTATUS(status) != 0) {
		error_plain("%s exited with status %d", exe, WEXITSTATUS(status));
		return NULL;
	}
	char *text = read_file(record, NULL);
	cJSON *r = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!r || !cJSON_IsObject(r)) {
		error_plain("%s wrote no results record to %s", exe, record);
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static double number(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *string(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/*
 * Place, build and run one combination; append its record (or its failure)
 * to the runs. Returns the measured step time, or NAN.
 */
static double run_one(Sweep *sw, const char *optimizer, const char *ratio, int threads, double all_slow)
{
	Arena a = {0};
	char th[16];
	snprintf(th, sizeof th, "%d", threads);
	Settings set = *sw->base;
	if (!optimizer_find(optimizer, &set.optimizer))
		ICE("sweep of an unknown optimizer %s", optimizer);
	set.ratio = ratio;
	if (ratio && !parse_ratio(ratio, &set.fast_fraction))
		ICE("sweep at a malformed ratio %s", ratio);
	set.threads = threads;
	set.output = NULL; /* -o is the results file: the programs go to the cache */
	Compilation c = {0};
	sw->nrun++;
	if (sw->total)
		printf("[%d/%d] ", sw->nrun, sw->total);
	else
		printf("[%d] ", sw->nrun);
	printf("threads %d, %s%s%s: ", threads, optimizer, ratio ? " at " : "", ratio ? ratio : "");
	fflush(stdout);
	const char *record = arena_printf(&a, "%s/run.json", sw->tmpdir);
	const char *exe = NULL;
	cJSON *r = NULL;
	if (compile(&a, &set, STAGE_PROGRAM, &c))
		r = execute(sw, exe = c.exe, th, record);
	double measured = NAN;
	if (!r) {
		printf("failed (see the message above)\n");
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "optimizer", optimizer);
		cJSON_AddNumberToObject(r, "threads", threads);
		cJSON_AddStringToObject(r, "error", exe ? "the program failed" : "no program: placement or build failed");
		sw->failed++;
	} else {
		measured = number(r, "actual_runtime");
		double predicted = number(r, "predicted_runtime");
		printf("predicted %.1f ms, measured %.1f ms", 1e3 * predicted, 1e3 * measured);
		if (all_slow > 0) {
			cJSON_AddNumberToObject(r, "speedup_over_all_slow", all_slow / measured);
			printf(" (%.2fx over all-slow)", all_slow / measured);
		}
		printf("\n");
		if (!cJSON_GetObjectItemCaseSensitive(sw->doc, "peak_live_bytes")) {
			cJSON_AddNumberToObject(sw->doc, "peak_live_bytes", (double)c.sched->peak);
			cJSON_AddStringToObject(sw->doc, "times", c.cm ? c.cm->source : "");
		}
	}
	cJSON_AddStringToObject(r, "ratio", ratio ? ratio : "");
	cJSON_AddItemToArray(sw->runs, r);
	save(sw);
	fflush(stdout);
	arena_free(&a);
	return measured;
}

/* The best measured run of each (threads, ratio): the performance matrix. */
static void add_matrix(Sweep *sw)
{
	cJSON_DeleteItemFromObjectCaseSensitive(sw->doc, "matrix");
	cJSON *m = cJSON_AddArrayToObject(sw->doc, "matrix");
	const cJSON *r;
	cJSON_ArrayForEach(r, sw->runs) {
		const char *ratio = string(r, "ratio");
		double t = number(r, "actual_runtime");
		if (!ratio[0] || isnan(t))
			continue;
		int at = -1, k = 0;
		const cJSON *c;
		cJSON_ArrayForEach(c, m) {
			if (number(c, "threads") == number(r, "threads") && strcmp(string(c, "ratio"), ratio) == 0)
				at = k;
			k++;
		}
		if (at >= 0 && number(cJSON_GetArrayItem(m, at), "actual_runtime") <= t)
			continue;
		cJSON *cell = cJSON_CreateObject();
		cJSON_AddNumberToObject(cell, "threads", number(r, "threads"));
		cJSON_AddStringToObject(cell, "ratio", ratio);
		cJSON_AddNumberToObject(cell, "dram_limit", number(r, "dram_limit"));
		cJSON_AddStringToObject(cell, "optimizer", string(r, "optimizer"));
		cJSON_AddNumberToObject(cell, "actual_runtime", t);
		if (at >= 0)
			cJSON_ReplaceItemInArray(m, at, cell);
		else
			cJSON_AddItemToArray(m, cell);
	}
}

/* "results.json" + "-speedup" + ".svg" -> "results-speedup.svg" */
static const char *plot_path(Arena *a, const char *out, const char *what, const char *ext)
{
	const char *dot = strrchr(out, '.'), *slash = strrchr(out, '/');
	size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - out) : strlen(out);
	return arena_printf(a, "%.*s-%s.%s", (int)stem, out, what, ext);
}

/*
 * Speedup over all-slow against the ratio, one line per optimizer, at the
 * largest thread count; and predicted against measured step time for every
 * run, with the diagonal.
 */
static bool draw(Arena *a, const Sweep *sw, const char *ext, const char *model, const char *const *opts, int nopt,
                 const char *const *ratios, int nratio, int threads)
{
	Plot p;
	bool ok = plot_open(&p, plot_path(a, sw->out, "speedup", ext), 900, 520, "autotmc");
	if (ok) {
		FILE *f = p.f;
		fprintf(f, "set title \"speedup over all-slow: %s, %d thread%s\" noenhanced\n", model, threads,
		        threads == 1 ? "" : "s");
		/* the key beside the plot, where it hides no point */
		fprintf(f, "set xlabel 'slow : fast'\nset ylabel 'speedup over all-slow'\nset grid\n"
		           "set key outside right top noenhanced\nset yrange [0:*]\nset xtics (");
		for (int i = 0; i < nratio; i++)
			fprintf(f, "%s'%s' %d", i ? ", " : "", ratios[i], i);
		fprintf(f, ")\nset xrange [-0.3:%g]\n", nratio - 0.7);
		/* all-fast's speedup at this thread count: what every ratio aims at */
		double all_fast = NAN;
		const cJSON *r;
		cJSON_ArrayForEach(r, sw->runs) {
			if (number(r, "threads") == threads && strcmp(string(r, "optimizer"), "all-fast") == 0)
				all_fast = number(r, "speedup_over_all_slow");
		}
		if (!isnan(all_fast))
			fprintf(f, "set arrow from graph 0, first %g to graph 1, first %g nohead dt 2 lw 2 lc rgb 'gray30'\n"
			           "set label 'all-fast (%.2fx)' at graph 0.99, first %g right offset 0,0.7 tc rgb 'gray30'\n",
			        all_fast, all_fast, all_fast, all_fast);
		fprintf(f, "plot ");
		for (int o = 0; o < nopt; o++)
			fprintf(f, "%s'-' using 1:2 with linespoints lw 2 pt 7 title '%s'", o ? ", " : "", opts[o]);
		fprintf(f, "\n");
		for (int o = 0; o < nopt; o++) {
			for (int i = 0; i < nratio; i++) {
				cJSON_ArrayForEach(r, sw->runs) {
					if (number(r, "threads") == threads && strcmp(string(r, "optimizer"), opts[o]) == 0 &&
					    strcmp(string(r, "ratio"), ratios[i]) == 0 && !isnan(number(r, "speedup_over_all_slow")))
						fprintf(f, "%d %g\n", i, number(r, "speedup_over_all_slow"));
				}
			}
			fprintf(f, "e\n");
		}
		ok = plot_close(&p);
	}
	if (!plot_open(&p, plot_path(a, sw->out, "predicted", ext), 700, 600, "autotmc"))
		return false;
	FILE *f = p.f;
	fprintf(f, "set title \"predicted against measured step time: %s\" noenhanced\n", model);
	/* one range on both axes, the largest time of either (the diagonal is then the square's) */
	double most = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, sw->runs) {
		double pt = number(r, "predicted_runtime"), mt = number(r, "actual_runtime");
		if (!isnan(pt) && !isnan(mt))
			most = fmax(most, fmax(pt, mt));
	}
	fprintf(f, "set xlabel 'predicted (ms)'\nset ylabel 'measured (ms)'\nset grid\nset key outside below noenhanced\n"
	           "set size square\nset xrange [0:%g]\nset yrange [0:%g]\n", 1.05e3 * most + 1e-6,
	        1.05e3 * most + 1e-6);
	fprintf(f, "plot x with lines dt 2 lc rgb 'gray' title 'measured = predicted'");
	const char *names[] = {"all-slow", "all-fast"};
	for (int o = 0; o < nopt + 2; o++)
		fprintf(f, ", '-' using 1:2 with points pt 7 ps 1.2 title '%s'", o < nopt ? opts[o] : names[o - nopt]);
	fprintf(f, "\n");
	for (int o = 0; o < nopt + 2; o++) {
		const char *name = o < nopt ? opts[o] : names[o - nopt];
		cJSON_ArrayForEach(r, sw->runs) {
			if (strcmp(string(r, "optimizer"), name) == 0 && !isnan(number(r, "predicted_runtime")) &&
			    !isnan(number(r, "actual_runtime")))
				fprintf(f, "%g %g\n", 1e3 * number(r, "predicted_runtime"), 1e3 * number(r, "actual_runtime"));
		}
		fprintf(f, "e\n");
	}
	return plot_close(&p) && ok;
}

/* The next thread count of --threads auto after `cur`, or 0 when done. */
static int next_threads(int cur, double t_cur, double t_all)
{
	if (cur <= 1)
		return 0;
	if (!isnan(t_cur) && !isnan(t_all) && t_cur <= 1.1 * t_all)
		return cur / 2;
	return cur - 1;
}

int cmd_sweep(const Settings *set, Arena *arena)
{
	Arena a = {0};
	const char *out = set->output, *iters = arena_printf(&a, "%ld", set->iters), *plots = set->plots;
	const char **opts, **ratios;
	int nopt = split_list(&a, set->optimizers, &opts), nratio = split_list(&a, set->ratios, &ratios);
	long ncores = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncores < 1)
		ncores = 1;
	bool autothreads = set->threads_auto;
	int threads = autothreads || !set->threads ? (int)ncores : set->threads;
	(void)arena;

	/* The model must compile before anything runs. */
	Compilation probe;
	if (!compile(&a, set, STAGE_TRAINING, &probe)) {
		arena_free(&a);
		return 1;
	}
	const char *model = probe.g->model;
	if (!out)
		out = arena_printf(&a, "%s-sweep.json", model);
	/* every file the sweep writes, before the first run */
	const char *outputs[] = {out, strcmp(plots, "none") ? plot_path(&a, out, "speedup", plots) : NULL,
	                         strcmp(plots, "none") ? plot_path(&a, out, "predicted", plots) : NULL};
	for (size_t i = 0; i < countof(outputs); i++) {
		char err[512];
		if (outputs[i] && !outfile_check(outputs[i], err, sizeof err)) {
			error_plain("%s", err);
			arena_free(&a);
			return 1;
		}
	}
	char tmpl[] = "/tmp/autotm-sweep.XXXXXX";
	Sweep sw = {.base = set, .iters = iters, .out = out, .tmpdir = mkdtemp(tmpl),
	            .total = autothreads ? 0 : 2 + nopt * nratio};
	if (!sw.tmpdir)
		fatal_sys("cannot create a temporary directory in /tmp: %s", strerror(errno));
	sw.doc = cJSON_CreateObject();
	cJSON_AddStringToObject(sw.doc, "model", model);
	cJSON_AddStringToObject(sw.doc, "file", set->file);
	cJSON_AddStringToObject(sw.doc, "hw", set->hw ? set->hw : "");
	cJSON_AddNumberToObject(sw.doc, "iterations", strtod(iters, NULL));
	cJSON *topts = cJSON_AddArrayToObject(sw.doc, "optimizers"), *tratios = cJSON_AddArrayToObject(sw.doc, "ratios");
	for (int i = 0; i < nopt; i++)
		cJSON_AddItemToArray(topts, cJSON_CreateString(opts[i]));
	for (int i = 0; i < nratio; i++)
		cJSON_AddItemToArray(tratios, cJSON_CreateString(ratios[i]));
	cJSON *tthreads = cJSON_AddArrayToObject(sw.doc, "threads");
	sw.runs = cJSON_AddArrayToObject(sw.doc, "runs");
	printf("sweep: %s, %d optimizer%s x %d ratio%s, threads %s; results in %s\n", model, nopt,
	       nopt == 1 ? "" : "s", nratio, nratio == 1 ? "" : "s", autothreads ? "auto" : arena_printf(&a, "%d", threads),
	       out);

	double t_all = NAN; /* all-fast on the first thread count */
	int first = threads;
	for (int t = threads; t > 0;) {
		cJSON_AddItemToArray(tthreads, cJSON_CreateNumber(t));
		double slow = run_one(&sw, "all-slow", NULL, t, NAN);
		double fast = run_one(&sw, "all-fast", NULL, t, isnan(slow) ? 0 : slow);
		if (t == first)
			t_all = fast;
		for (int i = 0; i < nratio; i++)
			for (int o = 0; o < nopt; o++)
				run_one(&sw, opts[o], ratios[i], t, isnan(slow) ? 0 : slow);
		if (!autothreads)
			break;
		t = next_threads(t, fast, t_all);
	}
	add_matrix(&sw);
	bool saved = save(&sw), drawn = true;
	if (strcmp(plots, "none") != 0)
		drawn = draw(&a, &sw, plots, model, opts, nopt, ratios, nratio, first);
	printf("sweep: %d run%s, %d failed", sw.nrun, sw.nrun == 1 ? "" : "s", sw.failed);
	if (saved)
		printf("; wrote %s", out);
	if (drawn && strcmp(plots, "none") != 0)
		printf("%s %s and %s", saved ? "," : "; wrote", outputs[1], outputs[2]);
	if (!saved || !drawn)
		printf("; %s could not be written (see above)", !saved ? out : "the plots");
	printf("\n");
	bool ok = saved && drawn;
	unlink(arena_printf(&a, "%s/run.json", sw.tmpdir));
	rmdir(sw.tmpdir);
	cJSON_Delete(sw.doc);
	arena_free(&a);
	return ok && sw.failed == 0 ? 0 : 1;
}
