/*
 * feed.c - training on a dataset (--data DIR, autotm/dataset.h): each
 * step's batch, prepared while the step before it runs.
 *
 * The input and labels tensors keep one host batch each (RtBatch, which
 * rt_data stores into the tensor's place every step). The feed holds a
 * second pair, the spare: while step t runs, a thread gathers batch t + 1
 * from the mapped files into the spare; rt_feed_next, at the start of
 * step t + 1, waits for that thread and swaps the pairs. Gathering is a
 * copy of B samples (and a finiteness check), so it hides behind the
 * step. A batch under AHEAD_BYTES is gathered at the start of its own
 * step instead: that takes microseconds, less than starting a thread and
 * getting it a core beside the kernels' threads (bench/data.sh measured
 * both). The wait, or the gathering, is inside the step's time, so the
 * step times reported are what training on the data costs.
 *
 * Which samples step t takes is ds_gather's (autotm/dataset.h): batch
 * t % S of epoch t / S in the order of --seed.
 */
#include "rt_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/dataset.h"

/* Batches of at least this many bytes are prepared on a thread while the step before runs. */
enum { AHEAD_BYTES = 256 << 10 };

typedef struct RtFeed {
	DsDataset *ds;        /* the open dataset */
	float *spare[2];      /* RT_DATA_INPUT, RT_DATA_LABELS: the batch being prepared */
	pthread_t thread;     /* the thread preparing step `pending` */
	bool ahead;           /* batches are prepared on a thread (else at the start of their step) */
	bool running;         /* it has been started and not joined */
	int64_t pending;      /* the step it prepares */
	int failed;           /* ds_gather failed; the message is in err */
	char err[1024];       /* its message */
} RtFeed;

/* The thread: step `pending`'s batch into the spare buffers. */
static void *prepare(void *arg)
{
	RtFeed *f = arg;
	f->failed = ds_gather(f->ds, f->pending, f->spare[0], f->spare[1], f->err, sizeof f->err);
	return NULL;
}

void rt_feed_open(RtCtx *ctx)
{
	RtBatch *in = &ctx->batch[RT_DATA_INPUT], *lab = &ctx->batch[RT_DATA_LABELS];
	if (!in->data || !lab->data)
		rt_fatal("--data %s: the program has no %s tensor to feed", ctx->opt.data, in->data ? "labels" : "input");
	if (lab->ndim != 2 && lab->dtype != RT_DTYPE_I32)
		RT_ICE("labels '%s' with %d dimensions", lab->name, lab->ndim);
	RtFeed *f = rt_xcalloc(sizeof *f);
	char err[1024];
	DsModel m = {
		.input = in->name, .x_ndim = in->ndim, .x_shape = in->shape,
		.x_ids = in->dtype == RT_DTYPE_I32 ? in->range : 0,
		.y_ndim = lab->ndim, .y_shape = lab->shape, .y_ids = lab->dtype == RT_DTYPE_I32 ? lab->range : 0,
	};
	if (ds_open(ctx->opt.data, ctx->opt.seed, &m, &f->ds, err, sizeof err) ||
	    ds_shard(f->ds, ctx->rank, ctx->nranks, err, sizeof err))
		rt_fatal("%s", err);
	if (f->ds->batch != lab->shape[0])
		RT_ICE("input '%s' has a batch of %lld, labels '%s' of %lld", in->name, (long long)f->ds->batch,
		       lab->name, (long long)lab->shape[0]);
	f->spare[0] = rt_xmalloc((size_t)in->bytes);
	f->spare[1] = rt_xmalloc((size_t)lab->bytes);
	ctx->feed = f;
	/*
	 * A small batch is gathered faster than a thread is started and
	 * scheduled beside the kernels' threads: it is gathered in its step.
	 */
	f->ahead = in->bytes + lab->bytes >= AHEAD_BYTES;

	const DsDataset *d = f->ds;
	RtOptions *o = &ctx->opt;
	if (ds_steps(d, o->epochs, o->iters_given ? o->iters : -1, RT_MAX_STEPS, &o->iters, err, sizeof err))
		rt_fatal("%s", err);
	if (!o->quiet) {
		int64_t dropped = d->n % (d->batch * d->shards);
		printf("data: %s: %lld samples, %lld steps of %lld an epoch", d->dir, (long long)d->n,
		       (long long)d->steps_per_epoch, (long long)d->batch);
		if (d->shards > 1)
			printf(" on each of %lld ranks", (long long)d->shards);
		if (dropped)
			printf(" (the last %lld samples of each epoch's order are dropped)", (long long)dropped);
		printf("; %lld steps", (long long)o->iters);
		if (o->iters % d->steps_per_epoch == 0)
			printf(", %lld epoch%s", (long long)(o->iters / d->steps_per_epoch),
			       o->iters == d->steps_per_epoch ? "" : "s");
		else
			printf(", %.2f epochs", (double)o->iters / (double)d->steps_per_epoch);
		printf("\n");
		fflush(stdout);
	}
}

bool rt_feed_next(RtCtx *ctx, char *err, size_t errlen)
{
	RtFeed *f = ctx->feed;
	RtBatch *in = &ctx->batch[RT_DATA_INPUT], *lab = &ctx->batch[RT_DATA_LABELS];
	int64_t step = (int64_t)ctx->step;
	if (f->running) {
		int rc = pthread_join(f->thread, NULL);
		if (rc)
			rt_fatal("waiting for the next batch: %s", strerror(rc));
		f->running = false;
		if (f->pending != step)
			RT_ICE("the batch of step %lld prepared for step %lld", (long long)f->pending, (long long)step);
		if (f->failed) {
			snprintf(err, errlen, "%s", f->err);
			return false;
		}
		float *t = in->data;
		in->data = f->spare[0];
		f->spare[0] = t;
		t = lab->data;
		lab->data = f->spare[1];
		f->spare[1] = t;
	} else if (ds_gather(f->ds, step, in->data, lab->data, err, errlen)) {
		return false;
	}
	if (step + 1 < ctx->opt.iters && f->ahead) {
		f->pending = step + 1;
		int rc = pthread_create(&f->thread, NULL, prepare, f);
		if (rc)
			rt_fatal("starting the thread that prepares batches: %s", strerror(rc));
		f->running = true;
	}
	return true;
}

int64_t rt_feed_epoch(const RtCtx *ctx, int64_t step, int64_t *steps_per_epoch)
{
	if (!ctx->feed) {
		*steps_per_epoch = 0;
		return 0;
	}
	*steps_per_epoch = ctx->feed->ds->steps_per_epoch;
	return step / *steps_per_epoch;
}

void rt_feed_close(RtCtx *ctx)
{
	RtFeed *f = ctx->feed;
	if (!f)
		return;
	if (f->running)
		pthread_join(f->thread, NULL);
	ds_close(f->ds);
	free(f->spare[0]);
	free(f->spare[1]);
	free(f);
	ctx->feed = NULL;
}
