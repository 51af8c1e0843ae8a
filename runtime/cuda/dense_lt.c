/*
 * cuda/dense_lt.c - a fused dense layer (compiler/front/fuse.h) as one
 * cuBLASLt matmul: the product, its bias and the fused relu or sum in the
 * matmul's epilogue, where cuBLAS's gemm needs the bias's rows written
 * before it and a pass of ours after it (cuda/kernels.c: run_dense).
 *
 * y [N, O] = x [N, I] W^T + b, then relu, or plus a sum s [N, O]. As
 * run_dense's gemm, column-major: D [O, N] = op(A) B with A the weight
 * stored as [I, O] (ld I) and transposed, B = x as [I, N] (ld I); the
 * bias is broadcast along D's columns (one a row of D: an output
 * feature). A sum is C (beta 1) under CUBLASLT_EPILOGUE_BIAS:
 * D = AB + C + b rounded once to D's type, where the interpreter rounds
 * the biased product to float32 and then adds (compiler/interp/interp.c:
 * add_sum): within float32 rounding. A relu is CUBLASLT_EPILOGUE_RELU_BIAS.
 * A relu followed by a sum, a sigmoid or a tanh, a bias of another type
 * than y (cuBLASLt takes D's) and a shape for which cuBLASLt offers no
 * algorithm keep run_dense's path: gpu_lt_plan returns NULL.
 *
 * The plan (descriptors, the heuristic's algorithm, no workspace) is made
 * when the kernel is; each launch sets the bias's address. Every argument
 * is at least 64 bytes aligned (compiler/place/memplan.h), which the
 * heuristic is told.
 */
#include "gpu.h"

#include <stdlib.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes" /* cublasLt.h declares a function without one */
#include <cublasLt.h>
#pragma GCC diagnostic pop

struct GpuLt {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c, d;
	cublasLtMatmulAlgo_t algo;
	int nin, sum; /* the kernel's inputs; its sum's argument, or -1 */
};

/* A cuBLASLt call that must succeed when the plan is made (its failure: no plan). */
#define LT_TRY(call)                                 \
	do {                                             \
		if ((call) != CUBLAS_STATUS_SUCCESS)         \
			goto fail;                               \
	} while (0)

/* The epilogue cuBLASLt runs for a dense kernel of this activation and sum, or 0 where it has none that fits. */
static cublasLtEpilogue_t lt_epilogue(int nin, Act act, int sum)
{
	if (nin < 3 || (act == ACT_NONE && sum < 0)) /* no bias; or nothing fused: run_dense's path, as unfused */
		return 0;
	if (act == ACT_NONE)
		return CUBLASLT_EPILOGUE_BIAS;
	return act == ACT_RELU && sum < 0 ? CUBLASLT_EPILOGUE_RELU_BIAS : 0;
}

static cublasStatus_t set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                               uint32_t value)
{
	return cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value);
}

/* The heuristic's first algorithm for the plan's matmul, without workspace, for 64-byte aligned arguments. */
static bool choose_algo(cublasLtHandle_t lt, GpuLt *p)
{
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	uint64_t ws = 0;
	LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
	LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
	LT_TRY(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 64));
	LT_TRY(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 64));
	LT_TRY(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 64));
	LT_TRY(set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 64));
	LT_TRY(cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->d, pref, 1, &res, &found));
	cublasLtMatmulPreferenceDestroy(pref);
	if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS)
		return false;
	p->algo = res.algo;
	return true;
fail:
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	return false;
}

GpuLt *gpu_lt_plan(GpuLtHandle lt, const int64_t *d, unsigned bf, bool tf32)
{
	int nin = (int)d[RT_D_NIN];
	int sum = op_sum_input(OP_DENSE, nin, (Act)d[RT_D_ACT]);
	cublasLtEpilogue_t epi = lt_epilogue(nin, (Act)d[RT_D_ACT], sum);
	int64_t fi = RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1), fo = RT_ARG_DIM(d, nin, RT_ARG_NDIM(d, nin) - 1);
	int64_t nb = fi > 0 ? rt_elems(RT_ARG_NDIM(d, 0), &RT_ARG_DIM(d, 0, 0)) / fi : 0;
	bool ybf = bf >> nin & 1u;
	if (!epi || (bf >> 2 & 1u) != ybf || (sum >= 0 && (bf >> sum & 1u) != ybf) || fi <= 0 || fo <= 0 || nb <= 0)
		return NULL;
	cudaDataType_t ta = bf >> 1 & 1u ? CUDA_R_16BF : CUDA_R_32F, tb = bf & 1u ? CUDA_R_16BF : CUDA_R_32F;
	cudaDataType_t ty = ybf ? CUDA_R_16BF : CUDA_R_32F;
	bool f32 = !bf;
	GpuLt *p = rt_xcalloc(sizeof *p);
	p->nin = nin;
	p->sum = sum;
	cublasOperation_t tra = CUBLAS_OP_T, trb = CUBLAS_OP_N;
	const void *bias_hint = (const void *)(uintptr_t)64; /* the heuristic reads the bias's alignment off its address */
	LT_TRY(cublasLtMatmulDescCreate(&p->op, f32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
	                                CUDA_R_32F));
	LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tra, sizeof tra));
	LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trb, sizeof trb));
	LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
	LT_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_hint, sizeof bias_hint));
	LT_TRY(cublasLtMatrixLayoutCreate(&p->a, ta, (uint64_t)fi, (uint64_t)fo, fi));
	LT_TRY(cublasLtMatrixLayoutCreate(&p->b, tb, (uint64_t)fi, (uint64_t)nb, fi));
	LT_TRY(cublasLtMatrixLayoutCreate(&p->c, ty, (uint64_t)fo, (uint64_t)nb, fo));
	LT_TRY(cublasLtMatrixLayoutCreate(&p->d, ty, (uint64_t)fo, (uint64_t)nb, fo));
	if (choose_algo(lt, p))
		return p;
fail:
	gpu_lt_free(p);
	return NULL;
}

bool gpu_lt_run(GpuLtHandle lt, const GpuLt *p, void *const *a, cudaStream_t st)
{
	const float one = 1, beta = p->sum >= 0 ? 1.0f : 0.0f;
	const void *bias = a[2];
	void *y = a[p->nin];
	const void *c = p->sum >= 0 ? a[p->sum] : y;
	if (cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
	    CUBLAS_STATUS_SUCCESS)
		return false;
	return cublasLtMatmul(lt, p->op, &one, a[1], p->a, a[0], p->b, &beta, c, p->c, y, p->d, &p->algo, NULL, 0, st) ==
	       CUBLAS_STATUS_SUCCESS;
}

GpuLtHandle gpu_lt_open(void)
{
	cublasLtHandle_t lt;
	cublasStatus_t st = cublasLtCreate(&lt);
	if (st != CUBLAS_STATUS_SUCCESS)
		rt_fatal("cuBLASLt: cublasLtCreate failed: %s", cublasGetStatusString(st));
	return lt;
}

void gpu_lt_close(GpuLtHandle lt)
{
	if (lt)
		cublasLtDestroy(lt);
}

void gpu_lt_free(GpuLt *p)
{
	if (!p)
		return;
	if (p->a)
		cublasLtMatrixLayoutDestroy(p->a);
	if (p->b)
		cublasLtMatrixLayoutDestroy(p->b);
	if (p->c)
		cublasLtMatrixLayoutDestroy(p->c);
	if (p->d)
		cublasLtMatrixLayoutDestroy(p->d);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	free(p);
}
