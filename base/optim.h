/*
 * optim.h - the weight update rules (the language's `optimizer = ...`):
 * SGD with momentum, weight decay and Nesterov's variant, AdamW, the
 * learning-rate schedules and clipping by the gradients' global norm, as
 * PyTorch's torch.optim.SGD, torch.optim.AdamW and
 * torch.nn.utils.clip_grad_norm_ compute them.
 *
 * One definition for the interpreter, the CPU runtime and the CUDA
 * kernels (nvcc compiles this header too): each computes an element's
 * update with these functions, in double, and rounds what it stores.
 */
#ifndef AUTOTM_OPTIM_H
#define AUTOTM_OPTIM_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define OPTIM_FN static __host__ __device__ inline
#else
#define OPTIM_FN static inline
#endif

/* LrSchedule.kind */
enum { LR_CONSTANT = 0, LR_COSINE = 1, LR_STEP = 2 };

/*
 * The learning rate of step t (0 for the first step of a run), for the
 * base rate lr:
 *   constant    lr
 *   cosine      linear warmup over the first `warmup` steps,
 *               lr (t + 1) / warmup, then a cosine from lr down to `floor`
 *               at step `steps`, floor + (lr - floor) (1 + cos(pi p)) / 2
 *               with p = (t - warmup) / (steps - warmup); floor afterwards
 *   step        lr gamma^floor(t / every) (PyTorch's StepLR)
 */
typedef struct LrSchedule {
	int32_t kind;   /* LR_* */
	int64_t warmup; /* cosine: warmup steps (0: none) */
	int64_t steps;  /* cosine: the step the decay reaches floor */
	double floor;   /* cosine: the final rate */
	int64_t every;  /* step: steps between decays */
	double gamma;   /* step: the factor of each decay */
} LrSchedule;

/* OptimHyper.kind */
enum { OPTIM_SGD = 0, OPTIM_ADAMW = 1 };

/* An optimizer's hyperparameters, as written in the model. */
typedef struct OptimHyper {
	int32_t kind;        /* OPTIM_* */
	double lr;           /* base learning rate */
	double momentum;     /* sgd: momentum (0: no velocity) */
	int32_t nesterov;    /* sgd: Nesterov momentum */
	double weight_decay; /* sgd: added to the gradient (L2); adamw: decoupled */
	double beta1, beta2; /* adamw: the moments' decay */
	double eps;          /* adamw: added to the second moment's root */
	double clip;         /* the gradients' largest global L2 norm (0: no clipping) */
	LrSchedule sched;    /* the learning rate over the steps */
} OptimHyper;

OPTIM_FN double optim_lr(const OptimHyper *h, uint64_t t)
{
	const LrSchedule *s = &h->sched;
	switch (s->kind) {
	case LR_COSINE: {
		if ((int64_t)t < s->warmup)
			return h->lr * (double)(t + 1) / (double)s->warmup;
		if ((int64_t)t >= s->steps)
			return s->floor;
		double p = (double)((int64_t)t - s->warmup) / (double)(s->steps - s->warmup);
		return s->floor + (h->lr - s->floor) * 0.5 * (1.0 + cos(3.14159265358979323846 * p));
	}
	case LR_STEP:
		return h->lr * pow(s->gamma, (double)(t / (uint64_t)s->every));
	default:
		return h->lr;
	}
}

/* What an update of step t needs beyond each element's values. */
typedef struct OptimStep {
	double lr;       /* this step's learning rate */
	double bc1;      /* adamw: 1 - beta1^(t + 1) */
	double bc2_sqrt; /* adamw: sqrt(1 - beta2^(t + 1)) */
} OptimStep;

OPTIM_FN OptimStep optim_step(const OptimHyper *h, uint64_t t)
{
	OptimStep s;
	s.lr = optim_lr(h, t);
	s.bc1 = 1.0 - pow(h->beta1, (double)(t + 1));
	s.bc2_sqrt = sqrt(1.0 - pow(h->beta2, (double)(t + 1)));
	return s;
}

/*
 * Clipping: the factor every gradient is multiplied by when the sum of
 * their squared elements is sumsq, min(1, clip / (sqrt(sumsq) + 1e-6))
 * as clip_grad_norm_ computes it; 1 without clipping.
 */
OPTIM_FN double optim_clip_scale(double clip, double sumsq)
{
	if (!(clip > 0))
		return 1.0;
	double c = clip / (sqrt(sumsq) + 1e-6);
	return c < 1.0 ? c : 1.0;
}

/*
 * SGD on one element, weight w and gradient g (clipped by scale); returns
 * the new weight. Without momentum: w -= lr (g + weight_decay w). With
 * momentum (velocity *v, read and written):
 *   g += weight_decay w;  v = momentum v + g;  w -= lr (nesterov ? g + momentum v : v)
 * Branch-free within an element, so that the runtimes' loops vectorise.
 */
OPTIM_FN double optim_sgd(const OptimHyper *h, const OptimStep *s, double scale, double w, double g)
{
	return w - s->lr * (g * scale + h->weight_decay * w);
}

OPTIM_FN double optim_sgd_momentum(const OptimHyper *h, const OptimStep *s, double scale, double w, double g,
                                   double *v)
{
	g = g * scale + h->weight_decay * w;
	double nv = h->momentum * *v + g;
	*v = nv;
	/* nesterov ? g + momentum nv : nv, as arithmetic (exact: 0 g + 1 nv = nv) */
	double a = (double)(h->nesterov != 0);
	return w - s->lr * (a * g + (a * h->momentum + (1.0 - a)) * nv);
}

/*
 * AdamW on one element: weight w, gradient g (clipped by scale), first
 * and second moments *m and *v. Returns the new weight.
 *   w *= 1 - lr weight_decay;  m += (1 - beta1) (g - m);  v = beta2 v + (1 - beta2) g^2;
 *   w -= lr / bc1 m / (sqrt(v) / bc2_sqrt + eps)
 */
OPTIM_FN double optim_adamw(const OptimHyper *h, const OptimStep *s, double scale, double w, double g, double *m,
                            double *v)
{
	g *= scale;
	w *= 1.0 - s->lr * h->weight_decay;
	*m += (1.0 - h->beta1) * (g - *m);
	*v = h->beta2 * *v + (1.0 - h->beta2) * g * g;
	return w - s->lr / s->bc1 * *m / (sqrt(*v) / s->bc2_sqrt + h->eps);
}

#endif
