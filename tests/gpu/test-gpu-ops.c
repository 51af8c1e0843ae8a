/*
 * test-gpu-ops.c - every kernel of the GPU runtime (libautotmrt-cuda.a)
 * against the reference interpreter, as tests/unit/test-runtime-ops.c
 * checks the CPU runtime.
 *
 * Every case of the shared op table (tests/opcases.c), a small .net
 * program turned into a training step, is checked node by node against
 * the interpreter (tests/opcheck.c): for every node in schedule order the
 * interpreter (float32 mode) executes it, and the GPU runtime executes
 * the same node on copies of the interpreter's inputs to that node, in
 * device memory; the cases run a second time with every argument in
 * pinned host memory (where the slow pool is), which kernels read and
 * write in place, and a third time in device memory with each
 * convolution's algorithm chosen as a placement does, its workspace
 * passed after its arguments (RT_ALGO_WS_ARG), and twice more so, with
 * the backend's own algorithms of 1x1 convolutions (cuda/conv_gemm.h:
 * RT_CONV_GEMM, then RT_CONV_GEMM_BATCHED) where they apply, which must
 * run in each direction they offer. Then every case in device memory as
 * a bf16 graph (autocast's casts, the bf16 kernels and the float32 ones
 * run widened), and fused as the GPU's programs are (attention fused, the
 * loss fused with its gradient: fuse.h's fuse_loss) in bf16 and in fp32,
 * and every case fused as `--fuse` builds them (fuse.h's fuse_epilogues:
 * the activations, their gradients and the sums folded) in fp32 and bf16,
 * where some dense layers must run as one cuBLASLt matmul (cuda/dense_lt.c;
 * unless AUTOTM_CUBLASLT is set).
 * Every output, and every input an op updates in place, must agree: max
 * |a - b| <= 1e-4 * max(1, max |ref|), 1e-2 for a node with bf16
 * arguments (opcheck.h), with TF32 off (AUTOTM_TF32 unset). Every op of
 * ops.def must be covered.
 *
 * Without a GPU (cudaGetDeviceCount fails or finds none) it says so and
 * exits 77: skipped.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/rt.h"
#include "cuda/conv_gemm.h" /* runtime/ */
#include "rt_internal.h"    /* runtime/: rt_gpu_nccl_available */
#include "tests/opcases.h"
#include "tests/opcheck.h"
#include "tests/testlib.h"

/* NCCL can be loaded here: the all-reduce's case runs */
static bool nccl;

/* Whether op has a kernel that ran here: allreduce's needs NCCL. */
static bool has_kernel(int op)
{
	return op != OP_ALLREDUCE || nccl;
}

static void check_cuda(cudaError_t err, const char *what)
{
	if (err != cudaSuccess) {
		fprintf(stderr, "test-gpu-ops: %s: %s\n", what, cudaGetErrorString(err));
		exit(1);
	}
}

/* Kernel arguments in device memory. */
static void *device_alloc(size_t bytes)
{
	void *p;
	check_cuda(cudaMalloc(&p, bytes), "allocating");
	return p;
}

static void device_free(void *p)
{
	check_cuda(cudaFree(p), "freeing");
}

/* Kernel arguments in pinned host memory (the slow pool's kind). */
static void *pinned_alloc(size_t bytes)
{
	void *p;
	check_cuda(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "allocating");
	return p;
}

static void pinned_free(void *p)
{
	check_cuda(cudaFreeHost(p), "freeing");
}

static void cuda_copy(void *dst, const void *src, size_t bytes)
{
	check_cuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "copying");
}

static void cuda_wait(void)
{
	check_cuda(cudaDeviceSynchronize(), "running the kernel");
}

static const ArgMemory device_memory = {"device", device_alloc, cuda_copy, cuda_wait, device_free, 0};
static const ArgMemory pinned_memory = {"host", pinned_alloc, cuda_copy, cuda_wait, pinned_free, 0};
static const ArgMemory placed_memory = {"placed", device_alloc, cuda_copy, cuda_wait, device_free, 1};
static const ArgMemory gemm_memory = {"gemm", device_alloc, cuda_copy, cuda_wait, device_free, RT_CONV_GEMM};
static const ArgMemory batched_memory = {"gemm-b", device_alloc, cuda_copy, cuda_wait, device_free,
                                         RT_CONV_GEMM_BATCHED};

/* Whether the GPU's fusion changes case c: attention, or a loss by class ids (what fuse_loss fuses). */
static bool gpu_fuses(const OpCase *c)
{
	return strstr(c->layers, "attention") || (c->labels && strncmp(c->labels, "class", 5) == 0);
}

/* The kernels from id `from` on whose implementation is named `prefix` ("cuBLASLt": cuda/dense_lt.c's). */
static int kernels_named(const RtCtx *ctx, int32_t from, const char *prefix)
{
	int n = 0;
	for (int32_t i = from; i < ctx->nkernel_slots; i++)
		if (ctx->kernels[i].impl &&
		    strncmp(ctx->backend->kernels.impl_name(ctx->kernels[i].impl), prefix, strlen(prefix)) == 0)
			n++;
	return n;
}

/* The cases fused as `--fuse` builds them, in fp32 and bf16. */
static void fused_cases(RtCtx *ctx, int32_t *next_id)
{
	test_fuse = true;
	for (int p = 0; p < 2; p++) {
		test_precision = p ? PREC_BF16 : PREC_FP32;
		for (int i = 0; i < nop_cases; i++)
			if (nccl || op_cases[i].kind != OPCASE_RANKS)
				opcheck_case(ctx, &op_cases[i], next_id, &device_memory);
	}
	test_fuse = false;
	test_precision = PREC_FP32;
}

int main(void)
{
	int ndev = 0;
	cudaError_t err = cudaGetDeviceCount(&ndev);
	if (err != cudaSuccess || ndev == 0) {
		printf("skipped: no CUDA device (%s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "none found");
		return 77;
	}
	unsetenv("AUTOTM_TF32");
	/* the all-reduce's case runs where NCCL loads (check.sh finds PyTorch's), else allreduce is left out */
	nccl = rt_gpu_nccl_available();
	if (!nccl)
		printf("# no NCCL (AUTOTM_NCCL_LIB, libnccl.so.2): the all-reduce's case is left out\n");
	RtProgram empty = {.model = "gpu-ops"};
	RtCtx *ctx = rt_begin(0, NULL, &empty);
	int32_t next_id = 0;
	const ArgMemory *mems[] = {&device_memory, &pinned_memory, &placed_memory, &gemm_memory, &batched_memory};
	for (int m = 0; m < 5; m++) {
		int before[3];
		memcpy(before, opcheck_own_algo, sizeof before);
		for (int i = 0; i < nop_cases; i++)
			if (nccl || op_cases[i].kind != OPCASE_RANKS)
				opcheck_case(ctx, &op_cases[i], &next_id, mems[m]);
		static const char *const dirs[3] = {"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"};
		for (int d = 0; mems[m]->placed_algo > 1 && d < 3; d++)
			if (d == 2 || mems[m]->placed_algo == RT_CONV_GEMM)
				test_check(opcheck_own_algo[d] > before[d], "%s: the backend's algorithm %d ran %d %s kernels",
				           mems[m]->where, mems[m]->placed_algo, opcheck_own_algo[d] - before[d], dirs[d]);
	}
	/* bf16, then fused (the cases with attention or a loss by ids) in both precisions */
	test_precision = PREC_BF16;
	for (int i = 0; i < nop_cases; i++)
		if (nccl || op_cases[i].kind != OPCASE_RANKS)
			opcheck_case(ctx, &op_cases[i], &next_id, &device_memory);
	test_fuse_gpu = true;
	for (int i = 0; i < nop_cases; i++)
		if (gpu_fuses(&op_cases[i]))
			opcheck_case(ctx, &op_cases[i], &next_id, &device_memory);
	test_precision = PREC_FP32;
	for (int i = 0; i < nop_cases; i++)
		if (gpu_fuses(&op_cases[i]))
			opcheck_case(ctx, &op_cases[i], &next_id, &device_memory);
	test_fuse_gpu = false;
	int32_t first_fused = next_id;
	fused_cases(ctx, &next_id);
	/* the fused dense layers with a bias (a relu or a residual sum after it) ran as one cuBLASLt matmul */
	int lt = kernels_named(ctx, first_fused, "cuBLASLt");
	test_check(lt > 0 || getenv("AUTOTM_CUBLASLT"), "fused: %d dense kernels ran in one cuBLASLt matmul", lt);
	if (rt_end(ctx) != 0)
		test_check(false, "rt_end of the op checks");
	printf("# per op: nodes checked, worst error relative to max(1, max |ref|)\n");
	int missing = opcheck_print_ops(true, has_kernel);
	test_check(missing == 0, "every op of ops.def ran in some case (%d did not)", missing);
	return test_summary();
}
