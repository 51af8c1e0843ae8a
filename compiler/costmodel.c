/*
 * costmodel.c - the roofline cost model (see costmodel.h).
 */
#include "costmodel.h"

#include "util.h"

static double bw(const Roofline *r, Tier t, bool write)
{
	if (t == TIER_FAST)
		return write ? r->fast_write : r->fast_read;
	return write ? r->slow_write : r->slow_read;
}

static double roofline_kernel(const CostModel *cm, const Node *n, uint32_t slow)
{
	const Roofline *r = cm->data;
	double mem = 0;
	for (int k = 0; k < n->nin + n->nout; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		Tier tier = (slow >> k & 1) ? TIER_SLOW : TIER_FAST;
		bool inplace = k < n->nin && (op_info[n->op].inplace >> k & 1);
		mem += (double)t->bytes / bw(r, tier, false) * (k < n->nin);
		if (k >= n->nin || inplace)
			mem += (double)t->bytes / bw(r, tier, true);
	}
	double compute = (double)node_flops(n) / r->flop_rate;
	return compute > mem ? compute : mem;
}

static double roofline_move(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	const Roofline *r = cm->data;
	double rate = bw(r, from, false) < bw(r, to, true) ? bw(r, from, false) : bw(r, to, true);
	return (double)bytes / (rate * (async ? r->async_factor : 1.0));
}

CostModel *costmodel_roofline(const Roofline *r, Arena *a)
{
	CostModel *cm = arena_alloc(a, sizeof *cm);
	Roofline *copy = arena_alloc(a, sizeof *copy);
	*copy = *r;
	cm->source = "modeled: roofline";
	cm->modeled = true;
	cm->kernel_time = roofline_kernel;
	cm->move_time = roofline_move;
	cm->data = copy;
	return cm;
}
