/*
 * ticker.h - a status line for long work whose length is a time budget
 * (a placement's solve, up to --solver-time per solve).
 *
 * On a terminal, a thread redraws one line of standard error twice a
 * second: what is being done, the seconds spent against the budget as a
 * bar, and the latest note (which start, how many neighbourhoods, the
 * best step so far). Nothing is drawn when standard error is not a
 * terminal (logs, pipes, CI) or AUTOTM_NO_PROGRESS is set. The line is
 * cleared at the end, so that what the command prints after it starts on
 * a clean line.
 *
 * Notes may be made from the process that began the ticker only, never
 * from a child it forks (its copy of the lock may be held).
 */
#ifndef AUTOTM_TICKER_H
#define AUTOTM_TICKER_H

#include <stdbool.h>

/* Begin a status line "what" with a budget of `budget` seconds; false (and nothing drawn) off a terminal. */
bool ticker_begin(const char *what, double budget);

/* The note shown after the bar; printf's format. Nothing without a ticker. */
void ticker_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Stop the ticker and clear its line. */
void ticker_end(void);

/* The line as it would be drawn after `elapsed` seconds, at most width - 1 characters, into buf (for tests). */
void ticker_format(char *buf, int width, const char *what, double elapsed, double budget, const char *note);

#endif
