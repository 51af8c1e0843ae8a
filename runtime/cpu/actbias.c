/*
 * cpu/actbias.c - an activation's gradient and the bias gradient of the
 * layer before it in one pass (act_bias_grad: ops.def; the fold is in
 * compiler/front/fuse.h), float32 or bf16.
 *
 * Unfused, oneDNN's eltwise backward writes dx to memory and bias_grad
 * reads it all back. Here dx goes a block of rows at a time (about
 * ACT_BIAS_BLOCK bytes of each argument, so that the block is still in the
 * cache): oneDNN's eltwise backward over the block (the same primitive as
 * unfused, made for the block's elements and for the last, shorter block,
 * so dx has the same bits), then its column sums added to a double per
 * column (the scratch), each column's rows in order as bias_grad sums
 * them: the same bits as unfused too.
 *
 * A row is a [N, T, O] gradient's O elements (the axis last: inner 1) or
 * a [N, C, H, W] gradient's sample (inner H W), plain or channel-blocked:
 * the eltwise is elementwise, and a sample is a row in either layout.
 */
#include "cpu.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h" /* base/ */

enum { ACT_BIAS_BLOCK = 512 << 10, ACT_BIAS_COLS = 16 };

/* The eltwise backward primitive of a block and the memories its arguments are bound to at each run. */
typedef struct Eltwise {
	dnnl_primitive_t prim;
	dnnl_memory_t saved, dy, dx, pad;
} Eltwise;

struct CpuActBias {
	int64_t rows, per, c, inner, row;   /* rows, a block's, the columns, the elements after the axis, a row's */
	bool bf16, db16, from_y;            /* dx's type and dbias's bf16; whether saved is the activation's output */
	bool blocked;                       /* [N, C, H, W] channel-blocked (autotm/rt.h's rt_arg_blocked) */
	Eltwise e[2];                       /* [0]: a whole block; [1]: the last, shorter one (if any) */
	size_t pad;                         /* the larger scratchpad of the two */
};

static void check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success)
		rt_fatal("the fused activation and bias gradient's %s failed: %s", what, dnnl_status2str(st));
}

/* The eltwise backward of algorithm alg over n elements of type dt, its scratchpad counted in *pad. */
static void eltwise(Eltwise *e, dnnl_engine_t eng, const_dnnl_primitive_attr_t attr, dnnl_alg_kind_t alg, int64_t n,
                    dnnl_data_type_t dt, size_t *pad)
{
	dnnl_memory_desc_t md;
	check(dnnl_memory_desc_init_by_tag(&md, 1, (dnnl_dims_t){n}, dt, dnnl_a), "memory description");
	dnnl_eltwise_desc_t fd, bd;
	check(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, alg, &md, 0.f, 0.f), "eltwise");
	dnnl_primitive_desc_t hint, pd;
	check(dnnl_primitive_desc_create(&hint, &fd, attr, eng, NULL), "eltwise forward");
	check(dnnl_eltwise_backward_desc_init(&bd, alg, &md, &md, 0.f, 0.f), "eltwise backward");
	check(dnnl_primitive_desc_create(&pd, &bd, attr, eng, hint), "eltwise backward");
	check(dnnl_primitive_desc_destroy(hint), "eltwise forward");
	const dnnl_memory_desc_t *pmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	size_t bytes = pmd ? dnnl_memory_desc_get_size(pmd) : 0;
	*pad = bytes > *pad ? bytes : *pad;
	if (bytes)
		check(dnnl_memory_create(&e->pad, pmd, eng, DNNL_MEMORY_NONE), "scratchpad");
	check(dnnl_memory_create(&e->saved, &md, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_memory_create(&e->dy, &md, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_memory_create(&e->dx, &md, eng, DNNL_MEMORY_NONE), "memory");
	check(dnnl_primitive_create(&e->prim, pd), "eltwise backward");
	check(dnnl_primitive_desc_destroy(pd), "eltwise backward");
}

CpuActBias *cpu_act_bias_create(dnnl_engine_t eng, const_dnnl_primitive_attr_t attr, const int64_t *d,
                                dnnl_alg_kind_t alg, bool from_y)
{
	CpuActBias *ab = rt_xcalloc(sizeof *ab);
	int64_t nb;
	op_bias_dims(&RT_ARG_DIM(d, 1, 0), (int)RT_ARG_NDIM(d, 1), d[RT_D_AXIS], &nb, &ab->c, &ab->inner);
	ab->bf16 = rt_arg_bf16(d, 1);
	ab->db16 = rt_arg_bf16(d, 3);
	ab->from_y = from_y;
	ab->blocked = rt_arg_blocked(d, 0);
	ab->row = ab->c * ab->inner;
	ab->rows = nb;
	int64_t per = ACT_BIAS_BLOCK / ((ab->bf16 ? 2 : 4) * ab->row);
	ab->per = per < 1 ? 1 : per > ab->rows ? ab->rows : per;
	dnnl_data_type_t dt = ab->bf16 ? dnnl_bf16 : dnnl_f32;
	eltwise(&ab->e[0], eng, attr, alg, ab->per * ab->row, dt, &ab->pad);
	if (ab->rows % ab->per)
		eltwise(&ab->e[1], eng, attr, alg, ab->rows % ab->per * ab->row, dt, &ab->pad);
	return ab;
}

size_t cpu_act_bias_scratch(const CpuActBias *ab)
{
	return (ab->pad + 63) / 64 * 64 + sizeof(double) * (size_t)ab->c;
}

/* Add the nr rows of dx to the columns' sums s, each column's rows in order (bias_grad's order). */
static void sum_rows(const CpuActBias *ab, const void *dx, int64_t nr, double *s)
{
	bool bf = ab->bf16;
	if (ab->blocked) { /* a sample is a row in either layout */
		cpu_blocked_channel_sums(dx, nr, ab->c, ab->inner, bf, s);
		return;
	}
	if (ab->inner == 1) {
#pragma omp parallel for if (nr * ab->c > (1 << 15))
		for (int64_t o0 = 0; o0 < ab->c; o0 += ACT_BIAS_COLS) {
			int64_t w = ab->c - o0 < ACT_BIAS_COLS ? ab->c - o0 : ACT_BIAS_COLS;
			for (int64_t b = 0; b < nr; b++)
				for (int64_t j = 0; j < w; j++)
					s[o0 + j] += bf16_or_f32_ld(dx, b * ab->c + o0 + j, bf);
		}
		return;
	}
#pragma omp parallel for if (nr * ab->row > (1 << 15))
	for (int64_t o = 0; o < ab->c; o++)
		for (int64_t b = 0; b < nr; b++) {
			int64_t at = (b * ab->c + o) * ab->inner;
			double rs = 0;
#pragma omp simd reduction(+ : rs)
			for (int64_t i = 0; i < ab->inner; i++)
				rs += bf16_or_f32_ld(dx, at + i, bf);
			s[o] += rs;
		}
}

/* saved, dy -> dx, dbias (ops.def), block by block; scratch: cpu_act_bias_scratch's bytes. */
void cpu_act_bias_run(CpuActBias *ab, dnnl_stream_t st, void *const *a, void *scratch)
{
	size_t es = ab->bf16 ? 2 : 4;
	double *s = (double *)(void *)((char *)scratch + (ab->pad + 63) / 64 * 64);
	memset(s, 0, sizeof(double) * (size_t)ab->c);
	for (int64_t r0 = 0; r0 < ab->rows; r0 += ab->per) {
		int64_t nr = ab->rows - r0 < ab->per ? ab->rows - r0 : ab->per;
		Eltwise *e = &ab->e[nr == ab->per ? 0 : 1];
		size_t at = es * (size_t)(r0 * ab->row);
		char *dx = (char *)a[2] + at;
		check(dnnl_memory_set_data_handle(e->saved, (char *)a[0] + at), "memory");
		check(dnnl_memory_set_data_handle(e->dy, (char *)a[1] + at), "memory");
		check(dnnl_memory_set_data_handle(e->dx, dx), "memory");
		dnnl_exec_arg_t args[4] = {{ab->from_y ? DNNL_ARG_DST : DNNL_ARG_SRC, e->saved},
		                           {DNNL_ARG_DIFF_DST, e->dy}, {DNNL_ARG_DIFF_SRC, e->dx}};
		int n = 3;
		if (e->pad) {
			check(dnnl_memory_set_data_handle(e->pad, scratch), "memory");
			args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->pad};
		}
		check(dnnl_primitive_execute(e->prim, st, n, args), "eltwise backward");
		check(dnnl_stream_wait(st), "eltwise backward");
		sum_rows(ab, dx, nr, s);
	}
	for (int64_t o = 0; o < ab->c; o++)
		bf16_or_f32_st(a[3], o, (float)s[o], ab->db16);
}

void cpu_act_bias_destroy(CpuActBias *ab)
{
	if (!ab)
		return;
	for (int b = 0; b < 2; b++) {
		Eltwise *e = &ab->e[b];
		if (!e->prim)
			continue;
		dnnl_primitive_destroy(e->prim);
		dnnl_memory_destroy(e->saved);
		dnnl_memory_destroy(e->dy);
		dnnl_memory_destroy(e->dx);
		if (e->pad)
			dnnl_memory_destroy(e->pad);
	}
	free(ab);
}
