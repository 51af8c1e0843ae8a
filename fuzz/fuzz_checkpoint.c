/*
 * fuzz_checkpoint.c - libFuzzer target for a checkpoint's header: the
 * safetensors reader and the run's position in its __metadata__
 * (runtime/checkpoint.c, rt_checkpoint_position: what --resume reads).
 *
 * Each input is a checkpoint file. When the reader accepts it, its
 * position is read for the model "small": a step and a seed, each within
 * its range, or a refusal with a message. A crash, a sanitizer report, or
 * a position out of range is a bug.
 *
 *   make fuzz FUZZ_TARGET=checkpoint   (seeds: fuzz/corpus/seeds-checkpoint)
 */
#include "fuzz_file.h" /* first: it asks for memfd_create */
#include "rt_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TioFile *f;
	char err[1024] = "";
	if (tio_safetensors_open(fuzz_file(0, data, size), &f, err, sizeof err))
		return 0;
	uint64_t step = UINT64_MAX, seed = UINT64_MAX;
	if (rt_checkpoint_position(f, "small", &step, &seed, err, sizeof err) == 0) {
		if (step > RT_MAX_STEPS || seed > 0x7fffffff)
			abort(); /* a position no run can have */
	} else if (!err[0]) {
		abort(); /* refused without a message */
	}
	tio_close(f);
	return 0;
}
