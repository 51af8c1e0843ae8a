/*
 * cpu/kernels.c - the kernels of the CPU backend (its table's kernels
 * group): every op of ops.def, forward and backward, as a oneDNN
 * primitive or as plain C.
 *
 * A kernel is made once, from its description (autotm/rt.h), and launched
 * many times on tensor addresses. For a oneDNN op, making it means
 * building the op descriptor, the primitive descriptor (with the forward
 * one as the hint that backward primitives need) and the primitive, and
 * one dnnl_memory_t per argument without a buffer; a launch points each
 * memory at the address generated code passes (dnnl_memory_set_data_handle)
 * and executes. Every tensor is in plain row-major layout - nchw, nc, oihw
 * (goihw with groups), x - because the memory plan gives each tensor one
 * contiguous place that other kernels and moves read as such. Only inside
 * a convolution kernel may oneDNN have its way: it picks blocked layouts
 * for its fastest implementations, and the kernel reorders its arguments
 * into and out of a scratch buffer shared by all kernels (see make_conv).
 *
 * Every byte a kernel needs beside its arguments is in that one scratch
 * buffer, so that the fast tier's use is the pool plus the scratch and no
 * more: the reordered arguments, private buffers (a primitive's
 * workspace, the loss's per-row sums), and oneDNN's own scratchpad, which
 * every primitive is made to take from us (dnnl_scratchpad_mode_user)
 * instead of allocating it. A kernel's part of the buffer is
 * cpu_kernel_scratch(); the buffer is the largest part, since kernels
 * run one at a time. The profiler records each kernel's part, and the
 * compiler counts the largest against the fast tier's limit.
 *
 * Plain C where oneDNN has no primitive with our semantics: maxpool
 * backward (the gradient goes to each window's FIRST maximum, which the
 * interpreter defines and oneDNN's workspace does not promise), bias
 * gradient, dropout (its mask is a hash of seed, step and index, shared
 * with the interpreter), slice, reshape, the losses and their gradients
 * (cpu/xent.c, sums in double), the gradients' norm and the updates (in place, base/optim.h);
 * and plain C where oneDNN's primitive is slow on our plain layouts: batch
 * normalisation (cpu/batchnorm.c). Those loops are written so that gcc
 * vectorises them (contiguous inner loops, `omp simd` for the reductions)
 * and split across the OpenMP threads when large.
 *
 * Kernels are deterministic: with the same thread count a kernel gives
 * the same bits wherever its tensors are (no partial sums combined in the
 * order threads finish), so placements that differ only in moves train
 * identically.
 *
 * A program in bf16 (autotmc --precision bf16) has arguments in
 * bfloat16 (rt_arg_bf16): oneDNN primitives take them as they are
 * (dnnl_bf16: products accumulate in float32, the outputs are rounded
 * once); a plain-C kernel runs on float32 copies in the scratch and
 * rounds what it writes (run_widened), which is exactly the
 * interpreter's bf16; cast converts.
 *
 * The reference for every kernel is compiler/interp/interp.c; the unit test
 * tests/unit/test-runtime-ops.c checks each against it.
 */
#include "cpu.h"

#include <math.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotm/random.h"
#include "bf16.h"      /* base/ */
#include "layernorm.h" /* base/ */

/* Plain-C loops over fewer elements than this run on one thread. */
enum { PAR_MIN = 1 << 15 };
/* oneDNN arguments of one kernel at most: tensors plus private buffers and the scratchpad. */
enum { MAX_DNNL_ARGS = RT_MAX_ARGS + 4 };

/*
 * The backend's state: one engine and one stream for every kernel, and
 * the scratch memory every kernel's reordered arguments share (kernels run
 * one at a time, so one buffer the size of the largest need serves all).
 */
typedef struct CpuState {
	dnnl_engine_t engine;        /* the CPU */
	dnnl_stream_t stream;        /* in-order stream kernels execute on */
	dnnl_primitive_attr_t attr;  /* every primitive's: the scratchpad is ours (user mode) */
	void *scratch;               /* the scratch of the kernel running */
	size_t scratch_size;         /* its size: the most any kernel needs */
} CpuState;

/*
 * An argument the primitive wants in another layout than the plain one
 * generated code passes: a private buffer in the primitive's layout and a
 * reorder between it and the tensor, run before the primitive for an
 * input and after it for an output.
 */
typedef struct Reorder {
	dnnl_primitive_t prim;  /* the reorder */
	dnnl_memory_t user;     /* the tensor, plain (its address is set at launch) */
	dnnl_memory_t inner;    /* the buffer in the primitive's layout (in the shared scratch) */
	size_t offset;          /* where that buffer starts in the scratch */
	dnnl_memory_t pad;      /* the reorder's scratchpad (at the kernel's pad offset), or NULL */
	int from;               /* index of the tensor in rt_launch's args */
	bool output;            /* reorder after the primitive (inner -> user) */
} Reorder;

/* Where a oneDNN argument's address comes from at launch (CpuKernel.from). */
enum { FROM_SCRATCH = -1 }; /* the scratch, at CpuKernel.at (>= 0: that tensor of rt_launch's args) */

/* A kernel: a oneDNN primitive and its arguments, or a plain-C op. */
typedef struct CpuKernel {
	int32_t id;                           /* the id generated code launches it by */
	RtOp op;                              /* what it computes */
	int64_t desc[RT_DESC_LEN];            /* its description (plain-C kernels read it at launch) */
	dnnl_primitive_t prim;                /* the primitive; NULL for a plain-C kernel */
	int nargs;                            /* entries in args */
	dnnl_exec_arg_t args[MAX_DNNL_ARGS];  /* the primitive's arguments (DNNL_ARG_*, memory) */
	int from[MAX_DNNL_ARGS];              /* index in rt_launch's args of each argument's
	                                         address, or FROM_SCRATCH */
	size_t at[MAX_DNNL_ARGS];             /* FROM_SCRATCH: the offset in the scratch */
	size_t zero[MAX_DNNL_ARGS];           /* FROM_SCRATCH: bytes zeroed before each launch */
	Reorder reorders[RT_MAX_ARGS];        /* arguments kept in the primitive's own layout */
	int nreorders;                        /* entries in reorders */
	size_t scratch;                       /* bytes of the scratch it uses */
	size_t reorder_pad;                   /* the largest scratchpad of its reorders */
	size_t pad_at;                        /* offset of the scratchpads (the primitive's, the reorders') */
	size_t rowloss_at;                    /* softmax_crossentropy: offset of its rows' losses */
	size_t attn_at;                       /* attention(_bwd): offset of its threads' blocks; the fused head's block */
	int64_t block_rows;                   /* dense_crossentropy_ids_grad: the rows of a block */
	CpuHead *head;                        /* and in bf16, its matmul primitives (cpu/head.c) */
	CpuActBias *actbias;                  /* act_bias_grad: its blocks' primitives (cpu/actbias.c) */
	bool widen;                           /* plain C with bf16 arguments: run on float32 copies */
	size_t wide_at[RT_MAX_ARGS];          /* widen: the offset of each bf16 argument's copy */
	char impl[64];                        /* implementation, for --profile-kernels */
} CpuKernel;

/* ---- checking oneDNN calls ---------------------------------------------- */

/* The kernel being created, named in error messages. */
static int32_t creating_id = -1;
static RtOp creating_op;

static void dnnl_check(dnnl_status_t st, const char *what, const char *file, int line)
{
	if (st == dnnl_success)
		return;
	if (creating_id >= 0)
		rt_fatal("%s:%d: %s failed: %s (creating kernel %d, %s)", file, line, what, dnnl_status2str(st),
		         creating_id, op_name(creating_op));
	rt_fatal("%s:%d: %s failed: %s", file, line, what, dnnl_status2str(st));
}
#define DNNL_CHECK(call) dnnl_check((call), #call, __FILE__, __LINE__)

/* ---- reading descriptions ------------------------------------------------- */

static double attr_f64(const int64_t *desc, int field)
{
	double v;
	memcpy(&v, &desc[field], sizeof v);
	return v;
}

static int64_t arg_elems(const int64_t *desc, int i)
{
	int64_t n = 1;
	for (int64_t d = 0; d < RT_ARG_NDIM(desc, i); d++)
		n *= RT_ARG_DIM(desc, i, d);
	return n;
}

/* Dimension d of argument i, 1 past its last dimension. */
static int64_t dim_or_1(const int64_t *desc, int i, int d)
{
	return d < RT_ARG_NDIM(desc, i) ? RT_ARG_DIM(desc, i, d) : 1;
}

/* Elements after dimension `from` of argument i (H * W for nchw and from = 2). */
static int64_t inner_elems(const int64_t *desc, int i, int from)
{
	int64_t n = 1;
	for (int64_t d = from; d < RT_ARG_NDIM(desc, i); d++)
		n *= RT_ARG_DIM(desc, i, d);
	return n;
}

/* ---- memory descriptors (all plain row-major, f32 or bf16) ---------------- */

/* The element type of argument i. */
static dnnl_data_type_t arg_dt(const int64_t *desc, int i)
{
	return rt_arg_bf16(desc, i) ? dnnl_bf16 : dnnl_f32;
}

static dnnl_memory_desc_t md_dims(int ndim, const int64_t *dims, dnnl_data_type_t dt)
{
	static const dnnl_format_tag_t tag[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd,
	                                        dnnl_abcde};
	dnnl_memory_desc_t md;
	dnnl_dims_t d;
	if (ndim < 1 || ndim > 5)
		RT_ICE("a tensor of %d dimensions", ndim);
	for (int i = 0; i < ndim; i++)
		d[i] = dims[i];
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, ndim, d, dt, tag[ndim]));
	return md;
}

/* Argument i as it is: plain, or channel-blocked (nChw16c: autotm/rt.h's rt_arg_blocked). */
static dnnl_memory_desc_t md_arg(const int64_t *desc, int i)
{
	int64_t dims[RT_MAX_DIMS];
	int ndim = (int)RT_ARG_NDIM(desc, i);
	for (int d = 0; d < ndim; d++)
		dims[d] = RT_ARG_DIM(desc, i, d);
	if (!rt_arg_blocked(desc, i))
		return md_dims(ndim, dims, arg_dt(desc, i));
	if (ndim != 4 || dims[1] % 16 != 0)
		RT_ICE("kernel %d (%s): argument %d is blocked but not [N, C, H, W] with C a multiple of 16", creating_id,
		       op_name(creating_op), i);
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {dims[0], dims[1], dims[2], dims[3]};
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, 4, d, arg_dt(desc, i), dnnl_aBcd16b));
	return md;
}

/* Argument i as one dimension (elementwise ops). */
static dnnl_memory_desc_t md_flat(const int64_t *desc, int i)
{
	int64_t n = arg_elems(desc, i);
	return md_dims(1, &n, arg_dt(desc, i));
}

/* Convolution weights [O, C/g, kh, kw] of argument i, as [g, O/g, C/g, kh, kw] with groups. */
static dnnl_memory_desc_t md_conv_weights(const int64_t *desc, int i)
{
	int64_t g = desc[RT_D_GROUPS] > 1 ? desc[RT_D_GROUPS] : 1;
	if (g == 1)
		return md_arg(desc, i);
	int64_t dims[5] = {g, RT_ARG_DIM(desc, i, 0) / g, RT_ARG_DIM(desc, i, 1), RT_ARG_DIM(desc, i, 2),
	                   RT_ARG_DIM(desc, i, 3)};
	return md_dims(5, dims, arg_dt(desc, i));
}

/* Window geometry: strides, kernel, dilation (none), padding (the same on both sides). */
typedef struct Window {
	dnnl_dims_t strides, kernel, dilation, pad_l, pad_r;
} Window;

static Window window(const int64_t *desc)
{
	Window w = {
		.strides = {desc[RT_D_SH], desc[RT_D_SW]},
		.kernel = {desc[RT_D_KH], desc[RT_D_KW]},
		.dilation = {0, 0},
		.pad_l = {desc[RT_D_PH], desc[RT_D_PW]},
		.pad_r = {desc[RT_D_PH], desc[RT_D_PW]},
	};
	return w;
}

/* ---- building oneDNN kernels ------------------------------------------------ */

/*
 * The attributes of a forward primitive of description d: the shared ones
 * (our scratchpad), with the fused activation (RT_D_ACT) as an eltwise
 * post-op if it has one, then, where sum is not NULL, a binary add of a
 * tensor of that description (a residual add fused in: its argument is
 * DNNL_ARG_ATTR_MULTIPLE_POST_OP(fwd_sum_index) | DNNL_ARG_SRC_1): then a
 * copy, which the caller destroys (free_attr).
 */
static dnnl_primitive_attr_t fwd_attr_sum(CpuState *s, const int64_t *d, const dnnl_memory_desc_t *sum)
{
	Act act = (Act)d[RT_D_ACT];
	if (act == ACT_NONE && !sum)
		return s->attr;
	dnnl_alg_kind_t alg = act == ACT_RELU ? dnnl_eltwise_relu : act == ACT_SIGMOID ? dnnl_eltwise_logistic
	                    : act == ACT_TANH ? dnnl_eltwise_tanh : dnnl_alg_kind_undef;
	if (act != ACT_NONE && alg == dnnl_alg_kind_undef)
		RT_ICE("kernel %d (%s): no post-op for the fused %s", creating_id, op_name(creating_op), act_name(act));
	dnnl_primitive_attr_t attr;
	dnnl_post_ops_t po;
	DNNL_CHECK(dnnl_primitive_attr_clone(&attr, s->attr));
	DNNL_CHECK(dnnl_post_ops_create(&po));
	if (act != ACT_NONE)
		DNNL_CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, alg, 0.0f, 0.0f));
	if (sum)
		DNNL_CHECK(dnnl_post_ops_append_binary(po, dnnl_binary_add, sum));
	DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
	DNNL_CHECK(dnnl_post_ops_destroy(po));
	return attr;
}

static dnnl_primitive_attr_t fwd_attr(CpuState *s, const int64_t *d)
{
	return fwd_attr_sum(s, d, NULL);
}

/* The index among fwd_attr_sum's post-ops of its binary add. */
static int fwd_sum_index(const int64_t *d)
{
	return d[RT_D_ACT] != ACT_NONE;
}

static void free_attr(CpuState *s, dnnl_primitive_attr_t attr)
{
	if (attr != s->attr)
		DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
}

/* A primitive descriptor with our scratchpad (hint: the forward one a backward primitive needs, or NULL). */
static dnnl_primitive_desc_t make_pd(CpuState *s, const void *op_desc, const_dnnl_primitive_desc_t hint)
{
	dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, op_desc, s->attr, s->engine, hint));
	return pd;
}

/* `size` bytes of the kernel's part of the scratch, 64-byte aligned: their offset. */
static size_t scratch_take(CpuKernel *k, size_t size)
{
	size_t at = k->scratch;
	k->scratch += (size + 63) / 64 * 64;
	return at;
}

/* The scratchpad oneDNN asks of pd (its bytes; 0: none). */
static size_t scratchpad_size(const_dnnl_primitive_desc_t pd)
{
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	return md ? dnnl_memory_desc_get_size(md) : 0;
}

/* A memory of pd's scratchpad without a buffer (set at launch), or NULL when it needs none. */
static dnnl_memory_t scratchpad_memory(CpuState *s, const_dnnl_primitive_desc_t pd)
{
	if (scratchpad_size(pd) == 0)
		return NULL;
	dnnl_memory_t m;
	DNNL_CHECK(dnnl_memory_create(&m, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0), s->engine,
	                              DNNL_MEMORY_NONE));
	return m;
}

/*
 * Argument `arg` of the primitive is rt_launch's argument `from`, whose
 * layout is `plain` (NULL: the primitive was made with plain layouts
 * already). When the primitive chose another layout, it gets a private
 * buffer in that layout and a reorder from or to the tensor.
 */
static void bind_as(CpuState *s, CpuKernel *k, const_dnnl_primitive_desc_t pd, int arg, int from,
                    const dnnl_memory_desc_t *plain)
{
	if (k->nargs == MAX_DNNL_ARGS)
		RT_ICE("kernel %d: too many oneDNN arguments", k->id);
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
	if (!md || dnnl_memory_desc_get_size(md) == 0)
		RT_ICE("kernel %d (%s): the primitive takes no argument %d", k->id, op_name(k->op), arg);
	dnnl_memory_t m;
	if (!plain || dnnl_memory_desc_equal(md, plain)) {
		DNNL_CHECK(dnnl_memory_create(&m, md, s->engine, DNNL_MEMORY_NONE));
		k->args[k->nargs] = (dnnl_exec_arg_t){arg, m};
		k->from[k->nargs++] = from;
		return;
	}
	Reorder *r = &k->reorders[k->nreorders++];
	r->from = from;
	r->output = arg == DNNL_ARG_DST || arg == DNNL_ARG_DIFF_SRC || arg == DNNL_ARG_DIFF_WEIGHTS;
	r->offset = scratch_take(k, dnnl_memory_desc_get_size(md));
	DNNL_CHECK(dnnl_memory_create(&r->user, plain, s->engine, DNNL_MEMORY_NONE));
	DNNL_CHECK(dnnl_memory_create(&r->inner, md, s->engine, DNNL_MEMORY_NONE));
	dnnl_primitive_desc_t rpd;
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, r->output ? md : plain, s->engine, r->output ? plain : md,
	                                              s->engine, s->attr));
	DNNL_CHECK(dnnl_primitive_create(&r->prim, rpd));
	r->pad = scratchpad_memory(s, rpd);
	if (scratchpad_size(rpd) > k->reorder_pad)
		k->reorder_pad = scratchpad_size(rpd);
	DNNL_CHECK(dnnl_primitive_desc_destroy(rpd));
	k->args[k->nargs] = (dnnl_exec_arg_t){arg, r->inner};
	k->from[k->nargs++] = -1;
}

/* Argument `arg` of the primitive (made with plain layouts) is rt_launch's argument `from`. */
static void bind(CpuState *s, CpuKernel *k, const_dnnl_primitive_desc_t pd, int arg, int from)
{
	bind_as(s, k, pd, arg, from, NULL);
}

/* Argument `arg` of the primitive, in the scratch at `at`: `zero` bytes of it zeroed before each launch. */
static void bind_scratch(CpuState *s, CpuKernel *k, const dnnl_memory_desc_t *md, int arg, size_t at, size_t zero)
{
	if (k->nargs == MAX_DNNL_ARGS)
		RT_ICE("kernel %d: too many oneDNN arguments", k->id);
	dnnl_memory_t m;
	DNNL_CHECK(dnnl_memory_create(&m, md, s->engine, DNNL_MEMORY_NONE));
	k->args[k->nargs] = (dnnl_exec_arg_t){arg, m};
	k->from[k->nargs] = FROM_SCRATCH;
	k->at[k->nargs] = at;
	k->zero[k->nargs++] = zero;
}

/*
 * Argument `arg` is a buffer of its own in the scratch, if the primitive
 * has one (workspace, unused shift). One the primitive reads (`read`) is
 * zeroed before each launch, since the scratch holds other kernels' bytes;
 * one it writes is not.
 */
static void bind_private(CpuState *s, CpuKernel *k, const_dnnl_primitive_desc_t pd, int arg, bool read)
{
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
	size_t size = md ? dnnl_memory_desc_get_size(md) : 0;
	if (size > 0)
		bind_scratch(s, k, md, arg, scratch_take(k, size), read ? size : 0);
}

/*
 * Create the primitive of pd (which is then released) and name the
 * implementation. Its scratchpad and its reorders' follow the rest of
 * the kernel's scratch, sharing one place: the reorders run before and
 * after the primitive, never with it.
 */
static void finish(CpuState *s, CpuKernel *k, dnnl_primitive_desc_t pd)
{
	const char *impl = NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
		impl = "?";
	snprintf(k->impl, sizeof k->impl, "oneDNN %s%s", impl, k->nreorders ? " +reorders" : "");
	size_t pad = scratchpad_size(pd);
	k->pad_at = scratch_take(k, pad > k->reorder_pad ? pad : k->reorder_pad);
	if (pad > 0)
		bind_scratch(s, k, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0), DNNL_ARG_SCRATCHPAD,
		             k->pad_at, 0);
	DNNL_CHECK(dnnl_primitive_create(&k->prim, pd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
}

/*
 * Convolutions. oneDNN's fastest convolutions work on blocked layouts
 * (nChw8c, nChw16c, OIhw8i8o ...), so the primitive is first asked for
 * with every layout left to it (format_tag_any); the tensors it wants in
 * another layout than their plain one get a private buffer and a reorder
 * (bind_as). If that choice is only the reference implementation, or
 * AUTOTM_CONV_LAYOUT=plain is set, the plain layouts are used directly.
 */
static dnnl_memory_desc_t md_any(const dnnl_memory_desc_t *plain)
{
	dnnl_memory_desc_t md;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, plain->ndims, plain->dims, plain->data_type, dnnl_format_tag_any));
	return md;
}

/* Which of the three convolution ops a kernel is (cpu_create tells make_conv). */
typedef enum ConvDir {
	CONV_FWD,        /* conv2d */
	CONV_BWD_DATA,   /* conv2d_bwd_data */
	CONV_BWD_FILTER, /* conv2d_bwd_filter */
} ConvDir;

/* The plain layouts of a convolution's tensors: x, weights, y (dx, dweight, dy for backward ops). */
typedef struct ConvMds {
	dnnl_memory_desc_t x, w, b, y; /* plain */
	bool bias;                     /* forward with a bias */
} ConvMds;

static ConvMds conv_mds(const int64_t *d, ConvDir dir)
{
	ConvMds m = {0};
	switch (dir) {
	case CONV_FWD:
		m.x = md_arg(d, 0), m.w = md_conv_weights(d, 1), m.y = md_arg(d, (int)d[RT_D_NIN]);
		m.bias = d[RT_D_NIN] == 3;
		if (m.bias)
			m.b = md_arg(d, 2);
		break;
	case CONV_BWD_DATA: /* dy, weight -> dx */
		m.x = md_arg(d, 2), m.w = md_conv_weights(d, 1), m.y = md_arg(d, 0);
		break;
	case CONV_BWD_FILTER: /* x, dy -> dweight */
		m.x = md_arg(d, 0), m.w = md_conv_weights(d, 2), m.y = md_arg(d, 1);
		break;
	}
	return m;
}

/* The primitive descriptor of a convolution op, with free layouts or plain ones. */
static dnnl_primitive_desc_t conv_pd(CpuState *s, const int64_t *d, ConvDir dir, const ConvMds *p, bool any)
{
	dnnl_memory_desc_t x = any ? md_any(&p->x) : p->x, w = any ? md_any(&p->w) : p->w;
	dnnl_memory_desc_t y = any ? md_any(&p->y) : p->y;
	Window g = window(d);
	dnnl_convolution_desc_t fd, bd;
	DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &x, &w,
	                                              p->bias ? &p->b : NULL, &y, g.strides, g.pad_l, g.pad_r));
	dnnl_status_t st;
	dnnl_primitive_desc_t pd, hint;
	if (dir == CONV_FWD) {
		dnnl_primitive_attr_t attr = fwd_attr(s, d);
		st = dnnl_primitive_desc_create(&pd, &fd, attr, s->engine, NULL);
		free_attr(s, attr);
	} else {
		if (dir == CONV_BWD_DATA)
			DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &x, &w, &y,
			                                                    g.strides, g.pad_l, g.pad_r));
		else
			DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &x, &w, NULL,
			                                                       &y, g.strides, g.pad_l, g.pad_r));
		hint = make_pd(s, &fd, NULL);
		st = dnnl_primitive_desc_create(&pd, &bd, s->attr, s->engine, hint);
		DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	}
	if (any && st == dnnl_unimplemented)
		return NULL; /* then plain layouts */
	DNNL_CHECK(st);
	return pd;
}

static bool use_blocked_layouts(void)
{
	const char *e = getenv("AUTOTM_CONV_LAYOUT");
	return !e || strcmp(e, "plain") != 0;
}

/* conv2d: x, weight[, bias] -> y;  conv2d_bwd_data: dy, weight -> dx;  conv2d_bwd_filter: x, dy -> dweight */
static void make_conv(CpuState *s, CpuKernel *k, ConvDir dir)
{
	const int64_t *d = k->desc;
	ConvMds p = conv_mds(d, dir);
	dnnl_primitive_desc_t pd = use_blocked_layouts() ? conv_pd(s, d, dir, &p, true) : NULL;
	const char *impl = NULL;
	if (pd && (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
	           strstr(impl, "ref"))) {
		DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
		pd = NULL;
	}
	if (!pd)
		pd = conv_pd(s, d, dir, &p, false);
	int nin = (int)d[RT_D_NIN];
	switch (dir) {
	case CONV_FWD:
		bind_as(s, k, pd, DNNL_ARG_SRC, 0, &p.x);
		bind_as(s, k, pd, DNNL_ARG_WEIGHTS, 1, &p.w);
		if (p.bias)
			bind_as(s, k, pd, DNNL_ARG_BIAS, 2, &p.b);
		bind_as(s, k, pd, DNNL_ARG_DST, nin, &p.y);
		break;
	case CONV_BWD_DATA:
		bind_as(s, k, pd, DNNL_ARG_DIFF_DST, 0, &p.y);
		bind_as(s, k, pd, DNNL_ARG_WEIGHTS, 1, &p.w);
		bind_as(s, k, pd, DNNL_ARG_DIFF_SRC, 2, &p.x);
		break;
	case CONV_BWD_FILTER:
		bind_as(s, k, pd, DNNL_ARG_SRC, 0, &p.x);
		bind_as(s, k, pd, DNNL_ARG_DIFF_DST, 1, &p.y);
		bind_as(s, k, pd, DNNL_ARG_DIFF_WEIGHTS, 2, &p.w);
		break;
	}
	finish(s, k, pd);
}

/* dense as an inner product: x [N, I], weight [O, I] (oi), bias [O] -> y [N, O] */
/* Argument i [..., K] as [elements / K, K] (dense over the last dimension). */
static dnnl_memory_desc_t md_rows(const int64_t *desc, int i)
{
	int64_t k = RT_ARG_DIM(desc, i, RT_ARG_NDIM(desc, i) - 1);
	return md_dims(2, (int64_t[]){arg_elems(desc, i) / k, k}, arg_dt(desc, i));
}

static void dense_fwd_desc(const int64_t *d, dnnl_inner_product_desc_t *ip, int x, int w, int b, int y)
{
	dnnl_memory_desc_t xm = md_rows(d, x), wm = md_arg(d, w), ym = md_rows(d, y), bm;
	if (b >= 0)
		bm = md_arg(d, b);
	DNNL_CHECK(dnnl_inner_product_forward_desc_init(ip, dnnl_forward_training, &xm, &wm, b >= 0 ? &bm : NULL, &ym));
}

/* dense: x, weight[, bias[, sum]] -> y = act(x weight^T + bias) + sum (a residual add fused in: fuse.h) */
static void make_dense(CpuState *s, CpuKernel *k)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN];
	dnnl_inner_product_desc_t ip;
	dense_fwd_desc(d, &ip, 0, 1, nin >= 3 ? 2 : -1, nin);
	dnnl_memory_desc_t sum;
	if (nin == 4)
		sum = md_rows(d, 3);
	dnnl_primitive_attr_t attr = fwd_attr_sum(s, d, nin == 4 ? &sum : NULL);
	dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, &ip, attr, s->engine, NULL));
	free_attr(s, attr);
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_WEIGHTS, 1);
	if (nin >= 3)
		bind(s, k, pd, DNNL_ARG_BIAS, 2);
	if (nin == 4)
		bind_as(s, k, pd, DNNL_ARG_ATTR_MULTIPLE_POST_OP(fwd_sum_index(d)) | DNNL_ARG_SRC_1, 3, NULL);
	bind(s, k, pd, DNNL_ARG_DST, nin);
	finish(s, k, pd);
}

/* dense_bwd_data: dy [N, O], weight [O, I] -> dx [N, I] */
static void make_dense_bwd_data(CpuState *s, CpuKernel *k)
{
	const int64_t *d = k->desc;
	dnnl_inner_product_desc_t fd, bd;
	dense_fwd_desc(d, &fd, 2, 1, -1, 0);
	dnnl_primitive_desc_t hint = make_pd(s, &fd, NULL);
	dnnl_memory_desc_t dx = md_rows(d, 2), w = md_arg(d, 1), dy = md_rows(d, 0);
	DNNL_CHECK(dnnl_inner_product_backward_data_desc_init(&bd, &dx, &w, &dy));
	dnnl_primitive_desc_t pd = make_pd(s, &bd, hint);
	DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	bind(s, k, pd, DNNL_ARG_DIFF_DST, 0);
	bind(s, k, pd, DNNL_ARG_WEIGHTS, 1);
	bind(s, k, pd, DNNL_ARG_DIFF_SRC, 2);
	finish(s, k, pd);
}

/* dense_bwd_weight: x [N, I], dy [N, O] -> dweight [O, I] */
static void make_dense_bwd_weight(CpuState *s, CpuKernel *k)
{
	const int64_t *d = k->desc;
	dnnl_inner_product_desc_t fd, bd;
	dense_fwd_desc(d, &fd, 0, 2, -1, 1);
	dnnl_primitive_desc_t hint = make_pd(s, &fd, NULL);
	dnnl_memory_desc_t x = md_rows(d, 0), dw = md_arg(d, 2), dy = md_rows(d, 1);
	DNNL_CHECK(dnnl_inner_product_backward_weights_desc_init(&bd, &x, &dw, NULL, &dy));
	dnnl_primitive_desc_t pd = make_pd(s, &bd, hint);
	DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_DIFF_DST, 1);
	bind(s, k, pd, DNNL_ARG_DIFF_WEIGHTS, 2);
	finish(s, k, pd);
}

/*
 * Pooling forward of x (argument x) into y with algorithm alg. Global
 * pooling has a window the size of the image. Max pooling runs as
 * inference (no workspace: its backward pass is plain C); average pooling
 * counts the padding, so the divisor is always kh * kw as in the
 * interpreter.
 */
static void pool_fwd_desc(const int64_t *d, dnnl_pooling_v2_desc_t *pd, dnnl_alg_kind_t alg, bool global, int x,
                          int y)
{
	dnnl_memory_desc_t xm = md_arg(d, x), ym = md_arg(d, y);
	Window g = window(d);
	if (global)
		g = (Window){.strides = {1, 1}, .kernel = {RT_ARG_DIM(d, x, 2), RT_ARG_DIM(d, x, 3)}};
	dnnl_prop_kind_t prop = alg == dnnl_pooling_max ? dnnl_forward_inference : dnnl_forward_training;
	DNNL_CHECK(dnnl_pooling_v2_forward_desc_init(pd, prop, alg, &xm, &ym, g.strides, g.kernel, g.dilation, g.pad_l,
	                                             g.pad_r));
}

/* maxpool, avgpool, globalavgpool: x -> y */
static void make_pool(CpuState *s, CpuKernel *k, dnnl_alg_kind_t alg, bool global)
{
	dnnl_pooling_v2_desc_t pdesc;
	pool_fwd_desc(k->desc, &pdesc, alg, global, 0, 1);
	dnnl_primitive_desc_t pd = make_pd(s, &pdesc, NULL);
	const char *impl = NULL;
	if (alg == dnnl_pooling_max && !rt_arg_blocked(k->desc, 0) &&
	    (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
	     strstr(impl, "simple") || strstr(impl, "ref"))) {
		DNNL_CHECK(dnnl_primitive_desc_destroy(pd)); /* its generic kernel: run_maxpool instead */
		return;
	}
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_DST, 1);
	bind_private(s, k, pd, DNNL_ARG_WORKSPACE, false);
	finish(s, k, pd);
}

/* avgpool_bwd, globalavgpool_bwd: dy -> dx */
static void make_pool_bwd(CpuState *s, CpuKernel *k, bool global)
{
	const int64_t *d = k->desc;
	dnnl_pooling_v2_desc_t fd, bd;
	pool_fwd_desc(d, &fd, dnnl_pooling_avg_include_padding, global, 1, 0);
	dnnl_primitive_desc_t hint = make_pd(s, &fd, NULL);
	dnnl_memory_desc_t dx = md_arg(d, 1), dy = md_arg(d, 0);
	DNNL_CHECK(dnnl_pooling_v2_backward_desc_init(&bd, dnnl_pooling_avg_include_padding, &dx, &dy, fd.strides,
	                                              fd.kernel, fd.dilation, fd.padding[0], fd.padding[1]));
	dnnl_primitive_desc_t pd = make_pd(s, &bd, hint);
	DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	bind(s, k, pd, DNNL_ARG_DIFF_DST, 0);
	bind(s, k, pd, DNNL_ARG_DIFF_SRC, 1);
	finish(s, k, pd);
}

/*
 * The oneDNN algorithm of an activation (base/activation.h), or
 * dnnl_alg_kind_undef where oneDNN has none with its semantics: the
 * kernels are then plain C (run_act, run_act_bwd). The algorithm's
 * backward pass must read what the gradient op is given (act_from): y
 * for the *_use_dst_for_bwd algorithms, x for the others.
 */
static dnnl_alg_kind_t eltwise_alg(Act a)
{
	switch (a) {
	case ACT_RELU:
		return dnnl_eltwise_relu_use_dst_for_bwd;
	case ACT_SIGMOID:
		return dnnl_eltwise_logistic_use_dst_for_bwd;
	case ACT_TANH:
		return dnnl_eltwise_tanh_use_dst_for_bwd;
	case ACT_GELU:
		return dnnl_eltwise_gelu_tanh;
	case ACT_RELU6: /* oneDNN's clip and hard* differ from PyTorch's gradients at the kinks */
	case ACT_HARDSIGMOID:
	case ACT_HARDSWISH:
	case ACT_SILU:
		return dnnl_alg_kind_undef;
	case ACT_NONE:
	case NUM_ACTS:
		break;
	}
	RT_ICE("kernel %d (%s): no activation (%d)", creating_id, op_name(creating_op), (int)a);
}

/* An activation op (relu, sigmoid, tanh, ...): x -> y */
static void make_eltwise(CpuState *s, CpuKernel *k)
{
	dnnl_alg_kind_t alg = eltwise_alg(op_info[k->op].act);
	if (alg == dnnl_alg_kind_undef)
		return; /* plain C */
	dnnl_eltwise_desc_t ed;
	dnnl_memory_desc_t x = md_flat(k->desc, 0);
	DNNL_CHECK(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training, alg, &x, 0.f, 0.f));
	dnnl_primitive_desc_t pd = make_pd(s, &ed, NULL);
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_DST, 1);
	finish(s, k, pd);
}

/* Its gradient (relu_bwd, sigmoid_bwd, tanh_bwd, ...): y or x (act_from), dy -> dx */
static void make_eltwise_bwd(CpuState *s, CpuKernel *k)
{
	Act a = op_info[k->op].act;
	dnnl_alg_kind_t alg = eltwise_alg(a);
	if (alg == dnnl_alg_kind_undef)
		return; /* plain C */
	dnnl_eltwise_desc_t fd, bd;
	dnnl_memory_desc_t saved = md_flat(k->desc, 0), dy = md_flat(k->desc, 1);
	DNNL_CHECK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, alg, &saved, 0.f, 0.f));
	dnnl_primitive_desc_t hint = make_pd(s, &fd, NULL);
	DNNL_CHECK(dnnl_eltwise_backward_desc_init(&bd, alg, &dy, &saved, 0.f, 0.f));
	dnnl_primitive_desc_t pd = make_pd(s, &bd, hint);
	DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	bind(s, k, pd, act_from(a) == ACT_FROM_Y ? DNNL_ARG_DST : DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_DIFF_DST, 1);
	bind(s, k, pd, DNNL_ARG_DIFF_SRC, 2);
	finish(s, k, pd);
}

/*
 * matmul: a [..., M, K], b [..., K, N] -> c [..., M, N] = alpha op(a) op(b),
 * the leading dimensions as one batch dimension; a transposed operand is
 * read through its strides, alpha is the primitive's output scale.
 */
static void make_matmul(CpuState *s, CpuKernel *k)
{
	const int64_t *d = k->desc;
	int r = (int)RT_ARG_NDIM(d, 2) - 2;
	bool ta = d[RT_D_TRANS_A], tb = d[RT_D_TRANS_B];
	int64_t m = RT_ARG_DIM(d, 2, r), n = RT_ARG_DIM(d, 2, r + 1), kk = RT_ARG_DIM(d, 0, r + !ta);
	int64_t batch = arg_elems(d, 2) / (m * n);
	dnnl_memory_desc_t a, b, c;
	DNNL_CHECK(dnnl_memory_desc_init_by_strides(&a, 3, (dnnl_dims_t){batch, m, kk}, arg_dt(d, 0),
	                                            (dnnl_dims_t){m * kk, ta ? 1 : kk, ta ? m : 1}));
	DNNL_CHECK(dnnl_memory_desc_init_by_strides(&b, 3, (dnnl_dims_t){batch, kk, n}, arg_dt(d, 1),
	                                            (dnnl_dims_t){kk * n, tb ? 1 : n, tb ? kk : 1}));
	c = md_dims(3, (int64_t[]){batch, m, n}, arg_dt(d, 2));
	dnnl_matmul_desc_t md;
	DNNL_CHECK(dnnl_matmul_desc_init(&md, &a, &b, NULL, &c));
	dnnl_primitive_attr_t attr;
	DNNL_CHECK(dnnl_primitive_attr_clone(&attr, s->attr));
	float alpha = (float)attr_f64(d, RT_D_ALPHA);
	DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
	dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, &md, attr, s->engine, NULL));
	DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_WEIGHTS, 1);
	bind(s, k, pd, DNNL_ARG_DST, 2);
	finish(s, k, pd);
}

/* softmax over axis 1: x [N, C] -> y */
static void make_softmax(CpuState *s, CpuKernel *k)
{
	dnnl_softmax_desc_t sd;
	dnnl_memory_desc_t x = md_rows(k->desc, 0);
	DNNL_CHECK(dnnl_softmax_forward_desc_init(&sd, dnnl_forward_training, &x, 1));
	dnnl_primitive_desc_t pd = make_pd(s, &sd, NULL);
	bind(s, k, pd, DNNL_ARG_SRC, 0);
	bind(s, k, pd, DNNL_ARG_DST, 1);
	finish(s, k, pd);
}

/* softmax_bwd: y, dy -> dx */
static void make_softmax_bwd(CpuState *s, CpuKernel *k)
{
	dnnl_softmax_desc_t fd, bd;
	dnnl_memory_desc_t y = md_rows(k->desc, 0), dy = md_rows(k->desc, 1);
	DNNL_CHECK(dnnl_softmax_forward_desc_init(&fd, dnnl_forward_training, &y, 1));
	dnnl_primitive_desc_t hint = make_pd(s, &fd, NULL);
	DNNL_CHECK(dnnl_softmax_backward_desc_init(&bd, &dy, &y, 1));
	dnnl_primitive_desc_t pd = make_pd(s, &bd, hint);
	DNNL_CHECK(dnnl_primitive_desc_destroy(hint));
	bind(s, k, pd, DNNL_ARG_DST, 0);
	bind(s, k, pd, DNNL_ARG_DIFF_DST, 1);
	bind(s, k, pd, DNNL_ARG_DIFF_SRC, 2);
	finish(s, k, pd);
}

/* add: x1 + x2 + ... -> y (a sum primitive with unit scales) */
static void make_add(CpuState *s, CpuKernel *k)
{
	int n = (int)k->desc[RT_D_NIN];
	if (k->desc[RT_D_ACT] != ACT_NONE) { /* x1 + x2 with a fused relu (fuse.h): binary add, an eltwise post-op */
		if (n != 2)
			RT_ICE("kernel %d: an add of %d inputs with a fused activation", k->id, n);
		dnnl_memory_desc_t a = md_flat(k->desc, 0), b = md_flat(k->desc, 1), y = md_flat(k->desc, 2);
		dnnl_binary_desc_t bd;
		DNNL_CHECK(dnnl_binary_desc_init(&bd, dnnl_binary_add, &a, &b, &y));
		dnnl_primitive_attr_t attr = fwd_attr(s, k->desc);
		dnnl_primitive_desc_t pd;
		DNNL_CHECK(dnnl_primitive_desc_create(&pd, &bd, attr, s->engine, NULL));
		free_attr(s, attr);
		bind(s, k, pd, DNNL_ARG_SRC_0, 0);
		bind(s, k, pd, DNNL_ARG_SRC_1, 1);
		bind(s, k, pd, DNNL_ARG_DST, 2);
		finish(s, k, pd);
		return;
	}
	dnnl_memory_desc_t src[RT_MAX_ARGS], dst = md_flat(k->desc, n);
	float scales[RT_MAX_ARGS];
	for (int i = 0; i < n; i++) {
		src[i] = md_flat(k->desc, i);
		scales[i] = 1.0f;
	}
	dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_sum_primitive_desc_create(&pd, &dst, n, scales, src, s->attr, s->engine));
	for (int i = 0; i < n; i++)
		bind(s, k, pd, DNNL_ARG_MULTIPLE_SRC + i, i);
	bind(s, k, pd, DNNL_ARG_DST, n);
	finish(s, k, pd);
}

/*
 * An add of a float32 and a bf16 input into float32 (fusion's folded cast:
 * compiler/front/fuse.h), which oneDNN 2.6's sum runs by its reference
 * implementation, twice the time of the float32 sum: plain C instead
 * (run_mixed_add), the same float32 additions.
 */
static bool mixed_add(const int64_t *d)
{
	return d[RT_D_NIN] == 2 && d[RT_D_ACT] == ACT_NONE && rt_arg_bf16(d, 0) != rt_arg_bf16(d, 1) &&
	       !rt_arg_bf16(d, 2);
}

static void run_mixed_add(const int64_t *d, void *const *a)
{
	int b = rt_arg_bf16(d, 0) ? 0 : 1; /* the bf16 input */
	const uint16_t *x16 = a[b];
	const float *x32 = a[1 - b];
	float *y = a[2];
	int64_t n = arg_elems(d, 2);
#pragma omp parallel for simd if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		y[i] = x32[i] + bf16_to_f32(x16[i]);
}

/* concat: x1, x2, ... -> y along the axis */
static void make_concat(CpuState *s, CpuKernel *k)
{
	int n = (int)k->desc[RT_D_NIN];
	dnnl_memory_desc_t src[RT_MAX_ARGS], dst = md_arg(k->desc, n);
	for (int i = 0; i < n; i++)
		src[i] = md_arg(k->desc, i);
	dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_concat_primitive_desc_create(&pd, &dst, n, (int)k->desc[RT_D_AXIS], src, s->attr, s->engine));
	for (int i = 0; i < n; i++)
		bind(s, k, pd, DNNL_ARG_MULTIPLE_SRC + i, i);
	bind(s, k, pd, DNNL_ARG_DST, n);
	finish(s, k, pd);
}

/* ---- plain C kernels -------------------------------------------------------- */

/* An activation without a oneDNN algorithm: x -> y = act(x), in double as the interpreter */
static void run_act(const int64_t *d, void *const *a, Act act)
{
	const float *x = a[0];
	float *y = a[1];
	int64_t n = arg_elems(d, 0);
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		y[i] = (float)act_value(act, (double)x[i]);
}

/* Its gradient: y or x (act_from), dy -> dx */
static void run_act_bwd(const int64_t *d, void *const *a, Act act)
{
	const float *saved = a[0], *dy = a[1];
	float *dx = a[2];
	int64_t n = arg_elems(d, 0);
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		dx[i] = (float)act_grad(act, (double)saved[i], (double)dy[i]);
}

/* run_bias_grad of dy (float32 or bf16: in16, a constant where inlined) into db (bf16 where out16) */
static inline __attribute__((always_inline)) void bias_sums(const void *dy, void *db, int64_t nb, int64_t c,
                                                            int64_t inner, bool in16, bool out16)
{
	if (inner == 1) {
		/*
		 * [N, T, O] (a dense layer over the last dimension): a column of
		 * dy is strided by O, so columns go in blocks of a cache line,
		 * each row's block read whole; every column is summed in the
		 * same order as below (row by row, in double), so the result is
		 * the same to the bit
		 */
		enum { BLK = 16 };
#pragma omp parallel for if (nb * c > PAR_MIN)
		for (int64_t o0 = 0; o0 < c; o0 += BLK) {
			int64_t w = c - o0 < BLK ? c - o0 : BLK;
			double s[BLK] = {0};
			for (int64_t b = 0; b < nb; b++)
				for (int64_t j = 0; j < w; j++)
					s[j] += bf16_or_f32_ld(dy, b * c + o0 + j, in16);
			for (int64_t j = 0; j < w; j++)
				bf16_or_f32_st(db, o0 + j, (float)s[j], out16);
		}
		return;
	}
#pragma omp parallel for if (nb * c * inner > PAR_MIN)
	for (int64_t o = 0; o < c; o++) {
		double s = 0;
		for (int64_t b = 0; b < nb; b++) {
			int64_t at = (b * c + o) * inner;
			double rs = 0;
#pragma omp simd reduction(+ : rs)
			for (int64_t i = 0; i < inner; i++)
				rs += bf16_or_f32_ld(dy, at + i, in16);
			s += rs;
		}
		bf16_or_f32_st(db, o, (float)s, out16);
	}
}

/* cpu_blocked_channel_sums of block cb's 16 channels (of cbn blocks) into s[0..15]. */
static inline void block_channel_sums(const void *x, int64_t nb, int64_t cbn, int64_t inner, int64_t cb, bool bf16,
                                      double *s)
{
	for (int64_t b = 0; b < nb; b++) {
		double rs[16] = {0};
		for (int64_t i = 0, at = (b * cbn + cb) * inner * 16; i < inner; i++, at += 16)
#pragma omp simd
			for (int l = 0; l < 16; l++)
				rs[l] += bf16_or_f32_ld(x, at + l, bf16);
		for (int l = 0; l < 16; l++)
			s[l] += rs[l];
	}
}

void cpu_blocked_channel_sums(const void *x, int64_t nb, int64_t c, int64_t inner, bool bf16, double *s)
{
#pragma omp parallel for if (nb * c * inner > PAR_MIN)
	for (int64_t cb = 0; cb < c / 16; cb++)
		block_channel_sums(x, nb, c / 16, inner, cb, bf16, &s[cb * 16]);
}

/*
 * bias_grad: dy [N, O, ...] or [N, T, O] -> dbias [O], summed over every
 * dimension but the axis (0: 1), in double; dy and dbias float32 or bf16,
 * read and written natively (the same bits as on float32 copies).
 */
static void run_bias_grad(const int64_t *d, void *const *a)
{
	int64_t nb, c, inner;
	op_bias_dims(&RT_ARG_DIM(d, 0, 0), (int)RT_ARG_NDIM(d, 0), d[RT_D_AXIS], &nb, &c, &inner);
	bool out16 = rt_arg_bf16(d, 1); /* a store per column: not worth a specialisation */
	if (rt_arg_blocked(d, 0)) { /* [N, C, H, W] blocked, the bias of axis 1 (compiler/front/layout.c) */
#pragma omp parallel for if (nb * c * inner > PAR_MIN)
		for (int64_t cb = 0; cb < c / 16; cb++) {
			double s[16] = {0};
			block_channel_sums(a[0], nb, c / 16, inner, cb, rt_arg_bf16(d, 0), s);
			for (int l = 0; l < 16; l++)
				bf16_or_f32_st(a[1], cb * 16 + l, (float)s[l], out16);
		}
		return;
	}
	if (rt_arg_bf16(d, 0))
		bias_sums(a[0], a[1], nb, c, inner, true, out16);
	else
		bias_sums(a[0], a[1], nb, c, inner, false, out16);
}

/* The windows of max pooling over the planes of x (description d): sizes, strides, padding. */
typedef struct Windows {
	int64_t planes, h, w, ho, wo, kh, kw, sh, sw, ph, pw;
} Windows;

static Windows windows_of(const int64_t *d)
{
	return (Windows){RT_ARG_DIM(d, 0, 0) * RT_ARG_DIM(d, 0, 1), RT_ARG_DIM(d, 0, 2), RT_ARG_DIM(d, 0, 3),
	                 RT_ARG_DIM(d, 1, 2), RT_ARG_DIM(d, 1, 3), d[RT_D_KH], d[RT_D_KW], d[RT_D_SH], d[RT_D_SW],
	                 d[RT_D_PH], d[RT_D_PW]};
}

/*
 * The index in plane xp of window (i, j)'s first maximum in raster order
 * (padding excluded), or -1. The plane's elements are st apart: 1 plain,
 * 16 in a channel-blocked tensor (the index counts elements, not st).
 */
static inline int64_t window_max(const Windows *v, const float *xp, int64_t i, int64_t j, int64_t st)
{
	int64_t h0 = i * v->sh - v->ph, w0 = j * v->sw - v->pw, best = -1;
	int64_t h1 = h0 + v->kh < v->h ? h0 + v->kh : v->h, w1 = w0 + v->kw < v->w ? w0 + v->kw : v->w;
	for (int64_t r = h0 < 0 ? 0 : h0; r < h1; r++)
		for (int64_t q = w0 < 0 ? 0 : w0; q < w1; q++)
			if (best < 0 || xp[(r * v->w + q) * st] > xp[best * st])
				best = r * v->w + q;
	return best;
}

/*
 * window_max of a window inside the plane (no padding in it) of kh x kw
 * rows and columns: given as constants (3x3, 2x2), the loops unroll, and
 * without the padding's bounds in them they took a third of the time.
 */
static inline int64_t window_max_in(const Windows *v, const float *xp, int64_t i, int64_t j, int64_t kh, int64_t kw,
                                    int64_t st)
{
	int64_t at = (i * v->sh - v->ph) * v->w + j * v->sw - v->pw, best = at;
	float bv = xp[at * st];
	for (int64_t r = 0; r < kh; r++)
		for (int64_t q = 0; q < kw; q++) {
			float x = xp[(at + r * v->w + q) * st];
			bool take = x > bv;
			best = take ? at + r * v->w + q : best;
			bv = take ? x : bv;
		}
	return best;
}

/* Whether window (i, j) lies inside the plane. */
static inline bool window_inside(const Windows *v, int64_t i, int64_t j)
{
	int64_t h0 = i * v->sh - v->ph, w0 = j * v->sw - v->pw;
	return h0 >= 0 && w0 >= 0 && h0 + v->kh <= v->h && w0 + v->kw <= v->w;
}

/* window_max, by the unrolled loops where the window is inside the plane and 3x3 or 2x2. */
static inline __attribute__((always_inline)) int64_t window_argmax(const Windows *v, const float *xp, int64_t i,
                                                                   int64_t j, int64_t st)
{
	if (!window_inside(v, i, j))
		return window_max(v, xp, i, j, st);
	if (v->kh == 3 && v->kw == 3)
		return window_max_in(v, xp, i, j, 3, 3, st);
	if (v->kh == 2 && v->kw == 2)
		return window_max_in(v, xp, i, j, 2, 2, st);
	return window_max_in(v, xp, i, j, v->kh, v->kw, st);
}

/*
 * maxpool: x -> y, the largest element of each window, where oneDNN
 * offers only its generic implementation on the plain layout
 * (simple_nchw: 62 ms of an inception_v3 b8 step for its first pooling,
 * 147x147 planes).
 */
static void run_maxpool(const int64_t *d, void *const *a)
{
	const float *x = a[0];
	float *y = a[1];
	Windows v = windows_of(d);
#pragma omp parallel for if (v.planes * v.h * v.w > PAR_MIN)
	for (int64_t p = 0; p < v.planes; p++)
		for (int64_t i = 0; i < v.ho; i++)
			for (int64_t j = 0; j < v.wo; j++) {
				int64_t best = window_argmax(&v, x + p * v.h * v.w, i, j, 1);
				y[(p * v.ho + i) * v.wo + j] = best >= 0 ? x[p * v.h * v.w + best] : -INFINITY;
			}
}

/* One plane of maxpool_bwd in float32: dxp = each window's gradient (dyp, or bf16 dyh) at its first maximum in xp. */
static void maxpool_bwd_plane(const Windows *v, const float *xp, const float *dyp, const uint16_t *dyh, float *dxp)
{
	memset(dxp, 0, sizeof *dxp * (size_t)(v->h * v->w));
	for (int64_t i = 0; i < v->ho; i++)
		for (int64_t j = 0; j < v->wo; j++) {
			int64_t best = window_argmax(v, xp, i, j, 1);
			if (best >= 0)
				dxp[best] += dyh ? bf16_to_f32(dyh[i * v->wo + j]) : dyp[i * v->wo + j];
		}
}

/*
 * maxpool_bwd_plane for 16 planes side by side, a block of channel-blocked
 * float32 tensors: each window's cache lines serve its 16 channels.
 */
static void maxpool_bwd_block(const Windows *v, const float *xb, const float *dyb, float *dxb)
{
	memset(dxb, 0, sizeof *dxb * (size_t)(v->h * v->w * 16));
	for (int64_t i = 0; i < v->ho; i++)
		for (int64_t j = 0; j < v->wo; j++)
			for (int l = 0; l < 16; l++) {
				int64_t best = window_argmax(v, xb + l, i, j, 16);
				if (best >= 0)
					dxb[best * 16 + l] += dyb[(i * v->wo + j) * 16 + l];
			}
}

/* The float32 planes a maxpool_bwd with bf16 arguments takes of the scratch: x's and dx's, each thread's. */
static size_t maxpool_bwd_scratch(const int64_t *d)
{
	if (!rt_arg_bf16(d, 0))
		return 0;
	size_t hw = (size_t)(RT_ARG_DIM(d, 0, 2) * RT_ARG_DIM(d, 0, 3)), threads = (size_t)omp_get_max_threads();
	if (rt_arg_blocked(d, 0)) /* a block of 16 planes of x, dx and dy */
		return sizeof(float) * 16 * threads * (2 * hw + (size_t)(RT_ARG_DIM(d, 1, 2) * RT_ARG_DIM(d, 1, 3)));
	return sizeof(float) * 2 * threads * hw;
}

/* maxpool_bwd_block of bf16 blocks: x and dy widened into the thread's scratch (wide), dx summed there, rounded once. */
static void maxpool_bwd_block16(const Windows *v, const uint16_t *xb, const uint16_t *dyb, uint16_t *dxb, float *wide)
{
	int64_t n = v->h * v->w * 16, m = v->ho * v->wo * 16;
	float *xw = wide, *dxw = xw + n, *dyw = dxw + n;
	for (int64_t k = 0; k < n; k++)
		xw[k] = bf16_to_f32(xb[k]);
	for (int64_t k = 0; k < m; k++)
		dyw[k] = bf16_to_f32(dyb[k]);
	maxpool_bwd_block(v, xw, dyw, dxw);
	for (int64_t k = 0; k < n; k++)
		dxb[k] = bf16_from_f32(dxw[k]);
}

/*
 * maxpool_bwd: x, dy -> dx, each window's gradient to its first maximum
 * (raster order, padding excluded); a plane per iteration. In bf16 each
 * thread widens its plane of x into the scratch (wide: maxpool_bwd_scratch),
 * sums dx there in float32 and rounds it once, as the widened kernel did,
 * without widening the whole tensors first.
 */
static void run_maxpool_bwd(const int64_t *d, void *const *a, float *wide)
{
	Windows v = windows_of(d);
	bool bf16 = rt_arg_bf16(d, 0);
	int64_t hw = v.h * v.w;
	if (rt_arg_blocked(d, 0)) { /* blocks of 16 planes (compiler/front/layout.c) */
		int64_t ohw = v.ho * v.wo;
#pragma omp parallel for if (v.planes * hw > PAR_MIN)
		for (int64_t b = 0; b < v.planes / 16; b++) {
			if (bf16)
				maxpool_bwd_block16(&v, (const uint16_t *)a[0] + b * hw * 16, (const uint16_t *)a[1] + b * ohw * 16,
				                    (uint16_t *)a[2] + b * hw * 16, wide + (2 * hw + ohw) * 16 * omp_get_thread_num());
			else
				maxpool_bwd_block(&v, (const float *)a[0] + b * hw * 16, (const float *)a[1] + b * ohw * 16,
				                  (float *)a[2] + b * hw * 16);
		}
		return;
	}
#pragma omp parallel for if (v.planes * hw > PAR_MIN)
	for (int64_t p = 0; p < v.planes; p++) {
		if (!bf16) {
			maxpool_bwd_plane(&v, (const float *)a[0] + p * hw, (const float *)a[1] + p * v.ho * v.wo, NULL,
			                  (float *)a[2] + p * hw);
			continue;
		}
		float *xw = wide + 2 * hw * omp_get_thread_num(), *dxw = xw + hw;
		const uint16_t *xh = (const uint16_t *)a[0] + p * hw;
		uint16_t *dxh = (uint16_t *)a[2] + p * hw;
		for (int64_t k = 0; k < hw; k++)
			xw[k] = bf16_to_f32(xh[k]);
		maxpool_bwd_plane(&v, xw, NULL, (const uint16_t *)a[1] + p * v.ho * v.wo, dxw);
		for (int64_t k = 0; k < hw; k++)
			dxh[k] = bf16_from_f32(dxw[k]);
	}
}

/*
 * dropout, dropout_bwd: x[, sum] -> y, kept elements scaled by 1 / (1 - p);
 * the mask is (seed, step, index). With sum (a residual add fused in), y
 * is that plus sum: the dropped value rounded first to y's type (bf16
 * where widened: run_widened), as the add it replaces read it.
 */
static void run_dropout(const int64_t *d, void *const *a, uint64_t step)
{
	int nin = (int)d[RT_D_NIN];
	const float *x = a[0], *sum = nin == 2 ? a[1] : NULL;
	float *y = a[nin];
	int64_t n = arg_elems(d, 0);
	double p = attr_f64(d, RT_D_P);
	uint64_t seed = (uint64_t)d[RT_D_SEED];
	bool bf16 = rt_arg_bf16(d, nin);
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++) {
		float v = rt_dropout_keep(seed, step, (uint64_t)i, p) ? (float)((double)x[i] / (1.0 - p)) : 0.0f;
		if (sum)
			v = (bf16 ? bf16_round(v) : v) + sum[i];
		y[i] = v;
	}
}

/*
 * slice: x -> the piece at the offset along the axis; slice_bwd (bwd):
 * dy -> dx, zeros with dy at the offset (the whole is the input of one,
 * the output of the other)
 */
static void run_slice(const int64_t *d, void *const *a, bool bwd)
{
	const char *x = a[0];
	char *y = a[1];
	size_t es = rt_arg_bf16(d, 0) ? 2 : 4; /* bytes: x and y are of one type, which a copy keeps */
	int axis = (int)d[RT_D_AXIS], whole = bwd ? 1 : 0;
	int64_t outer, inner;
	op_axis_dims(&RT_ARG_DIM(d, whole, 0), (int)RT_ARG_NDIM(d, whole), axis, &outer, &inner);
	size_t len = es * (size_t)(RT_ARG_DIM(d, 1 - whole, axis) * inner);
	size_t stride = es * (size_t)(RT_ARG_DIM(d, whole, axis) * inner), at = es * (size_t)(d[RT_D_OFFSET] * inner);
	if (bwd)
		memset(y, 0, es * (size_t)arg_elems(d, 1)); /* +0.0 in either type */
	for (int64_t o = 0; o < outer; o++)
		if (bwd)
			memcpy(y + (size_t)o * stride + at, x + (size_t)o * len, len);
		else
			memcpy(y + (size_t)o * len, x + (size_t)o * stride + at, len);
}

/* transpose: x [N, A, B] -> y [N, B, A] */
static void run_transpose(const int64_t *d, void *const *a)
{
	const float *x = a[0];
	float *y = a[1];
	int64_t n = RT_ARG_DIM(d, 0, 0), ra = RT_ARG_DIM(d, 0, 1), cb = RT_ARG_DIM(d, 0, 2);
#pragma omp parallel for collapse(2) if (n * ra * cb > PAR_MIN)
	for (int64_t b = 0; b < n; b++)
		for (int64_t j = 0; j < cb; j++)
			for (int64_t i = 0; i < ra; i++)
				y[b * ra * cb + j * ra + i] = x[b * ra * cb + i * cb + j];
}

/* mean over dimension RT_D_AXIS of the whole (x for mean, dx for mean_bwd) as [outer, len, inner]; sums in double */
static void run_mean(const int64_t *d, void *const *a, bool bwd)
{
	int w = bwd ? 1 : 0, axis = (int)d[RT_D_AXIS];
	int64_t outer, inner, len = RT_ARG_DIM(d, w, axis);
	op_axis_dims(&RT_ARG_DIM(d, w, 0), (int)RT_ARG_NDIM(d, w), axis, &outer, &inner);
	const float *x = a[0];
	float *y = a[1];
#pragma omp parallel for if (outer * len * inner > PAR_MIN)
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			if (bwd) {
				for (int64_t k = 0; k < len; k++)
					y[(o * len + k) * inner + i] = (float)((double)x[o * inner + i] / (double)len);
				continue;
			}
			double sum = 0;
			for (int64_t k = 0; k < len; k++)
				sum += x[(o * len + k) * inner + i];
			y[o * inner + i] = (float)(sum / (double)len);
		}
}

/* mul: x [N C, inner] * s [N C, 1 or inner] -> y; mul_bwd_scale: dy, x -> ds, summed in double where s repeats */
static void run_mul(const int64_t *d, void *const *a, bool bwd)
{
	int xa = bwd ? 1 : 0, sa = bwd ? 2 : 1;
	int64_t rows = RT_ARG_DIM(d, xa, 0) * RT_ARG_DIM(d, xa, 1), inner = arg_elems(d, xa) / rows,
	        sin = arg_elems(d, sa) / rows;
	const float *u = a[0], *v = a[1];
	float *y = a[2];
#pragma omp parallel for if (rows * inner > PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		if (!bwd) {
			for (int64_t i = 0; i < inner; i++)
				y[r * inner + i] = u[r * inner + i] * v[r * sin + (sin == 1 ? 0 : i)];
			continue;
		}
		if (sin != 1) {
			for (int64_t i = 0; i < inner; i++)
				y[r * inner + i] = u[r * inner + i] * v[r * inner + i];
			continue;
		}
		double sum = 0;
		for (int64_t i = 0; i < inner; i++)
			sum += (double)u[r * inner + i] * v[r * inner + i];
		y[r] = (float)sum;
	}
}

/* clamp: x -> y in [lo, hi] (lo and hi as float, as torch.clamp on float32); clamp_bwd: x, dy -> dx, dy inside */
static void run_clamp(const int64_t *d, void *const *a, bool bwd)
{
	float lo = (float)attr_f64(d, RT_D_LO), hi = (float)attr_f64(d, RT_D_HI);
	const float *x = a[0];
	int64_t n = arg_elems(d, 0);
	if (!bwd) {
		float *y = a[1];
#pragma omp parallel for if (n > PAR_MIN)
		for (int64_t i = 0; i < n; i++)
			y[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
		return;
	}
	const float *dy = a[1];
	float *dx = a[2];
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		dx[i] = x[i] >= lo && x[i] <= hi ? dy[i] : 0;
}

/* broadcast: w [C] -> y [..., C], w in every row */
static void run_broadcast(const int64_t *d, void *const *a)
{
	const float *w = a[0];
	float *y = a[1];
	int64_t c = arg_elems(d, 0), rows = arg_elems(d, 1) / c;
	for (int64_t r = 0; r < rows; r++)
		memcpy(y + r * c, w, sizeof *y * (size_t)c);
}

/* ---- sequences of tokens ------------------------------------------------- */

/* embedding: ids i32 [R], weight [V, C] -> y [R, C], row ids[r] of the weight */
static void run_embedding(const int64_t *d, void *const *a)
{
	const int32_t *ids = a[0];
	const float *w = a[1];
	float *y = a[2];
	int64_t rows = arg_elems(d, 0), c = RT_ARG_DIM(d, 1, 1);
#pragma omp parallel for if (rows * c > PAR_MIN)
	for (int64_t r = 0; r < rows; r++)
		memcpy(y + r * c, w + (int64_t)ids[r] * c, sizeof *y * (size_t)c);
}

/*
 * embedding_bwd: dy [R, C], ids [R] -> dweight [V, C], dy's rows added to
 * the rows their ids name, in row order. Threads take column blocks, so
 * every element is summed in the same order whatever the thread count.
 */
enum { EMBEDDING_COLS = 64 };
static void run_embedding_bwd(const int64_t *d, void *const *a)
{
	const float *dy = a[0];
	const int32_t *ids = a[1];
	float *dw = a[2];
	int64_t c = RT_ARG_DIM(d, 2, 1), rows = arg_elems(d, 1), blocks = (c + EMBEDDING_COLS - 1) / EMBEDDING_COLS;
	memset(dw, 0, sizeof *dw * (size_t)arg_elems(d, 2));
#pragma omp parallel for if (rows * c > PAR_MIN)
	for (int64_t b = 0; b < blocks; b++) {
		int64_t lo = b * EMBEDDING_COLS, hi = lo + EMBEDDING_COLS < c ? lo + EMBEDDING_COLS : c;
		for (int64_t r = 0; r < rows; r++) {
			float *dst = dw + (int64_t)ids[r] * c;
			const float *src = dy + r * c;
#pragma omp simd
			for (int64_t j = lo; j < hi; j++)
				dst[j] += src[j];
		}
	}
}

/* position_embedding: x [N, T, C], weight [P, C] -> y, y[n, t] = x[n, t] + weight[t] */
static void run_position(const int64_t *d, void *const *a)
{
	const float *x = a[0], *w = a[1];
	float *y = a[2];
	int64_t n = RT_ARG_DIM(d, 0, 0), tc = RT_ARG_DIM(d, 0, 1) * RT_ARG_DIM(d, 0, 2);
#pragma omp parallel for if (n * tc > PAR_MIN)
	for (int64_t b = 0; b < n; b++) {
		const float *xb = x + b * tc;
		float *yb = y + b * tc;
#pragma omp simd
		for (int64_t i = 0; i < tc; i++)
			yb[i] = xb[i] + w[i];
	}
}

/*
 * split_heads: x [N, T, W] -> y [N, H, T, D], y[n, h, t, :] = x[n, t, offset + h D + :];
 * merge_heads (split = false): x1.. [N, H, T, D] -> y [N, T, k H D], the other way.
 * One row of D floats at a time.
 */
static void run_heads(const int64_t *d, void *const *a, bool split)
{
	int hd = split ? 1 : 0; /* the argument that holds the heads */
	int nin = (int)d[RT_D_NIN];
	int64_t n = RT_ARG_DIM(d, hd, 0), h = RT_ARG_DIM(d, hd, 1), t = RT_ARG_DIM(d, hd, 2), dd = RT_ARG_DIM(d, hd, 3);
	int64_t w = split ? RT_ARG_DIM(d, 0, 2) : RT_ARG_DIM(d, nin, 2), parts = split ? 1 : nin;
	int64_t rows = parts * n * h * t;
#pragma omp parallel for if (rows * dd > PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		int64_t ti = r % t, hi = r / t % h, ni = r / (t * h) % n, k = r / (t * h * n);
		int64_t col = (ni * t + ti) * w + (split ? d[RT_D_OFFSET] : k * h * dd) + hi * dd;
		int64_t head = (ni * h + hi) * t * dd + ti * dd;
		if (split)
			memcpy((float *)a[1] + head, (const float *)a[0] + col, sizeof(float) * (size_t)dd);
		else
			memcpy((float *)a[nin] + col, (const float *)a[k] + head, sizeof(float) * (size_t)dd);
	}
}

/*
 * causal_softmax: x [..., T, T] -> y, row r (position r % T) the softmax of
 * its entries 0..r % T in float with a double sum, the rest 0;
 * causal_softmax_bwd: y, dy -> dx = y (dy - sum(y dy)) over the same entries.
 */
static void run_causal_softmax(const int64_t *d, void *const *a, bool bwd)
{
	int64_t t = RT_ARG_DIM(d, 0, RT_ARG_NDIM(d, 0) - 1), rows = arg_elems(d, 0) / t;
#pragma omp parallel for if (rows * t > PAR_MIN)
	for (int64_t r = 0; r < rows; r++) {
		int64_t len = r % t + 1;
		const float *x = (const float *)a[0] + r * t;
		float *out = (float *)a[bwd ? 2 : 1] + r * t;
		double sum = 0;
		if (bwd) {
			const float *dy = (const float *)a[1] + r * t;
			for (int64_t j = 0; j < len; j++)
				sum += (double)x[j] * dy[j];
			for (int64_t j = 0; j < len; j++)
				out[j] = (float)(x[j] * (dy[j] - sum));
		} else {
			float mx = x[0];
			for (int64_t j = 1; j < len; j++)
				mx = x[j] > mx ? x[j] : mx;
			for (int64_t j = 0; j < len; j++) {
				out[j] = expf(x[j] - mx);
				sum += out[j];
			}
			float inv = (float)(1 / sum);
			for (int64_t j = 0; j < len; j++)
				out[j] *= inv;
		}
		for (int64_t j = len; j < t; j++)
			out[j] = 0;
	}
}

/* position_embedding_bwd: dy [N, T, C] -> dweight [P, C]: the sum over N (in order), zero from row T */
static void run_position_bwd(const int64_t *d, void *const *a)
{
	const float *dy = a[0];
	float *dw = a[1];
	int64_t n = RT_ARG_DIM(d, 0, 0), tc = RT_ARG_DIM(d, 0, 1) * RT_ARG_DIM(d, 0, 2), all = arg_elems(d, 1);
#pragma omp parallel for if (n * tc > PAR_MIN)
	for (int64_t i = 0; i < all; i++) {
		double s = 0;
		for (int64_t b = 0; i < tc && b < n; b++)
			s += dy[b * tc + i];
		dw[i] = (float)s;
	}
}

/*
 * grad_sumsq: acc (0 without it) + the sum of the gradient's squares, in
 * double. The sum is split into GRAD_SUMSQ_PARTS fixed slices whatever
 * the thread count, each summed in order, so that it is deterministic.
 */
enum { GRAD_SUMSQ_PARTS = 64 };
static void run_grad_sumsq(const int64_t *d, void *const *a)
{
	const void *g = a[0];
	bool g16 = rt_arg_bf16(d, 0); /* a bf16 gradient read as it is (op_bf16_arg_native) */
	int64_t n = arg_elems(d, 0), nin = d[RT_D_NIN];
	int64_t slice = (n + GRAD_SUMSQ_PARTS - 1) / GRAD_SUMSQ_PARTS;
	double part[GRAD_SUMSQ_PARTS];
#pragma omp parallel for if (n > PAR_MIN)
	for (int p = 0; p < GRAD_SUMSQ_PARTS; p++) {
		int64_t lo = p * slice, hi = lo + slice < n ? lo + slice : n;
		double s = 0;
#pragma omp simd reduction(+ : s)
		for (int64_t i = lo; i < hi; i++) {
			double gi = bf16_or_f32_ld(g, i, g16);
			s += gi * gi;
		}
		part[p] = s;
	}
	double total = nin == 2 ? (double)*(const float *)a[1] : 0;
	for (int p = 0; p < GRAD_SUMSQ_PARTS; p++)
		total += part[p];
	*(float *)a[nin] = (float)total;
}

/*
 * The updates: sgd, sgd_momentum and adamw by base/optim.h's rules, in
 * place, in double per element; the last input, beyond the op's fewest,
 * is the gradients' squared norm that clipping scales them by.
 */
static void run_update(const int64_t *d, void *const *a, uint64_t step)
{
	OptimHyper h = rt_optim_hyper(d);
	OptimStep st = optim_step(&h, step);
	int64_t nin = d[RT_D_NIN], n = arg_elems(d, 0);
	int min_in = op_info[d[RT_D_OP]].min_in; /* an input beyond them: the gradients' squared norm */
	double scale = 1.0;
	if (nin > min_in)
		scale = optim_clip_scale(h.clip, (double)*(const float *)a[nin - 1]);
	float *w = a[0], *s1 = min_in > 2 ? a[2] : NULL, *s2 = min_in > 3 ? a[3] : NULL;
	const void *g = a[1];
	bool g16 = rt_arg_bf16(d, 1); /* a bf16 gradient read as it is (op_bf16_arg_native) */
	switch (d[RT_D_OP]) {
	case RT_OP_SGD:
#pragma omp parallel for simd if (n > PAR_MIN) firstprivate(h, st, scale)
		for (int64_t i = 0; i < n; i++)
			w[i] = (float)optim_sgd(&h, &st, scale, (double)w[i], (double)bf16_or_f32_ld(g, i, g16));
		break;
	case RT_OP_SGD_MOMENTUM:
#pragma omp parallel for simd if (n > PAR_MIN) firstprivate(h, st, scale)
		for (int64_t i = 0; i < n; i++) {
			double v = (double)s1[i];
			w[i] = (float)optim_sgd_momentum(&h, &st, scale, (double)w[i], (double)bf16_or_f32_ld(g, i, g16), &v);
			s1[i] = (float)v;
		}
		break;
	case RT_OP_ADAMW:
#pragma omp parallel for simd if (n > PAR_MIN) firstprivate(h, st, scale)
		for (int64_t i = 0; i < n; i++) {
			double m = (double)s1[i], v = (double)s2[i];
			w[i] = (float)optim_adamw(&h, &st, scale, (double)w[i], (double)bf16_or_f32_ld(g, i, g16), &m, &v);
			s1[i] = (float)m;
			s2[i] = (float)v;
		}
		break;
	default:
		RT_ICE("%s is not an update", op_name(d[RT_D_OP]));
	}
}

/* batchnorm_eval: y = x alpha + beta per channel, alpha and beta from the running statistics (ops.def) */
static void run_bn_eval(const int64_t *d, void *const *a)
{
	const float *w = a[1], *b = a[2], *rm = a[3], *rv = a[4];
	int64_t nb = RT_ARG_DIM(d, 0, 0), c = dim_or_1(d, 0, 1), inner = inner_elems(d, 0, 2);
	double eps = attr_f64(d, RT_D_EPS);
	bool bf16 = rt_arg_bf16(d, 0); /* x and y bf16 (native: each element widened and rounded, as widened) */
	bool blocked = rt_arg_blocked(d, 0); /* x and y channel-blocked: a channel's elements 16 apart */
	int64_t st = blocked ? 16 : 1;
#pragma omp parallel for collapse(2) schedule(static)
	for (int64_t n = 0; n < nb; n++)
		for (int64_t ch = 0; ch < c; ch++) {
			double alpha, beta;
			op_bn_eval_affine(w[ch], b[ch], rm[ch], rv[ch], eps, &alpha, &beta);
			int64_t at = blocked ? (n * c + ch / 16 * 16) * inner + ch % 16 : (n * c + ch) * inner;
			if (bf16) {
				const uint16_t *xs = (const uint16_t *)a[0] + at;
				uint16_t *ys = (uint16_t *)a[5] + at;
				for (int64_t k = 0; k < inner; k++)
					ys[k * st] = bf16_from_f32((float)((double)bf16_to_f32(xs[k * st]) * alpha + beta));
			} else {
				const float *xs = (const float *)a[0] + at;
				float *ys = (float *)a[5] + at;
				for (int64_t k = 0; k < inner; k++)
					ys[k * st] = (float)((double)xs[k * st] * alpha + beta);
			}
		}
}

/* layernorm over the last dimension (ops.def, base/layernorm.h): x, weight, bias -> y, mean, rstd; a row per iteration */
static void run_layernorm(const int64_t *d, void *const *a)
{
	const float *x = a[0], *w = a[1], *b = a[2];
	float *mean = a[4], *rstd = a[5];
	bool ybf = rt_arg_bf16(d, 3); /* y bf16: autocast's cast folded in (op_bf16_arg_native) */
	int64_t c = RT_ARG_DIM(d, 1, 0), rows = arg_elems(d, 0) / c, es = ybf ? 2 : 4;
	double eps = attr_f64(d, RT_D_EPS);
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++)
		layernorm_row(x + r * c, w, b, (char *)a[3] + r * c * es, ybf, c, eps, &mean[r], &rstd[r]);
}

/*
 * Its gradient: x, weight, mean, rstd, dy[, sum] -> dx, dweight, dbias.
 * dx a row per iteration, sum (a gradient sum fused in) added to each row
 * as it is written; dweight and dbias 16 columns per iteration, each
 * summed over the rows in order (the same bits whatever the thread count).
 */
static void run_layernorm_bwd(const int64_t *d, void *const *a)
{
	int nin = (int)d[RT_D_NIN];
	const float *x = a[0], *w = a[1], *mean = a[2], *rstd = a[3], *sum = nin == 6 ? a[5] : NULL;
	const void *dy = a[4];
	float *dx = a[nin], *dw = a[nin + 1], *db = a[nin + 2];
	int64_t c = RT_ARG_DIM(d, 1, 0), rows = arg_elems(d, 0) / c;
	bool bf16 = rt_arg_bf16(d, nin), dybf = rt_arg_bf16(d, 4); /* dy bf16: autocast's cast folded in */
	/* the columns first: dx may be written over dy (ops.def's reuse) */
#pragma omp parallel for schedule(static)
	for (int64_t j0 = 0; j0 < c; j0 += LAYERNORM_COLS) {
		int64_t cols = c - j0 < LAYERNORM_COLS ? c - j0 : LAYERNORM_COLS;
		if (dybf)
			layernorm_bwd_cols(x, mean, rstd, dy, true, rows, c, j0, cols, dw, db);
		else
			layernorm_bwd_cols(x, mean, rstd, dy, false, rows, c, j0, cols, dw, db);
	}
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const void *dyr = (const char *)dy + r * c * (dybf ? 2 : 4);
		layernorm_bwd_row(x + r * c, w, mean[r], rstd[r], dyr, dybf, dx + r * c, c);
		if (sum) /* as the add it replaces: dx rounded to its type (bf16 where widened), plus the sum */
			for (int64_t j = 0; j < c; j++)
				dx[r * c + j] = (bf16 ? bf16_round(dx[r * c + j]) : dx[r * c + j]) + sum[r * c + j];
	}
}

/* batchnorm_stats: the running statistics, in place (ops.def) */
static void run_bn_stats(const int64_t *d, void *const *a)
{
	float *rm = a[0], *rv = a[1], *count = a[2];
	const float *mean = a[3], *var = a[4];
	int64_t c = arg_elems(d, 0);
	double m = attr_f64(d, RT_D_BN_MOMENTUM), unbias = op_bn_unbias(rt_elems(d[RT_D_ASHAPE], &d[RT_D_ASHAPE + 1]) / c);
	for (int64_t i = 0; i < c; i++) {
		rm[i] = (float)((1 - m) * (double)rm[i] + m * (double)mean[i]);
		rv[i] = (float)((1 - m) * (double)rv[i] + m * (double)var[i] * unbias);
	}
	count[0] = (float)((double)count[0] + 1);
}

/* n bfloat16 values to float32 and back (the latter rounding to nearest even). */
static void widen_bf16(float *dst, const uint16_t *src, int64_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		dst[i] = bf16_to_f32(src[i]);
}

static void narrow_bf16(uint16_t *dst, const float *src, int64_t n)
{
#pragma omp parallel for if (n > PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		dst[i] = bf16_from_f32(src[i]);
}

/* cast: x -> y in y's type (float32 to bfloat16 rounds to nearest even; the other way is exact) */
static void run_cast(const int64_t *d, void *const *a)
{
	int64_t n = arg_elems(d, 0);
	bool from16 = rt_arg_bf16(d, 0), to16 = rt_arg_bf16(d, 1);
	if (from16 == to16)
		RT_ICE("a cast from %s to the same type", from16 ? "bf16" : "f32"); /* autocast casts between types */
	if (to16)
		narrow_bf16(a[1], a[0], n);
	else
		widen_bf16(a[1], a[0], n);
}

/*
 * The scratch of a plain-C kernel with bf16 arguments (cpu_create): a
 * float32 copy of each such argument, which the kernel reads and writes
 * instead (run_widened).
 */
static void plan_widening(CpuKernel *k)
{
	const int64_t *d = k->desc;
	bool slice = k->op == RT_OP_SLICE || k->op == RT_OP_SLICE_BWD;
	if (slice && rt_arg_bf16(d, 0) != rt_arg_bf16(d, 1))
		RT_ICE("kernel %d: a slice between two types", k->id);
	if (k->prim || k->op == RT_OP_CAST || k->op == RT_OP_RESHAPE || k->op == RT_OP_BATCHNORM ||
	    k->op == RT_OP_BATCHNORM_BWD || k->op == RT_OP_ATTENTION || k->op == RT_OP_ATTENTION_BWD ||
	    k->op == RT_OP_SOFTMAX_XENT_IDS_GRAD || k->op == RT_OP_DENSE_XENT_IDS_GRAD || k->op == RT_OP_ACT_BIAS_GRAD ||
	    k->op == RT_OP_MAXPOOL_BWD || k->op == RT_OP_BATCHNORM_EVAL || k->op == RT_OP_BIAS_GRAD ||
	    slice || op_bf16_arg_native((Op)k->op, d[RT_D_BF16]) || mixed_add(d) ||
	    d[RT_D_BF16] == 0)
		return; /* native, or copies bytes in either type */
	k->widen = true;
	for (int i = 0; i < d[RT_D_NIN] + d[RT_D_NOUT]; i++)
		if (rt_arg_bf16(d, i))
			k->wide_at[i] = scratch_take(k, sizeof(float) * (size_t)arg_elems(d, i));
}

static void run_plain(const CpuState *s, const CpuKernel *k, void *const *a, uint64_t step);

/*
 * A plain-C kernel on bf16 arguments, as the interpreter defines it:
 * every bf16 input widened to float32 (exact), the float32 kernel, then
 * every output and every input it updates in place rounded to bf16. All
 * inputs are widened before anything is written, so an output over its
 * dying input is safe.
 */
static void run_widened(const CpuState *s, const CpuKernel *k, void *const *a, uint64_t step)
{
	const int64_t *d = k->desc;
	int nin = (int)d[RT_D_NIN], nargs = nin + (int)d[RT_D_NOUT];
	void *w[RT_MAX_ARGS] = {0};
	for (int i = 0; i < nargs; i++) {
		w[i] = rt_arg_bf16(d, i) ? (char *)s->scratch + k->wide_at[i] : a[i];
		if (rt_arg_bf16(d, i) && i < nin)
			widen_bf16(w[i], a[i], arg_elems(d, i));
	}
	run_plain(s, k, w, step);
	for (int i = 0; i < nargs; i++)
		if (rt_arg_bf16(d, i) && (i >= nin || (op_info[k->op].inplace >> i & 1)))
			narrow_bf16(a[i], w[i], arg_elems(d, i));
}

static void run_plain(const CpuState *s, const CpuKernel *k, void *const *a, uint64_t step)
{
	const int64_t *d = k->desc;
	switch (k->op) {
	case RT_OP_RELU:
	case RT_OP_SIGMOID:
	case RT_OP_TANH:
	case RT_OP_GELU:
	case RT_OP_RELU6:
	case RT_OP_HARDSIGMOID:
	case RT_OP_HARDSWISH:
	case RT_OP_SILU:
		run_act(d, a, op_info[k->op].act);
		break;
	case RT_OP_RELU_BWD:
	case RT_OP_SIGMOID_BWD:
	case RT_OP_TANH_BWD:
	case RT_OP_GELU_BWD:
	case RT_OP_RELU6_BWD:
	case RT_OP_HARDSIGMOID_BWD:
	case RT_OP_HARDSWISH_BWD:
	case RT_OP_SILU_BWD:
		run_act_bwd(d, a, op_info[k->op].act);
		break;
	case RT_OP_RESHAPE:
		if (a[1] != a[0])
			cpu_copy(a[1], a[0], (size_t)rt_arg_bytes(d, 0)); /* the bytes, in either type */
		break;
	case RT_OP_BIAS_GRAD:
		run_bias_grad(d, a);
		break;
	case RT_OP_MAXPOOL:
		run_maxpool(d, a);
		break;
	case RT_OP_MAXPOOL_BWD:
		run_maxpool_bwd(d, a, (float *)(void *)((char *)s->scratch + k->attn_at));
		break;
	case RT_OP_DROPOUT:
	case RT_OP_DROPOUT_BWD:
		run_dropout(d, a, step);
		break;
	case RT_OP_SLICE:
	case RT_OP_SLICE_BWD:
		run_slice(d, a, k->op == RT_OP_SLICE_BWD);
		break;
	case RT_OP_TRANSPOSE:
		run_transpose(d, a);
		break;
	case RT_OP_BROADCAST:
		run_broadcast(d, a);
		break;
	case RT_OP_MEAN:
	case RT_OP_MEAN_BWD:
		run_mean(d, a, k->op == RT_OP_MEAN_BWD);
		break;
	case RT_OP_MUL:
	case RT_OP_MUL_BWD_SCALE:
		run_mul(d, a, k->op == RT_OP_MUL_BWD_SCALE);
		break;
	case RT_OP_CLAMP:
	case RT_OP_CLAMP_BWD:
		run_clamp(d, a, k->op == RT_OP_CLAMP_BWD);
		break;
	case RT_OP_SOFTMAX_XENT:
		cpu_xent(d, a, (double *)(void *)((char *)s->scratch + k->rowloss_at));
		break;
	case RT_OP_SOFTMAX_XENT_BWD:
		cpu_xent_bwd(d, a);
		break;
	case RT_OP_SOFTMAX_XENT_IDS:
		cpu_xent_ids(d, a, (double *)(void *)((char *)s->scratch + k->rowloss_at));
		break;
	case RT_OP_SOFTMAX_XENT_IDS_BWD:
		cpu_xent_ids_bwd(d, a);
		break;
	case RT_OP_SOFTMAX_XENT_IDS_GRAD:
		cpu_xent_ids_grad(d, a, (double *)(void *)((char *)s->scratch + k->rowloss_at));
		break;
	case RT_OP_DENSE_XENT_IDS_GRAD: /* the rows' losses, then the block (bf16: the primitives' scratchpad first) */
		if (k->head)
			cpu_head_run(k->head, s->stream, a, (double *)(void *)((char *)s->scratch + k->rowloss_at),
			             (char *)s->scratch + k->attn_at);
		else
			cpu_dense_xent(d, a, (double *)(void *)((char *)s->scratch + k->rowloss_at),
			               (float *)(void *)((char *)s->scratch + k->attn_at), k->block_rows);
		break;
	case RT_OP_ACT_BIAS_GRAD:
		cpu_act_bias_run(k->actbias, s->stream, a, (char *)s->scratch + k->attn_at);
		break;
	case RT_OP_EMBEDDING:
		run_embedding(d, a);
		break;
	case RT_OP_EMBEDDING_BWD:
		run_embedding_bwd(d, a);
		break;
	case RT_OP_POSITION:
		run_position(d, a);
		break;
	case RT_OP_POSITION_BWD:
		run_position_bwd(d, a);
		break;
	case RT_OP_GRAD_SUMSQ:
		run_grad_sumsq(d, a);
		break;
	case RT_OP_ALLREDUCE:
		rt_allreduce_mean(a[1], a[0], arg_elems(d, 0));
		break;
	case RT_OP_SGD:
	case RT_OP_SGD_MOMENTUM:
	case RT_OP_ADAMW:
		run_update(d, a, step);
		break;
	case RT_OP_BATCHNORM_STATS:
		run_bn_stats(d, a);
		break;
	case RT_OP_BATCHNORM:
		cpu_batchnorm(d, a);
		break;
	case RT_OP_BATCHNORM_BWD:
		cpu_batchnorm_bwd(d, a);
		break;
	case RT_OP_BATCHNORM_EVAL:
		run_bn_eval(d, a);
		break;
	case RT_OP_ATTENTION:
		cpu_attention(d, a, (char *)s->scratch + k->attn_at);
		break;
	case RT_OP_ATTENTION_BWD:
		cpu_attention_bwd(d, a, (char *)s->scratch + k->attn_at);
		break;
	case RT_OP_LAYERNORM:
		run_layernorm(d, a);
		break;
	case RT_OP_LAYERNORM_BWD:
		run_layernorm_bwd(d, a);
		break;
	case RT_OP_SPLIT_HEADS:
	case RT_OP_MERGE_HEADS:
		run_heads(d, a, k->op == RT_OP_SPLIT_HEADS);
		break;
	case RT_OP_CAUSAL_SOFTMAX:
	case RT_OP_CAUSAL_SOFTMAX_BWD:
		run_causal_softmax(d, a, k->op == RT_OP_CAUSAL_SOFTMAX_BWD);
		break;
	case RT_OP_CAST:
		run_cast(d, a);
		break;
	case RT_OP_ADD: /* of a float32 and a bf16 input (mixed_add; else oneDNN's) */
		run_mixed_add(d, a);
		break;
	case RT_OP_MATMUL: /* oneDNN primitives */
	case RT_OP_CONV2D:
	case RT_OP_CONV2D_BWD_DATA:
	case RT_OP_CONV2D_BWD_FILTER:
	case RT_OP_DENSE:
	case RT_OP_DENSE_BWD_DATA:
	case RT_OP_DENSE_BWD_WEIGHT:
	case RT_OP_AVGPOOL:
	case RT_OP_AVGPOOL_BWD:
	case RT_OP_GLOBALAVGPOOL:
	case RT_OP_GLOBALAVGPOOL_BWD:
	case RT_OP_SOFTMAX:
	case RT_OP_SOFTMAX_BWD:
	case RT_OP_CONCAT:
	case RT_NUM_OPS:
		RT_ICE("kernel %d: %s is not a plain-C kernel", k->id, op_name(k->op));
	}
}

/* ---- the kernels group of the backend table (cpu/backend.c) ------------------ */

/*
 * How OpenMP threads wait for work. Spinning long (libgomp's default, or
 * OMP_WAIT_POLICY=active) takes the cores from busy threads when anything
 * else runs: the mlp step took 180 ms instead of 128 ms beside one busy
 * process on 2 cores. Sleeping at once (passive) costs a wake-up per
 * kernel: test_vgg at batch 8 took 7.4 ms a step instead of 2.0 ms on idle
 * cores, 20 ms instead of 3.4 ms beside a busy process. A short spin
 * (passive with GOMP_SPINCOUNT=10000) is within 3% of the best of both on
 * idle cores and within 10% beside a busy process (docs/performance.md).
 * libgomp reads these only when it loads, so a program started without an
 * explicit OMP_WAIT_POLICY sets them and starts itself again.
 */
void cpu_prepare(int argc, char **argv)
{
	if (argc <= 0 || !argv || getenv("OMP_WAIT_POLICY"))
		return;
	if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv("GOMP_SPINCOUNT", "10000", 0) != 0)
		return;
	fflush(NULL);
	execv("/proc/self/exe", argv);
	/* no /proc: keep going with the default policy */
}

int cpu_cores(void)
{
	return omp_get_num_procs();
}

void *cpu_kernels_open(int threads, int64_t scratch_budget)
{
	(void)scratch_budget; /* oneDNN chooses its implementations, and their scratch, by itself */
	omp_set_num_threads(threads); /* oneDNN's threads, and the blocking moves' */
	CpuState *s = rt_xcalloc(sizeof *s);
	DNNL_CHECK(dnnl_engine_create(&s->engine, dnnl_cpu, 0));
	DNNL_CHECK(dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags));
	DNNL_CHECK(dnnl_primitive_attr_create(&s->attr));
	DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(s->attr, dnnl_scratchpad_mode_user));
	return s;
}

void cpu_kernels_close(void *state)
{
	CpuState *s = state;
	DNNL_CHECK(dnnl_primitive_attr_destroy(s->attr));
	DNNL_CHECK(dnnl_stream_destroy(s->stream));
	DNNL_CHECK(dnnl_engine_destroy(s->engine));
	free(s->scratch);
	free(s);
}

void *cpu_create(void *state, int32_t id, const int64_t *desc)
{
	CpuState *s = state;
	CpuKernel *k = rt_xcalloc(sizeof *k);
	k->id = id;
	k->op = (RtOp)desc[RT_D_OP];
	memcpy(k->desc, desc, sizeof k->desc);
	snprintf(k->impl, sizeof k->impl, "plain C");
	creating_id = id;
	creating_op = k->op;
	switch (k->op) {
	case RT_OP_CONV2D: make_conv(s, k, CONV_FWD); break;
	case RT_OP_CONV2D_BWD_DATA: make_conv(s, k, CONV_BWD_DATA); break;
	case RT_OP_CONV2D_BWD_FILTER: make_conv(s, k, CONV_BWD_FILTER); break;
	case RT_OP_DENSE: make_dense(s, k); break;
	case RT_OP_DENSE_BWD_DATA: make_dense_bwd_data(s, k); break;
	case RT_OP_DENSE_BWD_WEIGHT: make_dense_bwd_weight(s, k); break;
	case RT_OP_MAXPOOL: make_pool(s, k, dnnl_pooling_max, false); break;
	case RT_OP_AVGPOOL: make_pool(s, k, dnnl_pooling_avg_include_padding, false); break;
	case RT_OP_GLOBALAVGPOOL: make_pool(s, k, dnnl_pooling_avg_include_padding, true); break;
	case RT_OP_AVGPOOL_BWD: make_pool_bwd(s, k, false); break;
	case RT_OP_GLOBALAVGPOOL_BWD: make_pool_bwd(s, k, true); break;
	case RT_OP_BATCHNORM:
	case RT_OP_BATCHNORM_BWD: cpu_batchnorm_check(id, desc); break;
	case RT_OP_RELU:
	case RT_OP_SIGMOID:
	case RT_OP_TANH:
	case RT_OP_GELU:
	case RT_OP_RELU6:
	case RT_OP_HARDSIGMOID:
	case RT_OP_HARDSWISH:
	case RT_OP_SILU: make_eltwise(s, k); break;
	case RT_OP_RELU_BWD:
	case RT_OP_SIGMOID_BWD:
	case RT_OP_TANH_BWD:
	case RT_OP_GELU_BWD:
	case RT_OP_RELU6_BWD:
	case RT_OP_HARDSIGMOID_BWD:
	case RT_OP_HARDSWISH_BWD:
	case RT_OP_SILU_BWD: make_eltwise_bwd(s, k); break;
	case RT_OP_SOFTMAX: make_softmax(s, k); break;
	case RT_OP_SOFTMAX_BWD: make_softmax_bwd(s, k); break;
	case RT_OP_MATMUL: make_matmul(s, k); break;
	case RT_OP_ADD:
		if (!mixed_add(desc))
			make_add(s, k);
		break; /* (else run_mixed_add) */
	case RT_OP_CONCAT: make_concat(s, k); break;
	case RT_OP_SOFTMAX_XENT:
		k->rowloss_at = scratch_take(k, (size_t)op_xent_row_bytes(RT_ARG_DIM(desc, 0, 0)));
		break;
	case RT_OP_ACT_BIAS_GRAD: { /* an activation oneDNN has (fuse.c's act_bias); its blocks' primitives, scratchpad, sums */
		Act act = (Act)desc[RT_D_ACT];
		dnnl_alg_kind_t alg = act == ACT_NONE ? dnnl_alg_kind_undef : eltwise_alg(act);
		uint64_t data = rt_arg_bf16(desc, 0) ? 1u << 0 | 1u << 1 | 1u << 2 : 0u; /* saved, dy, dx */
		if (alg == dnnl_alg_kind_undef || ((uint64_t)desc[RT_D_BF16] & ~(1u << 3)) != data)
			RT_ICE("kernel %d (act_bias_grad): %s, or saved, dy and dx not of one type", id, act_name(act));
		k->actbias = cpu_act_bias_create(s->engine, s->attr, desc, alg, act_from(act) == ACT_FROM_Y);
		k->attn_at = scratch_take(k, cpu_act_bias_scratch(k->actbias));
		snprintf(k->impl, sizeof k->impl, "oneDNN eltwise in blocks + C");
		break;
	}
	case RT_OP_SOFTMAX_XENT_IDS: /* a row per id */
	case RT_OP_SOFTMAX_XENT_IDS_GRAD:
		k->rowloss_at = scratch_take(k, (size_t)op_xent_row_bytes(arg_elems(desc, 1)));
		break;
	case RT_OP_DENSE_XENT_IDS_GRAD: /* a row per id, and a block of logits */
		if ((uint64_t)desc[RT_D_BF16] != (rt_arg_bf16(desc, 0) ? 1u << 0 | 1u << 1 | 1u << 3 : 0u))
			RT_ICE("kernel %d (dense_crossentropy_ids_grad): x, weight and dx not of one type, or a bf16 dweight", id);
		k->block_rows = rt_head_block_rows(desc);
		k->rowloss_at = scratch_take(k, (size_t)op_xent_row_bytes(arg_elems(desc, 2)));
		if (rt_arg_bf16(desc, 0))
			k->head = cpu_head_create(s->engine, s->attr, desc, k->block_rows);
		k->attn_at = scratch_take(k, k->head ? cpu_head_scratch(k->head) : cpu_dense_xent_scratch(desc, k->block_rows));
		break;
	case RT_OP_ATTENTION:
	case RT_OP_ATTENTION_BWD: /* a block of every thread's */
		cpu_attention_check(id, desc);
		k->attn_at = scratch_take(k, (size_t)omp_get_max_threads() * cpu_attention_scratch(desc));
		break;
	case RT_OP_BATCHNORM_EVAL: /* bf16 natively: x and y */
		if (desc[RT_D_BF16] != 0 && (uint64_t)desc[RT_D_BF16] != (1u << 0 | 1u << 5))
			RT_ICE("kernel %d (batchnorm_eval): x and y not of one type, or bf16 statistics", id);
		break;
	case RT_OP_MAXPOOL_BWD: /* bf16: its threads' float32 planes */
		if (desc[RT_D_BF16] != 0 && (uint64_t)desc[RT_D_BF16] != 7u)
			RT_ICE("kernel %d (maxpool_bwd): x, dy and dx not of one type", id);
		k->attn_at = scratch_take(k, maxpool_bwd_scratch(desc));
		break;
	case RT_OP_RESHAPE:
	case RT_OP_BIAS_GRAD:
	case RT_OP_DROPOUT:
	case RT_OP_DROPOUT_BWD:
	case RT_OP_SLICE:
	case RT_OP_SLICE_BWD:
	case RT_OP_TRANSPOSE:
	case RT_OP_BROADCAST:
	case RT_OP_MEAN:
	case RT_OP_MEAN_BWD:
	case RT_OP_MUL:
	case RT_OP_MUL_BWD_SCALE:
	case RT_OP_CLAMP:
	case RT_OP_CLAMP_BWD:
	case RT_OP_SOFTMAX_XENT_BWD:
	case RT_OP_GRAD_SUMSQ:
	case RT_OP_SGD:
	case RT_OP_SGD_MOMENTUM:
	case RT_OP_ADAMW:
	case RT_OP_BATCHNORM_STATS:
	case RT_OP_LAYERNORM:
	case RT_OP_LAYERNORM_BWD:
	case RT_OP_SOFTMAX_XENT_IDS_BWD:
	case RT_OP_EMBEDDING:
	case RT_OP_EMBEDDING_BWD:
	case RT_OP_POSITION:
	case RT_OP_POSITION_BWD:
	case RT_OP_SPLIT_HEADS:
	case RT_OP_MERGE_HEADS:
	case RT_OP_CAUSAL_SOFTMAX:
	case RT_OP_CAUSAL_SOFTMAX_BWD:
	case RT_OP_CAST:
	case RT_OP_ALLREDUCE:
		break; /* plain C: the description is all it needs */
	case RT_NUM_OPS:
		RT_ICE("kernel %d: no %s kernel in this runtime", id, op_name(k->op));
	}
	plan_widening(k);
	creating_id = -1;
	if (k->scratch > s->scratch_size) {
		void *p;
		int rc = posix_memalign(&p, 64, k->scratch);
		if (rc != 0) {
			char b[32];
			rt_fatal("cannot allocate the kernels' scratch memory (%s): %s",
			         fmt_bytes((int64_t)k->scratch, b, sizeof b), strerror(rc));
		}
		free(s->scratch);
		s->scratch = p;
		s->scratch_size = k->scratch;
	}
	return k;
}

static void reorder(CpuState *s, const Reorder *r, dnnl_memory_t from, dnnl_memory_t to)
{
	dnnl_exec_arg_t a[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, r->pad}};
	DNNL_CHECK(dnnl_primitive_execute(r->prim, s->stream, r->pad ? 3 : 2, a));
}

void cpu_launch(void *state, void *kernel, void *const *args, uint64_t step)
{
	CpuState *s = state;
	CpuKernel *k = kernel;
	if (!k->prim) {
		if (k->widen)
			run_widened(s, k, args, step);
		else
			run_plain(s, k, args, step);
		return;
	}
	char *scratch = s->scratch; /* set at every launch: it moves when a later kernel needs more */
	for (int i = 0; i < k->nargs; i++) {
		if (k->from[i] >= 0) {
			DNNL_CHECK(dnnl_memory_set_data_handle(k->args[i].memory, args[k->from[i]]));
			continue;
		}
		DNNL_CHECK(dnnl_memory_set_data_handle(k->args[i].memory, scratch + k->at[i]));
		if (k->zero[i])
			memset(scratch + k->at[i], 0, k->zero[i]);
	}
	for (int i = 0; i < k->nreorders; i++) {
		Reorder *r = &k->reorders[i];
		DNNL_CHECK(dnnl_memory_set_data_handle(r->user, args[r->from]));
		DNNL_CHECK(dnnl_memory_set_data_handle(r->inner, scratch + r->offset));
		if (r->pad)
			DNNL_CHECK(dnnl_memory_set_data_handle(r->pad, scratch + k->pad_at));
		if (!r->output)
			reorder(s, r, r->user, r->inner);
	}
	DNNL_CHECK(dnnl_primitive_execute(k->prim, s->stream, k->nargs, k->args));
	for (int i = 0; i < k->nreorders; i++)
		if (k->reorders[i].output)
			reorder(s, &k->reorders[i], k->reorders[i].inner, k->reorders[i].user);
	DNNL_CHECK(dnnl_stream_wait(s->stream));
}

void cpu_destroy(void *state, void *kernel)
{
	(void)state;
	CpuKernel *k = kernel;
	for (int i = 0; i < k->nreorders; i++) {
		DNNL_CHECK(dnnl_primitive_destroy(k->reorders[i].prim));
		DNNL_CHECK(dnnl_memory_destroy(k->reorders[i].user));
		if (k->reorders[i].pad)
			DNNL_CHECK(dnnl_memory_destroy(k->reorders[i].pad));
	}
	for (int i = 0; i < k->nargs; i++)
		DNNL_CHECK(dnnl_memory_destroy(k->args[i].memory)); /* the inner memories of reorders too */
	if (k->prim)
		DNNL_CHECK(dnnl_primitive_destroy(k->prim));
	cpu_head_destroy(k->head);
	cpu_act_bias_destroy(k->actbias);
	free(k);
}

const char *cpu_impl_name(void *kernel)
{
	return ((CpuKernel *)kernel)->impl;
}

int64_t cpu_scratch_bytes(void *state)
{
	return (int64_t)((CpuState *)state)->scratch_size;
}

int64_t cpu_kernel_scratch(void *kernel)
{
	return (int64_t)((CpuKernel *)kernel)->scratch;
}

void cpu_sync(void *state)
{
	(void)state; /* a launch returns when its kernel is done */
}
