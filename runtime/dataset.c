/*
 * dataset.c - training data from a directory of .npy files (see
 * autotm/dataset.h).
 *
 * Everything is checked when the dataset is opened, before the first
 * step, so that a bad sample never ends a run late (a validation set's
 * after the whole training): the files' types and shapes against the
 * model's input and labels, the labels (class ids in range, soft labels
 * finite), every sample (finite floats, or ids in range; one pass over
 * the mapped file), and that the dataset holds a batch. A batch is
 * checked again when it is gathered, for a file changed during the run;
 * a file truncated under the run is an error naming it, not a SIGBUS.
 */
#include "autotm/dataset.h"
#include "autotm/random.h"
#include "format.h" /* base/ */

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* numpy's name of a file's element type. */
static const char *np_name(TioDtype d)
{
	switch (d) {
	case TIO_F32: return "float32";
	case TIO_F64: return "float64";
	case TIO_I32: return "int32";
	case TIO_I64: return "int64";
	}
	return "?";
}

static char *join(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, n > 2 && dir[strlen(dir) - 1] == '/' ? "" : "/", file);
	return p;
}

/* ---- reading the mapped files ------------------------------------------- */

/*
 * The files are mapped, and a file truncated while a run reads it (a
 * smaller x.npy written over it) would end the process with SIGBUS at the
 * first read past its new end: no message, no checkpoint. So every read
 * of the samples goes through guarded(), which catches a SIGBUS raised in
 * its own thread (bus_jump is per thread: batches are gathered on the
 * feed's thread) and turns it into an error naming the file. A SIGBUS
 * anywhere else gets the action it had before.
 */
static _Thread_local sigjmp_buf *bus_jump;   /* where a SIGBUS in this thread's read returns */
static _Thread_local const void *bus_addr;   /* the address that faulted */
static struct sigaction bus_before;          /* SIGBUS's action before ours */
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_bus(int sig, siginfo_t *info, void *context)
{
	(void)context;
	if (bus_jump) {
		bus_addr = info->si_addr;
		siglongjmp(*bus_jump, 1);
	}
	sigaction(sig, &bus_before, NULL); /* not a read of ours: the fault recurs with the action it had */
}

static void install_bus_handler(void)
{
	struct sigaction sa = {.sa_sigaction = on_bus, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &bus_before);
}

/* The file of d whose mapping holds addr, or NULL. */
static const TioFile *file_at(const DsDataset *d, const void *addr)
{
	const unsigned char *p = addr;
	const TioFile *files[] = {d->x, d->y};
	for (int i = 0; i < 2; i++)
		if (files[i]->map && p >= files[i]->map && p < files[i]->map + files[i]->size)
			return files[i];
	return NULL;
}

typedef struct Read {
	DsDataset *d;
	int (*fn)(struct Read *r, char *err, size_t errlen); /* the reads */
	int64_t step, first, count; /* its arguments */
	float *x, *y;               /* its buffers */
} Read;

/* r->fn(r), with a file that shrinks under it an error rather than SIGBUS. */
static int guarded(Read *r, char *err, size_t errlen)
{
	pthread_once(&bus_once, install_bus_handler);
	sigjmp_buf here;
	if (sigsetjmp(here, 1)) {
		bus_jump = NULL;
		const TioFile *f = file_at(r->d, bus_addr);
		uint64_t at = f ? (uint64_t)((const unsigned char *)bus_addr - f->map) : 0;
		return fmt_fail(err, errlen, "%s: cannot read byte %llu: the file was truncated while this run used it "
		                "(write a dataset's files only between runs)", f ? f->path : r->d->dir, (unsigned long long)at);
	}
	bus_jump = &here;
	int rc = r->fn(r, err, errlen);
	bus_jump = NULL;
	return rc;
}

/* The samples: float32 [N, shape[1..]], or integer ids of that shape. */
static int check_x(const DsDataset *d, const char *input, int ndim, const int64_t *shape, char *err, size_t errlen)
{
	const TioTensor *x = &d->x->t[0];
	bool same = x->ndim == ndim;
	for (int i = 1; same && i < ndim; i++)
		same = x->shape[i] == shape[i];
	char got[256], want[256];
	fmt_shape(x->ndim, x->shape, NULL, got, sizeof got);
	fmt_shape(ndim, shape, "N", want, sizeof want);
	if (!same || x->ndim < 1)
		return fmt_fail(err, errlen, "%s: the samples are %s %s, but the model's input '%s' needs %s (its shape "
		                "without the batch, after the number of samples N)", d->x_path, np_name(x->dtype), got,
		                input, want);
	if (d->x_ids > 0 && x->dtype != TIO_I32 && x->dtype != TIO_I64)
		return fmt_fail(err, errlen, "%s: the samples are %s; the model's input '%s' is ids: it needs int32 or int64 "
		                "(numpy: x.astype(numpy.int32))", d->x_path, np_name(x->dtype), input);
	if (!d->x_ids && x->dtype != TIO_F32)
		return fmt_fail(err, errlen, "%s: the samples are %s; the model's input '%s' needs float32 (numpy: "
		                "x.astype(numpy.float32))", d->x_path, np_name(x->dtype), input);
	return 0;
}

/* The labels: class ids [N] in [0, K), or finite floats [N, K]; for class labels, ids of their shape. */
static int check_y(DsDataset *d, const DsModel *m, char *err, size_t errlen)
{
	const TioTensor *y = &d->y->t[0];
	int64_t k = d->classes;
	char got[256], want[256];
	fmt_shape(y->ndim, y->shape, NULL, got, sizeof got);
	bool ints = y->dtype == TIO_I32 || y->dtype == TIO_I64;
	bool same = y->ndim == m->y_ndim;
	for (int i = 1; same && i < y->ndim; i++)
		same = y->shape[i] == m->y_shape[i];
	if (d->y_ids) {
		if (!ints || !same)
			return fmt_fail(err, errlen, "%s: the labels are %s %s, but the model's are class ids %s (int32 or int64, "
			                "each in [0, %lld))", d->y_path, np_name(y->dtype), got,
			                fmt_shape(m->y_ndim, m->y_shape, "N", want, sizeof want), (long long)k);
		d->class_ids = 1;
	} else if (y->ndim == 1 && ints) {
		d->class_ids = 1;
	} else if (y->ndim == 2 && !ints && y->shape[1] == k) {
		d->class_ids = 0;
	} else {
		return fmt_fail(err, errlen, "%s: the labels are %s %s, but the model has %lld classes: give class ids "
		                "(int32 or int64 [N]) or one-hot or soft labels (float32 or float64 [N, %lld])",
		                d->y_path, np_name(y->dtype), got, (long long)k, (long long)k);
	}
	if (y->shape[0] != d->n)
		return fmt_fail(err, errlen, "%s: %lld labels for the %lld samples of %s", d->y_path, (long long)y->shape[0],
		                (long long)d->n, d->x_path);
	int64_t per = d->n ? y->nelems / d->n : 1; /* labels of a sample */
	for (int64_t i = 0; i < y->nelems; i++) {
		if (d->class_ids) {
			int64_t c = tio_int_at(y, i);
			if (c < 0 || c >= k)
				return fmt_fail(err, errlen, "%s: the label of sample %lld is %lld, not a class in [0, %lld)",
				                d->y_path, (long long)(i / per), (long long)c, (long long)k);
			continue;
		}
		double v = tio_f64_at(y, i);
		if (!isfinite(v))
			return fmt_fail(err, errlen, "%s: the label of sample %lld, class %lld, is %s", d->y_path,
			                (long long)(i / k), (long long)(i % k), isnan(v) ? "NaN" : "infinite");
		if (isinf((float)v))
			return fmt_fail(err, errlen, "%s: the label of sample %lld, class %lld, (%g) is too large for float32",
			                d->y_path, (long long)(i / k), (long long)(i % k), v);
	}
	return 0;
}

/*
 * Sample i of the files into x (sample_elems floats) and its one-hot or
 * soft labels, or its class ids, into y (label_elems floats). The files'
 * data may be unaligned (a .npy header of any length): elements are read
 * by tensorio's accessors, or copied as bytes.
 */
static int gather_sample(const DsDataset *d, int64_t i, float *x, float *y, char *err, size_t errlen)
{
	const TioTensor *xt = &d->x->t[0], *yt = &d->y->t[0];
	int64_t e = d->sample_elems, k = d->classes;
	if (d->x_ids > 0) {
		for (int64_t j = 0; j < e; j++) {
			int64_t v = tio_int_at(xt, i * e + j);
			if (v < 0 || v >= d->x_ids)
				return fmt_fail(err, errlen, "%s: sample %lld holds %lld at element %lld, not an id in [0, %lld)",
				                d->x_path, (long long)i, (long long)v, (long long)j, (long long)d->x_ids);
			x[j] = (float)v;
		}
	} else {
		memcpy(x, xt->data + (size_t)(i * e) * sizeof(float), sizeof *x * (size_t)e);
		for (int64_t j = 0; j < e; j++)
			if (!isfinite(x[j]))
				return fmt_fail(err, errlen, "%s: sample %lld holds %s at element %lld", d->x_path, (long long)i,
				                isnan(x[j]) ? "a NaN" : "an infinite value", (long long)j);
	}
	if (d->y_ids) { /* checked in range when opened */
		for (int64_t j = 0; j < d->label_elems; j++)
			y[j] = (float)tio_int_at(yt, i * d->label_elems + j);
		return 0;
	}
	if (yt->dtype == TIO_F32 || yt->dtype == TIO_F64) {
		for (int64_t j = 0; j < k; j++)
			y[j] = (float)tio_f64_at(yt, i * k + j);
		return 0;
	}
	int64_t c = tio_int_at(yt, i);
	for (int64_t j = 0; j < k; j++)
		y[j] = j == c ? 1.0f : 0.0f;
	return 0;
}

/* Every sample, each checked as a batch's are: done when the dataset is opened. */
static int scan_samples(Read *r, char *err, size_t errlen)
{
	for (int64_t i = 0; i < r->d->n; i++)
		if (gather_sample(r->d, i, r->x, r->y, err, errlen))
			return -1;
	return 0;
}

/* Every sample and label checked before the first step, so that a bad one never stops a run late. */
static int check_samples(DsDataset *d, char *err, size_t errlen)
{
	float *x = malloc(sizeof *x * (size_t)d->sample_elems), *y = malloc(sizeof *y * (size_t)d->label_elems);
	int rc = x && y ? 0 : fmt_fail(err, errlen, "%s: out of memory for a sample", d->dir);
	Read r = {.d = d, .fn = scan_samples, .x = x, .y = y};
	rc = rc ? rc : guarded(&r, err, errlen);
	free(x);
	free(y);
	return rc;
}

/* ds_open, ds_open_eval (whole_batch false: any number of samples) and ds_check (scan false: no sample read). */
static int open_dataset(const char *dir, uint64_t seed, const DsModel *m, bool whole_batch, bool scan,
                        DsDataset **out, char *err, size_t errlen)
{
	*out = NULL;
	DsDataset *d = calloc(1, sizeof *d);
	if (!d || !(d->dir = strdup(dir)) || !(d->x_path = join(dir, "x.npy")) || !(d->y_path = join(dir, "y.npy"))) {
		ds_close(d);
		return fmt_fail(err, errlen, "%s: out of memory", dir);
	}
	d->seed = seed;
	d->batch = m->x_shape[0];
	d->x_ids = m->x_ids;
	d->y_ids = m->y_ids > 0;
	d->classes = m->y_ids > 0 ? m->y_ids : m->y_shape[1];
	d->label_elems = d->classes;
	if (d->y_ids) {
		d->label_elems = 1;
		for (int i = 1; i < m->y_ndim; i++)
			d->label_elems *= m->y_shape[i];
	}
	d->perm_epoch = -1;
	int rc = -1;
	if (tio_npy_open(d->x_path, &d->x, err, errlen) || tio_npy_open(d->y_path, &d->y, err, errlen))
		goto out;
	d->n = d->x->t[0].ndim > 0 ? d->x->t[0].shape[0] : 0;
	if (check_x(d, m->input, m->x_ndim, m->x_shape, err, errlen) || check_y(d, m, err, errlen))
		goto out;
	if (d->n < 1) {
		fmt_fail(err, errlen, "%s: no samples", d->x_path);
		goto out;
	}
	if (whole_batch && d->n < d->batch) {
		fmt_fail(err, errlen, "%s: %lld samples, fewer than a batch of %lld (give the model a smaller batch)",
		         d->x_path, (long long)d->n, (long long)d->batch);
		goto out;
	}
	d->sample_elems = d->x->t[0].nelems / d->n;
	d->shards = 1;
	d->steps_per_epoch = d->n / d->batch;
	if (scan && check_samples(d, err, errlen))
		goto out;
	if (!(d->perm = malloc(sizeof *d->perm * (size_t)d->n))) {
		fmt_fail(err, errlen, "%s: out of memory for the order of %lld samples", d->dir, (long long)d->n);
		goto out;
	}
	rc = 0;
out:
	if (rc)
		ds_close(d);
	else
		*out = d;
	return rc;
}

int ds_open(const char *dir, uint64_t seed, const DsModel *m, DsDataset **out, char *err, size_t errlen)
{
	return open_dataset(dir, seed, m, true, true, out, err, errlen);
}

int ds_open_eval(const char *dir, const DsModel *m, DsDataset **out, char *err, size_t errlen)
{
	return open_dataset(dir, 0, m, false, true, out, err, errlen);
}

int ds_check(const char *dir, const DsModel *m, bool whole_batch, char *err, size_t errlen)
{
	DsDataset *d;
	int rc = open_dataset(dir, 0, m, whole_batch, false, &d, err, errlen);
	ds_close(d);
	return rc;
}

void ds_close(DsDataset *d)
{
	if (!d)
		return;
	if (d->x)
		tio_close(d->x);
	if (d->y)
		tio_close(d->y);
	free(d->perm);
	free(d->dir);
	free(d->x_path);
	free(d->y_path);
	free(d);
}

/*
 * Fisher-Yates from a stream of its own: the seed's stream "data.order",
 * moved to the epoch, so that any epoch's order is found without the
 * earlier ones.
 */
void ds_order(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm)
{
	uint64_t s = rt_stream(seed, "data.order") ^ ((uint64_t)epoch * 0xd1b54a32d192ed03ULL);
	rt_splitmix64(&s);
	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rt_splitmix64(&s) % (uint64_t)(i + 1));
		int64_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

int ds_steps(const DsDataset *d, int64_t epochs, int64_t iters, int64_t max, int64_t *steps, char *err,
             size_t errlen)
{
	int64_t spe = d->steps_per_epoch, e = epochs > 0 ? epochs : 1;
	if ((epochs > 0 || iters < 0) && e > max / spe)
		return fmt_fail(err, errlen, "%s: %lld epoch%s of %lld steps %s more than %lld steps", d->dir, (long long)e,
		                e > 1 ? "s" : "", (long long)spe, e > 1 ? "are" : "is", (long long)max);
	*steps = epochs > 0 ? epochs * spe : iters >= 0 ? iters : spe;
	return 0;
}

static int gather_step(Read *r, char *err, size_t errlen)
{
	DsDataset *d = r->d;
	int64_t epoch = r->step / d->steps_per_epoch, index = r->step % d->steps_per_epoch;
	if (epoch != d->perm_epoch) {
		ds_order(d->seed, epoch, d->n, d->perm);
		d->perm_epoch = epoch;
	}
	for (int64_t b = 0; b < d->batch; b++)
		if (gather_sample(d, d->perm[(index * d->shards + d->shard) * d->batch + b], r->x + b * d->sample_elems,
		                  r->y + b * d->label_elems, err, errlen))
			return -1;
	return 0;
}

static int gather_rows(Read *r, char *err, size_t errlen)
{
	const DsDataset *d = r->d;
	for (int64_t b = 0; b < d->batch; b++) {
		/* rows past the end repeat the first of the batch: finite, and ignored by the caller */
		int64_t i = r->first + (b < r->count ? b : 0);
		if (gather_sample(d, i, r->x + b * d->sample_elems, r->y + b * d->label_elems, err, errlen))
			return -1;
	}
	return 0;
}

int ds_shard(DsDataset *d, int64_t shard, int64_t shards, char *err, size_t errlen)
{
	if (shards < 1 || shard < 0 || shard >= shards || d->n / d->batch < shards)
		return fmt_fail(err, errlen, "%s: %lld samples, fewer than a batch of %lld for each of %lld ranks",
		                d->dir, (long long)d->n, (long long)d->batch, (long long)shards);
	d->shard = shard;
	d->shards = shards;
	d->steps_per_epoch = d->n / (d->batch * shards);
	return 0;
}

int ds_gather(DsDataset *d, int64_t step, float *x, float *y, char *err, size_t errlen)
{
	if (step < 0)
		return fmt_fail(err, errlen, "%s: no batch for step %lld", d->dir, (long long)step);
	Read r = {.d = d, .fn = gather_step, .step = step, .x = x, .y = y};
	return guarded(&r, err, errlen);
}

int ds_gather_rows(const DsDataset *d, int64_t first, int64_t count, float *x, float *y, char *err, size_t errlen)
{
	Read r = {.d = (DsDataset *)d, .fn = gather_rows, .first = first, .count = count, .x = x, .y = y};
	return guarded(&r, err, errlen);
}
