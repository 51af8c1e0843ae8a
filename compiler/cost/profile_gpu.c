/*
 * profile_gpu.c - the kernels file autotm-gpu-profile reads and the profile
 * it writes (profile_gpu.h).
 */
#include "profile_gpu.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotm/rt.h"
#include "profile.h"
#include "outfile.h"
#include "util.h"

#define KERNELS_HEADER "# autotm gpu kernels 1"
#define PROFILE_HEADER "# autotm gpu profile 1"

int gpu_export_kernels(const char *path, const Graph *g, const Schedule *s, Arena *a, char *err, size_t errlen)
{
	ProfileSigs *sigs = profile_signatures(g, s, a);
	OutFile out;
	if (!outfile_open(&out, path, err, errlen))
		return -1;
	FILE *f = out.f;
	fprintf(f, "%s\n# %s: %d distinct kernels of %d in the training step\n", KERNELS_HEADER, g->model, sigs->n,
	        s->n);
	for (int i = 0; i < sigs->n; i++) {
		fputs(sigs->v[i]->text, f);
		for (int k = 0; k < RT_DESC_LEN; k++)
			fprintf(f, "%c%" PRId64, k ? ',' : '\t', sigs->v[i]->desc[k]);
		fputc('\n', f);
	}
	return outfile_commit(&out, err, errlen) ? sigs->n : -1;
}

/* ------------------------------------------------------------ reading */

enum { DIR_TO_SLOW, DIR_TO_FAST, NDIR };

typedef struct MovePoint {
	double bytes, seconds;
} MovePoint;

typedef VEC(KernelAlgo) AlgoVec;

typedef struct GpuData {
	double *fast;                     /* node id -> seconds */
	AlgoVec *algos;                   /* node id -> its algorithms, fastest first */
	VEC(MovePoint) moves[NDIR][2];    /* [direction][async], by bytes ascending */
} GpuData;

static int gpu_algos(const CostModel *cm, const Node *n, const KernelAlgo **out)
{
	const AlgoVec *v = &((const GpuData *)cm->data)->algos[n->id];
	*out = v->v;
	return v->n;
}

static int cmp_algo(const void *a, const void *b)
{
	double x = ((const KernelAlgo *)a)->seconds, y = ((const KernelAlgo *)b)->seconds;
	return (x > y) - (x < y);
}

static double gpu_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	if (slow)
		ICE("the GPU profile was asked for %s with arguments in host memory", n->name);
	return ((const GpuData *)cm->data)->fast[n->id];
}

/* Piecewise linear in bytes between measured sizes; beyond them, the nearest segment's slope. */
static double interpolate(const MovePoint *p, int n, double bytes)
{
	if (n == 1)
		return p[0].seconds * bytes / p[0].bytes;
	int i = 1;
	while (i < n - 1 && p[i].bytes < bytes)
		i++;
	double slope = (p[i].seconds - p[i - 1].seconds) / (p[i].bytes - p[i - 1].bytes);
	double t = p[i - 1].seconds + slope * (bytes - p[i - 1].bytes);
	return t > 0 ? t : p[0].seconds * bytes / p[0].bytes;
}

static double gpu_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	(void)to;
	const GpuData *d = cm->data;
	int dir = from == TIER_FAST ? DIR_TO_SLOW : DIR_TO_FAST;
	return interpolate(d->moves[dir][async].v, d->moves[dir][async].n, (double)bytes);
}

static int cmp_point(const void *a, const void *b)
{
	double x = ((const MovePoint *)a)->bytes, y = ((const MovePoint *)b)->bytes;
	return (x > y) - (x < y);
}

static bool bad(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static bool bad(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	int n = snprintf(err, errlen, "%s:%d: ", path, line);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* Split line at tabs into at most max fields; their count. */
static int split_tabs(char *line, char **field, int max)
{
	int n = 0;
	for (char *p = line; n < max;) {
		field[n++] = p;
		char *t = strchr(p, '\t');
		if (!t)
			break;
		*t = '\0';
		p = t + 1;
	}
	return n;
}

static bool positive(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*out) && *out > 0;
}

/* A time in seconds, positive and at most PROFILE_MAX_SECONDS. */
static bool seconds(const char *s, double *out)
{
	return positive(s, out) && *out <= PROFILE_MAX_SECONDS;
}

/* Parse the profile text into seconds by signature (sigs order) and the move curves. */
static bool parse(const char *path, char *text, bool allow_nondet, const ProfileSigs *sigs, double *sig_time,
                  AlgoVec *sig_algos, GpuData *d, const char **machine, Arena *a, char *err, size_t errlen)
{
	int lineno = 0;
	bool header = false;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (!header) {
			if (strcmp(line, PROFILE_HEADER) != 0)
				return bad(err, errlen, path, lineno, "not a GPU profile (the first line is not '%s')",
				           PROFILE_HEADER);
			header = true;
			continue;
		}
		if (!len || line[0] == '#')
			continue;
		char *f[10];
		int n = split_tabs(line, f, 10);
		double x, y;
		if (strcmp(f[0], "machine") == 0) {
			if (n < 2 || !f[1][0])
				return bad(err, errlen, path, lineno, "a machine line names the GPU");
			*machine = arena_strdup(a, f[1]);
		} else if (strcmp(f[0], "kernel") == 0) {
			if (n < 3 || !seconds(f[2], &x))
				return bad(err, errlen, path, lineno, "expected 'kernel<TAB>SIGNATURE<TAB>SECONDS...' with "
				           "seconds above 0 and at most %g", PROFILE_MAX_SECONDS);
			ProfileSig *sig = profile_sig_find(sigs, f[1]);
			if (sig)
				for (int i = 0; i < sigs->n; i++)
					if (sigs->v[i] == sig)
						sig_time[i] = x;
		} else if (strcmp(f[0], "move") == 0) {
			int dir = n < 5 ? -1 : strcmp(f[1], "fast_to_slow") == 0 ? DIR_TO_SLOW
			                     : strcmp(f[1], "slow_to_fast") == 0 ? DIR_TO_FAST
			                     : strcmp(f[1], "both") == 0 ? NDIR : -1;
			bool async = n >= 5 && strcmp(f[2], "async") == 0;
			if (dir < 0 || (!async && strcmp(f[2], "sync") != 0) || !positive(f[3], &x) || !seconds(f[4], &y))
				return bad(err, errlen, path, lineno, "expected 'move<TAB>fast_to_slow|slow_to_fast|both<TAB>"
				           "sync|async<TAB>BYTES<TAB>SECONDS' with seconds above 0 and at most %g",
				           PROFILE_MAX_SECONDS);
			if (dir < NDIR)
				vec_push(a, &d->moves[dir][async], ((MovePoint){x, y}));
		} else if (strcmp(f[0], "algo") == 0) {
			char *end = NULL;
			long number = n >= 7 ? strtol(f[6], &end, 10) : -1;
			if (n < 7 || !seconds(f[4], &x) || !end || *end || number < 0 || number > 64 ||
			    (strcmp(f[2], "fwd") && strcmp(f[2], "bwd_data") && strcmp(f[2], "bwd_filter")))
				return bad(err, errlen, path, lineno, "expected 'algo<TAB>SIGNATURE<TAB>fwd|bwd_data|bwd_filter"
				           "<TAB>NAME<TAB>SECONDS<TAB>WORKSPACE<TAB>NUMBER'");
			errno = 0;
			long long wsb = strtoll(f[5], &end, 10);
			if (*end || errno || wsb < 0 || wsb > PROFILE_MAX_SCRATCH)
				return bad(err, errlen, path, lineno, "the workspace '%s' is not a byte count (at most 2^50)", f[5]);
			/* cuDNN's nondeterministic algorithms (they add with atomics) are offered to the
			   placement only when asked: by default a run gives the same bits every time */
			bool nondeterministic = (strcmp(f[2], "bwd_data") == 0 && number == 0) ||
			                        (strcmp(f[2], "bwd_filter") == 0 && (number == 0 || number == 3));
			ProfileSig *sig = nondeterministic && !allow_nondet ? NULL : profile_sig_find(sigs, f[1]);
			for (int i = 0; sig && i < sigs->n; i++)
				if (sigs->v[i] == sig)
					vec_push(a, &sig_algos[i],
					         ((KernelAlgo){(int)number, arena_strdup(a, f[3]), x, wsb, nondeterministic}));
		} else {
			return bad(err, errlen, path, lineno, "unknown line kind '%s' (machine, kernel, algo or move)", f[0]);
		}
	}
	if (!header)
		return bad(err, errlen, path, 1, "empty file: not a GPU profile");
	return true;
}

/* A GPU profile holds a line per kernel signature and algorithm: megabytes; anything beyond 1 GiB is not one. */
enum { GPU_PROFILE_MAX_BYTES = 1 << 30 };

CostModel *costmodel_gpu_profile(const char *path, bool nondeterministic, const Graph *g, const Schedule *s,
                                 Arena *a, char *err, size_t errlen)
{
	const char *kind;
	char *text = read_regular_file(path, GPU_PROFILE_MAX_BYTES, NULL, &kind);
	if (!text) {
		char why[128];
		snprintf(err, errlen, "cannot read the GPU profile %s: %s", path,
		         read_failure(kind, errno, "larger than a GPU profile can be (1 GiB)", why, sizeof why));
		return NULL;
	}
	ProfileSigs *sigs = profile_signatures(g, s, a);
	double *sig_time = arena_array(a, (size_t)sigs->n + 1, sizeof(double));
	AlgoVec *sig_algos = arena_array(a, (size_t)sigs->n + 1, sizeof(AlgoVec));
	GpuData *d = arena_alloc(a, sizeof *d);
	const char *machine = "an unnamed GPU";
	bool ok = parse(path, text, nondeterministic, sigs, sig_time, sig_algos, d, &machine, a, err, errlen);
	free(text);
	if (!ok)
		return NULL;
	int missing = 0, first = -1;
	for (int i = 0; i < sigs->n; i++)
		if (!(sig_time[i] > 0) && missing++ == 0)
			first = i;
	if (missing) {
		snprintf(err, errlen,
		         "%s lacks %d of the %d kernels of %s (the first: %s): export this model's kernels with "
		         "`autotmc profile --backend gpu --export` and profile them (docs/gpu.md)",
		         path, missing, sigs->n, g->model, sigs->v[first]->text);
		return NULL;
	}
	static const char *const dirs[] = {"fast_to_slow", "slow_to_fast"};
	for (int dir = 0; dir < NDIR; dir++)
		for (int async = 0; async < 2; async++) {
			if (d->moves[dir][async].n == 0) {
				snprintf(err, errlen, "%s has no %s %s move times", path, async ? "async" : "sync", dirs[dir]);
				return NULL;
			}
			qsort(d->moves[dir][async].v, (size_t)d->moves[dir][async].n, sizeof(MovePoint), cmp_point);
		}
	int nalgos = 0;
	for (int i = 0; i < sigs->n; i++) {
		nalgos += sig_algos[i].n;
		if (sig_algos[i].n > 1)
			qsort(sig_algos[i].v, (size_t)sig_algos[i].n, sizeof(KernelAlgo), cmp_algo);
	}
	d->fast = arena_array(a, (size_t)g->nodes.n + 1, sizeof(double));
	d->algos = arena_array(a, (size_t)g->nodes.n + 1, sizeof(AlgoVec));
	for (int i = 0; i < g->nodes.n; i++) {
		int k = sigs->of_node[g->nodes.v[i]->id];
		if (k >= 0) {
			d->fast[g->nodes.v[i]->id] = sig_time[k];
			d->algos[g->nodes.v[i]->id] = sig_algos[k];
		}
	}
	CostModel *cm = arena_alloc(a, sizeof *cm);
	cm->source = arena_printf(a, "GPU profile %s (%s)%s", path, machine,
	                          nondeterministic ? ", nondeterministic algorithms offered" : "");
	cm->modeled = false;
	cm->kernel_time = gpu_kernel_time;
	cm->move_time = gpu_move_time;
	cm->algos = nalgos ? gpu_algos : NULL;
	cm->data = d;
	return cm;
}
