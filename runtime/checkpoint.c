/*
 * checkpoint.c - stopping and resuming a training run: --checkpoint DIR,
 * --save-every K, --resume DIR, and Ctrl-C.
 *
 * A checkpoint is one file, DIR/checkpoint.safetensors: every weight,
 * optimizer state tensor (velocity, AdamW's moments) and running
 * statistic by its name, and in the header's __metadata__ where the run
 * stands:
 *
 *   format      "autotmc-checkpoint-1"
 *   model       the model's name
 *   step        steps completed
 *   seed        --seed: the initial weights, the data order, dropout's masks
 *   epoch, epoch_step, data   with --data: the epoch and the steps done in
 *               it, and the dataset (for people; the order follows from
 *               seed and step)
 *
 * It is written like every output file (base/outfile.h): to a temporary
 * file beside it, synced, and renamed over the previous checkpoint, so a
 * kill at any moment leaves one whole checkpoint, the previous or the new
 * one. A temporary file a kill left behind is removed when the next run
 * opens DIR.
 *
 * Everything a step computes depends on the tensors saved and on (seed,
 * step) alone: the batch of step t (autotm/dataset.h), dropout's masks,
 * the learning rate and AdamW's bias corrections. So a resumed run takes
 * exactly the steps the uninterrupted run would have taken, bit for bit
 * on the same machine and thread count (tests/e2e/test-checkpoint.sh).
 *
 * With --checkpoint, the first SIGINT or SIGTERM lets the step in progress
 * finish, saves a checkpoint and ends the run (status 130, or 143); a
 * second one ends the program at once, as without --checkpoint.
 */
#include "rt_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h" /* base/ */

#define CHECKPOINT_FILE "checkpoint.safetensors"
#define CHECKPOINT_FORMAT "autotmc-checkpoint-1"

/* ---- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;
static struct sigaction old_int, old_term;

/* Only async-signal-safe calls: write, sigaction, raise. */
static void on_stop(int sig)
{
	if (stop_signal) {
		sigaction(sig, sig == SIGINT ? &old_int : &old_term, NULL);
		raise(sig);
		return;
	}
	stop_signal = sig;
	static const char msg[] = "\nstopping after this step to save a checkpoint (again to quit at once)\n";
	ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)w;
}

int rt_checkpoint_stop_signal(void)
{
	return stop_signal;
}

/* ---- the directory ------------------------------------------------------------ */

static char *file_in(const char *dir)
{
	size_t n = strlen(dir) + sizeof "/" CHECKPOINT_FILE;
	char *p = rt_xmalloc(n);
	snprintf(p, n, "%s/%s", dir, CHECKPOINT_FILE);
	return p;
}

/* Whether name is prefix followed by mkstemp's six characters. */
static bool temp_name(const char *name, const char *prefix)
{
	return strncmp(name, prefix, strlen(prefix)) == 0 && strlen(name) == strlen(prefix) + 6;
}

/*
 * Remove the temporary files that a killed save left in dir:
 * ".checkpoint.safetensors.XXXXXX", or ".autotmc.XXXXXX" where the
 * directory's path is too long for the other (base/outfile.c).
 */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!temp_name(e->d_name, "." CHECKPOINT_FILE ".") && !temp_name(e->d_name, ".autotmc."))
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
			unlink(path);
	}
	closedir(d);
}

/*
 * A whole number of a checkpoint's header into *x, at most max: decimal
 * digits only (no sign, no spaces), as rt_checkpoint_save writes them.
 * False with a message otherwise.
 */
static bool meta_count(const char *path, const char *key, const char *v, uint64_t max, uint64_t *x, char *err,
                       size_t errlen)
{
	if (!*v || strspn(v, "0123456789") != strlen(v)) {
		snprintf(err, errlen, "%s: its %s, '%s', is not a whole number", path, key, v);
		return false;
	}
	bool over = false;
	*x = 0;
	for (const char *p = v; *p && !over; p++)
		over = __builtin_mul_overflow(*x, 10, x) || __builtin_add_overflow(*x, (uint64_t)(*p - '0'), x);
	if (over || *x > max) {
		snprintf(err, errlen, "%s: its %s, %s, is beyond any run's (at most %" PRIu64 "); the checkpoint is damaged",
		         path, key, v, max);
		return false;
	}
	return true;
}

int rt_checkpoint_position(const TioFile *f, const char *model, uint64_t *step, uint64_t *seed, char *err,
                           size_t errlen)
{
	const char *format = tio_meta(f, "format"), *saved = tio_meta(f, "model");
	const char *st = tio_meta(f, "step"), *sd = tio_meta(f, "seed");
	if (!format || strcmp(format, CHECKPOINT_FORMAT) != 0 || !saved || !st || !sd) {
		snprintf(err, errlen, "%s is not an autotmc checkpoint (its header lacks the run's position)", f->path);
		return -1;
	}
	if (strcmp(saved, model) != 0) {
		snprintf(err, errlen, "%s is a checkpoint of the model '%s', not of '%s'", f->path, saved, model);
		return -1;
	}
	return meta_count(f->path, "step", st, RT_MAX_STEPS, step, err, errlen) &&
	               meta_count(f->path, "seed", sd, 0x7fffffff, seed, err, errlen)
	           ? 0
	           : -1;
}

void rt_checkpoint_begin(RtCtx *ctx)
{
	RtOptions *o = &ctx->opt;
	ctx->checkpoint_step = UINT64_MAX;
	if (o->resume) {
		char *path = ctx->resume_path = file_in(o->resume);
		char err[PATH_MAX + 256];
		if (tio_safetensors_open(path, &ctx->weights_file, err, sizeof err))
			rt_fatal("--resume %s: %s", o->resume, err);
		uint64_t s, sd;
		if (rt_checkpoint_position(ctx->weights_file, ctx->program->model ? ctx->program->model : "?", &s, &sd, err,
		                           sizeof err))
			rt_fatal("%s", err);
		if (o->seed_given && sd != o->seed)
			rt_usage_error("--seed %" PRIu64 " differs from the checkpoint's seed %" PRIu64
			               "; a resumed run keeps its seed", o->seed, sd);
		o->seed = sd;
		o->weights = path; /* rt_tensor loads everything from it, and its messages name it */
		ctx->resuming = true;
		ctx->step = ctx->first_step = s;
	}
	if (!o->checkpoint)
		return;
	struct stat st;
	if (stat(o->checkpoint, &st) != 0) {
		if (errno != ENOENT || mkdir(o->checkpoint, 0777) != 0)
			rt_fatal("--checkpoint %s: cannot make the directory: %s", o->checkpoint, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		rt_fatal("--checkpoint %s: not a directory", o->checkpoint);
	}
	ctx->checkpoint_path = file_in(o->checkpoint);
	char err[PATH_MAX + 256];
	if (!outfile_check(ctx->checkpoint_path, err, sizeof err))
		rt_fatal("--checkpoint: %s", err);
	remove_stale(o->checkpoint);
	if (!o->resume && !o->quiet && access(ctx->checkpoint_path, F_OK) == 0)
		rt_warn("%s holds a checkpoint, which this run replaces (--resume %s continues it instead)",
		        o->checkpoint, o->checkpoint);
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, &old_int) != 0 || sigaction(SIGTERM, &sa, &old_term) != 0)
		rt_fatal("cannot install a signal handler: %s", strerror(errno));
}

void rt_checkpoint_iters(RtCtx *ctx)
{
	if (!ctx->resuming)
		return;
	if ((int64_t)ctx->first_step > ctx->opt.iters)
		rt_usage_error("--resume %s: the checkpoint is at step %" PRIu64 ", beyond this run's %lld steps "
		               "(--iters and --epochs count from the start of the run)",
		               ctx->opt.resume, ctx->first_step, (long long)ctx->opt.iters);
	if (!ctx->opt.quiet) {
		printf("resuming from %s at step %" PRIu64 " of %lld\n", ctx->opt.weights, ctx->first_step,
		       (long long)ctx->opt.iters);
		fflush(stdout);
	}
}

/* ---- saving --------------------------------------------------------------------- */

bool rt_checkpoint_save(RtCtx *ctx)
{
	double t0 = rt_now();
	char step[32], seed[32], epoch[32], epoch_step[32];
	snprintf(step, sizeof step, "%" PRIu64, ctx->step);
	snprintf(seed, sizeof seed, "%" PRIu64, ctx->opt.seed);
	TioMeta meta[7] = {
		{"format", CHECKPOINT_FORMAT},
		{"model", (char *)(ctx->program->model ? ctx->program->model : "?")},
		{"step", step},
		{"seed", seed},
	};
	int nmeta = 4;
	int64_t spe;
	int64_t e = rt_feed_epoch(ctx, (int64_t)ctx->step, &spe);
	if (spe) {
		snprintf(epoch, sizeof epoch, "%lld", (long long)e);
		snprintf(epoch_step, sizeof epoch_step, "%lld", (long long)((int64_t)ctx->step - e * spe));
		meta[nmeta++] = (TioMeta){"epoch", epoch};
		meta[nmeta++] = (TioMeta){"epoch_step", epoch_step};
		meta[nmeta++] = (TioMeta){"data", (char *)ctx->opt.data};
	}
	char err[PATH_MAX + 256];
	int64_t total;
	if (rt_data_write(ctx, ctx->checkpoint_path, true, meta, nmeta, &total, err, sizeof err)) {
		rt_end_progress_line();
		fprintf(stderr, "%s: error: checkpoint of step %" PRIu64 " not saved: %s\n", rt_prog_name(), ctx->step, err);
		ctx->checkpoint_failed = true;
		return false;
	}
	ctx->checkpoint_step = ctx->step;
	if (!ctx->opt.quiet) {
		char b[32];
		rt_end_progress_line();
		printf("checkpoint: step %" PRIu64 " saved to %s (%s, %.2f s)\n", ctx->step, ctx->checkpoint_path,
		       fmt_bytes(total, b, sizeof b), rt_now() - t0);
		fflush(stdout);
	}
	return true;
}
