/*
 * pack.c - a placement packed into its pools, and what the packing says
 * of the limit: the helpers below the placement's policy (place.c) and
 * the ILP's search (ilp_search.c), which both pack plans and scale the
 * limits where they overflow (place.h documents each).
 */
#include "place.h"

#include <stdlib.h>

#include "memplan.h"

void place_pack(const PlaceOptions *o, Placement *p, Arena *a)
{
	if (!o->first_fit) {
		memplan(p, a);
		return;
	}
	memplan_first_fit(p, a);
	if (p->limit > 0 && p->fast_bytes + p->workspace > p->limit) {
		if (p->res.n <= PLACE_SQUEEZE_SMALL)
			memplan(p, a);
		else
			memplan_quick(p, a);
	}
}

bool place_solver_log(void)
{
	const char *v = getenv("AUTOTM_SOLVER_LOG");
	return v && v[0];
}

double place_frag_scale(const Placement *p, int64_t limit, double least)
{
	double cut = ((double)(p->fast_bytes + p->workspace) / (double)limit - 1) / 2;
	double scale = 1 - (cut > least ? cut : least);
	return scale < 0.90 ? 0.90 : scale;
}

bool place_above_limit(const Placement *p, const Residency *r, int64_t limit)
{
	return r->tier == TIER_FAST && r->offset + memplan_round(r->t->bytes) + p->workspace > limit;
}

int place_ws_above_limit(const Placement *p, int k, int64_t limit)
{
	if (!p->ws_offset)
		return 0;
	int64_t cap = limit - p->workspace;
	bool kernel = p->ws_offset[k] >= 0 && p->ws_offset[k] + memplan_round(placement_kernel_ws(p, k)) > cap;
	bool boundary = p->rc_ws_offset[k] >= 0 && p->rc_ws_offset[k] + memplan_round(placement_boundary_ws(p, k)) > cap;
	return (kernel ? PLACE_WS_KERNEL : 0) | (boundary ? PLACE_WS_BOUNDARY : 0);
}
