/*
 * cache.c - the program cache (cache.h).
 */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "tempfiles.h"
#include "util.h"

/* FNV-1a, 64 bits */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

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

/* "SIZE HASH" of the file at path; false if it cannot be read. */
static bool file_sum(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	unsigned char buf[1 << 16];
	uint64_t h = FNV_OFFSET, total = 0;
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		h = hash_bytes(h, buf, n);
		total += n;
	}
	bool ok = !ferror(f);
	fclose(f);
	snprintf(out, size, "%" PRIu64 " %016" PRIx64 "\n", total, h);
	return ok;
}

const char *cache_program_path(Arena *a, const char *model, const char *ir, const char *runtime)
{
	const char *dir = cache_dir(a);
	if (!dir)
		return NULL;
	temp_sweep(dir, NULL); /* what killed builds left */
	uint64_t h = hash_bytes(FNV_OFFSET, (const unsigned char *)ir, strlen(ir));
	char sum[64];
	if (runtime && file_sum(runtime, sum, sizeof sum)) /* a program of another runtime is another program */
		h = hash_bytes(h, (const unsigned char *)sum, strlen(sum));
	/* the model's name, shortened: the hash tells programs apart, and every name must fit the file system */
	return arena_printf(a, "%s/%.*s-%016" PRIx64, dir, CACHE_NAME_CHARS, model, h);
}

bool cache_check(Arena *a, char *err, size_t errlen)
{
	const char *dir = cache_dir(a);
	if (!dir) {
		snprintf(err, errlen, "the program cache cannot be made (above)");
		return false;
	}
	/* the longest name written there: NAME-HASH.tmpPID.sum */
	size_t longest = CACHE_NAME_CHARS + sizeof "-0123456789abcdef.tmp2147483647.sum";
	long name_max = pathconf(dir, _PC_NAME_MAX);
	if (strlen(dir) + 1 + longest > PATH_MAX || (name_max > 0 && longest > (size_t)name_max)) {
		snprintf(err, errlen, "the program cache %s is too deep a directory for its programs' names (set "
		         "XDG_CACHE_HOME to a shorter path)", dir);
		return false;
	}
	return true;
}

bool cache_valid(Arena *a, const char *path)
{
	if (access(path, X_OK) != 0)
		return false;
	char *recorded = read_file(arena_printf(a, "%s.sum", path), NULL);
	char actual[64];
	bool ok = recorded && file_sum(path, actual, sizeof actual) && strcmp(recorded, actual) == 0;
	free(recorded);
	return ok;
}

/* Flush path's data (or, for a directory, its entries) to the disk. */
static bool sync_path(const char *path, bool dir)
{
	int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
	if (fd < 0)
		return false;
	bool ok = fsync(fd) == 0;
	close(fd);
	return ok;
}

bool cache_install(Arena *a, const char *tmp, const char *path, char *err, size_t errlen)
{
	char sum[64];
	const char *sum_path = arena_printf(a, "%s.sum", path), *sum_tmp = arena_printf(a, "%s.sum", tmp);
	FILE *f = NULL;
	bool ok = file_sum(tmp, sum, sizeof sum) && sync_path(tmp, false) && (f = fopen(sum_tmp, "w")) &&
	          fputs(sum, f) >= 0;
	if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0))
		ok = false;
	if (f && fclose(f) != 0)
		ok = false;
	/* the program first: a checksum never names a program that is not there yet */
	ok = ok && rename(tmp, path) == 0 && rename(sum_tmp, sum_path) == 0;
	if (!ok)
		snprintf(err, errlen, "cannot install %s in the program cache: %s", path, strerror(errno));
	char *dir = arena_strdup(a, path);
	sync_path(dirname(dir), true);
	unlink(tmp);
	unlink(sum_tmp);
	return ok;
}
