/*
 * profile.c - timing kernels and moves in-process (autotm/profile.h).
 *
 * The profiler runs on the CPU backend (rt_backend of libautotmrt.a; the
 * GPU's profiler is cuda/gpuprof.c). It makes the same pools a training
 * program makes, through the backend's table, and lays out each kernel's arguments at the same offsets in both, so
 * that an IO configuration - which arguments are in the slow tier - is
 * only a choice of base address per argument: the kernel, its inputs'
 * values and the offsets stay the same from one configuration to the
 * next. The pools grow (they are made again, larger) when a kernel or a
 * move needs more than they hold.
 *
 * A measurement: `warmup` untimed launches, then timed launches until
 * `runs` are done, or until `max_seconds` of timed launches once
 * `min_runs` are done; the median is the time and max - min the spread,
 * which the profile driver compares with the difference between the
 * all-fast and the all-slow time (the noise rule, docs/profiling.md).
 * Before each timed launch the arguments' cache lines are flushed
 * (clflush), unless together they are larger than FLUSH_CACHES times the
 * last-level cache (FLUSH_MAX when its size is unknown) and could not stay
 * in it anyway. Last-level caches of hundreds of MiB exist (stacked-cache
 * server parts): there a 64 MiB weight read again and again by the timed
 * runs stays cached, and a GEMM measured warm took 60-75% of its time in
 * the program, where the rest of the step evicts it.
 *
 * Moves are timed through the ABI generated code calls - rt_move (a copy
 * split across the threads) and rt_move_async + rt_move_wait (the copy
 * thread) - on a context that holds only the backend and its copier.
 */
#include "rt_internal.h"

#include "autotm/profile.h"
#include "bf16.h" /* base/ */

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

_Static_assert(RT_SLOW_TIER_PMEM == (int)RT_SLOW_PMEM && RT_SLOW_TIER_DAX == (int)RT_SLOW_DAX &&
                   RT_SLOW_TIER_NUMA == (int)RT_SLOW_NUMA,
               "autotm/profile.h's slow kinds are RtSlowKind's");

enum {
	ARG_ALIGN = 4096,            /* each argument starts on a page, as memplan's offsets do */
	FILL_FLOATS = 1 << 18,       /* the random block inputs are tiled with (1 MiB) */
	FLUSH_MAX = 64 << 20,        /* flush arguments up to this many bytes in all, if the cache's size is unknown */
	FLUSH_CACHES = 4,            /* else up to this many times the last-level cache */
	POOL_STEP = 64 << 20,        /* pools grow in steps of this many bytes */
};

struct RtProfiler {
	RtProfilerOptions o;        /* as given, with defaults filled in */
	RtPool fast, slow;          /* the tiers; both `cap` bytes */
	int64_t cap;                /* bytes each pool holds (0: not made yet) */
	const RtBackend *backend;   /* rt_backend: pools, copies, kernels */
	void *state;                /* its kernels' engine and stream */
	RtCtx *ctx;                 /* for rt_move / rt_move_async: only the backend and its copier */
	float *block;               /* FILL_FLOATS random values in [0.5, 1.5) */
	uint16_t *block16;          /* the same values in bfloat16, for bf16 arguments */
	double *times;              /* room for o.runs timed runs */
	int64_t flush_max;          /* arguments of up to this many bytes in all are flushed (flush_limit) */
};

struct RtProfKernel {
	void *impl;                  /* the backend's kernel */
	int nargs;                   /* inputs, then outputs */
	int64_t off[RT_MAX_ARGS];    /* offset of each argument, the same in both pools */
	int64_t bytes[RT_MAX_ARGS];  /* its size */
	int64_t total;               /* bytes the arguments span in one pool */
};

static int64_t round_up(int64_t n, int64_t a)
{
	return (n + a - 1) / a * a;
}

/* ---- the pools ------------------------------------------------------------- */

/* Make sure both pools hold `need` bytes; the old contents are lost. */
static void ensure_pools(RtProfiler *p, int64_t need)
{
	if (need <= p->cap)
		return;
	const RtMemoryOps *mem = &p->backend->memory;
	p->backend->copies.drain(p->ctx->copier);
	int64_t cap = round_up(need > 2 * p->cap ? need : 2 * p->cap, POOL_STEP);
	mem->close(&p->fast);
	mem->close(&p->slow);
	mem->open_fast(&p->fast, cap, 0);
	mem->open_slow(&p->slow, cap, (RtSlowKind)p->o.slow_kind, p->o.slow_dir, p->o.numa_node);
	p->cap = cap;
}

/* ---- caches ------------------------------------------------------------------ */

/* Write back and evict every cache line of [addr, addr + bytes). */
static void flush_range(const void *addr, int64_t bytes)
{
#if defined(__SSE2__)
	const char *c = (const char *)((uintptr_t)addr & ~(uintptr_t)63), *end = (const char *)addr + bytes;
	for (; c < end; c += 64)
		_mm_clflush(c);
	_mm_mfence();
#else
	(void)addr, (void)bytes; /* no portable flush: measure with warm caches */
#endif
}

/* ---- profiler ------------------------------------------------------------------ */

/* Arguments of up to this many bytes in all are flushed before a timed launch. */
static int64_t flush_limit(void)
{
	long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
	llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (llc <= 0)
		llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
	return llc > 0 ? (int64_t)FLUSH_CACHES * llc : FLUSH_MAX;
}

RtProfiler *rt_profiler_new(const RtProfilerOptions *o)
{
	if (o->prog)
		rt_set_prog_name(o->prog);
	RtProfiler *p = rt_xcalloc(sizeof *p);
	p->o = *o;
	p->flush_max = flush_limit();
	if (p->o.threads <= 0)
		p->o.threads = omp_get_num_procs();
	if (p->o.runs < 1)
		p->o.runs = 1;
	if (p->o.min_runs < 1 || p->o.min_runs > p->o.runs)
		p->o.min_runs = p->o.runs < 3 ? p->o.runs : 3;
	if (p->o.warmup < 0)
		p->o.warmup = 0;
	p->fast = (RtPool){.name = "fast"};
	p->slow = (RtPool){.name = "slow"};
	p->backend = rt_backend;
	p->state = p->backend->kernels.open(p->o.threads, -1);
	p->ctx = rt_xcalloc(sizeof *p->ctx);
	p->ctx->opt.threads = p->o.threads;
	p->ctx->backend = p->backend;
	p->ctx->copier = p->backend->copies.open();
	p->times = rt_xmalloc(sizeof *p->times * (size_t)p->o.runs);
	p->block = rt_xmalloc(sizeof *p->block * FILL_FLOATS);
	p->block16 = rt_xmalloc(sizeof *p->block16 * FILL_FLOATS);
	uint64_t x = 0x9e3779b97f4a7c15ULL; /* xorshift64*: any finite values will do */
	for (int i = 0; i < FILL_FLOATS; i++) {
		x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
		p->block[i] = 0.5f + (float)((x * 0x2545f4914f6cdd1dULL) >> 40) / (float)(1 << 24);
		p->block16[i] = bf16_from_f32(p->block[i]);
	}
	return p;
}

void rt_profiler_free(RtProfiler *p)
{
	if (!p)
		return;
	p->backend->copies.close(p->ctx->copier);
	free(p->ctx);
	p->backend->kernels.close(p->state);
	p->backend->memory.close(&p->fast);
	p->backend->memory.close(&p->slow);
	free(p->times);
	free(p->block);
	free(p->block16);
	free(p);
}

const char *rt_profiler_slow_where(RtProfiler *p, char *buf, size_t size)
{
	if (!p->slow.base) {
		snprintf(buf, size, "not made yet");
		return buf;
	}
	return p->backend->memory.where(&p->slow, buf, size);
}

/* ---- kernels -------------------------------------------------------------------- */

/* Tile dst, in a pool, with the random block (in bfloat16 if bf16). */
static void fill(const RtProfiler *p, char *dst, int64_t bytes, bool bf16)
{
	const void *block = bf16 ? (const void *)p->block16 : (const void *)p->block;
	const int64_t chunk = (bf16 ? 2 : 4) * (int64_t)FILL_FLOATS;
	for (int64_t at = 0; at < bytes; at += chunk)
		p->backend->memory.store(dst + at, block, (size_t)(bytes - at < chunk ? bytes - at : chunk));
}

RtProfKernel *rt_profiler_kernel(RtProfiler *p, const int64_t *desc)
{
	int64_t nin = desc[RT_D_NIN], nout = desc[RT_D_NOUT];
	if (desc[RT_D_OP] < 0 || desc[RT_D_OP] >= RT_NUM_OPS || nin < 0 || nout < 0 || nin + nout < 1 ||
	    nin + nout > RT_MAX_ARGS)
		RT_ICE("rt_profiler_kernel: not a kernel description (op %lld, %lld inputs, %lld outputs)",
		       (long long)desc[RT_D_OP], (long long)nin, (long long)nout);
	RtProfKernel *k = rt_xcalloc(sizeof *k);
	k->nargs = (int)(nin + nout);
	for (int i = 0; i < k->nargs; i++) {
		int64_t nd = RT_ARG_NDIM(desc, i);
		if (nd < 1 || nd > RT_MAX_DIMS)
			RT_ICE("rt_profiler_kernel: argument %d of %s has %lld dimensions", i, op_name(desc[RT_D_OP]),
			       (long long)nd);
		k->bytes[i] = rt_arg_bytes(desc, i);
		k->off[i] = k->total;
		k->total = round_up(k->total + k->bytes[i], ARG_ALIGN);
	}
	ensure_pools(p, k->total);
	k->impl = p->backend->kernels.create(p->state, 0, desc);
	/* Every argument, outputs included, holds finite values in both tiers; ids valid ones. */
	int64_t range;
	int ids = rt_ids_arg(desc, &range);
	for (int i = 0; i < k->nargs; i++) {
		if (i == ids) {
			int64_t n = k->bytes[i] / (int64_t)sizeof(int32_t);
			int32_t *h = rt_xmalloc((size_t)k->bytes[i]);
			for (int64_t j = 0; j < n; j++)
				h[j] = (int32_t)((j * 7919) % range);
			p->backend->memory.store((char *)p->fast.base + k->off[i], h, (size_t)k->bytes[i]);
			p->backend->memory.store((char *)p->slow.base + k->off[i], h, (size_t)k->bytes[i]);
			free(h);
			continue;
		}
		fill(p, (char *)p->fast.base + k->off[i], k->bytes[i], rt_arg_bf16(desc, i));
		fill(p, (char *)p->slow.base + k->off[i], k->bytes[i], rt_arg_bf16(desc, i));
	}
	return k;
}

int64_t rt_profiler_kernel_scratch(RtProfiler *p, const RtProfKernel *k)
{
	return p->backend->kernels.kernel_scratch(k->impl);
}

const char *rt_profiler_kernel_impl(RtProfiler *p, const RtProfKernel *k)
{
	return p->backend->kernels.impl_name(k->impl);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median and range of the n timed runs in t (sorted in place). */
static RtTiming summarise(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	RtTiming r = {.runs = n};
	r.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
	r.spread = t[n - 1] - t[0];
	return r;
}

RtTiming rt_profiler_time(RtProfiler *p, RtProfKernel *k, uint32_t slow)
{
	void *args[RT_MAX_ARGS];
	int64_t flush = 0;
	for (int i = 0; i < k->nargs; i++) {
		char *base = (slow >> i & 1) ? p->slow.base : p->fast.base;
		args[i] = base + k->off[i];
		flush += k->bytes[i];
	}
	for (int w = 0; w < p->o.warmup; w++)
		p->backend->kernels.launch(p->state, k->impl, args, 0);
	int n = 0;
	double spent = 0;
	while (n < p->o.runs && (n < p->o.min_runs || spent < p->o.max_seconds)) {
		if (flush <= p->flush_max)
			for (int i = 0; i < k->nargs; i++)
				flush_range(args[i], k->bytes[i]);
		double t0 = rt_now();
		p->backend->kernels.launch(p->state, k->impl, args, 0);
		p->times[n] = rt_now() - t0;
		spent += p->times[n++];
	}
	return summarise(p->times, n);
}

void rt_profiler_kernel_free(RtProfiler *p, RtProfKernel *k)
{
	if (!k)
		return;
	p->backend->kernels.destroy(p->state, k->impl);
	free(k);
}

/* ---- moves ---------------------------------------------------------------------- */

RtTiming rt_profiler_move(RtProfiler *p, int64_t bytes, bool to_slow, bool async)
{
	if (bytes <= 0)
		RT_ICE("rt_profiler_move of %lld bytes", (long long)bytes);
	ensure_pools(p, bytes);
	char *dst = to_slow ? p->slow.base : p->fast.base;
	const char *src = to_slow ? p->fast.base : p->slow.base;
	int n = 0;
	double spent = 0;
	for (int r = -p->o.warmup; r < p->o.runs; r++) {
		if (r >= p->o.min_runs && spent >= p->o.max_seconds)
			break;
		if (r >= 0 && 2 * bytes <= p->flush_max) {
			flush_range(src, bytes);
			flush_range(dst, bytes);
		}
		double t0 = rt_now();
		if (async)
			rt_move_wait(p->ctx, rt_move_async(p->ctx, dst, src, bytes));
		else
			rt_move(p->ctx, dst, src, bytes);
		double t = rt_now() - t0;
		if (r >= 0) {
			p->times[n++] = t;
			spent += t;
		}
	}
	return summarise(p->times, n);
}
