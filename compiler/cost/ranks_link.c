/*
 * ranks_link.c - the link between data-parallel ranks, for the cost model
 * (costmodel.h's costmodel_with_ranks; docs/distributed.md), and how
 * autotmc starts ranks under mpirun (ranks_mpirun).
 *
 * The link is --ranks-bandwidth, else the --hw file's [ranks] section,
 * else this machine's, measured: the first program for N ranks runs
 * autotm-ranks-probe (the exchange the runtime makes, timed at four sizes
 * and fitted) under mpirun with N ranks, and its "BANDWIDTH LATENCY" is
 * kept beside the profile database (ranks-link-N) for the programs after
 * it. Where the probe cannot run, the figures of the test machine's
 * shared memory inside a training step, with a warning.
 */
#include "costmodel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "hwmodel.h"
#include "outfile.h"
#include "profile.h"
#include "util.h"

/* Open MPI's shared memory inside a training step on the 2-core test VM: 64 MiB averaged over 2 ranks in 88 ms. */
#define FALLBACK_BANDWIDTH 0.75e9
#define FALLBACK_LATENCY 20e-6

const char **ranks_mpirun(int ranks, int *n, Arena *a)
{
	const char **argv = arena_array(a, 8, sizeof(char *));
	int k = 0;
	argv[k++] = AUTOTM_MPIRUN;
	argv[k++] = "-np";
	argv[k++] = arena_printf(a, "%d", ranks);
	argv[k++] = "--oversubscribe"; /* more ranks than cores may share them */
	argv[k++] = "--bind-to";
	argv[k++] = "none";
	if (geteuid() == 0)
		argv[k++] = "--allow-run-as-root"; /* which Open MPI refuses unless told */
	*n = k;
#if defined(__SANITIZE_ADDRESS__)
	/* a sanitizer build's ranks: Open MPI's own allocations, left at MPI_Finalize, are not leaks of ours */
	const char *old = getenv("ASAN_OPTIONS");
	setenv("ASAN_OPTIONS", arena_printf(a, "%s%sdetect_leaks=0", old ? old : "", old && old[0] ? ":" : ""), 1);
#endif
	return argv;
}

/* "BANDWIDTH LATENCY" of a positive bandwidth and a latency from 0 to 1 s. */
static bool parse_link(const char *s, double *bw, double *lat)
{
	return s && sscanf(s, "%lf %lf", bw, lat) == 2 && *bw >= 1e6 && *bw <= 1e15 && *lat >= 0 && *lat <= 1;
}

/* The probe's command line: mpirun's arguments and the probe, each quoted, its errors with its output. */
static const char *probe_command(int ranks, const char *probe, Arena *a)
{
	int n;
	const char **argv = ranks_mpirun(ranks, &n, a), *cmd = "";
	for (int i = 0; i < n; i++)
		cmd = arena_printf(a, "%s'%s' ", cmd, argv[i]);
	return arena_printf(a, "%s'%s' 2>&1", cmd, probe);
}

/* This machine's link between `ranks` ranks, kept in `file` or measured into it. */
static bool measure(int ranks, const char *file, double *bw, double *lat, Arena *a, char *err, size_t errlen)
{
	char *kept = read_file(file, NULL);
	bool ok = parse_link(kept, bw, lat);
	free(kept);
	if (ok)
		return true;
	const char *dir = exe_dir(), *probe = dir ? arena_printf(a, "%s/autotm-ranks-probe", dir) : NULL;
	if (!probe || access(probe, X_OK) != 0 || strchr(probe, '\'')) {
		snprintf(err, errlen, "autotm-ranks-probe is not beside autotmc");
		return false;
	}
	const char *cmd = probe_command(ranks, probe, a);
	FILE *p = popen(cmd, "r");
	char line[512] = "";
	bool read = p && fgets(line, sizeof line, p) != NULL;
	int status = p ? pclose(p) : -1;
	if (!read || status != 0 || !parse_link(line, bw, lat)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(err, errlen, "measuring the link between %d ranks (%s) failed: %s", ranks, cmd,
		         line[0] ? line : p ? "no output" : strerror(errno));
		return false;
	}
	char werr[512]; /* kept for the next program; a failure to keep it costs only a measurement */
	const char *text = arena_printf(a, "%.6g %.6g\n", *bw, *lat);
	if (pdb_make_parent(file, werr, sizeof werr))
		outfile_write(file, text, strlen(text), werr, sizeof werr);
	return true;
}

CostModel *costmodel_with_ranks(CostModel *cm, const CostRequest *r, Arena *a, char *err, size_t errlen)
{
	double bw = FALLBACK_BANDWIDTH, latency = FALLBACK_LATENCY;
	HwModel hw = {0};
	const char *path = r->hw ? hw_find(r->hw, a, err, errlen) : NULL;
	if (r->hw && (!path || !hw_load(path, &hw, err, errlen)))
		return NULL;
	if (r->ranks_link) {
		if (!hw_bandwidth("--ranks-bandwidth", r->ranks_link, &bw, err, errlen))
			return NULL;
	} else if (hw.ranks_bw > 0) {
		bw = hw.ranks_bw;
		latency = hw.ranks_latency;
	} else if (r->target == TARGET_GPU) {
		snprintf(err, errlen, "--ranks %d on GPUs: give the link between them, --ranks-bandwidth BW or a --hw file "
		         "with a [ranks] section (hw/h200-pcie5.hw has one)", r->ranks);
		return NULL;
	} else if (!r->hw) {
		const char *db = r->db && r->db[0] ? r->db : profile_default_db(a), *slash = strrchr(db, '/');
		const char *file = arena_printf(a, "%.*s%sranks-link-%d", slash ? (int)(slash - db + 1) : 0, db,
		                                slash ? "" : "./", r->ranks);
		char why[1024];
		if (!measure(r->ranks, file, &bw, &latency, a, why, sizeof why))
			diag_print("warning", (SrcLoc){0}, "%s; the exchange's time assumes %.2f GB/s", why, bw / 1e9);
	}
	return costmodel_ranks(cm, r->ranks, bw, latency, a);
}
