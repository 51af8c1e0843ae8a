/*
 * place_baselines.c - placements that need no solver.
 *
 * all-fast: every tensor in the fast tier over its live interval, the
 * reference every other placement is compared with. spill-all: a test
 * placement that moves every activation through the slow tier, so that
 * the move machinery of code generation and runtime is exercised on every
 * tensor of a model; training results must be bitwise those of all-fast.
 * all-slow: every tensor in the slow tier (nothing needs to be fast).
 * first-touch: what a NUMA system's first-touch page policy gives, the
 * baseline AutoTM compared with (docs/placement.md). checkpoint: PyTorch's
 * checkpoint_sequential, every tensor fast and the activations inside all
 * segments but the last recomputed before the segment's backward.
 */
#include "place.h"

#include <stdio.h>

#include "recompute.h"
#include "util.h"

Placement *place_all_fast(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_ALL_FAST);
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], TIER_FAST, s->live[i].first, s->live[i].last);
	return p;
}

Placement *place_all_slow(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_ALL_SLOW);
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], TIER_SLOW, s->live[i].first, s->live[i].last);
	return p;
}

static int64_t pages(int64_t bytes)
{
	return (bytes + PLACE_PAGE - 1) / PLACE_PAGE * PLACE_PAGE;
}

Placement *place_first_touch_walk(const Graph *g, const Schedule *s, int64_t budget, int64_t limit, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_FIRST_TOUCH);
	p->limit = limit;
	Tier *tier = arena_array(a, (size_t)g->tensors.n + 1, sizeof(Tier));
	int64_t used = 0;
	/* what lives before the first kernel: weights, optimizer state, input, labels */
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->producer)
			continue;
		tier[i] = used + pages(t->bytes) <= budget ? TIER_FAST : TIER_SLOW;
		if (tier[i] == TIER_FAST)
			used += pages(t->bytes);
	}
	for (int step = 0; step < s->n; step++) {
		/* pages of tensors whose last use was the previous step are free again */
		for (int i = 0; step > 0 && i < g->tensors.n; i++)
			if (s->live[i].last == step - 1 && tier[i] == TIER_FAST)
				used -= pages(g->tensors.v[i]->bytes);
		const Node *n = s->order[step];
		for (int k = 0; k < n->nout; k++) {
			const Tensor *t = n->out[k];
			tier[t->id] = used + pages(t->bytes) <= budget ? TIER_FAST : TIER_SLOW;
			if (tier[t->id] == TIER_FAST)
				used += pages(t->bytes);
		}
	}
	for (int i = 0; i < g->tensors.n; i++)
		placement_add(p, a, g->tensors.v[i], tier[i], s->live[i].first, s->live[i].last);
	return p;
}

Placement *place_spill_all(const Graph *g, const Schedule *s, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_SPILL_ALL);
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		Interval iv = s->live[i];
		if (t->kind != TENSOR_ACTIVATION || t->users.n == 0 || t == g->loss) {
			placement_add(p, a, t, TIER_FAST, iv.first, iv.last);
			continue;
		}
		/* written fast by its producer, then to slow, then back before each user */
		Residency *made = placement_add(p, a, t, TIER_FAST, iv.first, iv.first);
		Residency *slow = placement_add(p, a, t, TIER_SLOW, iv.first + 1, iv.last);
		placement_move(p, a, made, slow, iv.first + 1);
		int prev = -1;
		for (int u = 0; u < t->users.n; u++) {
			int step = s->pos[t->users.v[u]->id];
			if (step == prev)
				continue; /* a node reading the tensor twice needs one copy */
			prev = step;
			Residency *back = placement_add(p, a, t, TIER_FAST, step, step);
			placement_move(p, a, slow, back, step);
		}
	}
	/* moves in order of the step they precede (stable: spills before read-backs) */
	for (int i = 1; i < p->moves.n; i++)
		for (int j = i; j > 0 && p->moves.v[j - 1].at > p->moves.v[j].at; j--) {
			Move m = p->moves.v[j];
			p->moves.v[j] = p->moves.v[j - 1];
			p->moves.v[j - 1] = m;
		}
	return p;
}

int place_forward_steps(const Schedule *s)
{
	int f = 0;
	while (f < s->n && op_info[s->order[f]->op].grad)
		f++;
	return f;
}

void place_checkpoint_starts(const Schedule *s, int segments, bool balanced, int *first)
{
	int fwd = place_forward_steps(s);
	int size = fwd / segments; /* as checkpoint_sequential: the last segment takes the rest */
	for (int k = 0; k < segments; k++)
		first[k] = k * size;
	first[segments] = fwd;
	if (!balanced)
		return;
	double total = 0, sum = 0;
	for (int st = 0; st < fwd; st++)
		for (int i = 0; i < s->order[st]->nout; i++)
			total += (double)s->order[st]->out[i]->bytes;
	for (int st = 0, k = 1; st < fwd && k < segments; st++) {
		for (int i = 0; i < s->order[st]->nout; i++)
			sum += (double)s->order[st]->out[i]->bytes;
		while (k < segments && sum >= total * k / segments) {
			first[k] = st + 1;
			k++;
		}
	}
	for (int k = 1; k < segments; k++) /* a run of at least one kernel each */
		if (first[k] <= first[k - 1])
			first[k] = first[k - 1] + 1;
	for (int k = segments - 1; k > 0; k--)
		if (first[k] >= first[k + 1])
			first[k] = first[k + 1] - 1;
}

Placement *place_checkpoint_segments(const Graph *g, const Schedule *s, int segments, bool lazy, int64_t least,
                                     Arena *a)
{
	return place_checkpoint_runs(g, s, segments, false, lazy, least, a);
}

Placement *place_checkpoint_runs(const Graph *g, const Schedule *s, int segments, bool balanced, bool lazy,
                                 int64_t least, Arena *a)
{
	Placement *p = placement_new(g, s, a, OPT_CHECKPOINT);
	int fwd = place_forward_steps(s);
	if (segments > fwd)
		segments = fwd > 0 ? fwd : 1;
	if (segments < 1)
		segments = 1;
	int *first = arena_array(a, (size_t)segments + 1, sizeof(int));
	place_checkpoint_starts(s, segments, balanced, first);
	int *seg = arena_array(a, (size_t)s->n + 1, sizeof(int)); /* step -> its segment; -1: not checkpointed */
	for (int st = 0, k = 0; st < s->n; st++) {
		while (k < segments && st >= first[k + 1])
			k++;
		seg[st] = st < first[segments - 1] ? k : -1;
	}
	/*
	 * A tensor made in a checkpointed segment is kept when a forward kernel
	 * of a later segment reads it (the segment's output, or a skip
	 * connection); otherwise it is dropped after its last forward use and
	 * made again, with every other dropped tensor of its segment, before
	 * the segment's first backward kernel that reads one of them.
	 */
	int nt = g->tensors.n;
	bool *drop = arena_array(a, (size_t)nt + 1, sizeof(bool));
	int *last_fwd = arena_array(a, (size_t)nt + 1, sizeof(int));
	int *at = arena_array(a, (size_t)nt + 1, sizeof(int));     /* tensor -> where it is made again */
	int *back = arena_array(a, (size_t)segments + 1, sizeof(int)); /* segment -> its first backward use */
	for (int i = 0; i < segments; i++)
		back[i] = s->n;
	for (int i = 0; i < nt; i++) {
		const Tensor *t = g->tensors.v[i];
		if (!recompute_candidate(t) || t == g->loss || seg[s->pos[t->producer->id]] < 0 || t->bytes <= least)
			continue;
		int k = seg[s->pos[t->producer->id]], end = first[k + 1];
		bool crosses = false;
		last_fwd[i] = s->pos[t->producer->id];
		at[i] = s->n;
		for (int u = 0; u < t->users.n; u++) {
			int step = s->pos[t->users.v[u]->id];
			if (step < fwd && step >= end)
				crosses = true;
			else if (step < fwd && step > last_fwd[i])
				last_fwd[i] = step;
			else if (step >= fwd && step < at[i])
				at[i] = step;
		}
		if (crosses || at[i] == s->n)
			continue;
		drop[i] = true;
		if (at[i] < back[k])
			back[k] = at[i];
	}
	/*
	 * Eager (PyTorch): a segment is made again at its first backward use.
	 * Lazy: each tensor at its own first backward use, or earlier where the
	 * recompute of a dropped consumer reads it (consumers first: they come
	 * later in the forward order). A tensor without a chain there is kept.
	 */
	Chain c;
	for (int step = s->n - 1; step >= 0; step--) {
		const Node *n = s->order[step];
		for (int k = 0; k < n->nout; k++) {
			int i = n->out[k]->id;
			if (!drop[i])
				continue;
			if (!lazy)
				at[i] = back[seg[step]];
			if (!recompute_chain(s, n->out[k], at[i], &c, a)) {
				drop[i] = false;
				continue;
			}
			for (int l = 0; lazy && l < c.nleaves; l++)
				if (drop[c.leaf[l]->id] && at[c.leaf[l]->id] > at[i])
					at[c.leaf[l]->id] = at[i];
		}
	}
	/* a chain must find every dropped tensor it reads made again by then (one of an earlier segment is not) */
	for (int i = 0; i < nt; i++) {
		if (!drop[i])
			continue;
		recompute_chain(s, g->tensors.v[i], at[i], &c, a);
		for (int l = 0; l < c.nleaves && drop[i]; l++)
			if (drop[c.leaf[l]->id] && at[c.leaf[l]->id] > at[i])
				drop[i] = false;
	}
	for (int i = 0; i < nt; i++) {
		const Tensor *t = g->tensors.v[i];
		Interval iv = s->live[i];
		if (!drop[i]) {
			placement_add(p, a, t, TIER_FAST, iv.first, iv.last);
			continue;
		}
		placement_add(p, a, t, TIER_FAST, iv.first, last_fwd[i]);
		placement_recompute(p, a, t, at[i], placement_add(p, a, t, TIER_FAST, at[i], iv.last));
	}
	placement_finish(p);
	return p;
}
