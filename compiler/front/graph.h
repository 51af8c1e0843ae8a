/*
 * graph.h - the graph IR: nodes (operations) and tensors.
 *
 * A Graph is built by the elaborator from the AST (the forward network and
 * its loss) and grown by later passes (autodiff adds the backward pass and
 * the update). Nodes are kept in a topological order: every node's inputs
 * are graph inputs (input, labels, weights) or outputs of earlier nodes.
 * Shapes are computed, and checked, when a node is built, by the op's
 * shape rule from ops.def. All memory comes from the graph's arena.
 */
#ifndef AUTOTM_GRAPH_H
#define AUTOTM_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "ops.h"
#include "optim.h"

enum { MAX_DIMS = 4 };
/*
 * The most distinct integer ids (an embedding's rows, the classes of class
 * labels): the runtime carries ids through float host buffers, exact up to 2^24.
 */
enum { MAX_IDS = 1 << 24 };

/*
 * The most bytes all tensors of a training step may take (1 EiB): sums of
 * tensor sizes (live bytes, pools, offsets) then never overflow 64 bits.
 * The elaborator refuses a model whose training step could need more.
 */
#define GRAPH_MAX_BYTES ((int64_t)1 << 60)

typedef enum DType {
	DT_F32, /* 32-bit IEEE float */
	DT_F64, /* 64-bit IEEE float (reference interpreter, gradient checks) */
	DT_I32, /* 32-bit signed integer: token and class ids */
	DT_BF16, /* bfloat16: float32's top 16 bits (--precision bf16's activations) */
} DType;

/*
 * The precision of a training step: fp32 throughout, or bf16 as PyTorch's
 * autocast runs it (autocast.c: which ops take bf16 inputs, which fp32).
 */
typedef enum Precision {
	PREC_FP32,
	PREC_BF16,
} Precision;

typedef enum TensorKind {
	TENSOR_INPUT,      /* the network's input */
	TENSOR_LABELS,     /* training labels (one-hot f32, or class ids i32) */
	TENSOR_WEIGHT,     /* a trainable parameter */
	TENSOR_ACTIVATION, /* produced by a forward node (including the loss) */
	TENSOR_GRADIENT,   /* produced by a backward node */
	TENSOR_WORKSPACE,  /* scratch memory of a kernel */
	TENSOR_STATE,      /* optimizer state (momentum) */
} TensorKind;

typedef struct Shape {
	int ndim;              /* number of dimensions, 1..MAX_DIMS */
	int64_t d[MAX_DIMS];   /* sizes, outermost first (row-major) */
} Shape;

/* Attributes of a node; each op reads the fields its row documents. */
typedef struct Attrs {
	int kh, kw;       /* window (conv, pooling) */
	int sh, sw;       /* stride */
	int ph, pw;       /* padding, each side */
	int groups;       /* conv groups */
	double eps;       /* batchnorm epsilon */
	double p;         /* dropout probability */
	int axis;         /* concat axis; bias_grad: the bias' dimension (0: 1) */
	uint32_t seed;    /* dropout: which random stream */
	Shape shape;      /* output shape of reshape, slice and the backward ops
	                     that cannot derive it (conv2d_bwd_data, ...) */
	int64_t offset;   /* slice: first index along axis */
	double momentum;  /* batchnorm_stats: the running statistics' momentum */
	OptimHyper upd;   /* sgd, sgd_momentum, adamw: the update rule */
	bool trans_a, trans_b; /* matmul: read a, b transposed */
	double alpha;     /* matmul: the product's factor; attention: the scores' */
	bool causal;      /* attention: position t attends to positions 0..t only */
	double lo, hi;    /* clamp: the range */
	DType dtype;      /* cast: the element type written */
	Act post_act;     /* conv2d, dense, batchnorm: an activation applied to the output (fuse.h); ACT_NONE: none */
} Attrs;

/* Which part of the training step a node belongs to. */
typedef enum Phase {
	PHASE_FORWARD,  /* the network and the loss */
	PHASE_BACKWARD, /* gradients */
	PHASE_UPDATE,   /* optimizer steps on the weights, batchnorm's running statistics */
} Phase;

typedef struct Node Node;
typedef struct Tensor Tensor;

struct Tensor {
	int id;              /* index in Graph.tensors */
	const char *name;    /* source-derived, e.g. stage3.bottleneck2.conv1.weight */
	Shape shape;         /* dimensions */
	DType dtype;         /* element type */
	int64_t bytes;       /* size in bytes */
	TensorKind kind;     /* role in the program */
	bool blocked;        /* stored channel-blocked (nChw16c) on the CPU: layout.c's choice, else plain */
	Node *producer;      /* node that writes it, NULL for graph inputs */
	VEC(Node *) users;   /* nodes that read it, in graph order */
	SrcLoc loc;          /* the layer or declaration it comes from */
};

struct Node {
	int id;              /* index in Graph.nodes */
	Op op;               /* operation */
	Attrs attr;          /* attributes */
	Phase phase;         /* forward, backward or update */
	Tensor **in;         /* inputs, in the order ops.def documents */
	int nin;             /* number of inputs */
	Tensor **out;        /* outputs */
	int nout;            /* number of outputs */
	const char *name;    /* source-derived name of the layer */
	SrcLoc loc;          /* the layer in the source */
};

typedef struct Optimizer {
	const char *name; /* "sgd" or "adamw" */
	OptimHyper h;     /* its hyperparameters, schedule and clipping */
} Optimizer;

typedef struct Graph {
	Arena *arena;          /* memory of everything in the graph */
	const char *model;     /* model name */
	VEC(Node *) nodes;     /* in topological order */
	VEC(Tensor *) tensors; /* in creation order */
	Tensor *input;         /* the network input */
	Tensor *labels;        /* the labels */
	Tensor *output;        /* the network's output (logits or probabilities) */
	Tensor *loss;          /* the scalar loss */
	Tensor *dinput;        /* gradient of the input, when autodiff was asked for it */
	int nforward;          /* nodes of the forward pass (the first ones) */
	int nforward_tensors;  /* tensors of the forward graph (the first ones) */
	bool training;         /* autodiff has added backward and update nodes */
	bool eval;             /* the forward-only evaluation graph (ElabOptions.eval) */
	Optimizer opt;         /* how weights are updated */
	Precision precision;   /* fp32, or bf16 where autocast put casts (autocast.c) */
	int nfused;            /* activations and activation gradients folded into other kernels (fuse.c) */
	int ncasts_folded;     /* autocast's casts folded into the kernels beside them (fuse.c: fuse_casts) */
} Graph;

/*
 * FLOPs of a node by its op's rule (flops.c; a multiply-add is 2 FLOPs),
 * INT64_MAX when the count does not fit.
 */
int64_t node_flops(const Node *n);

Graph *graph_new(Arena *a);

/* A tensor without a producer (input, labels, weight). NULL if too large. */
Tensor *graph_tensor(Graph *g, TensorKind kind, const char *name, Shape shape, SrcLoc loc);

/*
 * A node applying op to in[0..nin); its outputs are created with the kind
 * `kind`, the first named `name`, any others name.1, name.2, ... On a
 * shape error, or more inputs than a kernel takes (OP_MAX_ARGS), returns
 * NULL and describes it in err.
 */
Node *graph_node(Graph *g, Op op, Tensor **in, int nin, const Attrs *attr, TensorKind kind,
                 const char *name, SrcLoc loc, char *err, size_t errlen);

/* The output shapes of n by its op's shape rule (checking its inputs); false with a message in err. */
bool node_shapes(const Node *n, Shape *out, char *err, size_t errlen);

/* Whether n reads or writes t; whether it overwrites t (an input ops.def marks inplace). */
bool node_uses(const Node *n, const Tensor *t);
/* n's op as reports print it: its name, "+act" where an activation is fused onto it ("conv2d+relu"),
   "+sum" where it adds a tensor to its output ("batchnorm_bwd+relu+sum"). */
const char *node_op_label(const Node *n, char *buf, size_t size);
bool node_overwrites(const Node *n, const Tensor *t);
/* The input that n adds to its first output (batchnorm_bwd, layernorm_bwd, dropout, dense: base/ops.h's
   op_sum_input; fuse.h), or -1. */
int node_sum_input(const Node *n);

/* Rename a tensor (the old name is left to the arena). */
void tensor_rename(Graph *g, Tensor *t, const char *name);

/*
 * The tensors named like an earlier tensor, in order of id: returns how
 * many, each in dup[k] and the first tensor of its name in orig[k] (dup
 * and orig hold g->tensors.n entries). Passes keep names unique.
 */
int graph_name_clashes(const Graph *g, Tensor **dup, Tensor **orig);

/* Remove the last node added (it must have no users). */
void graph_pop_node(Graph *g);

/* Bytes of one element; whether the type holds real numbers (not ids). */
int dtype_size(DType dt);
bool dtype_is_float(DType dt);
const char *precision_name(Precision p);
/* Bytes of a shape's elements, or -1 on overflow. */
int64_t shape_bytes(Shape s, DType dt);
int64_t shape_elems(Shape s);
bool shape_eq(Shape a, Shape b);
Shape shape_make(int ndim, const int64_t *d);
/* "f32[8, 3, 224, 224]" */
const char *tensor_type_str(const Tensor *t, char *buf, size_t size);
const char *shape_str(Shape s, char *buf, size_t size);
const char *tensor_kind_name(TensorKind k);
/* Integer ids t: the ids its users accept are [0, this) (an embedding's rows, the loss's classes). */
int64_t tensor_id_range(const Tensor *t);
/*
 * A state tensor that belongs to the model rather than to the optimizer:
 * batchnorm's running statistics, saved and loaded with the weights.
 */
bool tensor_is_statistic(const Tensor *t);

/* A weight or optimizer state: its value lives across training steps. */
bool tensor_persists(const Tensor *t);
const char *dtype_name(DType dt);

/* Check the graph's invariants; on failure describe the first one broken. */
bool graph_verify(const Graph *g, char *err, size_t errlen);

#endif
