/*
 * test-gradcheck.c - every gradient autodiff builds, against central finite
 * differences in float64 on the reference interpreter.
 *
 * The cases are the forward-op and network cases of the shared op table
 * (tests/opcases.c): at least one per forward op of ops.def (which also
 * exercises that op's backward ops: the backward ops are only ever built
 * by autodiff, so they are tested through the op they differentiate) and
 * a few small networks combining them, the networks also as bf16 programs
 * (whose casts are identities in float64). For every weight and for the
 * input, a spread of elements is perturbed by +-h and (L(+h) - L(-h)) / 2h
 * is compared with the analytic gradient. The SGD update ops are checked
 * separately against w - lr * g. The cases with attention are checked
 * again fused: attention as one op (its backward the fused kernel's
 * formula).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "schedule.h"
#include "util.h"
#include "tests/opcases.h"
#include "tests/testlib.h"

/* Forward and backward, without the update. */
static void gradients(Interp *ip)
{
	for (int i = 0; i < ip->s->n; i++)
		if (ip->s->order[i]->phase != PHASE_UPDATE)
			interp_node(ip, ip->s->order[i]);
}

/* Compare t's analytic gradient dt with finite differences; returns failures. */
static int check_tensor(Interp *ip, const Tensor *t, const Tensor *dt, const char *cname)
{
	const double h = 1e-6;
	int64_t n = shape_elems(t->shape);
	int64_t nsample = n < 16 ? n : 16;
	int bad = 0;
	double *v = ip->buf[t->id], *gv = ip->buf[dt->id];
	for (int64_t s = 0; s < nsample; s++) {
		int64_t k = nsample == n ? s : (s * 7919) % n;
		double old = v[k];
		v[k] = old + h;
		double lp = interp_forward(ip);
		v[k] = old - h;
		double lm = interp_forward(ip);
		v[k] = old;
		double num = (lp - lm) / (2 * h), ana = gv[k];
		double tol = 1e-5 * fmax(1.0, fmax(fabs(num), fabs(ana))) + 1e-7;
		if (fabs(num - ana) > tol) {
			if (bad < 3)
				fprintf(stderr, "  %s: %s[%lld]: analytic %.10g, numeric %.10g\n", cname, t->name,
				        (long long)k, ana, num);
			bad++;
		}
	}
	return bad;
}

static int run_case(const OpCase *c)
{
	Arena a = {0};
	Graph *g = opcase_graph(&a, c);
	if (!g) {
		arena_free(&a);
		return 1;
	}
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, true, 42);
	gradients(ip);
	int bad = 0, nchecked = 0;
	for (int i = 0; i < s->n; i++) {
		const Node *n = s->order[i];
		if (op_is_update(n->op)) { /* the weights' updates: in[1] is the gradient */
			bad += check_tensor(ip, n->in[0], n->in[1], c->name);
			nchecked++;
		}
	}
	if (g->dinput) {
		bad += check_tensor(ip, g->input, g->dinput, c->name);
		nchecked++;
	}
	if (nchecked == 0) {
		fprintf(stderr, "  %s: nothing to check\n", c->name);
		bad++;
	}
	interp_free(ip);
	arena_free(&a);
	return bad;
}

/* sgd and sgd_momentum: one step moves each weight by -lr * g (PyTorch's rule). */
static int check_sgd(const char *opt, double lr, double mom)
{
	OpCase c = {"sgd", OPCASE_UPDATE, "3, 4", "2", "dense(4 => 2)", opt};
	Arena a = {0};
	Graph *g = opcase_graph(&a, &c);
	if (!g)
		return 1;
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, true, 7);
	int bad = 0;
	for (int step = 0; step < 2; step++) {
		/* expected: v = mom * v + g; w -= lr * v */
		const Node *upd = NULL;
		for (int i = 0; i < s->n; i++)
			if (s->order[i]->op == OP_SGD || s->order[i]->op == OP_SGD_MOMENTUM)
				upd = s->order[i];
		int64_t n = shape_elems(upd->in[0]->shape);
		double *w0 = xmalloc(sizeof(double) * (size_t)n), *v0 = xcalloc((size_t)n, sizeof(double));
		memcpy(w0, ip->buf[upd->in[0]->id], sizeof(double) * (size_t)n);
		if (upd->nin == 3)
			memcpy(v0, ip->buf[upd->in[2]->id], sizeof(double) * (size_t)n);
		interp_step(ip);
		for (int64_t k = 0; k < n; k++) {
			double gk = ip->buf[upd->in[1]->id][k];
			double v = mom * v0[k] + gk, want = w0[k] - lr * (upd->nin == 3 ? v : gk);
			if (fabs(ip->buf[upd->in[0]->id][k] - want) > 1e-12) {
				fprintf(stderr, "  %s: step %d: %s[%lld] = %g, expected %g\n", opt, step, upd->in[0]->name,
				        (long long)k, ip->buf[upd->in[0]->id][k], want);
				bad++;
				break;
			}
		}
		free(w0);
		free(v0);
	}
	interp_free(ip);
	arena_free(&a);
	return bad;
}

int main(void)
{
	/* finite differences apply to the forward ops and the networks (updates: below) */
	for (int i = 0; i < nop_cases; i++) {
		const OpCase *c = &op_cases[i];
		if (c->kind == OPCASE_OP || c->kind == OPCASE_NETWORK)
			test_check(run_case(c) == 0, "gradient of %s", c->name);
	}
	/* a bf16 program's graph (casts identities in float64): the casts' gradients and the types' bookkeeping */
	test_precision = PREC_BF16;
	for (int i = 0; i < nop_cases; i++) {
		const OpCase *c = &op_cases[i];
		if (c->kind == OPCASE_NETWORK)
			test_check(run_case(c) == 0, "gradient of %s in bf16", c->name);
	}
	test_precision = PREC_FP32;
	/* fused (fuse.h), and attention as one op: the fused kernels' gradients (attention, the output layer
	   with its loss by class ids) */
	test_fuse = true;
	for (int i = 0; i < nop_cases; i++) {
		const OpCase *c = &op_cases[i];
		if ((c->kind == OPCASE_OP || c->kind == OPCASE_NETWORK) &&
		    (strstr(c->layers, "attention(") || strncmp(c->labels, "class", 5) == 0))
			test_check(run_case(c) == 0, "gradient of %s, fused", c->name);
	}
	test_fuse = false;
	test_check(check_sgd("optimizer = sgd(lr = 0.1)", 0.1, 0) == 0, "sgd update");
	test_check(check_sgd("optimizer = sgd(lr = 0.05, momentum = 0.9)", 0.05, 0.9) == 0, "sgd_momentum update");
	return test_summary();
}
