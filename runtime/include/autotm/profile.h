/*
 * autotm/profile.h - timing kernels and moves in-process, for the
 * profile database (compiler/profile.c, docs/profiling.md).
 *
 * A profiler owns what a training program owns - a fast pool, a slow
 * pool (memkind pmem on a directory, MEMKIND_DAX_KMEM or a NUMA node),
 * the copy thread and the backend - but instead of running a training
 * step it times one kernel at a time:
 *
 *   p = rt_profiler_new(&options)
 *   k = rt_profiler_kernel(p, desc)       create the kernel; lay out its
 *                                         arguments at the same offsets in
 *                                         both pools; fill the inputs (in
 *                                         both) with finite random values
 *   t = rt_profiler_time(p, k, slow)      argument i (inputs first, then
 *                                         outputs) in the slow pool for
 *                                         every bit i of `slow`: warm-up
 *                                         runs, then timed runs; median
 *                                         and spread
 *   rt_profiler_kernel_free(p, k)
 *   t = rt_profiler_move(p, bytes, to_slow, async)
 *   rt_profiler_free(p)
 *
 * Every timed run starts with the kernel's arguments (a move's source and
 * destination) flushed from the caches, as they are when a tensor was
 * written long before: otherwise a small tensor would be read from the
 * cache whichever tier holds it. Failures of the system (an allocation,
 * a oneDNN or memkind call) are fatal, as everywhere in the runtime.
 */
#ifndef AUTOTM_RT_PROFILE_H
#define AUTOTM_RT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the slow tier comes from: the values of rt_internal.h's RtSlowKind. */
enum { RT_SLOW_TIER_PMEM = 0, RT_SLOW_TIER_DAX = 1, RT_SLOW_TIER_NUMA = 2 };

typedef struct RtProfilerOptions {
	int threads;          /* OpenMP threads of the kernels and of blocking copies (0: every core) */
	int slow_kind;        /* RT_SLOW_TIER_* */
	const char *slow_dir; /* pmem: parent of the pool's directory (NULL: $TMPDIR or /tmp) */
	int numa_node;        /* numa: the node */
	int warmup;           /* untimed runs before the timed ones */
	int runs;             /* timed runs, at most */
	int min_runs;         /* timed runs, at least (even past max_seconds) */
	double max_seconds;   /* no further timed run once this much time was spent timing */
	const char *prog;     /* name for runtime messages ("autotmc"); NULL: unchanged */
} RtProfilerOptions;

/* The time of a kernel or move: median of the timed runs and their range. */
typedef struct RtTiming {
	double median;  /* seconds */
	double spread;  /* max - min over the timed runs, seconds */
	int runs;       /* timed runs */
} RtTiming;

typedef struct RtProfiler RtProfiler;
typedef struct RtProfKernel RtProfKernel;

RtProfiler *rt_profiler_new(const RtProfilerOptions *o);
void rt_profiler_free(RtProfiler *p);

/* Create the kernel of a description (autotm/rt.h) and prepare its arguments. */
RtProfKernel *rt_profiler_kernel(RtProfiler *p, const int64_t *desc);
/* The backend's name of its implementation ("oneDNN jit:avx512_core"). */
const char *rt_profiler_kernel_impl(RtProfiler *p, const RtProfKernel *k);
/*
 * Bytes of fast memory the kernel needs beside its arguments (reordered
 * arguments, oneDNN's scratchpad, a workspace): the runtime keeps one
 * scratch buffer, the largest any kernel of the program needs.
 */
int64_t rt_profiler_kernel_scratch(RtProfiler *p, const RtProfKernel *k);
RtTiming rt_profiler_time(RtProfiler *p, RtProfKernel *k, uint32_t slow);
void rt_profiler_kernel_free(RtProfiler *p, RtProfKernel *k);

/* Time a copy of `bytes` between the pools: synchronous (rt_move) or on the copy thread (rt_move_async). */
RtTiming rt_profiler_move(RtProfiler *p, int64_t bytes, bool to_slow, bool async);

/* Where the slow pool lives, for messages ("pmem file in /tmp/autotm-slow.x1y2z3"). */
const char *rt_profiler_slow_where(RtProfiler *p, char *buf, size_t size);

#endif
