/*
 * cpu/move.c - the copies of the CPU backend (its table's copies group):
 * blocking ones, and asynchronous ones on a copy thread that overlap the
 * kernels; and host staging, which here is a copy too.
 *
 * A move is a plain memory copy; what makes it fast or slow is which
 * tiers the two addresses are in. Large copies (CPU_NT_THRESHOLD bytes and
 * more) use non-temporal stores: the destination is not read first and
 * does not evict the cache the kernels are working in, which matters
 * most when the destination is persistent memory. A blocking move (the
 * step waits for it anyway) is split across the OpenMP threads; an
 * asynchronous one runs on the single copy thread so that the kernels
 * keep the cores.
 *
 * The copy thread serves one FIFO queue (a ring of requests), so moves
 * complete in the order they were submitted and "move h is done" is the
 * same as "the completed counter has reached h". A handle is the move's
 * sequence number folded into 1..INT32_MAX; cpu_copy_wait unfolds it
 * against the number submitted, which is exact as long as fewer than
 * 2^31 - 1 moves are outstanding (the ring holds far fewer).
 */
#include "cpu.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { RING = 4096, CHUNK = 1 << 20 };
#define HANDLE_MOD INT64_C(0x7fffffff)

/* ---- copying ------------------------------------------------------------ */

/* Copy with streaming stores (16-byte aligned destination, unaligned source). */
static void copy_nt(unsigned char *d, const unsigned char *s, size_t n)
{
#if defined(__SSE2__)
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	if (head > n)
		head = n;
	memcpy(d, s, head);
	d += head, s += head, n -= head;
	size_t blocks = n / 64;
	for (size_t i = 0; i < blocks; i++, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	_mm_sfence(); /* streaming stores are weakly ordered: publish them */
	memcpy(d, s, n - blocks * 64);
#else
	memcpy(d, s, n);
#endif
}

void cpu_copy(void *dst, const void *src, size_t bytes)
{
	if (bytes < CPU_NT_THRESHOLD)
		memcpy(dst, src, bytes);
	else
		copy_nt(dst, src, bytes);
}

/* Host memory and the pools are the same memory here. */
void cpu_store(void *dst, const void *src, size_t bytes)
{
	cpu_copy(dst, src, bytes);
}

void cpu_load(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}

/* A blocking move: large ones in CHUNK pieces on every thread. */
void cpu_move(void *dst, const void *src, size_t bytes)
{
	if (bytes < 4 * (size_t)CHUNK) {
		cpu_copy(dst, src, bytes);
		return;
	}
	int64_t nchunks = (int64_t)((bytes + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < nchunks; i++) {
		size_t off = (size_t)i * CHUNK, n = bytes - off < CHUNK ? bytes - off : CHUNK;
		copy_nt((unsigned char *)dst + off, (const unsigned char *)src + off, n);
	}
}

/* ---- the copy thread ------------------------------------------------------ */

/* One queued copy. */
typedef struct MoveReq {
	void *dst;        /* destination */
	const void *src;  /* source */
	size_t bytes;     /* size */
} MoveReq;

/* The copy thread and its queue: the copier of cpu_copier_open. */
typedef struct CopyThread {
	pthread_t thread;       /* the copy thread */
	pthread_mutex_t lock;   /* guards everything below */
	pthread_cond_t wake;    /* to the thread: a request, or stop */
	pthread_cond_t done;    /* from the thread: a copy completed (room in the ring) */
	MoveReq ring[RING];     /* request of sequence number s at ring[(s - 1) % RING] */
	int64_t submitted;      /* sequence number of the last request (1-based) */
	int64_t completed;      /* sequence number of the last request copied */
	int64_t bytes_total;    /* bytes of every request */
	bool stop;              /* the thread exits once the ring is empty */
} CopyThread;

#define PCHECK(call)                                                                                     \
	do {                                                                                             \
		int rc_ = (call);                                                                        \
		if (rc_)                                                                                 \
			rt_fatal("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, strerror(rc_));      \
	} while (0)

static void *copy_thread(void *arg)
{
	CopyThread *m = arg;
	PCHECK(pthread_mutex_lock(&m->lock));
	for (;;) {
		while (m->completed == m->submitted && !m->stop)
			PCHECK(pthread_cond_wait(&m->wake, &m->lock));
		if (m->completed == m->submitted)
			break; /* stop, and nothing left */
		MoveReq r = m->ring[m->completed % RING];
		PCHECK(pthread_mutex_unlock(&m->lock));
		cpu_copy(r.dst, r.src, r.bytes);
		PCHECK(pthread_mutex_lock(&m->lock));
		m->completed++;
		PCHECK(pthread_cond_broadcast(&m->done));
	}
	PCHECK(pthread_mutex_unlock(&m->lock));
	return NULL;
}

void *cpu_copier_open(void)
{
	CopyThread *m = rt_xcalloc(sizeof *m);
	PCHECK(pthread_mutex_init(&m->lock, NULL));
	PCHECK(pthread_cond_init(&m->wake, NULL));
	PCHECK(pthread_cond_init(&m->done, NULL));
	PCHECK(pthread_create(&m->thread, NULL, copy_thread, m));
	return m;
}

int32_t cpu_copy_submit(void *copier, void *dst, const void *src, size_t bytes)
{
	CopyThread *m = copier;
	PCHECK(pthread_mutex_lock(&m->lock));
	while (m->submitted - m->completed >= RING)
		PCHECK(pthread_cond_wait(&m->done, &m->lock));
	m->ring[m->submitted % RING] = (MoveReq){dst, src, bytes};
	m->submitted++;
	m->bytes_total += (int64_t)bytes;
	int32_t h = (int32_t)((m->submitted - 1) % HANDLE_MOD + 1);
	PCHECK(pthread_cond_signal(&m->wake));
	PCHECK(pthread_mutex_unlock(&m->lock));
	return h;
}

void cpu_copy_wait(void *copier, int32_t handle)
{
	CopyThread *m = copier;
	PCHECK(pthread_mutex_lock(&m->lock));
	int64_t s = m->submitted;
	if (handle <= 0 || (s < HANDLE_MOD && handle > s))
		RT_ICE("rt_move_wait: %d is not the handle of a move (%lld submitted)", handle, (long long)s);
	int64_t seq = s - (s - handle) % HANDLE_MOD;
	while (m->completed < seq)
		PCHECK(pthread_cond_wait(&m->done, &m->lock));
	PCHECK(pthread_mutex_unlock(&m->lock));
}

void cpu_copy_drain(void *copier)
{
	CopyThread *m = copier;
	PCHECK(pthread_mutex_lock(&m->lock));
	while (m->completed < m->submitted)
		PCHECK(pthread_cond_wait(&m->done, &m->lock));
	PCHECK(pthread_mutex_unlock(&m->lock));
}

void cpu_copier_close(void *copier)
{
	CopyThread *m = copier;
	if (!m)
		return;
	PCHECK(pthread_mutex_lock(&m->lock));
	m->stop = true;
	PCHECK(pthread_cond_signal(&m->wake));
	PCHECK(pthread_mutex_unlock(&m->lock));
	PCHECK(pthread_join(m->thread, NULL));
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->wake);
	pthread_cond_destroy(&m->done);
	free(m);
}

void cpu_copy_stats(void *copier, int64_t *count, int64_t *bytes)
{
	CopyThread *m = copier;
	PCHECK(pthread_mutex_lock(&m->lock));
	*count = m->submitted;
	*bytes = m->bytes_total;
	PCHECK(pthread_mutex_unlock(&m->lock));
}
