/*
 * kdesc.c - a node's kernel description and its signature (see kdesc.h).
 */
#include "kdesc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static int64_t dbits(double d)
{
	int64_t v;
	memcpy(&v, &d, sizeof v);
	return v;
}

static double bits_f64(int64_t v)
{
	double d;
	memcpy(&d, &v, sizeof d);
	return d;
}

static void put_shape(int64_t *at, Shape s)
{
	at[0] = s.ndim;
	for (int i = 0; i < s.ndim; i++)
		at[1 + i] = s.d[i];
}

void node_describe(const Node *n, int64_t desc[RT_DESC_LEN])
{
	const Attrs *a = &n->attr;
	if (n->nin + n->nout > RT_MAX_ARGS)
		ICE("%s has %d arguments; the runtime takes at most %d", n->name, n->nin + n->nout, RT_MAX_ARGS);
	memset(desc, 0, sizeof(int64_t) * RT_DESC_LEN);
	desc[RT_D_OP] = n->op;
	desc[RT_D_NIN] = n->nin;
	desc[RT_D_NOUT] = n->nout;
	desc[RT_D_KH] = a->kh, desc[RT_D_KW] = a->kw, desc[RT_D_SH] = a->sh, desc[RT_D_SW] = a->sw;
	desc[RT_D_PH] = a->ph, desc[RT_D_PW] = a->pw, desc[RT_D_GROUPS] = a->groups;
	desc[RT_D_AXIS] = a->axis, desc[RT_D_OFFSET] = a->offset, desc[RT_D_SEED] = a->seed;
	desc[RT_D_EPS] = dbits(a->eps), desc[RT_D_P] = dbits(a->p);
	/* the statistics' update uses it; batchnorm carries it to autodiff only (its kernel and signature do not) */
	desc[RT_D_BN_MOMENTUM] = n->op == OP_BATCHNORM_STATS ? dbits(a->momentum) : 0;
	const OptimHyper *h = &a->upd;
	desc[RT_D_OPTIM] = h->kind, desc[RT_D_LR] = dbits(h->lr), desc[RT_D_MOMENTUM] = dbits(h->momentum);
	desc[RT_D_NESTEROV] = h->nesterov;
	desc[RT_D_WD] = dbits(h->weight_decay), desc[RT_D_BETA1] = dbits(h->beta1), desc[RT_D_BETA2] = dbits(h->beta2);
	desc[RT_D_ADAM_EPS] = dbits(h->eps), desc[RT_D_CLIP] = dbits(h->clip);
	desc[RT_D_SCHED] = h->sched.kind, desc[RT_D_WARMUP] = h->sched.warmup, desc[RT_D_SCHED_STEPS] = h->sched.steps;
	desc[RT_D_FLOOR] = dbits(h->sched.floor), desc[RT_D_EVERY] = h->sched.every;
	desc[RT_D_GAMMA] = dbits(h->sched.gamma);
	desc[RT_D_TRANS_A] = a->trans_a, desc[RT_D_TRANS_B] = a->trans_b, desc[RT_D_ALPHA] = dbits(a->alpha);
	desc[RT_D_LO] = dbits(a->lo), desc[RT_D_HI] = dbits(a->hi);
	desc[RT_D_ACT] = a->post_act, desc[RT_D_CAUSAL] = a->causal;
	put_shape(&desc[RT_D_ASHAPE], a->shape);
	for (int k = 0; k < n->nin + n->nout; k++) {
		const Tensor *t = k < n->nin ? n->in[k] : n->out[k - n->nin];
		put_shape(&RT_ARG_NDIM(desc, k), t->shape);
		if (t->dtype == DT_BF16)
			desc[RT_D_BF16] |= (int64_t)1 << k;
		if (t->blocked)
			desc[RT_D_BLOCKED] |= (int64_t)1 << k;
	}
}

/* Append to buf at *len, never past size. */
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	if (*len >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	*len = n < 0 ? size : *len + (size_t)n;
}

static void put_dims(char *buf, size_t size, size_t *len, const int64_t *at)
{
	put(buf, size, len, "[");
	for (int64_t d = 0; d < at[0] && d < RT_MAX_DIMS; d++)
		put(buf, size, len, "%s%lld", d ? "," : "", (long long)at[1 + d]);
	put(buf, size, len, "]");
}

const char *kdesc_signature(const int64_t *desc, char *buf, size_t size)
{
	static const struct {
		int field;        /* RT_D_* */
		const char *name; /* as printed */
		bool real;        /* the field holds double bits */
	} attrs[] = {
		{RT_D_KH, "kh", false},     {RT_D_KW, "kw", false},     {RT_D_SH, "sh", false},
		{RT_D_SW, "sw", false},     {RT_D_PH, "ph", false},     {RT_D_PW, "pw", false},
		{RT_D_GROUPS, "groups", false}, {RT_D_AXIS, "axis", false}, {RT_D_OFFSET, "offset", false},
		{RT_D_EPS, "eps", true},    {RT_D_P, "p", true},        {RT_D_LR, "lr", true},
		{RT_D_BN_MOMENTUM, "momentum", true}, /* batchnorm_stats */
		{RT_D_MOMENTUM, "momentum", true},    /* sgd_momentum */
		{RT_D_NESTEROV, "nesterov", false},
		{RT_D_WD, "weight_decay", true}, {RT_D_BETA1, "beta1", true}, {RT_D_BETA2, "beta2", true},
		{RT_D_ADAM_EPS, "eps", true}, {RT_D_CLIP, "clip", true}, {RT_D_SCHED, "schedule", false},
		{RT_D_WARMUP, "warmup", false}, {RT_D_SCHED_STEPS, "steps", false}, {RT_D_FLOOR, "floor", true},
		{RT_D_EVERY, "every", false}, {RT_D_GAMMA, "gamma", true},
		{RT_D_TRANS_A, "trans_a", false}, {RT_D_TRANS_B, "trans_b", false}, {RT_D_ALPHA, "alpha", true},
		{RT_D_LO, "lo", true}, {RT_D_HI, "hi", true}, {RT_D_CAUSAL, "causal", false},
	};
	size_t len = 0;
	if (size)
		buf[0] = '\0';
	int64_t op = desc[RT_D_OP], nin = desc[RT_D_NIN], nout = desc[RT_D_NOUT];
	put(buf, size, &len, "%s", op >= 0 && op < NUM_OPS ? op_info[op].name : "?");
	for (int64_t k = 0; k < nin + nout && k < RT_MAX_ARGS; k++) {
		put(buf, size, &len, k == nin ? " ->" : "");
		put(buf, size, &len, " ");
		put_dims(buf, size, &len, &RT_ARG_NDIM(desc, k));
		if (rt_arg_bf16(desc, (int)k))
			put(buf, size, &len, "bf16");
		if (rt_arg_blocked(desc, (int)k))
			put(buf, size, &len, "c16");
	}
	if (nout == 0)
		put(buf, size, &len, " ->");
	for (size_t i = 0; i < countof(attrs); i++) {
		int64_t v = desc[attrs[i].field];
		if (v == 0)
			continue;
		if (attrs[i].real)
			put(buf, size, &len, " %s=%.17g", attrs[i].name, bits_f64(v));
		else
			put(buf, size, &len, " %s=%lld", attrs[i].name, (long long)v);
	}
	if (desc[RT_D_ACT] > 0 && desc[RT_D_ACT] < NUM_ACTS)
		put(buf, size, &len, " act=%s", act_name((Act)desc[RT_D_ACT]));
	if (desc[RT_D_ASHAPE] > 0) {
		put(buf, size, &len, " shape=");
		put_dims(buf, size, &len, &desc[RT_D_ASHAPE]);
	}
	return buf;
}
