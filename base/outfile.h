/*
 * outfile.h - writing an output file the way its user expects, for the
 * compiler and the runtime alike.
 *
 * Every file autotmc or a generated program writes (weights, results
 * records, sweep results, plots, traces, programs) goes through here:
 *
 *   - a new file, or an existing regular file, is replaced atomically: the
 *     bytes go to a temporary file beside it, are synced, and the
 *     temporary file is renamed over it; an existing file keeps its mode;
 *   - a symbolic link is followed: its target is replaced as above and the
 *     link stays;
 *   - anything else that exists (a device such as /dev/null, a FIFO, a
 *     terminal) is written straight through, never replaced;
 *   - a directory, or a path whose directory is missing or not writable,
 *     is refused.
 *
 * outfile_check() says, before any work, whether a path can be written,
 * so that a command never trains for an hour and then loses its result.
 */
#ifndef AUTOTM_OUTFILE_H
#define AUTOTM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Whether path can be written as above; false with the reason in err ("PATH: reason"). */
bool outfile_check(const char *path, char *err, size_t errlen);

/* An output file being written: open, write to f, then commit or abort. */
typedef struct OutFile {
	FILE *f;           /* write here */
	char *path;        /* the destination (a link's target, resolved) */
	char *tmp;         /* the temporary file, NULL when writing straight through */
	int mode;          /* the mode the result gets (an existing file's, or new) */
} OutFile;

/* Start writing path; false with err. A new file gets mode 0666 less the umask. */
bool outfile_open(OutFile *o, const char *path, char *err, size_t errlen);
/* The same; a new file gets new_mode less the umask (0777: a program). */
bool outfile_open_mode(OutFile *o, const char *path, int new_mode, char *err, size_t errlen);
/* Finish: flush, sync and rename into place; false with err (the destination is then untouched). */
bool outfile_commit(OutFile *o, char *err, size_t errlen);
/* Give up: remove the temporary file; the destination is untouched. */
void outfile_abort(OutFile *o);

/* The whole of data into path: open, write, commit. */
bool outfile_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/*
 * Whether two paths name one file: the same regular file (device and
 * inode) where both exist, the same destination once links and the
 * directory are resolved where neither does. Devices and FIFOs are never
 * the same file (they are written straight through).
 */
bool outfile_same(const char *a, const char *b);

/* A file a command reads or writes, named by its option. */
typedef struct FileUse {
	const char *flag;        /* the option, for messages ("--results") */
	const char *path;        /* the file; NULL when the option is not given */
	bool writes;             /* an output (else an input) */
	const char *may_replace; /* an output: the flag of an input it may replace (--checkpoint: --resume) */
} FileUse;

/*
 * Whether two of the n uses name one file where at least one of them is
 * written (an output that overwrites another, or an input the run still
 * reads): true with the message in err.
 */
bool outfile_clash(const FileUse *u, int n, char *err, size_t errlen);

#endif
