/*
 * test-gradcheck.c - every gradient autodiff builds, against central finite
 * differences in float64 on the reference interpreter.
 *
 * Each case is a small .net program: one case per forward op of ops.def
 * (which also exercises that op's backward ops: the backward ops are only
 * ever built by autodiff, so they are tested through the op they
 * differentiate) and a few small networks combining them. For every
 * weight and for the input, a spread of elements is perturbed by +-h and
 * (L(+h) - L(-h)) / 2h is compared with the analytic gradient. The SGD
 * update ops are checked separately against w - lr * g.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "elaborate.h"
#include "interp.h"
#include "schedule.h"
#include "util.h"
#include "tests/testlib.h"

typedef struct Case {
	const char *name;   /* what it covers */
	const char *input;  /* input declaration dims */
	const char *labels; /* number of classes (labels [batch, K]) */
	const char *layers; /* the network's chain */
	const char *opt;    /* optimizer, or NULL */
} Case;

static const Case cases[] = {
	/* one per forward op */
	{"conv2d", "2, 3, 6, 6", "36", "conv(3x3, 3 => 4, stride = 2, pad = 1) flatten", NULL},
	{"conv2d groups, no bias", "2, 4, 5, 5", "54", "conv(3x3, 4 => 6, groups = 2, bias = false) flatten", NULL},
	{"conv2d asymmetric", "2, 3, 4, 5", "20", "conv((1, 3), 3 => 2, stride = (2, 1), pad = (0, 1)) flatten", NULL},
	{"dense", "3, 5", "4", "dense(5 => 4)", NULL},
	{"maxpool", "2, 2, 5, 5", "18", "maxpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"avgpool", "2, 2, 5, 5", "18", "avgpool(3x3, stride = 2, pad = 1) flatten", NULL},
	{"globalavgpool", "2, 3, 4, 4", "3", "globalavgpool flatten", NULL},
	{"batchnorm 4d", "3, 2, 3, 3", "18", "batchnorm flatten", NULL},
	{"batchnorm 2d", "4, 3", "3", "batchnorm(eps = 0.001)", NULL},
	{"relu", "3, 5", "5", "relu", NULL},
	{"sigmoid", "3, 5", "5", "sigmoid", NULL},
	{"tanh", "3, 5", "5", "tanh", NULL},
	{"softmax", "3, 5", "4", "softmax dense(5 => 4)", NULL},
	{"reshape", "2, 2, 2, 3", "12", "flatten", NULL},
	{"dropout", "3, 6", "6", "dropout(0.3)", NULL},
	{"add", "3, 5", "5", "add { branch { dense(5 => 5) } branch { relu } branch { tanh } }", NULL},
	{"concat 2d", "3, 5", "8", "concat { branch { dense(5 => 3) } branch { tanh } }", NULL},
	{"concat 4d", "2, 2, 3, 3", "45",
	 "concat { branch { conv(1x1, 2 => 3) } branch { maxpool(3x3, stride = 1, pad = 1) } } flatten", NULL},
	{"softmax_crossentropy", "4, 6", "6", "tanh", NULL},
	/* small networks */
	{"mlp 3 layers", "4, 8", "3", "dense(8 => 16, relu) dense(16 => 16, tanh) dense(16 => 3)", NULL},
	{"conv net with batchnorm and pooling", "2, 3, 8, 8", "4",
	 "conv(3x3, 3 => 4, pad = 1) batchnorm relu maxpool(2x2) "
	 "conv(3x3, 4 => 6, pad = 1, bias = false) batchnorm relu avgpool(2x2) flatten dense(24 => 4)", NULL},
	{"residual block with projection", "2, 4, 6, 6", "5",
	 "residual(shortcut = chain { conv(1x1, 4 => 8, stride = 2, bias = false) batchnorm }) {"
	 "  conv(3x3, 4 => 8, stride = 2, pad = 1, bias = false) batchnorm relu"
	 "  conv(3x3, 8 => 8, pad = 1, bias = false) batchnorm"
	 "} relu globalavgpool flatten dense(8 => 5)", NULL},
	{"inception-style concat block", "2, 4, 5, 5", "5",
	 "concat {"
	 "  branch { conv(1x1, 4 => 2) relu }"
	 "  branch { conv(1x1, 4 => 2) relu conv(3x3, 2 => 3, pad = 1) relu }"
	 "  branch { conv(1x1, 4 => 1) relu conv((1, 3), 1 => 2, pad = (0, 1)) conv((3, 1), 2 => 2, pad = (1, 0)) }"
	 "  branch { avgpool(3x3, stride = 1, pad = 1) conv(1x1, 4 => 2) }"
	 "} globalavgpool flatten dense(9 => 5)", NULL},
	{"densenet-style block", "2, 4, 4, 4", "3",
	 "repeat 3 as i { concat { branch { identity } "
	 "  branch { batchnorm relu conv(1x1, 4 + 2 * i => 4, bias = false) batchnorm relu "
	 "           conv(3x3, 4 => 2, pad = 1, bias = false) } } } "
	 "batchnorm relu conv(1x1, 10 => 5, bias = false) avgpool(2x2) globalavgpool flatten dense(5 => 3)", NULL},
};

static Graph *build(Arena *a, const Case *c, const char *opt)
{
	char src[4096];
	return test_training_graph(a, c->name, test_chain_source(src, sizeof src, c->layers, c->input, c->labels, opt),
	                           true);
}

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

static int run_case(const Case *c)
{
	Arena a = {0};
	Graph *g = build(&a, c, c->opt);
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
		if (n->phase == PHASE_UPDATE) {
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
	Case c = {"sgd", "3, 4", "2", "dense(4 => 2)", opt};
	Arena a = {0};
	Graph *g = build(&a, &c, opt);
	if (!g)
		return 1;
	Schedule *s = schedule_graph(g, &a);
	Interp *ip = interp_new(g, s, true, 7);
	int bad = 0;
	for (int step = 0; step < 2; step++) {
		/* expected: v = mom * v + g; w -= lr * v */
		const Node *upd = NULL;
		for (int i = 0; i < s->n; i++)
			if (s->order[i]->phase == PHASE_UPDATE)
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
	int failed = 0, n = 0;
	for (size_t i = 0; i < countof(cases); i++, n++) {
		int bad = run_case(&cases[i]);
		printf("%s %d - gradient of %s\n", bad ? "not ok" : "ok", n + 1, cases[i].name);
		failed += bad != 0;
	}
	int bad = check_sgd("optimizer = sgd(lr = 0.1)", 0.1, 0);
	printf("%s %d - sgd update\n", bad ? "not ok" : "ok", ++n);
	failed += bad != 0;
	bad = check_sgd("optimizer = sgd(lr = 0.05, momentum = 0.9)", 0.05, 0.9);
	printf("%s %d - sgd_momentum update\n", bad ? "not ok" : "ok", ++n);
	failed += bad != 0;
	printf("%d passed, %d failed\n", n - failed, failed);
	return failed ? 1 : 0;
}
