/*
 * opcases.h - the op cases: one table of small one-chain models, one or
 * more per op of base/ops.def, that the op tests share.
 *
 * tests/unit/test-runtime-ops (the CPU runtime) and tests/gpu/test-gpu-ops
 * (the GPU runtime) check every node of every case's training step
 * against the reference interpreter; tests/unit/test-gradcheck checks the
 * gradients of the forward-op and network cases against finite
 * differences. A case is written once here, whichever tests take it.
 */
#ifndef AUTOTM_OPCASES_H
#define AUTOTM_OPCASES_H

#include "arena.h"
#include "graph.h"

/* What a case is for; it decides which tests take it. */
typedef enum OpCaseKind {
	OPCASE_OP,      /* one forward op (and the backward ops autodiff builds for it): every test */
	OPCASE_NETWORK, /* a small network combining ops: every test */
	OPCASE_UPDATE,  /* an optimizer's update op: the runtime tests (gradcheck checks updates apart) */
	OPCASE_KERNEL,  /* what only kernels care about (tied maxima, larger sizes): the runtime tests */
	OPCASE_EVAL,    /* the evaluation graph of a model (forward only, batchnorm_eval): the runtime tests */
	OPCASE_RANKS,   /* a training step for several ranks (allreduce nodes; one rank runs it): the runtime tests */
} OpCaseKind;

/* One case: a model of one chain, trained with the input's gradient too. */
typedef struct OpCase {
	const char *name;   /* what it covers */
	OpCaseKind kind;    /* what it is for */
	const char *input;  /* the input's dims, the batch first ("i32 B, T": ids) */
	const char *labels; /* the number of classes K (labels onehot[batch, K]), or "class DIMS" (class[DIMS]) */
	const char *layers; /* the network's chain */
	const char *opt;    /* a whole `optimizer = ...` line, or NULL for sgd(lr = 0.1) */
} OpCase;

/* The table, and its length. */
extern const OpCase op_cases[];
extern const int nop_cases;

/*
 * c's training step, the input's gradient included, verified (an
 * OPCASE_EVAL case: its evaluation graph); NULL after printing why
 * (testlib.h's test_training_graph and test_eval_graph).
 */
Graph *opcase_graph(Arena *a, const OpCase *c);

#endif
