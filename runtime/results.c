/*
 * results.c - the results record of a run, as JSON (--results R.json).
 *
 * The fields are named as AutoTM's records are (dram = the fast tier,
 * pmem = the slow tier) so that analyses written for AutoTM carry over.
 * The compiler's fields (placement, predicted moves, solver times) come
 * as a JSON object in RtProgram.record and are copied first; the runtime
 * then adds what it measured, replacing a compile-time field of the same
 * name. The file is written through base/outfile.h: a regular file is
 * replaced atomically (a failure never leaves half a record), a device or
 * FIFO is written straight through.
 */
#include "rt_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h" /* base/ */

/* Set key to item, replacing what is there. */
static void put(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		rt_fatal("out of memory building the results record");
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
	else
		cJSON_AddItemToObject(obj, key, item);
}

static cJSON *number_array(const double *v, int64_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (int64_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

static const char *slow_kind_name(RtSlowKind k)
{
	switch (k) {
	case RT_SLOW_PMEM: return "pmem";
	case RT_SLOW_DAX: return "dax-kmem";
	case RT_SLOW_NUMA: return "numa";
	}
	RT_ICE("no slow kind %d", (int)k);
}

/* The record and a newline into path (outfile.h: atomic where path is a file); false after a message. */
static bool write_record(const char *path, const char *text)
{
	char err[1024];
	OutFile o;
	bool ok = outfile_open(&o, path, err, sizeof err);
	if (ok && (fputs(text, o.f) < 0 || fputc('\n', o.f) == EOF)) {
		snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(errno));
		outfile_abort(&o);
		ok = false;
	} else if (ok) {
		ok = outfile_commit(&o, err, sizeof err);
	}
	if (!ok) {
		fflush(stdout);
		fprintf(stderr, "%s: error: %s\n", rt_prog_name(), err);
	}
	return ok;
}

bool rt_results_write(const RtCtx *ctx, const char *path, double median)
{
	const RtProgram *p = ctx->program;
	cJSON *r = NULL;
	if (p->record && p->record[0]) {
		r = cJSON_Parse(p->record);
		if (!r || !cJSON_IsObject(r))
			RT_ICE("the program's results record is not a JSON object: %.80s", p->record);
	} else {
		r = cJSON_CreateObject();
		if (!r)
			rt_fatal("out of memory building the results record");
	}
	if (!cJSON_GetObjectItemCaseSensitive(r, "model") && p->model)
		put(r, "model", cJSON_CreateString(p->model));
	put(r, "actual_runtime", cJSON_CreateNumber(median)); /* an evaluation program's: its median batch, below */
	if (p->predicted_seconds > 0)
		put(r, "predicted_runtime", cJSON_CreateNumber(p->predicted_seconds));
	put(r, "dram_alloc_size", cJSON_CreateNumber((double)ctx->fast.bytes));
	put(r, "pmem_alloc_size", cJSON_CreateNumber((double)ctx->slow.bytes));
	put(r, "dram_limit", cJSON_CreateNumber((double)p->fast_limit));
	put(r, "num_kernels", cJSON_CreateNumber(ctx->nkernels));
	int64_t scratch = ctx->backend->kernels.scratch_bytes(ctx->kernel_state);
	put(r, "kernel_scratch_size", cJSON_CreateNumber((double)scratch));
	put(r, "iterations", cJSON_CreateNumber((double)ctx->nsteps));
	put(r, "first_step", cJSON_CreateNumber((double)ctx->first_step)); /* --resume: the checkpoint's step */
	put(r, "losses", number_array(ctx->losses, ctx->nsteps));
	put(r, "step_times", number_array(ctx->step_times, ctx->nsteps));
	put(r, "threads", cJSON_CreateNumber(ctx->opt.threads));
	put(r, "seed", cJSON_CreateNumber((double)ctx->opt.seed));
	put(r, "slow_tier", cJSON_CreateString(ctx->slow.bytes ? slow_kind_name(ctx->opt.slow_kind) : "none"));
	put(r, "backend", cJSON_CreateString(ctx->backend->name));
	int nev;
	double batch, predicted;
	const RtEvalResult *ev = rt_eval_results(ctx, &nev, &batch, &predicted);
	if (ctx->eval) {
		cJSON *a = cJSON_CreateArray();
		for (int i = 0; a && i < nev; i++) {
			cJSON *e = cJSON_CreateObject();
			if (!e)
				break;
			cJSON_AddNumberToObject(e, "step", (double)ev[i].step);
			cJSON_AddNumberToObject(e, "loss", ev[i].loss);
			cJSON_AddNumberToObject(e, "accuracy", ev[i].accuracy);
			cJSON_AddNumberToObject(e, "samples", (double)ev[i].samples);
			cJSON_AddNumberToObject(e, "seconds", ev[i].seconds);
			cJSON_AddItemToArray(a, e);
		}
		put(r, "evaluations", a);
		if (nev)
			put(r, "eval_batch_time", cJSON_CreateNumber(batch));
		if (nev && (p->flags & RT_PROGRAM_EVAL_ONLY))
			put(r, "actual_runtime", cJSON_CreateNumber(batch));
		if (predicted > 0)
			put(r, "eval_predicted_batch_time", cJSON_CreateNumber(predicted));
	}
	char *text = cJSON_Print(r);
	cJSON_Delete(r);
	if (!text)
		rt_fatal("out of memory printing the results record");
	bool ok = write_record(path, text);
	cJSON_free(text);
	return ok;
}
