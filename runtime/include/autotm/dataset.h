/*
 * autotm/dataset.h - training data from a directory of .npy files.
 *
 * A dataset is a directory holding
 *
 *   x.npy   float32 samples [N, ...]: the model's input without its batch
 *           dimension; or, for an input of ids (i32[batch, seq]), integer
 *           ids [N, seq] (int32 or int64);
 *   y.npy   labels: integer class ids [N] (int32 or int64), or one-hot or
 *           soft labels [N, K] (float32 or float64); for class labels
 *           (class[batch, ...]), integer class ids of their shape [N, ...],
 *
 * as numpy.save writes them. Both files are memory-mapped, never read
 * whole, so a dataset larger than memory works: they are read once when
 * opened, to check every sample, and then only the samples of a batch
 * when it is gathered.
 *
 * Training draws batches in a shuffled order: epoch e is the permutation
 * ds_order(seed, e, N), and step t of the run is batch t % S of epoch
 * t / S, where S = N / B steps make an epoch (the last N % B samples of
 * each epoch's order are dropped). The order depends only on the seed and
 * the epoch, so the same seed gives the same batches, and a run can be
 * resumed at any step.
 *
 * Shared, like tensorio.c, by the runtime (generated programs) and the
 * compiler's reference interpreter, so both see the same batches. Every
 * function that can fail returns 0 on success and -1 with a message
 * naming the file in err.
 */
#ifndef AUTOTM_DATASET_H
#define AUTOTM_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autotm/tensorio.h"

typedef struct DsDataset {
	char *dir;            /* as given */
	uint64_t seed;        /* the order's seed */
	char *x_path, *y_path; /* DIR/x.npy, DIR/y.npy */
	TioFile *x, *y;       /* the two files, mapped */
	int64_t n;            /* samples */
	int64_t sample_elems; /* floats of one sample */
	int64_t x_ids;        /* > 0: the samples are ids in [0, x_ids), gathered as floats */
	int64_t classes;      /* K: the classes */
	int class_ids;        /* y.npy holds class ids (else [N, K] floats) */
	int y_ids;            /* the model's labels are class ids too: gathered as ids, not one-hot */
	int64_t label_elems;  /* floats of one sample's labels: K one-hot, or its ids */
	int64_t batch;        /* samples a step */
	int64_t shards, shard; /* data parallel: a step's samples are shards x batch, this rank's the shard-th batch */
	int64_t steps_per_epoch; /* N / (shards x batch) */
	int64_t *perm;        /* the order of epoch perm_epoch (ds_gather's) */
	int64_t perm_epoch;   /* -1: none yet */
} DsDataset;

/* What a model takes: its input and labels tensors, the batch first. */
typedef struct DsModel {
	const char *input;      /* the input tensor's name, for messages */
	int x_ndim;             /* its dimensions */
	const int64_t *x_shape; /* and sizes */
	int64_t x_ids;          /* > 0: the input is ids (i32) in [0, x_ids); 0: float32 values */
	int y_ndim;             /* the labels' dimensions */
	const int64_t *y_shape; /* and sizes: one-hot [batch, K], or class ids [batch, ...] */
	int64_t y_ids;          /* > 0: the labels are class ids in [0, y_ids) (class[...]); 0: one-hot */
} DsModel;

/*
 * Open DIR as the data of model m, its batches drawn in the order of
 * `seed`: check both files' types and shapes, that every class id is in
 * range, every soft label and sample finite and every id sample in
 * range, and that N holds a batch.
 */
int ds_open(const char *dir, uint64_t seed, const DsModel *m, DsDataset **out, char *err, size_t errlen);
/*
 * The same for evaluation: every sample is evaluated once, in the files'
 * order, so any N of at least 1 will do (the last batch is partial).
 */
int ds_open_eval(const char *dir, const DsModel *m, DsDataset **out, char *err, size_t errlen);
/*
 * Whether DIR is data of model m as ds_open (whole_batch) or ds_open_eval
 * would take it, from the files' headers and labels alone (the samples are
 * not read): what a compiler checks before it builds the program.
 */
int ds_check(const char *dir, const DsModel *m, bool whole_batch, char *err, size_t errlen);
void ds_close(DsDataset *d);

/* Epoch `epoch`'s order of the n samples: a permutation written to perm[n]. */
void ds_order(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);

/*
 * The steps of a run: `epochs` epochs if not 0, else `iters` if not
 * negative, else one epoch; fails if that is more than `max`.
 */
int ds_steps(const DsDataset *d, int64_t epochs, int64_t iters, int64_t max, int64_t *steps, char *err,
             size_t errlen);

/*
 * Make d the shard-th of `shards` ranks' view: each step draws shards x
 * batch samples in the order of its seed (what one rank of that batch
 * would draw), and this rank gathers the shard-th batch of them. Fails
 * where N does not hold shards batches.
 */
int ds_shard(DsDataset *d, int64_t shard, int64_t shards, char *err, size_t errlen);

/*
 * Gather the batch of step `step` of the run (from 0): its samples into
 * x[batch * sample_elems] and its one-hot or soft labels, or its class
 * ids, into y[batch * label_elems], ids as floats. Fails on a sample
 * that is not finite or an id out of range (named by its row in x.npy).
 * Not thread-safe on one dataset (it keeps the epoch's order).
 */
int ds_gather(DsDataset *d, int64_t step, float *x, float *y, char *err, size_t errlen);

/*
 * Gather samples first .. first + count - 1 of the files (count at most
 * the batch) into the first count rows of x and y; the batch's other
 * rows repeat sample `first`, so that a partial last batch is a whole one
 * whose extra rows the caller ignores.
 */
int ds_gather_rows(const DsDataset *d, int64_t first, int64_t count, float *x, float *y, char *err, size_t errlen);

#endif
