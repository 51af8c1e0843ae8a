/*
 * ilp_rows.c - the rows of a placement's program in words: what each
 * states (its RowKind, named here), the capacity rows a solution meets at
 * their bound, and, for a limit under which nothing fits, where the fast
 * tier overflows least (an elastic program: the capacity rows softened,
 * their excess minimised).
 *
 * Below place_ilp.c, beside ilp_program.c, which tags every row it adds.
 */
#include "ilp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "memplan.h"
#include "util.h"

static const char *const row_kind_name[ROW_NKINDS] = {
	[ROW_NONE] = "row",
	[ROW_SOURCE] = "source",
	[ROW_FLOW] = "flow",
	[ROW_COPY_KEPT] = "async read's copy kept",
	[ROW_HOME] = "offloaded home",
	[ROW_READY] = "recompute's input ready",
	[ROW_IN_PLACE] = "in place",
	[ROW_ARGS_FAST] = "arguments fast",
	[ROW_ALGO] = "algorithm",
	[ROW_ALGO_SPACE] = "algorithm's workspace",
	[ROW_CONFIG] = "configuration",
	[ROW_CONFIG_FAST] = "configuration's tier",
	[ROW_OVERLAP] = "moves behind the kernel",
	[ROW_OVERLAP_CUT] = "move's excess",
	[ROW_RC_SPACE] = "recompute's workspace",
	[ROW_RC_ALGO] = "recompute's algorithm",
	[ROW_SPAN_CUT] = "spanning move's excess",
	[ROW_FAST_BYTES] = "fast bytes",
	[ROW_CAPACITY] = "capacity",
	[ROW_CAP_SPACE] = "capacity with workspace",
	[ROW_CAP_BOUNDARY] = "capacity at the boundary",
};

bool ilp_capacity_row(MipTag t)
{
	return t.kind == ROW_CAPACITY || t.kind == ROW_CAP_SPACE || t.kind == ROW_CAP_BOUNDARY;
}

const char *ilp_row_name(const Ilp *ip, int row, char *buf, size_t size)
{
	MipTag t = mip_row_tag(ip->mip, row);
	const char *kind = t.kind > ROW_NONE && t.kind < ROW_NKINDS ? row_kind_name[t.kind] : "row";
	int n = snprintf(buf, size, "%s", kind);
	if (t.step >= 0 && t.step < ip->s->n && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " at step %d (%s)", t.step, ip->s->order[t.step]->name);
	if (t.object >= 0 && n >= 0 && (size_t)n < size) {
		if (t.kind == ROW_RC_SPACE && t.object < ip->s->n)
			snprintf(buf + n, size - (size_t)n, " for step %d", t.object);
		else if (t.kind != ROW_RC_SPACE && t.object < ip->g->tensors.n)
			snprintf(buf + n, size - (size_t)n, " of %s", ip->g->tensors.v[t.object]->name);
	}
	if (t.kind <= ROW_NONE || t.kind >= ROW_NKINDS)
		snprintf(buf, size, "row %d", row);
	return buf;
}

/* The steps marked in at[], as ranges "37-41, 52", the first ranges with their kernels; into buf. */
static const char *steps_str(const Ilp *ip, const bool *at, char *buf, size_t size)
{
	size_t n = 0;
	int ranges = 0, more = 0;
	buf[0] = '\0';
	for (int st = 0; st < ip->s->n; st++) {
		if (!at[st] || (st > 0 && at[st - 1]))
			continue;
		int end = st;
		while (end + 1 < ip->s->n && at[end + 1])
			end++;
		if (ranges++ >= 6) {
			more += end - st + 1;
			continue;
		}
		const char *first = ip->s->order[st]->name, *last = ip->s->order[end]->name;
		int w = end == st ? snprintf(buf + n, size - n, "%s%d (%s)", n ? ", " : "", st, first)
		                  : snprintf(buf + n, size - n, "%s%d-%d (%s .. %s)", n ? ", " : "", st, end, first, last);
		if (w < 0 || (size_t)w >= size - n)
			return buf;
		n += (size_t)w;
	}
	if (more)
		snprintf(buf + n, size - n, " and %d more", more);
	return buf;
}

static int count_marked(const bool *at, int n)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += at[i];
	return c;
}

/*
 * The room (MiB) below which a step's capacity counts as binding: 1% of
 * its limit, at least an alignment (sizes are multiples of it, so the
 * bytes placed rarely meet the limit exactly).
 */
static double full_within(const Ilp *ip, int st)
{
	return fmax(0.01 * ip->dmax[st], MEMPLAN_ALIGN / MIB);
}

const char *ilp_binding(const Ilp *ip, const double *x, char *buf, size_t size)
{
	int n = ip->s->n;
	bool *at = xcalloc((size_t)n + 1, sizeof(bool));
	for (int i = 0; i < mip_nrows(ip->mip); i++) {
		MipTag t = mip_row_tag(ip->mip, i);
		double lo, hi;
		mip_row_bounds(ip->mip, i, &lo, &hi);
		if (ilp_capacity_row(t) && t.step >= 0 && t.step < n && hi < MIP_INF &&
		    mip_row_activity(ip->mip, i, x) >= hi - full_within(ip, t.step))
			at[t.step] = true;
	}
	for (int st = 0; st < n; st++)
		if (x[ip->dcol[st]] >= ip->dmax[st] - full_within(ip, st))
			at[st] = true;
	char steps[512];
	int k = count_marked(at, n);
	if (k == 0)
		snprintf(buf, size, "the fast tier is nowhere within 1%% of its limit");
	else
		snprintf(buf, size, "the fast tier is within 1%% of its limit at %d of %d steps: %s", k, n,
		         steps_str(ip, at, steps, sizeof steps));
	free(at);
	return buf;
}

/*
 * ip's program with its capacity softened: each step's D_s bound becomes
 * a row D_s - s <= limit, and every capacity row gets a slack (mip_elastic);
 * slack[] gets each row's slack column, cap[] each step's.
 */
static Mip *elastic(const Ilp *ip, int *slack, int *cap)
{
	Mip *e = mip_elastic(ip->mip, ilp_capacity_row, slack);
	for (int st = 0; st < ip->s->n; st++) {
		int D = ip->dcol[st];
		mip_set_bounds(e, D, 0, MIP_INF);
		cap[st] = mip_add_col(e, 0, MIP_INF, 1, false);
		mip_add_row(e, ROW_TAG(ROW_CAPACITY, st, -1), 2, (int[]){D, cap[st]}, (double[]){1, -1}, -MIP_INF,
		            ip->dmax[st]);
	}
	return e;
}

/*
 * Solve the elastic program (its relaxation where relax) within `limit`
 * seconds; marks the steps that overflow in at[], their largest excess
 * (MiB) into *most; false where it gave no solution.
 */
static bool overflow_at(const Ilp *ip, const PlaceOptions *o, bool relax, double limit, bool *at, double *most)
{
	int nr = mip_nrows(ip->mip), n = ip->s->n;
	int *slack = xmalloc(sizeof(int) * ((size_t)nr + 1)), *cap = xmalloc(sizeof(int) * ((size_t)n + 1));
	Mip *e = elastic(ip, slack, cap);
	MipResult r = {0};
	char err[256];
	bool ok = mip_solve(e, &(MipOptions){.backend = o->solver, .time_limit = limit, .relax = relax}, &r, err,
	                    sizeof err) &&
	          (r.status == MIP_OPTIMAL || r.status == MIP_FEASIBLE);
	*most = 0;
	for (int i = 0; ok && i < nr + n; i++) {
		int c = i < nr ? slack[i] : cap[i - nr];
		int st = i < nr ? mip_row_tag(ip->mip, i).step : i - nr;
		if (c >= 0 && st >= 0 && st < n && r.x[c] > 1e-6) {
			at[st] = true;
			*most = fmax(*most, r.x[c]);
		}
	}
	mip_result_free(&r);
	mip_free(e);
	free(slack);
	free(cap);
	return ok;
}

const char *ilp_overflow(const Ilp *ip, const PlaceOptions *o, char *buf, size_t size)
{
	int n = ip->s->n;
	bool *at = xcalloc((size_t)n + 1, sizeof(bool));
	double most = 0, limit = fmin(o->time_limit > 0 ? o->time_limit : PLACE_TIME_LIMIT, PLACE_OVERFLOW_TIME);
	char steps[512], b[64];
	bool relaxed = overflow_at(ip, o, true, limit, at, &most) && count_marked(at, n) > 0;
	if (relaxed)
		snprintf(buf, size, "; even with moves in fractions it overflows at %s, by up to %s", steps_str(ip, at, steps,
		         sizeof steps), fmt_bytes((int64_t)ceil(most * MIB), b, sizeof b));
	else if (overflow_at(ip, o, false, limit, at, &most) && count_marked(at, n) > 0)
		snprintf(buf, size, "; the placement that overflows it least (as far as %g s of search finds) does so at %s, "
		         "by up to %s", limit, steps_str(ip, at, steps, sizeof steps),
		         fmt_bytes((int64_t)ceil(most * MIB), b, sizeof b));
	else
		buf[0] = '\0';
	free(at);
	return buf;
}
