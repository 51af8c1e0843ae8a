/*
 * cuda/memory.c - the pools, the moves and the host staging of the CUDA
 * backend (its table's memory and copies groups): what cpu/pool.c and
 * cpu/move.c are to the CPU backend.
 *
 * The pools (one allocation each, as on the CPU, zeroed when made):
 *
 *   fast  device memory (cudaMalloc), refused when it exceeds the limit
 *         the placement was made for; or, for an RT_PROGRAM_MANAGED
 *         program, managed memory (cudaMallocManaged) that may exceed the
 *         device. The device is then capped at the limit by a "balloon":
 *         at start the runtime cudaMalloc's (free memory - limit) bytes
 *         and holds them until the end, so that the driver pages managed
 *         memory in and out of at most `limit` bytes of the device. What
 *         cuDNN, cuBLAS and kernel workspaces allocate later also comes
 *         out of those `limit` bytes. A managed pool larger than the limit
 *         (oversubscribed) is refused unless AUTOTM_UM_OVERSUBSCRIBE=1:
 *         driver paging under such a cap can hang a shared GPU.
 *   slow  pinned host memory (cudaHostAlloc): the copy engines reach it at
 *         full PCIe speed, and with unified addressing kernels may read
 *         and write it in place.
 *
 * What a pool needs beyond RtPool's common fields - which of the three
 * allocations it is, and the balloon - is a GpuPool behind RtPool.priv.
 *
 * The moves. A blocking move (rt_move) is a copy on the compute stream:
 * it is blocking for the kernels, which run after it on that stream, not
 * for the host. An asynchronous move (rt_move_async) runs on one of two
 * copy streams, host to device and device to host, so that both PCIe
 * directions are busy at once while kernels run:
 *
 *   submit  record `submitted_at` on the compute stream and make the copy
 *           stream wait for it (the source has been produced, and the
 *           destination's last readers are done); copy; record the
 *           move's `done` event on the copy stream.
 *   wait    make the compute stream wait for `done` (later kernels see
 *           the data; a buffer moved out is reused only once the move has
 *           read it). As on the CPU, waiting for a move also waits for
 *           every move submitted before it: the compute stream also waits
 *           for the last move on the other copy stream submitted before
 *           this one (each copy stream is in order).
 *
 * A handle is the move's sequence number folded into 1..INT32_MAX, as in
 * cpu/move.c; `done` events are recycled through a ring of RING of them.
 * A handle waited for after its event was recorded again by a later move
 * waits for every move submitted so far, which is later than needed but
 * never too early. gpu_copy_drain waits (on the host) for both copy
 * streams; rt_step_end then also waits for the compute stream.
 *
 * Host staging: gpu_store and gpu_load copy between host memory and a pool
 * on the compute stream and wait for the copy, so they come after every
 * kernel and move launched before them.
 */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_ALIGN = 2 << 20, RING = 1024 };
enum { TO_DEVICE = 0, TO_HOST = 1 };
#define HANDLE_MOD INT64_C(0x7fffffff)

void gpu_check_cuda(cudaError_t err, const char *what, const char *file, int line)
{
	if (err != cudaSuccess)
		rt_fatal("%s:%d: %s failed: %s (%s)", file, line, what, cudaGetErrorString(err), cudaGetErrorName(err));
}

static cudaStream_t compute;

cudaStream_t gpu_stream(void)
{
	if (compute)
		return compute;
	int n = 0, dev, unified = 0;
	cudaError_t err = cudaGetDeviceCount(&n);
	if (err != cudaSuccess)
		rt_fatal("no CUDA device: %s", cudaGetErrorString(err));
	if (n == 0)
		rt_fatal("no CUDA device");
	CUDA_CHECK(cudaGetDevice(&dev));
	CUDA_CHECK(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, dev));
	if (!unified)
		rt_fatal("CUDA device %d has no unified addressing, which the runtime needs", dev);
	CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	return compute;
}

/* ---- pools -------------------------------------------------------------- */

/* Which allocation a pool is. */
typedef enum GpuMemory {
	GPU_DEVICE,  /* cudaMalloc: the fast pool */
	GPU_MANAGED, /* cudaMallocManaged: the fast pool of an RT_PROGRAM_MANAGED program */
	GPU_PINNED,  /* cudaHostAlloc: the slow pool */
} GpuMemory;

/* The CUDA backend's part of a pool (RtPool.priv). */
typedef struct GpuPool {
	GpuMemory memory; /* what base is */
	void *balloon;    /* managed: device memory held so that only the limit is left; else NULL */
} GpuPool;

/* Open p's common fields and its GpuPool. */
static GpuPool *pool_init(RtPool *p, const char *name, int64_t bytes, GpuMemory memory)
{
	GpuPool *g = rt_xcalloc(sizeof *g);
	g->memory = memory;
	*p = (RtPool){.name = name, .bytes = bytes, .priv = g};
	return g;
}

static int64_t round_up(int64_t n, int64_t a)
{
	return (n + a - 1) / a * a;
}

static void zero_device(RtPool *p)
{
	CUDA_CHECK(cudaMemsetAsync(p->base, 0, (size_t)p->mapped, gpu_stream()));
	CUDA_CHECK(cudaStreamSynchronize(gpu_stream()));
}

void gpu_pool_footprint(int64_t fast, int64_t slow, RtSlowKind kind, const char *dir, bool managed, RtFootprint *out)
{
	(void)kind, (void)dir;
	*out = (RtFootprint){.host_slow = round_up(slow, POOL_ALIGN), .slow_where = " in pinned memory",
	                     .device_free = -1};
	if (managed || fast == 0) /* a managed pool is capped by its own balloon, not refused */
		return;
	size_t free_bytes, total;
	gpu_stream();
	CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
	out->device = round_up(fast, POOL_ALIGN);
	out->device_free = (int64_t)free_bytes;
}

void gpu_pool_open_fast(RtPool *p, int64_t bytes, int64_t limit)
{
	char b1[32];
	rt_pool_fast_check(bytes, limit);
	pool_init(p, "fast", bytes, GPU_DEVICE);
	if (bytes == 0)
		return;
	p->mapped = round_up(bytes, POOL_ALIGN);
	gpu_stream();
	cudaError_t err = cudaMalloc(&p->base, (size_t)p->mapped);
	if (err != cudaSuccess)
		rt_fatal("cannot allocate the fast pool (%s) in device memory: %s", fmt_bytes(bytes, b1, sizeof b1),
		         cudaGetErrorString(err));
	zero_device(p);
}

void gpu_pool_open_managed(RtPool *p, int64_t bytes, int64_t limit)
{
	char b1[32], b2[32];
	if (bytes < 0)
		RT_ICE("negative fast pool size %lld", (long long)bytes);
	GpuPool *g = pool_init(p, "fast", bytes, GPU_MANAGED);
	gpu_stream();
	const char *over = getenv("AUTOTM_UM_OVERSUBSCRIBE");
	if (limit > 0 && bytes > limit && !(over && strcmp(over, "1") == 0))
		rt_fatal("the managed pool (%s) is larger than the device memory the limit leaves it (%s): the driver "
		         "would page it in and out of the device, which can hang a GPU that others share; set "
		         "AUTOTM_UM_OVERSUBSCRIBE=1 to run it anyway", fmt_bytes(bytes, b1, sizeof b1),
		         fmt_bytes(limit, b2, sizeof b2));
	if (limit > 0) {
		size_t free_bytes, total;
		CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
		if ((size_t)limit < free_bytes) {
			size_t hold = free_bytes - (size_t)limit;
			cudaError_t err = cudaMalloc(&g->balloon, hold);
			if (err != cudaSuccess)
				rt_fatal("cannot occupy %s of device memory to leave only the limit (%s): %s",
				         fmt_bytes((int64_t)hold, b1, sizeof b1), fmt_bytes(limit, b2, sizeof b2),
				         cudaGetErrorString(err));
		} else {
			rt_warn("the device has %s free, not more than the limit (%s): it is not capped",
			        fmt_bytes((int64_t)free_bytes, b1, sizeof b1), fmt_bytes(limit, b2, sizeof b2));
		}
	}
	if (bytes == 0)
		return;
	p->mapped = round_up(bytes, POOL_ALIGN);
	cudaError_t err = cudaMallocManaged(&p->base, (size_t)p->mapped, cudaMemAttachGlobal);
	if (err != cudaSuccess)
		rt_fatal("cannot allocate the fast pool (%s) in managed memory: %s", fmt_bytes(bytes, b1, sizeof b1),
		         cudaGetErrorString(err));
	zero_device(p);
}

void gpu_pool_open_slow(RtPool *p, int64_t bytes, RtSlowKind kind, const char *dir, int numa_node)
{
	(void)numa_node;
	if (bytes < 0)
		RT_ICE("negative slow pool size %lld", (long long)bytes);
	pool_init(p, "slow", bytes, GPU_PINNED);
	if (kind != RT_SLOW_PMEM || dir)
		rt_warn("--slow and --slow-dir do not apply to the GPU runtime: its slow pool is pinned host memory");
	if (bytes == 0)
		return;
	p->mapped = round_up(bytes, POOL_ALIGN);
	gpu_stream();
	cudaError_t err = cudaHostAlloc(&p->base, (size_t)p->mapped, cudaHostAllocPortable);
	if (err != cudaSuccess) {
		char b[32];
		rt_fatal("cannot allocate the slow pool (%s) in pinned host memory: %s", fmt_bytes(bytes, b, sizeof b),
		         cudaGetErrorString(err));
	}
	memset(p->base, 0, (size_t)p->mapped);
}

void gpu_pool_close(RtPool *p)
{
	GpuPool *g = p->priv;
	if (g && p->base) {
		switch (g->memory) {
		case GPU_DEVICE:
		case GPU_MANAGED:
			CUDA_CHECK(cudaFree(p->base));
			break;
		case GPU_PINNED:
			CUDA_CHECK(cudaFreeHost(p->base));
			break;
		}
	}
	if (g && g->balloon)
		CUDA_CHECK(cudaFree(g->balloon));
	free(g);
	*p = (RtPool){.name = p->name};
}

const char *gpu_pool_where(const RtPool *p, char *buf, size_t size)
{
	const GpuPool *g = p->priv;
	const char *what = "none";
	if (g)
		switch (g->memory) {
		case GPU_DEVICE:
			what = "device memory";
			break;
		case GPU_MANAGED:
			what = "managed memory";
			break;
		case GPU_PINNED:
			what = p->bytes == 0 ? "none" : "pinned host memory";
			break;
		}
	snprintf(buf, size, "%s", what);
	return buf;
}

/* Nothing of the GPU's pools lives in a file. */
void gpu_remove_temp_dirs(void)
{
}

/* ---- host staging ------------------------------------------------------- */

void gpu_store(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gpu_stream()));
	CUDA_CHECK(cudaStreamSynchronize(gpu_stream()));
}

void gpu_load(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gpu_stream()));
	CUDA_CHECK(cudaStreamSynchronize(gpu_stream()));
}

/* ---- the copy streams ---------------------------------------------------- */

/* The copy streams and the moves' events: the copier of gpu_copier_open. */
typedef struct CopyStreams {
	cudaStream_t copy[2];      /* [TO_DEVICE], [TO_HOST]: one per PCIe direction */
	cudaEvent_t submitted_at;  /* recorded on the compute stream as a move is submitted */
	cudaEvent_t done[RING];    /* move with sequence number s: done[(s - 1) % RING]; NULL until used */
	int64_t before[RING];      /* ... and the last move on the other copy stream before it (0: none) */
	int64_t last[2];           /* the last move on each copy stream (0: none) */
	int64_t submitted;         /* sequence number of the last move (1-based) */
	int64_t bytes_total;       /* bytes of every move */
} CopyStreams;

void *gpu_copier_open(void)
{
	CopyStreams *m = rt_xcalloc(sizeof *m);
	gpu_stream();
	for (int i = 0; i < 2; i++)
		CUDA_CHECK(cudaStreamCreateWithFlags(&m->copy[i], cudaStreamNonBlocking));
	CUDA_CHECK(cudaEventCreateWithFlags(&m->submitted_at, cudaEventDisableTiming));
	return m;
}

/* Whether p is memory of the device (device or managed memory), not of the host. */
static bool on_device(const void *p)
{
	struct cudaPointerAttributes a;
	CUDA_CHECK(cudaPointerGetAttributes(&a, p));
	return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int32_t gpu_copy_submit(void *copier, void *dst, const void *src, size_t bytes)
{
	CopyStreams *m = copier;
	int dir = on_device(dst) ? TO_DEVICE : TO_HOST;
	int64_t s = ++m->submitted;
	int slot = (int)((s - 1) % RING);
	if (!m->done[slot])
		CUDA_CHECK(cudaEventCreateWithFlags(&m->done[slot], cudaEventDisableTiming));
	CUDA_CHECK(cudaEventRecord(m->submitted_at, gpu_stream()));
	CUDA_CHECK(cudaStreamWaitEvent(m->copy[dir], m->submitted_at, 0));
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, m->copy[dir]));
	CUDA_CHECK(cudaEventRecord(m->done[slot], m->copy[dir]));
	m->before[slot] = m->last[!dir];
	m->last[dir] = s;
	m->bytes_total += (int64_t)bytes;
	return (int32_t)((s - 1) % HANDLE_MOD + 1);
}

/* The compute stream waits for move s (0: nothing). */
static void compute_waits(CopyStreams *m, int64_t s)
{
	if (s > 0)
		CUDA_CHECK(cudaStreamWaitEvent(gpu_stream(), m->done[(s - 1) % RING], 0));
}

void gpu_copy_wait(void *copier, int32_t handle)
{
	CopyStreams *m = copier;
	int64_t s = m->submitted;
	if (handle <= 0 || (s < HANDLE_MOD && handle > s))
		RT_ICE("rt_move_wait: %d is not the handle of a move (%lld submitted)", handle, (long long)s);
	int64_t seq = s - (s - handle) % HANDLE_MOD, before = m->before[(seq - 1) % RING];
	if (s - seq >= RING || (before > 0 && s - before >= RING)) {
		compute_waits(m, m->last[TO_DEVICE]); /* its events were recorded again: wait for every move */
		compute_waits(m, m->last[TO_HOST]);
		return;
	}
	compute_waits(m, seq);
	compute_waits(m, before);
}

void gpu_copy_drain(void *copier)
{
	CopyStreams *m = copier;
	for (int i = 0; i < 2; i++)
		CUDA_CHECK(cudaStreamSynchronize(m->copy[i]));
}

void gpu_copier_close(void *copier)
{
	CopyStreams *m = copier;
	if (!m)
		return;
	gpu_copy_drain(m);
	for (int i = 0; i < RING; i++)
		if (m->done[i])
			CUDA_CHECK(cudaEventDestroy(m->done[i]));
	CUDA_CHECK(cudaEventDestroy(m->submitted_at));
	for (int i = 0; i < 2; i++)
		CUDA_CHECK(cudaStreamDestroy(m->copy[i]));
	free(m);
}

void gpu_copy_stats(void *copier, int64_t *count, int64_t *bytes)
{
	const CopyStreams *m = copier;
	*count = m->submitted;
	*bytes = m->bytes_total;
}

/* ---- blocking moves --------------------------------------------------------- */

/* On the compute stream: blocking for the kernels after it, not for the host. */
void gpu_move(void *dst, const void *src, size_t bytes)
{
	CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, gpu_stream()));
}
