/*
 * cuda/backend.c - the CUDA backend as one instance of the runtime's
 * backend table (RtBackend, rt_internal.h): device memory as the fast
 * tier and pinned host memory as the slow one, copy streams per PCIe
 * direction (cuda/memory.c), cuDNN, cuBLAS and CUDA kernels
 * (cuda/kernels.c, cuda/elementwise.cu). libautotmrt-cuda.a runs on it.
 */
#include "gpu.h"

const RtBackend rt_cuda_backend = {
	.name = "cuda",
	.memory = {
		.footprint = gpu_pool_footprint,
		.open_fast = gpu_pool_open_fast,
		.open_managed = gpu_pool_open_managed,
		.open_slow = gpu_pool_open_slow,
		.close = gpu_pool_close,
		.where = gpu_pool_where,
		.store = gpu_store,
		.load = gpu_load,
		.remove_temp_dirs = gpu_remove_temp_dirs,
	},
	.copies = {
		.move = gpu_move,
		.open = gpu_copier_open,
		.close = gpu_copier_close,
		.submit = gpu_copy_submit,
		.wait = gpu_copy_wait,
		.drain = gpu_copy_drain,
		.stats = gpu_copy_stats,
	},
	.kernels = {
		.prepare = gpu_prepare,
		.cores = gpu_cores,
		.open = gpu_kernels_open,
		.close = gpu_kernels_close,
		.create = gpu_create,
		.launch = gpu_launch,
		.destroy = gpu_destroy,
		.impl_name = gpu_impl_name,
		.scratch_bytes = gpu_scratch_bytes,
		.kernel_scratch = gpu_kernel_scratch,
		.sync = gpu_sync,
	},
};

const RtBackend *const rt_backend = &rt_cuda_backend;
