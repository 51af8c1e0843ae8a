/*
 * fuzz_onnx.c - libFuzzer target for autotmc import (compiler/import/):
 * the ONNX reader, the structure recovery and the .net text it writes,
 * which is elaborated to match the weights.
 *
 * Each input is an ONNX file. It is imported into a .net file and its
 * weights in a temporary directory, or refused with a message: a crash,
 * a hang or a sanitizer report is a bug, and so is a refusal without a
 * message.
 *
 *   make fuzz FUZZ_TARGET=onnx   (seeds: fuzz/corpus/seeds-onnx, PyTorch exports)
 */
#include "fuzz_file.h" /* first: it asks for memfd_create */
#include <string.h>

#include "import.h"

static char dir[64], net[96], weights[96];

/* The temporary directory and what it holds, gone at exit. */
static void clean(void)
{
	unlink(net);
	unlink(weights);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/fuzz-onnx.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(clean);
		snprintf(net, sizeof net, "%s/m.net", dir);
		snprintf(weights, sizeof weights, "%s/m.safetensors", dir);
	}
	char err[4096] = "";
	ImportStats st;
	if (onnx_import(fuzz_file(0, data, size), net, "m.net", weights, &st, err, sizeof err) != 0 && !err[0])
		abort(); /* refused without a message */
	return 0;
}
