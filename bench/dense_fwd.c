/*
 * bench/dense_fwd.c - oneDNN micro-benchmark behind docs/performance.md: the
 * dense layer 4096 => 4096 of examples/mlp.net at batch N, forward, as
 * libautotmrt runs it (an inner product with plain `oi` weights) and three
 * alternatives on the same memory, plus the backward-data inner product for
 * comparison.  Three weight matrices are used in turn so that the weights
 * come from memory, as in a training step; the median of 63 calls is shown.
 *
 *   cc -O2 -fopenmp bench/dense_fwd.c -o /tmp/dense_fwd -ldnnl
 *   OMP_NUM_THREADS=2 /tmp/dense_fwd 16
 *
 * Not part of the build; it only links the oneDNN the runtime uses.
 */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(x) do { dnnl_status_t s_ = (x); if (s_ != dnnl_success) { fprintf(stderr, "%s: %d\n", #x, s_); exit(1); } } while (0)
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
#define L 3
#define REPS 21 /* x L calls */
static dnnl_engine_t eng; static dnnl_stream_t st;
static float *X, *W[L], *B, *Y, *DY, *DX;
static long N, I = 4096, O = 4096;
typedef void (*fn)(int l, void *ctx);
static double timeit(fn f, void *ctx)
{
	double t[REPS * L];
	for (int r = 0; r < 2; r++) for (int l = 0; l < L; l++) f(l, ctx);
	for (int r = 0; r < REPS; r++) for (int l = 0; l < L; l++) {
		double t0 = omp_get_wtime(); f(l, ctx); t[r * L + l] = omp_get_wtime() - t0;
	}
	qsort(t, REPS * L, sizeof *t, cmp);
	return t[REPS * L / 2] * 1e3;
}
typedef struct { dnnl_primitive_t p; dnnl_memory_t m[4]; int argw, argio[4]; int nm; int wslot; } Prim;
static void run_prim(int l, void *c)
{
	Prim *p = c; dnnl_exec_arg_t a[4];
	CK(dnnl_memory_set_data_handle(p->m[p->wslot], W[l]));
	for (int i = 0; i < p->nm; i++) { a[i].arg = p->argio[i]; a[i].memory = p->m[i]; }
	CK(dnnl_primitive_execute(p->p, st, p->nm, a)); CK(dnnl_stream_wait(st));
}
static dnnl_memory_t mem(const dnnl_memory_desc_t *md, void *h) { dnnl_memory_t m; CK(dnnl_memory_create(&m, md, eng, h)); return m; }
static void mk(Prim *p, const void *desc, const_dnnl_primitive_desc_t hint, const char *name)
{
	dnnl_primitive_desc_t pd; CK(dnnl_primitive_desc_create(&pd, desc, NULL, eng, hint));
	const char *impl; dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	CK(dnnl_primitive_create(&p->p, pd));
	printf("  %-34s %-22s", name, impl);
}
static void sgemm_fwd(int l, void *c) { (void)c; CK(dnnl_sgemm('N', 'T', N, O, I, 1.f, X, I, W[l], I, 0.f, Y, O)); }
static void sgemm_bwd(int l, void *c) { (void)c; CK(dnnl_sgemm('N', 'N', N, I, O, 1.f, DY, O, W[l], I, 0.f, DX, I)); }
int main(int argc, char **argv)
{
	if (argc != 2 || (N = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: %s BATCH\n", argv[0]);
		return 2;
	}
	CK(dnnl_engine_create(&eng, dnnl_cpu, 0)); CK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));
	X = aligned_alloc(64, N * I * 4); Y = aligned_alloc(64, N * O * 4); DY = aligned_alloc(64, N * O * 4); DX = aligned_alloc(64, N * I * 4); B = aligned_alloc(64, O * 4);
	for (long i = 0; i < N * I; i++) X[i] = (float)rand() / RAND_MAX - .5f, DX[i] = 0;
	for (long i = 0; i < N * O; i++) DY[i] = (float)rand() / RAND_MAX - .5f;
	for (int l = 0; l < L; l++) { W[l] = aligned_alloc(64, I * O * 4); for (long i = 0; i < I * O; i++) W[l][i] = (float)rand() / RAND_MAX * 0.01f; }
	for (long i = 0; i < O; i++) B[i] = 0.1f;
	printf("N=%ld threads=%d\n", N, omp_get_max_threads());
	dnnl_memory_desc_t xm, wm, bm, ym, wio, wmm, bmm;
	dnnl_dims_t dx = {N, I}, dw = {O, I}, db = {O}, dy = {N, O}, dwk = {I, O}, db2 = {1, O};
	CK(dnnl_memory_desc_init_by_tag(&xm, 2, dx, dnnl_f32, dnnl_nc));
	CK(dnnl_memory_desc_init_by_tag(&wm, 2, dw, dnnl_f32, dnnl_oi));
	CK(dnnl_memory_desc_init_by_tag(&wio, 2, dw, dnnl_f32, dnnl_io));
	CK(dnnl_memory_desc_init_by_tag(&bm, 1, db, dnnl_f32, dnnl_x));
	CK(dnnl_memory_desc_init_by_tag(&ym, 2, dy, dnnl_f32, dnnl_nc));
	CK(dnnl_memory_desc_init_by_tag(&wmm, 2, dwk, dnnl_f32, dnnl_ba)); /* [I, O] view of oi weights */
	CK(dnnl_memory_desc_init_by_tag(&bmm, 2, db2, dnnl_f32, dnnl_ab));
	/* 1. inner product fwd, oi weights (libautotmrt) */
	{ Prim p = {0}; dnnl_inner_product_desc_t d;
	  CK(dnnl_inner_product_forward_desc_init(&d, dnnl_forward_training, &xm, &wm, &bm, &ym));
	  mk(&p, &d, NULL, "inner product fwd (oi, as now)");
	  p.m[0] = mem(&xm, X); p.m[1] = mem(&wm, W[0]); p.m[2] = mem(&bm, B); p.m[3] = mem(&ym, Y);
	  p.argio[0] = DNNL_ARG_SRC; p.argio[1] = DNNL_ARG_WEIGHTS; p.argio[2] = DNNL_ARG_BIAS; p.argio[3] = DNNL_ARG_DST; p.nm = 4; p.wslot = 1;
	  printf("%8.3f ms\n", timeit(run_prim, &p)); }
	/* 2. inner product fwd, io weights (weights stored transposed) */
	{ Prim p = {0}; dnnl_inner_product_desc_t d;
	  CK(dnnl_inner_product_forward_desc_init(&d, dnnl_forward_training, &xm, &wio, &bm, &ym));
	  mk(&p, &d, NULL, "inner product fwd (io weights)");
	  p.m[0] = mem(&xm, X); p.m[1] = mem(&wio, W[0]); p.m[2] = mem(&bm, B); p.m[3] = mem(&ym, Y);
	  p.argio[0] = DNNL_ARG_SRC; p.argio[1] = DNNL_ARG_WEIGHTS; p.argio[2] = DNNL_ARG_BIAS; p.argio[3] = DNNL_ARG_DST; p.nm = 4; p.wslot = 1;
	  printf("%8.3f ms\n", timeit(run_prim, &p)); }
	/* 3. matmul x [N,I] * W^T (oi weights seen as ba [I,O]) + bias */
	{ Prim p = {0}; dnnl_matmul_desc_t d;
	  CK(dnnl_matmul_desc_init(&d, &xm, &wmm, &bmm, &ym));
	  mk(&p, &d, NULL, "matmul x * W^T (oi as ba)");
	  p.m[0] = mem(&xm, X); p.m[1] = mem(&wmm, W[0]); p.m[2] = mem(&bmm, B); p.m[3] = mem(&ym, Y);
	  p.argio[0] = DNNL_ARG_SRC; p.argio[1] = DNNL_ARG_WEIGHTS; p.argio[2] = DNNL_ARG_BIAS; p.argio[3] = DNNL_ARG_DST; p.nm = 4; p.wslot = 1;
	  printf("%8.3f ms\n", timeit(run_prim, &p)); }
	printf("  %-34s %-22s%8.3f ms\n", "dnnl_sgemm N,T (no bias)", "", timeit(sgemm_fwd, NULL));
	/* 4. backward data as now, for comparison */
	{ Prim p = {0}; dnnl_inner_product_desc_t fd, bd; dnnl_primitive_desc_t hint;
	  CK(dnnl_inner_product_forward_desc_init(&fd, dnnl_forward_training, &xm, &wm, NULL, &ym));
	  CK(dnnl_primitive_desc_create(&hint, &fd, NULL, eng, NULL));
	  CK(dnnl_inner_product_backward_data_desc_init(&bd, &xm, &wm, &ym));
	  mk(&p, &bd, hint, "inner product bwd data (oi)");
	  p.m[0] = mem(&ym, DY); p.m[1] = mem(&wm, W[0]); p.m[2] = mem(&xm, DX);
	  p.argio[0] = DNNL_ARG_DIFF_DST; p.argio[1] = DNNL_ARG_WEIGHTS; p.argio[2] = DNNL_ARG_DIFF_SRC; p.nm = 3; p.wslot = 1;
	  printf("%8.3f ms\n", timeit(run_prim, &p)); }
	printf("  %-34s %-22s%8.3f ms\n", "dnnl_sgemm N,N (bwd data)", "", timeit(sgemm_bwd, NULL));
	return 0;
}
