/*
 * util.h - small helpers shared by lang/ and compiler/: checked allocation,
 * internal-error reporting and system-failure reporting.
 *
 * Three channels of failure, never mixed (see docs/):
 *   - errors in the user's model: diagnostics in lang/diag.h, exit 1;
 *   - internal bugs: ICE()/unreachable(), which print file:line and abort;
 *   - failures of the system (a file, an allocation): fatal_sys(), exit 1.
 */
#ifndef AUTOTM_UTIL_H
#define AUTOTM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#include "format.h"

#define ICE(...) ice_at(__FILE__, __LINE__, __VA_ARGS__)
#define unreachable() ice_at(__FILE__, __LINE__, "unreachable code reached")
#define countof(a) (sizeof(a) / sizeof((a)[0]))

noreturn void ice_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
noreturn void fatal_sys(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Seconds on the monotonic clock (for durations). */
double now_seconds(void);

/* The cores this process may run on (its affinity mask), at least 1. */
int online_cores(void);

/* Write all n bytes of p to the descriptor fd (again after EINTR); false on an error. */
bool write_all(int fd, const void *p, size_t n);

/* Read a whole file into a NUL-terminated buffer; NULL and errno on failure. */
char *read_file(const char *path, size_t *len);

/*
 * Read a source file: a regular file of at most max bytes, into a
 * NUL-terminated buffer. It is opened without blocking (a FIFO would wait
 * for a writer) and its type is taken from the open descriptor, so a file
 * swapped after a stat cannot block or feed an endless device. Returns NULL
 * on failure with *not_regular set to what the path is ("a directory", "a
 * FIFO", ...) when it is not a regular file, or else errno set: EFBIG when
 * it holds more than max bytes, or what open or read failed with.
 */
char *read_regular_file(const char *path, size_t max, size_t *len, const char **not_regular);
/*
 * Why read_regular_file failed, in words, into buf: "it is a FIFO, not a
 * regular file" (not_regular set), `too_large` (EFBIG), or err's message.
 */
const char *read_failure(const char *not_regular, int err, const char *too_large, char *buf, size_t size);

/* The directory of the running executable (for files installed beside it), or NULL. */
const char *exe_dir(void);

/*
 * "Did you mean": the candidate nearest to a misspelt name, offered one
 * at a time (near_consider) or as an array (nearest_name). Near is an
 * edit distance (insertions, deletions, substitutions, swaps of
 * neighbours) of at most a third of the longer name, at least 1, or one
 * name starting with the other, 3 characters or more ("padding", "pad");
 * the nearest wins, the first of equals. best is NULL if none is near.
 */
typedef struct NearName {
	const char *name; /* the misspelt name */
	const char *best; /* the nearest candidate so far, or NULL */
	int score;        /* its distance */
} NearName;
void near_consider(NearName *n, const char *cand);
const char *nearest_name(const char *name, const char *const *cands, size_t ncands);


#endif
