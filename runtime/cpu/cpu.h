/*
 * cpu/cpu.h - what the files of the CPU backend share: the functions
 * that cpu/backend.c puts in rt_cpu_backend (rt_internal.h says what each
 * does), and the one-thread copy that both the copy thread and the
 * reshape kernel use.
 *
 *   cpu/pool.c     memory: DRAM, memkind (pmem, DAX) and NUMA pools
 *   cpu/move.c     copies: blocking moves, the copy thread; host staging
 *   cpu/kernels.c  kernels: oneDNN primitives and plain C
 *   cpu/batchnorm.c   batch normalisation (plain C, float32 and bf16)
 *   cpu/xent.c     the losses and their gradients (plain C)
 */
#ifndef AUTOTM_CPU_H
#define AUTOTM_CPU_H

#include "../rt_internal.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

/* ---- memory (cpu/pool.c; store and load in cpu/move.c) ------------------- */

void cpu_pool_footprint(int64_t fast, int64_t slow, RtSlowKind kind, const char *dir, bool managed, RtFootprint *out);
void cpu_pool_open_fast(RtPool *p, int64_t bytes, int64_t limit);
void cpu_pool_open_managed(RtPool *p, int64_t bytes, int64_t limit);
void cpu_pool_open_slow(RtPool *p, int64_t bytes, RtSlowKind kind, const char *dir, int numa_node);
void cpu_pool_close(RtPool *p);
const char *cpu_pool_where(const RtPool *p, char *buf, size_t size);
void cpu_remove_temp_dirs(void);
void cpu_store(void *dst, const void *src, size_t bytes);
void cpu_load(void *dst, const void *src, size_t bytes);

/* ---- copies (cpu/move.c) -------------------------------------------------- */

/* Copy on the calling thread; non-temporal stores from CPU_NT_THRESHOLD bytes on. */
enum { CPU_NT_THRESHOLD = 1 << 20 };
void cpu_copy(void *dst, const void *src, size_t bytes);

void cpu_move(void *dst, const void *src, size_t bytes);
void *cpu_copier_open(void);
void cpu_copier_close(void *copier);
int32_t cpu_copy_submit(void *copier, void *dst, const void *src, size_t bytes);
void cpu_copy_wait(void *copier, int32_t handle);
void cpu_copy_drain(void *copier);
void cpu_copy_stats(void *copier, int64_t *count, int64_t *bytes);

/* ---- kernels (cpu/kernels.c) ---------------------------------------------- */

void cpu_prepare(int argc, char **argv);
int cpu_cores(void);
void *cpu_kernels_open(int threads, int64_t scratch_budget);
void cpu_kernels_close(void *state);
void *cpu_create(void *state, int32_t id, const int64_t *desc);
void cpu_launch(void *state, void *kernel, void *const *args, uint64_t step);
void cpu_destroy(void *state, void *kernel);
const char *cpu_impl_name(void *kernel);
int64_t cpu_scratch_bytes(void *state);
int64_t cpu_kernel_scratch(void *kernel);
void cpu_sync(void *state);

/*
 * A hot plain-C kernel built for AVX-512 and AVX2 besides the baseline,
 * the clone chosen when the program loads. Its OpenMP loop must be in the
 * function itself: OpenMP outlines a loop of an inlined helper once,
 * before cloning, and every clone would call the baseline body.
 */
#define CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* a b + c, rounded once (fused, where fma) or twice */
static inline __attribute__((always_inline)) float mul_add(float a, float b, float c, bool fma)
{
	return fma ? fmaf(a, b, c) : a * b + c;
}

/*
 * exp(x) for x <= 0 (and small positive x), as a polynomial the compiler
 * vectorises where glibc's expf is scalar. x below -87 gives exp(-87),
 * 1.6e-38, which no sum of a row with its maximum's exp(0) = 1 notices.
 * x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts), exp(r) by its
 * Taylor polynomial to r^7 / 7!, times 2^n made in the exponent bits.
 * With fused multiply-adds (fma: one instruction in the x86-64-v3 and v4
 * clones) within an ulp, without within 2.
 */
static inline __attribute__((always_inline)) float exp_poly(float x, bool fma)
{
	x = x < -87.0f ? -87.0f : x;
	const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
	float n = mul_add(x, 1.44269504088896341f, shift, fma) - shift;
	float r = mul_add(n, -0.693145751953125f, x, fma);
	r = mul_add(n, -1.42860682030941723e-6f, r, fma);
	float p = 1.98412698e-4f; /* 1/7!, then Horner's rule down to 1/0! */
	p = mul_add(r, p, 1.38888889e-3f, fma);
	p = mul_add(r, p, 8.33333333e-3f, fma);
	p = mul_add(r, p, 4.16666667e-2f, fma);
	p = mul_add(r, p, 1.66666667e-1f, fma);
	p = mul_add(r, p, 0.5f, fma);
	p = mul_add(r, p, 1.0f, fma);
	p = mul_add(r, p, 1.0f, fma);
	int32_t e = ((int32_t)n + 127) << 23;
	float scale;
	memcpy(&scale, &e, sizeof scale);
	return p * scale;
}

/* The losses' exponential (2 ulp). */
static inline __attribute__((always_inline)) float exp_le0(float x)
{
	return exp_poly(x, false);
}

/*
 * Add to s[c] each channel's sum of a channel-blocked [nb, C, inner]
 * (C/16 blocks of [inner, 16] a row), float32 or bf16: each row's sum of
 * the channel, in double, then the rows' in order, as the plain bias
 * gradients sum (cpu/kernels.c).
 */
void cpu_blocked_channel_sums(const void *x, int64_t nb, int64_t c, int64_t inner, bool bf16, double *s);

/* ---- batch normalisation (cpu/batchnorm.c): kernels of cpu/kernels.c ------ */

/* ICE unless the data arguments (x, y; x, dy, y, dx) are all float32 or all bf16, the rest float32. */
void cpu_batchnorm_check(int32_t id, const int64_t *desc);
void cpu_batchnorm(const int64_t *desc, void *const *args);
void cpu_batchnorm_bwd(const int64_t *desc, void *const *args);

/* ---- the losses (cpu/xent.c): kernels of cpu/kernels.c; rowloss: N doubles of the kernel's scratch ---- */

void cpu_xent(const int64_t *desc, void *const *args, double *rowloss);
void cpu_xent_bwd(const int64_t *desc, void *const *args);
void cpu_xent_ids(const int64_t *desc, void *const *args, double *rowloss);
void cpu_xent_ids_bwd(const int64_t *desc, void *const *args);
void cpu_xent_ids_grad(const int64_t *desc, void *const *args, double *rowloss);
void cpu_dense_xent(const int64_t *desc, void *const *args, double *rowloss, float *block, int64_t block_rows);
size_t cpu_dense_xent_scratch(const int64_t *desc, int64_t block_rows); /* its block of logits */
void cpu_xent_grad_block(void *z, const int32_t *ids, int64_t nr, int64_t k, int64_t rows, bool bf16,
                         double *rowloss);
double cpu_xent_mean(const double *rowloss, int64_t rows);
/* cpu/actbias.c: an activation's gradient and a bias gradient in one pass, oneDNN's eltwise a block of rows */
typedef struct CpuActBias CpuActBias;
CpuActBias *cpu_act_bias_create(dnnl_engine_t engine, const_dnnl_primitive_attr_t attr, const int64_t *desc,
                                dnnl_alg_kind_t alg, bool from_y);
size_t cpu_act_bias_scratch(const CpuActBias *ab); /* the primitives' scratchpad, then a double per column */
void cpu_act_bias_run(CpuActBias *ab, dnnl_stream_t stream, void *const *args, void *scratch);
void cpu_act_bias_destroy(CpuActBias *ab);

/* cpu/head.c: the fused output layer in bf16, on matmul primitives made for its blocks */
typedef struct CpuHead CpuHead;
CpuHead *cpu_head_create(dnnl_engine_t engine, const_dnnl_primitive_attr_t attr, const int64_t *desc,
                         int64_t block_rows);
size_t cpu_head_scratch(const CpuHead *h); /* the primitives' scratchpad, then the bf16 block */
void cpu_head_run(CpuHead *h, dnnl_stream_t stream, void *const *args, double *rowloss, void *scratch);
void cpu_head_destroy(CpuHead *h);

/* ---- fused attention (cpu/attention.c): kernels of cpu/kernels.c; ws: the scratch of every thread ---- */

/* ICE unless q, k, v, y and the gradients are all float32 or all bf16, lse float32. */
void cpu_attention_check(int32_t id, const int64_t *desc);
/* The scratch bytes one thread's share of an attention or attention_bwd kernel takes. */
size_t cpu_attention_scratch(const int64_t *desc);
void cpu_attention(const int64_t *desc, void *const *args, void *ws);
void cpu_attention_bwd(const int64_t *desc, void *const *args, void *ws);

#endif
