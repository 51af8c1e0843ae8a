/*
 * solver.c - the MIP of solver.h, solved by CBC or lp_solve.
 *
 * The program is kept in our own arrays (columns; rows in compressed
 * sparse row form) and loaded into a solver only by mip_solve(), so
 * that one program can be solved by either backend and measured the same
 * way.
 *
 * CBC: loaded as a compressed sparse column matrix through its C API
 * (coin/Cbc_C_Interface.h), log level 0, the time limit and the relative
 * gap as parameters. Its best possible objective is the bound.
 *
 * lp_solve: rows added in row mode, floor branch first, a timeout in
 * whole seconds; with a gap to stop at, a sequence of dives (see
 * solve_lpsolve). lp_solve reports no bound for an unfinished search; the
 * bound given here is its own root LP relaxation (the lprec field
 * real_solution), or the objective bound of a dive that proved nothing
 * better exists, so its gap is honest but pessimistic.
 */
#include "solver.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <coin/Cbc_C_Interface.h>
#include <lpsolve/lp_lib.h>

#include "util.h"

struct Mip {
	int ncols, capcols;  /* columns and allocated room */
	double *lo, *hi;     /* column bounds */
	double *obj;         /* objective coefficients */
	char *isint;         /* 1: integer column */
	int nint;            /* integer columns */
	int nrows, caprows;  /* rows and allocated room */
	long *start;         /* row i's terms: start[i] .. start[i+1] */
	double *rlo, *rhi;   /* row bounds */
	MipTag *tag;         /* what each row states */
	long nnz, capnnz;    /* terms and allocated room */
	int *col;            /* column of each term */
	double *val;         /* coefficient of each term */
	int *slot;           /* column -> index of its term in the row being added, -1 */
};

int mip_broken_row(const Mip *m, const double *x, double tol)
{
	for (int i = 0; i < m->nrows; i++) {
		double sum = 0;
		bool given = true;
		for (long k = m->start[i]; k < m->start[i + 1] && given; k++) {
			given = !isnan(x[m->col[k]]);
			sum += m->val[k] * x[m->col[k]];
		}
		if (given && (sum < m->rlo[i] - tol || sum > m->rhi[i] + tol))
			return i;
	}
	return -1;
}

Mip *mip_new(void)
{
	Mip *m = xcalloc(1, sizeof *m);
	m->start = xcalloc(1, sizeof(long));
	return m;
}

void mip_free(Mip *m)
{
	if (!m)
		return;
	free(m->lo);
	free(m->hi);
	free(m->obj);
	free(m->isint);
	free(m->start);
	free(m->rlo);
	free(m->rhi);
	free(m->tag);
	free(m->col);
	free(m->val);
	free(m->slot);
	free(m);
}

int mip_add_col(Mip *m, double lo, double hi, double obj, bool integer)
{
	if (m->ncols == m->capcols) {
		m->capcols = m->capcols ? 2 * m->capcols : 1024;
		m->lo = xrealloc(m->lo, sizeof(double) * (size_t)m->capcols);
		m->hi = xrealloc(m->hi, sizeof(double) * (size_t)m->capcols);
		m->obj = xrealloc(m->obj, sizeof(double) * (size_t)m->capcols);
		m->isint = xrealloc(m->isint, (size_t)m->capcols);
		m->slot = xrealloc(m->slot, sizeof(int) * (size_t)m->capcols);
	}
	int j = m->ncols++;
	m->lo[j] = lo;
	m->hi[j] = hi;
	m->obj[j] = obj;
	m->isint[j] = integer;
	m->slot[j] = -1;
	m->nint += integer;
	return j;
}

void mip_add_obj(Mip *m, int col, double coef)
{
	m->obj[col] += coef;
}

void mip_set_bounds(Mip *m, int col, double lo, double hi)
{
	m->lo[col] = lo;
	m->hi[col] = hi;
}

int mip_add_row(Mip *m, MipTag tag, int n, const int *cols, const double *vals, double lo, double hi)
{
	if (m->nrows == m->caprows) {
		m->caprows = m->caprows ? 2 * m->caprows : 1024;
		m->start = xrealloc(m->start, sizeof(long) * (size_t)(m->caprows + 1));
		m->rlo = xrealloc(m->rlo, sizeof(double) * (size_t)m->caprows);
		m->rhi = xrealloc(m->rhi, sizeof(double) * (size_t)m->caprows);
		m->tag = xrealloc(m->tag, sizeof(MipTag) * (size_t)m->caprows);
	}
	if (m->nnz + n > m->capnnz) {
		while (m->nnz + n > m->capnnz)
			m->capnnz = m->capnnz ? 2 * m->capnnz : 4096;
		m->col = xrealloc(m->col, sizeof(int) * (size_t)m->capnnz);
		m->val = xrealloc(m->val, sizeof(double) * (size_t)m->capnnz);
	}
	long first = m->nnz;
	for (int k = 0; k < n; k++) {
		int c = cols[k];
		if (c < 0 || c >= m->ncols)
			ICE("row term on column %d of %d", c, m->ncols);
		if (m->slot[c] >= 0) {
			m->val[first + m->slot[c]] += vals[k];
			continue;
		}
		m->slot[c] = (int)(m->nnz - first);
		m->col[m->nnz] = c;
		m->val[m->nnz++] = vals[k];
	}
	/* forget the slots; drop terms that cancelled */
	long w = first;
	for (long k = first; k < m->nnz; k++) {
		m->slot[m->col[k]] = -1;
		if (m->val[k] != 0.0) {
			m->col[w] = m->col[k];
			m->val[w++] = m->val[k];
		}
	}
	m->nnz = w;
	int i = m->nrows++;
	m->rlo[i] = lo;
	m->rhi[i] = hi;
	m->tag[i] = tag;
	m->start[i + 1] = m->nnz;
	return i;
}

MipTag mip_row_tag(const Mip *m, int row)
{
	return m->tag[row];
}

double mip_row_activity(const Mip *m, int row, const double *x)
{
	double sum = 0;
	for (long k = m->start[row]; k < m->start[row + 1]; k++)
		sum += m->val[k] * x[m->col[k]];
	return sum;
}

void mip_row_bounds(const Mip *m, int row, double *lo, double *hi)
{
	*lo = m->rlo[row];
	*hi = m->rhi[row];
}

Mip *mip_elastic(const Mip *m, bool (*soft)(MipTag), int *slack)
{
	Mip *e = mip_new();
	for (int j = 0; j < m->ncols; j++)
		mip_add_col(e, m->lo[j], m->hi[j], 0, m->isint[j]);
	for (int i = 0; i < m->nrows; i++)
		slack[i] = soft(m->tag[i]) && m->rlo[i] <= -MIP_INF && m->rhi[i] < MIP_INF ? mip_add_col(e, 0, MIP_INF, 1, false)
		                                                                       : -1;
	int most = 1;
	for (int i = 0; i < m->nrows; i++)
		if (m->start[i + 1] - m->start[i] + 1 > most)
			most = (int)(m->start[i + 1] - m->start[i] + 1);
	int *cols = xmalloc(sizeof(int) * (size_t)most);
	double *vals = xmalloc(sizeof(double) * (size_t)most);
	for (int i = 0; i < m->nrows; i++) {
		int n = 0;
		for (long k = m->start[i]; k < m->start[i + 1]; k++)
			cols[n] = m->col[k], vals[n++] = m->val[k];
		if (slack[i] >= 0)
			cols[n] = slack[i], vals[n++] = -1;
		mip_add_row(e, m->tag[i], n, cols, vals, m->rlo[i], m->rhi[i]);
	}
	free(cols);
	free(vals);
	return e;
}

/* Row activity bounds of terms cols/vals over r's column bounds. */
static void activity(const Mip *r, int n, const int *cols, const double *vals, double *lo, double *hi)
{
	*lo = *hi = 0;
	for (int k = 0; k < n; k++) {
		double a = vals[k], l = r->lo[cols[k]], h = r->hi[cols[k]];
		double from = a > 0 ? l : h, to = a > 0 ? h : l;
		*lo += from <= -MIP_INF || from >= MIP_INF ? (a * from > 0 ? INFINITY : -INFINITY) : a * from;
		*hi += to <= -MIP_INF || to >= MIP_INF ? (a * to > 0 ? INFINITY : -INFINITY) : a * to;
	}
}

Mip *mip_restrict(const Mip *m, const double *fix, int *col_of, double *constant)
{
	Mip *r = mip_new();
	*constant = 0;
	for (int j = 0; j < m->ncols; j++) {
		if (isnan(fix[j])) {
			col_of[j] = mip_add_col(r, m->lo[j], m->hi[j], m->obj[j], m->isint[j]);
		} else {
			col_of[j] = -1;
			*constant += m->obj[j] * fix[j];
		}
	}
	int *cols = xmalloc(sizeof(int) * (size_t)(r->ncols + 1));
	double *vals = xmalloc(sizeof(double) * (size_t)(r->ncols + 1));
	bool broken = false;
	for (int i = 0; i < m->nrows && !broken; i++) {
		int n = 0;
		double fixed = 0;
		for (long k = m->start[i]; k < m->start[i + 1]; k++) {
			int j = m->col[k];
			if (col_of[j] >= 0) {
				cols[n] = col_of[j];
				vals[n++] = m->val[k];
			} else {
				fixed += m->val[k] * fix[j];
			}
		}
		double lo = m->rlo[i] <= -MIP_INF ? -MIP_INF : m->rlo[i] - fixed;
		double hi = m->rhi[i] >= MIP_INF ? MIP_INF : m->rhi[i] - fixed;
		double amin, amax;
		activity(r, n, cols, vals, &amin, &amax);
		double tol = 1e-9 * (1 + (lo > -MIP_INF ? fabs(lo) : 0) + (hi < MIP_INF ? fabs(hi) : 0));
		if (amax < lo - 1e-6 || amin > hi + 1e-6) {
			broken = true; /* no values of the free columns meet it (n == 0: the fixed ones break it) */
		} else if (amin >= lo - tol && amax <= hi + tol) {
			continue; /* met whatever the free columns' values */
		} else if (n == 1) { /* a bound on its one column */
			double a = vals[0], l = -MIP_INF, h = MIP_INF;
			int c = cols[0];
			if (a > 0 ? lo > -MIP_INF : hi < MIP_INF)
				l = (a > 0 ? lo : hi) / a;
			if (a > 0 ? hi < MIP_INF : lo > -MIP_INF)
				h = (a > 0 ? hi : lo) / a;
			if (r->isint[c]) {
				l = l > -MIP_INF ? ceil(l - 1e-9) : l;
				h = h < MIP_INF ? floor(h + 1e-9) : h;
			}
			if (l > r->lo[c])
				r->lo[c] = l;
			if (h < r->hi[c])
				r->hi[c] = h;
			broken = r->lo[c] > r->hi[c] + 1e-9;
		} else {
			mip_add_row(r, m->tag[i], n, cols, vals, lo, hi);
		}
	}
	free(cols);
	free(vals);
	if (broken) {
		mip_free(r);
		return NULL;
	}
	return r;
}

int mip_ncols(const Mip *m) { return m->ncols; }
int mip_nrows(const Mip *m) { return m->nrows; }
int mip_nintegers(const Mip *m) { return m->nint; }
long mip_nnz(const Mip *m) { return m->nnz; }

const char *mip_status_name(MipStatus s)
{
	switch (s) {
	case MIP_OPTIMAL: return "optimal";
	case MIP_FEASIBLE: return "feasible (time limit)";
	case MIP_NO_SOLUTION: return "no solution (time limit)";
	case MIP_INFEASIBLE: return "infeasible";
	case MIP_ERROR: return "solver error";
	}
	unreachable();
}

void mip_result_free(MipResult *r)
{
	free(r->x);
	r->x = NULL;
}

static double relgap(double obj, double bound)
{
	double g = (obj - bound) / fmax(fabs(obj), 1e-9);
	return g > 0 ? g : 0;
}

/* ------------------------------------------------------------------ CBC */

static double cbc_bound(double v)
{
	if (v >= MIP_INF)
		return DBL_MAX;
	if (v <= -MIP_INF)
		return -DBL_MAX;
	return v;
}

static void solve_cbc(const Mip *m, const MipOptions *o, MipResult *r)
{
	/* rows -> columns */
	CoinBigIndex *cstart = xcalloc((size_t)m->ncols + 1, sizeof *cstart);
	int *rowidx = xmalloc(sizeof(int) * (size_t)(m->nnz + 1));
	double *val = xmalloc(sizeof(double) * (size_t)(m->nnz + 1));
	for (long k = 0; k < m->nnz; k++)
		cstart[m->col[k] + 1]++;
	for (int j = 0; j < m->ncols; j++)
		cstart[j + 1] += cstart[j];
	CoinBigIndex *fill = xcalloc((size_t)m->ncols + 1, sizeof *fill);
	for (int i = 0; i < m->nrows; i++)
		for (long k = m->start[i]; k < m->start[i + 1]; k++) {
			CoinBigIndex at = cstart[m->col[k]] + fill[m->col[k]]++;
			rowidx[at] = i;
			val[at] = m->val[k];
		}
	double *clo = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
	double *chi = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
	double *rlo = xmalloc(sizeof(double) * (size_t)(m->nrows + 1));
	double *rhi = xmalloc(sizeof(double) * (size_t)(m->nrows + 1));
	for (int j = 0; j < m->ncols; j++) {
		clo[j] = cbc_bound(m->lo[j]);
		chi[j] = cbc_bound(m->hi[j]);
	}
	for (int i = 0; i < m->nrows; i++) {
		rlo[i] = cbc_bound(m->rlo[i]);
		rhi[i] = cbc_bound(m->rhi[i]);
	}

	Cbc_Model *cbc = Cbc_newModel();
	Cbc_loadProblem(cbc, m->ncols, m->nrows, cstart, rowidx, val, clo, chi, m->obj, rlo, rhi);
	for (int j = 0; j < m->ncols; j++)
		if (m->isint[j] && !o->relax)
			Cbc_setInteger(cbc, j);
	Cbc_setObjSense(cbc, 1.0);
	Cbc_setLogLevel(cbc, o->verbose ? 1 : 0);
	if (o->time_limit > 0)
		Cbc_setMaximumSeconds(cbc, o->time_limit);
	if (o->gap > 0)
		Cbc_setAllowableFractionGap(cbc, o->gap);
	if (o->abs_gap > 0)
		Cbc_setAllowableGap(cbc, o->abs_gap);
	/* the time limit is the caller's, in wall-clock seconds; CBC's own default counts CPU time */
	Cbc_setParameter(cbc, "timeMode", "elapsed");

	if (o->start) { /* CBC completes the columns not given */
		int *idx = xmalloc(sizeof(int) * (size_t)(m->ncols + 1)), n = 0;
		double *sval = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
		for (int j = 0; j < m->ncols; j++)
			if (!isnan(o->start[j])) {
				idx[n] = j;
				sval[n++] = o->start[j];
			}
		Cbc_setMIPStartI(cbc, n, idx, sval);
		free(idx);
		free(sval);
	}

	if (o->no_preprocess)
		Cbc_setParameter(cbc, "preprocess", "off");
	if (o->no_probing)
		Cbc_setParameter(cbc, "probing", "off");

	/* a tuning aid: AUTOTM_CBC_PARAMS="name=value name=value" sets CBC's parameters (its command-line names) */
	const char *params = getenv("AUTOTM_CBC_PARAMS");
	if (params && *params) {
		char *copy = xstrdup(params), *save = NULL;
		for (char *tok = strtok_r(copy, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
			char *eq = strchr(tok, '=');
			if (eq) {
				*eq = '\0';
				Cbc_setParameter(cbc, tok, eq + 1);
			}
		}
		free(copy);
	}

	/* a debugging aid: AUTOTM_MIP_WRITE=prefix writes prefix.lp and prefix.mps before solving */
	const char *dump = getenv("AUTOTM_MIP_WRITE");
	if (dump && *dump) {
		Cbc_writeLp(cbc, dump);
		Cbc_writeMps(cbc, dump);
	}

	double t0 = now_seconds();
	Cbc_solve(cbc);
	r->time = now_seconds() - t0;

	/* a relaxation (no integer column) is solved by Clp alone: its solution is the columns' */
	const double *x = o->relax ? (Cbc_isProvenOptimal(cbc) ? Cbc_getColSolution(cbc) : NULL) : Cbc_bestSolution(cbc);
	if (Cbc_isProvenInfeasible(cbc)) {
		r->status = MIP_INFEASIBLE;
	} else if (Cbc_isAbandoned(cbc)) {
		r->status = MIP_ERROR;
	} else if (!x) {
		r->status = Cbc_isProvenOptimal(cbc) && m->ncols == 0 ? MIP_OPTIMAL : MIP_NO_SOLUTION;
		double bound = Cbc_getBestPossibleObjValue(cbc); /* what the search proved before its time ran out */
		if (r->status == MIP_NO_SOLUTION && isfinite(bound) && fabs(bound) < MIP_INF)
			r->bound = bound;
	} else {
		r->objective = Cbc_getObjValue(cbc);
		r->bound = Cbc_getBestPossibleObjValue(cbc);
		r->x = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
		memcpy(r->x, x, sizeof(double) * (size_t)m->ncols);
		if (Cbc_isProvenOptimal(cbc)) {
			r->status = MIP_OPTIMAL;
			/* proved within the requested gap: the bound stands as CBC reports it */
			if (r->bound > r->objective)
				r->bound = r->objective;
		} else {
			r->status = MIP_FEASIBLE;
		}
		r->gap = relgap(r->objective, r->bound);
	}
	Cbc_deleteModel(cbc);
	free(cstart);
	free(fill);
	free(rowidx);
	free(val);
	free(clo);
	free(chi);
	free(rlo);
	free(rhi);
}

/* ------------------------------------------------------------- lp_solve */

static void solve_lpsolve(const Mip *m, const MipOptions *o, MipResult *r)
{
	lprec *lp = make_lp(0, m->ncols);
	if (!lp) {
		r->status = MIP_ERROR;
		return;
	}
	set_verbose(lp, o->verbose ? NORMAL : NEUTRAL);
	double inf = get_infinite(lp);
	int *idx = xmalloc(sizeof(int) * (size_t)(m->ncols + 1));
	double *v = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
	/* objective, bounds and integrality (lp_solve counts columns from 1) */
	for (int j = 0; j < m->ncols; j++) {
		idx[j] = j + 1;
		v[j] = m->obj[j];
	}
	set_obj_fnex(lp, m->ncols, v, idx);
	set_minim(lp);
	for (int j = 0; j < m->ncols; j++) {
		double lo = m->lo[j] <= -MIP_INF ? -inf : m->lo[j];
		double hi = m->hi[j] >= MIP_INF ? inf : m->hi[j];
		if (lo <= -inf)
			set_unbounded(lp, j + 1);
		set_bounds(lp, j + 1, lo, hi);
		if (m->isint[j] && !o->relax)
			set_int(lp, j + 1, TRUE);
	}
	set_add_rowmode(lp, TRUE);
	bool ok = true;
	for (int i = 0; i < m->nrows && ok; i++) {
		int n = 0;
		for (long k = m->start[i]; k < m->start[i + 1]; k++) {
			idx[n] = m->col[k] + 1;
			v[n++] = m->val[k];
		}
		double lo = m->rlo[i], hi = m->rhi[i];
		if (lo == hi)
			ok = add_constraintex(lp, n, v, idx, EQ, lo);
		else if (lo <= -MIP_INF)
			ok = add_constraintex(lp, n, v, idx, LE, hi);
		else if (hi >= MIP_INF)
			ok = add_constraintex(lp, n, v, idx, GE, lo);
		else
			ok = add_constraintex(lp, n, v, idx, GE, lo) && add_constraintex(lp, n, v, idx, LE, hi);
	}
	set_add_rowmode(lp, FALSE);
	free(idx);
	free(v);
	if (!ok) {
		r->status = MIP_ERROR;
		delete_lp(lp);
		return;
	}
	/*
	 * Floor branch first. With a gap to stop at, lp_solve's own search
	 * (exhaustive depth-first) is hopeless on large programs, so it dives:
	 * stop at the first solution (break at first), then solve again
	 * demanding an objective better than the best by half the gap (the
	 * objective bound), until the best is within the gap of the root LP
	 * relaxation, a dive finds nothing better (which proves the best is
	 * within half the gap of the optimum) or the time runs out. Without a
	 * gap, one exhaustive search proves optimality.
	 */
	set_bb_floorfirst(lp, BRANCH_FLOOR);
	set_mip_gap(lp, TRUE, o->abs_gap > 0 ? o->abs_gap : 1e-11);
	set_mip_gap(lp, FALSE, 1e-9);
	bool dive = o->gap > 0;
	set_break_at_first(lp, dive);
	double t0 = now_seconds(), limit = o->time_limit > 0 ? o->time_limit : 1e9;
	double best = INFINITY, root = -INFINITY, cutoff = -INFINITY;
	bool proved = false, failed = false, infeasible = false;
	for (int round = 0;; round++) {
		double left = limit - (now_seconds() - t0);
		if (left <= 0)
			break;
		set_timeout(lp, (long)ceil(left));
		if (round > 0) {
			cutoff = best - fabs(best) * o->gap / 2;
			set_obj_bound(lp, cutoff);
		}
		int ret = solve(lp);
		if (round == 0)
			root = lp->real_solution;
		if (ret == OPTIMAL || ret == PRESOLVED || ret == SUBOPTIMAL) {
			double obj = get_objective(lp);
			if (obj < best) {
				best = obj;
				if (!r->x)
					r->x = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
				get_variables(lp, r->x);
			}
			if (!dive) {
				proved = ret != SUBOPTIMAL;
				break;
			}
			if (relgap(best, root) <= o->gap || (o->abs_gap > 0 && best - root <= o->abs_gap))
				break;
			continue;
		}
		if ((ret == INFEASIBLE || ret == NOFEASFOUND) && round == 0)
			infeasible = true;
		else if (ret == INFEASIBLE || ret == NOFEASFOUND)
			proved = true; /* nothing better than the cutoff */
		else if (ret != TIMEOUT && ret != SUBOPTIMAL)
			failed = !r->x;
		break;
	}
	r->time = now_seconds() - t0;
	if (r->x) {
		r->objective = best;
		r->bound = proved && cutoff > -INFINITY ? cutoff : proved ? best : root;
		if (r->bound > best)
			r->bound = best;
		r->gap = relgap(best, r->bound);
		bool close = r->gap <= o->gap || (o->abs_gap > 0 && best - r->bound <= o->abs_gap);
		r->status = proved || close ? MIP_OPTIMAL : MIP_FEASIBLE;
	} else {
		r->status = infeasible ? MIP_INFEASIBLE : failed ? MIP_ERROR : MIP_NO_SOLUTION;
	}
	delete_lp(lp);
}

/*
 * The solvers print to standard output now and then, whatever their log
 * level (CBC's cut generators: "2mir_test: why does constraint not exist
 * ?"). Standard output is the command's (JSON that programs read), so
 * while a solver runs it goes to standard error; returns what restores it.
 */
static int stdout_to_stderr(void)
{
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	if (saved >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		close(saved);
		saved = -1;
	}
	return saved;
}

static void stdout_restore(int saved)
{
	fflush(stdout); /* C++ streams write through stdio: what they printed goes to stderr too */
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
}

/* The finite number right after the first `key` in line, if there is one. */
static bool number_after(const char *line, const char *key, double *v)
{
	const char *at = line ? strstr(line, key) : NULL;
	if (!at)
		return false;
	char *end;
	double x = strtod(at + strlen(key), &end);
	if (end == at + strlen(key) || !isfinite(x) || fabs(x) >= MIP_INF)
		return false;
	*v = x;
	return true;
}

bool mip_log_bound(const char *line, double *bound)
{
	const char *cut = strstr(line, "changed objective from ");
	return number_after(line, "Continuous objective value is ", bound) ||
	       number_after(line, "best possible ", bound) || number_after(cut, " to ", bound);
}

bool mip_log_solution(const char *line, double *objective)
{
	return number_after(line, "Integer solution of ", objective);
}

/*
 * Whether a solution the log reported is better than beat, as the log
 * rounds it (8 significant digits): by more than a millionth. The start's
 * own plan, reported rounded below its objective (199724.62 for
 * 199724.624), kept a solve past its deadline.
 */
bool mip_log_beats(double logged, double beat)
{
	return logged < beat - 1e-6 * fabs(beat);
}

/* What a child solving with a deadline writes back, followed by its nx solution values. */
typedef struct ChildResult {
	int status, nx;
	double objective, bound, gap, time;
} ChildResult;

/*
 * CBC in a child process, stopped at o->deadline (MipOptions): its log
 * (level 1, whatever o->verbose says) comes through one pipe, read here
 * for the bound it reports and passed on to standard output (the
 * caller's standard error, mip_solve) if o->verbose; its result through
 * another. Solved here, without a deadline, if no process can be made.
 */
static void solve_cbc_deadline(const Mip *m, const MipOptions *o, MipResult *r)
{
	int logp[2], resp[2];
	if (pipe(logp) != 0) {
		solve_cbc(m, o, r);
		return;
	}
	if (pipe(resp) != 0) {
		close(logp[0]);
		close(logp[1]);
		solve_cbc(m, o, r);
		return;
	}
	double t0 = now_seconds(), deadline = t0 + o->deadline;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(logp[0]), close(logp[1]), close(resp[0]), close(resp[1]);
		solve_cbc(m, o, r);
		return;
	}
	if (pid == 0) {
		close(logp[0]);
		close(resp[0]);
		if (dup2(logp[1], STDOUT_FILENO) < 0)
			_exit(1);
		close(logp[1]);
		setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is printed */
		MipOptions co = *o;
		co.verbose = true;
		co.deadline = 0;
		MipResult cr;
		memset(&cr, 0, sizeof cr);
		cr.status = MIP_ERROR;
		solve_cbc(m, &co, &cr);
		fflush(stdout);
		ChildResult h = {.status = (int)cr.status, .nx = cr.x ? m->ncols : 0, .objective = cr.objective,
		                 .bound = cr.bound, .gap = cr.gap, .time = cr.time};
		bool ok = write_all(resp[1], &h, sizeof h) && (!cr.x || write_all(resp[1], cr.x, sizeof(double) * (size_t)h.nx));
		_exit(ok ? 0 : 1);
	}
	close(logp[1]);
	close(resp[1]);
	size_t want = sizeof(ChildResult), got = 0;
	char *res = xmalloc(want + sizeof(double) * (size_t)(m->ncols + 1));
	char line[4096];
	size_t len = 0;
	double bound = 0, found = INFINITY;
	bool log_open = true, res_open = true, stopped = false;
	while (log_open || res_open) {
		struct pollfd pfd[2];
		int np = 0, ilog = -1, ires = -1;
		if (log_open)
			ilog = np, pfd[np++] = (struct pollfd){.fd = logp[0], .events = POLLIN};
		if (res_open)
			ires = np, pfd[np++] = (struct pollfd){.fd = resp[0], .events = POLLIN};
		if (o->deadline_late > o->deadline && mip_log_beats(found, o->beat))
			deadline = t0 + o->deadline_late; /* a better solution to wait for */
		double left = deadline - now_seconds();
		if (left <= 0) {
			stopped = true;
			break;
		}
		int ready = poll(pfd, (nfds_t)np, (int)(left * 1e3) + 1);
		if (ready < 0 && errno != EINTR)
			break;
		if (ready <= 0)
			continue;
		if (ilog >= 0 && pfd[ilog].revents) {
			char buf[4096];
			ssize_t n = read(logp[0], buf, sizeof buf);
			if (n <= 0 && !(n < 0 && errno == EINTR))
				log_open = false;
			for (ssize_t i = 0; i < n; i++) {
				if (len < sizeof line - 1)
					line[len++] = buf[i];
				if (buf[i] != '\n')
					continue;
				line[len] = '\0';
				double b;
				if (mip_log_bound(line, &b) && b > bound)
					bound = b;
				if (mip_log_solution(line, &b) && b < found)
					found = b;
				if (o->verbose)
					fputs(line, stdout);
				len = 0;
			}
		}
		if (ires >= 0 && pfd[ires].revents) {
			ssize_t n = read(resp[0], res + got, want - got);
			if (n <= 0 && !(n < 0 && errno == EINTR))
				res_open = false;
			if (n > 0) {
				got += (size_t)n;
				if (got == sizeof(ChildResult)) {
					ChildResult h;
					memcpy(&h, res, sizeof h);
					want += sizeof(double) * (size_t)(h.nx > 0 && h.nx == m->ncols ? h.nx : 0);
				}
				if (got == want && got >= sizeof(ChildResult))
					res_open = false;
			}
		}
	}
	if (stopped)
		kill(pid, SIGKILL);
	close(logp[0]);
	close(resp[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	r->time = now_seconds() - t0;
	if (!stopped && got == want && got >= sizeof(ChildResult)) {
		ChildResult h;
		memcpy(&h, res, sizeof h);
		r->status = (MipStatus)h.status;
		r->objective = h.objective;
		r->bound = h.bound;
		r->gap = h.gap;
		if (h.nx > 0) {
			r->x = xmalloc(sizeof(double) * (size_t)(m->ncols + 1));
			memcpy(r->x, res + sizeof h, sizeof(double) * (size_t)m->ncols);
		}
	} else if (stopped) {
		r->status = MIP_NO_SOLUTION;
		r->stopped = true;
		r->bound = bound;
		if (o->verbose)
			printf("stopped at the deadline of %.1f s; the best bound reported: %g\n", o->deadline, bound);
	} else {
		r->status = MIP_ERROR; /* the child died */
	}
	free(res);
}

/* CBC in this process, or, with a deadline, in a child that can be stopped (solve_cbc_deadline). */
static void solve_cbc_any(const Mip *m, const MipOptions *o, MipResult *r)
{
	if (o->deadline > 0 && !o->relax)
		solve_cbc_deadline(m, o, r);
	else
		solve_cbc(m, o, r);
}

/* The back ends, the first the default: the name --solver takes (and another it also takes), and the solve. */
static const struct {
	const char *name, *alias;
	void (*solve)(const Mip *m, const MipOptions *o, MipResult *r);
} backends[] = {
	{"cbc", NULL, solve_cbc_any},
	{"lp_solve", "lpsolve", solve_lpsolve},
};

/* The back end of that name (NULL: the default), or -1. */
static int backend_index(const char *name)
{
	for (int i = 0; i < (int)countof(backends); i++)
		if (!name || !strcmp(name, backends[i].name) || (backends[i].alias && !strcmp(name, backends[i].alias)))
			return i;
	return -1;
}

bool mip_backend_known(const char *name)
{
	return backend_index(name) >= 0;
}

const char *mip_backend_names(char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < (int)countof(backends) && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i == 0 ? "" : i + 1 < (int)countof(backends) ? ", " : " or ",
		                      backends[i].name);
	return buf;
}

bool mip_solve(const Mip *m, const MipOptions *o, MipResult *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->status = MIP_ERROR;
	int b = backend_index(o->backend);
	if (b < 0) {
		char names[64];
		snprintf(err, errlen, "unknown solver '%s' (%s)", o->backend, mip_backend_names(names, sizeof names));
		return false;
	}
	int saved = stdout_to_stderr();
	backends[b].solve(m, o, r);
	stdout_restore(saved);
	return true;
}
