/*
 * ranks_link.c - the link between ranks on this machine, measured
 * (costmodel.h's ranks_link_measure; docs/distributed.md).
 *
 * The first program for N ranks on a machine runs autotm-ranks-probe (the
 * exchange the runtime makes, timed at four sizes and fitted) under
 * mpirun with N ranks, and keeps its "BANDWIDTH LATENCY" in the cache
 * directory (ranks-link-N) for the programs after it.
 */
#include "costmodel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"
#include "profile.h"
#include "util.h"

/* $XDG_CACHE_HOME/autotm (or ~/.cache/autotm), or NULL. */
static const char *cache_root(Arena *a)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	const char *root = xdg && xdg[0] ? xdg : home && home[0] ? arena_printf(a, "%s/.cache", home) : NULL;
	return root ? arena_printf(a, "%s/autotm", root) : NULL;
}

/* "BANDWIDTH LATENCY" of a positive bandwidth and a latency from 0 to 1 s. */
static bool parse_link(const char *s, double *bw, double *lat)
{
	return s && sscanf(s, "%lf %lf", bw, lat) == 2 && *bw >= 1e6 && *bw <= 1e15 && *lat >= 0 && *lat <= 1;
}

void ranks_mpirun_env(void)
{
#if defined(__SANITIZE_ADDRESS__)
	/* a sanitizer build's ranks: Open MPI's own allocations, left at MPI_Finalize, are not leaks of ours */
	const char *old = getenv("ASAN_OPTIONS");
	char opts[1024];
	snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", old ? old : "", old && old[0] ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
#endif
}

bool ranks_link_measure(int ranks, const char *mpirun, double *bw, double *lat, Arena *a, char *err, size_t errlen)
{
	const char *root = cache_root(a), *file = root ? arena_printf(a, "%s/ranks-link-%d", root, ranks) : NULL;
	char *kept = file ? read_file(file, NULL) : NULL;
	bool ok = parse_link(kept, bw, lat);
	free(kept);
	if (ok)
		return true;
	const char *dir = exe_dir(), *probe = dir ? arena_printf(a, "%s/autotm-ranks-probe", dir) : NULL;
	if (!probe || access(probe, X_OK) != 0 || strchr(probe, '\'')) {
		snprintf(err, errlen, "autotm-ranks-probe is not beside autotmc");
		return false;
	}
	const char *cmd = arena_printf(a, "'%s' -np %d --oversubscribe --bind-to none%s '%s' 2>&1", mpirun, ranks,
	                               geteuid() == 0 ? " --allow-run-as-root" : "", probe);
	ranks_mpirun_env();
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
	if (file) { /* kept for the next program; a failure to keep it costs only a measurement */
		char werr[512];
		const char *text = arena_printf(a, "%.6g %.6g\n", *bw, *lat);
		if (pdb_make_parent(file, werr, sizeof werr))
			outfile_write(file, text, strlen(text), werr, sizeof werr);
	}
	return true;
}
