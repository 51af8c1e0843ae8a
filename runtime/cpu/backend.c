/*
 * cpu/backend.c - the CPU backend as one instance of the runtime's
 * backend table (RtBackend, rt_internal.h): DRAM as the fast tier and
 * memkind or a NUMA node as the slow one (cpu/pool.c), plain memory
 * copies and a copy thread (cpu/move.c), oneDNN and plain-C kernels
 * (cpu/kernels.c). libautotmrt.a runs on it.
 */
#include "cpu.h"

const RtBackend rt_cpu_backend = {
	.name = "cpu",
	.memory = {
		.footprint = cpu_pool_footprint,
		.open_fast = cpu_pool_open_fast,
		.open_managed = cpu_pool_open_managed,
		.open_slow = cpu_pool_open_slow,
		.close = cpu_pool_close,
		.where = cpu_pool_where,
		.store = cpu_store,
		.load = cpu_load,
		.remove_temp_dirs = cpu_remove_temp_dirs,
	},
	.copies = {
		.move = cpu_move,
		.open = cpu_copier_open,
		.close = cpu_copier_close,
		.submit = cpu_copy_submit,
		.wait = cpu_copy_wait,
		.drain = cpu_copy_drain,
		.stats = cpu_copy_stats,
	},
	.kernels = {
		.prepare = cpu_prepare,
		.cores = cpu_cores,
		.open = cpu_kernels_open,
		.close = cpu_kernels_close,
		.create = cpu_create,
		.launch = cpu_launch,
		.destroy = cpu_destroy,
		.impl_name = cpu_impl_name,
		.scratch_bytes = cpu_scratch_bytes,
		.kernel_scratch = cpu_kernel_scratch,
		.sync = cpu_sync,
	},
};

const RtBackend *const rt_backend = &rt_cpu_backend;
