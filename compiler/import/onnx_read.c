/*
 * onnx_read.c - read an ONNX file (protobuf, parsed by protobuf-c with
 * compiler/import/onnx.proto) into onnx_ir.h's form, checking everything
 * the importer relies on: the graph is there, every node's inputs are
 * written before it (which also rules out cycles) by a node, a constant
 * or the graph's input, no value is written twice, constants have known
 * types, agreeing sizes (computed without overflow) and their data in the
 * file, and there is one data input and one output.
 */
#include "onnx_ir.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum {
	MAX_FILE = 1 << 30,      /* bytes of an ONNX file (protobuf's own limit is 2 GiB) */
	ONNX_FLOAT = 1, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_BOOL = 9, ONNX_DOUBLE = 11,
};

static bool fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- values by name: open addressing over the arena ------------------------ */

typedef struct Names {
	int *slot; /* value index + 1, 0: empty */
	size_t cap;
} Names;

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int find(const Ir *ir, const Names *t, const char *name)
{
	for (size_t i = hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->slot[i])
			return -1;
		if (strcmp(ir->v[t->slot[i] - 1].name, name) == 0)
			return t->slot[i] - 1;
	}
}

/* A new value `name` (the caller checked it is new). */
static int add_value(Ir *ir, Names *t, const char *name)
{
	size_t i = hash(name) & (t->cap - 1);
	while (t->slot[i])
		i = (i + 1) & (t->cap - 1);
	ir->v[ir->nv] = (IrValue){.name = name, .producer = -1, .konst = -1, .from = -1};
	t->slot[i] = ++ir->nv;
	return ir->nv - 1;
}

/* ---- constants ----------------------------------------------------------------- */

/* c's elements from a TensorProto: raw little-endian bytes or the typed field. */
static bool const_of(const Onnx__TensorProto *t, IrConst *c, Arena *a, const char *what, char *err, size_t errlen)
{
	if (t->has_data_location && t->data_location == 1)
		return fail(err, errlen, "%s: its data is in an external file, which autotmc import does not read "
		                         "(export with the weights inside the model)", what);
	if (t->n_dims > IR_MAX_DIMS)
		return fail(err, errlen, "%s: %zu dimensions (at most %d)", what, t->n_dims, IR_MAX_DIMS);
	c->ndim = (int)t->n_dims;
	c->n = 1;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || __builtin_mul_overflow(c->n, t->dims[i], &c->n) || c->n > MAX_FILE)
			return fail(err, errlen, "%s: dimension %zu of size %lld makes it too large or is negative", what, i,
			            (long long)t->dims[i]);
		c->dims[i] = t->dims[i];
	}
	int type = t->has_data_type ? t->data_type : 0;
	size_t es = type == ONNX_FLOAT || type == ONNX_INT32 ? 4 : type == ONNX_INT64 || type == ONNX_DOUBLE ? 8
	          : type == ONNX_BOOL ? 1 : 0;
	if (!es)
		return fail(err, errlen, "%s: elements of ONNX type %d (autotmc reads float, double, int32, int64 and bool)",
		            what, type);
	size_t typed = type == ONNX_FLOAT ? t->n_float_data : type == ONNX_INT32 || type == ONNX_BOOL ? t->n_int32_data
	             : type == ONNX_INT64 ? t->n_int64_data : t->n_double_data;
	bool raw = t->has_raw_data;
	if (raw ? t->raw_data.len != (size_t)c->n * es : typed != (size_t)c->n)
		return fail(err, errlen, "%s: %zu %s for %lld elements", what, raw ? t->raw_data.len : typed,
		            raw ? "bytes of data" : "values", (long long)c->n);
	c->data = arena_array(a, (size_t)(c->n ? c->n : 1), sizeof(float));
	for (int64_t i = 0; i < c->n; i++) {
		const uint8_t *r = raw ? t->raw_data.data + (size_t)i * es : NULL;
		float f32;
		int32_t i32;
		int64_t i64;
		double f64;
		switch (type) {
		case ONNX_FLOAT: if (r) memcpy(&f32, r, 4); else f32 = t->float_data[i]; c->data[i] = f32; break;
		case ONNX_INT32: if (r) memcpy(&i32, r, 4); else i32 = t->int32_data[i]; c->data[i] = (float)i32; break;
		case ONNX_BOOL: c->data[i] = r ? (float)(r[0] != 0) : (float)(t->int32_data[i] != 0); break;
		case ONNX_INT64: if (r) memcpy(&i64, r, 8); else i64 = t->int64_data[i]; c->data[i] = (float)i64; break;
		default: if (r) memcpy(&f64, r, 8); else f64 = t->double_data[i]; c->data[i] = (float)f64; break;
		}
	}
	return true;
}

static int add_const(Ir *ir, Arena *a, const Onnx__TensorProto *t, const char *what, char *err, size_t errlen)
{
	IrConst c = {0};
	if (!const_of(t, &c, a, what, err, errlen))
		return -1;
	ir->konst[ir->nkonst] = c;
	return ir->nkonst++;
}

/* ---- the graph ------------------------------------------------------------------- */

/* How a node is called in messages: its name and op type. */
static const char *node_label(const Onnx__NodeProto *p, int i, char *buf, size_t size)
{
	snprintf(buf, size, "node %d '%s' (%s)", i, p->name && p->name[0] ? p->name : "?", p->op_type ? p->op_type : "?");
	return buf;
}

/* The graph's one data input: the input that is not a constant, and its dimensions. */
static bool read_input(Ir *ir, const Onnx__GraphProto *g, Names *t, char *err, size_t errlen)
{
	ir->input = -1;
	for (size_t i = 0; i < g->n_input; i++) {
		const Onnx__ValueInfoProto *vi = g->input[i];
		if (!vi->name || !vi->name[0])
			return fail(err, errlen, "graph input %zu has no name", i);
		int v = find(ir, t, vi->name);
		if (v >= 0 && ir->v[v].konst >= 0)
			continue; /* an initializer listed as an input too (IR version 3) */
		if (v >= 0 || ir->input >= 0)
			return fail(err, errlen, "graph input '%s': the model has more than one data input (autotmc trains a "
			                         "network of one input)", vi->name);
		ir->input = add_value(ir, t, vi->name);
		const Onnx__TypeProto__Tensor *tt = vi->type ? vi->type->tensor_type : NULL;
		if (!tt || !tt->shape || tt->shape->n_dim < 2 || tt->shape->n_dim > IR_MAX_DIMS)
			return fail(err, errlen, "graph input '%s': no tensor shape of 2 to %d dimensions (export with an example "
			                         "input)", vi->name, IR_MAX_DIMS);
		ir->in_ndim = (int)tt->shape->n_dim;
		ir->input_ids = tt->has_elem_type && (tt->elem_type == ONNX_INT64 || tt->elem_type == ONNX_INT32);
		for (size_t d = 0; d < tt->shape->n_dim; d++) {
			const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
			bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			if (known && (dim->dim_value <= 0 || dim->dim_value > (int64_t)1 << 31))
				return fail(err, errlen, "graph input '%s': dimension %zu is %lld", vi->name, d,
				            (long long)dim->dim_value);
			if (!known && d > 0)
				return fail(err, errlen, "graph input '%s': dimension %zu is symbolic; only the batch may be",
				            vi->name, d);
			ir->in_dims[d] = known ? dim->dim_value : -1;
		}
	}
	if (ir->input < 0)
		return fail(err, errlen, "the graph has no data input (every input is an initializer)");
	return true;
}

/* Node i's values: inputs found (written earlier), outputs new; Constant nodes become constants. */
static bool read_node(Ir *ir, Arena *a, Names *t, int i, char *err, size_t errlen)
{
	const Onnx__NodeProto *p = ir->model->graph->node[i];
	char who[256];
	node_label(p, i, who, sizeof who);
	if (!p->op_type || !p->op_type[0])
		return fail(err, errlen, "%s has no op type", who);
	if (p->domain && p->domain[0] && strcmp(p->domain, "ai.onnx") != 0)
		return fail(err, errlen, "%s: an operator of domain '%s', not ONNX's", who, p->domain);
	IrNode *n = &ir->node[ir->nnode];
	*n = (IrNode){.p = p, .nin = (int)p->n_input, .nout = (int)p->n_output};
	n->in = arena_array(a, p->n_input + 1, sizeof(int));
	n->out = arena_array(a, p->n_output + 1, sizeof(int));
	for (size_t k = 0; k < p->n_input; k++) {
		const char *name = p->input[k];
		n->in[k] = name && name[0] ? find(ir, t, name) : -1;
		if (name && name[0] && n->in[k] < 0)
			return fail(err, errlen, "%s: input %zu '%s' is written by no node before it, no initializer and no graph "
			                         "input (a missing initializer, or nodes out of order: a cycle)", who, k, name);
	}
	for (size_t k = 0; k < p->n_output; k++) {
		const char *name = p->output[k];
		if (!name || !name[0]) {
			n->out[k] = -1;
			continue;
		}
		if (find(ir, t, name) >= 0)
			return fail(err, errlen, "%s: output '%s' is written twice", who, name);
		n->out[k] = add_value(ir, t, name);
		ir->v[n->out[k]].producer = ir->nnode;
	}
	if (strcmp(p->op_type, "Constant") == 0) { /* a constant, not a node */
		const Onnx__AttributeProto *v = p->n_attribute == 1 ? p->attribute[0] : NULL;
		if (!v || !v->name || strcmp(v->name, "value") != 0 || !v->t || n->nout != 1 || n->out[0] < 0)
			return fail(err, errlen, "%s: a Constant other than one tensor 'value'", who);
		int c = add_const(ir, a, v->t, who, err, errlen);
		if (c < 0)
			return false;
		ir->v[n->out[0]].producer = -1;
		ir->v[n->out[0]].konst = c;
		return true;
	}
	ir->nnode++;
	return true;
}

void ir_link_uses(Ir *ir, Arena *a)
{
	for (int v = 0; v < ir->nv; v++)
		ir->v[v].nuses = 0;
	for (int i = 0; i < ir->nnode; i++)
		for (int k = 0; k < ir->node[i].nin; k++)
			if (ir->node[i].in[k] >= 0)
				ir->v[ir->node[i].in[k]].nuses++;
	for (int v = 0; v < ir->nv; v++) {
		ir->v[v].uses = arena_array(a, (size_t)ir->v[v].nuses + 1, sizeof(int));
		ir->v[v].nuses = 0;
	}
	for (int i = 0; i < ir->nnode; i++)
		for (int k = 0; k < ir->node[i].nin; k++)
			if (ir->node[i].in[k] >= 0) {
				IrValue *v = &ir->v[ir->node[i].in[k]];
				v->uses[v->nuses++] = i;
			}
}

static bool read_graph(Ir *ir, Arena *a, char *err, size_t errlen)
{
	const Onnx__GraphProto *g = ir->model->graph;
	if (!g)
		return fail(err, errlen, "the model has no graph");
	size_t values = g->n_initializer + g->n_input + 1;
	for (size_t i = 0; i < g->n_node; i++)
		values += g->node[i]->n_output;
	Names t = {.cap = 16};
	while (t.cap < 2 * values)
		t.cap *= 2;
	t.slot = arena_array(a, t.cap, sizeof(int));
	ir->v = arena_array(a, values, sizeof(IrValue));
	ir->node = arena_array(a, g->n_node + 1, sizeof(IrNode));
	ir->konst = arena_array(a, g->n_initializer + g->n_node + 1, sizeof(IrConst));
	for (size_t i = 0; i < g->n_initializer; i++) {
		const Onnx__TensorProto *in = g->initializer[i];
		char what[300];
		snprintf(what, sizeof what, "initializer '%s'", in->name ? in->name : "");
		if (!in->name || !in->name[0] || find(ir, &t, in->name) >= 0)
			return fail(err, errlen, "%s: no name, or a name given twice", what);
		int c = add_const(ir, a, in, what, err, errlen);
		if (c < 0)
			return false;
		int v = add_value(ir, &t, in->name);
		ir->v[v].konst = c;
		ir->v[v].param = in->name;
	}
	if (!read_input(ir, g, &t, err, errlen))
		return false;
	for (size_t i = 0; i < g->n_node; i++)
		if (!read_node(ir, a, &t, (int)i, err, errlen))
			return false;
	if (g->n_output != 1 || !g->output[0]->name || (ir->output = find(ir, &t, g->output[0]->name)) < 0 ||
	    ir->v[ir->output].producer < 0)
		return fail(err, errlen, "the graph has %zu outputs; autotmc trains a network of one output, written by a node",
		            g->n_output);
	ir_link_uses(ir, a);
	return true;
}

bool onnx_read(const char *path, Ir *ir, Arena *a, char *err, size_t errlen)
{
	*ir = (Ir){.input = -1, .output = -1};
	const char *not_regular;
	size_t len;
	char *buf = read_regular_file(path, MAX_FILE, &len, &not_regular);
	if (!buf)
		return not_regular ? fail(err, errlen, "%s is %s, not an ONNX file", path, not_regular)
		                   : fail(err, errlen, "cannot read %s: %s", path, errno == EFBIG ? "larger than 1 GiB" : strerror(errno));
	ir->model = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
	free(buf);
	if (!ir->model)
		return fail(err, errlen, "%s: not an ONNX model (the protobuf does not parse: truncated, or another format)",
		            path);
	ir->opset = 0;
	for (size_t i = 0; i < ir->model->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = ir->model->opset_import[i];
		if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0)
			ir->opset = o->version;
	}
	char inner[900];
	if (!read_graph(ir, a, inner, sizeof inner))
		return fail(err, errlen, "%s: %s", path, inner);
	return true;
}

void onnx_free(Ir *ir)
{
	if (ir->model)
		onnx__model_proto__free_unpacked(ir->model, NULL);
	ir->model = NULL;
}

/* ---- attributes ------------------------------------------------------------------ */

const Onnx__AttributeProto *ir_attr(const IrNode *n, const char *name)
{
	for (size_t i = 0; i < n->p->n_attribute; i++)
		if (n->p->attribute[i]->name && strcmp(n->p->attribute[i]->name, name) == 0)
			return n->p->attribute[i];
	return NULL;
}

int64_t ir_attr_int(const IrNode *n, const char *name, int64_t dflt)
{
	const Onnx__AttributeProto *at = ir_attr(n, name);
	return at && at->has_i ? at->i : dflt;
}

double ir_attr_float(const IrNode *n, const char *name, double dflt)
{
	const Onnx__AttributeProto *at = ir_attr(n, name);
	return at && at->has_f ? at->f : dflt;
}

int ir_attr_ints(const IrNode *n, const char *name, int64_t *out, int max)
{
	const Onnx__AttributeProto *at = ir_attr(n, name);
	if (!at)
		return 0;
	size_t k = at->n_ints < (size_t)max ? at->n_ints : (size_t)max;
	if (k)
		memcpy(out, at->ints, sizeof(int64_t) * k);
	return at->n_ints > INT_MAX ? INT_MAX : (int)at->n_ints;
}

int64_t ir_int(float f)
{
	const float lim = 1099511627776.0f; /* 2^40: beyond any size, and far inside int64 */
	return f != f ? 0 : f > lim ? (int64_t)lim : f < -lim ? -(int64_t)lim : (int64_t)f;
}

int ir_reader(const Ir *ir, int v)
{
	return v >= 0 && ir->v[v].nuses == 1 ? ir->v[v].uses[0] : -1;
}

const IrConst *ir_const(const Ir *ir, int v)
{
	return v >= 0 && ir->v[v].konst >= 0 ? &ir->konst[ir->v[v].konst] : NULL;
}
