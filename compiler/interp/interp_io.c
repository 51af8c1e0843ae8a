/*
 * interp_io.c - the reference interpreter's data from files: .npy input
 * and labels, safetensors weights in and out (runtime/tensorio.c reads
 * and writes the formats). Values read must be finite, as the runtime
 * (runtime/data.c) requires too, in the same words.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "interp.h"
#include "util.h"
#include "autotm/dataset.h"
#include "autotm/tensorio.h"

/*
 * Whether the n values read from a file are finite (and, unless the
 * interpreter computes in double, finite as floats); else an error naming
 * the first that is not, as `what` ("X.npy", "W: tensor 'fc.weight'"). A
 * NaN label is reported here rather than as a loss that is not finite.
 */
static bool check_finite(const double *v, int64_t n, bool f64, const char *what)
{
	for (int64_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			error_plain("%s: element %lld is NaN", what, (long long)i);
		else if (isinf(v[i]))
			error_plain("%s: element %lld is infinite", what, (long long)i);
		else if (!f64 && isinf((float)v[i]))
			error_plain("%s: element %lld (%g) is too large for float32", what, (long long)i, v[i]);
		else
			continue;
		return false;
	}
	return true;
}

/* Fill a data tensor from a .npy file, checking its shape and values. */
bool interp_load_npy(Interp *ip, const Tensor *t, const char *path)
{
	TioFile *f;
	char err[512], s1[128];
	if (tio_npy_open(path, &f, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	const TioTensor *a = &f->t[0];
	const Shape *s = &t->shape;
	bool ok = a->ndim == s->ndim;
	for (int i = 0; ok && i < s->ndim; i++)
		ok = a->shape[i] == s->d[i];
	bool ints = a->dtype == TIO_I32 || a->dtype == TIO_I64;
	bool classes = t->kind == TENSOR_LABELS && t->dtype != DT_I32 && a->ndim == 1 && a->shape[0] == s->d[0] && ints;
	if (t->dtype == DT_I32 && ok && ints) { /* ids, each in the range its users accept */
		double *v = ip->buf[t->id];
		int64_t range = tensor_id_range(t);
		for (int64_t i = 0; i < a->nelems; i++) {
			int64_t id = tio_int_at(a, i);
			if (id < 0 || id >= range) {
				error_plain("%s: element %lld (%lld) is not an id in [0, %lld)", path, (long long)i,
				            (long long)id, (long long)range);
				tio_close(f);
				return false;
			}
			v[i] = (double)id;
		}
	} else if (classes) {
		double *y = ip->buf[t->id];
		for (int64_t r = 0; r < s->d[0]; r++) {
			int64_t k = tio_int_at(a, r);
			if (k < 0 || k >= s->d[1]) {
				error_plain("%s: label %lld of row %lld is not a class in [0, %lld)", path, (long long)k,
				            (long long)r, (long long)s->d[1]);
				tio_close(f);
				return false;
			}
			for (int64_t j = 0; j < s->d[1]; j++)
				y[r * s->d[1] + j] = j == k;
		}
	} else if (ok && t->dtype != DT_I32 && (a->dtype == TIO_F32 || a->dtype == TIO_F64)) {
		tio_to_f64(a, ip->buf[t->id]);
		if (!check_finite(ip->buf[t->id], a->nelems, ip->f64, path)) {
			tio_close(f);
			return false;
		}
		if (!ip->f64)
			for (int64_t i = 0; i < a->nelems; i++)
				ip->buf[t->id][i] = (float)ip->buf[t->id][i];
	} else {
		char got[256] = "[";
		for (int i = 0; i < a->ndim; i++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)a->shape[i]);
		error_plain("%s: the array is %s%s] but %s '%s' is %s%s", path, tio_dtype_name(a->dtype), got,
		            tensor_kind_name(t->kind), t->name, dtype_name(t->dtype), shape_str(*s, s1, sizeof s1));
		tio_close(f);
		return false;
	}
	tio_close(f);
	return true;
}

/*
 * Replace every weight by the tensor of the same name in a safetensors
 * file, and every running statistic the file has.
 */
bool interp_load_weights(Interp *ip, const char *path)
{
	TioFile *f;
	char err[512], s1[128];
	if (tio_safetensors_open(path, &f, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	const Graph *g = ip->g;
	int used = 0, stats_missing = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		bool stats = tensor_is_statistic(t);
		if (t->kind != TENSOR_WEIGHT && !stats)
			continue;
		const TioTensor *w = tio_find(f, t->name);
		if (!w && stats) { /* running statistics are optional: they start afresh */
			if (!stats_missing++)
				fprintf(stderr, "autotmc: warning: %s has no running statistics such as '%s': they start afresh "
				        "(mean 0, variance 1)\n", path, t->name);
			continue;
		}
		if (!w) {
			error_plain("%s has no tensor '%s' (the model's weights are listed by 'autotmc graph')", path,
			            t->name);
			tio_close(f);
			return false;
		}
		bool same = w->ndim == t->shape.ndim;
		for (int k = 0; same && k < w->ndim; k++)
			same = w->shape[k] == t->shape.d[k];
		if (!same) {
			char got[256] = "[";
			for (int k = 0; k < w->ndim; k++)
				snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "",
				         (long long)w->shape[k]);
			error_plain("%s: tensor '%s' has shape %s] in the file but %s in the model", path, t->name, got,
			            shape_str(t->shape, s1, sizeof s1));
			tio_close(f);
			return false;
		}
		tio_to_f64(w, ip->buf[t->id]);
		char what[1024];
		snprintf(what, sizeof what, "%s: tensor '%s'", path, t->name);
		if (!check_finite(ip->buf[t->id], w->nelems, ip->f64, what)) {
			tio_close(f);
			return false;
		}
		if (!ip->f64)
			for (int64_t k = 0; k < w->nelems; k++)
				ip->buf[t->id][k] = (float)ip->buf[t->id][k];
		used++;
	}
	if (used < f->n)
		fprintf(stderr, "autotmc: warning: %s holds %d tensors that the model does not use\n", path, f->n - used);
	tio_close(f);
	return true;
}

bool interp_save_weights(const Interp *ip, const char *path)
{
	const Graph *g = ip->g;
	TioOut *out = xcalloc((size_t)g->tensors.n, sizeof *out);
	int n = 0;
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->kind != TENSOR_WEIGHT && !tensor_is_statistic(t))
			continue;
		out[n++] = (TioOut){t->name, t->shape.ndim, t->shape.d, TIO_F64, ip->buf[t->id]};
	}
	char err[512];
	int rc = tio_safetensors_write(path, out, n, err, sizeof err);
	free(out);
	if (rc)
		error_plain("%s", err);
	return rc == 0;
}

/* ---- datasets ------------------------------------------------------------- */

struct InterpFeed {
	DsDataset *ds;      /* the open dataset */
	float *x, *y;       /* one batch, as the runtime gathers it */
};

DsModel interp_ds_model(const Graph *g)
{
	const Tensor *in = g->input, *lab = g->labels;
	return (DsModel){
		.input = in->name, .x_ndim = in->shape.ndim, .x_shape = in->shape.d,
		.x_ids = in->dtype == DT_I32 ? tensor_id_range(in) : 0,
		.y_ndim = lab->shape.ndim, .y_shape = lab->shape.d, .y_ids = lab->dtype == DT_I32 ? tensor_id_range(lab) : 0,
	};
}

InterpFeed *interp_feed_open(Interp *ip, const char *dir, uint64_t seed, long epochs, long iters, long *steps)
{
	const Tensor *in = ip->g->input, *lab = ip->g->labels;
	if (!in || !lab) {
		error_plain("--data %s: the model has no %s to feed", dir, in ? "labels" : "input");
		return NULL;
	}
	int64_t n;
	char err[1024];
	DsDataset *ds;
	DsModel m = interp_ds_model(ip->g);
	if (ds_open(dir, seed, &m, &ds, err, sizeof err)) {
		error_plain("%s", err);
		return NULL;
	}
	if (ds_steps(ds, epochs, iters, 1000000, &n, err, sizeof err)) {
		error_plain("%s", err);
		ds_close(ds);
		return NULL;
	}
	*steps = (long)n;
	InterpFeed *f = xcalloc(1, sizeof *f);
	f->ds = ds;
	f->x = xmalloc(sizeof *f->x * (size_t)(ds->batch * ds->sample_elems));
	f->y = xmalloc(sizeof *f->y * (size_t)(ds->batch * ds->label_elems));
	return f;
}

bool interp_feed_step(Interp *ip, InterpFeed *f, long step)
{
	char err[1024];
	if (ds_gather(f->ds, step, f->x, f->y, err, sizeof err)) {
		error_plain("%s", err);
		return false;
	}
	double *x = ip->buf[ip->g->input->id], *y = ip->buf[ip->g->labels->id];
	for (int64_t i = 0; i < f->ds->batch * f->ds->sample_elems; i++)
		x[i] = f->x[i];
	for (int64_t i = 0; i < f->ds->batch * f->ds->label_elems; i++)
		y[i] = f->y[i];
	return true;
}

void interp_feed_close(InterpFeed *f)
{
	if (!f)
		return;
	ds_close(f->ds);
	free(f->x);
	free(f->y);
	free(f);
}
