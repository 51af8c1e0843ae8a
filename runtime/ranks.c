/*
 * ranks.c - data-parallel training (rt_internal.h, docs/distributed.md).
 *
 * Every rank runs the same program on its own shard of each batch; the
 * all-reduce nodes the compiler put between the weights' gradients and
 * their readers (compiler/front/ranks.c) average the gradients, so every
 * rank applies the same update, which rt_end checks by comparing a hash
 * of the weights across the ranks.
 *
 * The ranks talk through a transport: MPI in the CPU runtime (built with
 * AUTOTM_MPI: a mean is a sum reduced to rank 0, divided there and
 * broadcast, so every rank holds the same bits; exchange.c runs it beside
 * the backward pass), NCCL in the GPU runtime (AUTOTM_NCCL, cuda/nccl.c:
 * the ranks' number from mpirun's environment, the kernels' all-reduce on
 * a communication stream beside the backward pass).
 *
 * A rank that dies makes mpirun stop the others. A rank that hangs would
 * leave the others waiting in a collective for ever: a watchdog thread
 * ends a rank that has waited longer than AUTOTM_RANK_TIMEOUT seconds,
 * with a message, which mpirun then turns into the end of the job.
 */
#include "rt_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	bool on;                 /* the transport is open: several ranks */
	int rank, size;
	double timeout;          /* seconds a collective may take */
	bool check_steps;        /* AUTOTM_CHECK_RANKS: compare the weights after every step */
	const char *volatile in; /* the collective under way, or NULL */
	volatile double since;   /* when it began */
} R = {.size = 1};

/* The rank and the number of ranks mpirun (Open MPI's, or a PMI launcher) says; false if not started by one. */
static bool launcher_ranks(int *rank, int *size)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
	const char *n = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("PMI_SIZE");
	*rank = r ? atoi(r) : 0;
	*size = n ? atoi(n) : 1;
	return r || n || getenv("PMIX_RANK");
}

/* Waiting for the other ranks in `what` from now (NULL: no longer), for the watchdog. */
void rt_ranks_waiting(const char *what)
{
	R.since = rt_now();
	R.in = what;
}

/* ---- transports: open, the same value everywhere, a mean, close ---------------- */

#if defined(AUTOTM_MPI)

#include <mpi.h>

static int provided;

static void check(int rc, const char *what)
{
	if (rc == MPI_SUCCESS)
		return;
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(rc, s, &n);
	rt_fatal("rank %d of %d: %s failed: %s", R.rank, R.size, what, s);
}

static void transport_open(void)
{
	rt_ranks_waiting("the start of MPI (MPI_Init)");
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
	rt_ranks_waiting(NULL);
	if (rc != MPI_SUCCESS)
		rt_fatal("cannot start MPI (MPI_Init_thread: error %d)", rc);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &R.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &R.size);
}

/* Whether every rank holds h (its minimum and that of its complement agree). */
static bool transport_same(uint64_t h, const char *what)
{
	unsigned long long v[2] = {h, ~(unsigned long long)h}, r[2];
	rt_ranks_waiting(what);
	check(MPI_Allreduce(v, r, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD), what);
	rt_ranks_waiting(NULL);
	return r[0] == ~r[1];
}

static double transport_mean(double v)
{
	double sum = 0;
	rt_ranks_waiting("the mean of the loss");
	check(MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
	rt_ranks_waiting(NULL);
	return sum / R.size;
}

static void transport_close(void)
{
	MPI_Finalize();
}

void rt_exchange_mean(float *buf, int64_t n)
{
	rt_ranks_waiting("an all-reduce of the gradients");
	for (int64_t at = 0; at < n; at += INT_MAX / 2) { /* MPI counts are int */
		int c = (int)(n - at < INT_MAX / 2 ? n - at : INT_MAX / 2);
		check(MPI_Reduce(R.rank == 0 ? MPI_IN_PLACE : (const void *)(buf + at), buf + at, c, MPI_FLOAT, MPI_SUM, 0,
		                 MPI_COMM_WORLD), "MPI_Reduce");
		if (R.rank == 0)
			for (int i = 0; i < c; i++)
				buf[at + i] /= (float)R.size;
		check(MPI_Bcast(buf + at, c, MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
	}
	rt_ranks_waiting(NULL);
}

/* The exchange's thread, unless AUTOTM_RANKS_OVERLAP=0 or MPI cannot have it. */
static void transport_exchange(void)
{
	const char *overlap = getenv("AUTOTM_RANKS_OVERLAP");
	if (provided >= MPI_THREAD_SERIALIZED && !(overlap && strcmp(overlap, "0") == 0))
		rt_exchange_start();
}

#elif defined(AUTOTM_NCCL)

static void transport_open(void)
{
	rt_ranks_waiting("the start of NCCL");
	rt_gpu_nccl_open(R.rank, R.size);
	rt_ranks_waiting(NULL);
}

static bool transport_same(uint64_t h, const char *what)
{
	rt_ranks_waiting(what);
	bool same = rt_gpu_nccl_same(h);
	rt_ranks_waiting(NULL);
	return same;
}

static double transport_mean(double v)
{
	rt_ranks_waiting("the mean of the loss");
	double m = rt_gpu_nccl_mean(v);
	rt_ranks_waiting(NULL);
	return m;
}

static void transport_close(void)
{
	rt_gpu_nccl_close();
}

static void transport_exchange(void)
{
}

#else
#error "ranks.c: build it with AUTOTM_MPI (the CPU runtime) or AUTOTM_NCCL (the GPU runtime)"
#endif

#if !defined(AUTOTM_MPI) /* the exchange's thread is MPI's (exchange.c); NCCL's stream is cuda/nccl.c's */
void rt_exchange_start(void)
{
}

bool rt_exchange_submit(float *buf, int64_t n)
{
	(void)buf;
	(void)n;
	return false;
}

void rt_exchange_stop(void)
{
	rt_exchange_drain();
}

void rt_exchange_mean(float *buf, int64_t n)
{
	(void)buf;
	(void)n;
	RT_ICE("an exchange of gradients without MPI");
}
#endif

/* ---- the ranks ------------------------------------------------------------------- */

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(1);
		const char *what = R.in;
		double since = R.since;
		if (what && rt_now() - since > R.timeout) {
			fprintf(stderr, "%s: error: rank %d of %d: waited %.0f s in %s for the other ranks: one of them has "
			                "stopped or hangs; stopping (AUTOTM_RANK_TIMEOUT sets the wait)\n",
			        rt_prog_name(), R.rank, R.size, rt_now() - since, what);
			fflush(stderr);
			_exit(1);
		}
	}
	return NULL;
}

/* 64-bit FNV-1a of n bytes, continuing h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

void rt_ranks_begin(RtCtx *ctx)
{
	ctx->rank = 0;
	ctx->nranks = 1;
	if (!launcher_ranks(&R.rank, &R.size) || R.size == 1)
		return; /* (a GPU program alone opens NCCL for its all-reduce kernels itself) */
	const char *t = getenv("AUTOTM_RANK_TIMEOUT");
	R.timeout = t && atof(t) > 0 ? atof(t) : 600;
	R.check_steps = getenv("AUTOTM_CHECK_RANKS") && strcmp(getenv("AUTOTM_CHECK_RANKS"), "0") != 0;
	pthread_t th; /* before the transport opens, which may itself wait for the other ranks */
	if (pthread_create(&th, NULL, watchdog, NULL) != 0 || pthread_detach(th) != 0)
		rt_fatal("rank %d: cannot start the watchdog thread", R.rank);
	transport_open();
	R.on = true;
	ctx->rank = R.rank;
	ctx->nranks = R.size;
	/* the program: its constants and the compile-time record (model, parameters, placement) */
	const RtProgram *p = ctx->program;
	int64_t k[] = {p->fast_bytes, p->slow_bytes, p->fast_limit, p->nkernels, p->ntensors, p->flags};
	uint64_t h = fnv(1469598103934665603ull, k, sizeof k);
	h = fnv(h, p->model, strlen(p->model));
	h = p->record ? fnv(h, p->record, strlen(p->record)) : h;
	if (!transport_same(h, "the check of the program"))
		rt_fatal("rank %d of %d: the ranks run different programs (another model, -D, placement or build): start "
		         "every rank from one `autotmc run --ranks N`, or one program under mpirun", R.rank, R.size);
	transport_exchange();
	if (R.rank != 0) { /* rank 0 reports and writes */
		ctx->opt.quiet = true;
		ctx->opt.save_weights = ctx->opt.results = ctx->opt.plot = ctx->opt.checkpoint = NULL;
		ctx->opt.outputs = NULL;
	}
}

void rt_allreduce_mean(float *dst, const float *src, int64_t n)
{
	if (dst != src)
		memmove(dst, src, sizeof(float) * (size_t)n);
	if (R.size > 1 && !rt_exchange_submit(dst, n)) /* on the exchange's thread, else here */
		rt_exchange_mean(dst, n);
}

/* A hash of the weights and optimizer state as this rank holds them. */
static uint64_t weights_hash(RtCtx *ctx)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < ctx->nweights; i++) { /* weights and optimizer state (each rank's running statistics
		                                            are its own batches', as under PyTorch's DDP without SyncBatchNorm) */
		const RtWeight *w = &ctx->weights[i];
		if (w->kind == RT_TENSOR_STATS)
			continue;
		int64_t b = rt_elems(w->ndim, w->shape) * (int64_t)sizeof(float);
		float *host = rt_xmalloc((size_t)(b ? b : 1));
		ctx->backend->memory.load(host, rt_data_place(ctx, w->pool, w->offset, b, w->name), (size_t)b);
		h = fnv(h, host, (size_t)b);
		free(host);
	}
	return h;
}

double rt_ranks_mean(double v)
{
	rt_exchange_drain(); /* the step's exchanges are done: this thread may call MPI */
	return R.on ? transport_mean(v) : v;
}

void rt_ranks_step_end(RtCtx *ctx)
{
	if (!R.on || !R.check_steps)
		return;
	if (!transport_same(weights_hash(ctx), "the check of the weights after a step"))
		rt_fatal("rank %d of %d: the ranks' weights differ after step %lld (AUTOTM_CHECK_RANKS)", R.rank, R.size,
		         (long long)ctx->step);
}

bool rt_ranks_end(RtCtx *ctx)
{
	if (!R.on)
		return true;
	int64_t messages, gradients;
	bool overlapped = rt_exchange_counts(&messages, &gradients);
	rt_exchange_stop();
	bool same = transport_same(weights_hash(ctx), "the check of the weights");
	if (!same)
		fprintf(stderr, "%s: error: rank %d of %d: the ranks' weights differ at the end (a bug: the gradients' "
		                "average should leave every rank the same bits)\n", rt_prog_name(), R.rank, R.size);
#if defined(AUTOTM_NCCL)
	else if (R.rank == 0 && !ctx->opt.quiet && overlapped)
		printf("ranks: %d, gradients averaged on a communication stream beside the backward pass, %.1f in a bucket "
		       "(%lld NCCL groups); weights the same on every rank (checked)\n", R.size,
		       messages ? (double)gradients / (double)messages : 0.0, (long long)messages);
#else
	else if (R.rank == 0 && !ctx->opt.quiet && overlapped)
		printf("ranks: %d, gradients exchanged beside the backward pass, %.1f in a bucket (%lld buckets); weights "
		       "the same on every rank (checked)\n", R.size, messages ? (double)gradients / (double)messages : 0.0,
		       (long long)messages);
#endif
	else if (R.rank == 0 && !ctx->opt.quiet)
		printf("ranks: %d, gradients exchanged in the allreduce kernels; weights the same on every rank (checked)\n",
		       R.size);
	transport_close();
	R.on = false;
	return same;
}
