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

typedef struct IrValue {
	const char *name;
	int producer; /* the node that writes it, or -1: the graph's input or a constant */
	int konst;    /* its constant, or -1 */
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
/* The constant value v holds, or NULL. */
const IrConst *ir_const(const Ir *ir, int v);

#endif
