/*
 * diag.h - source files, locations and diagnostics.
 *
 * Every error in a user's model is printed as
 *
 *     file:line:col: error: message
 *       12 |     conv(3x3, 64 => 128)
 *          |     ^~~~~~~~~~~~~~~~~~~~
 *
 * optionally followed by notes that point at related places (the definition
 * of a called layer, an unclosed brace). The compiler stops at the first
 * error: error_at() prints and then unwinds to the handler installed with
 * DIAG_TRY, so callers never see a half-built result. The arenas hold all
 * memory, so unwinding leaks nothing that outlives them.
 */
#ifndef AUTOTM_DIAG_H
#define AUTOTM_DIAG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdnoreturn.h>

/* A loaded source file. */
typedef struct SrcFile {
	const char *name; /* as shown in diagnostics (the path as given) */
	const char *path; /* path used to open it */
	const char *dir;  /* directory part of path, for relative imports */
	const char *text; /* contents, NUL-terminated */
	size_t len;       /* bytes in text, without the NUL */
} SrcFile;

/*
 * A span of source text. Field names follow Bison's YYLTYPE so the parser
 * can use SrcLoc directly as its location type. Lines and columns are
 * 1-based; last_column is inclusive.
 */
typedef struct SrcLoc {
	const SrcFile *file;
	int first_line, first_column;
	int last_line, last_column;
} SrcLoc;

/* Where diagnostics go (stderr unless changed, e.g. by the fuzzer). */
void diag_set_stream(FILE *f);

/* Print a diagnostic of the given severity ("error", "note", "warning"). */
void diag_print(const char *severity, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_vprint(const char *severity, SrcLoc loc, const char *fmt, va_list ap);

/* Count of errors printed so far. */
int diag_error_count(void);

/*
 * Stopping at the first error. Handlers nest; error_at() unwinds to the
 * innermost one, which is popped by the unwinding:
 *
 *     DiagHandler h;
 *     diag_push(&h);
 *     if (setjmp(h.jb)) { ...the error has been printed... }
 *     else { ...work...; diag_pop(&h); }
 */
typedef struct DiagHandler {
	jmp_buf jb;
	struct DiagHandler *prev;
} DiagHandler;

void diag_push(DiagHandler *h);
void diag_pop(DiagHandler *h);

/* Print an error (and unwind to the innermost handler). */
noreturn void error_at(SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print a note; used between diag_print("error", ...) and diag_abort(). */
void note_at(SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print an error that has no source location ("autotmc: error: ..."). */
void error_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Unwind to the innermost handler after an error has been printed. */
noreturn void diag_abort(void);

/* The text of line `line` of f (without newline) and its length. */
const char *srcfile_line(const SrcFile *f, int line, int *len);

#endif
