/*
 * dataset.c - training data from a directory of .npy files (see
 * autotm/dataset.h).
 *
 * Everything that can be checked without reading the samples is checked
 * when the dataset is opened, before the first step: the files' types and
 * shapes against the model's input and labels, the labels themselves
 * (class ids in range, soft labels finite; they are small), and that the
 * dataset holds a batch. The samples are read only when a batch is
 * gathered, so a sample that is not finite is named then, by its row.
 */
#include "autotm/dataset.h"
#include "autotm/random.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

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

/* "[1797, 1, 8, 8]", with "N" for the first size when lead is given. */
static const char *shape_str(const char *lead, int ndim, const int64_t *shape, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < ndim && n < size; i++) {
		if (i == 0 && lead)
			n += (size_t)snprintf(buf + n, size - n, "%s", lead);
		else
			n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	}
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}

static char *join(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s%s%s", dir, n > 2 && dir[strlen(dir) - 1] == '/' ? "" : "/", file);
	return p;
}

/* The samples: float32 [N, shape[1..]], or integer ids of that shape. */
static int check_x(const DsDataset *d, const char *input, int ndim, const int64_t *shape, char *err, size_t errlen)
{
	const TioTensor *x = &d->x->t[0];
	bool same = x->ndim == ndim;
	for (int i = 1; same && i < ndim; i++)
		same = x->shape[i] == shape[i];
	char got[256], want[256];
	shape_str(NULL, x->ndim, x->shape, got, sizeof got);
	shape_str("N", ndim, shape, want, sizeof want);
	if (!same || x->ndim < 1)
		return fail(err, errlen, "%s: the samples are %s %s, but the model's input '%s' needs %s (its shape "
		            "without the batch, after the number of samples N)", d->x_path, np_name(x->dtype), got,
		            input, want);
	if (d->x_ids > 0 && x->dtype != TIO_I32 && x->dtype != TIO_I64)
		return fail(err, errlen, "%s: the samples are %s; the model's input '%s' is ids: it needs int32 or int64 "
		            "(numpy: x.astype(numpy.int32))", d->x_path, np_name(x->dtype), input);
	if (!d->x_ids && x->dtype != TIO_F32)
		return fail(err, errlen, "%s: the samples are %s; the model's input '%s' needs float32 (numpy: "
		            "x.astype(numpy.float32))", d->x_path, np_name(x->dtype), input);
	return 0;
}

/* The labels: class ids [N] in [0, K), or finite floats [N, K]; for class labels, ids of their shape. */
static int check_y(DsDataset *d, const DsModel *m, char *err, size_t errlen)
{
	const TioTensor *y = &d->y->t[0];
	int64_t k = d->classes;
	char got[256], want[256];
	shape_str(NULL, y->ndim, y->shape, got, sizeof got);
	bool ints = y->dtype == TIO_I32 || y->dtype == TIO_I64;
	bool same = y->ndim == m->y_ndim;
	for (int i = 1; same && i < y->ndim; i++)
		same = y->shape[i] == m->y_shape[i];
	if (d->y_ids) {
		if (!ints || !same)
			return fail(err, errlen, "%s: the labels are %s %s, but the model's are class ids %s (int32 or int64, "
			            "each in [0, %lld))", d->y_path, np_name(y->dtype), got,
			            shape_str("N", m->y_ndim, m->y_shape, want, sizeof want), (long long)k);
		d->class_ids = 1;
	} else if (y->ndim == 1 && ints) {
		d->class_ids = 1;
	} else if (y->ndim == 2 && !ints && y->shape[1] == k) {
		d->class_ids = 0;
	} else {
		return fail(err, errlen, "%s: the labels are %s %s, but the model has %lld classes: give class ids "
		            "(int32 or int64 [N]) or one-hot or soft labels (float32 or float64 [N, %lld])",
		            d->y_path, np_name(y->dtype), got, (long long)k, (long long)k);
	}
	if (y->shape[0] != d->n)
		return fail(err, errlen, "%s: %lld labels for the %lld samples of %s", d->y_path, (long long)y->shape[0],
		            (long long)d->n, d->x_path);
	double *v = malloc(sizeof *v * (size_t)(y->nelems ? y->nelems : 1));
	if (!v)
		return fail(err, errlen, "%s: out of memory reading the labels", d->y_path);
	tio_to_f64(y, v);
	int rc = 0;
	for (int64_t i = 0; i < y->nelems && !rc; i++) {
		if (d->class_ids && (v[i] < 0 || v[i] >= (double)k))
			rc = fail(err, errlen, "%s: the label of sample %lld is %lld, not a class in [0, %lld)", d->y_path,
			          (long long)(i / (y->nelems / d->n)), (long long)v[i], (long long)k);
		else if (!d->class_ids && !isfinite(v[i]))
			rc = fail(err, errlen, "%s: the label of sample %lld, class %lld, is %s", d->y_path,
			          (long long)(i / k), (long long)(i % k), isnan(v[i]) ? "NaN" : "infinite");
		else if (!d->class_ids && isinf((float)v[i]))
			rc = fail(err, errlen, "%s: the label of sample %lld, class %lld, (%g) is too large for float32",
			          d->y_path, (long long)(i / k), (long long)(i % k), v[i]);
	}
	free(v);
	return rc;
}

/* ds_open, and ds_open_eval (whole_batch false: any number of samples). */
static int open_dataset(const char *dir, uint64_t seed, const DsModel *m, bool whole_batch, DsDataset **out,
                        char *err, size_t errlen)
{
	*out = NULL;
	DsDataset *d = calloc(1, sizeof *d);
	if (!d || !(d->dir = strdup(dir)) || !(d->x_path = join(dir, "x.npy")) || !(d->y_path = join(dir, "y.npy"))) {
		ds_close(d);
		return fail(err, errlen, "%s: out of memory", dir);
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
		fail(err, errlen, "%s: no samples", d->x_path);
		goto out;
	}
	if (whole_batch && d->n < d->batch) {
		fail(err, errlen, "%s: %lld samples, fewer than a batch of %lld (give the model a smaller batch)",
		     d->x_path, (long long)d->n, (long long)d->batch);
		goto out;
	}
	d->sample_elems = d->x->t[0].nelems / d->n;
	d->steps_per_epoch = d->n / d->batch;
	if (!(d->perm = malloc(sizeof *d->perm * (size_t)d->n))) {
		fail(err, errlen, "%s: out of memory for the order of %lld samples", d->dir, (long long)d->n);
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
	return open_dataset(dir, seed, m, true, out, err, errlen);
}

int ds_open_eval(const char *dir, const DsModel *m, DsDataset **out, char *err, size_t errlen)
{
	return open_dataset(dir, 0, m, false, out, err, errlen);
}

/* Element i of an int32 or int64 array at p (unaligned). */
static int64_t int_at(const unsigned char *p, TioDtype t, int64_t i)
{
	if (t == TIO_I32) {
		int32_t v;
		memcpy(&v, p + (size_t)i * sizeof v, sizeof v);
		return v;
	}
	int64_t v;
	memcpy(&v, p + (size_t)i * sizeof v, sizeof v);
	return v;
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
		return fail(err, errlen, "%s: %lld epoch%s of %lld steps %s more than %lld steps", d->dir, (long long)e,
		            e > 1 ? "s" : "", (long long)spe, e > 1 ? "are" : "is", (long long)max);
	*steps = epochs > 0 ? epochs * spe : iters >= 0 ? iters : spe;
	return 0;
}

/*
 * Sample i of the files into x (sample_elems floats) and its one-hot or
 * soft labels, or its class ids, into y (label_elems floats).
 */
static int gather_sample(const DsDataset *d, int64_t i, float *x, float *y, char *err, size_t errlen)
{
	/* the files' data may be unaligned (a .npy header of any length): bytes, copied */
	const unsigned char *xs = d->x->t[0].data, *ys = d->y->t[0].data;
	TioDtype yt = d->y->t[0].dtype;
	int64_t e = d->sample_elems, k = d->classes;
	if (d->x_ids > 0) {
		for (int64_t j = 0; j < e; j++) {
			int64_t v = int_at(xs, d->x->t[0].dtype, i * e + j);
			if (v < 0 || v >= d->x_ids)
				return fail(err, errlen, "%s: sample %lld holds %lld at element %lld, not an id in [0, %lld)",
				            d->x_path, (long long)i, (long long)v, (long long)j, (long long)d->x_ids);
			x[j] = (float)v;
		}
	} else {
		memcpy(x, xs + (size_t)(i * e) * sizeof(float), sizeof *x * (size_t)e);
		for (int64_t j = 0; j < e; j++)
			if (!isfinite(x[j]))
				return fail(err, errlen, "%s: sample %lld holds %s at element %lld", d->x_path, (long long)i,
				            isnan(x[j]) ? "a NaN" : "an infinite value", (long long)j);
	}
	if (d->y_ids) { /* checked in range when opened */
		for (int64_t j = 0; j < d->label_elems; j++)
			y[j] = (float)int_at(ys, yt, i * d->label_elems + j);
		return 0;
	}
	if (yt == TIO_F32) {
		memcpy(y, ys + (size_t)(i * k) * sizeof(float), sizeof *y * (size_t)k);
		return 0;
	}
	if (yt == TIO_F64) {
		for (int64_t j = 0; j < k; j++) {
			double v;
			memcpy(&v, ys + (size_t)(i * k + j) * sizeof v, sizeof v);
			y[j] = (float)v;
		}
		return 0;
	}
	int64_t c = int_at(ys, yt, i);
	for (int64_t j = 0; j < k; j++)
		y[j] = j == c ? 1.0f : 0.0f;
	return 0;
}

int ds_gather(DsDataset *d, int64_t step, float *x, float *y, char *err, size_t errlen)
{
	int64_t epoch = step / d->steps_per_epoch, index = step % d->steps_per_epoch;
	if (epoch != d->perm_epoch) {
		ds_order(d->seed, epoch, d->n, d->perm);
		d->perm_epoch = epoch;
	}
	for (int64_t r = 0; r < d->batch; r++)
		if (gather_sample(d, d->perm[index * d->batch + r], x + r * d->sample_elems, y + r * d->label_elems, err,
		                  errlen))
			return -1;
	return 0;
}

int ds_gather_rows(const DsDataset *d, int64_t first, int64_t count, float *x, float *y, char *err, size_t errlen)
{
	for (int64_t r = 0; r < d->batch; r++) {
		/* rows past the end repeat the first of the batch: finite, and ignored by the caller */
		int64_t i = first + (r < count ? r : 0);
		if (gather_sample(d, i, x + r * d->sample_elems, y + r * d->label_elems, err, errlen))
			return -1;
	}
	return 0;
}
