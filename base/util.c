/*
 * util.c - checked allocation and failure reporting for the front end and
 * the compiler.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "util.h"
#include "format.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ice_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "autotmc: internal compiler error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nautotmc: please report this bug with the input that caused it\n", stderr);
	abort();
}

void fatal_sys(const char *fmt, ...)
{
	va_list ap;
	fputs("autotmc: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		fatal_sys("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		fatal_sys("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		fatal_sys("out of memory allocating %zu bytes", n);
	return q;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

bool write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (n + 1 < cap)
			break;
		cap *= 2;
		buf = xrealloc(buf, cap);
	}
	int err = ferror(f) ? errno : 0;
	fclose(f);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *read_regular_file(const char *path, size_t max, size_t *len, const char **not_regular)
{
	*not_regular = NULL;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		*not_regular = fmt_file_kind(st.st_mode);
		return NULL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		errno = EFBIG;
		return NULL;
	}
	/* The size is a hint: the file may grow, and /proc files say 0. */
	size_t cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n == cap - 1) {
			if (n > max)
				break;
			cap = cap > max / 2 ? max + 2 : 2 * cap;
			buf = xrealloc(buf, cap);
		}
		ssize_t got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int err = errno;
			free(buf);
			close(fd);
			errno = err;
			return NULL;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (n > max) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

const char *exe_dir(void)
{
	static char dir[4096];
	static int done;
	if (!done) {
		done = 1;
		ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
		char *slash = n > 0 ? (dir[n] = '\0', strrchr(dir, '/')) : NULL;
		if (slash)
			*slash = '\0';
		else
			dir[0] = '\0';
	}
	return dir[0] ? dir : NULL;
}

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int online_cores(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

const char *read_failure(const char *not_regular, int err, const char *too_large, char *buf, size_t size)
{
	if (not_regular)
		snprintf(buf, size, "it is %s, not a regular file", not_regular);
	else
		snprintf(buf, size, "%s", err == EFBIG ? too_large : strerror(err));
	return buf;
}

/* The edit distance of a and b (neighbours swapped count 1), or INT_MAX past 64 characters. */
static int edit_distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	size_t la = strlen(a), lb = strlen(b);
	if (la > MAX || lb > MAX)
		return INT_MAX;
	int d[MAX + 1][MAX + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

void near_consider(NearName *n, const char *cand)
{
	if (!cand || !strcmp(cand, n->name))
		return;
	size_t la = strlen(n->name), lb = strlen(cand), longer = la > lb ? la : lb, shorter = la < lb ? la : lb;
	int score = edit_distance(n->name, cand), most = longer / 3 > 1 ? (int)(longer / 3) : 1;
	if (score > most && shorter >= 3 && !strncmp(n->name, cand, shorter))
		score = most; /* one starts with the other */
	if (score <= most && (!n->best || score < n->score)) {
		n->best = cand;
		n->score = score;
	}
}

const char *nearest_name(const char *name, const char *const *cands, size_t ncands)
{
	NearName n = {.name = name};
	for (size_t i = 0; i < ncands; i++)
		near_consider(&n, cands[i]);
	return n.best;
}

