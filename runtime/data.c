/*
 * data.c - the tensors that come from outside the training step: initial
 * weights and optimizer state, the input batch and the labels, and the
 * weights saved at the end.
 *
 * Initial values come from autotm/random.h's generator, element by
 * element in row-major order from the stream rt_stream(--seed, name), so
 * that they are the very bits the reference interpreter starts from
 * (`autotmc interpret` with the same seed). With --weights, every weight
 * is read from the safetensors file by name instead; --input and
 * --labels replace the synthetic batch by .npy arrays, and --data by a
 * batch of a dataset each step (feed.c). Values from files
 * must be finite floats (a NaN label is named where it is, not blamed on
 * the learning rate steps later). The messages for a missing tensor, a
 * wrong shape or a value that is not finite are those of `autotmc
 * interpret`.
 *
 * Weights and state are made in host memory and stored to their place in
 * their pool (the backend's memory.store: the pool may be a GPU's). The
 * input and labels are kept in a host buffer owned by the runtime and
 * stored to wherever the memory plan puts them each step (rt_data): the
 * planner may reuse their memory once they are dead.
 */
#include "rt_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/random.h"

static const char *kind_name(int32_t kind)
{
	switch (kind) {
	case RT_TENSOR_INPUT: return "input";
	case RT_TENSOR_LABELS: return "labels";
	case RT_TENSOR_WEIGHT: return "weight";
	case RT_TENSOR_STATE: return "state";
	case RT_TENSOR_STATS: return "statistic";
	default: return "tensor";
	}
}

/*
 * Fill n floats from the tensor's generator. The synthetic batch of rank
 * r > 0 of several comes from another stream (rank 0's is the one-rank
 * program's): each rank trains on a batch of its own.
 */
static void fill_init(RtCtx *ctx, const RtTensor *t, float *dst, int64_t n)
{
	bool batch = t->kind == RT_TENSOR_INPUT || t->kind == RT_TENSOR_LABELS;
	uint64_t seed = (uint64_t)ctx->opt.seed + (batch ? (uint64_t)ctx->rank * 0x9e3779b97f4a7c15ull : 0);
	RtInit gen = {
		.kind = t->init, .lo = t->lo, .hi = t->hi, .value = t->value,
		.state = rt_stream(seed, t->name),
		.cols = t->ndim > 1 ? t->shape[1] : 1,
	};
	if (t->init < RT_INIT_UNIFORM || t->init > RT_INIT_IDS || (t->init == RT_INIT_IDS && !(t->hi >= 1)))
		RT_ICE("tensor '%s': no initialisation %d", t->name, t->init);
	for (int64_t i = 0; i < n; i++)
		dst[i] = (float)rt_init_next(&gen);
}

/*
 * Convert a file's tensor to floats, refusing values that are not finite
 * (or become infinite as floats): training on them would only show, steps
 * later, as a loss that is not finite. `what` names the tensor in
 * messages: "W: tensor 'fc.weight'" or "X.npy".
 */
static void to_float(const TioTensor *a, float *dst, const char *what)
{
	double *tmp = rt_xmalloc(sizeof *tmp * (size_t)(a->nelems ? a->nelems : 1));
	tio_to_f64(a, tmp);
	for (int64_t i = 0; i < a->nelems; i++) {
		dst[i] = (float)tmp[i];
		if (isnan(tmp[i]))
			rt_fatal("%s: element %lld is NaN", what, (long long)i);
		if (isinf(tmp[i]))
			rt_fatal("%s: element %lld is infinite", what, (long long)i);
		if (isinf(dst[i]))
			rt_fatal("%s: element %lld (%g) is too large for float32", what, (long long)i, tmp[i]);
	}
	free(tmp);
}

/* A weight from --weights, checked by name and shape. */
static void load_weight(RtCtx *ctx, const RtTensor *t, float *dst)
{
	const char *path = ctx->opt.weights;
	const TioTensor *w = tio_find(ctx->weights_file, t->name);
	if (!w && ctx->resuming)
		rt_fatal("%s has no tensor '%s': the checkpoint is of another model or optimizer", path, t->name);
	if (!w)
		rt_fatal("%s has no tensor '%s' (the model's weights are listed by 'autotmc graph')", path, t->name);
	bool same = w->ndim == t->ndim;
	for (int k = 0; same && k < w->ndim; k++)
		same = w->shape[k] == t->shape[k];
	if (!same) {
		char got[256], want[256];
		fmt_shape(w->ndim, w->shape, NULL, got, sizeof got);
		rt_fatal("%s: tensor '%s' has shape %s in the file but %s in the model", path, t->name, got,
		         fmt_shape((int)t->ndim, t->shape, NULL, want, sizeof want));
	}
	char what[1024];
	snprintf(what, sizeof what, "%s: tensor '%s'", path, t->name);
	to_float(w, dst, what);
	ctx->weights_used++;
}

/* The input or labels from a .npy file: the tensor's shape, or labels as [N] class indices. */
static void load_npy(const RtCtx *ctx, const RtTensor *t, const char *path, float *dst)
{
	TioFile *f;
	char err[512];
	if (tio_npy_open(path, &f, err, sizeof err))
		rt_fatal("%s", err);
	const TioTensor *a = &f->t[0];
	TioTensor shard;
	if (ctx->nranks > 1 && a->ndim >= 1 && t->ndim >= 1 && a->shape[0] == t->shape[0] * ctx->nranks) {
		/* the whole batch of every rank: this rank's rows (a batch of B per rank, of N ranks: N B rows) */
		shard = *a;
		shard.shape[0] = t->shape[0];
		shard.nelems = a->nelems / ctx->nranks;
		shard.data = a->data + (size_t)(shard.nelems * ctx->rank) * (size_t)tio_dtype_size(a->dtype);
		a = &shard;
	}
	bool ok = a->ndim == t->ndim;
	for (int i = 0; ok && i < a->ndim; i++)
		ok = a->shape[i] == t->shape[i];
	if (t->dtype == RT_DTYPE_I32) { /* ids: integers of the tensor's shape, each in [0, hi) */
		char want[256], got[256];
		if (!ok || (a->dtype != TIO_I32 && a->dtype != TIO_I64))
			rt_fatal("%s: the array is %s%s but %s '%s' is i32%s (integer ids)", path, tio_dtype_name(a->dtype),
			         fmt_shape(a->ndim, a->shape, NULL, got, sizeof got), kind_name(t->kind), t->name,
			         fmt_shape((int)t->ndim, t->shape, NULL, want, sizeof want));
		for (int64_t i = 0; i < a->nelems; i++) {
			int64_t v = tio_int_at(a, i);
			if (!(v >= 0 && (double)v < t->hi))
				rt_fatal("%s: element %lld (%lld) is not an id in [0, %.0f)", path, (long long)i, (long long)v, t->hi);
			dst[i] = (float)v;
		}
		tio_close(f);
		return;
	}
	bool classes = t->kind == RT_TENSOR_LABELS && t->ndim == 2 && a->ndim == 1 && a->shape[0] == t->shape[0] &&
	               (a->dtype == TIO_I32 || a->dtype == TIO_I64);
	if (classes) {
		int64_t k = t->shape[1];
		for (int64_t r = 0; r < t->shape[0]; r++) {
			int64_t c = tio_int_at(a, r);
			if (c < 0 || c >= k)
				rt_fatal("%s: label %lld of row %lld is not a class in [0, %lld)", path, (long long)c,
				         (long long)r, (long long)k);
			for (int64_t j = 0; j < k; j++)
				dst[r * k + j] = j == c ? 1.0f : 0.0f;
		}
	} else if (ok && (a->dtype == TIO_F32 || a->dtype == TIO_F64)) {
		to_float(a, dst, path);
	} else {
		char got[256], want[256];
		fmt_shape(a->ndim, a->shape, NULL, got, sizeof got);
		rt_fatal("%s: the array is %s%s but %s '%s' is f32%s", path, tio_dtype_name(a->dtype), got,
		         kind_name(t->kind), t->name, fmt_shape((int)t->ndim, t->shape, NULL, want, sizeof want));
	}
	tio_close(f);
}

static void remember_weight(RtCtx *ctx, const RtTensor *t)
{
	if (ctx->nweights == ctx->weights_cap) {
		int cap = ctx->weights_cap ? 2 * ctx->weights_cap : 32;
		RtWeight *w = rt_xmalloc(sizeof *w * (size_t)cap);
		if (ctx->nweights)
			memcpy(w, ctx->weights, sizeof *w * (size_t)ctx->nweights);
		free(ctx->weights);
		ctx->weights = w;
		ctx->weights_cap = cap;
	}
	RtWeight *w = &ctx->weights[ctx->nweights++];
	*w = (RtWeight){.name = rt_xstrdup(t->name), .kind = t->kind, .pool = t->pool, .offset = t->offset,
	                .ndim = (int)t->ndim};
	memcpy(w->shape, t->shape, sizeof w->shape);
}

float *rt_data_place(RtCtx *ctx, int32_t pool, int64_t offset, int64_t bytes, const char *name)
{
	const RtPool *p = pool == RT_POOL_FAST ? &ctx->fast : pool == RT_POOL_SLOW ? &ctx->slow : NULL;
	if (!p)
		RT_ICE("tensor '%s' is in no pool (%d)", name, pool);
	if (offset < 0 || offset % (int64_t)sizeof(float) || offset + bytes > p->bytes)
		RT_ICE("tensor '%s' (%lld bytes at offset %lld) lies outside the %s pool (%lld bytes)", name,
		       (long long)bytes, (long long)offset, p->name, (long long)p->bytes);
	return (float *)((char *)p->base + offset);
}

void rt_tensor(RtCtx *ctx, const RtTensor *t)
{
	if (!t->name || t->ndim < 1 || t->ndim > RT_MAX_DIMS)
		RT_ICE("rt_tensor: a tensor with %lld dimensions", (long long)t->ndim);
	int64_t n = rt_elems(t->ndim, t->shape), bytes = n * (int64_t)sizeof(float);
	ctx->ntensors++;
	switch (t->kind) {
	case RT_TENSOR_WEIGHT:
	case RT_TENSOR_STATE:
	case RT_TENSOR_STATS: {
		float *dst = rt_data_place(ctx, t->pool, t->offset, bytes, t->name);
		float *host = rt_xmalloc((size_t)bytes);
		bool stats = t->kind == RT_TENSOR_STATS;
		if (ctx->weights_file && (t->kind == RT_TENSOR_WEIGHT || ctx->resuming ||
		                          (stats && tio_find(ctx->weights_file, t->name)))) {
			load_weight(ctx, t, host);
		} else {
			if (stats && ctx->weights_file && !ctx->stats_missing++)
				rt_warn("%s has no running statistics such as '%s': they start afresh (mean 0, variance 1)",
				        ctx->opt.weights, t->name);
			fill_init(ctx, t, host, n);
		}
		ctx->backend->memory.store(dst, host, (size_t)bytes);
		free(host);
		remember_weight(ctx, t);
		return;
	}
	case RT_TENSOR_INPUT:
	case RT_TENSOR_LABELS: {
		RtBatch *b = &ctx->batch[t->kind == RT_TENSOR_INPUT ? RT_DATA_INPUT : RT_DATA_LABELS];
		if (b->data)
			RT_ICE("rt_tensor: a second %s tensor '%s'", kind_name(t->kind), t->name);
		b->data = rt_xmalloc((size_t)bytes);
		b->bytes = bytes;
		b->name = t->name;
		b->ndim = (int)t->ndim;
		memcpy(b->shape, t->shape, sizeof b->shape);
		b->dtype = t->dtype;
		if (t->dtype == RT_DTYPE_I32) {
			if (!(t->hi >= 1 && t->hi <= (double)(1 << 24)))
				RT_ICE("ids '%s' in [0, %g)", t->name, t->hi);
			b->range = (int64_t)t->hi;
			b->ids = rt_xmalloc((size_t)bytes);
		} else if (t->dtype != RT_DTYPE_F32) {
			RT_ICE("tensor '%s' of element type %d", t->name, t->dtype);
		}
		const char *path = t->kind == RT_TENSOR_INPUT ? ctx->opt.input : ctx->opt.labels;
		if (path)
			load_npy(ctx, t, path, b->data);
		else if (!ctx->opt.data) /* --data: each step's batch comes from feed.c */
			fill_init(ctx, t, b->data, n);
		return;
	}
	default:
		RT_ICE("rt_tensor: tensor '%s' has kind %d", t->name, t->kind);
	}
}

void rt_data(RtCtx *ctx, int32_t which, void *dst)
{
	if (which != RT_DATA_INPUT && which != RT_DATA_LABELS)
		RT_ICE("rt_data: no data %d", which);
	const RtBatch *b = &ctx->batch[which];
	if (!b->data)
		RT_ICE("rt_data: no %s tensor was declared with rt_tensor", which == RT_DATA_INPUT ? "input" : "labels");
	const float *eval = rt_eval_batch(ctx, which); /* an evaluation's batch: the same shape */
	const float *src = eval ? eval : b->data;
	if (b->dtype == RT_DTYPE_I32) { /* the floats hold exact ids */
		int64_t n = b->bytes / (int64_t)sizeof(float);
		for (int64_t i = 0; i < n; i++)
			b->ids[i] = (int32_t)src[i];
		src = (const float *)b->ids;
	}
	ctx->backend->memory.store(dst, src, (size_t)b->bytes);
}

/* A tensor of the weights file that no rt_tensor took, or NULL. */
static const char *unused_tensor(const RtCtx *ctx)
{
	const TioFile *f = ctx->weights_file;
	for (int i = 0; i < f->n; i++) {
		bool used = false;
		for (int w = 0; w < ctx->nweights && !used; w++)
			used = strcmp(ctx->weights[w].name, f->t[i].name) == 0;
		if (!used)
			return f->t[i].name;
	}
	return NULL;
}

void rt_data_finish_loading(RtCtx *ctx)
{
	if (ctx->weights_file) {
		int unused = ctx->weights_file->n - ctx->weights_used;
		/* state this run has no place for (momentum or AdamW's into plain SGD) would silently change its training */
		if (unused > 0 && ctx->resuming)
			rt_fatal("%s holds %d tensors that this program does not have, such as '%s': it was saved by a run "
			         "with another optimizer (momentum or AdamW state), which resuming would drop; resume it "
			         "with that optimizer, or start from its weights with --weights", ctx->opt.weights, unused,
			         unused_tensor(ctx));
		/* an evaluation program reads a checkpoint's or a training's weights: what it leaves is the training's */
		if (unused > 0 && !(ctx->program->flags & RT_PROGRAM_EVAL_ONLY))
			rt_warn("%s holds %d tensors that the model does not use", ctx->opt.weights, unused);
		tio_close(ctx->weights_file);
		ctx->weights_file = NULL;
	}
	if (ctx->opt.input && !ctx->batch[RT_DATA_INPUT].data)
		rt_warn("--input %s: the program has no input tensor", ctx->opt.input);
	if (ctx->opt.labels && !ctx->batch[RT_DATA_LABELS].data)
		rt_warn("--labels %s: the program has no labels tensor", ctx->opt.labels);
	ctx->opt.input = ctx->opt.labels = NULL; /* warned once */
}

int rt_data_write(RtCtx *ctx, const char *path, bool state, const TioMeta *meta, int nmeta, int64_t *bytes,
                  char *err, size_t errlen)
{
	TioOut *out = rt_xcalloc(sizeof *out * (size_t)(ctx->nweights + 1));
	float **host = rt_xcalloc(sizeof *host * (size_t)(ctx->nweights + 1)); /* the tensors, loaded */
	int n = 0;
	*bytes = 0;
	for (int i = 0; i < ctx->nweights; i++) {
		const RtWeight *w = &ctx->weights[i];
		if (w->kind == RT_TENSOR_STATE && !state)
			continue;
		int64_t b = rt_elems(w->ndim, w->shape) * (int64_t)sizeof(float);
		host[n] = rt_xmalloc((size_t)b);
		ctx->backend->memory.load(host[n], rt_data_place(ctx, w->pool, w->offset, b, w->name), (size_t)b);
		out[n] = (TioOut){w->name, w->ndim, w->shape, TIO_F32, host[n]};
		n++;
		*bytes += b;
	}
	int rc = tio_safetensors_write_meta(path, out, n, meta, nmeta, err, errlen);
	for (int i = 0; i < n; i++)
		free(host[i]);
	free(host);
	free(out);
	return rc;
}

bool rt_data_save_weights(RtCtx *ctx)
{
	char err[PATH_MAX + 256];
	int64_t bytes;
	if (rt_data_write(ctx, ctx->opt.save_weights, false, NULL, 0, &bytes, err, sizeof err) == 0)
		return true;
	fflush(stdout);
	fprintf(stderr, "%s: error: %s\n", rt_prog_name(), err);
	return false;
}

void rt_data_free(RtCtx *ctx)
{
	for (int i = 0; i < 2; i++) {
		free(ctx->batch[i].data);
		free(ctx->batch[i].ids);
	}
	for (int i = 0; i < ctx->nweights; i++)
		free(ctx->weights[i].name);
	free(ctx->weights);
	if (ctx->weights_file)
		tio_close(ctx->weights_file);
}
