/*
 * ranks.c - data-parallel training over MPI (rt_internal.h, docs/distributed.md).
 *
 * Every rank runs the same program on its own shard of each batch; the
 * all-reduce nodes the compiler put between the weights' gradients and
 * their readers (compiler/front/ranks.c) average the gradients, so every
 * rank applies the same update. The average is a sum reduced to rank 0,
 * divided there, and broadcast: every rank then holds the same bits (an
 * MPI_Allreduce may round differently on different ranks), which rt_end
 * checks by comparing a hash of the weights across the ranks.
 *
 * A rank that dies makes mpirun stop the others. A rank that hangs would
 * leave the others waiting in a collective for ever: a watchdog thread
 * ends a rank that has waited longer than AUTOTM_RANK_TIMEOUT seconds,
 * with a message, which mpirun then turns into the end of the job.
 *
 * Built without AUTOTM_MPI (the GPU runtime, which must run where only
 * the CUDA libraries are), a program is one rank.
 */
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

/* Whether this process was started by mpirun (Open MPI's, or any PMIx/PMI launcher). */
static bool under_mpirun(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

#ifndef AUTOTM_MPI

void rt_ranks_begin(RtCtx *ctx)
{
	const char *n = getenv("OMPI_COMM_WORLD_SIZE");
	if (under_mpirun() && !(n && strcmp(n, "1") == 0))
		rt_fatal("this runtime trains on one rank (the GPU runtime has no all-reduce yet): run it without mpirun");
	ctx->rank = 0;
	ctx->nranks = 1;
}

void rt_allreduce_mean(float *dst, const float *src, int64_t n)
{
	if (dst != src)
		memmove(dst, src, sizeof(float) * (size_t)n);
}

double rt_ranks_mean(double v)
{
	return v;
}

void rt_exchange_need(void *const *ptrs, int n)
{
	(void)ptrs;
	(void)n;
}

void rt_ranks_step_end(RtCtx *ctx)
{
	(void)ctx;
}

bool rt_ranks_end(RtCtx *ctx)
{
	(void)ctx;
	return true;
}

#else

#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	bool on;                 /* MPI is initialised */
	int rank, size;
	double timeout;          /* seconds a collective may take */
	bool check_steps;        /* AUTOTM_CHECK_RANKS: compare the weights after every step */
	const char *volatile in; /* the collective under way, or NULL */
	volatile double since;   /* when it began */
} R = {.size = 1};

static void check(int rc, const char *what)
{
	if (rc == MPI_SUCCESS)
		return;
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(rc, s, &n);
	rt_fatal("rank %d of %d: %s failed: %s", R.rank, R.size, what, s);
}

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

/* Whether every rank holds h (its minimum and maximum over the ranks agree). */
static bool same_everywhere(uint64_t h, const char *what)
{
	unsigned long long v[2] = {h, ~(unsigned long long)h}, r[2];
	R.in = what;
	R.since = rt_now();
	check(MPI_Allreduce(v, r, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD), what);
	R.in = NULL;
	return r[0] == ~r[1];
}

void rt_ranks_begin(RtCtx *ctx)
{
	ctx->rank = 0;
	ctx->nranks = 1;
	if (!under_mpirun())
		return;
	const char *t = getenv("AUTOTM_RANK_TIMEOUT"), *r = getenv("OMPI_COMM_WORLD_RANK"),
	           *n = getenv("OMPI_COMM_WORLD_SIZE");
	R.timeout = t && atof(t) > 0 ? atof(t) : 600;
	R.check_steps = getenv("AUTOTM_CHECK_RANKS") && strcmp(getenv("AUTOTM_CHECK_RANKS"), "0") != 0;
	R.rank = r ? atoi(r) : 0; /* for the watchdog's messages until MPI says */
	R.size = n ? atoi(n) : 1;
	pthread_t th; /* before MPI_Init, which may itself wait for the other ranks */
	if (pthread_create(&th, NULL, watchdog, NULL) != 0 || pthread_detach(th) != 0)
		rt_fatal("rank %d: cannot start the watchdog thread", R.rank);
	R.in = "the start of MPI (MPI_Init)";
	R.since = rt_now();
	int provided, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
	R.in = NULL;
	if (rc != MPI_SUCCESS)
		rt_fatal("cannot start MPI (MPI_Init_thread: error %d)", rc);
	R.on = true;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &R.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &R.size);
	ctx->rank = R.rank;
	ctx->nranks = R.size;
	/* the program: its constants and the compile-time record (model, parameters, placement) */
	const RtProgram *p = ctx->program;
	int64_t k[] = {p->fast_bytes, p->slow_bytes, p->fast_limit, p->nkernels, p->ntensors, p->flags};
	uint64_t h = fnv(1469598103934665603ull, k, sizeof k);
	h = fnv(h, p->model, strlen(p->model));
	h = p->record ? fnv(h, p->record, strlen(p->record)) : h;
	if (!same_everywhere(h, "the check of the program"))
		rt_fatal("rank %d of %d: the ranks run different programs (another model, -D, placement or build): start "
		         "every rank from one `autotmc run --ranks N`, or one program under mpirun", R.rank, R.size);
	const char *overlap = getenv("AUTOTM_RANKS_OVERLAP");
	if (R.size > 1 && provided >= MPI_THREAD_SERIALIZED && !(overlap && strcmp(overlap, "0") == 0))
		rt_exchange_start();
	if (R.rank != 0) { /* rank 0 reports and writes */
		ctx->opt.quiet = true;
		ctx->opt.save_weights = ctx->opt.results = ctx->opt.plot = ctx->opt.checkpoint = NULL;
		ctx->opt.outputs = NULL;
	}
}

void rt_exchange_mean(float *buf, int64_t n)
{
	R.in = "an all-reduce of the gradients";
	R.since = rt_now();
	for (int64_t at = 0; at < n; at += INT_MAX / 2) { /* MPI counts are int */
		int c = (int)(n - at < INT_MAX / 2 ? n - at : INT_MAX / 2);
		check(MPI_Reduce(R.rank == 0 ? MPI_IN_PLACE : (const void *)(buf + at), buf + at, c, MPI_FLOAT, MPI_SUM, 0,
		                 MPI_COMM_WORLD), "MPI_Reduce");
		if (R.rank == 0)
			for (int i = 0; i < c; i++)
				buf[at + i] /= (float)R.size;
		check(MPI_Bcast(buf + at, c, MPI_FLOAT, 0, MPI_COMM_WORLD), "MPI_Bcast");
	}
	R.in = NULL;
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
	if (!R.on || R.size == 1)
		return v;
	double sum = 0;
	R.in = "the mean of the loss";
	R.since = rt_now();
	check(MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
	R.in = NULL;
	return sum / R.size;
}

void rt_ranks_step_end(RtCtx *ctx)
{
	if (!R.on || !R.check_steps)
		return;
	if (!same_everywhere(weights_hash(ctx), "the check of the weights after a step"))
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
	bool same = same_everywhere(weights_hash(ctx), "the check of the weights");
	if (!same)
		fprintf(stderr, "%s: error: rank %d of %d: the ranks' weights differ at the end (a bug: the gradients' "
		                "average should leave every rank the same bits)\n", rt_prog_name(), R.rank, R.size);
	else if (R.rank == 0 && !ctx->opt.quiet && overlapped)
		printf("ranks: %d, gradients exchanged beside the backward pass, %.1f in a bucket (%lld buckets); weights "
		       "the same on every rank (checked)\n", R.size, messages ? (double)gradients / (double)messages : 0.0,
		       (long long)messages);
	else if (R.rank == 0 && !ctx->opt.quiet)
		printf("ranks: %d, gradients exchanged in the allreduce kernels; weights the same on every rank (checked)\n",
		       R.size);
	MPI_Finalize();
	R.on = false;
	return same;
}

#endif
