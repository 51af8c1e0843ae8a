/*
 * plot.h - drawing with gnuplot: a child process fed a script on a pipe
 * (the compiler's schedule and sweep plots, a training run's loss).
 */
#ifndef AUTOTM_PLOT_H
#define AUTOTM_PLOT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "outfile.h"

typedef struct Plot {
	FILE *f;          /* the script: write gnuplot commands and inline data here */
	pid_t pid;        /* gnuplot */
	const char *path; /* the image it writes */
	const char *who;  /* the program, in messages */
	OutFile out;      /* the image, opened here: gnuplot writes it on its standard output */
} Plot;

/* Whether path names a plot gnuplot can write here: it ends in .png or .svg. */
bool plot_format_ok(const char *path);

/*
 * Start gnuplot writing path (.png or .svg, width x height pixels): the
 * terminal is set, and the image goes to the file opened here as
 * base/outfile.h writes files, so that the path never appears in the
 * script, whatever characters it holds. False after an error message on
 * stderr, `WHO: error: ...` (who: the program's name).
 */
bool plot_open(Plot *p, const char *path, int width, int height, const char *who);
/* End the script and wait for gnuplot; false after an error message if it failed. */
bool plot_close(Plot *p);

#endif
