/*
 * verify.c - the graph verifier.
 *
 * Checks the invariants every pass relies on: node and tensor ids are their
 * indices; nodes are in topological order; every input is a graph input or
 * the output of an earlier node; producer and user links agree both ways;
 * arities match ops.def; recomputing each node's shape rule gives the
 * shapes it has; byte sizes match shapes; names are unique. Run after
 * every pass in debug builds and by `autotmc check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "util.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return false; } while (0)

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool graph_verify(const Graph *g, char *err, size_t errlen)
{
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->id != i)
			FAIL("tensor %s has id %d at index %d", t->name, t->id, i);
		if (t->bytes != shape_bytes(t->shape, t->dtype))
			FAIL("tensor %s has %lld bytes for its shape", t->name, (long long)t->bytes);
		if (!t->producer && t->kind != TENSOR_INPUT && t->kind != TENSOR_LABELS &&
		    t->kind != TENSOR_WEIGHT && t->kind != TENSOR_STATE)
			FAIL("%s tensor %s has no producer", tensor_kind_name(t->kind), t->name);
		for (int u = 0; u < t->users.n; u++) {
			const Node *n = t->users.v[u];
			bool found = false;
			for (int k = 0; k < n->nin; k++)
				found |= n->in[k] == t;
			if (!found)
				FAIL("tensor %s lists user %s, which does not read it", t->name, n->name);
		}
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		const OpInfo *info = &op_info[n->op];
		if (n->id != i)
			FAIL("node %s has id %d at index %d", n->name, n->id, i);
		if (n->nin < info->min_in || n->nin > info->max_in || n->nout != info->nout)
			FAIL("node %s (%s) has %d inputs and %d outputs", n->name, info->name, n->nin, n->nout);
		for (int k = 0; k < n->nin; k++) {
			const Tensor *t = n->in[k];
			if (t->id < 0 || t->id >= g->tensors.n || g->tensors.v[t->id] != t)
				FAIL("node %s reads a tensor not in the graph", n->name);
			if (t->producer && t->producer->id >= i)
				FAIL("node %s reads %s before it is produced", n->name, t->name);
			int uses = 0;
			for (int u = 0; u < t->users.n; u++)
				uses += t->users.v[u] == n;
			if (uses == 0)
				FAIL("node %s reads %s but is not among its users", n->name, t->name);
		}
		Shape shapes[4];
		char why[256];
		if (!node_shapes(n, shapes, why, sizeof why))
			FAIL("node %s (%s): %s", n->name, info->name, why);
		for (int k = 0; k < n->nout; k++) {
			const Tensor *t = n->out[k];
			if (t->producer != n)
				FAIL("output %s of %s names another producer", t->name, n->name);
			if (!shape_eq(t->shape, shapes[k]))
				FAIL("output %s of %s has a shape its rule does not give", t->name, n->name);
		}
	}
	/* Names are unique: sort them and compare neighbours. */
	const char **names = xmalloc(sizeof(char *) * (size_t)(g->tensors.n + 1));
	for (int i = 0; i < g->tensors.n; i++)
		names[i] = g->tensors.v[i]->name;
	qsort(names, (size_t)g->tensors.n, sizeof(char *), cmp_str);
	for (int i = 1; i < g->tensors.n; i++) {
		if (strcmp(names[i], names[i - 1]) == 0) {
			snprintf(err, errlen, "two tensors are named %s", names[i]);
			free(names);
			return false;
		}
	}
	free(names);
	return true;
}
