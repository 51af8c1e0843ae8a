/*
 * cuda/gpu.h - what the C files of the GPU runtime (libautotmrt-cuda.a)
 * share: the compute stream and the checking of CUDA runtime calls.
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

#include <cuda_runtime_api.h>

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

#endif
