/*
 * report_schedule.c - the move schedule, for people and for tools.
 *
 * `autotmc schedule` shows what a placement does, step by step: the
 * kernel, where each of its inputs and outputs lives, the moves and
 * recomputes before it; then a summary. The same information goes out as
 * JSON (docs/schedule.md), as a Chrome Trace Event file (kernels and
 * recomputes on one lane, moves on their own, for Perfetto), and as a
 * gnuplot plot of the bytes in each tier over the step.
 *
 * Times come from the cost model through a timeline: before kernel s run
 * the synchronous moves that precede it, one after another, then the
 * recomputes; kernel s then takes max(its time, each copy engine's parts
 * of asynchronous moves during it), as the placement's objective charges
 * them. An asynchronous move's bar runs from the start of its first part
 * to the end of its last.
 */
#include "costmodel.h"
#include "place.h"
#include "plot.h"
#include "predict.h"
#include "reasons.h"
#include "report_schedule.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "util.h"

Timeline *timeline_make(const Placement *p, const CostModel *cm, Arena *a)
{
	const Schedule *s = p->s;
	Timeline *tl = arena_alloc(a, sizeof *tl);
	tl->kernel_start = arena_array(a, (size_t)s->n + 1, sizeof(double));
	tl->kernel_time = arena_array(a, (size_t)s->n + 1, sizeof(double));
	tl->step_time = arena_array(a, (size_t)s->n + 1, sizeof(double));
	tl->move_start = arena_array(a, (size_t)p->moves.n + 1, sizeof(double));
	tl->move_time = arena_array(a, (size_t)p->moves.n + 1, sizeof(double));
	tl->recompute_start = arena_array(a, (size_t)p->recomputes.n + 1, sizeof(double));
	tl->recompute_time = arena_array(a, (size_t)p->recomputes.n + 1, sizeof(double));
	double t = 0;
	for (int step = 0; step < s->n; step++) {
		double begin = t;
		for (int i = 0; i < p->moves.n; i++) {
			const Move *m = &p->moves.v[i];
			if (m->async || m->at != step)
				continue;
			tl->move_start[i] = t;
			tl->move_time[i] = cm->move_time(cm, m->t->bytes, m->from->tier, m->to->tier, false);
			t += tl->move_time[i];
		}
		for (int i = 0; i < p->recomputes.n; i++) {
			const Recompute *rc = &p->recomputes.v[i];
			if (rc->at != step)
				continue;
			tl->recompute_start[i] = t;
			tl->recompute_time[i] = placement_recompute_time(p, cm, rc);
			t += tl->recompute_time[i];
		}
		double k = placement_kernel_time(p, cm, step);
		double async[2] = {0, 0}; /* to fast, to slow: one engine, or one per direction (duplex) */
		for (int i = 0; i < p->moves.n; i++) {
			const Move *m = &p->moves.v[i];
			if (!m->async || step < m->start)
				continue;
			/* its part during this kernel, after the parts queued before it on its engine */
			int q = cm->duplex && m->to->tier == TIER_SLOW;
			if (step == m->start)
				tl->move_start[i] = t + async[q];
			double share = move_share(m, step);
			if (share <= 0)
				continue;
			async[q] += share * cm->move_time(cm, m->t->bytes, m->from->tier, m->to->tier, true);
			tl->move_time[i] = t + async[q] - tl->move_start[i]; /* to the end of its last part */
		}
		tl->kernel_start[step] = t;
		tl->kernel_time[step] = k;
		double over = async[0] > async[1] ? async[0] : async[1];
		t += k > over ? k : over;
		tl->step_time[step] = t - begin;
	}
	tl->total = t;
	return tl;
}

/*
 * Bytes of each tier at every step, as the pools hold them: fast, the
 * most memplan has live at the step's kernel or at the boundary before it
 * (sizes rounded as packed, an output written over its dying input counted
 * once, copies in flight included: memplan_fast_live), never more than
 * the packed fast pool; slow, the slow residencies, rounded alike.
 */
static void tier_usage(const Placement *p, int64_t *fast, int64_t *slow)
{
	Arena a = {0};
	const int64_t *live = memplan_fast_live(p, &a);
	for (int i = 0; i < p->s->n; i++) {
		fast[i] = live[2 * i] > live[2 * i + 1] ? live[2 * i] : live[2 * i + 1];
		slow[i] = 0;
	}
	arena_free(&a);
	for (int i = 0; i < p->res.n; i++) {
		const Residency *r = p->res.v[i];
		for (int step = r->first; step <= r->last && r->tier == TIER_SLOW; step++)
			slow[step] += memplan_round(r->t->bytes);
	}
}

static const char *tier_name(Tier t)
{
	return t == TIER_FAST ? "fast" : "slow";
}

/* A move line of the table: one that finishes before `step`, or an asynchronous one issued there. */
static void table_move(FILE *f, const Move *m, int step, const char *why)
{
	char b[64], when[48] = "", name[64];
	bool issue = m->async && m->start == step && m->at != step;
	if (m->async && !issue)
		snprintf(when, sizeof when, ", issued before step %d", m->start);
	else if (issue && m->share && m->at > m->start + 1)
		snprintf(when, sizeof when, ", over steps %d-%d", m->start, m->at - 1);
	fprintf(f, "%5s %10s    %s %s to %s (%s, %s%s)", "", "", issue ? "start moving" : m->async ? "wait for" : "move",
	        short_name(m->t->name, 56, name, sizeof name), tier_name(m->to->tier), fmt_bytes(m->t->bytes, b, sizeof b),
	        m->async ? "async" : "sync", when);
	/* the reason once, where the move starts */
	if (why && (!m->async || issue || m->start == m->at))
		fprintf(f, ": %s", why);
	fputc('\n', f);
}

/* A recompute line: what its kernel makes, and for which tensor when that is scratch. */
static void table_recompute(FILE *f, const Recompute *rc, double seconds, const char *why)
{
	const Node *n = rc->node;
	bool last = n == rc->t->producer;
	char b[64];
	fprintf(f, "%5s %10s    recompute ", "", "");
	if (last)
		fputs(short_name(rc->t->name, 56, b, sizeof b), f);
	else
		for (int k = 0; k < n->nout; k++)
			fprintf(f, "%s%s", k ? ", " : "", short_name(n->out[k]->name, 56, b, sizeof b));
	if (!last)
		fprintf(f, " for %s", short_name(rc->t->name, 56, b, sizeof b));
	fprintf(f, " (%s %s, %s%.3f ms)", op_info[n->op].name, short_name(n->name, 56, b, sizeof b),
	        last ? "" : "scratch, ", seconds * 1e3);
	if (why && last)
		fprintf(f, ": %s", why);
	fputc('\n', f);
}

void schedule_table(FILE *f, const Graph *g, const Placement *p, const Timeline *tl, const CostModel *cm)
{
	const Schedule *s = p->s;
	(void)g;
	Arena a = {0};
	int64_t *fast = arena_array(&a, (size_t)s->n + 1, sizeof(int64_t));
	int64_t *slow = arena_array(&a, (size_t)s->n + 1, sizeof(int64_t));
	tier_usage(p, fast, slow);
	const Reasons *why = plan_reasons(p, cm, fast, &a);
	char b[64];
	fprintf(f, "%5s %10s  %-24s %s\n", "step", "time ms", "op", "kernel: arguments (tier)");
	for (int step = 0; step < s->n; step++) {
		/* in the order they run: moves that finish here, recomputes, asynchronous moves issued here */
		for (int i = 0; i < p->moves.n; i++)
			if (p->moves.v[i].at == step)
				table_move(f, &p->moves.v[i], step, why->move[i]);
		for (int i = 0; i < p->recomputes.n; i++)
			if (p->recomputes.v[i].at == step)
				table_recompute(f, &p->recomputes.v[i], tl->recompute_time[i], why->recompute[i]);
		for (int i = 0; i < p->moves.n; i++) {
			const Move *m = &p->moves.v[i];
			if (m->async && m->start == step && m->at != step)
				table_move(f, m, step, why->move[i]);
		}
		const Node *n = s->order[step];
		char lb[48];
		fprintf(f, "%5d %10.3f  %-24s %s:", step, tl->step_time[step] * 1e3, node_op_label(n, lb, sizeof lb),
		        short_name(n->name, 56, b, sizeof b));
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			const Residency *r = placement_at(p, t, step);
			fprintf(f, "%s%s(%c)", k == 0 ? " " : k == n->nin ? " -> " : ", ", short_name(t->name, 56, b, sizeof b),
			        r && r->tier == TIER_SLOW ? 'S' : 'F');
		}
		fputc('\n', f);
	}
	arena_free(&a);
}

/* Seconds of all of p's recomputes. */
static double recompute_seconds(const Placement *p, const CostModel *cm)
{
	double sum = 0;
	for (int i = 0; i < p->recomputes.n; i++)
		sum += placement_recompute_time(p, cm, &p->recomputes.v[i]);
	return sum;
}

/* The steps whose convolution algorithm is one of cuDNN's nondeterministic ones (--nondeterministic). */
static int nondeterministic_steps(const Placement *p)
{
	int n = 0;
	for (int step = 0; p->algo && step < p->s->n; step++)
		n += p->algo[step] && p->algo[step]->nondeterministic;
	return n;
}

static cJSON *num(double v)
{
	return cJSON_CreateNumber(v);
}

void schedule_json(FILE *f, const Graph *g, const Placement *p, const Timeline *tl, const CostModel *cm,
                   const PlaceStats *st)
{
	const Schedule *s = p->s;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", g->model);
	cJSON_AddStringToObject(root, "precision", precision_name(g->precision));
	cJSON_AddStringToObject(root, "optimizer", placement_name(p));
	cJSON_AddStringToObject(root, "times", cm->source);
	cJSON_AddBoolToObject(root, "modeled", cm->modeled);
	cJSON_AddNumberToObject(root, "limit", (double)p->limit);
	cJSON_AddNumberToObject(root, "fast_pool_bytes", (double)p->fast_bytes);
	cJSON_AddNumberToObject(root, "workspace_bytes", (double)p->workspace);
	cJSON_AddBoolToObject(root, "workspaces_in_pool", p->algo && p->ws_in_pool);
	cJSON_AddNumberToObject(root, "scratch_bytes", (double)place_kernel_scratch(s, cm));
	cJSON_AddNumberToObject(root, "slow_pool_bytes", (double)p->slow_bytes);
	cJSON_AddNumberToObject(root, "peak_live_bytes", (double)s->peak);
	cJSON_AddNumberToObject(root, "predicted_seconds", tl->total);
	cJSON_AddNumberToObject(root, "nondeterministic_kernels", nondeterministic_steps(p));
	cJSON *steps = cJSON_AddArrayToObject(root, "steps");
	for (int step = 0; step < s->n; step++) {
		const Node *n = s->order[step];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "step", step);
		cJSON_AddStringToObject(o, "kernel", n->name);
		cJSON_AddStringToObject(o, "op", op_info[n->op].name);
		cJSON_AddNumberToObject(o, "start_seconds", tl->kernel_start[step]);
		cJSON_AddNumberToObject(o, "kernel_seconds", tl->kernel_time[step]);
		cJSON_AddNumberToObject(o, "step_seconds", tl->step_time[step]);
		if (p->algo && p->algo[step]) {
			cJSON_AddStringToObject(o, "algorithm", p->algo[step]->name);
			cJSON_AddNumberToObject(o, "workspace_bytes", (double)p->algo[step]->workspace);
			if (p->ws_offset && p->ws_offset[step] >= 0)
				cJSON_AddNumberToObject(o, "workspace_offset", (double)p->ws_offset[step]);
			cJSON_AddBoolToObject(o, "nondeterministic", p->algo[step]->nondeterministic);
		}
		if (p->rc_ws_offset && p->rc_ws_offset[step] >= 0) {
			cJSON_AddNumberToObject(o, "recompute_workspace_bytes", (double)placement_boundary_ws(p, step));
			cJSON_AddNumberToObject(o, "recompute_workspace_offset", (double)p->rc_ws_offset[step]);
		}
		cJSON *args = cJSON_AddArrayToObject(o, "arguments");
		for (int k = 0; k < n->nin + n->nout; k++) {
			const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
			const Residency *r = placement_at(p, t, step);
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "tensor", t->name);
			cJSON_AddStringToObject(a, "role", k < n->nin ? "input" : "output");
			cJSON_AddStringToObject(a, "tier", tier_name(r->tier));
			cJSON_AddNumberToObject(a, "bytes", (double)t->bytes);
			cJSON_AddNumberToObject(a, "offset", (double)r->offset);
			cJSON_AddItemToArray(args, a);
		}
		cJSON_AddItemToArray(steps, o);
	}
	Arena ra = {0};
	int64_t *fast = arena_array(&ra, (size_t)s->n + 1, sizeof(int64_t));
	int64_t *slow = arena_array(&ra, (size_t)s->n + 1, sizeof(int64_t));
	tier_usage(p, fast, slow); /* the reasons' and tier_bytes' */
	const Reasons *why = plan_reasons(p, cm, fast, &ra);
	cJSON *moves = cJSON_AddArrayToObject(root, "moves");
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "tensor", m->t->name);
		cJSON_AddNumberToObject(o, "bytes", (double)m->t->bytes);
		cJSON_AddStringToObject(o, "from", tier_name(m->from->tier));
		cJSON_AddStringToObject(o, "to", tier_name(m->to->tier));
		cJSON_AddStringToObject(o, "kind", m->async ? "async" : "sync");
		cJSON_AddNumberToObject(o, "before_step", m->at);
		if (m->async)
			cJSON_AddNumberToObject(o, "issued_before_step", m->start);
		if (m->share) { /* the fraction of it copied during each kernel from issued_before_step on */
			cJSON *sh = cJSON_AddArrayToObject(o, "shares");
			for (int k = m->start; k < m->at; k++)
				cJSON_AddItemToArray(sh, num(m->share[k - m->start]));
		}
		cJSON_AddItemToObject(o, "start_seconds", num(tl->move_start[i]));
		cJSON_AddItemToObject(o, "seconds", num(tl->move_time[i]));
		cJSON_AddStringToObject(o, "reason", why->move[i]);
		cJSON_AddItemToArray(moves, o);
	}
	MoveStats ms = placement_stats(p);
	double rtime = 0;
	cJSON *recomputes = cJSON_AddArrayToObject(root, "recomputes");
	for (int i = 0; i < p->recomputes.n; i++) {
		const Recompute *rc = &p->recomputes.v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "tensor", rc->t->name);
		cJSON_AddStringToObject(o, "kernel", rc->node->name);
		cJSON_AddStringToObject(o, "op", op_info[rc->node->op].name);
		cJSON_AddNumberToObject(o, "step", rc->step);
		cJSON_AddNumberToObject(o, "before_step", rc->at);
		cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
		for (int k = 0; k < rc->node->nout; k++)
			cJSON_AddItemToArray(outs, cJSON_CreateString(rc->node->out[k]->name));
		cJSON_AddBoolToObject(o, "scratch", rc->node != rc->t->producer);
		cJSON_AddItemToObject(o, "start_seconds", num(tl->recompute_start[i]));
		cJSON_AddItemToObject(o, "seconds", num(tl->recompute_time[i]));
		cJSON_AddStringToObject(o, "reason", why->recompute[i]);
		cJSON_AddItemToArray(recomputes, o);
		rtime += tl->recompute_time[i];
	}
	if (st && st->ratio_limit > 0 && p->limit > st->ratio_limit) {
		cJSON_AddNumberToObject(root, "ratio_limit", (double)st->ratio_limit);
		cJSON_AddStringToObject(root, "ratio_limit_why", st->ratio_why);
	}
	cJSON_AddNumberToObject(root, "in_place_outputs", ms.nin_place);
	cJSON_AddNumberToObject(root, "in_place_bytes", (double)ms.bytes_in_place);
	cJSON_AddNumberToObject(root, "offloaded_tensors", ms.noffloaded);
	cJSON_AddNumberToObject(root, "offloaded_bytes", (double)ms.bytes_offloaded);
	cJSON_AddNumberToObject(root, "recomputed_tensors", ms.nrecomputed);
	cJSON_AddNumberToObject(root, "recompute_kernels", ms.nrecompute_kernels);
	cJSON_AddNumberToObject(root, "recompute_seconds", rtime);
	if (optimizer_has(p->optimizer, OFLAG_SEGMENTS))
		cJSON_AddNumberToObject(root, "segments", st->segments);
	cJSON *usage = cJSON_AddArrayToObject(root, "tier_bytes");
	for (int step = 0; step < s->n; step++) {
		cJSON *pair = cJSON_CreateArray();
		cJSON_AddItemToArray(pair, num((double)fast[step]));
		cJSON_AddItemToArray(pair, num((double)slow[step]));
		cJSON_AddItemToArray(usage, pair);
	}
	char *solver = schedule_solver_json(st);
	if (solver) {
		cJSON *x = cJSON_Parse(solver);
		if (x)
			cJSON_AddItemToObject(root, "solver", x);
		free(solver);
	}
	arena_free(&ra);
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		fatal_sys("out of memory");
	fputs(text, f);
	fputc('\n', f);
	free(text);
}

static cJSON *trace_event(cJSON *events, const char *name, const char *cat, double start, double dur, int tid)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(e, "cat", cat);
	cJSON_AddStringToObject(e, "ph", "X");
	cJSON_AddNumberToObject(e, "ts", start * 1e6);
	cJSON_AddNumberToObject(e, "dur", dur * 1e6);
	cJSON_AddNumberToObject(e, "pid", 1);
	cJSON_AddNumberToObject(e, "tid", tid);
	cJSON_AddItemToArray(events, e);
	return e;
}

static void lane_name(cJSON *events, int tid, const char *name)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", "thread_name");
	cJSON_AddStringToObject(e, "ph", "M");
	cJSON_AddNumberToObject(e, "pid", 1);
	cJSON_AddNumberToObject(e, "tid", tid);
	cJSON *args = cJSON_AddObjectToObject(e, "args");
	cJSON_AddStringToObject(args, "name", name);
	cJSON_AddItemToArray(events, e);
}

/*
 * A counter track of the tiers' bytes (tier_usage, as --plot draws them):
 * each step's at its kernel's start, and the last again at the step's end,
 * which trace viewers (Perfetto, chrome://tracing) draw as a graph.
 */
static void trace_tiers(cJSON *events, const Placement *p, const Timeline *tl)
{
	int n = p->s->n;
	int64_t *fast = xcalloc((size_t)n + 1, sizeof(int64_t)), *slow = xcalloc((size_t)n + 1, sizeof(int64_t));
	tier_usage(p, fast, slow);
	for (int step = 0; step <= n && n > 0; step++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", "tier bytes");
		cJSON_AddStringToObject(e, "ph", "C");
		cJSON_AddNumberToObject(e, "ts", (step < n ? tl->kernel_start[step] : tl->total) * 1e6);
		cJSON_AddNumberToObject(e, "pid", 1);
		cJSON *args = cJSON_AddObjectToObject(e, "args");
		cJSON_AddNumberToObject(args, "fast", (double)fast[step < n ? step : n - 1]);
		cJSON_AddNumberToObject(args, "slow", (double)slow[step < n ? step : n - 1]);
		cJSON_AddItemToArray(events, e);
	}
	free(fast);
	free(slow);
}

bool schedule_trace(const char *path, const Graph *g, const Placement *p, const Timeline *tl)
{
	enum { LANE_KERNELS = 1, LANE_TO_SLOW = 2, LANE_TO_FAST = 3 };
	cJSON *root = cJSON_CreateObject();
	cJSON *events = cJSON_AddArrayToObject(root, "traceEvents");
	lane_name(events, LANE_KERNELS, "kernels and recomputes");
	lane_name(events, LANE_TO_SLOW, "moves to slow");
	lane_name(events, LANE_TO_FAST, "moves to fast");
	for (int step = 0; step < p->s->n; step++) {
		const Node *n = p->s->order[step];
		trace_event(events, n->name, op_info[n->op].name, tl->kernel_start[step], tl->kernel_time[step],
		            LANE_KERNELS);
	}
	for (int i = 0; i < p->recomputes.n; i++) { /* on the compute stream, before their step's kernel */
		const Recompute *rc = &p->recomputes.v[i];
		cJSON *e = trace_event(events, rc->node->name, "recompute", tl->recompute_start[i], tl->recompute_time[i],
		                       LANE_KERNELS);
		cJSON *args = cJSON_AddObjectToObject(e, "args");
		cJSON_AddStringToObject(args, "tensor", rc->t->name);
		cJSON_AddStringToObject(args, "op", op_info[rc->node->op].name);
		cJSON_AddNumberToObject(args, "before_step", rc->at);
	}
	for (int i = 0; i < p->moves.n; i++) {
		const Move *m = &p->moves.v[i];
		cJSON *e = trace_event(events, m->t->name, m->async ? "async move" : "sync move", tl->move_start[i],
		                       tl->move_time[i], m->to->tier == TIER_FAST ? LANE_TO_FAST : LANE_TO_SLOW);
		cJSON *args = cJSON_AddObjectToObject(e, "args");
		cJSON_AddNumberToObject(args, "bytes", (double)m->t->bytes);
		cJSON_AddStringToObject(args, "to", tier_name(m->to->tier));
		cJSON_AddNumberToObject(args, "issued_before_step", m->start);
		cJSON_AddNumberToObject(args, "done_before_step", m->at);
	}
	trace_tiers(events, p, tl);
	cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
	cJSON *meta = cJSON_AddObjectToObject(root, "otherData");
	cJSON_AddStringToObject(meta, "model", g->model);
	cJSON_AddStringToObject(meta, "placement", placement_name(p));
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		fatal_sys("out of memory");
	char err[512];
	bool ok = outfile_write(path, text, strlen(text), err, sizeof err);
	free(text);
	if (!ok)
		error_plain("%s", err);
	return ok;
}

/* A horizontal line at `bytes` across the plot, labelled at the left (or the right) in `color`, dashed as dt. */
static void plot_level(FILE *f, int64_t bytes, const char *label, bool right, const char *color, int dt)
{
	double mib = (double)bytes / 1048576.0;
	fprintf(f, "set arrow from graph 0, first %g to graph 1, first %g nohead dt %d lc rgb '%s'\n", mib, mib, dt, color);
	fprintf(f, "set label \"%s\" at graph %s, first %g %s offset 0,0.7 tc rgb '%s' noenhanced\n", label,
	        right ? "0.99" : "0.01", mib, right ? "right" : "left", color);
}

bool schedule_plot(const char *path, const Graph *g, const Placement *p, int64_t scratch)
{
	Plot pl;
	if (!plot_open(&pl, path, 1100, 500, "autotmc"))
		return false;
	const Schedule *s = p->s;
	int64_t *fast = xcalloc((size_t)s->n + 1, sizeof(int64_t)), *slow = xcalloc((size_t)s->n + 1, sizeof(int64_t));
	tier_usage(p, fast, slow);
	FILE *f = pl.f;
	fprintf(f, "set title \"tier usage over the training step: %s, placement %s\" noenhanced\n", g->model,
	        placement_name(p));
	fprintf(f, "set xlabel 'step'\nset ylabel 'MiB'\nset key top left\nset grid\n");
	/* the y range holds the limit and the pool lines too (checkpoint's limit is far above its tiers) */
	double top = (double)(p->limit > p->fast_bytes ? p->limit : p->fast_bytes);
	for (int step = 0; step < s->n; step++)
		top = fmax(top, (double)(fast[step] > slow[step] ? fast[step] : slow[step]));
	fprintf(f, "set yrange [0:%g]\n", top * 1.1 / 1048576.0 + 1e-3);
	char b[64], label[128];
	if (p->limit > 0)
		plot_level(f, p->limit, "fast limit", false, "red", 2);
	if (p->limit > 0 && scratch > 0 && scratch < p->limit) {
		snprintf(label, sizeof label, "the tensors' limit (beside the kernels' scratch, %s)",
		         fmt_bytes(scratch, b, sizeof b));
		plot_level(f, p->limit - scratch, label, false, "orange", 4);
	}
	if (p->fast_bytes > 0 && p->fast_bytes != p->limit)
		plot_level(f, p->fast_bytes, "fast pool (packed)", true, "gray40", 3);
	fprintf(f, "plot '-' using 1:2 with steps lw 2 title 'fast', '-' using 1:2 with steps lw 2 title 'slow'\n");
	for (int tier = 0; tier < 2; tier++) {
		for (int step = 0; step < s->n; step++)
			fprintf(f, "%d %.6f\n", step, (double)(tier ? slow : fast)[step] / 1048576.0);
		fprintf(f, "e\n");
	}
	free(fast);
	free(slow);
	return plot_close(&pl);
}

/*
 * Whether the cost model times every kernel within 5% with all its
 * arguments in the slow tier (a slow tier that measures as the fast one:
 * a file in the page cache), where a placement rightly moves nothing.
 */
static bool tiers_alike(const Schedule *s, const CostModel *cm)
{
	for (int k = 0; k < s->n; k++) {
		const Node *n = s->order[k];
		uint32_t all = (uint32_t)((UINT64_C(1) << (n->nin + n->nout)) - 1);
		if (cm->kernel_time(cm, n, all) > 1.05 * cm->kernel_time(cm, n, 0) + 1e-7)
			return false;
	}
	return true;
}

/* The memory plan against its lower bound (the fragmentation). */
void schedule_plan(FILE *f, const Schedule *s, const Placement *p, const CostModel *cm, const PlaceStats *st,
                   Arena *a)
{
	char b1[64], b2[64], b3[64];
	int64_t bound = memplan_fast_peak(p, a), scratch = place_kernel_scratch(s, cm);
	MoveStats ms = placement_stats(p);
	char spanning[48] = "";
	if (ms.nspanning)
		snprintf(spanning, sizeof spanning, ", %d over several kernels", ms.nspanning);
	char prec[16] = "";
	if (s->precision != PREC_FP32)
		snprintf(prec, sizeof prec, " in %s", precision_name(s->precision));
	fprintf(f, "placement: %s%s; %d moves (%d async%s), %s to fast, %s to slow\n", placement_name(p), prec,
	        ms.nmoves, ms.nasync, spanning, fmt_bytes(ms.bytes_to_fast, b1, sizeof b1),
	        fmt_bytes(ms.bytes_to_slow, b2, sizeof b2));
	if (ms.nmoves == 0 && p->recomputes.n == 0 && p->slow_bytes > 0 && !cm->kernels_fast && !cm->modeled &&
	    tiers_alike(s, cm))
		fprintf(f, "why no moves: the slow tier measures as fast as the fast one here (every kernel within 5%% with "
		           "its arguments there), so nothing gains from a move; --hw optane-6dimm models a slower tier\n");
	fprintf(f, "fast pool: %s for %s live at once (fragmentation %.1f%%); slow pool: %s\n",
	        fmt_bytes(p->fast_bytes, b1, sizeof b1), fmt_bytes(bound, b2, sizeof b2),
	        bound ? 100.0 * (double)(p->fast_bytes - bound) / (double)bound : 0.0,
	        fmt_bytes(p->slow_bytes, b3, sizeof b3));
	if (p->algo && p->ws_in_pool) {
		int64_t most = 0;
		for (int step = 0; step < s->n; step++)
			if (placement_kernel_ws(p, step) > most)
				most = placement_kernel_ws(p, step);
		fprintf(f, "convolution workspaces: in the fast pool while their kernels run (the largest %s)\n",
		        fmt_bytes(most, b1, sizeof b1));
		if (p->workspace > 0)
			fprintf(f, "kernel scratch: %s beside the fast pool\n", fmt_bytes(p->workspace, b1, sizeof b1));
	} else if (p->workspace > 0) {
		fprintf(f, "kernel workspace and scratch: %s beside the fast pool\n", fmt_bytes(p->workspace, b1, sizeof b1));
	}
	if (p->limit > 0)
		fprintf(f, "limit: %s (%.1f%% of the peak of live bytes, %s%s); pools use %.1f%% of it\n",
		        fmt_bytes(p->limit, b1, sizeof b1), 100.0 * (double)p->limit / (double)(s->peak + scratch),
		        fmt_bytes(s->peak, b2, sizeof b2),
		        scratch ? arena_printf(a, ", plus the kernels' scratch, %s", fmt_bytes(scratch, b3, sizeof b3)) : "",
		        100.0 * (double)(p->fast_bytes + p->workspace) / (double)p->limit);
	if (st && st->ratio_limit > 0 && p->limit > st->ratio_limit)
		fprintf(f, "limit raised: placed for %s, %.1f%% of the peak, not the --ratio's %s, which cannot hold the "
		           "step (%d larger limit%s tried before; --strict makes this an error): %s\n",
		        fmt_bytes(p->limit, b1, sizeof b1), 100.0 * (double)p->limit / (double)(s->peak + scratch),
		        fmt_bytes(st->ratio_limit, b2, sizeof b2), st->ratio_tried, st->ratio_tried == 1 ? "" : "s",
		        st->ratio_why);
	if (ms.nin_place > 0)
		fprintf(f, "in place: %d output%s written over %s dying input%s, %s\n", ms.nin_place,
		        ms.nin_place == 1 ? "" : "s", ms.nin_place == 1 ? "its kernel's" : "their kernels'",
		        ms.nin_place == 1 ? "" : "s", fmt_bytes(ms.bytes_in_place, b1, sizeof b1));
	if (ms.noffloaded > 0)
		fprintf(f, "offload: %d weight or optimizer state tensor%s updated in fast copies of slow homes, %s written back\n",
		        ms.noffloaded, ms.noffloaded == 1 ? "" : "s", fmt_bytes(ms.bytes_offloaded, b1, sizeof b1));
	if (ms.nrecompute_kernels > 0 || optimizer_has(p->optimizer, OFLAG_SEGMENTS)) {
		fprintf(f, "recomputation: %d tensor%s made again by %d kernel%s, %.3f ms per step", ms.nrecomputed,
		        ms.nrecomputed == 1 ? "" : "s", ms.nrecompute_kernels, ms.nrecompute_kernels == 1 ? "" : "s",
		        1e3 * recompute_seconds(p, cm));
		if (optimizer_has(p->optimizer, OFLAG_SEGMENTS))
			fprintf(f, "; %d segment%s", st->segments, st->segments == 1 ? "" : "s");
		fputc('\n', f);
	}
	if (st->nattempts > 0)
		fprintf(f, "ILP: %d rows, %d columns, %d integers, %ld nonzeros; built in %.2f s, solved in %.2f s; "
		           "%.2f s in all (%d attempt%s), %s, gap %.2f%%\n",
		        st->rows, st->cols, st->integers, st->nonzeros, st->creation_time, st->solve_time, st->total_time,
		        st->nattempts, st->nattempts == 1 ? "" : "s", st->status ? st->status : "?", 100.0 * st->gap);
	if (st->nattempts > 0 && st->start_name)
		fprintf(f, "started from: %s's placement, %.3f ms\n", st->start_name, 1e3 * st->start_time);
	if (st->nattempts > 0 && st->lns_solves > 0) {
		char jobs[32] = "";
		if (st->lns_jobs > 1)
			snprintf(jobs, sizeof jobs, " (%d at once)", st->lns_jobs);
		fprintf(f, "neighbourhoods: %d re-solves in %.1f s%s, %d better, %.3f ms off the start's %.3f ms%s\n",
		        st->lns_solves, st->lns_time, jobs, st->lns_better, 1e3 * st->lns_gain, 1e3 * st->lns_start,
		        st->lns_stopped    ? "; then the whole program, stopped at its time limit"
		        : st->lns_bound    ? "; then the whole program"
		        : st->lns_extended ? "; still improving, so the whole program's time too"
		                           : "");
	}
	if (st->nattempts > 0 && st->repaired)
		fprintf(f, "fragmentation: the solution did not pack; %d re-solve%s around its overflow made it pack, "
		           "adding %.3f ms\n",
		        st->repairs, st->repairs == 1 ? "" : "s", 1e3 * st->repair_cost);
	if (st->nattempts > 0 && st->spans_dropped > 0)
		fprintf(f, "moves that span kernels: left out (that program has %ld nonzeros, more than %d; --span K "
		           "asks for them)\n", st->spans_dropped, PLACE_SPAN_MAX_NONZEROS);
	if (optimizer_has(p->optimizer, OFLAG_MANAGED)) {
		fprintf(f, "predicted step time: none (unified memory: the driver pages on demand)\n");
		return;
	}
	double t = placement_predict(p, cm, NULL), all_fast = 0;
	fprintf(f, "predicted step time: %.3f ms (%s)\n", 1e3 * t, cm->source);
	for (int k = 0; k < s->n; k++)
		all_fast += cm->kernel_time(cm, s->order[k], 0);
	if (p->limit > 0 && all_fast > 0)
		fprintf(f, "against all-fast: %.3f ms, %+.1f%% (every kernel with its arguments fast, nothing moved); %s moved, "
		           "%.3f ms recomputed\n", 1e3 * all_fast, 100 * (t / all_fast - 1),
		        fmt_bytes(ms.bytes_to_fast + ms.bytes_to_slow, b1, sizeof b1), 1e3 * recompute_seconds(p, cm));
}

/* The object as compact JSON (free() it), the object deleted. */
static char *json_text(cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		fatal_sys("out of memory");
	return text;
}

char *schedule_solver_json(const PlaceStats *st)
{
	if (st->nattempts == 0)
		return NULL;
	cJSON *s = cJSON_CreateObject();
	cJSON_AddNumberToObject(s, "rows", st->rows);
	cJSON_AddNumberToObject(s, "columns", st->cols);
	cJSON_AddNumberToObject(s, "integers", st->integers);
	cJSON_AddNumberToObject(s, "nonzeros", (double)st->nonzeros);
	cJSON_AddNumberToObject(s, "creation_seconds", st->creation_time);
	cJSON_AddNumberToObject(s, "solve_seconds", st->solve_time);
	cJSON_AddNumberToObject(s, "total_seconds", st->total_time);
	cJSON_AddNumberToObject(s, "objective_seconds", st->objective);
	cJSON_AddNumberToObject(s, "gap", st->gap);
	cJSON_AddNumberToObject(s, "attempts", st->nattempts);
	if (st->spans_dropped > 0)
		cJSON_AddNumberToObject(s, "spans_left_out_nonzeros", (double)st->spans_dropped);
	if (st->start_name) {
		cJSON_AddStringToObject(s, "start", st->start_name);
		cJSON_AddNumberToObject(s, "start_seconds", st->start_time);
	}
	if (st->lns_solves > 0) {
		cJSON *n = cJSON_AddObjectToObject(s, "neighbourhoods");
		cJSON_AddNumberToObject(n, "solves", st->lns_solves);
		cJSON_AddNumberToObject(n, "better", st->lns_better);
		cJSON_AddNumberToObject(n, "jobs", st->lns_jobs);
		cJSON_AddNumberToObject(n, "merged", st->lns_merges);
		cJSON_AddNumberToObject(n, "seconds", st->lns_time);
		cJSON_AddNumberToObject(n, "start_objective_seconds", st->lns_start);
		cJSON_AddNumberToObject(n, "gain_seconds", st->lns_gain);
		cJSON_AddBoolToObject(n, "whole_program_after", st->lns_bound);
		cJSON_AddBoolToObject(n, "whole_program_stopped", st->lns_stopped);
		cJSON_AddBoolToObject(n, "extended", st->lns_extended);
	}
	if (st->repairs > 0) {
		cJSON *rp = cJSON_AddObjectToObject(s, "repair");
		cJSON_AddNumberToObject(rp, "solves", st->repairs);
		cJSON_AddBoolToObject(rp, "packed", st->repaired);
		cJSON_AddNumberToObject(rp, "cost_seconds", st->repaired ? st->repair_cost : 0);
	}
	cJSON_AddStringToObject(s, "status", st->status ? st->status : "");
	return json_text(s);
}

char *schedule_record(const Graph *g, const Schedule *s, const Placement *p, const CostModel *cm,
                      const PlaceStats *st, TargetId target, const char *source, Arena *a)
{
	MoveStats ms = placement_stats(p);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "model", g->model);
	cJSON_AddStringToObject(r, "source", source);
	cJSON_AddStringToObject(r, "optimizer", placement_name(p));
	cJSON_AddStringToObject(r, "precision", precision_name(g->precision));
	cJSON_AddNumberToObject(r, "num_nodes", g->nodes.n);
	cJSON_AddNumberToObject(r, "peak_live_bytes", (double)s->peak);
	cJSON_AddNumberToObject(r, "fast_pool_lower_bound", (double)memplan_fast_peak(p, a));
	cJSON_AddNumberToObject(r, "num_move_nodes", ms.nmoves);
	cJSON_AddNumberToObject(r, "bytes_moved", (double)ms.bytes);
	cJSON_AddNumberToObject(r, "bytes_moved_dram", (double)ms.bytes_to_fast);
	cJSON_AddNumberToObject(r, "bytes_moved_pmem", (double)ms.bytes_to_slow);
	cJSON_AddNumberToObject(r, "num_async_move_nodes", ms.nasync);
	cJSON_AddNumberToObject(r, "num_spanning_moves", ms.nspanning);
	cJSON_AddNumberToObject(r, "bytes_async_moved", (double)ms.bytes_async);
	cJSON_AddNumberToObject(r, "num_in_place", ms.nin_place);
	cJSON_AddNumberToObject(r, "num_offloaded", ms.noffloaded);
	cJSON_AddNumberToObject(r, "num_recomputed", ms.nrecomputed);
	cJSON_AddNumberToObject(r, "num_recompute_kernels", ms.nrecompute_kernels);
	cJSON_AddNumberToObject(r, "recompute_time", recompute_seconds(p, cm));
	cJSON_AddNumberToObject(r, "nondeterministic_kernels", nondeterministic_steps(p));
	if (optimizer_has(p->optimizer, OFLAG_SEGMENTS))
		cJSON_AddNumberToObject(r, "segments", st->segments);
	cJSON_AddNumberToObject(r, "dram_limit", (double)p->limit);
	if (p->workspace > 0)
		cJSON_AddNumberToObject(r, "workspace_bytes", (double)p->workspace);
	cJSON_AddStringToObject(r, "times", cm->source);
	cJSON_AddBoolToObject(r, "modeled", cm->modeled);
	if (!optimizer_has(p->optimizer, OFLAG_MANAGED)) /* the driver's paging is not modeled */
		cJSON_AddNumberToObject(r, "predicted_runtime", placement_predict(p, cm, NULL));
	cJSON_AddStringToObject(r, "compiled_for", target_info[target].name);
	if (st->nattempts > 0) {
		cJSON *ct = cJSON_AddArrayToObject(r, "creation_times"), *ot = cJSON_AddArrayToObject(r, "optimization_times");
		for (int i = 0; i < st->nattempts; i++) {
			cJSON_AddItemToArray(ct, cJSON_CreateNumber(st->creation_times[i]));
			cJSON_AddItemToArray(ot, cJSON_CreateNumber(st->optimization_times[i]));
		}
		cJSON_AddNumberToObject(r, "ilp_total_seconds", st->total_time);
		cJSON_AddNumberToObject(r, "ilp_rows", st->rows);
		cJSON_AddNumberToObject(r, "ilp_columns", st->cols);
		cJSON_AddNumberToObject(r, "ilp_integers", st->integers);
		cJSON_AddNumberToObject(r, "ilp_nonzeros", (double)st->nonzeros);
		cJSON_AddNumberToObject(r, "ilp_objective", st->objective);
		cJSON_AddNumberToObject(r, "ilp_gap", st->gap);
		cJSON_AddStringToObject(r, "ilp_status", st->status ? st->status : "");
	}
	char *text = json_text(r);
	char *copy = arena_strdup(a, text);
	free(text);
	return copy;
}
