/*
 * nccl.c - the GPU runtime's exchange between ranks, over NCCL (rt_internal.h's
 * rt_gpu_nccl_*; docs/distributed.md).
 *
 * NCCL is loaded when a program first needs it (dlopen of libnccl.so.2,
 * or $AUTOTM_NCCL_LIB): a GPU machine that has PyTorch has it, and a
 * program without all-reduce kernels never asks. Its few entry points and
 * constants are declared here, as NCCL 2's ABI has them, so that building
 * needs no nccl.h.
 *
 * The ranks find each other as NCCL asks: rank 0 makes the unique id and
 * writes it to a file the others read, $AUTOTM_NCCL_ID_FILE (on a file
 * system every machine sees), by default one per mpirun job in $TMPDIR
 * (one machine). The all-reduce averages (ncclAvg: every rank gets the
 * same bits, a reduce-scatter then an all-gather) on a communication
 * stream of its own, beside the backward pass, as DDP's buckets run.
 * Gradients go in buckets, as the CPU's exchange sends them (exchange.c):
 * an all-reduce kernel adds its gradient (averaged in place) to the open
 * bucket; the bucket closes when the next gradient would take it past
 * RT_RANKS_BUCKET_BYTES (a larger gradient goes alone), when a kernel or a
 * move needs one of its gradients, or at the step's end, all of which
 * depend on the program's order alone, so every rank closes the same
 * buckets. A bucket that closes waits, on the communication stream, for
 * the compute stream as it then stands (every gradient of the bucket
 * made), and its averages go as one NCCL group (ncclGroupStart/End: one
 * launch), followed by an event. Before a kernel or a move touches a
 * gradient still on its way (its update), rt_exchange_need waits for its
 * bucket's event (the host waits, so every stream is after it); a step
 * ends with rt_exchange_drain. AUTOTM_RANKS_OVERLAP=0 averages each
 * gradient on the compute stream instead, in the kernel's place.
 */
#include "gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct NcclComm *NcclComm;
typedef struct {
	char internal[128];
} NcclUniqueId;
enum { NCCL_SUCCESS = 0, NCCL_SUM = 0, NCCL_MAX = 2, NCCL_MIN = 3, NCCL_AVG = 4, NCCL_UINT64 = 5, NCCL_FLOAT32 = 7,
       NCCL_FLOAT64 = 8 };

static struct {
	void *lib;
	int (*get_unique_id)(NcclUniqueId *);
	int (*comm_init_rank)(NcclComm *, int, NcclUniqueId, int);
	int (*all_reduce)(const void *, void *, size_t, int, int, NcclComm, cudaStream_t);
	int (*comm_destroy)(NcclComm);
	int (*group_start)(void);
	int (*group_end)(void);
	const char *(*error_string)(int);
	NcclComm comm;
	int rank, size;
	char id_file[512];
	void *scratch; /* 16 bytes of device memory for the small reductions */
	bool overlap;        /* averages on the communication stream */
	cudaStream_t stream; /* the communication stream */
	cudaEvent_t ready;   /* the gradient made, on the compute stream */
	struct Pending {
		float *buf;
		int64_t n;
		cudaEvent_t done; /* recorded after its bucket's group */
	} *pend;                   /* this step's averages, in order, on the communication stream */
	int64_t npend, ndone, cap; /* handed over; known done (a prefix: the stream runs them in order); events made */
	int64_t open, open_bytes;  /* the open bucket: pend[open .. npend), its bytes; launched before it */
	int64_t total, buckets;    /* averages handed over in all; buckets launched */
} N;

static void check(int rc, const char *what)
{
	if (rc != NCCL_SUCCESS)
		rt_fatal("rank %d of %d: %s failed: %s", N.rank, N.size, what, N.error_string ? N.error_string(rc) : "?");
}

/* NCCL's library: $AUTOTM_NCCL_LIB, else the loader's libnccl.so.2. */
static const char *library(void)
{
	return getenv("AUTOTM_NCCL_LIB") ? getenv("AUTOTM_NCCL_LIB") : "libnccl.so.2";
}

bool rt_gpu_nccl_available(void)
{
	void *h = dlopen(library(), RTLD_NOW | RTLD_LOCAL);
	if (h)
		dlclose(h);
	return h != NULL;
}

static void load(void)
{
	const char *path = library();
	if (!(N.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		rt_fatal("cannot load NCCL (%s), which a GPU program for several ranks needs: %s (set AUTOTM_NCCL_LIB to "
		         "its path, PyTorch's nvidia/nccl/lib/libnccl.so.2 for one)", path, dlerror());
	*(void **)&N.get_unique_id = dlsym(N.lib, "ncclGetUniqueId");
	*(void **)&N.comm_init_rank = dlsym(N.lib, "ncclCommInitRank");
	*(void **)&N.all_reduce = dlsym(N.lib, "ncclAllReduce");
	*(void **)&N.comm_destroy = dlsym(N.lib, "ncclCommDestroy");
	*(void **)&N.group_start = dlsym(N.lib, "ncclGroupStart");
	*(void **)&N.group_end = dlsym(N.lib, "ncclGroupEnd");
	*(void **)&N.error_string = dlsym(N.lib, "ncclGetErrorString");
	if (!N.get_unique_id || !N.comm_init_rank || !N.all_reduce || !N.comm_destroy || !N.error_string ||
	    !N.group_start || !N.group_end)
		rt_fatal("%s is not NCCL 2 (an entry point is missing)", path);
}

/* The unique id: made by rank 0 and written to the id file, read from it by the others. */
static NcclUniqueId bootstrap(void)
{
	NcclUniqueId id;
	const char *file = getenv("AUTOTM_NCCL_ID_FILE"), *job = getenv("OMPI_MCA_ess_base_jobid");
	const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
	if (file)
		snprintf(N.id_file, sizeof N.id_file, "%s", file);
	else
		snprintf(N.id_file, sizeof N.id_file, "%s/autotm-nccl-%s", tmp, job ? job : "0");
	if (N.rank == 0) {
		check(N.get_unique_id(&id), "ncclGetUniqueId");
		char part[600];
		snprintf(part, sizeof part, "%s.part%d", N.id_file, (int)getpid());
		FILE *f = fopen(part, "wb");
		if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(part, N.id_file) != 0)
			rt_fatal("rank 0: cannot write the NCCL id to %s: %s", N.id_file, strerror(errno));
		return id;
	}
	for (int tries = 0; tries < 6000; tries++) { /* a minute */
		FILE *f = fopen(N.id_file, "rb");
		bool got = f && fread(&id, sizeof id, 1, f) == 1;
		if (f)
			fclose(f);
		if (got)
			return id;
		usleep(10000);
	}
	rt_fatal("rank %d of %d: rank 0's NCCL id did not appear in %s within a minute (set AUTOTM_NCCL_ID_FILE to a "
	         "file every machine sees)", N.rank, N.size, N.id_file);
}

void rt_gpu_nccl_open(int rank, int size)
{
	if (N.comm)
		return;
	if (rank < 0) { /* an all-reduce kernel's, where the ranks opened none: one rank */
		rank = 0;
		size = 1;
	}
	N.rank = rank;
	N.size = size;
	load();
	NcclUniqueId id;
	if (size > 1)
		id = bootstrap();
	else
		check(N.get_unique_id(&id), "ncclGetUniqueId");
	check(N.comm_init_rank(&N.comm, size, id, rank), "ncclCommInitRank");
	if (cudaMalloc(&N.scratch, 16) != cudaSuccess)
		rt_fatal("cannot allocate 16 bytes of device memory for NCCL");
	const char *overlap = getenv("AUTOTM_RANKS_OVERLAP");
	N.overlap = !(overlap && strcmp(overlap, "0") == 0);
	if (N.overlap && (cudaStreamCreateWithFlags(&N.stream, cudaStreamNonBlocking) != cudaSuccess ||
	                  cudaEventCreateWithFlags(&N.ready, cudaEventDisableTiming) != cudaSuccess))
		rt_fatal("cannot create the communication stream for NCCL");
}

/* The next pending average's slot, its event made where this is the first step to need so many. */
static struct Pending *next_pending(void)
{
	if (N.npend == N.cap) {
		int64_t cap = N.cap ? 2 * N.cap : 256;
		struct Pending *p = realloc(N.pend, sizeof *p * (size_t)cap);
		if (!p)
			rt_fatal("out of memory for the all-reduces of a step");
		N.pend = p;
		for (int64_t i = N.cap; i < cap; i++)
			if (cudaEventCreateWithFlags(&N.pend[i].done, cudaEventDisableTiming) != cudaSuccess)
				rt_fatal("cannot create an event for NCCL");
		N.cap = cap;
	}
	return &N.pend[N.npend++];
}

/*
 * Launch the open bucket: the communication stream after the compute
 * stream as it stands, the bucket's averages in one group, then each
 * one's event (the same point of the stream).
 */
static void close_bucket(void)
{
	if (N.open == N.npend)
		return;
	if (cudaEventRecord(N.ready, gpu_stream()) != cudaSuccess || cudaStreamWaitEvent(N.stream, N.ready, 0) != cudaSuccess)
		rt_fatal("cannot order the communication stream after the compute stream");
	check(N.group_start(), "ncclGroupStart");
	for (int64_t j = N.open; j < N.npend; j++)
		check(N.all_reduce(N.pend[j].buf, N.pend[j].buf, (size_t)N.pend[j].n, NCCL_FLOAT32, NCCL_AVG, N.comm,
		                   N.stream), "ncclAllReduce");
	check(N.group_end(), "ncclGroupEnd");
	for (int64_t j = N.open; j < N.npend; j++)
		if (cudaEventRecord(N.pend[j].done, N.stream) != cudaSuccess)
			rt_fatal("cannot record an all-reduce's event");
	N.open = N.npend;
	N.open_bytes = 0;
	N.buckets++;
}

void rt_gpu_allreduce_mean(const float *src, float *dst, int64_t n, void *stream)
{
	cudaStream_t st = stream;
	if (!N.comm)
		RT_ICE("an all-reduce before NCCL was opened");
	if (!N.overlap) {
		check(N.all_reduce(src, dst, (size_t)n, NCCL_FLOAT32, NCCL_AVG, N.comm, st), "ncclAllReduce");
		return;
	}
	/* in place, so that only dst is on its way: src's memory is free for the next kernel */
	if (dst != src && cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
		rt_fatal("cudaMemcpyAsync before an all-reduce failed");
	int64_t bytes = (int64_t)sizeof(float) * n;
	if (N.open_bytes > 0 && N.open_bytes + bytes > RT_RANKS_BUCKET_BYTES) /* a large gradient goes alone */
		close_bucket();
	struct Pending *p = next_pending();
	p->buf = dst;
	p->n = n;
	N.open_bytes += bytes;
	N.total++;
	if (N.open_bytes >= RT_RANKS_BUCKET_BYTES)
		close_bucket();
}

void rt_exchange_need(void *const *ptrs, int n)
{
	if (N.ndone == N.npend)
		return;
	int64_t want = -1; /* the last average still pending that one of ptrs is */
	for (int64_t j = N.ndone; j < N.npend; j++)
		for (int k = 0; k < n; k++)
			if (ptrs[k] == N.pend[j].buf)
				want = j;
	if (want < 0)
		return;
	if (want >= N.open) /* in the open bucket: it goes now */
		close_bucket();
	rt_ranks_waiting("an all-reduce of the gradients");
	if (cudaEventSynchronize(N.pend[want].done) != cudaSuccess)
		rt_fatal("an all-reduce on the communication stream failed");
	rt_ranks_waiting(NULL);
	N.ndone = want + 1;
}

void rt_exchange_drain(void)
{
	close_bucket();
	if (N.npend > N.ndone) {
		rt_ranks_waiting("an all-reduce of the gradients");
		if (cudaStreamSynchronize(N.stream) != cudaSuccess)
			rt_fatal("an all-reduce on the communication stream failed");
		rt_ranks_waiting(NULL);
	}
	N.npend = N.ndone = N.open = 0;
}

bool rt_exchange_counts(int64_t *messages, int64_t *gradients)
{
	*messages = N.buckets;
	*gradients = N.total;
	return N.overlap && N.comm;
}

/* op (NCCL_MIN, NCCL_SUM) of 8 bytes of type `type` over the ranks, on the default stream, waited for. */
static void reduce8(void *v, int type, int op)
{
	if (cudaMemcpy(N.scratch, v, 8, cudaMemcpyHostToDevice) != cudaSuccess)
		rt_fatal("cudaMemcpy for NCCL failed");
	check(N.all_reduce(N.scratch, N.scratch, 1, type, op, N.comm, 0), "ncclAllReduce");
	if (cudaMemcpy(v, N.scratch, 8, cudaMemcpyDeviceToHost) != cudaSuccess)
		rt_fatal("cudaMemcpy for NCCL failed");
}

bool rt_gpu_nccl_same(uint64_t h)
{
	unsigned long long lo = h, hi = ~(unsigned long long)h;
	reduce8(&lo, NCCL_UINT64, NCCL_MIN);
	reduce8(&hi, NCCL_UINT64, NCCL_MIN);
	return lo == ~hi;
}

double rt_gpu_nccl_mean(double v)
{
	reduce8(&v, NCCL_FLOAT64, NCCL_SUM);
	return v / N.size;
}

void rt_gpu_nccl_close(void)
{
	if (!N.comm)
		return;
	rt_exchange_drain();
	if (N.overlap) {
		for (int64_t i = 0; i < N.cap; i++)
			cudaEventDestroy(N.pend[i].done);
		free(N.pend);
		N.pend = NULL;
		N.cap = 0;
		cudaEventDestroy(N.ready);
		cudaStreamDestroy(N.stream);
	}
	N.comm_destroy(N.comm);
	cudaFree(N.scratch);
	if (N.rank == 0 && N.size > 1)
		unlink(N.id_file);
	N.comm = NULL;
}
