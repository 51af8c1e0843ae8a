/*
 * interp.h - the reference interpreter: the oracle for every backend.
 */
#ifndef AUTOTM_INTERP_H
#define AUTOTM_INTERP_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "schedule.h"
#include "autotm/dataset.h"

typedef struct Interp {
	const Graph *g;    /* the graph executed */
	const Schedule *s; /* its order */
	bool f64;          /* float64; otherwise every result is rounded to float32 */
	double **buf;      /* tensor id -> its values (every tensor has its own) */
	uint64_t step;     /* training steps done (dropout masks depend on it) */
} Interp;

/*
 * An interpreter with a buffer for every tensor: weights, state, input
 * and labels initialised from `seed` (weights.h), everything else zero.
 */
Interp *interp_new(const Graph *g, const Schedule *s, bool f64, uint64_t seed);
void interp_free(Interp *ip);

/* One training step (every node in schedule order); returns the loss. */
double interp_step(Interp *ip);
/* Only the forward nodes (up to the loss), for finite differences; returns the loss. */
double interp_forward(Interp *ip);
/* Execute a single node. */
void interp_node(Interp *ip, const Node *n);

/*
 * Data from files (interp_io.c): a .npy batch into the input or labels
 * tensor t (labels also as [N] class indices), every weight from the
 * tensor of the same name in a safetensors file, and the weights out to
 * one. False after an error message.
 */
bool interp_load_npy(Interp *ip, const Tensor *t, const char *path);
bool interp_load_weights(Interp *ip, const char *path);
bool interp_save_weights(const Interp *ip, const char *path);

/*
 * A dataset (--data DIR, autotm/dataset.h) fed into the input and labels,
 * batch by batch in the order the runtime draws (the same seed gives the
 * same batches). Open sets *steps to the run's (ds_steps: epochs if not
 * 0, else iters if not negative, else one epoch) and returns NULL after
 * an error message; a step's feed is false after one (a sample that is
 * not finite).
 */
typedef struct InterpFeed InterpFeed;
/* What graph g takes from a dataset: its input and labels (both must exist), for ds_open and ds_check. */
DsModel interp_ds_model(const Graph *g);
InterpFeed *interp_feed_open(Interp *ip, const char *dir, uint64_t seed, long epochs, long iters, long *steps);
bool interp_feed_step(Interp *ip, InterpFeed *f, long step);
void interp_feed_close(InterpFeed *f);

#endif
