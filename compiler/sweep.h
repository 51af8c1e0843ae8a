/*
 * sweep.h - autotmc sweep (sweep.c): every optimizer at every ratio (and
 * thread count), built, run and collected into one results file.
 */
#ifndef AUTOTM_SWEEP_H
#define AUTOTM_SWEEP_H

#include "arena.h"
#include "cli.h"

int cmd_sweep(const Settings *s, Arena *a);

#endif
