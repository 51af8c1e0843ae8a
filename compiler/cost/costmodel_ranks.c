/*
 * costmodel_ranks.c - the link term of the gradients' all-reduce (costmodel.h).
 *
 * A program for several ranks has an allreduce node per weight gradient
 * (compiler/front/ranks.h). What the profile measures of it, in one
 * process, is a copy; the ranks exchange the gradient besides. A mean
 * taken as a reduction to one rank and a broadcast moves each byte
 * 2 (N - 1) / N times over the link, and waits on its latency about
 * 2 log2 N times per message, a message being a bucket of 25 MiB of
 * gradients (a gradient pays its share): that time is added to the
 * node's. The runtime's exchange overlaps the backward kernels after the
 * node, which this does not count: the step predicted is an upper bound
 * by up to the exchanges' time.
 */
#include "costmodel.h"

#include <math.h>

#include "autotm/rt.h"

#include "util.h"

typedef struct Ranks {
	const CostModel *inner;
	int ranks;
	double bandwidth, latency; /* bytes per second, seconds */
} Ranks;

static double ranks_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	const Ranks *r = cm->data;
	double t = r->inner->kernel_time(r->inner, n, slow);
	if (n->op != OP_ALLREDUCE)
		return t;
	double bytes = (double)n->in[0]->bytes, hops = 2.0 * (r->ranks - 1) / r->ranks;
	double bucket = RT_RANKS_BUCKET_BYTES, share = bytes < bucket ? bytes / bucket : 1; /* its share of a message */
	return t + hops * bytes / r->bandwidth + share * 2 * ceil(log2(r->ranks)) * r->latency;
}

static double ranks_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	const Ranks *r = cm->data;
	return r->inner->move_time(r->inner, bytes, from, to, async);
}

static int ranks_algos(const CostModel *cm, const Node *n, const KernelAlgo **out)
{
	const Ranks *r = cm->data;
	return r->inner->algos(r->inner, n, out);
}

CostModel *costmodel_ranks(const CostModel *inner, int ranks, double bandwidth, double latency, Arena *a)
{
	Ranks *r = arena_alloc(a, sizeof *r);
	*r = (Ranks){inner, ranks, bandwidth, latency};
	CostModel *cm = arena_alloc(a, sizeof *cm);
	*cm = *inner;
	cm->source = arena_printf(a, "%s, with the ranks' all-reduce at %.2f GB/s", inner->source, bandwidth / 1e9);
	cm->kernel_time = ranks_kernel_time;
	cm->move_time = ranks_move_time;
	cm->algos = inner->algos ? ranks_algos : NULL;
	cm->data = r;
	return cm;
}
