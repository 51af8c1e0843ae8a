/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (runtime/tensorio.c:
 * --input, --labels) and the datasets read through it (runtime/dataset.c:
 * --data, --val, interpret --data).
 *
 * Each input is a .npy file. It is opened alone, as --input opens it, and
 * every element read. Then it becomes one file of a dataset whose other
 * file is small and valid: x.npy (the samples) when the input's last byte
 * is even, y.npy (the labels) when odd, for a model of floats
 * ([2, 3] with one-hot labels of 3 classes) and a model of ids ([2, 3]
 * ids in [0, 5), class labels of the same shape). A dataset that opens
 * has every batch of two epochs gathered, and every sample in order as an
 * evaluation reads them. A crash, a sanitizer report or a refusal
 * without a message is a bug.
 *
 *   make fuzz FUZZ_TARGET=npy   (seeds: fuzz/corpus/seeds-npy)
 */
#include "fuzz_file.h" /* first: it asks for memfd_create */
#include <string.h>
#include <sys/stat.h>

#include "autotm/dataset.h"

/* A .npy file of n little-endian elements of `descr` ("<f4", "<i4", "<i8") in a memory file. */
static const char *npy(int slot, const char *descr, int ndim, const int64_t *shape, const void *elems, size_t bytes)
{
	char head[256], text[160];
	int n = snprintf(text, sizeof text, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < ndim; i++)
		n += snprintf(text + n, sizeof text - (size_t)n, "%lld,%s", (long long)shape[i], i + 1 < ndim ? " " : "");
	n += snprintf(text + n, sizeof text - (size_t)n, "), }");
	size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
	memcpy(head, "\x93NUMPY\x01\x00", 8);
	head[8] = (char)(total - 10);
	head[9] = 0;
	memset(head + 10, ' ', total - 10);
	memcpy(head + 10, text, (size_t)n);
	head[total - 1] = '\n';
	static unsigned char file[4096];
	memcpy(file, head, total);
	memcpy(file + total, elems, bytes);
	return fuzz_file(slot, file, total + bytes);
}

static char dir[] = "/tmp/fuzz-npy.XXXXXX";

static void remove_dir(void)
{
	char p[64];
	snprintf(p, sizeof p, "%s/x.npy", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/y.npy", dir);
	unlink(p);
	rmdir(dir);
}

/* A directory whose x.npy and y.npy are links to memory files 1 and 2 (removed at exit). */
static const char *dataset_dir(void)
{
	static int made;
	if (!made) {
		char x[64], y[64];
		if (!mkdtemp(dir))
			abort();
		const char *px = fuzz_file(1, "", 0), *py = fuzz_file(2, "", 0);
		snprintf(x, sizeof x, "%s/x.npy", dir);
		snprintf(y, sizeof y, "%s/y.npy", dir);
		if (symlink(px, x) != 0 || symlink(py, y) != 0)
			abort();
		atexit(remove_dir);
		made = 1;
	}
	return dir;
}

/* Every batch of two epochs, then every sample in order. */
static void read_all(DsDataset *d)
{
	static float x[1 << 12], y[1 << 12];
	char err[1024];
	if (d->batch * d->sample_elems > (int64_t)(sizeof x / sizeof x[0]) ||
	    d->batch * d->label_elems > (int64_t)(sizeof y / sizeof y[0]))
		abort(); /* the models' batches are small */
	for (int64_t s = 0; s < 2 * d->steps_per_epoch; s++)
		ds_gather(d, s, x, y, err, sizeof err);
	for (int64_t first = 0; first < d->n; first += d->batch)
		ds_gather_rows(d, first, d->n - first < d->batch ? d->n - first : d->batch, x, y, err, sizeof err);
}

static void as_dataset(const uint8_t *data, size_t size, int ids, int as_labels)
{
	static const int64_t x_shape[] = {2, 3}, y_onehot[] = {2, 3}, four[] = {4}, four3[] = {4, 3};
	float xf[12] = {0.5f, -1, 2, 0, 1, 3, -2, 1, 0.25f, 4, 0, 1};
	int32_t xi[12] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1};
	int64_t yc[4] = {0, 2, 1, 2};
	DsModel m = {.input = "x", .x_ndim = 2, .x_shape = x_shape, .x_ids = ids ? 5 : 0, .y_ndim = 2,
	             .y_shape = ids ? x_shape : y_onehot, .y_ids = ids ? 5 : 0};
	fuzz_file(as_labels ? 2 : 1, data, size);
	if (as_labels)
		npy(1, ids ? "<i4" : "<f4", 2, four3, ids ? (const void *)xi : (const void *)xf, sizeof xf);
	else if (ids)
		npy(2, "<i4", 2, four3, xi, sizeof xi);
	else
		npy(2, "<i8", 1, four, yc, sizeof yc);
	DsDataset *d;
	char err[1024] = "";
	for (int eval = 0; eval < 2; eval++) {
		int rc = eval ? ds_open_eval(dataset_dir(), &m, &d, err, sizeof err)
		              : ds_open(dataset_dir(), 7, &m, &d, err, sizeof err);
		if (rc) {
			if (!err[0])
				abort(); /* refused without a message */
			continue;
		}
		read_all(d);
		ds_close(d);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TioFile *f;
	char err[1024] = "";
	if (tio_npy_open(fuzz_file(0, data, size), &f, err, sizeof err) == 0) {
		const TioTensor *t = &f->t[0];
		volatile double sum = 0;
		for (int64_t i = 0; i < t->nelems; i++)
			sum += t->dtype == TIO_I32 || t->dtype == TIO_I64 ? (double)tio_int_at(t, i) : tio_f64_at(t, i);
		tio_close(f);
	} else if (!err[0]) {
		abort();
	}
	int as_labels = size > 0 && (data[size - 1] & 1);
	as_dataset(data, size, 0, as_labels);
	as_dataset(data, size, 1, as_labels);
	return 0;
}
