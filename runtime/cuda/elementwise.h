/*
 * cuda/elementwise.h - the CUDA kernels of cuda/elementwise.cu, as C
 * functions that launch them on a stream (cuda/kernels.c calls them).
 *
 * Each returns the launch's error (cudaGetLastError). Shapes are those of
 * ops.def; "planes" is N * C of an NCHW tensor, "inner" the elements of
 * one (n, c) plane. Reductions are in double, in a fixed order.
 *
 * The launchers whose arguments are `void *` take float32 or bfloat16
 * there, as their mask `bf` says: bit i set when the i-th pointer
 * argument, counting from 0, holds bfloat16 (gpu_add: bit k for x[k],
 * bit nin for y). Their `float *` arguments are always float32. The other
 * launchers are float32 only (a bf16 program widens their arguments:
 * cuda/kernels.c).
 */
#ifndef AUTOTM_GPU_ELEMENTWISE_H
#define AUTOTM_GPU_ELEMENTWISE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "activation.h" /* base/ */
#include "optim.h"      /* base/ */

#ifdef __cplusplus
extern "C" {
#endif

enum { GPU_MAX_ADD = 16 };

/*
 * What a fused node (compiler/front/fuse.h) does to each element v of its
 * output before it stores it: v = act(v) (ACT_NONE: nothing); then, where
 * sum is set, v rounded to the output's type (a dense's, round_f32: to
 * float32 only, as oneDNN adds the sum to its float32 product), plus
 * element (i / blk) sblk + i % blk of sum (float32, or bfloat16 where
 * sum_bf), i being the element's index: a sum has sblk >= blk elements
 * for each blk of the output (a batchnorm_bwd's may have more channels
 * than its dx). The interpreter's order (compiler/interp/interp.c:
 * add_sum). NULL where the node has none.
 */
typedef struct GpuEpilogue {
	Act act;
	const void *sum;
	bool sum_bf, round_f32;
	int64_t blk, sblk;
} GpuEpilogue;

/* Each row of y [rows, cols] = b [cols] (dense's bias, before the product adds to it). */
cudaError_t gpu_fill_rows(void *y, const void *b, int64_t rows, int64_t cols, unsigned bf, cudaStream_t st);
/* y [n, c, inner] += b [c] (a convolution's bias; b NULL: none), then the epilogue e. */
cudaError_t gpu_add_channels(void *y, const void *b, int64_t n, int64_t c, int64_t inner, const GpuEpilogue *e,
                             unsigned bf, cudaStream_t st);
/* The epilogue e over y's n elements, in place (a dense's, after cuBLAS). */
cudaError_t gpu_epilogue(void *y, int64_t n, const GpuEpilogue *e, unsigned bf, cudaStream_t st);
/* cast: y = x converted to y's type (bf16: rounded to nearest, ties to even). */
cudaError_t gpu_cast(const void *x, void *y, int64_t n, unsigned bf, cudaStream_t st);
/*
 * y = act(x);  dx = dy * act'(x) from `saved`, y or x as act_from(act)
 * says: base/activation.h's act_value and act_grad, in double.
 */
cudaError_t gpu_eltwise(Act act, const void *x, void *y, int64_t n, unsigned bf, cudaStream_t st);
cudaError_t gpu_eltwise_bwd(Act act, const void *saved, const void *dy, void *dx, int64_t n, unsigned bf,
                            cudaStream_t st);
/* y = x1 + x2 + ... (nin of them, at most GPU_MAX_ADD), then the epilogue e. */
cudaError_t gpu_add(const void *const *x, int nin, void *y, int64_t n, const GpuEpilogue *e, unsigned bf,
                    cudaStream_t st);
/* y = kept x / (1 - p), 0 elsewhere: the mask of autotm/random.h's rt_dropout_keep; then the epilogue e. */
cudaError_t gpu_dropout(const void *x, void *y, int64_t n, uint64_t seed, uint64_t step, double p,
                        const GpuEpilogue *e, unsigned bf, cudaStream_t st);
/* The window geometry of a pooling op: kernel, stride, padding. */
typedef struct GpuWindow {
	int64_t kh, kw, sh, sw, ph, pw;
} GpuWindow;
/* Pooling forward, for bf16 data (cuDNN pools float32): max, average (the padding counted) or global average. */
enum { GPU_POOL_MAX, GPU_POOL_AVG, GPU_POOL_GLOBAL };
cudaError_t gpu_pool(const void *x, void *y, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo, GpuWindow g,
                     int kind, unsigned bf, cudaStream_t st);
/* maxpool_bwd: each window's dy to the window's first maximum of x (padding excluded); arg: scratch of
 * op_maxpool_arg_bytes (base/ops.h) for each window's maximum. */
cudaError_t gpu_maxpool_bwd(const void *x, const void *dy, void *dx, void *arg, int64_t planes, int64_t h, int64_t w,
                            int64_t ho, int64_t wo, GpuWindow g, unsigned bf, cudaStream_t st);
/* avgpool_bwd: each window's dy / (kh * kw) to every element of it inside the image. */
cudaError_t gpu_avgpool_bwd(const void *dy, void *dx, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo,
                            GpuWindow g, unsigned bf, cudaStream_t st);
/* globalavgpool_bwd: dx [planes, inner] = dy [planes] / inner. */
cudaError_t gpu_globalavgpool_bwd(const void *dy, void *dx, int64_t planes, int64_t inner, unsigned bf,
                                  cudaStream_t st);
/* batchnorm (training): x [n, c, inner] -> y, batch mean [c], biased batch variance [c], y through the
 * epilogue e; part: the partial sums, op_bn_partial_bytes(n, c) of device memory (base/ops.h). */
cudaError_t gpu_batchnorm(const void *x, const float *gamma, const float *beta, void *y, float *mean, float *var,
                          double *part, int64_t n, int64_t c, int64_t inner, double eps, const GpuEpilogue *e,
                          unsigned bf, cudaStream_t st);
/* batchnorm_bwd: x, gamma, mean, var, dy -> dx, dgamma, dbeta; part as gpu_batchnorm's. Where y is set (an
 * activation act fused onto the batchnorm: its output), dy is act's output gradient, taken through act
 * first; dx goes through the epilogue e (a sum). bf: bit 0 x, 4 dy, 5 dx, 6 y. */
cudaError_t gpu_batchnorm_bwd(const void *x, const float *gamma, const float *mean, const float *var, const void *dy,
                              const void *y, Act act, void *dx, float *dgamma, float *dbeta, double *part, int64_t n,
                              int64_t c, int64_t inner, double eps, const GpuEpilogue *e, unsigned bf,
                              cudaStream_t st);
/* bias_grad: dy [n, c, inner] -> db [c], the sum over n and inner; part: the groups' sums,
 * op_bias_partial_bytes(n, c, inner) of device memory (base/ops.h). */
cudaError_t gpu_bias_grad(const void *dy, void *db, double *part, int64_t n, int64_t c, int64_t inner, unsigned bf,
                          cudaStream_t st);
/* out [len] = the sum of part [images, len] over its first dimension (a 1x1 convolution's filter gradient). */
cudaError_t gpu_sum_images(const float *part, float *out, int64_t images, int64_t len, cudaStream_t st);
/* softmax_crossentropy: z, y [rows, k] -> loss [1]; rowloss: rows doubles of scratch. */
cudaError_t gpu_xent(const float *z, const float *y, double *rowloss, float *loss, int64_t rows, int64_t k,
                     cudaStream_t st);
/* softmax_crossentropy_bwd: dz = (softmax(z) * sum(y) - y) / rows. */
cudaError_t gpu_xent_bwd(const float *z, const float *y, float *dz, int64_t rows, int64_t k, cudaStream_t st);
/* grad_sumsq: *out = (acc ? *acc : 0) + the sum of g's squares (one block, in double); g bf16 where gbf. */
cudaError_t gpu_grad_sumsq(const void *g, bool gbf, const float *acc, float *out, int64_t n, cudaStream_t st);
/*
 * The updates (sgd, sgd_momentum, adamw: op) of step `step` by h
 * (base/optim.h), in double as the CPU: state m (velocity, exp_avg) and v
 * (exp_avg_sq) when the op has them, NULL otherwise; sumsq: the
 * gradients' squared norm when clipping, NULL otherwise. The gradient g
 * is bf16 where gbf (widened as it is read), else float32.
 */
cudaError_t gpu_update(int op, const OptimHyper *h, uint64_t step, float *w, const void *g, bool gbf, float *m,
                       float *v, const float *sumsq, int64_t n, cudaStream_t st);
/* layernorm and its gradient (ops.def) over rows of c, a thread a row (dweight, dbias: a column), in double;
   y bf16 where ybf, dy where dybf (autocast's cast folded in: base/ops.h's op_bf16_arg_native). */
cudaError_t gpu_layernorm(const float *x, const float *w, const float *b, void *y, bool ybf, float *mean, float *rstd,
                          int64_t rows, int64_t c, double eps, cudaStream_t st);
/* (layernorm_bwd: sum, a fused sum of dx's shape, or NULL) */
cudaError_t gpu_layernorm_bwd(const float *x, const float *w, const float *mean, const float *rstd, const void *dy,
                              bool dybf, const float *sum, float *dx, float *dw, float *db, int64_t rows, int64_t c,
                              cudaStream_t st);
/* batchnorm_eval (ops.def) on x [n, c, inner], per element in double as the CPU. */
cudaError_t gpu_bn_eval(const void *x, const float *w, const float *b, const float *rm, const float *rv, void *y,
                        int64_t n, int64_t c, int64_t inner, double eps, unsigned bf, cudaStream_t st);
/* batchnorm_stats (ops.def) on c channels, the variance times unbias (op_bn_unbias), in double as the CPU. */
cudaError_t gpu_bn_stats(float *rm, float *rv, float *count, const float *mean, const float *var, int64_t c,
                         double unbias, double momentum, cudaStream_t st);

/* embedding (ops.def): y [rows, c] = rows ids[r] of w; its gradient: dw [v, c] zeroed, then a column a thread. */
cudaError_t gpu_embedding(const int32_t *ids, const float *w, float *y, int64_t rows, int64_t c, cudaStream_t st);
cudaError_t gpu_embedding_bwd(const float *dy, const int32_t *ids, float *dw, int64_t rows, int64_t c, int64_t v,
                              cudaStream_t st);
/* position_embedding (ops.def) on n rows of tc = T * C; its gradient into dw of `all` elements. */
cudaError_t gpu_position(const void *x, const void *w, void *y, int64_t n, int64_t tc, unsigned bf, cudaStream_t st);
/* transpose: x [n, ra, cb] -> y [n, cb, ra] */
cudaError_t gpu_transpose(const void *x, void *y, int64_t n, int64_t ra, int64_t cb, unsigned bf, cudaStream_t st);
/* mean over the middle of [outer, len, inner] -> [outer, inner]; bwd: dy [outer, inner] -> dx, dy / len at each */
cudaError_t gpu_mean(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool bwd, cudaStream_t st);
/* mul: y = u v, u [rows, inner], v [rows, sin] (sin 1: repeated); bwd: y = u v summed over each row (sin 1) */
cudaError_t gpu_mul(const void *u, const void *v, void *y, int64_t rows, int64_t inner, int64_t sin, bool bwd,
                    unsigned bf, cudaStream_t st);
/* clamp (dy NULL): y = x in [lo, hi]; clamp_bwd: y = dy where lo <= x <= hi, else 0 */
cudaError_t gpu_clamp(const void *x, const void *dy, void *y, int64_t n, float lo, float hi, unsigned bf,
                      cudaStream_t st);
/* broadcast: w [c] repeated into y, `total` elements (a multiple of c) */
cudaError_t gpu_broadcast(const void *w, void *y, int64_t c, int64_t total, unsigned bf, cudaStream_t st);
cudaError_t gpu_position_bwd(const float *dy, float *dw, int64_t n, int64_t tc, int64_t all, cudaStream_t st);
/* split_heads, and merge_heads of one input at column `offset` of y [N, T, w] (ops.def) */
cudaError_t gpu_split_heads(const void *x, void *y, int64_t n, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset, unsigned bf, cudaStream_t st);
cudaError_t gpu_merge_heads(const void *x, void *y, int64_t n, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset, unsigned bf, cudaStream_t st);
/* causal_softmax and its gradient (ops.def): rows of t entries, row r using 0..r % t */
cudaError_t gpu_causal_softmax(const float *x, float *y, int64_t rows, int64_t t, cudaStream_t st);
cudaError_t gpu_causal_softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows, int64_t t,
                                   cudaStream_t st);
/* softmax_crossentropy_ids and its gradient (ops.def): rows of k logits, a class id each. */
cudaError_t gpu_xent_ids(const void *z, const int32_t *ids, double *rowloss, float *loss, int64_t rows, int64_t k,
                         unsigned bf, cudaStream_t st);
cudaError_t gpu_xent_ids_bwd(const void *z, const int32_t *ids, void *dz, int64_t rows, int64_t k, unsigned bf,
                             cudaStream_t st);
/* Both for a block of nr of the rows (the fused output layer's: its gradient / rows, in place where dz is z;
   the rows' losses in rowloss), then the mean of all rows' losses. bf: bit 0 z, bit 2 dz. */
cudaError_t gpu_xent_ids_block(const void *z, const int32_t *ids, double *rowloss, void *dz, int64_t nr,
                               int64_t rows, int64_t k, unsigned bf, cudaStream_t st);
cudaError_t gpu_xent_mean_rows(const double *rowloss, float *loss, int64_t rows, cudaStream_t st);

/*
 * Fused attention's elementwise parts (cuda/attention.c): a query chunk's
 * float32 scores s [heads, rows, keys] (queries q0.., keys 0..keys-1;
 * causal: query q sees keys 0..q) to probabilities p and the queries'
 * log-sum-exp lse [heads, t]; the backward's p and ds = alpha p (dp - dd)
 * from s, dp = dy v^T, lse and dd = rowsum(dy y) [heads, t]
 * (gpu_att_rowdot, dy and y [t, heads d]). p and ds: bit 1 of bf
 * (att_softmax), bits 4 and 5 (att_grad).
 */
cudaError_t gpu_att_softmax(const float *s, void *p, float *lse, int64_t heads, int64_t rows, int64_t keys,
                            int64_t q0, int64_t t, bool causal, unsigned bf, cudaStream_t st);
cudaError_t gpu_att_grad(const float *s, const float *dp, const float *lse, const float *dd, void *p, void *ds,
                         int64_t heads, int64_t rows, int64_t keys, int64_t q0, int64_t t, bool causal, float alpha,
                         unsigned bf, cudaStream_t st);
cudaError_t gpu_att_rowdot(const void *dy, const void *y, float *dd, int64_t heads, int64_t t, int64_t d, unsigned bf,
                           cudaStream_t st);
/* y [rows, cols] with rows ld_y apart = x [rows, cols] with rows ld_x apart, converted to y's type */
cudaError_t gpu_copy_2d(const void *x, int64_t ld_x, void *y, int64_t ld_y, int64_t rows, int64_t cols, unsigned bf,
                        cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
