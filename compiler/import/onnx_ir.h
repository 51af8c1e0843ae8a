/*
 * onnx_ir.h - an ONNX model as `autotmc import` sees it: its values (the
 * tensors between nodes), who produces and who reads each, its nodes in
 * their topological order and its constants (initializers and Constant
 * nodes) as float32, all checked as onnx_read builds them
 * (compiler/import/onnx_read.c). compiler/import/onnx_net.c turns it into a
 * .net file and its weights.
 */
#ifndef AUTOTM_ONNX_IR_H
#define AUTOTM_ONNX_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "onnx.pb-c.h"

enum { IR_MAX_DIMS = 8 };

/* A constant: an initializer or a Constant node's value, as float32. */
typedef struct IrConst {
	int ndim;
	int64_t dims[IR_MAX_DIMS];
	int64_t n;   /* elements */
	float *data; /* n floats (integers converted exactly up to 2^24) */
} IrConst;

/* What a constant computed by folding (compiler/import/onnx_fold.c) is of another. */
typedef enum IrFrom {
	FROM_NONE,
	FROM_TRANSPOSE, /* the transpose of 2-D `from` (a Linear's weight as MatMul reads it) */
	FROM_ROWS,      /* the first rows of `from`, in order (a position embedding's rows 0..T-1) */
} IrFrom;

typedef struct IrValue {
	const char *name;
	const char *param; /* the initializer a constant stands for (its name, or an Identity's output's), or NULL */
	int producer; /* the node that writes it, or -1: the graph's input or a constant */
	int konst;    /* its constant, or -1 */
	IrFrom from_kind; /* a folded constant computed from the constant `from` so */
	int from;
	int *uses;    /* the nodes that read it, in order (a node reading it twice: twice) */
	int nuses;
} IrValue;

typedef struct IrNode {
	const Onnx__NodeProto *p; /* its op_type, name and attributes */
	int nin, nout;
	int *in, *out; /* values; -1 for an optional input left empty */
} IrNode;

typedef struct Ir {
	Onnx__ModelProto *model; /* the parsed file (protobuf_c_message_free_unpacked) */
	IrValue *v;
	int nv;
	IrNode *node;
	int nnode;
	IrConst *konst;
	int nkonst;
	int input;  /* the one graph input that is not a constant */
	bool input_ids; /* its elements are integers (token ids, for an embedding) */
	int output; /* the graph's one output */
	int in_ndim;
	int64_t in_dims[IR_MAX_DIMS]; /* -1 where symbolic (the batch) */
	int64_t opset;                /* the default domain's */
} Ir;

/* Read and check path; false with a message in err (naming the node and its inputs where one is at fault). */
bool onnx_read(const char *path, Ir *ir, Arena *a, char *err, size_t errlen);
void onnx_free(Ir *ir);

/* Attribute `name` of node n, or NULL. */
const Onnx__AttributeProto *ir_attr(const IrNode *n, const char *name);
/* Its integer, float or integers, or the default when absent. */
int64_t ir_attr_int(const IrNode *n, const char *name, int64_t dflt);
double ir_attr_float(const IrNode *n, const char *name, double dflt);
/* The integers of attribute name into out (at most max); returns how many, 0 when absent. */
int ir_attr_ints(const IrNode *n, const char *name, int64_t *out, int max);
/* (Again, after nodes' inputs changed) every value's readers, IrValue.uses. */
void ir_link_uses(Ir *ir, Arena *a);
/* A constant's element as an integer: f clamped to +-2^40 (NaN to 0), so that no conversion overflows. */
int64_t ir_int(float f);

/* The constant value v holds, or NULL. */
const IrConst *ir_const(const Ir *ir, int v);
/* The one node that reads value v, or -1 (none, several, or no value). */
int ir_reader(const Ir *ir, int v);

/*
 * Nodes whose inputs are all constants become constants (onnx_fold.c):
 * the shape arithmetic of views, Identity (PyTorch names a shared
 * initializer so), Transpose of a matrix, Slice, Equal, Not, Cast,
 * arithmetic, and Gather of rows (a position embedding's table at
 * positions 0..T-1).
 * Their values then have no producer; the nodes no outputs.
 */
void ir_fold(Ir *ir, Arena *a);

#endif
