/*
 * format.h - formatting shared by the compiler and the runtime.
 */
#ifndef AUTOTM_FORMAT_H
#define AUTOTM_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* A byte count as "1.50 GiB" (or "512 B") into buf; returns buf. */
const char *fmt_bytes(int64_t bytes, char *buf, size_t size);

/* What a file of this st_mode is, for messages: "a directory", "a FIFO", ... */
const char *fmt_file_kind(unsigned mode);

#endif
