/*
 * util.c - checked allocation and failure reporting for the front end and
 * the compiler.
 */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
