/*
 * format.h - formatting shared by the compiler and the runtime.
 */
#ifndef AUTOTM_FORMAT_H
#define AUTOTM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* A byte count as "1.50 GiB" (or "512 B") into buf; returns buf. */
const char *fmt_bytes(int64_t bytes, char *buf, size_t size);

/* A shape as "[2, 3]" into buf, with `lead` for the first size when given ("[N, 3]"); returns buf. */
const char *fmt_shape(int ndim, const int64_t *shape, const char *lead, char *buf, size_t size);

/* A message into err (printf's format); returns -1, what the readers' functions return on failure. */
int fmt_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What a file of this st_mode is, for messages: "a directory", "a FIFO", ... */
const char *fmt_file_kind(unsigned mode);

#endif
