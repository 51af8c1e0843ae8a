/*
 * bf16.h - bfloat16: the top 16 bits of a float32 (8 exponent bits, 7
 * fraction bits). A float32 is rounded to the nearest bfloat16, ties to
 * even, as PyTorch's and oneDNN's conversions round; a NaN stays a NaN
 * (quiet), infinities and signed zeros stay what they are.
 */
#ifndef AUTOTM_BF16_H
#define AUTOTM_BF16_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The same conversions on the host and in CUDA kernels (runtime/cuda/elementwise.cu). */
#ifdef __CUDACC__
#define BF16_FN __host__ __device__ static inline
#else
#define BF16_FN static inline
#endif

/* The bfloat16 bits nearest to f (ties to even). */
BF16_FN uint16_t bf16_from_f32(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	uint32_t nan = (u >> 16) | 0x40u;                /* NaN: keep the sign, make it quiet */
	uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded); /* a select: loops vectorise */
}

/* The float32 a bfloat16 stands for (exact). */
BF16_FN float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f rounded to the nearest bfloat16, as a float32. */
BF16_FN float bf16_round(float f)
{
	return bf16_to_f32(bf16_from_f32(f));
}

#ifdef __CUDACC__
#define BF16_LDST __host__ __device__ static inline
#else
#define BF16_LDST static inline __attribute__((always_inline))
#endif

/*
 * Element i of an array of float32, or of bfloat16 where bf16, and a store
 * to one (rounding to bfloat16 there): for kernels that take either type.
 * Always inlined, so that with bf16 a constant each loop is specialised
 * and vectorises.
 */
BF16_LDST float bf16_or_f32_ld(const void *p, int64_t i, bool bf16)
{
	return bf16 ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

BF16_LDST void bf16_or_f32_st(void *p, int64_t i, float v, bool bf16)
{
	if (bf16)
		((uint16_t *)p)[i] = bf16_from_f32(v);
	else
		((float *)p)[i] = v;
}

#endif
