/*
 * fuzz_parser.c - libFuzzer target for the .net front end.
 *
 * Each input is a main .net file held in memory; it is lexed, parsed and
 * elaborated into a graph (imports resolve against the standard library),
 * and a graph that elaborates is verified. Diagnostics go to /dev/null. A
 * crash, sanitizer report, hang or failed verification is a bug: every
 * input must either elaborate or be rejected with a diagnostic.
 *
 *   make fuzz FUZZ_TARGET=parser    (runs for FUZZ_SECONDS, default 600)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "elaborate.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		diag_set_stream(devnull);
	}
	static const char *dirs[1];
	dirs[0] = getenv("AUTOTM_STDLIB") ? getenv("AUTOTM_STDLIB") : "stdlib";
	Arena a = {0};
	ElabOptions opt = {.dirs = dirs, .ndirs = 1, .main_text = (const char *)data, .main_len = size};
	Graph *g = elaborate("fuzz.net", &opt, &a);
	if (g) {
		char err[512];
		if (!graph_verify(g, err, sizeof err))
			ICE("graph verification failed: %s", err);
	}
	arena_free(&a);
	return 0;
}
