/*
 * profile_gpu.h - profiles measured on a GPU by autotm-gpu-profile.
 *
 * The GPU runs programs but not the compiler, so its profile travels as
 * files (docs/gpu.md): autotmc exports the distinct kernels of a training
 * step (gpu_export_kernels), the runtime's tool autotm-gpu-profile times
 * them on the GPU with their arguments in device memory and times the
 * link, and autotmc reads the result as the cost model of the GPU backend
 * (costmodel_gpu_profile). The formats:
 *
 *   kernels:  "# autotm gpu kernels 1", then per kernel
 *             SIGNATURE \t d0,d1,...,d(RT_DESC_LEN-1)
 *   profile:  "# autotm gpu profile 1", then lines of tab-separated fields
 *             machine NAME CC MEMORY DRIVER RUNTIME CUDNN "tf32 on|off"
 *             kernel  SIGNATURE SECONDS SPREAD RUNS IMPL WORKSPACE
 *             algo    SIGNATURE fwd|bwd_data|bwd_filter NAME SECONDS WORKSPACE NUMBER
 *             move    fast_to_slow|slow_to_fast|both sync|async BYTES SECONDS
 *             (# comments)
 */
#ifndef AUTOTM_PROFILE_GPU_H
#define AUTOTM_PROFILE_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "costmodel.h"
#include "graph.h"
#include "schedule.h"

/* Write the distinct kernels of the step to path; their count, or -1 with err. */
int gpu_export_kernels(const char *path, const Graph *g, const Schedule *s, Arena *a, char *err, size_t errlen);

/*
 * The cost model of a GPU profile: every kernel's all-fast time by its
 * signature (kernels of the GPU read device memory only: a configuration
 * with a slow argument is a bug), the convolution algorithms of the algo
 * lines (the ILP chooses one per kernel, its workspace counted against the
 * limit), and moves interpolated between the measured sizes per direction
 * and mode. cuDNN's nondeterministic algorithms (backward data 0, backward
 * filter 0 and 3: they sum with atomics) are offered only if
 * nondeterministic. A malformed file is an error
 * "path:line: ..."; so is a kernel of the step that the profile lacks.
 */
CostModel *costmodel_gpu_profile(const char *path, bool nondeterministic, const Graph *g, const Schedule *s,
                                 Arena *a, char *err, size_t errlen);

#endif
