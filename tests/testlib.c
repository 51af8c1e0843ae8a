/*
 * testlib.c - small training graphs from source text, and the pass/fail
 * reporter (testlib.h).
 */
#include "testlib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "fuse.h"
#include "layout.h"
#include "elaborate.h"

const char *test_chain_source(char *buf, size_t size, const char *layers, const char *input, const char *labels,
                              const char *optimizer)
{
	char batch[64], lab[128];
	bool ids = strncmp(input, "i32 ", 4) == 0, classes = strncmp(labels, "class ", 6) == 0;
	if (ids)
		input += 4;
	snprintf(batch, sizeof batch, "%s", input);
	batch[strcspn(batch, ",")] = '\0';
	if (classes)
		snprintf(lab, sizeof lab, "class[%s]", labels + 6);
	else
		snprintf(lab, sizeof lab, "onehot[%s, %s]", batch, labels);
	snprintf(buf, size,
	         "model t(batch = 2)\nnetwork = chain { %s }\ninput x : %s[%s]\n"
	         "labels y : %s\nloss = crossentropy(network(x), y)\n%s\n",
	         layers, ids ? "i32" : "f32", input, lab, optimizer ? optimizer : "optimizer = sgd(lr = 0.1)");
	return buf;
}

/* src elaborated (eval: its evaluation graph, else its training step) and verified. */
Precision test_precision = PREC_FP32;
bool test_fuse = false;
bool test_fuse_gpu = false;
bool test_blocked = false;

static Graph *build_graph(Arena *a, const char *name, const char *src, bool eval, bool input_grad)
{
	static const char *dirs[1];
	dirs[0] = getenv("AUTOTM_STDLIB") ? getenv("AUTOTM_STDLIB") : "stdlib";
	ElabOptions eo = {.dirs = dirs, .ndirs = 1, .main_text = src, .main_len = strlen(src), .eval = eval,
	                  .precision = test_precision, .fused_attention = test_fuse || test_fuse_gpu};
	Graph *g = elaborate(name, &eo, a);
	if (!g) {
		fprintf(stderr, "source was:\n%s", src);
		return NULL;
	}
	if (!eval) {
		AutodiffOptions ao = {.input_grad = input_grad};
		autodiff(g, &ao);
		if (test_fuse) {
			fuse_epilogues(g);
			fuse_head(g);
			fuse_casts(g);
		}
		else if (test_fuse_gpu) {
			fuse_loss(g);
			fuse_head(g);
		}
	}
	if (test_blocked)
		choose_layouts(g);
	char err[512];
	if (!graph_verify(g, err, sizeof err)) {
		fprintf(stderr, "verify: %s\nsource was:\n%s", err, src);
		return NULL;
	}
	return g;
}

Graph *test_training_graph(Arena *a, const char *name, const char *src, bool input_grad)
{
	return build_graph(a, name, src, false, input_grad);
}

Graph *test_eval_graph(Arena *a, const char *name, const char *src)
{
	return build_graph(a, name, src, true, false);
}

static int npassed, nfailed;

/* Count a check; print it if it failed or if `always`. */
static void report(bool ok, bool always, const char *fmt, va_list ap)
{
	npassed += ok;
	nfailed += !ok;
	if (ok && !always)
		return;
	printf("%s %d - ", ok ? "ok" : "not ok", npassed + nfailed);
	vprintf(fmt, ap);
	putchar('\n');
}

bool test_check(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(ok, true, fmt, ap);
	va_end(ap);
	return ok;
}

bool test_expect(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(ok, false, fmt, ap);
	va_end(ap);
	return ok;
}

int test_summary(void)
{
	printf("%d passed, %d failed\n", npassed, nfailed);
	return nfailed ? 1 : 0;
}
