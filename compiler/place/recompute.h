/*
 * recompute.h - which kernels make a dropped tensor's value again.
 *
 * An activation dropped after its earlier uses can be made again before
 * a later use by running its producer again, if the producer's inputs
 * still hold the values they had when it first ran. An input that is
 * live at that point is read where it lives (it must then be in the fast
 * tier, ready); one that is no longer live is made again too, by its own
 * producer, into a scratch residency that lives only while the chain runs.
 * Only forward kernels that write nothing in place qualify, and only
 * deterministic ones (every op is: dropout's mask depends on its seed,
 * the training step and the element only), so a recomputed value is
 * bitwise the value it replaces. A persistent input (a weight) that an
 * update has overwritten since then ends the chain: its value is gone.
 */
#ifndef AUTOTM_RECOMPUTE_H
#define AUTOTM_RECOMPUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "schedule.h"

enum { RECOMPUTE_MAX_CHAIN = 4 }; /* kernels a chain may run */

typedef struct Chain {
	const Node *node[RECOMPUTE_MAX_CHAIN]; /* the kernels, in schedule order; the last produces t */
	int n;
	const Tensor **leaf;  /* the live tensors it reads, distinct: fast and ready at the boundary */
	int nleaves;
	int64_t scratch;      /* bytes of its scratch residencies (every output but t, rounded as memplan) */
} Chain;

/* True if t may ever be recomputed: an activation whose producer writes nothing in place. */
bool recompute_candidate(const Tensor *t);

/*
 * The chain that makes t's value at the boundary before step `at` (after
 * t's producer ran, with t live at `at`), into c; false if there is none
 * of at most RECOMPUTE_MAX_CHAIN kernels. c->leaf is allocated in a.
 */
bool recompute_chain(const Schedule *s, const Tensor *t, int at, Chain *c, Arena *a);

#endif
