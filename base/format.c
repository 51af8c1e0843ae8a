/*
 * format.c - formatting shared by the compiler and the runtime.
 */
#include "format.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

const char *fmt_bytes(int64_t bytes, char *buf, size_t size)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof unit / sizeof unit[0]) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lld B", (long long)bytes);
	else
		snprintf(buf, size, "%.2f %s", v, unit[u]);
	return buf;
}

const char *fmt_file_kind(unsigned mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISREG(mode))
		return "a regular file";
	return "not a regular file";
}

const char *fmt_shape(int ndim, const int64_t *shape, const char *lead, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < ndim && n < size; i++) {
		if (i == 0 && lead)
			n += (size_t)snprintf(buf + n, size - n, "%s", lead);
		else
			n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	}
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}

int fmt_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
