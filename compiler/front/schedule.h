/*
 * schedule.h - execution order and liveness of a graph.
 */
#ifndef AUTOTM_SCHEDULE_H
#define AUTOTM_SCHEDULE_H

#include "graph.h"

/* The steps during which a tensor's memory must hold its value. */
typedef struct Interval {
	int first; /* step that writes it (0 for tensors filled before the step) */
	int last;  /* last step that reads it (the final step for persistent tensors) */
} Interval;

typedef struct Schedule {
	Precision precision; /* its graph's (the type of the bf16 programs' activations) */
	Node **order;     /* nodes in execution order */
	int n;            /* number of steps (= nodes) */
	int *pos;         /* node id -> step */
	Interval *live;   /* tensor id -> live interval */
	int64_t *live_bytes; /* step -> bytes of tensors live at that step (an output over its reused input
	                        counted once: schedule_reuse) */
	int64_t peak;     /* max of live_bytes */
	int peak_step;    /* first step where the peak is reached */
} Schedule;

/*
 * Order the nodes (a deterministic topological order: among ready nodes the
 * one built first goes first, and a node that overwrites a tensor runs
 * after every other reader of it) and compute liveness. Weights and
 * optimizer state persist across steps, so they are live throughout; the
 * input and labels from the start to their last use; everything else from
 * its producer to its last user. The loss stays live to the end (it is
 * reported after the step).
 */
Schedule *schedule_graph(const Graph *g, Arena *a);

/*
 * The bytes live at each step with every tensor's size rounded up to a
 * multiple of align (1: the bytes themselves, as Schedule.live_bytes; the
 * placement's alignment: as the fast pool packs them) into live[] (or
 * NULL), the first step of the peak into *peak_step (or NULL); returns
 * the peak.
 */
int64_t schedule_live(const Graph *g, const Schedule *s, int64_t align, int64_t *live, int *peak_step, Arena *a);

/*
 * The index of n's input whose memory its first output may take, or -1:
 * ops.def's reuse input, where it has the output's size and dtype and
 * the node reads it once (the kernels are correct so: tests/opcheck.c).
 */
int node_reuse_input(const Node *n);

/*
 * The input whose memory the kernel at `step` may write its first output
 * over, or NULL: node_reuse_input, where the output is a gradient, the
 * input a gradient or an activation (the fused loss's logits), and the
 * input is dead after the node (its live interval ends at `step`): no
 * later step reads it, so none recomputes it either. Whether the output
 * does take that memory depends on the placement (both fast there:
 * placement_reuses).
 */
const Tensor *schedule_reuse(const Schedule *s, int step);

/* True if t is live at step s. */
static inline int live_at(const Schedule *s, const Tensor *t, int step)
{
	return s->live[t->id].first <= step && step <= s->live[t->id].last;
}

#endif
