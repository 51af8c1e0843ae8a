/*
 * cuda/gpu.h - what the C files of the CUDA backend (libautotmrt-cuda.a)
 * share: the compute stream, the checking of CUDA runtime calls, the
 * functions that cuda/backend.c puts in rt_cuda_backend (rt_internal.h
 * says what each does), and what autotm-gpu-profile needs beyond them.
 *
 *   cuda/memory.c       memory and copies: device, managed and pinned
 *                       host pools, copy streams, host staging
 *   cuda/kernels.c      kernels: cuDNN, cuBLAS, cuda/elementwise.cu
 *   cuda/attention.c    fused attention: cuBLAS products in chunks of queries
 *   cuda/head.c         the output layer fused with its loss
 *   cuda/dense_lt.c     a dense layer with its fused epilogue in one cuBLASLt matmul
 *
 * One process drives one device (the current one: choose it with
 * CUDA_VISIBLE_DEVICES) and one compute stream. Every kernel, every
 * blocking move and every staging copy between host memory and a pool
 * runs on that stream, in program order, so that they need no other
 * synchronisation among themselves; only the asynchronous moves run on
 * streams of their own (cuda/memory.c).
 */
#ifndef AUTOTM_GPU_H
#define AUTOTM_GPU_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>

#include "../rt_internal.h"

/* A CUDA runtime call returning an error: fatal with file:line, the call and CUDA's reason. */
void gpu_check_cuda(cudaError_t err, const char *what, const char *file, int line);
#define CUDA_CHECK(call) gpu_check_cuda((call), #call, __FILE__, __LINE__)

/*
 * The compute stream. The first call checks that there is a device with
 * unified addressing (kernels then read pinned host memory directly, and
 * cudaMemcpyDefault finds every copy's direction) and creates the stream.
 */
cudaStream_t gpu_stream(void);

/* ---- memory and copies (cuda/memory.c) ------------------------------------ */

void gpu_pool_footprint(int64_t fast, int64_t slow, RtSlowKind kind, const char *dir, bool managed, RtFootprint *out);
void gpu_pool_open_fast(RtPool *p, int64_t bytes, int64_t limit);
void gpu_pool_open_managed(RtPool *p, int64_t bytes, int64_t limit);
void gpu_pool_open_slow(RtPool *p, int64_t bytes, RtSlowKind kind, const char *dir, int numa_node);
void gpu_pool_close(RtPool *p);
const char *gpu_pool_where(const RtPool *p, char *buf, size_t size);
void gpu_remove_temp_dirs(void);
void gpu_store(void *dst, const void *src, size_t bytes);
void gpu_load(void *dst, const void *src, size_t bytes);

void gpu_move(void *dst, const void *src, size_t bytes);
void *gpu_copier_open(void);
void gpu_copier_close(void *copier);
int32_t gpu_copy_submit(void *copier, void *dst, const void *src, size_t bytes);
void gpu_copy_wait(void *copier, int32_t handle);
void gpu_copy_drain(void *copier);
void gpu_copy_stats(void *copier, int64_t *count, int64_t *bytes);

/* ---- kernels (cuda/kernels.c) ---------------------------------------------- */

void gpu_prepare(int argc, char **argv);
int gpu_cores(void);
void *gpu_kernels_open(int threads, int64_t scratch_budget);
void gpu_kernels_close(void *state);
void *gpu_create(void *state, int32_t id, const int64_t *desc);
void gpu_launch(void *state, void *kernel, void *const *args, uint64_t step);
void gpu_destroy(void *state, void *kernel);
const char *gpu_impl_name(void *kernel);
int64_t gpu_scratch_bytes(void *state);
/*
 * Memory a kernel needs besides its arguments: the workspace of a
 * convolution's algorithm (the backend shares one, the largest, among
 * all kernels), softmax_crossentropy's row losses; else 0.
 */
int64_t gpu_kernel_scratch(void *kernel);
void gpu_sync(void *state);

/* ---- fused attention (cuda/attention.c) ------------------------------------ */

/* The workspace an attention or attention_bwd kernel of description desc needs, in bytes. */
size_t gpu_attention_scratch(const int64_t *desc);
/* Run it on the stream with the arguments args and that workspace. */
void gpu_attention(cublasHandle_t blas, cudaStream_t st, const int64_t *desc, void *const *args, void *workspace);

/* ---- the output layer fused with its loss (cuda/head.c) -------------------- */

/* dense_crossentropy_ids_grad of description desc on the stream in blocks of block_rows (rt_head_block_rows),
   its block and rows' losses in the workspace (op_head_scratch_bytes). */
void gpu_head(cublasHandle_t blas, cudaStream_t st, const int64_t *desc, void *const *args, void *workspace,
              int64_t block_rows);

/* ---- a fused dense layer as one cuBLASLt matmul (cuda/dense_lt.c) ---------- */

typedef struct GpuLt GpuLt;
/* cuBLASLt's handle (cublasLtHandle_t: cublasLt.h is included by dense_lt.c alone). */
typedef struct cublasLtContext *GpuLtHandle;
GpuLtHandle gpu_lt_open(void);
void gpu_lt_close(GpuLtHandle lt);
/* The plan of dense kernel desc (bf: its bf16 arguments) whose bias and fused relu or sum cuBLASLt's epilogue
   takes, TF32 where tf32 and float32; NULL where it takes none (then cuBLAS and our kernels run it). */
GpuLt *gpu_lt_plan(GpuLtHandle lt, const int64_t *desc, unsigned bf, bool tf32);
/* Run it on the arguments a; false where cuBLASLt refused (nothing written: run it otherwise). */
bool gpu_lt_run(GpuLtHandle lt, const GpuLt *p, void *const *a, cudaStream_t st);
void gpu_lt_free(GpuLt *p);

/* ---- for autotm-gpu-profile (cuda/gpuprof.c) ------------------------------ */

/* One convolution algorithm for a kernel: cuDNN's, or the backend's own (conv_gemm.h). */
typedef struct GpuConvAlgo {
	int algo;           /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t, or RT_CONV_* */
	int math;           /* cudnnMathType_t it runs with (FMA unless TF32 is on) */
	const char *name;   /* "implicit_precomp_gemm", "algo_1", "gemm_1x1", ... */
	bool tensor_op;     /* it uses tensor cores (TF32 on float32 data; bf16 data) */
	bool deterministic; /* it gives the same bits every run */
	const char *status; /* NULL: it can run here; else cuDNN's reason why not */
	size_t workspace;   /* bytes of workspace it needs */
} GpuConvAlgo;

enum { GPU_MAX_CONV_ALGOS = 16 };

/* Which direction a convolution kernel is: "fwd", "bwd_data", "bwd_filter"; NULL if not one. */
const char *gpu_conv_direction(const void *kernel);
/*
 * Every algorithm cuDNN's heuristics report for a convolution kernel
 * (cudnnGetConvolution*Algorithm_v7 with the most results), each once,
 * then the backend's own that compute it (conv_gemm.h), at most
 * GPU_MAX_CONV_ALGOS into out; returns how many (0: not a
 * convolution). Algorithms rated for tensor cores are left out of float32
 * convolutions when TF32 is off, as the backend never chooses them then.
 */
int gpu_conv_algos(void *state, void *kernel, GpuConvAlgo *out);
/*
 * Launch a convolution kernel with algorithm a (from gpu_conv_algos) and
 * the device workspace ws of a->workspace bytes, instead of its own;
 * returns NULL, or cuDNN's or cuBLAS's reason if the launch failed.
 */
const char *gpu_conv_launch_algo(void *state, void *kernel, const GpuConvAlgo *a, void *ws, void *const *args);

#endif
