/*
 * cuda/elementwise.cu - the CUDA kernels of the ops that cuDNN and cuBLAS
 * do not compute with our semantics (cuda/elementwise.h lists them).
 *
 * Each kernel is the CPU backend's loop (runtime/cpu/kernels.c) with one
 * thread per output element, or one block per reduction:
 *
 *   - elementwise ops use grid-stride loops over a 1-D grid;
 *   - reductions (batchnorm's statistics, bias_grad, the loss) give one
 *     block to each channel or row (grad_sumsq one block in all), or to
 *     each group of a channel's images (batchnorm, bias_grad), whose sums
 *     a second kernel adds in order; a block's threads sum strided partial
 *     sums in double and combine them by a tree in shared memory, so the
 *     result has the same bits at every run;
 *   - the pooling gradients gather: each input element sums the windows
 *     that contain it, in the raster order in which the CPU backend
 *     scatters them, so nothing is summed with atomics;
 *   - dropout calls autotm/random.h's rt_dropout_keep, and the
 *     activations base/activation.h's act_value and act_grad (in
 *     double), the very functions the interpreter uses, and the updates
 *     base/optim.h's.
 *
 * The kernels of the ops that a bf16 program runs on bf16 data read and
 * write their activations through In and Out, which hold float32 or
 * bfloat16: a bf16 element is widened exactly, the arithmetic is the
 * float32 kernel's, and a result is rounded to float32 and then to the
 * nearest bfloat16 (base/bf16.h), as the CPU backend's widened kernels and
 * the interpreter do.
 */
#include "elementwise.h"
#include "bf16.h"      /* base/ */
#include "layernorm.h" /* base/ */
#include "ops.h"       /* base/ */

#include "autotm/random.h"
#include "autotm/rt.h"

namespace {

const int THREADS = 256;   /* threads of every block (a power of 2 for the tree sums) */
const int64_t MAX_BLOCKS = 1 << 20;

unsigned grid(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

/* An argument that holds float32 or bfloat16 elements, read as float32. */
struct In {
	const void *p;
	bool bf;
	__device__ float operator[](int64_t i) const
	{
		return bf ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
	}
	/* the argument from element o on */
	__device__ In operator+(int64_t o) const
	{
		return In{bf ? (const void *)((const uint16_t *)p + o) : (const void *)((const float *)p + o), bf};
	}
};

/* An argument written as float32 or bfloat16 (rounded to nearest, ties to even). */
struct Out {
	void *p;
	bool bf;
	__device__ void set(int64_t i, float v) const
	{
		if (bf)
			((uint16_t *)p)[i] = bf16_from_f32(v);
		else
			((float *)p)[i] = v;
	}
	__device__ float operator[](int64_t i) const
	{
		return bf ? bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
	}
	__device__ Out operator+(int64_t o) const
	{
		return Out{bf ? (void *)((uint16_t *)p + o) : (void *)((float *)p + o), bf};
	}
};

/* Pointer argument i of a launcher whose mask bf has bit i set for bfloat16. */
In in_arg(const void *p, unsigned bf, int i)
{
	return In{p, (bf >> i & 1u) != 0};
}

Out out_arg(void *p, unsigned bf, int i)
{
	return Out{p, (bf >> i & 1u) != 0};
}

/*
 * A fused node's epilogue (elementwise.h's GpuEpilogue) on the device:
 * apply(i, v, out_bf) is what element i of the output holds, v being what
 * the op computed there.
 */
struct Epi {
	Act act;
	In sum;
	bool round; /* the sum's operand rounded to the output's type first (all but a dense's) */
	int64_t blk, sblk;
	__device__ float apply(int64_t i, float v, bool out_bf) const
	{
		if (act != ACT_NONE)
			v = (float)act_value(act, (double)v);
		if (sum.p) {
			if (out_bf && round)
				v = bf16_to_f32(bf16_from_f32(v));
			v += sum[i / blk * sblk + i % blk];
		}
		return v;
	}
};

Epi epi_of(const GpuEpilogue *e)
{
	if (!e)
		return Epi{ACT_NONE, In{nullptr, false}, false, 1, 1};
	return Epi{e->act, In{e->sum, e->sum_bf}, !e->round_f32, e->blk > 0 ? e->blk : 1, e->sblk > 0 ? e->sblk : 1};
}

#define FOR_EACH(i, n) \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* The sum of v over a block of T threads; every thread gets it. */
template <int T> __device__ double block_sum_of(double v)
{
	__shared__ double sh[T];
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int s = T / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s)
			sh[threadIdx.x] += sh[threadIdx.x + s];
		__syncthreads();
	}
	double r = sh[0];
	__syncthreads();
	return r;
}

__device__ double block_sum(double v)
{
	return block_sum_of<THREADS>(v);
}

/* The maximum of v over the block; every thread gets it. */
__device__ float block_max(float v)
{
	__shared__ float sh[THREADS];
	sh[threadIdx.x] = v;
	__syncthreads();
	for (int s = THREADS / 2; s > 0; s >>= 1) {
		if ((int)threadIdx.x < s)
			sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
		__syncthreads();
	}
	float r = sh[0];
	__syncthreads();
	return r;
}

__global__ void fill_rows(Out y, In b, int64_t n, int64_t cols)
{
	FOR_EACH(i, n)
		y.set(i, b[i % cols]);
}

/* y [n, c, inner] += b [c]: a convolution's bias (b NULL: none), then its epilogue */
__global__ void add_channels(Out y, In b, int64_t total, int64_t c, int64_t inner, Epi e)
{
	FOR_EACH(i, total)
		y.set(i, e.apply(i, b.p ? y[i] + b[i / inner % c] : y[i], y.bf));
}

__global__ void eltwise(Act act, In x, Out y, int64_t n)
{
	FOR_EACH(i, n)
		y.set(i, (float)act_value(act, (double)x[i]));
}

__global__ void eltwise_bwd(Act act, In saved, In dy, Out dx, int64_t n)
{
	FOR_EACH(i, n)
		dx.set(i, (float)act_grad(act, (double)saved[i], (double)dy[i]));
}

/* cast: y = x in y's type */
__global__ void cast(In x, Out y, int64_t n)
{
	FOR_EACH(i, n)
		y.set(i, x[i]);
}

/* The inputs of an add, passed by value. */
struct AddArgs {
	In x[GPU_MAX_ADD];
};

__global__ void add(AddArgs a, int nin, Out y, int64_t n, Epi e)
{
	FOR_EACH(i, n) {
		float s = a.x[0][i];
		/* unrolled to the constant bound, so that every a.x[k] is a constant index into the
		   parameters: a variable one makes each thread copy them to local memory first */
#pragma unroll
		for (int k = 1; k < GPU_MAX_ADD; k++)
			if (k < nin)
				s += a.x[k][i];
		y.set(i, e.apply(i, s, y.bf));
	}
}

__global__ void dropout(In x, Out y, int64_t n, uint64_t seed, uint64_t step, double p, Epi e)
{
	FOR_EACH(i, n)
		y.set(i, e.apply(i, rt_dropout_keep(seed, step, (uint64_t)i, p) ? (float)((double)x[i] / (1.0 - p)) : 0.0f,
		                 y.bf));
}

/* The first and last window along one dimension that contain position r. */
__device__ void windows_of(int64_t r, int64_t k, int64_t s, int64_t p, int64_t nout, int64_t *first, int64_t *last)
{
	int64_t lo = r + p - k + 1;
	*first = lo <= 0 ? 0 : (lo + s - 1) / s;
	*last = (r + p) / s < nout - 1 ? (r + p) / s : nout - 1;
}

/*
 * maxpool_bwd in two kernels: each window's first maximum, as its offset
 * in the window (maxpool_argmax, one thread a window, into `arg`: base/ops.h's
 * op_maxpool_arg_bytes); then each input element gathers dy of the windows
 * that chose it, in raster order (maxpool_gather). Windows of more than 255
 * elements take maxpool_bwd, which finds each window's maximum again for
 * every element it contains.
 */
__global__ void maxpool_argmax(In x, uint8_t *arg, int64_t planes, int64_t h, int64_t w, int64_t ho,
                               int64_t wo, GpuWindow g)
{
	FOR_EACH(o, planes * ho * wo) {
		int64_t pl = o / (ho * wo);
		int rem = (int)(o - pl * ho * wo), i = rem / (int)wo, j = rem % (int)wo;
		In xp = x + pl * h * w;
		int h0 = i * (int)g.sh - (int)g.ph, w0 = j * (int)g.sw - (int)g.pw;
		int h1 = h0 + (int)g.kh < h ? h0 + (int)g.kh : (int)h, w1 = w0 + (int)g.kw < w ? w0 + (int)g.kw : (int)w;
		int at = 0;
		bool found = false;
		float m = 0;
		for (int rr = h0 < 0 ? 0 : h0; rr < h1; rr++)
			for (int qq = w0 < 0 ? 0 : w0; qq < w1; qq++) {
				float v = xp[(int64_t)rr * w + qq];
				if (!found || v > m) {
					found = true;
					m = v;
					at = (rr - h0) * (int)g.kw + (qq - w0);
				}
			}
		arg[o] = (uint8_t)at;
	}
}

__global__ void maxpool_gather(const uint8_t *arg, In dy, Out dx, int64_t planes, int64_t h, int64_t w,
                               int64_t ho, int64_t wo, GpuWindow g)
{
	FOR_EACH(e, planes * h * w) {
		int64_t pl = e / (h * w);
		int rem = (int)(e - pl * h * w), r = rem / (int)w, q = rem % (int)w;
		int64_t i0, i1, j0, j1;
		windows_of(r, g.kh, g.sh, g.ph, ho, &i0, &i1);
		windows_of(q, g.kw, g.sw, g.pw, wo, &j0, &j1);
		In dyp = dy + pl * ho * wo;
		const uint8_t *ap = arg + pl * ho * wo;
		float acc = 0;
		for (int i = (int)i0; i <= (int)i1; i++)
			for (int j = (int)j0; j <= (int)j1; j++) {
				int at = (r - (i * (int)g.sh - (int)g.ph)) * (int)g.kw + (q - (j * (int)g.sw - (int)g.pw));
				if (ap[i * wo + j] == at)
					acc += dyp[i * wo + j];
			}
		dx.set(e, acc);
	}
}

__global__ void maxpool_bwd(In x, In dy, Out dx, int64_t planes, int64_t h, int64_t w,
                            int64_t ho, int64_t wo, GpuWindow g)
{
	FOR_EACH(e, planes * h * w) {
		int64_t pl = e / (h * w), r = e / w % h, q = e % w, i0, i1, j0, j1;
		In xp = x + pl * h * w, dyp = dy + pl * ho * wo;
		windows_of(r, g.kh, g.sh, g.ph, ho, &i0, &i1);
		windows_of(q, g.kw, g.sw, g.pw, wo, &j0, &j1);
		float acc = 0;
		for (int64_t i = i0; i <= i1; i++)
			for (int64_t j = j0; j <= j1; j++) {
				int64_t h0 = i * g.sh - g.ph, w0 = j * g.sw - g.pw, best = -1;
				int64_t h1 = h0 + g.kh < h ? h0 + g.kh : h, w1 = w0 + g.kw < w ? w0 + g.kw : w;
				for (int64_t rr = h0 < 0 ? 0 : h0; rr < h1; rr++)
					for (int64_t qq = w0 < 0 ? 0 : w0; qq < w1; qq++)
						if (best < 0 || xp[rr * w + qq] > xp[best])
							best = rr * w + qq;
				if (best == r * w + q)
					acc += dyp[i * wo + j];
			}
		dx.set(e, acc);
	}
}

__global__ void avgpool_bwd(In dy, Out dx, int64_t planes, int64_t h, int64_t w, int64_t ho,
                            int64_t wo, GpuWindow g)
{
	float div = (float)(g.kh * g.kw);
	FOR_EACH(e, planes * h * w) {
		int64_t pl = e / (h * w), r = e / w % h, q = e % w, i0, i1, j0, j1;
		windows_of(r, g.kh, g.sh, g.ph, ho, &i0, &i1);
		windows_of(q, g.kw, g.sw, g.pw, wo, &j0, &j1);
		float acc = 0;
		for (int64_t i = i0; i <= i1; i++)
			for (int64_t j = j0; j <= j1; j++)
				acc += dy[(pl * ho + i) * wo + j] / div;
		dx.set(e, acc);
	}
}

__global__ void globalavgpool_bwd(In dy, Out dx, int64_t n, int64_t inner)
{
	FOR_EACH(i, n)
		dx.set(i, dy[i / inner] / (float)inner);
}

/*
 * Pooling forward on bf16 data (cuDNN pools float32): max over the window's
 * elements inside the image; average: their sum over kh * kw (the padding
 * counted), as the CPU backend; global average: the plane's mean in double.
 */
__global__ void pool_fwd(In x, Out y, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo, GpuWindow g,
                         bool max)
{
	FOR_EACH(o, planes * ho * wo) {
		int64_t pl = o / (ho * wo), i = o / wo % ho, j = o % wo;
		int64_t h0 = i * g.sh - g.ph, w0 = j * g.sw - g.pw;
		int64_t h1 = h0 + g.kh < h ? h0 + g.kh : h, w1 = w0 + g.kw < w ? w0 + g.kw : w;
		In xp = x + pl * h * w;
		float acc = max ? -INFINITY : 0.0f;
		for (int64_t rr = h0 < 0 ? 0 : h0; rr < h1; rr++)
			for (int64_t qq = w0 < 0 ? 0 : w0; qq < w1; qq++)
				acc = max ? fmaxf(acc, xp[rr * w + qq]) : acc + xp[rr * w + qq];
		y.set(o, max ? acc : acc / (float)(g.kh * g.kw));
	}
}

__global__ void global_pool_fwd(In x, Out y, int64_t planes, int64_t inner)
{
	FOR_EACH(pl, planes) {
		double s = 0;
		for (int64_t i = 0; i < inner; i++)
			s += x[pl * inner + i];
		y.set(pl, (float)(s / (double)inner));
	}
}

/*
 * A thread's walk over channel c of an [n, nc, inner] tensor, in a block
 * of T threads: the elements j = threadIdx.x, threadIdx.x + T, ... of the
 * channel's n * inner, in that order, as (image b, offset i) without a
 * 64-bit division per element (the division is done once).
 */
struct ChannelWalk {
	int64_t b, i;   /* where the thread is: image b, offset i in its plane */
	int64_t db, di; /* T elements on: db images and di more */
};

template <int T> __device__ ChannelWalk walk_start(int64_t inner)
{
	ChannelWalk w;
	w.b = threadIdx.x / inner;
	w.i = threadIdx.x % inner;
	w.db = T / inner;
	w.di = T % inner;
	return w;
}

__device__ void walk_next(ChannelWalk *w, int64_t inner)
{
	w->b += w->db;
	w->i += w->di;
	if (w->i >= inner) {
		w->i -= inner;
		w->b++;
	}
}

#define FOR_CHANNEL_OF(T, w, n, inner) for (ChannelWalk w = walk_start<T>(inner); w.b < (n); walk_next(&w, inner))
#define FOR_CHANNEL(w, n, inner) FOR_CHANNEL_OF(THREADS, w, n, inner)
/* The index of the walk's element in channel c */
#define CHANNEL_AT(w, c, nc, inner) (((w).b * (nc) + (c)) * (inner) + (w).i)

/*
 * Batch normalization in groups (base/ops.h's op_bn_groups): block (c, g)
 * of a [c, groups] grid walks the images [n g / groups, n (g + 1) / groups)
 * of channel c; a first kernel leaves each block's two partial sums in
 * `part` ([c, groups, 2] doubles), a second combines a channel's groups in
 * order (every block of the channel alike) and writes its share of the
 * output. Two passes over x forward (sums, then y) and two over x and dy
 * backward; the variance is E[x^2] - mean^2 in double.
 */
const int BN_THREADS = 256;

/* The walk of block (c, g) over its images of channel c. */
#define FOR_GROUP(w, n, inner)                                                                             \
	for (ChannelWalk w = bn_walk((n) * blockIdx.y / gridDim.y, inner); w.b < (n) * (blockIdx.y + 1) / gridDim.y; \
	     walk_next(&w, inner))

__device__ ChannelWalk bn_walk(int64_t b0, int64_t inner)
{
	ChannelWalk w = walk_start<BN_THREADS>(inner);
	w.b += b0;
	return w;
}

/* Thread 0 stores the block's sums of a and b as its group's partial sums. */
__device__ void bn_store(double *part, double a, double b)
{
	a = block_sum_of<BN_THREADS>(a);
	b = block_sum_of<BN_THREADS>(b);
	if (threadIdx.x == 0) {
		double *p = part + 2 * ((int64_t)blockIdx.x * gridDim.y + blockIdx.y);
		p[0] = a;
		p[1] = b;
	}
}

/* The sums of channel blockIdx.x's groups, in order. */
__device__ void bn_combine(const double *part, double *a, double *b)
{
	const double *p = part + 2 * (int64_t)blockIdx.x * gridDim.y;
	double s = 0, t = 0;
	for (unsigned g = 0; g < gridDim.y; g++) {
		s += p[2 * g];
		t += p[2 * g + 1];
	}
	*a = s;
	*b = t;
}

__global__ void bn_sums(In x, double *part, int64_t n, int64_t nc, int64_t inner)
{
	int64_t c = blockIdx.x;
	double s = 0, ss = 0;
	FOR_GROUP(w, n, inner) {
		double v = x[CHANNEL_AT(w, c, nc, inner)];
		s += v;
		ss += v * v;
	}
	bn_store(part, s, ss);
}

__global__ void bn_normalize(In x, const float *gamma, const float *beta, Out y, float *mean, float *var,
                             const double *part, int64_t n, int64_t nc, int64_t inner, double eps, Epi e)
{
	int64_t c = blockIdx.x;
	double m = (double)(n * inner), s, ss;
	bn_combine(part, &s, &ss);
	double mu = s / m, v = ss / m - mu * mu;
	if (v < 0)
		v = 0;
	double is = 1.0 / sqrt(v + eps), a = is * gamma[c], b = beta[c] - mu * a;
	FOR_GROUP(w, n, inner) {
		int64_t idx = CHANNEL_AT(w, c, nc, inner);
		y.set(idx, e.apply(idx, (float)(x[idx] * a + b), y.bf));
	}
	if (blockIdx.y == 0 && threadIdx.x == 0) {
		mean[c] = (float)mu;
		var[c] = (float)v;
	}
}

/*
 * The gradient batchnorm_bwd reads at idx: dy, or where an activation was
 * fused onto the batchnorm (y.p set), dy through it from y.
 */
__device__ double bn_dy(In dy, In y, Act act, int64_t idx)
{
	return y.p ? act_grad(act, (double)y[idx], (double)dy[idx]) : (double)dy[idx];
}

/* backward: sums of dy and of dy (x - mean) */
__global__ void bn_bwd_sums(In x, const float *mean, In dy, In y, Act act, double *part, int64_t n, int64_t nc,
                            int64_t inner)
{
	int64_t c = blockIdx.x;
	double mu = mean[c], sdy = 0, sdyx = 0;
	FOR_GROUP(w, n, inner) {
		int64_t idx = CHANNEL_AT(w, c, nc, inner);
		double d = bn_dy(dy, y, act, idx);
		sdy += d;
		sdyx += d * (x[idx] - mu);
	}
	bn_store(part, sdy, sdyx);
}

__global__ void bn_bwd_dx(In x, const float *gamma, const float *mean, const float *var, In dy, In y, Act act,
                          Out dx, float *dgamma, float *dbeta, const double *part, int64_t n, int64_t nc,
                          int64_t inner, double eps, Epi e)
{
	int64_t c = blockIdx.x;
	double m = (double)(n * inner), invstd = 1.0 / sqrt((double)var[c] + eps), mu = mean[c], sdy, sdyx;
	bn_combine(part, &sdy, &sdyx);
	sdyx *= invstd; /* the sum of dy xhat */
	/* dx = gamma invstd / m (m dy - sdy - xhat sdyx) = dy p + x q + r */
	double p = gamma[c] * invstd, q = -p * invstd * sdyx / m, r = -p * sdy / m - mu * q;
	FOR_GROUP(w, n, inner) {
		int64_t idx = CHANNEL_AT(w, c, nc, inner);
		dx.set(idx, e.apply(idx, (float)(bn_dy(dy, y, act, idx) * p + x[idx] * q + r), dx.bf));
	}
	if (blockIdx.y == 0 && threadIdx.x == 0) {
		dbeta[c] = (float)sdy;
		dgamma[c] = (float)sdyx;
	}
}

/* out[i] = the sum over images of part[n][i], n in order, in double. */
__global__ void sum_images(const float *part, float *out, int64_t images, int64_t len)
{
	FOR_EACH(i, len) {
		double s = 0;
		for (int64_t n = 0; n < images; n++)
			s += part[n * len + i];
		out[i] = (float)s;
	}
}

/*
 * bias_grad in groups (base/ops.h's op_bias_groups): block (c, g) of a
 * [c, groups] grid sums channel c over group g's images into
 * part[c groups + g]; with inner 1 (rows), thread c of block (x, g) sums
 * column c over group g's rows, so that a warp reads consecutive
 * channels; then bias_combine adds a channel's groups in order.
 */
__global__ void bias_sums(In dy, double *part, int64_t n, int64_t nc, int64_t inner)
{
	int64_t c = blockIdx.x;
	double s = 0;
	FOR_GROUP(w, n, inner)
		s += dy[CHANNEL_AT(w, c, nc, inner)];
	s = block_sum_of<BN_THREADS>(s);
	if (threadIdx.x == 0)
		part[(int64_t)blockIdx.x * gridDim.y + blockIdx.y] = s;
}

__global__ void bias_sums_rows(In dy, double *part, int64_t rows, int64_t nc)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y, groups = gridDim.y;
	if (c >= nc)
		return;
	double s = 0;
	for (int64_t r = rows * g / groups; r < rows * (g + 1) / groups; r++)
		s += dy[r * nc + c];
	part[c * groups + g] = s;
}

__global__ void bias_combine(const double *part, Out db, int64_t nc, int64_t groups)
{
	FOR_EACH(c, nc) {
		double s = 0;
		for (int64_t g = 0; g < groups; g++)
			s += part[c * groups + g];
		db.set(c, (float)s);
	}
}

/* One block per row: the row's maximum and sum of exp(z - max). */
__device__ void row_stats(In z, int64_t k, float *mx, double *sum)
{
	float m = -INFINITY;
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		m = fmaxf(m, z[j]);
	m = block_max(m);
	double s = 0;
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		s += exp((double)z[j] - m);
	*mx = m;
	*sum = block_sum(s);
}

__global__ void xent_rows(const float *z, const float *y, double *rowloss, int64_t k)
{
	int64_t r = blockIdx.x;
	z += r * k, y += r * k;
	float mx;
	double s;
	row_stats(In{z, false}, k, &mx, &s);
	double lse = mx + log(s), l = 0;
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		if (y[j] != 0)
			l -= (double)y[j] * ((double)z[j] - lse);
	l = block_sum(l);
	if (threadIdx.x == 0)
		rowloss[r] = l;
}

/* The rows' losses summed in order, as the CPU backend does. */
__global__ void xent_mean(const double *rowloss, float *loss, int64_t rows)
{
	double total = 0;
	for (int64_t r = 0; r < rows; r++)
		total += rowloss[r];
	loss[0] = (float)(total / (double)rows);
}

__global__ void xent_bwd(const float *z, const float *y, float *dz, int64_t rows, int64_t k)
{
	int64_t r = blockIdx.x;
	z += r * k, y += r * k, dz += r * k;
	float mx;
	double s, ysum = 0;
	row_stats(In{z, false}, k, &mx, &s);
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		ysum += y[j];
	ysum = block_sum(ysum);
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		dz[j] = (float)((exp((double)z[j] - mx) / s * ysum - y[j]) / (double)rows);
}

/* One block: acc (0 when NULL) + the sum of g's squares, into *out. */
__global__ void grad_sumsq(In g, const float *acc, float *out, int64_t n)
{
	double s = 0;
	for (int64_t i = threadIdx.x; i < n; i += THREADS)
		s += (double)g[i] * (double)g[i];
	s = block_sum(s);
	if (threadIdx.x == 0)
		*out = (float)((acc ? (double)*acc : 0.0) + s);
}

/* The updates by base/optim.h's rules; m, v: the state the op has (NULL otherwise). */
__global__ void update(int op, OptimHyper h, OptimStep st, float *w, In g, float *m, float *v, const float *sumsq,
                       int64_t n)
{
	double scale = sumsq ? optim_clip_scale(h.clip, (double)*sumsq) : 1.0;
	FOR_EACH(i, n) {
		if (op == RT_OP_ADAMW) {
			double mi = (double)m[i], vi = (double)v[i];
			w[i] = (float)optim_adamw(&h, &st, scale, (double)w[i], (double)g[i], &mi, &vi);
			m[i] = (float)mi;
			v[i] = (float)vi;
		} else if (m) {
			double mi = (double)m[i];
			w[i] = (float)optim_sgd_momentum(&h, &st, scale, (double)w[i], (double)g[i], &mi);
			m[i] = (float)mi;
		} else {
			w[i] = (float)optim_sgd(&h, &st, scale, (double)w[i], (double)g[i]);
		}
	}
}

/* thread i < c updates channel i; thread 0 also counts the batch */
__global__ void bn_stats(float *rm, float *rv, float *count, const float *mean, const float *var, int64_t c,
                         double unbias, double m)
{
	FOR_EACH(i, c) {
		rm[i] = (float)((1 - m) * (double)rm[i] + m * (double)mean[i]);
		rv[i] = (float)((1 - m) * (double)rv[i] + m * (double)var[i] * unbias);
		if (i == 0)
			count[0] = (float)((double)count[0] + 1);
	}
}

/* layernorm (ops.def, base/layernorm.h): thread r normalises row r, as the CPU */
__global__ void layernorm(const float *x, const float *w, const float *b, Out y, float *mean, float *rstd,
                          int64_t rows, int64_t c, double eps)
{
	FOR_EACH(r, rows)
		layernorm_row(x + r * c, w, b, (y + r * c).p, y.bf, c, eps, &mean[r], &rstd[r]);
}

/* its dx: thread r takes row r (then adds the row of a fused sum: sum not NULL) */
__global__ void layernorm_bwd_data(const float *x, const float *w, const float *mean, const float *rstd,
                                   In dy, const float *sum, float *dx, int64_t rows, int64_t c)
{
	FOR_EACH(r, rows) {
		layernorm_bwd_row(x + r * c, w, mean[r], rstd[r], (dy + r * c).p, dy.bf, dx + r * c, c);
		for (int64_t j = 0; sum && j < c; j++)
			dx[r * c + j] += sum[r * c + j];
	}
}

/* A fused node's epilogue over its output y, in place (a convolution's or a dense's: after cuDNN or cuBLAS) */
__global__ void epilogue(Out y, int64_t n, Epi e)
{
	FOR_EACH(i, n)
		y.set(i, e.apply(i, y[i], y.bf));
}

/* its dweight and dbias: thread j sums column j over the rows in order */
__global__ void layernorm_bwd_params(const float *x, const float *mean, const float *rstd, In dy, float *dw,
                                     float *db, int64_t rows, int64_t c)
{
	FOR_EACH(j, c)
		layernorm_bwd_col(x, mean, rstd, dy.p, dy.bf, rows, c, j, &dw[j], &db[j]);
}

/* element i of x [n, c, inner]: x alpha + beta of its channel (base/ops.h's op_bn_eval_affine) */
__global__ void bn_eval(In x, const float *w, const float *b, const float *rm, const float *rv, Out y,
                        int64_t total, int64_t c, int64_t inner, double eps)
{
	FOR_EACH(i, total) {
		int64_t ch = i / inner % c;
		double alpha = (double)w[ch] / sqrt((double)rv[ch] + eps);
		double beta = (double)b[ch] - (double)rm[ch] * alpha;
		y.set(i, (float)((double)x[i] * alpha + beta));
	}
}

dim3 bn_grid(int64_t n, int64_t c)
{
	return dim3((unsigned)c, (unsigned)op_bn_groups(n, c));
}

/*
 * split_heads: x [N, T, W] -> y [N, H, T, D] from column `offset`; merge_heads
 * the other way for one input `part` of y [N, T, parts H D]. A thread per element.
 */
__global__ void split_heads(In x, Out y, int64_t total, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset)
{
	FOR_EACH(i, total) {
		int64_t di = i % d, ti = i / d % t, hi = i / (d * t) % h, ni = i / (d * t * h);
		y.set(i, x[(ni * t + ti) * w + offset + hi * d + di]);
	}
}

__global__ void merge_heads(In x, Out y, int64_t total, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset)
{
	FOR_EACH(i, total) {
		int64_t di = i % d, ti = i / d % t, hi = i / (d * t) % h, ni = i / (d * t * h);
		y.set((ni * t + ti) * w + offset + hi * d + di, x[i]);
	}
}

/*
 * causal_softmax: a block per row (grid-stride), row r of length t using
 * its entries 0..r % t: the maximum, the sum of exponentials in double, then
 * the quotients; the entries after r % t are 0. The backward pass sums
 * y dy in double the same way.
 */
__global__ void causal_softmax(const float *x, float *y, int64_t rows, int64_t t)
{
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * t;
		float *yr = y + r * t;
		int64_t len = r % t + 1;
		float mx = -INFINITY;
		for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
			mx = fmaxf(mx, xr[j]);
		mx = block_max(mx);
		double part = 0;
		for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
			part += (double)expf(xr[j] - mx);
		float inv = (float)(1 / block_sum(part));
		for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
			yr[j] = j < len ? expf(xr[j] - mx) * inv : 0.f;
	}
}

__global__ void causal_softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows, int64_t t)
{
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *yr = y + r * t, *dyr = dy + r * t;
		float *dxr = dx + r * t;
		int64_t len = r % t + 1;
		double part = 0;
		for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
			part += (double)yr[j] * dyr[j];
		double dot = block_sum(part);
		for (int64_t j = threadIdx.x; j < t; j += blockDim.x)
			dxr[j] = j < len ? (float)(yr[j] * (dyr[j] - dot)) : 0.f;
	}
}

} /* namespace */

/* ---- launchers ---------------------------------------------------------------- */

/* embedding: y[r, :] = w[ids[r], :] */
__global__ void embedding(const int32_t *ids, const float *w, float *y, int64_t rows, int64_t c)
{
	FOR_EACH(i, rows * c)
		y[i] = w[(int64_t)ids[i / c] * c + i % c];
}

/* embedding_bwd: a thread per column adds the rows in order (deterministic); dw zeroed first. */
__global__ void embedding_bwd(const float *dy, const int32_t *ids, float *dw, int64_t rows, int64_t c)
{
	FOR_EACH(j, c)
		for (int64_t r = 0; r < rows; r++)
			dw[(int64_t)ids[r] * c + j] += dy[r * c + j];
}

/* position_embedding: y = x + w[t] over n rows of tc = T * C */
__global__ void position(In x, In w, Out y, int64_t total, int64_t tc)
{
	FOR_EACH(i, total)
		y.set(i, x[i] + w[i % tc]);
}

/* transpose: x [n, ra, cb] -> y [n, cb, ra] */
__global__ void transpose3(In x, Out y, int64_t total, int64_t ra, int64_t cb)
{
	FOR_EACH(o, total) {
		int64_t b = o / (ra * cb), r = o % (ra * cb), j = r / ra, i = r % ra;
		y.set(o, x[b * ra * cb + i * cb + j]);
	}
}

/* mean over the middle of [outer, len, inner]: one thread per (outer, inner), summed in double */
__global__ void mean_mid(const float *x, float *y, int64_t outer, int64_t len, int64_t inner)
{
	FOR_EACH(o, outer * inner) {
		int64_t b = o / inner, i = o % inner;
		double s = 0;
		for (int64_t k = 0; k < len; k++)
			s += x[(b * len + k) * inner + i];
		y[o] = (float)(s / (double)len);
	}
}

/* its gradient: dx [outer, len, inner] = dy [outer, inner] / len */
__global__ void mean_mid_bwd(const float *dy, float *dx, int64_t outer, int64_t len, int64_t inner)
{
	FOR_EACH(o, outer * len * inner) {
		int64_t b = o / (len * inner), i = o % inner;
		dx[o] = (float)((double)dy[b * inner + i] / (double)len);
	}
}

/* mul: y = x s, x as [rows, inner], s as [rows, sin] (sin 1: repeated over the row) */
__global__ void mul_rows(In x, In sc, Out y, int64_t rows, int64_t inner, int64_t sin)
{
	FOR_EACH(o, rows * inner) {
		int64_t r = o / inner, i = o % inner;
		y.set(o, x[o] * sc[r * sin + (sin == 1 ? 0 : i)]);
	}
}

/* mul_bwd_scale: ds = dy x, summed over each row where s repeats (in double) */
__global__ void mul_rows_bwd(In dy, In x, Out ds, int64_t rows, int64_t inner, int64_t sin)
{
	FOR_EACH(o, rows * sin) {
		if (sin != 1) {
			ds.set(o, dy[o] * x[o]);
			continue;
		}
		double s = 0;
		for (int64_t i = 0; i < inner; i++)
			s += (double)dy[o * inner + i] * x[o * inner + i];
		ds.set(o, (float)s);
	}
}

/* clamp: y = x in [lo, hi]; clamp_bwd: dx = dy where lo <= x <= hi */
__global__ void clamp_elems(In x, In dy, Out y, int64_t n, float lo, float hi)
{
	FOR_EACH(i, n) {
		float v = x[i];
		y.set(i, dy.p ? (v >= lo && v <= hi ? dy[i] : 0.0f) : (v < lo ? lo : v > hi ? hi : v));
	}
}

/* broadcast: w [c] in every row of y */
__global__ void broadcast_rows(In w, Out y, int64_t total, int64_t c)
{
	FOR_EACH(i, total)
		y.set(i, w[i % c]);
}

/* position_embedding_bwd: dw[i] = sum over n of dy[n, i] for i < tc, 0 after */
__global__ void position_bwd(const float *dy, float *dw, int64_t n, int64_t tc, int64_t all)
{
	FOR_EACH(i, all) {
		double s = 0;
		for (int64_t b = 0; i < tc && b < n; b++)
			s += dy[b * tc + i];
		dw[i] = (float)s;
	}
}

__global__ void xent_ids_rows(In z, const int32_t *ids, double *rowloss, int64_t k)
{
	int64_t r = blockIdx.x;
	z = z + r * k;
	float mx;
	double s;
	row_stats(z, k, &mx, &s);
	if (threadIdx.x == 0)
		rowloss[r] = mx + log(s) - (double)z[ids[r]];
}

__global__ void xent_ids_bwd(In z, const int32_t *ids, Out dz, int64_t rows, int64_t k)
{
	int64_t r = blockIdx.x;
	z = z + r * k, dz = dz + r * k;
	float mx;
	double s;
	row_stats(z, k, &mx, &s);
	for (int64_t j = threadIdx.x; j < k; j += THREADS)
		dz.set(j, (float)((exp((double)z[j] - mx) / s - (j == ids[r])) / (double)rows));
}

extern "C" {

cudaError_t gpu_fill_rows(void *y, const void *b, int64_t rows, int64_t cols, unsigned bf, cudaStream_t st)
{
	fill_rows<<<grid(rows * cols), THREADS, 0, st>>>(out_arg(y, bf, 0), in_arg(b, bf, 1), rows * cols, cols);
	return cudaGetLastError();
}

cudaError_t gpu_add_channels(void *y, const void *b, int64_t n, int64_t c, int64_t inner, const GpuEpilogue *e,
                             unsigned bf, cudaStream_t st)
{
	add_channels<<<grid(n * c * inner), THREADS, 0, st>>>(out_arg(y, bf, 0), in_arg(b, bf, 1), n * c * inner, c,
	                                                      inner, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_epilogue(void *y, int64_t n, const GpuEpilogue *e, unsigned bf, cudaStream_t st)
{
	epilogue<<<grid(n), THREADS, 0, st>>>(out_arg(y, bf, 0), n, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_cast(const void *x, void *y, int64_t n, unsigned bf, cudaStream_t st)
{
	cast<<<grid(n), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), n);
	return cudaGetLastError();
}

cudaError_t gpu_eltwise(Act act, const void *x, void *y, int64_t n, unsigned bf, cudaStream_t st)
{
	eltwise<<<grid(n), THREADS, 0, st>>>(act, in_arg(x, bf, 0), out_arg(y, bf, 1), n);
	return cudaGetLastError();
}

cudaError_t gpu_eltwise_bwd(Act act, const void *saved, const void *dy, void *dx, int64_t n, unsigned bf,
                            cudaStream_t st)
{
	eltwise_bwd<<<grid(n), THREADS, 0, st>>>(act, in_arg(saved, bf, 0), in_arg(dy, bf, 1), out_arg(dx, bf, 2), n);
	return cudaGetLastError();
}

cudaError_t gpu_add(const void *const *x, int nin, void *y, int64_t n, const GpuEpilogue *e, unsigned bf,
                    cudaStream_t st)
{
	if (nin < 1 || nin > GPU_MAX_ADD)
		return cudaErrorInvalidValue;
	AddArgs a = {};
	for (int k = 0; k < nin; k++)
		a.x[k] = in_arg(x[k], bf, k);
	add<<<grid(n), THREADS, 0, st>>>(a, nin, out_arg(y, bf, nin), n, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_dropout(const void *x, void *y, int64_t n, uint64_t seed, uint64_t step, double p,
                        const GpuEpilogue *e, unsigned bf, cudaStream_t st)
{
	dropout<<<grid(n), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), n, seed, step, p, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_pool(const void *x, void *y, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo, GpuWindow g,
                     int kind, unsigned bf, cudaStream_t st)
{
	if (kind == GPU_POOL_GLOBAL)
		global_pool_fwd<<<grid(planes), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), planes, h * w);
	else
		pool_fwd<<<grid(planes * ho * wo), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), planes, h, w, ho,
		                                                      wo, g, kind == GPU_POOL_MAX);
	return cudaGetLastError();
}

cudaError_t gpu_maxpool_bwd(const void *x, const void *dy, void *dx, void *arg, int64_t planes, int64_t h, int64_t w,
                            int64_t ho, int64_t wo, GpuWindow g, unsigned bf, cudaStream_t st)
{
	In xa = in_arg(x, bf, 0), dya = in_arg(dy, bf, 1);
	Out dxa = out_arg(dx, bf, 2);
	if (g.kh * g.kw > 255) {
		maxpool_bwd<<<grid(planes * h * w), THREADS, 0, st>>>(xa, dya, dxa, planes, h, w, ho, wo, g);
		return cudaGetLastError();
	}
	maxpool_argmax<<<grid(planes * ho * wo), THREADS, 0, st>>>(xa, (uint8_t *)arg, planes, h, w, ho, wo, g);
	maxpool_gather<<<grid(planes * h * w), THREADS, 0, st>>>((const uint8_t *)arg, dya, dxa, planes, h, w, ho, wo, g);
	return cudaGetLastError();
}

cudaError_t gpu_avgpool_bwd(const void *dy, void *dx, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo,
                            GpuWindow g, unsigned bf, cudaStream_t st)
{
	avgpool_bwd<<<grid(planes * h * w), THREADS, 0, st>>>(in_arg(dy, bf, 0), out_arg(dx, bf, 1), planes, h, w, ho, wo,
	                                                      g);
	return cudaGetLastError();
}

cudaError_t gpu_globalavgpool_bwd(const void *dy, void *dx, int64_t planes, int64_t inner, unsigned bf,
                                  cudaStream_t st)
{
	globalavgpool_bwd<<<grid(planes * inner), THREADS, 0, st>>>(in_arg(dy, bf, 0), out_arg(dx, bf, 1),
	                                                            planes * inner, inner);
	return cudaGetLastError();
}

cudaError_t gpu_batchnorm(const void *x, const float *gamma, const float *beta, void *y, float *mean, float *var,
                          double *part, int64_t n, int64_t c, int64_t inner, double eps, const GpuEpilogue *e,
                          unsigned bf, cudaStream_t st)
{
	In xa = in_arg(x, bf, 0);
	bn_sums<<<bn_grid(n, c), BN_THREADS, 0, st>>>(xa, part, n, c, inner);
	bn_normalize<<<bn_grid(n, c), BN_THREADS, 0, st>>>(xa, gamma, beta, out_arg(y, bf, 3), mean, var, part, n, c,
	                                                   inner, eps, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_batchnorm_bwd(const void *x, const float *gamma, const float *mean, const float *var, const void *dy,
                              const void *y, Act act, void *dx, float *dgamma, float *dbeta, double *part, int64_t n,
                              int64_t c, int64_t inner, double eps, const GpuEpilogue *e, unsigned bf,
                              cudaStream_t st)
{
	In xa = in_arg(x, bf, 0), dya = in_arg(dy, bf, 4), ya = in_arg(y, bf, 6);
	bn_bwd_sums<<<bn_grid(n, c), BN_THREADS, 0, st>>>(xa, mean, dya, ya, act, part, n, c, inner);
	bn_bwd_dx<<<bn_grid(n, c), BN_THREADS, 0, st>>>(xa, gamma, mean, var, dya, ya, act, out_arg(dx, bf, 5), dgamma,
	                                               dbeta, part, n, c, inner, eps, epi_of(e));
	return cudaGetLastError();
}

cudaError_t gpu_bias_grad(const void *dy, void *db, double *part, int64_t n, int64_t c, int64_t inner, unsigned bf,
                          cudaStream_t st)
{
	int64_t groups = op_bias_groups(n, c, inner);
	In dya = in_arg(dy, bf, 0);
	if (inner > 1)
		bias_sums<<<dim3((unsigned)c, (unsigned)groups), BN_THREADS, 0, st>>>(dya, part, n, c, inner);
	else
		bias_sums_rows<<<dim3((unsigned)((c + THREADS - 1) / THREADS), (unsigned)groups), THREADS, 0, st>>>(
			dya, part, n, c);
	bias_combine<<<grid(c), THREADS, 0, st>>>(part, out_arg(db, bf, 1), c, groups);
	return cudaGetLastError();
}

cudaError_t gpu_sum_images(const float *part, float *out, int64_t images, int64_t len, cudaStream_t st)
{
	sum_images<<<grid(len), THREADS, 0, st>>>(part, out, images, len);
	return cudaGetLastError();
}

cudaError_t gpu_xent(const float *z, const float *y, double *rowloss, float *loss, int64_t rows, int64_t k,
                     cudaStream_t st)
{
	xent_rows<<<(unsigned)rows, THREADS, 0, st>>>(z, y, rowloss, k);
	xent_mean<<<1, 1, 0, st>>>(rowloss, loss, rows);
	return cudaGetLastError();
}

cudaError_t gpu_xent_bwd(const float *z, const float *y, float *dz, int64_t rows, int64_t k, cudaStream_t st)
{
	xent_bwd<<<(unsigned)rows, THREADS, 0, st>>>(z, y, dz, rows, k);
	return cudaGetLastError();
}

cudaError_t gpu_grad_sumsq(const void *g, bool gbf, const float *acc, float *out, int64_t n, cudaStream_t st)
{
	grad_sumsq<<<1, THREADS, 0, st>>>(In{g, gbf}, acc, out, n);
	return cudaGetLastError();
}

cudaError_t gpu_update(int op, const OptimHyper *h, uint64_t step, float *w, const void *g, bool gbf, float *m,
                       float *v, const float *sumsq, int64_t n, cudaStream_t st)
{
	update<<<grid(n), THREADS, 0, st>>>(op, *h, optim_step(h, step), w, In{g, gbf}, m, v, sumsq, n);
	return cudaGetLastError();
}

cudaError_t gpu_layernorm(const float *x, const float *w, const float *b, void *y, bool ybf, float *mean, float *rstd,
                          int64_t rows, int64_t c, double eps, cudaStream_t st)
{
	layernorm<<<grid(rows), THREADS, 0, st>>>(x, w, b, Out{y, ybf}, mean, rstd, rows, c, eps);
	return cudaGetLastError();
}

cudaError_t gpu_layernorm_bwd(const float *x, const float *w, const float *mean, const float *rstd, const void *dy,
                              bool dybf, const float *sum, float *dx, float *dw, float *db, int64_t rows, int64_t c,
                              cudaStream_t st)
{
	/* the parameters' sums first: dx may be written over dy (ops.def's reuse) */
	layernorm_bwd_params<<<grid(c), THREADS, 0, st>>>(x, mean, rstd, In{dy, dybf}, dw, db, rows, c);
	layernorm_bwd_data<<<grid(rows), THREADS, 0, st>>>(x, w, mean, rstd, In{dy, dybf}, sum, dx, rows, c);
	return cudaGetLastError();
}

cudaError_t gpu_bn_eval(const void *x, const float *w, const float *b, const float *rm, const float *rv, void *y,
                        int64_t n, int64_t c, int64_t inner, double eps, unsigned bf, cudaStream_t st)
{
	int64_t total = n * c * inner;
	bn_eval<<<grid(total), THREADS, 0, st>>>(in_arg(x, bf, 0), w, b, rm, rv, out_arg(y, bf, 5), total, c, inner, eps);
	return cudaGetLastError();
}

cudaError_t gpu_bn_stats(float *rm, float *rv, float *count, const float *mean, const float *var, int64_t c,
                         double unbias, double momentum, cudaStream_t st)
{
	bn_stats<<<grid(c), THREADS, 0, st>>>(rm, rv, count, mean, var, c, unbias, momentum);
	return cudaGetLastError();
}

cudaError_t gpu_embedding(const int32_t *ids, const float *w, float *y, int64_t rows, int64_t c, cudaStream_t st)
{
	embedding<<<grid(rows * c), THREADS, 0, st>>>(ids, w, y, rows, c);
	return cudaGetLastError();
}

cudaError_t gpu_embedding_bwd(const float *dy, const int32_t *ids, float *dw, int64_t rows, int64_t c, int64_t v,
                              cudaStream_t st)
{
	cudaError_t e = cudaMemsetAsync(dw, 0, sizeof(float) * (size_t)(v * c), st);
	if (e != cudaSuccess)
		return e;
	embedding_bwd<<<grid(c), THREADS, 0, st>>>(dy, ids, dw, rows, c);
	return cudaGetLastError();
}

cudaError_t gpu_position(const void *x, const void *w, void *y, int64_t n, int64_t tc, unsigned bf, cudaStream_t st)
{
	position<<<grid(n * tc), THREADS, 0, st>>>(in_arg(x, bf, 0), in_arg(w, bf, 1), out_arg(y, bf, 2), n * tc, tc);
	return cudaGetLastError();
}

cudaError_t gpu_transpose(const void *x, void *y, int64_t n, int64_t ra, int64_t cb, unsigned bf, cudaStream_t st)
{
	transpose3<<<grid(n * ra * cb), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), n * ra * cb, ra, cb);
	return cudaGetLastError();
}

cudaError_t gpu_mean(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool bwd, cudaStream_t st)
{
	if (bwd)
		mean_mid_bwd<<<grid(outer * len * inner), THREADS, 0, st>>>(x, y, outer, len, inner);
	else
		mean_mid<<<grid(outer * inner), THREADS, 0, st>>>(x, y, outer, len, inner);
	return cudaGetLastError();
}

cudaError_t gpu_mul(const void *u, const void *v, void *y, int64_t rows, int64_t inner, int64_t sin, bool bwd,
                    unsigned bf, cudaStream_t st)
{
	In ua = in_arg(u, bf, 0), va = in_arg(v, bf, 1);
	if (bwd)
		mul_rows_bwd<<<grid(rows * sin), THREADS, 0, st>>>(ua, va, out_arg(y, bf, 2), rows, inner, sin);
	else
		mul_rows<<<grid(rows * inner), THREADS, 0, st>>>(ua, va, out_arg(y, bf, 2), rows, inner, sin);
	return cudaGetLastError();
}

cudaError_t gpu_clamp(const void *x, const void *dy, void *y, int64_t n, float lo, float hi, unsigned bf,
                      cudaStream_t st)
{
	clamp_elems<<<grid(n), THREADS, 0, st>>>(in_arg(x, bf, 0), in_arg(dy, bf, 1), out_arg(y, bf, 2), n, lo, hi);
	return cudaGetLastError();
}

cudaError_t gpu_broadcast(const void *w, void *y, int64_t c, int64_t total, unsigned bf, cudaStream_t st)
{
	broadcast_rows<<<grid(total), THREADS, 0, st>>>(in_arg(w, bf, 0), out_arg(y, bf, 1), total, c);
	return cudaGetLastError();
}

cudaError_t gpu_position_bwd(const float *dy, float *dw, int64_t n, int64_t tc, int64_t all, cudaStream_t st)
{
	position_bwd<<<grid(all), THREADS, 0, st>>>(dy, dw, n, tc, all);
	return cudaGetLastError();
}

cudaError_t gpu_xent_ids(const void *z, const int32_t *ids, double *rowloss, float *loss, int64_t rows, int64_t k,
                         unsigned bf, cudaStream_t st)
{
	xent_ids_rows<<<(unsigned)rows, THREADS, 0, st>>>(in_arg(z, bf, 0), ids, rowloss, k);
	xent_mean<<<1, 1, 0, st>>>(rowloss, loss, rows);
	return cudaGetLastError();
}

cudaError_t gpu_xent_ids_bwd(const void *z, const int32_t *ids, void *dz, int64_t rows, int64_t k, unsigned bf,
                             cudaStream_t st)
{
	xent_ids_bwd<<<(unsigned)rows, THREADS, 0, st>>>(in_arg(z, bf, 0), ids, out_arg(dz, bf, 2), rows, k);
	return cudaGetLastError();
}

cudaError_t gpu_xent_ids_block(const void *z, const int32_t *ids, double *rowloss, void *dz, int64_t nr,
                               int64_t rows, int64_t k, unsigned bf, cudaStream_t st)
{
	if (nr <= 0)
		return cudaSuccess;
	xent_ids_rows<<<(unsigned)nr, THREADS, 0, st>>>(in_arg(z, bf, 0), ids, rowloss, k);
	xent_ids_bwd<<<(unsigned)nr, THREADS, 0, st>>>(in_arg(z, bf, 0), ids, out_arg(dz, bf, 2), rows, k);
	return cudaGetLastError();
}

cudaError_t gpu_xent_mean_rows(const double *rowloss, float *loss, int64_t rows, cudaStream_t st)
{
	xent_mean<<<1, 1, 0, st>>>(rowloss, loss, rows);
	return cudaGetLastError();
}

cudaError_t gpu_split_heads(const void *x, void *y, int64_t n, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset, unsigned bf, cudaStream_t st)
{
	split_heads<<<grid(n * h * t * d), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), n * h * t * d, h, t, d, w,
	                                                     offset);
	return cudaGetLastError();
}

cudaError_t gpu_merge_heads(const void *x, void *y, int64_t n, int64_t h, int64_t t, int64_t d, int64_t w,
                            int64_t offset, unsigned bf, cudaStream_t st)
{
	merge_heads<<<grid(n * h * t * d), THREADS, 0, st>>>(in_arg(x, bf, 0), out_arg(y, bf, 1), n * h * t * d, h, t, d, w,
	                                                     offset);
	return cudaGetLastError();
}

cudaError_t gpu_causal_softmax(const float *x, float *y, int64_t rows, int64_t t, cudaStream_t st)
{
	causal_softmax<<<(unsigned)(rows < MAX_BLOCKS ? rows : MAX_BLOCKS), THREADS, 0, st>>>(x, y, rows, t);
	return cudaGetLastError();
}

cudaError_t gpu_causal_softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows, int64_t t,
                                   cudaStream_t st)
{
	causal_softmax_bwd<<<(unsigned)(rows < MAX_BLOCKS ? rows : MAX_BLOCKS), THREADS, 0, st>>>(y, dy, dx, rows, t);
	return cudaGetLastError();
}

} /* extern "C" */

/* ---- fused attention's elementwise parts (cuda/attention.c runs the products) ---------------- */

/*
 * Its rows: row r of a query chunk [heads, rows, keys] of float32 scores s
 * (already scaled) is query q0 + r % rows of head r / rows, which sees keys
 * 0..q0 + r % rows when causal, else all `keys`. att_softmax writes the
 * row's probabilities into p (0 past what it sees) and its log-sum-exp into
 * lse [heads, t] at the query; att_grad recomputes them from lse and
 * writes p and ds = alpha p (dp - dd) with dd [heads, t] rowsum(dy y).
 */
__device__ int64_t att_seen(int64_t r, int64_t rows, int64_t q0, int64_t keys, bool causal)
{
	int64_t q = q0 + r % rows;
	return causal && q + 1 < keys ? q + 1 : keys;
}

__global__ void att_softmax(const float *s, Out p, float *lse, int64_t heads, int64_t rows, int64_t keys, int64_t q0,
                            int64_t t, bool causal)
{
	for (int64_t r = blockIdx.x; r < heads * rows; r += gridDim.x) {
		const float *sr = s + r * keys;
		Out pr = p + r * keys;
		int64_t len = att_seen(r, rows, q0, keys, causal);
		float mx = -INFINITY;
		for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
			mx = fmaxf(mx, sr[j]);
		mx = block_max(mx);
		double part = 0;
		for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
			part += exp((double)sr[j] - mx);
		double l = block_sum(part);
		for (int64_t j = threadIdx.x; j < keys; j += blockDim.x)
			pr.set(j, j < len ? (float)(exp((double)sr[j] - mx) / l) : 0.0f);
		if (threadIdx.x == 0)
			lse[r / rows * t + q0 + r % rows] = (float)(mx + log(l));
	}
}

__global__ void att_grad(const float *s, const float *dp, const float *lse, const float *dd, Out p, Out ds,
                         int64_t heads, int64_t rows, int64_t keys, int64_t q0, int64_t t, bool causal, float alpha)
{
	FOR_EACH(e, heads * rows * keys) {
		int64_t r = e / keys, j = e % keys, at = r / rows * t + q0 + r % rows;
		float pe = j < att_seen(r, rows, q0, keys, causal) ? (float)exp((double)s[e] - (double)lse[at]) : 0.0f;
		p.set(e, pe);
		ds.set(e, alpha * pe * (dp[e] - dd[at]));
	}
}

/* dd [heads, t] = the rows' sums of dy y, heads side by side in rows of ld elements (dy and y: [t, heads d]) */
__global__ void att_rowdot(In dy, In y, float *dd, int64_t heads, int64_t t, int64_t d)
{
	FOR_EACH(e, heads * t) {
		int64_t h = e / t, q = e % t;
		double acc = 0;
		for (int64_t i = 0; i < d; i++)
			acc += (double)dy[q * heads * d + h * d + i] * y[q * heads * d + h * d + i];
		dd[e] = (float)acc;
	}
}

/* y [rows, cols] at ld_y = x [rows, cols] at ld_x, in y's type */
__global__ void copy_2d(In x, int64_t ld_x, Out y, int64_t ld_y, int64_t rows, int64_t cols)
{
	FOR_EACH(e, rows * cols)
		y.set(e / cols * ld_y + e % cols, x[e / cols * ld_x + e % cols]);
}

extern "C" {

cudaError_t gpu_att_softmax(const float *s, void *p, float *lse, int64_t heads, int64_t rows, int64_t keys,
                            int64_t q0, int64_t t, bool causal, unsigned bf, cudaStream_t st)
{
	int64_t n = heads * rows;
	att_softmax<<<(unsigned)(n < MAX_BLOCKS ? n : MAX_BLOCKS), THREADS, 0, st>>>(s, out_arg(p, bf, 1), lse, heads,
	                                                                            rows, keys, q0, t, causal);
	return cudaGetLastError();
}

cudaError_t gpu_att_grad(const float *s, const float *dp, const float *lse, const float *dd, void *p, void *ds,
                         int64_t heads, int64_t rows, int64_t keys, int64_t q0, int64_t t, bool causal, float alpha,
                         unsigned bf, cudaStream_t st)
{
	att_grad<<<grid(heads * rows * keys), THREADS, 0, st>>>(s, dp, lse, dd, out_arg(p, bf, 4), out_arg(ds, bf, 5),
	                                                       heads, rows, keys, q0, t, causal, alpha);
	return cudaGetLastError();
}

cudaError_t gpu_att_rowdot(const void *dy, const void *y, float *dd, int64_t heads, int64_t t, int64_t d, unsigned bf,
                           cudaStream_t st)
{
	att_rowdot<<<grid(heads * t), THREADS, 0, st>>>(in_arg(dy, bf, 0), in_arg(y, bf, 1), dd, heads, t, d);
	return cudaGetLastError();
}

cudaError_t gpu_copy_2d(const void *x, int64_t ld_x, void *y, int64_t ld_y, int64_t rows, int64_t cols, unsigned bf,
                        cudaStream_t st)
{
	copy_2d<<<grid(rows * cols), THREADS, 0, st>>>(in_arg(x, bf, 0), ld_x, out_arg(y, bf, 1), ld_y, rows, cols);
	return cudaGetLastError();
}

} /* extern "C" */
