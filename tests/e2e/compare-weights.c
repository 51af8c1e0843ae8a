/*
 * compare-weights.c - compare two safetensors files tensor by tensor.
 *
 *   compare-weights A.safetensors B.safetensors RTOL
 *
 * Every tensor of B must be in A with the same shape, and agree in
 * max-norm: max|a - b| <= RTOL * max|b| (or max|a - b| <= RTOL when b is
 * all zeros). Prints the worst tensor; exit status 0 on agreement, 1 on
 * disagreement or a bad file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/tensorio.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: compare-weights A.safetensors B.safetensors RTOL\n");
		return 1;
	}
	double rtol = atof(argv[3]), worst = 0;
	char err[512];
	TioFile *a, *b;
	if (tio_safetensors_open(argv[1], &a, err, sizeof err) || tio_safetensors_open(argv[2], &b, err, sizeof err)) {
		fprintf(stderr, "compare-weights: %s\n", err);
		return 1;
	}
	const char *worst_name = "";
	int bad = 0;
	for (int i = 0; i < b->n; i++) {
		const TioTensor *tb = &b->t[i], *ta = tio_find(a, tb->name);
		if (!ta || ta->nelems != tb->nelems || ta->ndim != tb->ndim ||
		    memcmp(ta->shape, tb->shape, sizeof(int64_t) * (size_t)ta->ndim) != 0) {
			fprintf(stderr, "compare-weights: %s: missing or of another shape in %s\n", tb->name, argv[1]);
			bad++;
			continue;
		}
		double *va = malloc(sizeof(double) * (size_t)ta->nelems), *vb = malloc(sizeof(double) * (size_t)tb->nelems);
		if (!va || !vb) {
			fprintf(stderr, "compare-weights: out of memory\n");
			return 1;
		}
		tio_to_f64(ta, va);
		tio_to_f64(tb, vb);
		double diff = 0, scale = 0;
		for (int64_t k = 0; k < ta->nelems; k++) {
			diff = fmax(diff, fabs(va[k] - vb[k]));
			scale = fmax(scale, fabs(vb[k]));
		}
		double rel = scale > 0 ? diff / scale : diff;
		if (!(rel <= rtol)) {
			if (bad < 5)
				fprintf(stderr, "compare-weights: %s differs: relative %.3g > %.3g\n", tb->name, rel, rtol);
			bad++;
		}
		if (rel > worst || rel != rel) {
			worst = rel;
			worst_name = tb->name;
		}
		free(va);
		free(vb);
	}
	printf("%d tensors, largest relative difference %.3g (%s)%s\n", b->n, worst, worst_name,
	       bad ? ", DISAGREEMENT" : "");
	tio_close(a);
	tio_close(b);
	return bad ? 1 : 0;
}
