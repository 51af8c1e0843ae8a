/*
 * costmodel.c - which cost model a placement uses (costmodel_for), and
 * the roofline cost model of tests (see costmodel.h).
 */
#include "costmodel.h"

#include <stdio.h>

#include "hwmodel.h"
#include "profile.h"
#include "profile_gpu.h"
#include "util.h"

static ProfileOptions profile_options(const CostRequest *r)
{
	return (ProfileOptions){.db = r->db, .model = r->model, .fast_only = r->fast_only || r->hw,
	                        .slow_dir = r->slow_dir, .threads = r->threads, .report = stderr,
	                        .quiet = r->quiet, .brief = !r->verbose};
}

bool costmodel_measure(const Graph *g, const Schedule *s, const CostRequest *r, char *err, size_t errlen)
{
	if (target_info[r->target].kernels_fast)
		return true; /* the GPU's times come from --gpu-profile or --hw */
	ProfileOptions po = profile_options(r);
	int missing = profile_missing(g, s, &po, err, errlen);
	return missing == 0 || (missing > 0 && profile_graph(g, s, &po, NULL, err, errlen));
}

/* The cost model of a placement with every tensor fast: measured all-fast times only. */
static double fast_kernel_time(const CostModel *cm, const Node *n, uint32_t slow)
{
	if (slow)
		ICE("an all-fast cost model asked for %s with slow arguments", n->name);
	return ((const double *)cm->data)[n->id];
}

static double no_move_time(const CostModel *cm, int64_t bytes, Tier from, Tier to, bool async)
{
	(void)cm, (void)bytes, (void)from, (void)to, (void)async;
	ICE("an all-fast cost model asked for a move");
}

/* The hw description named by r->hw; false with err. */
static bool load_hw(const CostRequest *r, HwModel *hw, Arena *a, char *err, size_t errlen)
{
	const char *path = hw_find(r->hw, a, err, errlen);
	return path && hw_load(path, hw, err, errlen);
}

/* CPU: this machine's profile, all-fast times alone, or all-fast times under a hw description. */
static CostModel *cpu_cost_model(const Graph *g, const Schedule *s, const CostRequest *r, Arena *a, char *err,
                                 size_t errlen)
{
	ProfileOptions po = profile_options(r);
	if (!r->hw && !r->fast_only)
		return costmodel_from_profile(g, s, &po, a, err, errlen);
	int64_t *scratch;
	double *fast = profile_fast_times(g, s, &po, &scratch, a, err, errlen);
	if (!fast)
		return NULL;
	CostModel *cm;
	if (r->hw) {
		HwModel hw;
		if (!load_hw(r, &hw, a, err, errlen))
			return NULL;
		/*
		 * A [compute] section models the kernels too, as on a GPU: plans
		 * that do not change with the load on the machine when it was
		 * profiled (the tests' use). The scratch is still measured.
		 */
		bool roofline = hw.flop_rate > 0;
		cm = costmodel_from_hw(&hw, g, roofline ? hw_roofline_times(&hw, g, a) : fast, a);
		if (roofline)
			cm->source = arena_printf(a, "%s, kernels by roofline", cm->source);
	} else {
		cm = arena_alloc(a, sizeof *cm);
		cm->source = "profile (all-fast times)";
		cm->kernel_time = fast_kernel_time;
		cm->move_time = no_move_time;
		cm->data = fast;
	}
	cm->scratch = scratch;
	return cm;
}

/* The float32 copies of node n's bf16 arguments where the GPU runtime runs it widened (base/ops.h). */
static int64_t gpu_widened(const Node *n, int64_t scratch)
{
	int64_t bf = 0, elems[OP_MAX_ARGS];
	int k = 0;
	for (int i = 0; i < n->nin + n->nout && k < (int)countof(elems); i++) {
		const Tensor *t = i < n->nin ? n->in[i] : n->out[i - n->nin];
		bf |= (int64_t)(t->dtype == DT_BF16) << k;
		elems[k++] = shape_elems(t->shape);
	}
	return op_gpu_widened_bytes(n->op, bf, elems, k, scratch);
}

/*
 * node id -> the GPU runtime's scratch beside convolution workspaces
 * (which `algos` states): ops.def's scratch column, as op_gpu_scratch
 * (base/ops.c) sizes it for the runtime too, and the float32 copies of a
 * kernel that runs widened.
 */
static const int64_t *gpu_scratch(const Graph *g, Arena *a)
{
	int64_t *sc = arena_array(a, (size_t)g->nodes.n + 1, sizeof *sc);
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		const Shape *x = &n->in[0]->shape, *y = n->nin > 1 ? &n->in[1]->shape : NULL;
		sc[i] = op_gpu_scratch(n->op, x->d, x->ndim, y ? y->d : NULL, y ? y->ndim : 0, n->attr.kh, n->attr.kw,
		                       n->attr.axis);
		sc[i] += gpu_widened(n, sc[i]);
	}
	return sc;
}

/*
 * GPU: this machine's profile says nothing of a GPU, so the times come
 * from a profile measured on the GPU (autotm-gpu-profile), or else kernel
 * times from the [compute] section of the hw description (a roofline:
 * modeled) and moves from its link.
 */
static CostModel *gpu_cost_model(const Graph *g, const Schedule *s, const CostRequest *r, Arena *a, char *err,
                                 size_t errlen)
{
	CostModel *cm;
	if (r->gpu_profile) {
		cm = costmodel_gpu_profile(r->gpu_profile, r->nondeterministic, g, s, a, err, errlen);
		if (cm)
			cm->scratch = gpu_scratch(g, a);
		return cm;
	}
	if (!r->hw) {
		snprintf(err, errlen, "the GPU backend plans with a profile measured on the GPU (--gpu-profile P.tsv) or "
		                      "with a hardware description that has a [compute] section (--hw h100-pcie5); "
		                      "docs/gpu.md");
		return NULL;
	}
	HwModel hw;
	if (!load_hw(r, &hw, a, err, errlen))
		return NULL;
	if (!(hw.flop_rate > 0)) {
		snprintf(err, errlen, "%s has no [compute] section: the GPU backend needs its flops to model kernel "
		                      "times (docs/profiling.md)", r->hw);
		return NULL;
	}
	cm = costmodel_from_hw(&hw, g, hw_roofline_times(&hw, g, a), a);
	cm->source = arena_printf(a, "%s, kernels by roofline", cm->source);
	cm->scratch = gpu_scratch(g, a);
	return cm;
}

CostModel *costmodel_for(const Graph *g, const Schedule *s, const CostRequest *r, Arena *a, char *err,
                         size_t errlen)
{
	CostModel *cm = target_info[r->target].kernels_fast ? gpu_cost_model(g, s, r, a, err, errlen)
	                                                    : cpu_cost_model(g, s, r, a, err, errlen);
	if (cm) {
		cm->duplex = target_info[r->target].duplex;
		cm->kernels_fast = target_info[r->target].kernels_fast;
	}
	return cm && r->ranks > 1 ? costmodel_with_ranks(cm, r, a, err, errlen) : cm;
}

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
