/*
 * predict.c - predicted step time of a placement (see predict.h).
 *
 * This is the one definition of "how long a placement takes" that the
 * reports, the ILP's objective and the tests share: the ILP is built so
 * that its objective equals this sum for the placement it extracts, and
 * test-ilp checks that it does.
 */
#include "predict.h"

#include <stdlib.h>

#include "util.h"

double placement_kernel_time(const Placement *p, const CostModel *cm, int step)
{
	const Node *n = p->s->order[step];
	uint32_t slow = 0;
	/* the cost model's mask has 32 bits; arguments beyond them (none in
	   the op set: no op takes more) are taken as fast */
	for (int k = 0; k < n->nin + n->nout && k < 32; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		const Residency *r = placement_at(p, t, step);
		if (!r)
			ICE("%s has no residency at step %d", t->name, step);
		if (r->tier == TIER_SLOW)
			slow |= 1u << k;
	}
	if (p->algo && p->algo[step])
		return p->algo[step]->seconds;
	return cm->kernel_time(cm, n, slow);
}

/*
 * Seconds of a recompute: its kernel with each argument in the tier of
 * its residency; with the algorithm its step's kernel runs, where p chose
 * one (the runtime runs it so, and the value made again is then bitwise
 * the one it replaces).
 */
double placement_recompute_time(const Placement *p, const CostModel *cm, const Recompute *rc)
{
	if (p->algo && p->algo[rc->step])
		return p->algo[rc->step]->seconds;
	const Node *n = rc->node;
	uint32_t slow = 0;
	for (int k = 0; k < n->nin + n->nout && k < 32; k++)
		if (rc->args[k]->tier == TIER_SLOW)
			slow |= 1u << k;
	return cm->kernel_time(cm, n, slow);
}

double placement_predict(const Placement *p, const CostModel *cm, double *per_step)
{
	int n = p->s->n;
	double *sync = xcalloc((size_t)n + 1, sizeof(double));
	double *async = xcalloc((size_t)n + 1, sizeof(double));
	double *async_out = xcalloc((size_t)n + 1, sizeof(double)); /* duplex: the writes, beside the reads */
	for (int i = 0; i < p->recomputes.n; i++)
		sync[p->recomputes.v[i].at] += placement_recompute_time(p, cm, &p->recomputes.v[i]);
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		double t = cm->move_time(cm, m->t->bytes, m->from->tier, m->to->tier, m->async);
		if (m->async && m->start < n) {
			double *q = cm->duplex && m->to->tier == TIER_SLOW ? async_out : async;
			int end = m->share ? m->at : m->start + 1;
			for (int k = m->start; k < end && k < n; k++)
				q[k] += t * move_share(m, k);
		} else if (!m->async && m->at < n)
			sync[m->at] += t;
		else
			ICE("move of %s after the last step", m->t->name);
	}
	double total = 0;
	for (int s = 0; s < n; s++) {
		double k = placement_kernel_time(p, cm, s);
		double over = async[s] > async_out[s] ? async[s] : async_out[s];
		double step = sync[s] + (k > over ? k : over);
		if (per_step)
			per_step[s] = step;
		total += step;
	}
	free(sync);
	free(async);
	free(async_out);
	return total;
}
