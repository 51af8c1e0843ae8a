/*
 * predict.h - the step time a placement is predicted to take.
 */
#ifndef AUTOTM_PREDICT_H
#define AUTOTM_PREDICT_H

#include "costmodel.h"
#include "place.h"

/*
 * Predicted seconds of one training step under placement p:
 *
 *   sum over steps s of   (synchronous moves and recomputes before kernel s)
 *                       + max(kernel s with each argument in the tier of
 *                             placement_at(p, t, s),
 *                             each copy engine's work during kernel s)
 *
 * An asynchronous move overlaps kernels start..at-1; its time (the cost
 * model's move_time) is divided among them by its shares (move_share), or
 * charged to kernel `start` whole when it has none (AutoTM's charge). A
 * copy engine's work during kernel s is the sum of the parts of the moves
 * of its direction (both directions on one engine without duplex copies).
 * This is how the ILP charges moves. If per_step is not NULL it receives each step's
 * time (p->s->n entries). place_ilp's objective equals this value for the
 * placement it returns.
 */
double placement_predict(const Placement *p, const CostModel *cm, double *per_step);

/* Seconds of a recompute of p (its kernel with its arguments' tiers, or the algorithm p chose for its step). */
double placement_recompute_time(const Placement *p, const CostModel *cm, const Recompute *rc);

/* Seconds of kernel `step` under p (the cost model's time for its arguments' tiers). */
double placement_kernel_time(const Placement *p, const CostModel *cm, int step);

#endif
