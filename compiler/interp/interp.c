/*
 * interp.c - the reference interpreter.
 *
 * Naive, obviously-correct C for every op of ops.def, forward and
 * backward, executing a training graph node by node in schedule order on
 * host memory. Every tensor has its own buffer of doubles. In rounded
 * mode each result is rounded to its tensor's type as it is written
 * (float32, or bfloat16 round to nearest even in a bf16 program), which is
 * what a backend stores; in float64 mode nothing is rounded, for finite
 * difference checks. Nothing here is tuned: loops are written as the
 * formula reads. Tensors are row-major: x[n][c][h][w] is
 * x[((n * C + c) * H + h) * W + w].
 */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autotm/random.h"
#include "bf16.h"
#include "util.h"
#include "weights.h"

/* Dimensions of a 4-D (or [N, C] as [N, C, 1, 1]) tensor. */
typedef struct Dims { int64_t n, c, h, w; } Dims;

static Dims dims4(const Tensor *t)
{
	const Shape *s = &t->shape;
	Dims d = {s->d[0], s->ndim > 1 ? s->d[1] : 1, s->ndim > 2 ? s->d[2] : 1, s->ndim > 3 ? s->d[3] : 1};
	return d;
}

static int64_t last_dim(const Tensor *t)
{
	return t->shape.d[t->shape.ndim - 1];
}

#define AT(d, n_, c_, h_, w_) ((((n_) * (d).c + (c_)) * (d).h + (h_)) * (d).w + (w_))

Interp *interp_new(const Graph *g, const Schedule *s, bool f64, uint64_t seed)
{
	Interp *ip = xcalloc(1, sizeof *ip);
	ip->g = g;
	ip->s = s;
	ip->f64 = f64;
	ip->buf = xcalloc((size_t)g->tensors.n, sizeof(double *));
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		ip->buf[i] = xcalloc((size_t)shape_elems(t->shape), sizeof(double));
		if (t->producer)
			continue;
		InitSpec spec = init_spec(t, seed);
		init_fill(&spec, t, ip->buf[i]);
		if (!f64)
			for (int64_t k = 0; k < shape_elems(t->shape); k++)
				ip->buf[i][k] = (float)ip->buf[i][k];
	}
	return ip;
}

void interp_free(Interp *ip)
{
	if (!ip)
		return;
	for (int i = 0; i < ip->g->tensors.n; i++)
		free(ip->buf[i]);
	free(ip->buf);
	free(ip);
}

/* ---- convolution --------------------------------------------------- */

enum ConvMode { CONV_FWD, CONV_BWD_DATA, CONV_BWD_FILTER };

/*
 * The one loop nest of convolution: for every output element (n, o, i, j)
 * and every weight element (c, ki, kj) of o's group whose input position is
 * inside the image, the forward pass accumulates x * w into y, the data
 * gradient dy * w into dx, the filter gradient x * dy into dw.
 */
static void conv_loop(enum ConvMode mode, const Attrs *a, Dims xd, Dims yd, double *x, double *w, double *y)
{
	int64_t cpg = xd.c / a->groups, opg = yd.c / a->groups;
	for (int64_t n = 0; n < yd.n; n++)
		for (int64_t o = 0; o < yd.c; o++) {
			int64_t grp = o / opg;
			for (int64_t i = 0; i < yd.h; i++)
				for (int64_t j = 0; j < yd.w; j++) {
					double *yo = &y[AT(yd, n, o, i, j)];
					for (int64_t c = 0; c < cpg; c++)
						for (int64_t ki = 0; ki < a->kh; ki++) {
							int64_t hi = i * a->sh - a->ph + ki;
							if (hi < 0 || hi >= xd.h)
								continue;
							for (int64_t kj = 0; kj < a->kw; kj++) {
								int64_t wi = j * a->sw - a->pw + kj;
								if (wi < 0 || wi >= xd.w)
									continue;
								double *xv = &x[AT(xd, n, grp * cpg + c, hi, wi)];
								double *wv = &w[((o * cpg + c) * a->kh + ki) * a->kw + kj];
								if (mode == CONV_FWD)
									*yo += *xv * *wv;
								else if (mode == CONV_BWD_DATA)
									*xv += *yo * *wv;
								else
									*wv += *xv * *yo;
							}
						}
				}
		}
}

/* ---- the ops --------------------------------------------------------- */

static void pool_window(const Attrs *a, int64_t i, int64_t j, int64_t *h0, int64_t *w0)
{
	*h0 = i * a->sh - a->ph;
	*w0 = j * a->sw - a->pw;
}

static void batchnorm_fwd(const Node *nd, double **in, double **out)
{
	Dims d = dims4(nd->in[0]);
	double *x = in[0], *gamma = in[1], *beta = in[2], *y = out[0], *mean = out[1], *var = out[2];
	double m = (double)(d.n * d.h * d.w);
	for (int64_t c = 0; c < d.c; c++) {
		double s = 0, v = 0;
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++)
				s += x[(n * d.c + c) * d.h * d.w + k];
		double mu = s / m;
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++) {
				double t = x[(n * d.c + c) * d.h * d.w + k] - mu;
				v += t * t;
			}
		double is = 1.0 / sqrt(v / m + nd->attr.eps);
		mean[c] = mu;
		var[c] = v / m;
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++) {
				int64_t idx = (n * d.c + c) * d.h * d.w + k;
				y[idx] = (x[idx] - mu) * is * gamma[c] + beta[c];
			}
	}
}

/* batchnorm_eval: x, weight, bias, running_mean, running_var -> y (ops.def) */
static void batchnorm_eval(const Node *nd, double **in, double **out)
{
	Dims d = dims4(nd->in[0]);
	for (int64_t c = 0; c < d.c; c++) {
		double alpha, beta;
		op_bn_eval_affine(in[1][c], in[2][c], in[3][c], in[4][c], nd->attr.eps, &alpha, &beta);
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++) {
				int64_t idx = (n * d.c + c) * d.h * d.w + k;
				out[0][idx] = in[0][idx] * alpha + beta;
			}
	}
}

static void batchnorm_bwd(const Node *nd, double **in, double **out)
{
	Dims d = dims4(nd->in[0]);
	double *x = in[0], *gamma = in[1], *mean = in[2], *var = in[3], *dy = in[4];
	double *dx = out[0], *dgamma = out[1], *dbeta = out[2];
	double m = (double)(d.n * d.h * d.w);
	double *dz = NULL;
	if (nd->attr.post_act != ACT_NONE) { /* dy is act(y)'s gradient (fuse.h): first through act, from y = in[5] */
		int64_t nx = shape_elems(nd->in[0]->shape);
		dz = xmalloc(sizeof(double) * (size_t)(nx ? nx : 1));
		for (int64_t i = 0; i < nx; i++)
			dz[i] = act_grad(nd->attr.post_act, in[5][i], dy[i]);
		dy = dz;
	}
	for (int64_t c = 0; c < d.c; c++) {
		double invstd = 1.0 / sqrt(var[c] + nd->attr.eps);
		double sdy = 0, sdyx = 0;
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++) {
				int64_t idx = (n * d.c + c) * d.h * d.w + k;
				sdy += dy[idx];
				sdyx += dy[idx] * (x[idx] - mean[c]) * invstd;
			}
		dbeta[c] = sdy;
		dgamma[c] = sdyx;
		for (int64_t n = 0; n < d.n; n++)
			for (int64_t k = 0; k < d.h * d.w; k++) {
				int64_t idx = (n * d.c + c) * d.h * d.w + k;
				double xhat = (x[idx] - mean[c]) * invstd;
				dx[idx] = gamma[c] * invstd / m * (m * dy[idx] - sdy - xhat * sdyx);
			}
	}
	free(dz);
}

/* The size of t's last dimension: layernorm's C. */
static int64_t op_last_dim(const Tensor *t)
{
	return t->shape.d[t->shape.ndim - 1];
}

/* layernorm over the last dimension: x, weight, bias -> y, mean, rstd (ops.def) */
static void layernorm_fwd(const Node *nd, double **in, double **out)
{
	int64_t c = op_last_dim(nd->in[0]), rows = shape_elems(nd->in[0]->shape) / c;
	for (int64_t r = 0; r < rows; r++) {
		const double *x = in[0] + r * c;
		double *y = out[0] + r * c, mean = 0, var = 0;
		for (int64_t j = 0; j < c; j++)
			mean += x[j];
		mean /= (double)c;
		for (int64_t j = 0; j < c; j++)
			var += (x[j] - mean) * (x[j] - mean);
		double rstd = 1.0 / sqrt(var / (double)c + nd->attr.eps);
		for (int64_t j = 0; j < c; j++)
			y[j] = (x[j] - mean) * rstd * in[1][j] + in[2][j];
		out[1][r] = mean;
		out[2][r] = rstd;
	}
}

/* x, weight, mean, rstd, dy -> dx, dweight, dbias (ops.def) */
static void layernorm_bwd(const Node *nd, double **in, double **out)
{
	int64_t c = op_last_dim(nd->in[0]), rows = shape_elems(nd->in[0]->shape) / c;
	const double *w = in[1];
	for (int64_t j = 0; j < c; j++)
		out[1][j] = out[2][j] = 0;
	for (int64_t r = 0; r < rows; r++) {
		const double *x = in[0] + r * c, *dy = in[4] + r * c;
		double mean = in[2][r], rstd = in[3][r], sg = 0, sgx = 0;
		for (int64_t j = 0; j < c; j++) {
			double xhat = (x[j] - mean) * rstd, g = dy[j] * w[j];
			sg += g;
			sgx += g * xhat;
			out[1][j] += dy[j] * xhat;
			out[2][j] += dy[j];
		}
		for (int64_t j = 0; j < c; j++) {
			double xhat = (x[j] - mean) * rstd;
			out[0][r * c + j] = rstd * (dy[j] * w[j] - sg / (double)c - xhat * sgx / (double)c);
		}
	}
}

static void softmax_rows(const double *z, double *p, int64_t rows, int64_t k)
{
	for (int64_t r = 0; r < rows; r++) {
		const double *zr = z + r * k;
		double mx = zr[0], s = 0;
		for (int64_t j = 1; j < k; j++)
			if (zr[j] > mx)
				mx = zr[j];
		for (int64_t j = 0; j < k; j++)
			s += exp(zr[j] - mx);
		for (int64_t j = 0; j < k; j++)
			p[r * k + j] = exp(zr[j] - mx) / s;
	}
}

/* Convolution: y = conv(x, w) (+ bias per channel). */
static void eval_conv2d(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	int64_t ny = shape_elems(nd->out[0]->shape);
	Dims yd = dims4(nd->out[0]);
	conv_loop(CONV_FWD, a, dims4(nd->in[0]), yd, in[0], in[1], out[0]);
	if (nd->nin == 3)
		for (int64_t i = 0; i < ny; i++)
			out[0][i] += in[2][(i / (yd.h * yd.w)) % yd.c];
}

/* v as a tensor of type dt stores it: rounded to float32, and from there to bfloat16 for bf16. */
static void round_to(DType dt, double *v, int64_t n)
{
	if (dt == DT_BF16)
		for (int64_t i = 0; i < n; i++)
			v[i] = bf16_round((float)v[i]);
	else
		for (int64_t i = 0; i < n; i++)
			v[i] = (float)v[i];
}

/* db += the bias gradient of g, a tensor like t: element i is in column (i / inner) % C, inner the
   elements after the bias' axis (nd's) */
static void bias_sums(const Node *nd, const Tensor *t, const double *g, double *db)
{
	int64_t n = shape_elems(t->shape);
	int ax = nd->attr.axis > 0 ? nd->attr.axis : 1;
	int64_t c = t->shape.d[ax], inner = 1;
	for (int d = ax + 1; d < t->shape.ndim; d++)
		inner *= t->shape.d[d];
	for (int64_t i = 0; i < n; i++)
		db[(i / inner) % c] += g[i];
}

/*
 * saved, dy -> dx, dbias: the activation's gradient, rounded to dx's type
 * where rounded (the unfused bias_grad read it so), then its bias gradient.
 */
static void eval_act_bias_grad(const Node *nd, double **in, double **out, bool rounded)
{
	int64_t n = shape_elems(nd->in[1]->shape);
	for (int64_t i = 0; i < n; i++)
		out[0][i] = act_grad(nd->attr.post_act, in[0][i], in[1][i]);
	if (rounded)
		round_to(nd->out[0]->dtype, out[0], n);
	bias_sums(nd, nd->in[1], out[0], out[1]);
}

/* rows: every dimension but the last */
static void eval_dense(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t fi = last_dim(nd->in[0]), fo = last_dim(nd->out[0]), n = nx / fi;
	for (int64_t r = 0; r < n; r++)
		for (int64_t o = 0; o < fo; o++) {
			double s = nd->nin >= 3 ? in[2][o] : 0; /* the bias (a fused sum after it: add_sum) */
			for (int64_t i = 0; i < fi; i++)
				s += in[0][r * fi + i] * in[1][o * fi + i];
			out[0][r * fo + o] = s;
		}
}

/* dx[r, i] = sum over o of dy[r, o] w[o, i]. */
static void eval_dense_bwd_data(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t fo = last_dim(nd->in[0]), fi = last_dim(nd->out[0]), n = nx / fo;
	for (int64_t r = 0; r < n; r++)
		for (int64_t i = 0; i < fi; i++) {
			double s = 0;
			for (int64_t o = 0; o < fo; o++)
				s += in[0][r * fo + o] * in[1][o * fi + i];
			out[0][r * fi + i] = s;
		}
}

/* dw[o, i] = sum over rows r of dy[r, o] x[r, i]. */
static void eval_dense_bwd_weight(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t fi = last_dim(nd->in[0]), fo = last_dim(nd->in[1]), n = nx / fi;
	for (int64_t o = 0; o < fo; o++)
		for (int64_t i = 0; i < fi; i++) {
			double s = 0;
			for (int64_t r = 0; r < n; r++)
				s += in[0][r * fi + i] * in[1][r * fo + o];
			out[0][o * fi + i] = s;
		}
}

/* Max pooling and its gradient: both find each window's first maximum (padding excluded). */
static void eval_maxpool(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	/* Both passes find each window's first maximum (padding excluded). */
	bool bwd = nd->op == OP_MAXPOOL_BWD;
	Dims xd = dims4(nd->in[0]), yd = bwd ? dims4(nd->in[1]) : dims4(nd->out[0]);
	for (int64_t n = 0; n < yd.n; n++)
		for (int64_t c = 0; c < yd.c; c++)
			for (int64_t i = 0; i < yd.h; i++)
				for (int64_t j = 0; j < yd.w; j++) {
					int64_t h0, w0, best = -1;
					pool_window(a, i, j, &h0, &w0);
					for (int64_t h = h0; h < h0 + a->kh; h++)
						for (int64_t w = w0; w < w0 + a->kw; w++)
							if (h >= 0 && h < xd.h && w >= 0 && w < xd.w &&
							    (best < 0 || in[0][AT(xd, n, c, h, w)] > in[0][best]))
								best = AT(xd, n, c, h, w);
					if (best < 0)
						ICE("empty pooling window in %s", nd->name);
					if (bwd)
						out[0][best] += in[1][AT(yd, n, c, i, j)];
					else
						out[0][AT(yd, n, c, i, j)] = in[0][best];
				}
}

/* Average pooling and its gradient: padding counts in the average (the divisor is kh * kw). */
static void eval_avgpool(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	/* Padding counts in the average: the divisor is always kh * kw. */
	bool bwd = nd->op == OP_AVGPOOL_BWD;
	Dims xd = bwd ? dims4(nd->out[0]) : dims4(nd->in[0]), yd = bwd ? dims4(nd->in[0]) : dims4(nd->out[0]);
	double *x = bwd ? out[0] : in[0], *y = bwd ? in[0] : out[0];
	double div = (double)(a->kh * a->kw);
	for (int64_t n = 0; n < yd.n; n++)
		for (int64_t c = 0; c < yd.c; c++)
			for (int64_t i = 0; i < yd.h; i++)
				for (int64_t j = 0; j < yd.w; j++) {
					int64_t h0, w0;
					pool_window(a, i, j, &h0, &w0);
					for (int64_t h = h0; h < h0 + a->kh; h++)
						for (int64_t w = w0; w < w0 + a->kw; w++) {
							if (h < 0 || h >= xd.h || w < 0 || w >= xd.w)
								continue;
							if (bwd)
								x[AT(xd, n, c, h, w)] += y[AT(yd, n, c, i, j)] / div;
							else
								y[AT(yd, n, c, i, j)] += x[AT(xd, n, c, h, w)] / div;
						}
				}
}

/* The mean of each channel's plane. */
static void eval_globalavgpool(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	Dims d = dims4(nd->in[0]);
	for (int64_t i = 0; i < nx; i++)
		out[0][i / (d.h * d.w)] += in[0][i] / (double)(d.h * d.w);
}

/* Each channel's gradient spread evenly over its plane. */
static void eval_globalavgpool_bwd(const Node *nd, double **in, double **out)
{
	int64_t ny = shape_elems(nd->out[0]->shape);
	Dims d = dims4(nd->out[0]);
	for (int64_t i = 0; i < ny; i++)
		out[0][i] = in[0][i / (d.h * d.w)] / (double)(d.h * d.w);
}

/* dx = y (dy - sum_j y_j dy_j), per row. */
static void eval_softmax_bwd(const Node *nd, double **in, double **out)
{
	int64_t k = nd->in[0]->shape.d[nd->in[0]->shape.ndim - 1], rows = shape_elems(nd->in[0]->shape) / k;
	for (int64_t r = 0; r < rows; r++) {
		double dot = 0;
		for (int64_t j = 0; j < k; j++)
			dot += in[0][r * k + j] * in[1][r * k + j];
		for (int64_t j = 0; j < k; j++)
			out[0][r * k + j] = in[0][r * k + j] * (in[1][r * k + j] - dot);
	}
}

/*
 * Concatenation along an axis and the pieces of a whole: concat (its
 * inputs into the output), slice (a piece of its input out) and
 * slice_bwd (its input into a zeroed output): blocks of `inner` elements
 * side by side.
 */
static void eval_concat(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	bool into = nd->op != OP_SLICE; /* the pieces are written into the whole (the output) */
	const Shape *whole = into ? &nd->out[0]->shape : &nd->in[0]->shape;
	int64_t outer, inner;
	op_axis_dims(whole->d, whole->ndim, a->axis, &outer, &inner);
	int64_t off = nd->op == OP_CONCAT ? 0 : a->offset;
	int npieces = nd->op == OP_CONCAT ? nd->nin : 1;
	/* slice_bwd's zeros around dy: interp_node zeroes every output */
	for (int k = 0; k < npieces; k++) {
		const Shape *piece = into ? &nd->in[k]->shape : &nd->out[0]->shape;
		int64_t len = piece->d[a->axis] * inner, stride = whole->d[a->axis] * inner;
		for (int64_t o = 0; o < outer; o++) {
			double *w = (into ? out[0] : in[0]) + o * stride + off * inner;
			double *p = (into ? in[k] : out[0]) + o * len;
			if (into)
				memcpy(w, p, sizeof(double) * (size_t)len);
			else
				memcpy(p, w, sizeof(double) * (size_t)len);
		}
		off += piece->d[a->axis];
	}
}

/* mean: x [outer, len, inner] -> y [outer, inner], the mean over len; mean_bwd: dy -> dx = dy / len at each */
static void eval_mean(const Node *nd, double **in, double **out)
{
	const Shape *x = nd->op == OP_MEAN ? &nd->in[0]->shape : &nd->out[0]->shape;
	int ax = nd->attr.axis;
	int64_t outer, inner, len = x->d[ax];
	op_axis_dims(x->d, x->ndim, ax, &outer, &inner);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			if (nd->op == OP_MEAN_BWD) {
				for (int64_t k = 0; k < len; k++)
					out[0][(o * len + k) * inner + i] = in[0][o * inner + i] / (double)len;
				continue;
			}
			double sum = 0;
			for (int64_t k = 0; k < len; k++)
				sum += in[0][(o * len + k) * inner + i];
			out[0][o * inner + i] = sum / (double)len;
		}
}

/*
 * mul: y = x s, s [N, C, 1...] repeated over x's later dimensions (or like
 * x); mul_bwd_scale: (dy, x) -> ds, dy x summed where s was repeated. x as
 * [N C, inner] and s as [N C, 1] or [N C, inner].
 */
static void eval_mul(const Node *nd, double **in, double **out)
{
	const Shape *x = &nd->in[nd->op == OP_MUL ? 0 : 1]->shape;
	const Shape *sc = nd->op == OP_MUL ? &nd->in[1]->shape : &nd->out[0]->shape;
	int64_t rows = x->d[0] * x->d[1], inner = shape_elems(*x) / rows, sin = shape_elems(*sc) / rows;
	/* mul_bwd_scale sums into its output, which interp_node has zeroed */
	for (int64_t r = 0; r < rows; r++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t at = r * inner + i, s = r * sin + (sin == 1 ? 0 : i);
			if (nd->op == OP_MUL)
				out[0][at] = in[0][at] * in[1][s];
			else
				out[0][s] += in[0][at] * in[1][at];
		}
}

/* x [N, A, B] -> y [N, B, A] */
static void eval_transpose(const Node *nd, double **in, double **out)
{
	const Shape *x = &nd->in[0]->shape;
	int64_t n = x->d[0], ra = x->d[1], cb = x->d[2];
	for (int64_t b = 0; b < n; b++)
		for (int64_t i = 0; i < ra; i++)
			for (int64_t j = 0; j < cb; j++)
				out[0][b * ra * cb + j * ra + i] = in[0][b * ra * cb + i * cb + j];
}

/* Cross-entropy of softmax against soft labels: loss = mean over rows of -sum_j y_j log p_j; its gradient. */
static void eval_softmax_xent(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	/* loss = mean over rows of -sum_j y_j (z_j - logsumexp(z)) */
	int64_t rows = nd->in[0]->shape.d[0], k = nd->in[0]->shape.d[1];
	double *p = xmalloc(sizeof(double) * (size_t)nx);
	softmax_rows(in[0], p, rows, k);
	double loss = 0;
	for (int64_t r = 0; r < rows; r++) {
		double ysum = 0;
		for (int64_t j = 0; j < k; j++)
			ysum += in[1][r * k + j];
		for (int64_t j = 0; j < k; j++) {
			int64_t i = r * k + j;
			if (nd->op == OP_SOFTMAX_XENT)
				loss -= in[1][i] * log(p[i] > 0 ? p[i] : 1e-300);
			else
				out[0][i] = (p[i] * ysum - in[1][i]) / (double)rows;
		}
	}
	if (nd->op == OP_SOFTMAX_XENT)
		out[0][0] = loss / (double)rows;
	free(p);
}

/* The sum of squares of a gradient (gradient clipping), added to the running sum of an input before it. */
static void eval_grad_sumsq(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	double sum = nd->nin == 2 ? in[1][0] : 0;
	for (int64_t i = 0; i < nx; i++)
		sum += in[0][i] * in[0][i];
	out[0][0] = sum;
}

/* The optimizers' updates, in place (base/optim.h), with the clipping scale. */
static void eval_sgd(const Interp *ip, const Node *nd, double **in)
{
	const Attrs *a = &nd->attr;
	int64_t nx = shape_elems(nd->in[0]->shape);
	const OptimHyper *h = &a->upd;
	OptimStep st = optim_step(h, ip->step);
	double scale = nd->nin > op_info[nd->op].min_in ? optim_clip_scale(h->clip, in[nd->nin - 1][0]) : 1.0;
	for (int64_t i = 0; i < nx; i++) {
		if (nd->op == OP_ADAMW)
			in[0][i] = optim_adamw(h, &st, scale, in[0][i], in[1][i], &in[2][i], &in[3][i]);
		else if (nd->op == OP_SGD_MOMENTUM)
			in[0][i] = optim_sgd_momentum(h, &st, scale, in[0][i], in[1][i], &in[2][i]);
		else
			in[0][i] = optim_sgd(h, &st, scale, in[0][i], in[1][i]);
	}
}

/* Batchnorm's running statistics updated in place from the batch's. */
static void eval_batchnorm_stats(const Node *nd, double **in)
{
	const Attrs *a = &nd->attr;
	int64_t nx = shape_elems(nd->in[0]->shape);
	double m = a->momentum, unbias = op_bn_unbias(shape_elems(a->shape) / a->shape.d[1]);
	for (int64_t i = 0; i < nx; i++) {
		in[0][i] = (1 - m) * in[0][i] + m * in[3][i];
		in[1][i] = (1 - m) * in[1][i] + m * in[4][i] * unbias;
	}
	in[2][0] += 1;
}

/* y[i, :] = weight[ids[i], :] */
static void eval_embedding(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t c = last_dim(nd->out[0]);
	for (int64_t i = 0; i < nx; i++)
		for (int64_t j = 0; j < c; j++)
			out[0][i * c + j] = in[1][(int64_t)in[0][i] * c + j];
}

/* dweight[ids[i], :] += dy[i, :] */
static void eval_embedding_bwd(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t c = last_dim(nd->in[0]), rows = nx / c;
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < c; j++)
			out[0][(int64_t)in[1][i] * c + j] += in[0][i * c + j];
}

/* y[n, t, :] = x[n, t, :] + weight[t, :] */
static void eval_position(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t tc = nd->in[0]->shape.d[1] * nd->in[0]->shape.d[2];
	for (int64_t i = 0; i < nx; i++)
		out[0][i] = in[0][i] + in[1][i % tc];
}

/* dweight[t, :] = sum over n of dy[n, t, :] */
static void eval_position_bwd(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t tc = nd->in[0]->shape.d[1] * nd->in[0]->shape.d[2];
	for (int64_t i = 0; i < nx; i++)
		out[0][i % tc] += in[0][i];
}

/* Cross-entropy of softmax against class ids: loss = mean over rows of logsumexp(z) - z[id]; its gradient. */
static void eval_softmax_xent_ids(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	/* loss = mean over rows of logsumexp(z) - z[id] */
	int64_t k = last_dim(nd->in[0]), rows = nx / k;
	double *p = xmalloc(sizeof(double) * (size_t)nx);
	softmax_rows(in[0], p, rows, k);
	double loss = 0;
	bool fwd = nd->op != OP_SOFTMAX_XENT_IDS_BWD, bwd = nd->op != OP_SOFTMAX_XENT_IDS; /* _grad: both */
	for (int64_t r = 0; r < rows; r++) {
		int64_t id = (int64_t)in[1][r];
		if (fwd)
			loss -= log(p[r * k + id] > 0 ? p[r * k + id] : 1e-300);
		if (bwd)
			for (int64_t j = 0; j < k; j++)
				out[0][r * k + j] = (p[r * k + j] - (j == id)) / (double)rows;
	}
	if (fwd)
		out[nd->nout - 1][0] = loss / (double)rows; /* the loss: _grad's second output */
	free(p);
}

/*
 * dense_crossentropy_ids_grad: x [R, C], w [V, C], ids [R] -> dx, dw, loss, as dense, the loss and their
 * gradients; round16 (a bf16 program, rounded mode): the logits and their gradient rounded to bf16, as the
 * kernel rounds them (dw stays float32).
 */
static void eval_dense_xent(const Node *nd, double **in, double **out, bool round16)
{
	int64_t c = last_dim(nd->in[0]), v = nd->in[1]->shape.d[0], rows = shape_elems(nd->in[0]->shape) / c;
	const double *x = in[0], *w = in[1];
	double *z = xmalloc(sizeof(double) * (size_t)(v ? v : 1)), loss = 0;
	memset(out[1], 0, sizeof(double) * (size_t)(v * c));
	for (int64_t r = 0; r < rows; r++) {
		double mx = -INFINITY, s = 0;
		for (int64_t j = 0; j < v; j++) {
			z[j] = 0;
			for (int64_t k = 0; k < c; k++)
				z[j] += x[r * c + k] * w[j * c + k];
			if (round16)
				z[j] = bf16_round((float)z[j]);
			mx = z[j] > mx ? z[j] : mx;
		}
		for (int64_t j = 0; j < v; j++)
			s += exp(z[j] - mx);
		int64_t id = (int64_t)in[2][r];
		loss += mx + log(s) - z[id];
		for (int64_t k = 0; k < c; k++)
			out[0][r * c + k] = 0;
		for (int64_t j = 0; j < v; j++) { /* dz = (softmax - onehot) / R, then dx += dz w, dw += dz^T x */
			double dz = (exp(z[j] - mx) / s - (j == id)) / (double)rows;
			if (round16)
				dz = bf16_round((float)dz);
			for (int64_t k = 0; k < c; k++) {
				out[0][r * c + k] += dz * w[j * c + k];
				out[1][j * c + k] += dz * x[r * c + k];
			}
		}
	}
	out[2][0] = loss / (double)rows;
	free(z);
}

/* per matrix of the batch: c[i, j] = alpha sum_k op(a)[i, k] op(b)[k, j] */
static void eval_matmul(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	int64_t ny = shape_elems(nd->out[0]->shape);
	Shape as = nd->in[0]->shape, cs = nd->out[0]->shape;
	int r = cs.ndim - 2;
	int64_t m = cs.d[r], n = cs.d[r + 1], kk = as.d[r + !a->trans_a], batch = ny / (m * n);
	for (int64_t bt = 0; bt < batch; bt++) {
		const double *A = in[0] + bt * m * kk, *B = in[1] + bt * kk * n;
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++) {
				double sum = 0;
				for (int64_t k = 0; k < kk; k++)
					sum += (a->trans_a ? A[k * m + i] : A[i * kk + k]) *
					       (a->trans_b ? B[j * kk + k] : B[k * n + j]);
				out[0][bt * m * n + i * n + j] = a->alpha * sum;
			}
	}
}

/* y[n, h, t, d] = x[n, t, offset + h D + d] */
static void eval_split_heads(const Node *nd, double **in, double **out)
{
	const Attrs *a = &nd->attr;
	int64_t ny = shape_elems(nd->out[0]->shape);
	const int64_t *y = nd->out[0]->shape.d;
	int64_t w = last_dim(nd->in[0]);
	for (int64_t i = 0; i < ny; i++) {
		int64_t d = i % y[3], t = i / y[3] % y[2], h = i / (y[3] * y[2]) % y[1], n = i / (y[3] * y[2] * y[1]);
		out[0][i] = in[0][(n * y[2] + t) * w + a->offset + h * y[3] + d];
	}
}

/* y[n, t, k H D + h D + d] = xk[n, h, t, d] */
static void eval_merge_heads(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	for (int k = 0; k < nd->nin; k++) {
		const int64_t *x = nd->in[k]->shape.d;
		int64_t w = last_dim(nd->out[0]);
		for (int64_t i = 0; i < nx; i++) {
			int64_t d = i % x[3], t = i / x[3] % x[2], h = i / (x[3] * x[2]) % x[1], n = i / (x[3] * x[2] * x[1]);
			out[0][(n * x[2] + t) * w + k * x[1] * x[3] + h * x[3] + d] = in[k][i];
		}
	}
}

/* row r is position r % T: entries 0..r % T */
static void eval_causal_softmax(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t t = last_dim(nd->in[0]);
	for (int64_t r = 0; r < nx / t; r++)
		softmax_rows(in[0] + r * t, out[0] + r * t, 1, r % t + 1);
}

/* The gradient of the causal softmax, per row over its entries 0..r % T. */
static void eval_causal_softmax_bwd(const Node *nd, double **in, double **out)
{
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t t = last_dim(nd->in[0]);
	for (int64_t r = 0; r < nx / t; r++) {
		const double *y = in[0] + r * t, *dy = in[1] + r * t;
		double dot = 0;
		for (int64_t j = 0; j <= r % t; j++)
			dot += y[j] * dy[j];
		for (int64_t j = 0; j <= r % t; j++)
			out[0][r * t + j] = y[j] * (dy[j] - dot);
	}
}

/* Attention's heads [N, H, T, D] (attr.shape): element e of row t of head h of sample n of part k (q, k, v:
   0, 1, 2) of x [N, T, 3 H D], where y [N, T, H D] has its part 0 */
typedef struct AttnDims { int64_t n, h, t, d; } AttnDims;

static int64_t attn_at(const AttnDims *m, int parts, int k, int64_t n, int64_t h, int64_t t, int64_t e)
{
	return (n * m->t + t) * parts * m->h * m->d + k * m->h * m->d + h * m->d + e;
}

/* alpha q[i] . k[j] of head h of sample n */
static double attn_score(const Node *nd, const AttnDims *m, const double *x, int64_t n, int64_t h, int64_t i,
                         int64_t j)
{
	double s = 0;
	for (int64_t e = 0; e < m->d; e++)
		s += x[attn_at(m, 3, 0, n, h, i, e)] * x[attn_at(m, 3, 1, n, h, j, e)];
	return nd->attr.alpha * s;
}

/* y[i] = sum_j softmax_j(score(i, j)) v[j] over j <= i when causal; lse[i] = log sum_j exp(score(i, j)) */
static void eval_attention(const Node *nd, double **in, double **out)
{
	const int64_t *hs = nd->attr.shape.d;
	AttnDims m = {hs[0], hs[1], hs[2], hs[3]};
	double *s = xmalloc(sizeof(double) * (size_t)m.t);
	for (int64_t n = 0; n < m.n; n++)
		for (int64_t h = 0; h < m.h; h++)
			for (int64_t i = 0; i < m.t; i++) {
				int64_t nj = nd->attr.causal ? i + 1 : m.t;
				double mx = -INFINITY, sum = 0;
				for (int64_t j = 0; j < nj; j++)
					mx = fmax(mx, s[j] = attn_score(nd, &m, in[0], n, h, i, j));
				for (int64_t j = 0; j < nj; j++)
					sum += s[j] = exp(s[j] - mx);
				for (int64_t j = 0; j < nj; j++)
					for (int64_t e = 0; e < m.d; e++)
						out[0][attn_at(&m, 1, 0, n, h, i, e)] += s[j] / sum * in[0][attn_at(&m, 3, 2, n, h, j, e)];
				out[1][(n * m.h + h) * m.t + i] = mx + log(sum);
			}
	free(s);
}

/*
 * Its gradient from the saved output and log-sum-exp: p = exp(score - lse),
 * dv[j] += p dy[i], ds = p (dy[i] . v[j] - dy[i] . y[i]),
 * dq[i] += alpha ds k[j], dk[j] += alpha ds q[i].
 */
static void eval_attention_bwd(const Node *nd, double **in, double **out)
{
	const int64_t *hs = nd->attr.shape.d;
	AttnDims m = {hs[0], hs[1], hs[2], hs[3]};
	const double *x = in[0], *y = in[1], *dy = in[3];
	for (int64_t n = 0; n < m.n; n++)
		for (int64_t h = 0; h < m.h; h++)
			for (int64_t i = 0; i < m.t; i++) {
				double lse = in[2][(n * m.h + h) * m.t + i], dyy = 0;
				for (int64_t e = 0; e < m.d; e++)
					dyy += dy[attn_at(&m, 1, 0, n, h, i, e)] * y[attn_at(&m, 1, 0, n, h, i, e)];
				for (int64_t j = 0; j < (nd->attr.causal ? i + 1 : m.t); j++) {
					double p = exp(attn_score(nd, &m, x, n, h, i, j) - lse), dp = 0;
					for (int64_t e = 0; e < m.d; e++) {
						double dye = dy[attn_at(&m, 1, 0, n, h, i, e)];
						out[0][attn_at(&m, 3, 2, n, h, j, e)] += p * dye;
						dp += dye * x[attn_at(&m, 3, 2, n, h, j, e)];
					}
					double ds = nd->attr.alpha * p * (dp - dyy);
					for (int64_t e = 0; e < m.d; e++) {
						out[0][attn_at(&m, 3, 0, n, h, i, e)] += ds * x[attn_at(&m, 3, 1, n, h, j, e)];
						out[0][attn_at(&m, 3, 1, n, h, j, e)] += ds * x[attn_at(&m, 3, 0, n, h, i, e)];
					}
				}
			}
}

/*
 * Rounded mode: what node nd wrote is what a backend stores, each output
 * in its type (the arithmetic before, in double, stands for a kernel's
 * float32 accumulation).
 */
static void round_outputs(const Node *nd, double **in, double **out)
{
	for (int k = 0; k < nd->nout; k++)
		round_to(nd->out[k]->dtype, out[k], shape_elems(nd->out[k]->shape));
	for (int k = 0; k < nd->nin; k++)
		if (op_info[nd->op].inplace >> k & 1)
			round_to(nd->in[k]->dtype, in[k], shape_elems(nd->in[k]->shape));
}

/*
 * A sum fused into nd (node_sum_input; fuse.h): its first output plus the
 * sum input, rounded first where rounded, as the kernel does: to its type
 * (as the add it replaces read it), but a dense's to float32 only (oneDNN
 * adds it to the float32 product). A batchnorm_bwd's sum may be wider
 * ([N, C' >= C, ...]): each sample's first C channels are added.
 */
static void add_sum(const Node *nd, double **in, double **out, bool rounded)
{
	int s = node_sum_input(nd);
	if (s < 0)
		return;
	int64_t n = nd->out[0]->shape.d[0], ny = shape_elems(nd->out[0]->shape), blk = ny / n,
	        sblk = shape_elems(nd->in[s]->shape) / n;
	if (rounded)
		round_to(nd->op == OP_DENSE ? DT_F32 : nd->out[0]->dtype, out[0], ny);
	for (int64_t b = 0; b < n; b++)
		for (int64_t k = 0; k < blk; k++)
			out[0][b * blk + k] += in[s][b * sblk + k];
}

void interp_node(Interp *ip, const Node *nd)
{
	double *in[OP_MAX_ARGS], *out[OP_MAX_ARGS];
	for (int k = 0; k < nd->nin; k++)
		in[k] = ip->buf[nd->in[k]->id];
	for (int k = 0; k < nd->nout; k++) {
		out[k] = ip->buf[nd->out[k]->id];
		memset(out[k], 0, sizeof(double) * (size_t)shape_elems(nd->out[k]->shape));
	}
	const Attrs *a = &nd->attr;
	int64_t nx = shape_elems(nd->in[0]->shape);
	int64_t ny = nd->nout ? shape_elems(nd->out[0]->shape) : 0;

	switch (nd->op) {
	case OP_CONV2D: eval_conv2d(nd, in, out); break;
	case OP_CONV2D_BWD_DATA:
		conv_loop(CONV_BWD_DATA, a, dims4(nd->out[0]), dims4(nd->in[0]), out[0], in[1], in[0]);
		break;
	case OP_CONV2D_BWD_FILTER:
		conv_loop(CONV_BWD_FILTER, a, dims4(nd->in[0]), dims4(nd->in[1]), in[0], out[0], in[1]);
		break;
	case OP_BIAS_GRAD: bias_sums(nd, nd->in[0], in[0], out[0]); break;
	case OP_ACT_BIAS_GRAD: eval_act_bias_grad(nd, in, out, !ip->f64); break;
	case OP_DENSE: eval_dense(nd, in, out); break;
	case OP_DENSE_BWD_DATA: eval_dense_bwd_data(nd, in, out); break;
	case OP_DENSE_BWD_WEIGHT: eval_dense_bwd_weight(nd, in, out); break;
	case OP_MAXPOOL:
	case OP_MAXPOOL_BWD: eval_maxpool(nd, in, out); break;
	case OP_AVGPOOL:
	case OP_AVGPOOL_BWD: eval_avgpool(nd, in, out); break;
	case OP_GLOBALAVGPOOL: eval_globalavgpool(nd, in, out); break;
	case OP_GLOBALAVGPOOL_BWD: eval_globalavgpool_bwd(nd, in, out); break;
	case OP_BATCHNORM: batchnorm_fwd(nd, in, out); break;
	case OP_BATCHNORM_BWD: batchnorm_bwd(nd, in, out); break;
	case OP_BATCHNORM_EVAL: batchnorm_eval(nd, in, out); break;
	case OP_LAYERNORM: layernorm_fwd(nd, in, out); break;
	case OP_LAYERNORM_BWD: layernorm_bwd(nd, in, out); break;
	case OP_RELU: /* activations: base/activation.h */
	case OP_SIGMOID:
	case OP_TANH:
	case OP_GELU:
	case OP_RELU6:
	case OP_HARDSIGMOID:
	case OP_HARDSWISH:
	case OP_SILU:
		for (int64_t i = 0; i < nx; i++)
			out[0][i] = act_value(op_info[nd->op].act, in[0][i]);
		break;
	case OP_RELU_BWD: /* saved (y or x), dy -> dx */
	case OP_SIGMOID_BWD:
	case OP_TANH_BWD:
	case OP_GELU_BWD:
	case OP_RELU6_BWD:
	case OP_HARDSIGMOID_BWD:
	case OP_HARDSWISH_BWD:
	case OP_SILU_BWD:
		for (int64_t i = 0; i < nx; i++)
			out[0][i] = act_grad(op_info[nd->op].act, in[0][i], in[1][i]);
		break;
	case OP_SOFTMAX: { /* over the last dimension */
		int64_t k = nd->in[0]->shape.d[nd->in[0]->shape.ndim - 1];
		softmax_rows(in[0], out[0], nx / k, k);
		break;
	}
	case OP_SOFTMAX_BWD: eval_softmax_bwd(nd, in, out); break;
	case OP_RESHAPE:
	case OP_ALLREDUCE: /* the interpreter is one process: the mean over one rank */
	case OP_CAST: /* rounded to its type below */
		memcpy(out[0], in[0], sizeof(double) * (size_t)nx);
		break;
	case OP_DROPOUT:
	case OP_DROPOUT_BWD:
		for (int64_t i = 0; i < nx; i++)
			out[0][i] = rt_dropout_keep(a->seed, ip->step, (uint64_t)i, a->p) ? in[0][i] / (1.0 - a->p) : 0;
		break;
	case OP_ADD:
		for (int k = 0; k < nd->nin; k++)
			for (int64_t i = 0; i < ny; i++)
				out[0][i] += in[k][i];
		break;
	case OP_CONCAT:
	case OP_SLICE:
	case OP_SLICE_BWD: eval_concat(nd, in, out); break;
	case OP_TRANSPOSE: eval_transpose(nd, in, out); break;
	case OP_MEAN:
	case OP_MEAN_BWD: eval_mean(nd, in, out); break;
	case OP_CLAMP:
		for (int64_t i = 0; i < nx; i++)
			out[0][i] = in[0][i] < a->lo ? a->lo : in[0][i] > a->hi ? a->hi : in[0][i];
		break;
	case OP_CLAMP_BWD:
		for (int64_t i = 0; i < nx; i++)
			out[0][i] = in[0][i] >= a->lo && in[0][i] <= a->hi ? in[1][i] : 0;
		break;
	case OP_MUL:
	case OP_MUL_BWD_SCALE: eval_mul(nd, in, out); break;
	case OP_BROADCAST:
		for (int64_t i = 0; i < ny; i++)
			out[0][i] = in[0][i % nx];
		break;
	case OP_SOFTMAX_XENT:
	case OP_SOFTMAX_XENT_BWD: eval_softmax_xent(nd, in, out); break;
	case OP_GRAD_SUMSQ: eval_grad_sumsq(nd, in, out); break;
	case OP_SGD:
	case OP_SGD_MOMENTUM:
	case OP_ADAMW: eval_sgd(ip, nd, in); break;
	case OP_BATCHNORM_STATS: eval_batchnorm_stats(nd, in); break;
	case OP_EMBEDDING: eval_embedding(nd, in, out); break;
	case OP_EMBEDDING_BWD: eval_embedding_bwd(nd, in, out); break;
	case OP_POSITION: eval_position(nd, in, out); break;
	case OP_POSITION_BWD: eval_position_bwd(nd, in, out); break;
	case OP_SOFTMAX_XENT_IDS:
	case OP_SOFTMAX_XENT_IDS_BWD:
	case OP_SOFTMAX_XENT_IDS_GRAD: eval_softmax_xent_ids(nd, in, out); break;
	case OP_DENSE_XENT_IDS_GRAD: eval_dense_xent(nd, in, out, !ip->f64 && nd->in[0]->dtype == DT_BF16); break;
	case OP_MATMUL: eval_matmul(nd, in, out); break;
	case OP_SPLIT_HEADS: eval_split_heads(nd, in, out); break;
	case OP_MERGE_HEADS: eval_merge_heads(nd, in, out); break;
	case OP_CAUSAL_SOFTMAX: eval_causal_softmax(nd, in, out); break;
	case OP_CAUSAL_SOFTMAX_BWD: eval_causal_softmax_bwd(nd, in, out); break;
	case OP_ATTENTION: eval_attention(nd, in, out); break;
	case OP_ATTENTION_BWD: eval_attention_bwd(nd, in, out); break;
	case NUM_OPS:
		unreachable();
	}
	/* an activation fused onto the output (batchnorm_bwd's is applied to its dy instead) */
	if (a->post_act != ACT_NONE && op_takes_act(nd->op, a->post_act))
		for (int64_t i = 0; i < ny; i++)
			out[0][i] = act_value(a->post_act, out[0][i]);
	add_sum(nd, in, out, !ip->f64);
	if (!ip->f64)
		round_outputs(nd, in, out);
}

double interp_step(Interp *ip)
{
	for (int i = 0; i < ip->s->n; i++)
		interp_node(ip, ip->s->order[i]);
	ip->step++;
	return ip->buf[ip->g->loss->id][0];
}

double interp_forward(Interp *ip)
{
	for (int i = 0; i < ip->s->n; i++)
		if (ip->s->order[i]->phase == PHASE_FORWARD)
			interp_node(ip, ip->s->order[i]);
	return ip->buf[ip->g->loss->id][0];
}
