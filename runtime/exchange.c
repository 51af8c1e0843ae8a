/*
 * exchange.c - the gradients' exchange between ranks, on a thread of its
 * own, in buckets (rt_internal.h; docs/distributed.md).
 *
 * An allreduce kernel hands its gradient to this thread and returns: the
 * backward pass goes on while the gradient is summed to rank 0 and
 * broadcast back, as PyTorch's DDP overlaps its buckets with the backward
 * pass. Before a kernel or a move touches a gradient still being
 * exchanged (the update that reads it), rt_launch and rt_move wait for it;
 * a step ends with every exchange done.
 *
 * Gradients travel in buckets: consecutive gradients packed into one
 * message of up to RT_RANKS_BUCKET_BYTES (a larger gradient alone, in place), so
 * that a model of many small weights pays the link's latency per bucket,
 * not per weight. Every rank must
 * send the same messages in the same order, so where buckets close may
 * depend on nothing timing decides: the main thread posts events in
 * program order (a gradient ready, a gradient needed, the step's end),
 * the same on every rank, and this thread closes a bucket when the next
 * gradient would take it past RT_RANKS_BUCKET_BYTES, when a gradient in it is
 * needed, or at the step's end.
 *
 * Only this thread calls MPI during a step (MPI_THREAD_SERIALIZED); the
 * main thread's own calls come after rt_exchange_drain.
 */
#include "rt_internal.h"

#ifdef AUTOTM_MPI

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_JOBS = 1 << 16,      /* gradients exchanged in one step */
	MAX_EVENTS = 1 << 18,
};

typedef enum EventKind { EV_READY, EV_NEEDED, EV_END } EventKind;

typedef struct Event {
	EventKind kind;
	int64_t job;
} Event;

typedef struct Job {
	float *buf; /* the gradient, averaged in place */
	int64_t n;
} Job;

static struct {
	bool running;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t event, done_cv;
	Job *jobs;
	int64_t njobs, done; /* this step: gradients handed over; exchanged (a prefix: buckets go in order) */
	Event *ev;
	int64_t head, tail;  /* events taken, posted */
	bool stop;
	float *stage;        /* a bucket of several gradients, packed */
	int64_t stage_cap;
	int64_t messages, gradients; /* exchanged so far: buckets and the gradients in them */
} X;

/* Post an event (the lock held). */
static void post(EventKind kind, int64_t job)
{
	if (X.tail - X.head >= MAX_EVENTS)
		RT_ICE("the exchange's event queue is full");
	X.ev[X.tail++ % MAX_EVENTS] = (Event){kind, job};
	pthread_cond_signal(&X.event);
}

/* Exchange jobs [first, first + count): one gradient in place, several packed into the stage. */
static void exchange_bucket(int64_t first, int64_t count)
{
	if (count == 1) {
		rt_exchange_mean(X.jobs[first].buf, X.jobs[first].n);
	} else {
		int64_t total = 0;
		for (int64_t j = first; j < first + count; j++)
			total += X.jobs[j].n;
		if (total > X.stage_cap) {
			free(X.stage);
			X.stage = rt_xmalloc(sizeof(float) * (size_t)total);
			X.stage_cap = total;
		}
		for (int64_t j = first, at = 0; j < first + count; at += X.jobs[j].n, j++)
			memcpy(X.stage + at, X.jobs[j].buf, sizeof(float) * (size_t)X.jobs[j].n);
		rt_exchange_mean(X.stage, total);
		for (int64_t j = first, at = 0; j < first + count; at += X.jobs[j].n, j++)
			memcpy(X.jobs[j].buf, X.stage + at, sizeof(float) * (size_t)X.jobs[j].n);
	}
	pthread_mutex_lock(&X.mu);
	X.messages++;
	X.gradients += count;
	X.done = first + count;
	pthread_cond_broadcast(&X.done_cv);
	pthread_mutex_unlock(&X.mu);
}

static void *exchange_thread(void *arg)
{
	(void)arg;
	int64_t first = 0, count = 0, bytes = 0; /* the open bucket */
	pthread_mutex_lock(&X.mu);
	for (;;) {
		while (X.head == X.tail && !X.stop)
			pthread_cond_wait(&X.event, &X.mu);
		if (X.head == X.tail)
			break;
		Event e = X.ev[X.head++ % MAX_EVENTS];
		int64_t n = e.kind == EV_READY ? X.jobs[e.job].n : 0;
		pthread_mutex_unlock(&X.mu);
		bool close = false;
		if (e.kind == EV_READY) {
			int64_t b = n * (int64_t)sizeof(float);
			if (count && bytes + b > RT_RANKS_BUCKET_BYTES) { /* a large gradient goes alone, unpacked */
				exchange_bucket(first, count);
				count = bytes = 0;
			}
			first = count ? first : e.job;
			count++;
			bytes += b;
			close = bytes >= RT_RANKS_BUCKET_BYTES;
		} else { /* a gradient of the open bucket needed, or the step's end */
			close = count && (e.kind == EV_END || (e.job >= first && e.job < first + count));
		}
		if (close) {
			exchange_bucket(first, count);
			count = bytes = 0;
		}
		pthread_mutex_lock(&X.mu);
		if (X.head == X.tail) /* every event taken: rt_exchange_drain may end the step */
			pthread_cond_broadcast(&X.done_cv);
	}
	pthread_mutex_unlock(&X.mu);
	return NULL;
}

void rt_exchange_start(void)
{
	X.jobs = rt_xcalloc(sizeof *X.jobs * MAX_JOBS);
	X.ev = rt_xcalloc(sizeof *X.ev * MAX_EVENTS);
	if (pthread_mutex_init(&X.mu, NULL) || pthread_cond_init(&X.event, NULL) || pthread_cond_init(&X.done_cv, NULL) ||
	    pthread_create(&X.thread, NULL, exchange_thread, NULL))
		rt_fatal("cannot start the thread that exchanges the gradients");
	X.running = true;
}

bool rt_exchange_submit(float *buf, int64_t n)
{
	if (!X.running)
		return false;
	pthread_mutex_lock(&X.mu);
	if (X.njobs == MAX_JOBS)
		RT_ICE("more than %d gradients exchanged in a step", MAX_JOBS);
	X.jobs[X.njobs] = (Job){buf, n};
	post(EV_READY, X.njobs++);
	pthread_mutex_unlock(&X.mu);
	return true;
}

void rt_exchange_need(void *const *ptrs, int n)
{
	if (!X.running || __atomic_load_n(&X.njobs, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_lock(&X.mu);
	int64_t want = -1; /* the last gradient still being exchanged that one of ptrs is */
	for (int64_t j = X.done; j < X.njobs; j++)
		for (int k = 0; k < n; k++)
			if (ptrs[k] == X.jobs[j].buf)
				want = j;
	if (want >= 0) {
		post(EV_NEEDED, want);
		while (X.done <= want)
			pthread_cond_wait(&X.done_cv, &X.mu);
	}
	pthread_mutex_unlock(&X.mu);
}

void rt_exchange_drain(void)
{
	if (!X.running)
		return;
	pthread_mutex_lock(&X.mu);
	if (X.done < X.njobs)
		post(EV_END, 0);
	/* every gradient exchanged and every event taken: none of this step's may reach the next's buckets */
	while (X.done < X.njobs || X.head != X.tail)
		pthread_cond_wait(&X.done_cv, &X.mu);
	__atomic_store_n(&X.njobs, 0, __ATOMIC_RELAXED); /* the next step numbers its gradients from 0 */
	X.done = 0;
	pthread_mutex_unlock(&X.mu);
}

bool rt_exchange_counts(int64_t *messages, int64_t *gradients)
{
	*messages = X.messages;
	*gradients = X.gradients;
	return X.running;
}

void rt_exchange_stop(void)
{
	if (!X.running)
		return;
	rt_exchange_drain();
	pthread_mutex_lock(&X.mu);
	X.stop = true;
	pthread_cond_signal(&X.event);
	pthread_mutex_unlock(&X.mu);
	pthread_join(X.thread, NULL);
	X.running = false;
	free(X.jobs);
	free(X.ev);
	free(X.stage);
}

#endif
