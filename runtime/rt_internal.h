/*
 * rt_internal.h - what the files of libautotmrt share and generated code
 * never sees: the context, the pools, the backend table and the
 * error-checking helpers.
 *
 * The runtime is split by responsibility:
 *
 *   rt.c        rt_begin / rt_end: options, the step loop's bookkeeping,
 *               reports; pools, moves and kernels through the backend
 *   data.c      rt_tensor / rt_data: initial values, --weights, --input,
 *               --labels, --save-weights
 *   eval.c      the evaluation pass: --val, an evaluation program's --data
 *   results.c   the results record (JSON, AutoTM's field names)
 *   tensorio.c  safetensors and .npy files
 *   profile.c   timing kernels and moves in-process (the CPU's profiler)
 *
 * Everything that depends on the machine is behind one table, RtBackend
 * (below), in three groups of functions:
 *
 *   memory   open and close the fast, slow and managed pools, describe a
 *            pool, store and load between host memory and a pool
 *   copies   blocking moves; asynchronous ones (submit, wait, drain) and
 *            their statistics
 *   kernels  create kernels from descriptions, launch them, report them
 *
 * A backend is one instance of the table, made of its own files, whose
 * functions carry its prefix and are declared in its own header:
 *
 *   rt_cpu_backend   cpu/backend.c (cpu/cpu.h): cpu/pool.c (DRAM and
 *                    memkind), cpu/move.c (a copy thread, host staging),
 *                    cpu/kernels.c (oneDNN and plain C)
 *   rt_cuda_backend  cuda/backend.c (cuda/gpu.h): cuda/memory.c (device
 *                    and pinned host memory, copy streams, host staging),
 *                    cuda/kernels.c and cuda/elementwise.cu (cuDNN,
 *                    cuBLAS and CUDA kernels)
 *
 * Two libraries are built: libautotmrt.a (the shared files and the CPU
 * backend) and libautotmrt-cuda.a (the shared files and the CUDA
 * backend). Each defines rt_backend, the instance it runs on; the shared
 * files reach the machine through it (ctx->backend is the same pointer)
 * and nothing else.
 *
 * The shared files never touch a pool's memory themselves: they read and
 * write it through memory.store / memory.load, which are a memcpy on the
 * CPU and a staged copy on a GPU.
 *
 * Every failure of the system (an allocation, a oneDNN, memkind or CUDA
 * call, a file) goes through rt_fatal(): a message naming what failed and
 * why, then exit(1) through rt_exit_error, which removes the slow tier's
 * temporary directory on that path too (memory.remove_temp_dirs).
 */
#ifndef AUTOTM_RT_INTERNAL_H
#define AUTOTM_RT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>

#include "autotm/rt.h"
#include "autotm/tensorio.h"
#include "format.h" /* base/ */
#include "ops.h"    /* base/ */
#include "optim.h"  /* base/ */

/* The most steps a run takes (--iters, --epochs); a checkpoint's step beyond it is damaged. */
enum { RT_MAX_STEPS = 1000000000 };

/* ---- errors ------------------------------------------------------------ */

/* "PROG: error: message" on stderr, then exit(1). */
noreturn void rt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit with an error status at once: flush output, remove the slow tier's directory. */
noreturn void rt_exit_error(int status);
/* "PROG: message" and "Try 'PROG --help'." on stderr, then exit 2 (a wrong command line). */
noreturn void rt_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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
/* Whether the standard output is a terminal (progress lines), as AUTOTM_STDOUT_TTY says where it is set. */
bool rt_stdout_tty(void);
double rt_now(void);
/* The median of v[n] (0 when n is 0). */
double rt_median(const double *v, int64_t n);
/* Elements of the ndim sizes in shape. */
static inline int64_t rt_elems(int64_t ndim, const int64_t *shape)
{
	int64_t n = 1;
	for (int64_t i = 0; i < ndim; i++)
		n *= shape[i];
	return n;
}

/* The rows of dense_crossentropy_ids_grad's description d (its ids' elements). */
static inline int64_t rt_head_rows(const int64_t *d)
{
	return rt_elems(RT_ARG_NDIM(d, 2), &RT_ARG_DIM(d, 2, 0));
}

/* The rows of its blocks: op_head_block_rows, or fewer where AUTOTM_HEAD_BLOCK_ROWS asks (tests; the scratch
   of a whole block still fits). Read when the kernel is made, not at each launch. */
static inline int64_t rt_head_block_rows(const int64_t *d)
{
	int64_t per = op_head_block_rows(rt_head_rows(d), RT_ARG_DIM(d, 1, 0));
	const char *e = getenv("AUTOTM_HEAD_BLOCK_ROWS");
	return e && atoll(e) > 0 && atoll(e) < per ? atoll(e) : per;
}

/* ---- the backend table --------------------------------------------------- */

/* Where the CPU backend's slow pool comes from (--slow). */
typedef enum RtSlowKind {
	RT_SLOW_PMEM, /* memkind_create_pmem on a directory (any file system) */
	RT_SLOW_DAX,  /* memkind's MEMKIND_DAX_KMEM (persistent memory as a NUMA node) */
	RT_SLOW_NUMA, /* anonymous memory bound to one NUMA node (mbind) */
} RtSlowKind;

/*
 * A pool: the one allocation the memory plan's offsets point into. The
 * first four fields mean the same on every backend; what a backend needs
 * to free and describe its pool is its own, behind `priv`.
 */
typedef struct RtPool {
	const char *name; /* "fast" or "slow", for messages */
	void *base;       /* first byte; NULL when the pool is empty */
	int64_t bytes;    /* bytes the program asked for */
	int64_t mapped;   /* bytes allocated (bytes rounded up to the alignment) */
	void *priv;       /* the backend's part: a CpuPool (cpu/pool.c) or a GpuPool
	                     (cuda/memory.c); NULL until the pool is opened */
} RtPool;

/* A fast pool of `bytes` under a non-zero `limit`: fatal if over it (rt.c, for both backends). */
void rt_pool_fast_check(int64_t bytes, int64_t limit);

/* What pools take, before they are made (RtMemoryOps.footprint). */
typedef struct RtFootprint {
	int64_t host_fast;    /* bytes of host memory the fast pool takes (0: it is a device's) */
	int64_t host_slow;    /* the same for the slow pool (0: it is in a file or another node) */
	const char *slow_where; /* where a slow pool in host memory is, for messages (" in tmpfs") */
	int64_t device;       /* bytes of device memory the pools take */
	int64_t device_free;  /* the device's free memory; -1 without a device */
} RtFootprint;

/* Before the pools are made: fatal, with the figures, if they need more memory than there is (memcheck.c). */
void rt_check_memory(const RtCtx *ctx);

/*
 * Memory: the pools, and the way between host memory and them. A pool is
 * opened zeroed, and every failure is fatal.
 */
typedef struct RtMemoryOps {
	/* What pools of these sizes would take, from the host and from a device (see RtFootprint). */
	void (*footprint)(int64_t fast, int64_t slow, RtSlowKind kind, const char *dir, bool managed, RtFootprint *out);
	/* The fast pool; fatal if over a non-zero limit (rt_pool_fast_check). */
	void (*open_fast)(RtPool *p, int64_t bytes, int64_t limit);
	/*
	 * The fast pool of an RT_PROGRAM_MANAGED program: managed memory on a
	 * device capped at a non-zero limit; fatal on a backend without it.
	 */
	void (*open_managed)(RtPool *p, int64_t bytes, int64_t limit);
	/*
	 * The slow pool. The CPU's comes from `kind`; for RT_SLOW_PMEM in a
	 * fresh directory made with mkdtemp inside `dir` (NULL: $TMPDIR or
	 * /tmp), removed at exit, on error and on SIGINT/SIGTERM/SIGHUP. A
	 * GPU's is pinned host memory and warns that the options do not apply.
	 */
	void (*open_slow)(RtPool *p, int64_t bytes, RtSlowKind kind, const char *dir, int numa_node);
	/* Free a pool, opened or only named, and leave it empty with its name. */
	void (*close)(RtPool *p);
	/* Where a pool lives, for reports: "DRAM", "pmem file in /tmp/autotm-slow.x1y2z3". */
	const char *(*where)(const RtPool *p, char *buf, size_t size);
	/*
	 * Host memory into a pool, and back: the only way the shared files
	 * touch tensors. Each returns when its copy is done, ordered after
	 * every kernel and move launched before it.
	 */
	void (*store)(void *dst, const void *src, size_t bytes);
	void (*load)(void *dst, const void *src, size_t bytes); /* see store */
	/*
	 * Remove what the pools made in the file system (the pmem pool's
	 * directory), async-signal-safely: rt_exit_error's last act.
	 */
	void (*remove_temp_dirs)(void);
} RtMemoryOps;

/*
 * Copies between the pools, as generated code asks for them: rt_move,
 * rt_move_async and rt_move_wait. Waiting for an asynchronous copy waits
 * for every copy submitted before it too. A handle is the copy's
 * sequence number folded into 1..INT32_MAX.
 */
typedef struct RtCopyOps {
	/* rt_move: a copy that the kernels and copies launched after it see done. */
	void (*move)(void *dst, const void *src, size_t bytes);
	/* Start the asynchronous copies' machinery (a copy thread, copy streams): the `copier`. */
	void *(*open)(void);
	/* Drain, stop and free it. */
	void (*close)(void *copier);
	/* Start a copy; returns its handle (positive). */
	int32_t (*submit)(void *copier, void *dst, const void *src, size_t bytes);
	/* The kernels and copies launched next see the copy with this handle, and every earlier one, done. */
	void (*wait)(void *copier, int32_t handle);
	/* Block the host until every copy submitted is done. */
	void (*drain)(void *copier);
	/* Copies submitted so far, and their bytes. */
	void (*stats)(void *copier, int64_t *count, int64_t *bytes);
} RtCopyOps;

/*
 * Kernels: created from descriptions (rt.h's layout), launched on tensor
 * addresses. `state` is what open() returned. Creation failures are
 * fatal (rt_fatal); launch never fails.
 */
typedef struct RtKernelOps {
	void (*prepare)(int argc, char **argv);                        /* first thing rt_begin does */
	int (*cores)(void);                                            /* the default --threads */
	void *(*open)(int threads, int64_t scratch_budget);            /* engine, stream; the scratch the kernels may
	                                                                  take where they can choose (-1: any) */
	void (*close)(void *state);                                    /* release them */
	void *(*create)(void *state, int32_t id, const int64_t *desc); /* one kernel */
	void (*launch)(void *state, void *kernel, void *const *args, uint64_t step); /* run it */
	void (*destroy)(void *state, void *kernel);                    /* free one kernel */
	const char *(*impl_name)(void *kernel);                        /* "oneDNN gemm:jit" or "plain C" */
	int64_t (*scratch_bytes)(void *state);                         /* fast memory kernels use outside the pools:
	                                                                  the most any kernel made so far needs */
	int64_t (*kernel_scratch)(void *kernel);                       /* what this kernel needs of it */
	void (*sync)(void *state);                                     /* wait for every kernel launched */
} RtKernelOps;

/* A backend: one machine's memory tiers, copies and kernels. */
typedef struct RtBackend {
	const char *name;    /* "cpu" or "cuda": reports and the results record */
	RtMemoryOps memory;  /* the pools and host staging */
	RtCopyOps copies;    /* the moves */
	RtKernelOps kernels; /* the kernels */
} RtBackend;

extern const RtBackend rt_cpu_backend;  /* cpu/backend.c, in libautotmrt.a */
extern const RtBackend rt_cuda_backend; /* cuda/backend.c, in libautotmrt-cuda.a */
/* The backend of the library linked: &rt_cpu_backend or &rt_cuda_backend. */
extern const RtBackend *const rt_backend;

/* ops.def's arity of an op; op must be one. */
void rt_op_arity(int64_t op, int *min_in, int *max_in, int *nout);

/* ---- the context ------------------------------------------------------- */

/* The command line of a generated program. */
typedef struct RtOptions {
	int64_t iters;            /* --iters: training steps */
	bool iters_given;         /* --iters was given */
	const char *data;         /* --data: dataset directory */
	int64_t epochs;           /* --epochs (0: not given) */
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
	bool seed_given;          /* --seed was given */
	const char *checkpoint;   /* --checkpoint: the directory checkpoints are saved in */
	int64_t save_every;       /* --save-every: steps between checkpoints (0: only at the end) */
	const char *resume;       /* --resume: the directory of the checkpoint to continue */
	const char *plot;         /* --plot: the loss plot to draw at the end (.png or .svg) */
	const char *val;          /* --val: the dataset a training program evaluates */
	int64_t eval_every;       /* --eval-every: steps between evaluations (0: only at the end) */
	const char *outputs;      /* --outputs: an evaluation program's logits of every sample (.npy) */
	bool overcommit;          /* --overcommit: make the pools even where they exceed the free memory */
} RtOptions;

/* A kernel created by rt_kernel. */
typedef struct RtKernelSlot {
	void *impl;        /* the backend's kernel; NULL: id not created */
	int64_t op;        /* RtOp, for reports */
	int nargs;         /* its arguments, inputs then outputs */
	int64_t calls;     /* --profile-kernels: launches */
	double seconds;    /* --profile-kernels: total time in them */
} RtKernelSlot;

/* The batch of an input or labels tensor, kept on the host and copied in each step. */
typedef struct RtBatch {
	float *data;        /* the elements; NULL until rt_tensor declares the tensor */
	int64_t bytes;      /* their size */
	const char *name;   /* the tensor's name */
	int ndim;           /* its dimensions, the batch first */
	int64_t shape[RT_MAX_DIMS]; /* its sizes */
	int32_t dtype;      /* RT_DTYPE_*: i32 ids are held here as floats (exact: fewer than 2^24) */
	int64_t range;      /* RT_DTYPE_I32: the ids are in [0, range) */
	int32_t *ids;       /* RT_DTYPE_I32: the batch converted for the device (rt_data) */
} RtBatch;

/* A weight or running statistic to save at the end (--save-weights). */
typedef struct RtWeight {
	char *name;                  /* its name in the model */
	int32_t kind;                /* RT_TENSOR_WEIGHT, _STATE or _STATS */
	int32_t pool;                /* RT_POOL_* */
	int64_t offset;              /* byte offset in it */
	int ndim;                    /* dimensions */
	int64_t shape[RT_MAX_DIMS];  /* sizes */
} RtWeight;

struct RtCtx {
	const RtProgram *program;  /* what the compiler knows */
	int rank, nranks;          /* data parallel (ranks.c): this process's rank of nranks (0 of 1 alone) */
	RtOptions opt;             /* the command line */
	const RtBackend *backend;  /* rt_backend: memory, copies and kernels */
	RtPool fast, slow;         /* RT_POOL_FAST, RT_POOL_SLOW */
	void *copier;              /* the backend's asynchronous copies (copies.open) */
	void *kernel_state;        /* its kernels' engine and stream (kernels.open) */
	RtKernelSlot *kernels;     /* by id */
	int32_t nkernel_slots;     /* entries in kernels */
	int32_t nkernels;          /* kernels created */
	RtBatch batch[2];          /* RT_DATA_INPUT, RT_DATA_LABELS */
	RtWeight *weights;         /* weights declared, for --save-weights */
	int nweights, weights_cap; /* entries in weights, and room */
	TioFile *weights_file;     /* --weights, open until the first step */
	int weights_used;          /* its tensors the program loaded */
	int stats_missing;         /* running statistics it lacked (warned once) */
	bool resuming;             /* --resume: weights_file is the checkpoint, state included */
	uint64_t first_step;       /* the step this run starts at (--resume: the checkpoint's) */
	char *checkpoint_path;     /* --checkpoint: DIR/checkpoint.safetensors */
	char *resume_path;         /* --resume: DIR/checkpoint.safetensors (opt.weights points to it) */
	uint64_t checkpoint_step;  /* the step of the last checkpoint this run saved (UINT64_MAX: none) */
	bool checkpoint_failed;    /* saving one failed (the run's status becomes 1) */
	int ntensors;              /* rt_tensor calls so far */
	uint64_t step;             /* steps completed (dropout masks depend on it) */
	double step_start;         /* rt_now() at rt_step_begin */
	bool in_step;              /* between rt_step_begin and rt_step_end */
	double *step_times;        /* seconds of each step */
	double *losses;            /* loss of each step */
	int64_t nsteps, steps_cap; /* entries in both, and room */
	struct RtFeed *feed;       /* --data: the dataset and its prefetching (feed.c); NULL without */
	double run_start;          /* rt_now() at the first rt_step_begin */
	struct RtEval *eval;       /* the evaluation pass (eval.c); NULL without */
	bool eval_failed;          /* writing an evaluation's --outputs failed (the status becomes 1) */
	bool stopped;              /* a signal ended the run: no last evaluation */
	bool progress_tty;         /* stdout is a terminal: one progress line, rewritten */
	double progress_shown;     /* rt_now() when it was last written */
};

/* data.c: where a tensor of `bytes` lives, checked against its pool's size. */
float *rt_data_place(RtCtx *ctx, int32_t pool, int64_t offset, int64_t bytes, const char *name);
/* rt.c: end a progress line left open on the terminal, before other output. */
void rt_end_progress_line(void);
/* rt.c: erase a progress line left open on the terminal. */
void rt_clear_progress_line(void);
/* rt.c: write the progress line on the terminal (stdout), replacing the last. */
void rt_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * checkpoint.c: --resume (the checkpoint becomes the weights file, the
 * step and seed the checkpoint's) and --checkpoint (the directory made
 * and checked, SIGINT and SIGTERM caught); fatal on a bad checkpoint.
 */
void rt_checkpoint_begin(RtCtx *ctx);
/*
 * checkpoint.c: where the run of checkpoint f stands: its step (at most
 * RT_MAX_STEPS) and seed, from the header's __metadata__ (format, model,
 * step, seed, each checked; the model against `model`). 0, or -1 with a
 * message naming the file.
 */
int rt_checkpoint_position(const TioFile *f, const char *model, uint64_t *step, uint64_t *seed, char *err,
                           size_t errlen);
/* checkpoint.c: once the run's steps are known: refuse a checkpoint beyond them, announce the resumption. */
void rt_checkpoint_iters(RtCtx *ctx);
/* checkpoint.c: save the weights, state and statistics with the run's position; false after a message. */
bool rt_checkpoint_save(RtCtx *ctx);
/* checkpoint.c: the signal that asked the run to stop (0: none). */
int rt_checkpoint_stop_signal(void);

/* data.c: close --weights after the last rt_tensor (warns about unused tensors). */
void rt_data_finish_loading(RtCtx *ctx);
/*
 * data.c: write the weights and running statistics (state: and the
 * optimizer's state) to path as safetensors with the header metadata
 * given, atomically; their bytes in *bytes. 0, or -1 with err.
 */
int rt_data_write(RtCtx *ctx, const char *path, bool state, const TioMeta *meta, int nmeta, int64_t *bytes,
                  char *err, size_t errlen);
/* data.c: save the weights to --save-weights; false (after an error message) on failure. */
bool rt_data_save_weights(RtCtx *ctx);
/* data.c: free the batches and the weight list. */
void rt_data_free(RtCtx *ctx);

/*
 * feed.c: open --data against the input and labels tensors, set
 * opt.iters from --epochs or --iters (one epoch without either) and
 * announce it; fatal on a dataset that does not fit the model.
 */
void rt_feed_open(RtCtx *ctx);

/* ---- ranks.c: data-parallel training over MPI (docs/distributed.md) ---- */

/*
 * Join the ranks when started by mpirun (one rank otherwise): ctx->rank
 * and nranks, the check that every rank runs this program, and a watchdog
 * that stops a rank waiting longer than AUTOTM_RANK_TIMEOUT seconds (600)
 * in a collective. Ranks other than 0 write nothing (no report, no
 * results, weights, checkpoints or plots).
 */
void rt_ranks_begin(RtCtx *ctx);
/* dst = the mean of src over the ranks, the same bits on every rank (dst may be src); one rank: a copy. */
void rt_allreduce_mean(float *dst, const float *src, int64_t n);
/* The mean of v over the ranks (a step's loss; v itself on one rank). */
double rt_ranks_mean(double v);
/*
 * exchange.c: the gradients' exchange on a thread of its own, in buckets,
 * overlapping the backward pass (AUTOTM_RANKS_OVERLAP=0: in the allreduce
 * kernels instead). rt_exchange_submit hands over a gradient to average in
 * place (false where the thread is not running: the caller exchanges it);
 * rt_exchange_need waits until no gradient among ptrs is still being
 * exchanged (before a kernel or a move); rt_exchange_drain ends a step's
 * exchanges; rt_exchange_mean is one exchange (ranks.c), on the calling thread.
 */
void rt_exchange_start(void);
bool rt_exchange_submit(float *buf, int64_t n);
void rt_exchange_need(void *const *ptrs, int n);
void rt_exchange_drain(void);
void rt_exchange_stop(void);
void rt_exchange_mean(float *buf, int64_t n);
/* The buckets sent and the gradients in them so far; whether the thread runs. */
bool rt_exchange_counts(int64_t *messages, int64_t *gradients);
/*
 * cuda/nccl.c (the GPU runtime): NCCL's communicator of `size` ranks
 * (rank -1: of one, where none is open yet), the gradients' mean on a
 * stream, the check that every rank holds h, a mean of the ranks' v.
 */
void rt_gpu_nccl_open(int rank, int size);
bool rt_gpu_nccl_available(void); /* whether NCCL's library loads (without opening anything) */
void rt_gpu_allreduce_mean(const float *src, float *dst, int64_t n, void *stream);
bool rt_gpu_nccl_same(uint64_t h);
double rt_gpu_nccl_mean(double v);
void rt_gpu_nccl_close(void);
/* This rank waits for the others in `what` from now (NULL: no longer): the watchdog's (ranks.c). */
void rt_ranks_waiting(const char *what);
/* After each step, with AUTOTM_CHECK_RANKS=1 (a debug mode): stop if the ranks' weights differ. */
void rt_ranks_step_end(RtCtx *ctx);
/* At the end: the check that every rank holds the same weights, then leave MPI. False (and why) if not. */
bool rt_ranks_end(RtCtx *ctx);
/*
 * feed.c: put step ctx->step's batch into the input and labels batches;
 * start preparing the next. False with a message naming the file when the
 * batch cannot be read (a file changed under the run).
 */
bool rt_feed_next(RtCtx *ctx, char *err, size_t errlen);
/* feed.c: the epoch (from 0) and the steps an epoch of step `step` (from 0); 0 without --data. */
int64_t rt_feed_epoch(const RtCtx *ctx, int64_t step, int64_t *steps_per_epoch);
/* feed.c: stop the prefetching and close the dataset. */
void rt_feed_close(RtCtx *ctx);

/* One evaluation of a run. */
typedef struct RtEvalResult {
	int64_t step;     /* after this many training steps (from the run's start) */
	double loss;      /* mean loss over the samples */
	double accuracy;  /* the fraction whose first largest logit is their class */
	int64_t samples;  /* samples evaluated */
	double seconds;   /* the evaluation's time, parking included */
} RtEvalResult;

/* eval.c: whether an evaluation is due after the step just done (at_end: at the end of the run). */
bool rt_eval_due(const RtCtx *ctx, bool at_end);
/* eval.c: evaluate the whole evaluation set, report it and remember it; false after an error message. */
bool rt_evaluate(RtCtx *ctx);
/* eval.c: the batch rt_data stores during an evaluation (NULL: none is running). */
const float *rt_eval_batch(const RtCtx *ctx, int32_t which);
/* eval.c: the evaluations so far, the median batch time of the last, and the predicted batch time (0: none). */
const RtEvalResult *rt_eval_results(const RtCtx *ctx, int *n, double *batch_seconds, double *predicted);
/* eval.c: close the evaluation set, free the pass. */
void rt_eval_free(RtCtx *ctx);

/* An update kernel's optimizer, from its description (compiler/cost/kdesc.c writes it). */
static inline OptimHyper rt_optim_hyper(const int64_t *d)
{
	OptimHyper h;
	double f[9];
	const int at[9] = {RT_D_LR,        RT_D_MOMENTUM, RT_D_WD,    RT_D_BETA1, RT_D_BETA2,
	                   RT_D_ADAM_EPS,  RT_D_CLIP,     RT_D_FLOOR, RT_D_GAMMA};
	for (int i = 0; i < 9; i++)
		memcpy(&f[i], &d[at[i]], sizeof f[i]);
	h.kind = (int32_t)d[RT_D_OPTIM], h.nesterov = (int32_t)d[RT_D_NESTEROV];
	h.lr = f[0], h.momentum = f[1], h.weight_decay = f[2], h.beta1 = f[3], h.beta2 = f[4];
	h.eps = f[5], h.clip = f[6];
	h.sched.kind = (int32_t)d[RT_D_SCHED], h.sched.warmup = d[RT_D_WARMUP], h.sched.steps = d[RT_D_SCHED_STEPS];
	h.sched.floor = f[7], h.sched.every = d[RT_D_EVERY], h.sched.gamma = f[8];
	return h;
}

/* results.c: write the results record to path, atomically; false after an error message. */
bool rt_results_write(const RtCtx *ctx, const char *path, double median);

#endif
