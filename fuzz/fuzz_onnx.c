/*
 * fuzz_onnx.c - libFuzzer target for autotmc import (compiler/import/):
 * the ONNX reader, the structure recovery and the .net text it writes,
 * which is elaborated to match the weights.
 *
 * Each input is an ONNX file. It is imported into a .net file and its
 * weights (written to /dev/null), or refused with a message: a crash,
 * a hang or a sanitizer report is a bug, and so is a refusal without a
 * message.
 *
 *   make fuzz FUZZ_TARGET=onnx   (seeds: fuzz/corpus/seeds-onnx, PyTorch exports)
 */
#include "fuzz_file.h" /* first: it asks for memfd_create */
#include <string.h>

#include "import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[4096] = "";
	ImportStats st;
	/* the outputs to /dev/null: written straight through (base/outfile.h), as to any device */
	if (onnx_import(fuzz_file(0, data, size), "/dev/null", "m.net", "/dev/null", &st, err, sizeof err) != 0 && !err[0])
		abort(); /* refused without a message */
	return 0;
}
