/*
 * autotm/random.h - the deterministic random numbers of autotmc.
 *
 * Shared, header-only, by the compiler's reference interpreter and the
 * runtime, so that weights, synthetic data and dropout masks are the same
 * bits whichever executes the model. Everything derives from splitmix64:
 *
 *   - a tensor's stream starts from rt_stream(seed, name), so a weight's
 *     initial values depend only on the seed and its name;
 *   - dropout decides each element from a hash of (stream, step, index),
 *     so the backward pass can recompute the forward pass's mask.
 */
#ifndef AUTOTM_RANDOM_H
#define AUTOTM_RANDOM_H

#include <math.h>
#include <stdint.h>

/* The mask of dropout is also computed in CUDA kernels (runtime/cuda/elementwise.cu). */
#ifdef __CUDACC__
#define RT_HOST_DEVICE __host__ __device__
#else
#define RT_HOST_DEVICE
#endif

/* splitmix64: advances *state and returns 64 well-mixed bits. */
static inline RT_HOST_DEVICE uint64_t rt_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A uniform double in [0, 1) with 53 random bits. */
static inline RT_HOST_DEVICE double rt_uniform01(uint64_t *state)
{
	return (double)(rt_splitmix64(state) >> 11) * 0x1.0p-53;
}

/* A standard normal sample (Box-Muller; uses two uniforms). */
static inline double rt_normal(uint64_t *state)
{
	double u1 = 1.0 - rt_uniform01(state); /* in (0, 1] */
	double u2 = rt_uniform01(state);
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The initial state of the stream of the tensor called `name`. */
static inline uint64_t rt_stream(uint64_t seed, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	uint64_t s = seed ^ h;
	return rt_splitmix64(&s);
}

/* How a tensor starts (the compiler chooses; weights.h says for which tensor). */
enum {
	RT_INIT_UNIFORM = 0, /* U(lo, hi) */
	RT_INIT_NORMAL = 1,  /* N(0, hi^2) */
	RT_INIT_CONST = 2,   /* every element = value */
	RT_INIT_ONEHOT = 3,  /* rows of `cols` elements, one random class per row */
	RT_INIT_IDS = 4,     /* integer ids drawn uniformly from [0, hi) */
};

/* A generator of a tensor's initial values, element by element in row-major order. */
typedef struct RtInit {
	int kind;        /* RT_INIT_* */
	double lo, hi;   /* RT_INIT_UNIFORM bounds; RT_INIT_NORMAL's deviation; RT_INIT_IDS's range */
	double value;    /* RT_INIT_CONST value */
	uint64_t state;  /* stream state, from rt_stream(seed, name) */
	int64_t cols;    /* RT_INIT_ONEHOT: classes per row */
	int64_t col;     /* position in the current row */
	int64_t cls;     /* the current row's class */
} RtInit;

/* The next initial value. */
static inline double rt_init_next(RtInit *s)
{
	switch (s->kind) {
	case RT_INIT_UNIFORM:
		return s->lo + (s->hi - s->lo) * rt_uniform01(&s->state);
	case RT_INIT_NORMAL:
		return s->hi * rt_normal(&s->state);
	case RT_INIT_IDS:
		return (double)(rt_splitmix64(&s->state) % (uint64_t)s->hi);
	case RT_INIT_ONEHOT: {
		if (s->col == 0)
			s->cls = (int64_t)(rt_splitmix64(&s->state) % (uint64_t)s->cols);
		double v = s->col == s->cls ? 1.0 : 0.0;
		s->col = s->col + 1 == s->cols ? 0 : s->col + 1;
		return v;
	}
	default:
		return s->value;
	}
}

/* Whether dropout keeps element i of stream `seed` at training step `step`. */
static inline RT_HOST_DEVICE int rt_dropout_keep(uint64_t seed, uint64_t step, uint64_t i, double p)
{
	uint64_t s = seed * 0xd1b54a32d192ed03ULL + step * 0x9e3779b97f4a7c15ULL + i;
	return rt_uniform01(&s) >= p;
}

#endif
