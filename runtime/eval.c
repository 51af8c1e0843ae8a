/*
 * eval.c - evaluation: the forward-only pass of a program over a whole
 * dataset, its loss and top-1 accuracy (autotm/rt.h's RtEvalProgram).
 *
 * A training program evaluates --val DIR every --eval-every K steps and
 * at the end; an evaluation program (autotmc eval) evaluates --data DIR
 * once, in rt_end. Every sample is evaluated once, in the files' order,
 * in batches of the model's batch size; the last batch is padded with
 * copies of its first sample, whose results are ignored (evaluation
 * treats samples independently: batchnorm uses its running statistics),
 * so the loss and the accuracy are over exactly the N samples.
 *
 * The evaluation pass has its own placement in the fast pool the
 * training step uses. Between two training steps only the weights, the
 * optimizer's state and the running statistics are live there; an
 * evaluation parks those of them that live in the fast pool in the slow
 * pool (RtEvalProgram.park_offset), copies the weights and statistics to
 * the evaluation's homes, runs, and copies the parked tensors back, so
 * the training continues bitwise as if nothing had happened.
 *
 * The loss and the accuracy are computed on the host from the logits the
 * pass hands to rt_eval_output, in double: the loss is the mean over the
 * samples of -sum_j label_j log softmax(logits)_j, as the training step's
 * loss; a sample counts as correct when the first largest logit is at the
 * first largest label (the class id).
 */
#include "rt_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotm/dataset.h"
#include "outfile.h" /* base/ */

typedef struct RtEval {
	const RtEvalProgram *prog;  /* what the compiler made */
	void (*batch_fn)(RtCtx *);  /* evaluates the batch in x, y */
	const RtTensor *input, *labels; /* its input and labels tensors */
	DsDataset *ds;              /* the evaluation set, opened at the first evaluation */
	float *x, *y;               /* the batch being evaluated (host) */
	float *logits;              /* its logits (host) */
	int64_t batch, classes;     /* rows of a batch, classes */
	int64_t positions;          /* class labels: the ids of a sample, each a prediction of its own; else 1 */
	bool ids;                   /* the labels are class ids (else one-hot or soft) */
	int64_t rows;               /* samples of the current batch (the rest is padding) */
	int64_t first;              /* the first sample of the current batch */
	double loss_sum;            /* this evaluation's sums over the samples so far */
	int64_t correct;
	OutFile out;                /* --outputs: the logits of every sample */
	bool out_open, out_failed;  /* out is being written; a write failed */
	int out_errno;              /* why */
	bool active;                /* rt_data reads x and y */
	RtEvalResult *results;      /* every evaluation of the run */
	int nresults, results_cap;
	double batch_seconds;       /* the median batch time of the last evaluation */
} RtEval;

void rt_eval_program(RtCtx *ctx, const RtEvalProgram *prog, void (*batch)(RtCtx *ctx))
{
	if (!(ctx->program->flags & (RT_PROGRAM_EVAL_PASS | RT_PROGRAM_EVAL_ONLY)) || ctx->eval)
		RT_ICE("rt_eval_program in a program without an evaluation pass, or twice");
	RtEval *ev = rt_xcalloc(sizeof *ev);
	ev->prog = prog;
	ev->batch_fn = batch;
	for (int32_t i = 0; i < prog->ntensors; i++) {
		const RtTensor *t = &prog->tensors[i];
		if (t->kind == RT_TENSOR_INPUT)
			ev->input = t;
		else if (t->kind == RT_TENSOR_LABELS)
			ev->labels = t;
	}
	if (!ev->input || !ev->labels || (ev->labels->ndim != 2 && ev->labels->dtype != RT_DTYPE_I32))
		RT_ICE("the evaluation pass has no input or no labels [batch, classes]");
	if (prog->fast_bytes > ctx->fast.bytes)
		RT_ICE("the evaluation pass needs %lld bytes of a fast pool of %lld", (long long)prog->fast_bytes,
		       (long long)ctx->fast.bytes);
	const RtTensor *in = ev->input, *lab = ev->labels;
	ev->batch = in->shape[0];
	ev->ids = lab->dtype == RT_DTYPE_I32;
	ev->classes = ev->ids ? (int64_t)lab->hi : lab->shape[1];
	ev->positions = ev->ids ? rt_elems(lab->ndim, lab->shape) / ev->batch : 1;
	ev->x = rt_xmalloc(sizeof(float) * (size_t)rt_elems(in->ndim, in->shape));
	ev->y = rt_xmalloc(sizeof(float) * (size_t)rt_elems(lab->ndim, lab->shape));
	ev->logits = rt_xmalloc(sizeof(float) * (size_t)(ev->batch * ev->positions * ev->classes));
	ctx->eval = ev;
	/* the evaluation set is checked now, before any training */
	const char *dir = ctx->program->flags & RT_PROGRAM_EVAL_ONLY ? ctx->opt.data : ctx->opt.val;
	char err[1024];
	DsModel m = {
		.input = in->name, .x_ndim = (int)in->ndim, .x_shape = in->shape,
		.x_ids = in->dtype == RT_DTYPE_I32 ? (int64_t)in->hi : 0,
		.y_ndim = (int)lab->ndim, .y_shape = lab->shape, .y_ids = ev->ids ? ev->classes : 0,
	};
	if (dir && ds_open_eval(dir, &m, &ev->ds, err, sizeof err))
		rt_fatal("%s", err);
}

const float *rt_eval_batch(const RtCtx *ctx, int32_t which)
{
	const RtEval *ev = ctx->eval;
	if (!ev || !ev->active)
		return NULL;
	return which == RT_DATA_INPUT ? ev->x : ev->y;
}

/* The index of the first largest of v[0..k). */
static int64_t first_max(const float *v, int64_t k)
{
	int64_t i = 0;
	for (int64_t j = 1; j < k; j++)
		if (v[j] > v[i])
			i = j;
	return i;
}

/* log sum_j exp(z_j - m), in double. */
static double log_sum_exp(const float *z, int64_t k, double m)
{
	double s = 0;
	for (int64_t j = 0; j < k; j++)
		s += exp((double)z[j] - m);
	return log(s);
}

/* The logits of one sample, its labels -> its loss; *hit: the first largest logit is at the first largest label. */
static double sample_loss(const float *z, const float *y, int64_t k, bool *hit)
{
	int64_t zi = first_max(z, k);
	double m = z[zi], dot = 0, ysum = 0;
	for (int64_t j = 0; j < k; j++) {
		dot += (double)y[j] * ((double)z[j] - m);
		ysum += y[j];
	}
	*hit = zi == first_max(y, k);
	return ysum * log_sum_exp(z, k, m) - dot; /* -sum_j y_j (z_j - m - log s) */
}

/* The same for class id c: -log softmax(z)[c]; *hit: the first largest logit is c's. */
static double id_loss(const float *z, int64_t c, int64_t k, bool *hit)
{
	int64_t zi = first_max(z, k);
	*hit = zi == c;
	return log_sum_exp(z, k, z[zi]) - ((double)z[c] - z[zi]);
}

void rt_eval_output(RtCtx *ctx, const float *logits)
{
	RtEval *ev = ctx->eval;
	if (!ev || !ev->active)
		RT_ICE("rt_eval_output outside an evaluation");
	int64_t k = ev->classes, per = ev->positions * k; /* logits of a sample */
	ctx->backend->memory.load(ev->logits, logits, sizeof(float) * (size_t)(ev->batch * per));
	for (int64_t r = 0; r < ev->rows * ev->positions; r++) {
		bool hit;
		ev->loss_sum += ev->ids ? id_loss(ev->logits + r * k, (int64_t)ev->y[r], k, &hit)
		                        : sample_loss(ev->logits + r * k, ev->y + r * k, k, &hit);
		ev->correct += hit;
	}
	if (ev->out_open && !ev->out_failed &&
	    fwrite(ev->logits, sizeof(float) * (size_t)per, (size_t)ev->rows, ev->out.f) != (size_t)ev->rows) {
		ev->out_failed = true;
		ev->out_errno = errno;
	}
}

/* --outputs: the .npy of [N, (positions,) classes] float32, its header now, the rows as they come. */
static void open_outputs(RtCtx *ctx, RtEval *ev)
{
	char err[PATH_MAX + 128], head[TIO_NPY_HEADER_MAX];
	if (!outfile_open(&ev->out, ctx->opt.outputs, err, sizeof err))
		rt_fatal("--outputs: %s", err);
	const RtTensor *lab = ev->labels;
	int64_t shape[RT_MAX_DIMS + 1] = {ev->ds->n};
	int ndim = 1;
	for (int i = 1; ev->ids && i < lab->ndim; i++)
		shape[ndim++] = lab->shape[i];
	shape[ndim++] = ev->classes;
	size_t n = tio_npy_header(head, ndim, shape);
	ev->out_open = true;
	ev->out_failed = fwrite(head, 1, n, ev->out.f) != n;
	ev->out_errno = errno;
}

static bool close_outputs(RtCtx *ctx, RtEval *ev)
{
	char err[PATH_MAX + 128];
	ev->out_open = false;
	if (ev->out_failed) {
		snprintf(err, sizeof err, "cannot write %s: %s", ctx->opt.outputs, strerror(ev->out_errno));
		outfile_abort(&ev->out);
	} else if (outfile_commit(&ev->out, err, sizeof err)) {
		return true;
	}
	rt_end_progress_line();
	fflush(stdout);
	fprintf(stderr, "%s: error: %s\n", rt_prog_name(), err);
	return false;
}

/*
 * A training program: before (out = true) an evaluation, its fast-pool
 * weights, state and statistics into the slow pool at park_offset, then
 * the evaluation's weights and statistics to their homes; after it
 * (out = false), the parked tensors back.
 */
static void park(RtCtx *ctx, const RtEval *ev, bool out)
{
	const RtCopyOps *c = &ctx->backend->copies;
	int64_t at = ev->prog->park_offset;
	int64_t *parked = rt_xmalloc(sizeof *parked * (size_t)(ctx->nweights + 1)); /* weight -> its place, or -1 */
	for (int i = 0; i < ctx->nweights; i++) {
		const RtWeight *w = &ctx->weights[i];
		int64_t bytes = rt_elems(w->ndim, w->shape) * (int64_t)sizeof(float);
		parked[i] = -1;
		if (w->pool != RT_POOL_FAST)
			continue;
		parked[i] = at;
		void *home = rt_data_place(ctx, w->pool, w->offset, bytes, w->name);
		void *away = rt_data_place(ctx, RT_POOL_SLOW, at, bytes, w->name);
		c->move(out ? away : home, out ? home : away, (size_t)bytes);
		at += (bytes + RT_PARK_ALIGN - 1) / RT_PARK_ALIGN * RT_PARK_ALIGN;
	}
	for (int32_t k = 0; out && k < ev->prog->ntensors; k++) {
		const RtTensor *t = &ev->prog->tensors[k];
		if (t->kind == RT_TENSOR_INPUT || t->kind == RT_TENSOR_LABELS)
			continue;
		int i = 0;
		while (i < ctx->nweights && strcmp(ctx->weights[i].name, t->name) != 0)
			i++;
		if (i == ctx->nweights)
			RT_ICE("the evaluation's tensor '%s' is not one of the training step's", t->name);
		const RtWeight *w = &ctx->weights[i];
		int64_t bytes = rt_elems(t->ndim, t->shape) * (int64_t)sizeof(float);
		void *src = parked[i] >= 0 ? rt_data_place(ctx, RT_POOL_SLOW, parked[i], bytes, w->name)
		                           : rt_data_place(ctx, w->pool, w->offset, bytes, w->name);
		c->move(rt_data_place(ctx, t->pool, t->offset, bytes, t->name), src, (size_t)bytes);
	}
	free(parked);
}

static void remember(RtEval *ev, RtEvalResult r)
{
	if (ev->nresults == ev->results_cap) {
		int cap = ev->results_cap ? 2 * ev->results_cap : 16;
		RtEvalResult *v = rt_xmalloc(sizeof *v * (size_t)cap);
		if (ev->nresults)
			memcpy(v, ev->results, sizeof *v * (size_t)ev->nresults);
		free(ev->results);
		ev->results = v;
		ev->results_cap = cap;
	}
	ev->results[ev->nresults++] = r;
}

bool rt_evaluate(RtCtx *ctx)
{
	RtEval *ev = ctx->eval;
	const RtBackend *b = ctx->backend;
	char err[1024];
	if (!ev->ds)
		RT_ICE("an evaluation without its dataset");
	b->copies.drain(ctx->copier);
	b->kernels.sync(ctx->kernel_state);
	bool own = ctx->program->flags & RT_PROGRAM_EVAL_ONLY;
	double t0 = rt_now();
	if (!own)
		park(ctx, ev, true);
	if (ctx->opt.outputs)
		open_outputs(ctx, ev);
	int64_t n = ev->ds->n, nbatches = (n + ev->batch - 1) / ev->batch;
	double *times = rt_xmalloc(sizeof *times * (size_t)nbatches);
	ev->loss_sum = 0;
	ev->correct = 0;
	ev->active = true;
	bool tty = !ctx->opt.quiet && rt_stdout_tty(), showed = false;
	double shown = t0;
	for (int64_t i = 0; i < nbatches; i++) {
		if (tty && rt_now() - shown >= 0.1) { /* a long evaluation shows how far it is */
			rt_progress("eval: %lld/%lld samples", (long long)(i * ev->batch), (long long)n);
			shown = rt_now();
			showed = true;
		}
		ev->first = i * ev->batch;
		ev->rows = n - ev->first < ev->batch ? n - ev->first : ev->batch;
		if (ds_gather_rows(ev->ds, ev->first, ev->rows, ev->x, ev->y, err, sizeof err))
			rt_fatal("%s", err);
		double tb = rt_now();
		ev->batch_fn(ctx); /* ends with rt_eval_output, which waits for the logits */
		b->copies.drain(ctx->copier);
		times[i] = rt_now() - tb;
	}
	ev->active = false;
	if (!own)
		park(ctx, ev, false);
	b->copies.drain(ctx->copier);
	ev->batch_seconds = rt_median(times, nbatches);
	free(times);
	int64_t predictions = n * ev->positions;
	RtEvalResult r = {
		.step = (int64_t)ctx->step,
		.loss = ev->loss_sum / (double)predictions,
		.accuracy = (double)ev->correct / (double)predictions,
		.samples = n,
		.seconds = rt_now() - t0,
	};
	remember(ev, r);
	bool ok = !ctx->opt.outputs || close_outputs(ctx, ev);
	if (!ctx->opt.quiet || own) {
		if (showed)
			rt_clear_progress_line(); /* the evaluation's own: its result replaces it */
		rt_end_progress_line();
		if (own)
			printf("loss: %.9g\naccuracy: %.6f\n", r.loss, r.accuracy);
		else
			printf("eval at step %lld: loss %.6g, accuracy %.2f%% (%lld of %lld%s) (%.2f s)\n", (long long)r.step,
			       r.loss, 100 * r.accuracy, (long long)ev->correct, (long long)predictions,
			       ev->ids && ev->positions > 1 ? " positions" : "", r.seconds);
		fflush(stdout);
	}
	if (!isfinite(r.loss))
		rt_warn("the evaluation's loss is not finite");
	return ok;
}

bool rt_eval_due(const RtCtx *ctx, bool at_end)
{
	const RtEval *ev = ctx->eval;
	if (!ev)
		return false;
	if (ctx->program->flags & RT_PROGRAM_EVAL_ONLY)
		return at_end;
	if (!ctx->opt.val)
		return false;
	bool done_here = ev->nresults && ev->results[ev->nresults - 1].step == (int64_t)ctx->step;
	if (at_end)
		return !done_here;
	return ctx->opt.eval_every && ctx->step % (uint64_t)ctx->opt.eval_every == 0;
}

const RtEvalResult *rt_eval_results(const RtCtx *ctx, int *n, double *batch_seconds, double *predicted)
{
	const RtEval *ev = ctx->eval;
	*n = ev ? ev->nresults : 0;
	*batch_seconds = ev ? ev->batch_seconds : 0;
	*predicted = ev ? ev->prog->predicted_seconds : 0;
	return ev ? ev->results : NULL;
}

void rt_eval_free(RtCtx *ctx)
{
	RtEval *ev = ctx->eval;
	if (!ev)
		return;
	if (ev->out_open)
		outfile_abort(&ev->out);
	ds_close(ev->ds);
	free(ev->x);
	free(ev->y);
	free(ev->logits);
	free(ev->results);
	free(ev);
	ctx->eval = NULL;
}
