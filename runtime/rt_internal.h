/*
 * rt_internal.h - what the files of libautotmrt share and generated code
 * never sees: the context, the pools, the copy thread, the backend table
 * and the error-checking helpers.
 *
 * The runtime is split by responsibility:
 *
 *   rt.c        rt_begin / rt_end: options, the step loop's bookkeeping,
 *               reports, kernel creation and launch through the backend
 *   data.c      rt_tensor / rt_data: initial values, --weights, --input,
 *               --labels, --save-weights
 *   results.c   the results record (JSON, AutoTM's field names)
 *   pool.c      the fast and slow pools and the slow tier's directory
 *   move.c      synchronous copies, the copy thread, host staging
 *   cpu/kernels.c  the CPU backend: oneDNN primitives and plain C
 *
 * Two libraries are built from these files. rt.c, data.c, results.c and
 * tensorio.c are the same in both; the memory tiers and the kernels are
 * chosen by which files are linked, each set defining the functions of
 * the "pools", "moves" and "backends" sections below:
 *
 *   libautotmrt.a       pool.c, move.c, cpu/kernels.c, profile.c:
 *                       DRAM and memkind, a copy thread, oneDNN
 *   libautotmrt-cuda.a  cuda/memory.c, cuda/kernels.c, cuda/elementwise.cu:
 *                       device and pinned host memory, copy streams,
 *                       cuDNN, cuBLAS and CUDA kernels (cuda/gpu.h)
 *
 * The shared files never touch a pool's memory themselves: they read and
 * write it through rt_store / rt_load, which are a memcpy on the CPU and a
 * staged copy on a GPU.
 *
 * Every failure of the system (an allocation, a oneDNN, memkind or CUDA
 * call, a file) goes through rt_fatal(): a message naming what failed and
 * why, then exit(1); the atexit handler of pool.c removes the slow tier's
 * temporary directory on that path too.
 */
#ifndef AUTOTM_RT_INTERNAL_H
#define AUTOTM_RT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#include "autotm/rt.h"
#include "autotm/tensorio.h"
#include "format.h" /* base/ */
#include "ops.h"    /* base/ */

/* ---- errors ------------------------------------------------------------ */

/* "PROG: error: message" on stderr, then exit(1). */
noreturn void rt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit with an error status at once: flush output, remove the slow tier's directory. */
noreturn void rt_exit_error(int status);
/* Remove the slow tier's temporary directories (pool.c; also run at exit). */
void rt_remove_temp_dirs(void);
/* "PROG: warning: message" on stderr. */
void rt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A bug in the runtime or in the code calling it: file:line, then abort(). */
noreturn void rt_ice_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define RT_ICE(...) rt_ice_at(__FILE__, __LINE__, __VA_ARGS__)

/* The name messages start with (the program's basename). */
const char *rt_prog_name(void);
void rt_set_prog_name(const char *argv0);

/* Checked allocation: failures are fatal, with file:line and the size. */
void *rt_alloc_at(const char *file, int line, size_t n, bool zero);
#define rt_xmalloc(n) rt_alloc_at(__FILE__, __LINE__, (n), false)
#define rt_xcalloc(n) rt_alloc_at(__FILE__, __LINE__, (n), true)
char *rt_xstrdup(const char *s);

/* Monotonic time in seconds. */
double rt_now(void);
/* Elements of the ndim sizes in shape. */
int64_t rt_elems(int64_t ndim, const int64_t *shape);

/* ---- pools (pool.c) ---------------------------------------------------- */

/* Where the slow pool's memory comes from. */
typedef enum RtSlowKind {
	RT_SLOW_PMEM, /* memkind_create_pmem on a directory (any file system) */
	RT_SLOW_DAX,  /* memkind's MEMKIND_DAX_KMEM (persistent memory as a NUMA node) */
	RT_SLOW_NUMA, /* anonymous memory bound to one NUMA node (mbind) */
} RtSlowKind;

typedef struct RtPool {
	const char *name;     /* "fast" or "slow", for messages */
	void *base;           /* first byte; NULL when the pool is empty */
	int64_t bytes;        /* bytes the program asked for */
	int64_t mapped;       /* bytes allocated (bytes rounded up to the alignment) */
	RtSlowKind kind;      /* slow pool: its source; fast pool: unused */
	void *mk_kind;        /* memkind_t of a pmem or DAX pool, else NULL */
	bool mk_owned;        /* mk_kind was created by us (memkind_destroy_kind at the end) */
	bool anon_map;        /* base came from mmap (munmap it) */
	char *dir;            /* pmem: the temporary directory holding its file */
	int numa_node;        /* numa: the node it is bound to */
	bool managed;         /* cuda: the fast pool is managed memory */
	void *balloon;        /* cuda, managed: device memory held so that only the limit is left */
} RtPool;

/* A fast pool of `bytes` under a non-zero `limit`: fatal if over it (rt.c, for both runtimes). */
void rt_pool_fast_check(int64_t bytes, int64_t limit);
/* The fast pool: one 2 MiB-aligned allocation; fatal if over a non-zero limit. */
void rt_pool_fast_open(RtPool *p, int64_t bytes, int64_t limit);
/*
 * The fast pool of an RT_PROGRAM_MANAGED program: managed memory on a
 * device capped at a non-zero limit (cuda/memory.c); fatal on the CPU.
 */
void rt_pool_managed_open(RtPool *p, int64_t bytes, int64_t limit);
/*
 * The slow pool. kind RT_SLOW_PMEM: a fresh directory made with mkdtemp
 * inside `parent` (NULL: $TMPDIR or /tmp), removed at exit, on error and
 * on SIGINT/SIGTERM.
 */
void rt_pool_slow_open(RtPool *p, int64_t bytes, RtSlowKind kind, const char *parent, int numa_node);
void rt_pool_close(RtPool *p);
/* Describe where a slow pool lives: "pmem in /tmp/autotm-slow.x1y2z3". */
const char *rt_pool_where(const RtPool *p, char *buf, size_t size);

/* ---- moves (move.c) ---------------------------------------------------- */

/* Copy bytes; non-temporal stores from RT_NT_THRESHOLD bytes on. */
enum { RT_NT_THRESHOLD = 1 << 20 };
void rt_copy(void *dst, const void *src, size_t bytes);

/*
 * Host memory into a pool and back: the only way the shared files touch
 * tensors. They return when the copy is done, ordered after every kernel
 * and move launched before them.
 */
void rt_store(void *dst, const void *src, size_t bytes);
void rt_load(void *dst, const void *src, size_t bytes);

typedef struct RtMover RtMover;
RtMover *rt_mover_new(void);
/* Enqueue a copy; returns its handle (positive). */
int32_t rt_mover_submit(RtMover *m, void *dst, const void *src, size_t bytes);
/* Block until the copy with this handle (and every earlier one) is done. */
void rt_mover_wait(RtMover *m, int32_t handle);
/* Block until every copy submitted is done. */
void rt_mover_drain(RtMover *m);
/* Drain, stop the thread and free. */
void rt_mover_free(RtMover *m);
/* Copies submitted, and their bytes. */
void rt_mover_stats(RtMover *m, int64_t *count, int64_t *bytes);

/* ---- backends ---------------------------------------------------------- */

/*
 * A backend creates kernels from descriptions (rt.h's layout) and launches
 * them on tensor addresses. `state` is what open() returned. Creation
 * failures are fatal (rt_fatal); launch never fails.
 */
typedef struct RtBackend {
	const char *name;                                          /* "cpu" */
	void (*prepare)(int argc, char **argv);                    /* first thing rt_begin does */
	int (*cores)(void);                                        /* the default --threads */
	void *(*open)(int threads);                                /* engine, stream */
	void (*close)(void *state);                                /* release them */
	void *(*create)(void *state, int32_t id, const int64_t *desc); /* one kernel */
	void (*launch)(void *state, void *kernel, void *const *args, uint64_t step);
	void (*destroy)(void *state, void *kernel);                /* free one kernel */
	const char *(*impl_name)(void *kernel);                    /* "oneDNN gemm:jit" or "plain C" */
	int64_t (*scratch_bytes)(void *state);                     /* memory kernels use outside the pools */
	void (*sync)(void *state);                                 /* wait for every kernel launched */
} RtBackend;

extern const RtBackend rt_cpu_backend;  /* cpu/kernels.c */
extern const RtBackend rt_cuda_backend; /* cuda/kernels.c */
/* The backend of the library linked: &rt_cpu_backend or &rt_cuda_backend. */
extern const RtBackend *const rt_backend;

/* ops.def's arity of an op; op must be one. */
void rt_op_arity(int64_t op, int *min_in, int *max_in, int *nout);

/* ---- the context ------------------------------------------------------- */

/* The command line of a generated program. */
typedef struct RtOptions {
	int64_t iters;            /* --iters: training steps */
	int threads;              /* --threads: oneDNN / OpenMP threads */
	uint64_t seed;            /* --seed: initial weights and synthetic data */
	const char *weights;      /* --weights: safetensors to load weights from */
	const char *save_weights; /* --save-weights: where to save them at the end */
	const char *input;        /* --input: .npy batch */
	const char *labels;       /* --labels: .npy labels */
	const char *results;      /* --results: JSON results record */
	const char *slow_dir;     /* --slow-dir: parent of the pmem pool's directory */
	RtSlowKind slow_kind;     /* --slow: pmem (default), dax-kmem, numa:N */
	int numa_node;            /* --slow numa:N */
	bool profile;             /* --profile-kernels */
	bool quiet;               /* --quiet: nothing but errors and warnings */
} RtOptions;

/* A kernel created by rt_kernel. */
typedef struct RtKernelSlot {
	void *impl;        /* the backend's kernel; NULL: id not created */
	int64_t op;        /* RtOp, for reports */
	int64_t calls;     /* --profile-kernels: launches */
	double seconds;    /* --profile-kernels: total time in them */
} RtKernelSlot;

/* The batch of an input or labels tensor, kept on the host and copied in each step. */
typedef struct RtBatch {
	float *data;        /* the elements; NULL until rt_tensor declares the tensor */
	int64_t bytes;      /* their size */
	const char *name;   /* the tensor's name */
} RtBatch;

/* A weight to save at the end (--save-weights). */
typedef struct RtWeight {
	char *name;                  /* its name in the model */
	int32_t pool;                /* RT_POOL_* */
	int64_t offset;              /* byte offset in it */
	int ndim;                    /* dimensions */
	int64_t shape[RT_MAX_DIMS];  /* sizes */
} RtWeight;

struct RtCtx {
	const RtProgram *program;  /* what the compiler knows */
	RtOptions opt;             /* the command line */
	RtPool fast, slow;         /* RT_POOL_FAST, RT_POOL_SLOW */
	RtMover *mover;            /* the copy thread */
	const RtBackend *backend;  /* kernels */
	void *backend_state;       /* its engine and stream */
	RtKernelSlot *kernels;     /* by id */
	int32_t nkernel_slots;     /* entries in kernels */
	int32_t nkernels;          /* kernels created */
	RtBatch batch[2];          /* RT_DATA_INPUT, RT_DATA_LABELS */
	RtWeight *weights;         /* weights declared, for --save-weights */
	int nweights, weights_cap; /* entries in weights, and room */
	TioFile *weights_file;     /* --weights, open until the first step */
	int weights_used;          /* its tensors the program loaded */
	int ntensors;              /* rt_tensor calls so far */
	uint64_t step;             /* steps completed (dropout masks depend on it) */
	double step_start;         /* rt_now() at rt_step_begin */
	bool in_step;              /* between rt_step_begin and rt_step_end */
	double *step_times;        /* seconds of each step */
	double *losses;            /* loss of each step */
	int64_t nsteps, steps_cap; /* entries in both, and room */
};

/* data.c: close --weights after the last rt_tensor (warns about unused tensors). */
void rt_data_finish_loading(RtCtx *ctx);
/* data.c: save the weights to --save-weights; false (after an error message) on failure. */
bool rt_data_save_weights(RtCtx *ctx);
/* data.c: free the batches and the weight list. */
void rt_data_free(RtCtx *ctx);

/* results.c: write the results record to path, atomically; false after an error message. */
bool rt_results_write(const RtCtx *ctx, const char *path, double median);

#endif
