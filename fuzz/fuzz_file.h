/*
 * fuzz_file.h - the fuzz targets of the file readers (fuzz_npy.c,
 * fuzz_safetensors.c, fuzz_checkpoint.c): an input as a file.
 *
 * The readers open files by path and map them, as they do in a run, so
 * each input is written to a memory file (memfd_create: no disk, no
 * clean-up) and read back through /proc/self/fd/N, which opens the same
 * regular file.
 */
#ifndef AUTOTM_FUZZ_FILE_H
#define AUTOTM_FUZZ_FILE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* libFuzzer's entry point, which each target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A memory file holding size bytes of data, by path; slot picks one of a few (each rewritten in place). */
static const char *fuzz_file(int slot, const void *data, size_t size)
{
	static int fd[4] = {-1, -1, -1, -1};
	static char path[4][64];
	if (fd[slot] < 0) {
		fd[slot] = memfd_create("fuzz", 0);
		if (fd[slot] < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path[slot], sizeof path[slot], "/proc/self/fd/%d", fd[slot]);
	}
	if (ftruncate(fd[slot], 0) != 0 || (size && pwrite(fd[slot], data, size, 0) != (ssize_t)size)) {
		perror("writing the fuzz input");
		abort();
	}
	return path[slot];
}

#endif
