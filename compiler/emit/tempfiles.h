/*
 * tempfiles.h - temporary files removed however the process ends
 * (tempfiles.c): on an error path by their maker, on SIGINT, SIGTERM and
 * SIGHUP by a handler, after SIGKILL by the next autotmc that sweeps their
 * directory.
 */
#ifndef AUTOTM_TEMPFILES_H
#define AUTOTM_TEMPFILES_H

#include <stdbool.h>

/* Remove path if a signal ends the process before temp_untrack (its first call installs the handlers). */
void temp_track(const char *path);
/* path was renamed or removed: forget it. */
void temp_untrack(const char *path);
/*
 * Remove from dir the temporary files of processes that are gone: named
 * PREFIX.PID.XXXXXX (prefix given, "autotm-link."), or NAME.tmpPID,
 * NAME.tmpPID.o and NAME.tmpPID.sum (prefix NULL: the program cache's).
 */
void temp_sweep(const char *dir, const char *prefix);

#endif
