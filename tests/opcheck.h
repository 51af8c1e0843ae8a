/*
 * opcheck.h - a runtime's kernels against the reference interpreter, node
 * by node: what tests/unit/test-runtime-ops (the CPU runtime) and
 * tests/gpu/test-gpu-ops (the GPU runtime) share.
 *
 * For a node of a training step the interpreter (float32 mode) executes
 * it, and the runtime executes the same node - rt_kernel from the node's
 * description, rt_launch - on float copies of the interpreter's inputs to
 * that node, so that every op is checked in isolation. Every output, and
 * every input the op updates in place, must agree:
 * max |a - b| <= 1e-4 * max(1, max |ref|). A node with bfloat16
 * arguments (a graph of testlib's test_precision bf16) is compared on
 * their float values with 1e-2: a bf16 result may round to the
 * neighbouring bf16 (2^-7 of it) where the kernel sums in another order.
 * Each node is one check of
 * testlib's reporter; the worst error of each op is kept for a summary.
 */
#ifndef AUTOTM_OPCHECK_H
#define AUTOTM_OPCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autotm/rt.h"
#include "interp.h"
#include "opcases.h"

/* Where a runtime's kernel arguments live while it runs one node. */
typedef struct ArgMemory {
	const char *where;                                      /* printed with each node; NULL: nothing */
	void *(*alloc)(size_t bytes);                           /* one argument's memory */
	void (*copy)(void *dst, const void *src, size_t bytes); /* into an argument or out of it */
	void (*wait)(void);                                     /* until the kernel has run */
	void (*release)(void *p);                               /* an argument's memory back */
	/*
	 * GPU, when not 0: each convolution runs an algorithm as a placement
	 * chooses one, with its workspace passed after the arguments
	 * (RT_ALGO_WS_ARG), in memory from alloc: this one of the backend's
	 * own (RT_CONV_*, runtime/cuda/conv_gemm.h) where it computes the
	 * convolution, else cuDNN's algorithm 1 (implicit_precomp_gemm, algo_1,
	 * algo_1: deterministic); 1: always cuDNN's algorithm 1
	 */
	int placed_algo;
} ArgMemory;

/*
 * How many conv2d, conv2d_bwd_data and conv2d_bwd_filter nodes ran one of
 * the backend's own algorithms (ArgMemory.placed_algo).
 */
extern int opcheck_own_algo[3];

/*
 * Per op, the nodes checked with a channel-blocked argument (a graph of
 * testlib's test_blocked: its values are passed in that layout and read
 * back from it).
 */
extern int opcheck_blocked[NUM_OPS];

/* Host memory from malloc, where the CPU runtime's kernels read and write. */
extern const ArgMemory opcheck_host_memory;

/*
 * Check node n, the next of ip's schedule, as the runtime's kernel `id`,
 * its arguments in mem; cname names the case in what is printed. The
 * interpreter executes n too.
 */
void opcheck_node(RtCtx *ctx, Interp *ip, const Node *n, int32_t id, const char *cname, const ArgMemory *mem);

/*
 * Check every node of c's training step in schedule order as kernels
 * *next_id, *next_id + 1, ... A case that does not build is a failed
 * check. Returns whether it built.
 */
bool opcheck_case(RtCtx *ctx, const OpCase *c, int32_t *next_id, const ArgMemory *mem);

/*
 * Print, per op, the nodes checked and the worst error relative to
 * max(1, max |ref|), those with bf16 arguments apart: every op of ops.def
 * if `all` (those no node checked marked NOT COVERED), else the ops
 * checked. Returns the number of ops of ops.def that no node checked,
 * of those that `expected` returns true for (NULL: all of them).
 */
int opcheck_print_ops(bool all, bool (*expected)(int op));

#endif
