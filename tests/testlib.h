/*
 * testlib.h - what the C tests share: small training graphs elaborated
 * from source text held in memory, and the pass/fail reporter.
 *
 * Every C test reports through test_check / test_expect and ends with
 * test_summary, whose line "N passed, N failed" is the last it prints.
 */
#ifndef AUTOTM_TESTLIB_H
#define AUTOTM_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "graph.h"

/*
 * The source of a one-chain model: input x : f32[input] (its first
 * dimension is the batch), one-hot labels [batch, labels], cross-entropy
 * loss, and `optimizer` (a whole `optimizer = ...` line; NULL: SGD with
 * lr 0.1). Written to buf.
 */
const char *test_chain_source(char *buf, size_t size, const char *layers, const char *input, const char *labels,
                              const char *optimizer);

/*
 * Elaborate src as the model `name` (the standard library from
 * $AUTOTM_STDLIB, else ./stdlib), build its training step (input_grad:
 * with the gradient of the input too) and verify the graph. NULL after
 * printing the source or the verifier's complaint.
 */
Graph *test_training_graph(Arena *a, const char *name, const char *src, bool input_grad);
/* The precision the graphs above are built in (default fp32). */
extern Precision test_precision;
/* Whether the training graphs of test_training_graph go through the fusion pass (fuse.h) with attention fused;
   default false. */
extern bool test_fuse;
/* Whether they have the GPU's fusion instead: attention fused and the loss (fuse.h's fuse_loss); default false. */
extern bool test_fuse_gpu;
/* Whether the graphs above (training and evaluation) take the CPU's channel-blocked layouts (layout.h); default false. */
extern bool test_blocked;
/* The same for src's evaluation graph (forward only: ElabOptions.eval). */
Graph *test_eval_graph(Arena *a, const char *name, const char *src);

/*
 * Count one check and print "ok N - what" or "not ok N - what", what
 * formatted from fmt. Returns ok.
 */
bool test_check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The same for a test of thousands of checks: counted alike, but printed
 * only when it fails.
 */
bool test_expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "N passed, N failed"; returns the exit status: 0, or 1 if any failed. */
int test_summary(void);

#endif
