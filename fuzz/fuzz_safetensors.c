/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader
 * (runtime/tensorio.c: --weights, --resume, interpret, eval).
 *
 * Each input is a safetensors file. It is opened, and when the reader
 * accepts it, every element of every tensor is read, every tensor found
 * by its name and the metadata looked up: whatever the header claims,
 * nothing may be read outside the file. A crash or a sanitizer report is
 * a bug; every input must be read or refused with a message.
 *
 *   make fuzz FUZZ_TARGET=safetensors   (seeds: fuzz/corpus/seeds-safetensors)
 */
#include "fuzz_file.h" /* first: it asks for memfd_create */
#include <string.h>

#include "autotm/tensorio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TioFile *f;
	char err[1024] = "";
	if (tio_safetensors_open(fuzz_file(0, data, size), &f, err, sizeof err)) {
		if (!err[0])
			abort(); /* refused without a message */
		return 0;
	}
	volatile double sum = 0;
	for (int i = 0; i < f->n; i++) {
		const TioTensor *t = &f->t[i];
		if (tio_find(f, t->name) != t)
			abort(); /* names are unique */
		for (int64_t k = 0; k < t->nelems; k++)
			sum += tio_f64_at(t, k);
	}
	for (int i = 0; i < f->nmeta; i++)
		if (!tio_meta(f, f->meta[i].key))
			abort();
	tio_close(f);
	return 0;
}
