/*
 * report.c - summaries and printouts of the graph (FLOP counts: flops.c).
 */
#include "report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int64_t graph_parameters(const Graph *g)
{
	int64_t n = 0;
	for (int i = 0; i < g->tensors.n; i++)
		if (g->tensors.v[i]->kind == TENSOR_WEIGHT && __builtin_add_overflow(n, shape_elems(g->tensors.v[i]->shape), &n))
			return INT64_MAX;
	return n;
}

/* FLOPs of nodes [from, to), saturating at INT64_MAX as node_flops does. */
static int64_t sum_flops(const Graph *g, int from, int to)
{
	int64_t f = 0;
	for (int i = from; i < to; i++)
		if (__builtin_add_overflow(f, node_flops(g->nodes.v[i]), &f))
			return INT64_MAX;
	return f;
}

int64_t graph_forward_flops(const Graph *g)
{
	return sum_flops(g, 0, g->nforward);
}

static const char *si(double v, char *buf, size_t size)
{
	static const char *unit[] = {"", "k", "M", "G", "T", "P"};
	size_t u = 0;
	while (v >= 1000.0 && u + 1 < countof(unit)) {
		v /= 1000.0;
		u++;
	}
	snprintf(buf, size, "%.2f %s", v, unit[u]);
	return buf;
}

/* "265098308352 WORD (265.10 GFLOP)", or that the count does not fit in 64 bits */
static const char *flops_str(int64_t flops, const char *word, char *buf, size_t size)
{
	char si_buf[32];
	if (flops == INT64_MAX)
		snprintf(buf, size, "more than %" PRId64 "%s (too many to count)", INT64_MAX, word);
	else
		snprintf(buf, size, "%" PRId64 "%s (%sFLOP)", flops, word, si((double)flops, si_buf, sizeof si_buf));
	return buf;
}

/* Append to buf (NUL-terminated, of size bytes). */
static void cat(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	if (len + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* The update rule's hyperparameters, as `name = value` pairs joined by sep (`=` by eq). */
static void hyper_str(const OptimHyper *h, const char *sep, const char *eq, char *buf, size_t size)
{
	cat(buf, size, "lr%s%g", eq, h->lr);
	if (h->kind == OPTIM_ADAMW)
		cat(buf, size, "%sbeta1%s%g%sbeta2%s%g%seps%s%g", sep, eq, h->beta1, sep, eq, h->beta2, sep, eq, h->eps);
	else if (h->momentum > 0)
		cat(buf, size, "%smomentum%s%g", sep, eq, h->momentum);
	if (h->weight_decay > 0 || h->kind == OPTIM_ADAMW)
		cat(buf, size, "%sweight_decay%s%g", sep, eq, h->weight_decay);
	if (h->nesterov)
		cat(buf, size, "%snesterov%strue", sep, eq);
	if (h->clip > 0)
		cat(buf, size, "%sclip%s%g", sep, eq, h->clip);
}

/* `adamw(lr = 0.001, ..., schedule = cosine(steps = 1000, warmup = 100, floor = 0))` */
static const char *optimizer_str(const Optimizer *o, char *buf, size_t size)
{
	const LrSchedule *s = &o->h.sched;
	snprintf(buf, size, "%s(", o->name);
	hyper_str(&o->h, ", ", " = ", buf, size);
	if (s->kind == LR_COSINE)
		cat(buf, size, ", schedule = cosine(steps = %lld, warmup = %lld, floor = %g)", (long long)s->steps,
		    (long long)s->warmup, s->floor);
	else if (s->kind == LR_STEP)
		cat(buf, size, ", schedule = step_decay(every = %lld, gamma = %g)", (long long)s->every, s->gamma);
	cat(buf, size, ")");
	return buf;
}

/* The optimizer as JSON: its name, hyperparameters and schedule. */
static cJSON *optimizer_json(const Optimizer *o)
{
	const OptimHyper *h = &o->h;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", o->name);
	cJSON_AddNumberToObject(j, "lr", h->lr);
	cJSON_AddNumberToObject(j, "momentum", h->momentum);
	cJSON_AddBoolToObject(j, "nesterov", h->nesterov);
	cJSON_AddNumberToObject(j, "weight_decay", h->weight_decay);
	cJSON_AddNumberToObject(j, "beta1", h->beta1);
	cJSON_AddNumberToObject(j, "beta2", h->beta2);
	cJSON_AddNumberToObject(j, "eps", h->eps);
	cJSON_AddNumberToObject(j, "clip", h->clip);
	cJSON *s = cJSON_AddObjectToObject(j, "schedule");
	const LrSchedule *ls = &h->sched;
	cJSON_AddStringToObject(s, "kind", ls->kind == LR_COSINE ? "cosine" : ls->kind == LR_STEP ? "step_decay" : "constant");
	if (ls->kind == LR_COSINE) {
		cJSON_AddNumberToObject(s, "steps", (double)ls->steps);
		cJSON_AddNumberToObject(s, "warmup", (double)ls->warmup);
		cJSON_AddNumberToObject(s, "floor", ls->floor);
	} else if (ls->kind == LR_STEP) {
		cJSON_AddNumberToObject(s, "every", (double)ls->every);
		cJSON_AddNumberToObject(s, "gamma", ls->gamma);
	}
	return j;
}


void report_summary(FILE *f, const Graph *g, const Schedule *s, const char *path)
{
	char b1[160], b2[64];
	int64_t weights_bytes = 0, nweights = 0;
	for (int i = 0; i < g->nforward_tensors; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->kind == TENSOR_WEIGHT) {
			if (__builtin_add_overflow(weights_bytes, t->bytes, &weights_bytes))
				weights_bytes = INT64_MAX;
			nweights++;
		}
	}
	int64_t flops = graph_forward_flops(g);
	fprintf(f, "model: %s (%s)\n", g->model, path);
	fprintf(f, "parameters: %" PRId64 "\n", graph_parameters(g));
	fprintf(f, "parameter tensors: %" PRId64 " (%s)\n", nweights, fmt_bytes(weights_bytes, b2, sizeof b2));
	fprintf(f, "nodes: %d\n", g->nforward);
	fprintf(f, "tensors: %d\n", g->nforward_tensors);
	fprintf(f, "forward FLOPs: %s\n", flops_str(flops, "", b1, sizeof b1));
	fprintf(f, "input: %s %s\n", g->input->name, tensor_type_str(g->input, b1, sizeof b1));
	fprintf(f, "labels: %s %s\n", g->labels->name, tensor_type_str(g->labels, b1, sizeof b1));
	fprintf(f, "output: %s\n", tensor_type_str(g->output, b1, sizeof b1));
	fprintf(f, "loss: softmax cross-entropy, mean over the batch%s\n",
	        g->labels->dtype == DT_I32 && g->labels->shape.ndim > 1 ? " and its positions" : "");
	char ob[512];
	fprintf(f, "optimizer: %s\n", optimizer_str(&g->opt, ob, sizeof ob));
	if (g->precision == PREC_BF16) {
		int casts = 0;
		for (int i = 0; i < g->nodes.n; i++)
			casts += g->nodes.v[i]->op == OP_CAST;
		fprintf(f, "precision: bf16 (autocast: bf16 products, f32 softmax, norms and losses; weights, optimizer "
		           "state and updates f32, the weights' gradients too unless fused; %d casts)\n", casts);
	}
	if (!s)
		return;
	fprintf(f, "training step: %d nodes, %d tensors, %s\n", g->nodes.n, g->tensors.n,
	        flops_str(sum_flops(g, 0, g->nodes.n), " FLOPs", b1, sizeof b1));
	int attention = 0, loss = 0, head = 0, allreduce = 0, sums = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		sums += node_sum_input(g->nodes.v[i]) >= 0;
		attention += g->nodes.v[i]->op == OP_ATTENTION;
		loss += g->nodes.v[i]->op == OP_SOFTMAX_XENT_IDS_GRAD;
		head += g->nodes.v[i]->op == OP_DENSE_XENT_IDS_GRAD;
		allreduce += g->nodes.v[i]->op == OP_ALLREDUCE;
	}
	if (allreduce)
		fprintf(f, "data parallel: %d allreduce nodes average the weights' gradients over the ranks, the updates "
		           "after the backward pass\n", allreduce);
	if (g->nfused)
		fprintf(f, "fusion: %d activations and their gradients folded into the kernels beside them\n", g->nfused);
	if (sums)
		fprintf(f, "fusion: %d sums added by the kernels before them as they write (gradient sums by batchnorm_bwd "
		           "and layernorm_bwd, a concatenation's slices not copied; residual adds by dropout and dense)\n", sums);
	if (g->ncasts_folded)
		fprintf(f, "fusion: %d of autocast's casts folded into the kernels beside them (bf16 weight gradients "
		           "read by their updates, layer norms writing bf16 and reading bf16 gradients, adds reading bf16)\n",
		        g->ncasts_folded);
	int blocked = 0;
	for (int i = 0; i < g->tensors.n; i++)
		blocked += g->tensors.v[i]->blocked;
	if (blocked)
		fprintf(f, "layout: %d activations and gradients stored channel-blocked (nChw16c), as the convolutions read "
		           "and write them: their reorders folded into the kernels beside them\n", blocked);
	if (head)
		fprintf(f, "fusion: the output layer, the loss and their gradients in one kernel, the logits a block of "
		           "rows at a time (never stored)\n");
	if (loss)
		fprintf(f, "fusion: the loss and its gradient in one kernel, the gradient written over the logits\n");
	if (attention)
		fprintf(f, "fusion: %d attention layers fused, forward and backward (no [T, T] scores stored)\n", attention);
	fprintf(f, "peak live bytes: %" PRId64 " (%s) at step %d, %s\n", s->peak, fmt_bytes(s->peak, b2, sizeof b2),
	        s->peak_step, s->order[s->peak_step]->name);
}

/*
 * A node's attributes as ops.def's attrs column names them, for the text
 * and the JSON alike: a name and one or two numbers, a flag (printed
 * bare in text where true), or hidden in text where it says nothing
 * (groups 1). The optimizer's hyperparameters are apart (ATTRS_UPDATE).
 */
typedef enum AttrKind { AK_INT, AK_REAL, AK_PAIR, AK_FLAG } AttrKind;
typedef struct AttrItem {
	const char *name;
	AttrKind kind;
	double v[2];
	bool text_hidden;
} AttrItem;
enum { MAX_ATTR_ITEMS = 4 };

static int node_attrs(const Node *n, AttrItem *it)
{
	const Attrs *a = &n->attr;
	int k = 0;
#define ITEM(nm, kd, x, y, hide) (it[k++] = (AttrItem){(nm), (kd), {(double)(x), (double)(y)}, (hide)})
	switch (op_info[n->op].attrs) {
	case ATTRS_CONV:
	case ATTRS_WINDOW:
		ITEM("kernel", AK_PAIR, a->kh, a->kw, false);
		ITEM("stride", AK_PAIR, a->sh, a->sw, false);
		ITEM("pad", AK_PAIR, a->ph, a->pw, false);
		if (op_info[n->op].attrs == ATTRS_CONV)
			ITEM("groups", AK_INT, a->groups, 0, a->groups <= 1);
		break;
	case ATTRS_EPS:
		ITEM("eps", AK_REAL, a->eps, 0, false);
		break;
	case ATTRS_DROPOUT:
		ITEM("p", AK_REAL, a->p, 0, false);
		ITEM("seed", AK_INT, a->seed, 0, false);
		break;
	case ATTRS_BIAS_AXIS:
		if (a->axis > 0)
			ITEM("axis", AK_INT, a->axis, 0, false);
		break;
	case ATTRS_AXIS:
	case ATTRS_SLICE:
		ITEM("axis", AK_INT, a->axis, 0, false);
		if (op_info[n->op].attrs == ATTRS_SLICE)
			ITEM("offset", AK_INT, a->offset, 0, false);
		break;
	case ATTRS_OFFSET:
		ITEM("offset", AK_INT, a->offset, 0, false);
		break;
	case ATTRS_MATMUL:
		ITEM("trans_a", AK_FLAG, a->trans_a, 0, !a->trans_a);
		ITEM("trans_b", AK_FLAG, a->trans_b, 0, !a->trans_b);
		ITEM("alpha", AK_REAL, a->alpha, 0, false);
		break;
	case ATTRS_ATTENTION:
		ITEM("heads", AK_INT, a->shape.d[1], 0, false);
		ITEM("alpha", AK_REAL, a->alpha, 0, false);
		ITEM("causal", AK_FLAG, a->causal, 0, !a->causal);
		break;
	case ATTRS_MOMENTUM:
		ITEM("momentum", AK_REAL, a->momentum, 0, false);
		break;
	case ATTRS_CLAMP:
		ITEM("lo", AK_REAL, a->lo, 0, false);
		ITEM("hi", AK_REAL, a->hi, 0, false);
		break;
	case ATTRS_UPDATE:
	case ATTRS_NONE:
		break;
	}
#undef ITEM
	return k;
}

static void attrs_str(const Node *n, char *buf, size_t size)
{
	AttrItem it[MAX_ATTR_ITEMS];
	int k = node_attrs(n, it);
	size_t len = 0;
	buf[0] = '\0';
	if (op_info[n->op].attrs == ATTRS_UPDATE) {
		snprintf(buf, size, " ");
		hyper_str(&n->attr.upd, " ", "=", buf, size);
		return;
	}
	for (int i = 0; i < k && len < size; i++) {
		const AttrItem *t = &it[i];
		int w = t->text_hidden ? 0
		        : t->kind == AK_PAIR ? snprintf(buf + len, size - len, " %s=%.0fx%.0f", t->name, t->v[0], t->v[1])
		        : t->kind == AK_REAL ? snprintf(buf + len, size - len, " %s=%g", t->name, t->v[0])
		        : t->kind == AK_FLAG ? snprintf(buf + len, size - len, " %s", t->name)
		                             : snprintf(buf + len, size - len, " %s=%.0f", t->name, t->v[0]);
		len = w < 0 ? size : len + (size_t)w;
	}
}

static const char *phase_name(Phase p)
{
	switch (p) {
	case PHASE_FORWARD: return "forward";
	case PHASE_BACKWARD: return "backward";
	case PHASE_UPDATE: return "update";
	}
	unreachable();
}

static void print_interval(FILE *f, const Schedule *s, const Tensor *t)
{
	if (s)
		fprintf(f, " live [%d, %d]", s->live[t->id].first, s->live[t->id].last);
}

void report_graph(FILE *f, const Graph *g, const Schedule *s)
{
	char b1[160], b2[64], at[512];
	fprintf(f, "graph %s: %d nodes, %d tensors%s\n\n", g->model, g->nodes.n, g->tensors.n,
	        g->precision == PREC_BF16 ? ", bf16" : "");
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->producer)
			continue;
		fprintf(f, "%-8s %%%d %s : %s (%s)", tensor_kind_name(t->kind), t->id, t->name,
		        tensor_type_str(t, b1, sizeof b1), fmt_bytes(t->bytes, b2, sizeof b2));
		print_interval(f, s, t);
		fputc('\n', f);
	}
	Phase phase = PHASE_FORWARD;
	fputc('\n', f);
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = s ? s->order[i] : g->nodes.v[i];
		if (s && (i == 0 || n->phase != phase)) {
			phase = n->phase;
			fprintf(f, "%s# %s\n", i ? "\n" : "", phase_name(phase));
		}
		if (s)
			fprintf(f, "%4d: ", i);
		for (int k = 0; k < n->nout; k++)
			fprintf(f, "%s%%%d", k ? ", " : "", n->out[k]->id);
		char lb[48];
		fprintf(f, "%s%s(", n->nout ? " = " : "", node_op_label(n, lb, sizeof lb));
		for (int k = 0; k < n->nin; k++)
			fprintf(f, "%s%%%d", k ? ", " : "", n->in[k]->id);
		attrs_str(n, at, sizeof at);
		fprintf(f, ")%s", at);
		for (int k = 0; k < n->nout; k++) {
			fprintf(f, "%s%s %s%s", k ? ", " : " : ", n->out[k]->name, tensor_type_str(n->out[k], b1, sizeof b1),
			        n->out[k]->blocked ? " nChw16c" : ""); /* the CPU's channel-blocked layout (layout.h) */
			print_interval(f, s, n->out[k]);
		}
		if (n->nout == 0)
			fprintf(f, " : updates %s", n->in[0]->name);
		if (n->loc.file)
			fprintf(f, "  @ %s:%d:%d", n->loc.file->name, n->loc.first_line, n->loc.first_column);
		fputc('\n', f);
	}
}

static void dot_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

void report_dot(FILE *f, const Graph *g)
{
	char b1[160];
	fprintf(f, "digraph \"");
	dot_escape(f, g->model);
	fprintf(f, "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		if (t->producer || t->kind == TENSOR_WEIGHT)
			continue;
		fprintf(f, "  t%d [shape=ellipse, label=\"", t->id);
		dot_escape(f, t->name);
		fprintf(f, "\\n%s\"];\n", tensor_type_str(t, b1, sizeof b1));
	}
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = g->nodes.v[i];
		char lb[48];
		fprintf(f, "  n%d [shape=box, style=rounded, label=\"%s\\n", n->id, node_op_label(n, lb, sizeof lb));
		dot_escape(f, n->name);
		if (n->nout)
			fprintf(f, "\\n%s", tensor_type_str(n->out[0], b1, sizeof b1));
		fprintf(f, "\"];\n");
		for (int k = 0; k < n->nin; k++) {
			const Tensor *t = n->in[k];
			if (t->kind == TENSOR_WEIGHT)
				continue; /* weights would double the drawing; they are in the label's layer */
			if (t->producer)
				fprintf(f, "  n%d -> n%d;\n", t->producer->id, n->id);
			else
				fprintf(f, "  t%d -> n%d;\n", t->id, n->id);
		}
	}
	fprintf(f, "}\n");
}

static cJSON *shape_json(Shape s)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < s.ndim; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s.d[i]));
	return a;
}

static cJSON *pair_json(int a, int b)
{
	cJSON *p = cJSON_CreateArray();
	cJSON_AddItemToArray(p, cJSON_CreateNumber(a));
	cJSON_AddItemToArray(p, cJSON_CreateNumber(b));
	return p;
}

static cJSON *attrs_json(const Node *n)
{
	if (op_info[n->op].attrs == ATTRS_UPDATE)
		return optimizer_json(&(Optimizer){.name = op_info[n->op].name, .h = n->attr.upd});
	cJSON *o = cJSON_CreateObject();
	AttrItem it[MAX_ATTR_ITEMS];
	int k = node_attrs(n, it);
	for (int i = 0; i < k; i++) {
		const AttrItem *t = &it[i];
		if (t->kind == AK_PAIR)
			cJSON_AddItemToObject(o, t->name, pair_json((int)t->v[0], (int)t->v[1]));
		else if (t->kind == AK_FLAG)
			cJSON_AddBoolToObject(o, t->name, t->v[0] != 0);
		else
			cJSON_AddNumberToObject(o, t->name, t->v[0]);
	}
	if (n->attr.shape.ndim)
		cJSON_AddItemToObject(o, "shape", shape_json(n->attr.shape));
	if (n->attr.post_act != ACT_NONE)
		cJSON_AddStringToObject(o, "post_act", act_name(n->attr.post_act));
	return o;
}

void report_json(FILE *f, const Graph *g, const Schedule *s)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "model", g->model);
	cJSON_AddStringToObject(root, "precision", precision_name(g->precision));
	cJSON_AddBoolToObject(root, "training", g->training);
	cJSON *ts = cJSON_AddArrayToObject(root, "tensors");
	for (int i = 0; i < g->tensors.n; i++) {
		const Tensor *t = g->tensors.v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", t->id);
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "kind", tensor_kind_name(t->kind));
		cJSON_AddStringToObject(o, "dtype", dtype_name(t->dtype));
		cJSON_AddItemToObject(o, "shape", shape_json(t->shape));
		cJSON_AddNumberToObject(o, "bytes", (double)t->bytes);
		if (s)
			cJSON_AddItemToObject(o, "live", pair_json(s->live[i].first, s->live[i].last));
		cJSON_AddItemToArray(ts, o);
	}
	cJSON *ns = cJSON_AddArrayToObject(root, "nodes");
	for (int i = 0; i < g->nodes.n; i++) {
		const Node *n = s ? s->order[i] : g->nodes.v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", n->id);
		cJSON_AddStringToObject(o, "op", op_info[n->op].name);
		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddStringToObject(o, "phase", phase_name(n->phase));
		cJSON *in = cJSON_AddArrayToObject(o, "inputs"), *out = cJSON_AddArrayToObject(o, "outputs");
		for (int k = 0; k < n->nin; k++)
			cJSON_AddItemToArray(in, cJSON_CreateNumber(n->in[k]->id));
		for (int k = 0; k < n->nout; k++)
			cJSON_AddItemToArray(out, cJSON_CreateNumber(n->out[k]->id));
		cJSON_AddItemToObject(o, "attrs", attrs_json(n));
		cJSON_AddNumberToObject(o, "flops", (double)node_flops(n));
		cJSON_AddItemToArray(ns, o);
	}
	cJSON_AddNumberToObject(root, "input", g->input->id);
	cJSON_AddNumberToObject(root, "labels", g->labels->id);
	cJSON_AddNumberToObject(root, "output", g->output->id);
	cJSON_AddNumberToObject(root, "loss", g->loss->id);
	cJSON_AddItemToObject(root, "optimizer", optimizer_json(&g->opt));
	if (s)
		cJSON_AddNumberToObject(root, "peak_live_bytes", (double)s->peak);
	char *text = cJSON_Print(root);
	if (!text)
		fatal_sys("out of memory printing JSON");
	fputs(text, f);
	fputc('\n', f);
	free(text);
	cJSON_Delete(root);
}
