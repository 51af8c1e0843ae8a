/*
 * schedule.c - a deterministic topological order and tensor liveness.
 *
 * Kahn's algorithm with a min-heap keyed by node id: a node becomes ready
 * when every tensor it reads has been produced and, if it overwrites a
 * tensor in place (the SGD updates), when every other reader of that
 * tensor has run. Since passes append nodes in an order that is already
 * topological, the result is the construction order whenever that order is
 * valid; the heap makes the choice explicit and independent of how the
 * graph was built.
 *
 * Liveness is then a sweep: each tensor is live from the step that writes
 * it to the last step that reads it, and the live bytes of every step give
 * the peak: the memory a step needs if nothing is ever moved. A kernel
 * that writes its output over a gradient (or the fused loss's logits)
 * dying there (schedule_reuse) counts the two once.
 */
#include "schedule.h"

#include "util.h"

typedef struct Heap {
	int *v; /* node ids, v[0] the smallest */
	int n;  /* entries */
} Heap;

static void heap_push(Heap *h, int x)
{
	int i = h->n++;
	h->v[i] = x;
	while (i > 0 && h->v[(i - 1) / 2] > h->v[i]) {
		int p = (i - 1) / 2, t = h->v[p];
		h->v[p] = h->v[i];
		h->v[i] = t;
		i = p;
	}
}

static int heap_pop(Heap *h)
{
	int top = h->v[0];
	h->v[0] = h->v[--h->n];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && h->v[l] < h->v[m])
			m = l;
		if (r < h->n && h->v[r] < h->v[m])
			m = r;
		if (m == i)
			break;
		int t = h->v[m];
		h->v[m] = h->v[i];
		h->v[i] = t;
		i = m;
	}
	return top;
}

/* An ordering constraint: node `from` runs before node `to`. */
typedef struct Dep { int from, to; } Dep;
typedef VEC(Dep) DepVec;

/* Every constraint: producer before reader; readers before an overwrite. */
static void collect_deps(const Graph *g, Arena *a, DepVec *deps)
{
	for (int j = 0; j < g->nodes.n; j++) {
		const Node *n = g->nodes.v[j];
		for (int k = 0; k < n->nin; k++) {
			const Tensor *t = n->in[k];
			if (t->producer)
				vec_push(a, deps, ((Dep){t->producer->id, j}));
			if (!(op_info[n->op].inplace >> k & 1))
				continue;
			for (int u = 0; u < t->users.n; u++) {
				const Node *r = t->users.v[u];
				if (r != n && !node_overwrites(r, t))
					vec_push(a, deps, ((Dep){r->id, j}));
			}
		}
	}
}

Schedule *schedule_graph(const Graph *g, Arena *a)
{
	int n = g->nodes.n;
	Schedule *s = arena_alloc(a, sizeof *s);
	s->precision = g->precision;
	s->n = n;
	s->order = arena_array(a, (size_t)n, sizeof(Node *));
	s->pos = arena_array(a, (size_t)n, sizeof(int));
	s->live = arena_array(a, (size_t)g->tensors.n, sizeof(Interval));
	s->live_bytes = arena_array(a, (size_t)(n ? n : 1), sizeof(int64_t));

	/* Successor lists in one array: succ[start[i] .. start[i+1]) follow node i. */
	DepVec deps = {0};
	collect_deps(g, a, &deps);
	int *start = arena_array(a, (size_t)n + 1, sizeof(int));
	int *succ = arena_array(a, (size_t)deps.n + 1, sizeof(int));
	int *indeg = arena_array(a, (size_t)n + 1, sizeof(int));
	for (int i = 0; i < deps.n; i++) {
		start[deps.v[i].from + 1]++;
		indeg[deps.v[i].to]++;
	}
	for (int i = 0; i < n; i++)
		start[i + 1] += start[i];
	int *fill = arena_array(a, (size_t)n + 1, sizeof(int));
	for (int i = 0; i < deps.n; i++)
		succ[start[deps.v[i].from] + fill[deps.v[i].from]++] = deps.v[i].to;

	Heap h = {arena_array(a, (size_t)n + 1, sizeof(int)), 0};
	for (int i = 0; i < n; i++)
		if (indeg[i] == 0)
			heap_push(&h, i);
	int done = 0;
	while (h.n) {
		int id = heap_pop(&h);
		s->pos[id] = done;
		s->order[done++] = g->nodes.v[id];
		for (int k = start[id]; k < start[id + 1]; k++)
			if (--indeg[succ[k]] == 0)
				heap_push(&h, succ[k]);
	}
	if (done != n)
		ICE("the graph has a cycle: %d of %d nodes scheduled", done, n);

	/* Live intervals. */
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		Interval iv = {t->producer ? s->pos[t->producer->id] : 0, 0};
		iv.last = iv.first;
		for (int u = 0; u < t->users.n; u++)
			if (s->pos[t->users.v[u]->id] > iv.last)
				iv.last = s->pos[t->users.v[u]->id];
		if (tensor_persists(t) || t == g->loss)
			iv.last = n - 1; /* persists across steps, or read after the step */
		if (tensor_persists(t))
			iv.first = 0;
		s->live[i] = iv;
	}
	s->peak = schedule_live(g, s, 1, s->live_bytes, &s->peak_step, a);
	return s;
}

/* bytes rounded up to a multiple of align */
static __int128 aligned(int64_t bytes, int64_t align)
{
	return ((__int128)bytes + align - 1) / align * align;
}

int64_t schedule_live(const Graph *g, const Schedule *s, int64_t align, int64_t *live, int *peak_step, Arena *a)
{
	/* a difference array, in 128 bits: a step of a model too large for any machine saturates at INT64_MAX */
	int n = s->n;
	__int128 *delta = arena_array(a, (size_t)n + 1, sizeof(__int128)), sum = 0;
	for (int i = 0; i < g->tensors.n && n; i++) {
		delta[s->live[i].first] += aligned(g->tensors.v[i]->bytes, align);
		delta[s->live[i].last + 1] -= aligned(g->tensors.v[i]->bytes, align);
	}
	int64_t peak = 0;
	for (int i = 0; i < n; i++) {
		sum += delta[i];
		const Tensor *r = schedule_reuse(s, i);
		__int128 at = r ? sum - aligned(r->bytes, align) : sum; /* the output written over its input */
		int64_t cur = at > INT64_MAX ? INT64_MAX : (int64_t)at;
		if (live)
			live[i] = cur;
		if (cur > peak) {
			peak = cur;
			if (peak_step)
				*peak_step = i;
		}
	}
	return peak;
}

int node_reuse_input(const Node *n)
{
	int k = op_info[n->op].reuse;
	if (k < 0 || k >= n->nin || n->nout < 1)
		return -1;
	const Tensor *in = n->in[k], *out = n->out[0];
	if (in->bytes != out->bytes || in->dtype != out->dtype)
		return -1;
	for (int j = 0; j < n->nin; j++)
		if (j != k && n->in[j] == in)
			return -1;
	return k;
}

const Tensor *schedule_reuse(const Schedule *s, int step)
{
	const Node *n = s->order[step];
	int k = node_reuse_input(n);
	if (k < 0)
		return NULL;
	const Tensor *in = n->in[k];
	/* a gradient over a gradient, or over the activation it is the gradient of (the fused loss's) */
	if ((in->kind != TENSOR_GRADIENT && in->kind != TENSOR_ACTIVATION) || n->out[0]->kind != TENSOR_GRADIENT ||
	    s->live[in->id].last != step)
		return NULL;
	return in;
}
