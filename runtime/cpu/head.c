/*
 * cpu/head.c - the output layer fused with its loss in bf16
 * (dense_crossentropy_ids_grad with bf16 x, weight and dx; cpu/xent.c has
 * the float32 kernel, on oneDNN's sgemm).
 *
 * oneDNN's C API has no bf16 gemm, so the three products of a block of
 * rows are matmul primitives, made when the kernel is created for the
 * block's rows and again for the last, shorter block: the logits
 * z = x w^T written as bf16 (rounded once from their float32 sums, as the
 * unfused bf16 dense writes them), turned into their bf16 gradient in
 * place (cpu_xent_grad_block), dx = dz w written as bf16, and the
 * weight's float32 gradient dw = dz^T x, its blocks summed by the
 * primitive's sum post-op. The unfused step rounded dw to bf16 and cast it
 * to float32; here it is the float32 sum itself.
 */
#include "cpu.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

enum { HEAD_Z, HEAD_DX, HEAD_DW, HEAD_DW_SUM, HEAD_PRODUCTS };

/* One matmul primitive and the memories its arguments are bound to at each run. */
typedef struct HeadProduct {
	dnnl_primitive_t prim;
	dnnl_memory_t src, wei, dst, pad;
} HeadProduct;

struct CpuHead {
	int64_t rows, per, c, v;                 /* the rows, a block's, the layer's input and output widths */
	HeadProduct p[2][HEAD_PRODUCTS];         /* [0]: a whole block; [1]: the last, shorter one (if any) */
	size_t pad;                              /* the largest scratchpad of the primitives */
};

static void check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success)
		rt_fatal("the fused output layer's %s failed: %s", what, dnnl_status2str(st));
}

/* A [r, k] bf16 or f32 matrix with row stride ld (transposed: read as [k, r] of column stride ld). */
static dnnl_memory_desc_t mat(int64_t r, int64_t k, int64_t ld, bool transposed, dnnl_data_type_t dt)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t dims = {r, k}, strides = {ld, 1};
	if (transposed) {
		strides[0] = 1;
		strides[1] = ld;
	}
	check(dnnl_memory_desc_init_by_strides(&md, 2, dims, dt, strides), "memory description");
	return md;
}

/*
 * The matmul's implementation: oneDNN's first (its preference), except
 * that where `prefer` names one (gemm:jit) and no AMX one is offered, that
 * one. Measured on avx512_core_bf16 without AMX (gpt6x512-b8, blocks of
 * 1024 rows, a step's products): dx = dz w 143.7 ms with brgemm, 120.2
 * with gemm:jit; dw = dz^T x 200.6 and 121.8 (brgemm copies the
 * transposed dz); z = x w^T 132.7 with brgemm, 149-154 with gemm:jit.
 */
static dnnl_primitive_desc_t choose_impl(const dnnl_matmul_desc_t *md, const_dnnl_primitive_attr_t attr,
                                         dnnl_engine_t eng, const char *prefer)
{
	dnnl_primitive_desc_t first = NULL, pick = NULL;
	dnnl_primitive_desc_iterator_t it;
	bool amx = false;
	check(dnnl_primitive_desc_iterator_create(&it, md, attr, eng, NULL), "matmul's implementations");
	do {
		dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
		const char *name = "";
		if (!c)
			break;
		dnnl_primitive_desc_query(c, dnnl_query_impl_info_str, 0, &name);
		amx = amx || strstr(name, "amx");
		if (!first)
			first = c;
		else if (!pick && prefer && strncmp(name, prefer, strlen(prefer)) == 0)
			pick = c;
		else
			dnnl_primitive_desc_destroy(c);
	} while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
	dnnl_primitive_desc_iterator_destroy(it);
	if (!first)
		rt_fatal("the fused output layer: oneDNN offers no matmul implementation");
	if (!pick || amx) { /* (pick is never the first: where that is the preferred one, it stays) */
		if (pick)
			dnnl_primitive_desc_destroy(pick);
		return first;
	}
	dnnl_primitive_desc_destroy(first);
	return pick;
}

/* The primitive dst = src wei (+ dst where sum), of the implementation choose_impl takes, and its argument
   memories, without addresses yet. */
static void product(HeadProduct *p, dnnl_engine_t eng, const_dnnl_primitive_attr_t base, dnnl_memory_desc_t src,
                    dnnl_memory_desc_t wei, dnnl_memory_desc_t dst, bool sum, const char *prefer, size_t *pad)
{
	dnnl_matmul_desc_t md;
	check(dnnl_matmul_desc_init(&md, &src, &wei, NULL, &dst), "matmul description");
	dnnl_primitive_attr_t attr;
	check(dnnl_primitive_attr_clone(&attr, base), "attributes");
	if (sum) {
		dnnl_post_ops_t po;
		check(dnnl_post_ops_create(&po), "post-ops");
		check(dnnl_post_ops_append_sum(po, 1.0f), "sum post-op");
		check(dnnl_primitive_attr_set_post_ops(attr, po), "post-ops");
		check(dnnl_post_ops_destroy(po), "post-ops");
	}
	dnnl_primitive_desc_t pd = choose_impl(&md, attr, eng, prefer);
	check(dnnl_primitive_attr_destroy(attr), "attributes");
	const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	size_t bytes = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
	*pad = bytes > *pad ? bytes : *pad;
	p->pad = NULL;
	if (bytes)
		check(dnnl_memory_create(&p->pad, pmd, eng, DNNL_MEMORY_NONE), "scratchpad");
	check(dnnl_memory_create(&p->src, &src, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_memory_create(&p->wei, &wei, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_memory_create(&p->dst, &dst, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_primitive_create(&p->prim, pd), "matmul");
	check(dnnl_primitive_desc_destroy(pd), "matmul");
}

CpuHead *cpu_head_create(dnnl_engine_t eng, const_dnnl_primitive_attr_t attr, const int64_t *d, int64_t per)
{
	CpuHead *h = rt_xcalloc(sizeof *h);
	h->c = RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1);
	h->v = RT_ARG_DIM(d, 1, 0);
	h->rows = rt_head_rows(d);
	h->per = per;
	int64_t c = h->c, v = h->v;
	for (int b = 0; b < 2; b++) {
		int64_t nr = b == 0 ? per : h->rows % per;
		if (nr == 0)
			continue;
		HeadProduct *p = h->p[b];
		product(&p[HEAD_Z], eng, attr, mat(nr, c, c, false, dnnl_bf16), mat(c, v, c, true, dnnl_bf16),
		        mat(nr, v, v, false, dnnl_bf16), false, NULL, &h->pad);
		product(&p[HEAD_DX], eng, attr, mat(nr, v, v, false, dnnl_bf16), mat(v, c, c, false, dnnl_bf16),
		        mat(nr, c, c, false, dnnl_bf16), false, "gemm:jit", &h->pad);
		for (int sum = 0; sum < 2; sum++)
			product(&p[HEAD_DW + sum], eng, attr, mat(v, nr, v, true, dnnl_bf16), mat(nr, c, c, false, dnnl_bf16),
			        mat(v, c, c, false, dnnl_f32), sum, "gemm:jit", &h->pad);
	}
	return h;
}

size_t cpu_head_scratch(const CpuHead *h)
{
	return h->pad + sizeof(uint16_t) * (size_t)(h->per * h->v);
}

static void run(HeadProduct *p, dnnl_stream_t st, const void *src, const void *wei, void *dst, void *pad)
{
	check(dnnl_memory_set_data_handle(p->src, (void *)src), "memory");
	check(dnnl_memory_set_data_handle(p->wei, (void *)wei), "memory");
	check(dnnl_memory_set_data_handle(p->dst, dst), "memory");
	dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->wei}, {DNNL_ARG_DST, p->dst}};
	int n = 3;
	if (p->pad) {
		check(dnnl_memory_set_data_handle(p->pad, pad), "memory");
		args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->pad};
	}
	check(dnnl_primitive_execute(p->prim, st, n, args), "matmul");
	check(dnnl_stream_wait(st), "matmul");
}

/* x, weight, ids -> dx, dweight, loss (ops.def), block by block; scratch: cpu_head_scratch's bytes. */
void cpu_head_run(CpuHead *h, dnnl_stream_t st, void *const *a, double *rowloss, void *scratch)
{
	const uint16_t *x = a[0];
	const int32_t *ids = a[2];
	uint16_t *dx = a[3], *blk = (uint16_t *)((char *)scratch + h->pad);
	float *dw = a[4], *loss = a[5];
	for (int64_t r0 = 0; r0 < h->rows; r0 += h->per) {
		int64_t nr = h->rows - r0 < h->per ? h->rows - r0 : h->per;
		HeadProduct *p = h->p[nr == h->per ? 0 : 1];
		run(&p[HEAD_Z], st, x + r0 * h->c, a[1], blk, scratch);
		cpu_xent_grad_block(blk, ids + r0, nr, h->v, h->rows, true, rowloss + r0);
		run(&p[HEAD_DX], st, blk, a[1], dx + r0 * h->c, scratch);
		run(&p[r0 > 0 ? HEAD_DW_SUM : HEAD_DW], st, blk, x + r0 * h->c, dw, scratch);
	}
	loss[0] = cpu_xent_mean(rowloss, h->rows);
}

void cpu_head_destroy(CpuHead *h)
{
	if (!h)
		return;
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < HEAD_PRODUCTS; i++) {
			HeadProduct *p = &h->p[b][i];
			if (!p->prim)
				continue;
			dnnl_primitive_destroy(p->prim);
			dnnl_memory_destroy(p->src);
			dnnl_memory_destroy(p->wei);
			dnnl_memory_destroy(p->dst);
			if (p->pad)
				dnnl_memory_destroy(p->pad);
		}
	free(h);
}
