/*
 * elaborate.h - from a .net file to the forward graph and its loss.
 */
#ifndef AUTOTM_ELABORATE_H
#define AUTOTM_ELABORATE_H

#include "graph.h"

/* A -D name=value override of a model parameter. */
typedef struct Define {
	const char *name;  /* parameter */
	const char *value; /* its value as written */
} Define;

typedef struct ElabOptions {
	const char *const *dirs; /* import search path after the importing file's directory */
	int ndirs;               /* entries in dirs */
	const Define *defines;   /* -D overrides */
	int ndefines;            /* entries in defines */
	const char *main_text;   /* if set, the main file's contents (path names it) */
	size_t main_len;         /* bytes in main_text */
	bool eval;               /* the evaluation graph: batchnorm normalises by its running
	                            statistics (batchnorm_eval), dropout is the identity */
	Precision precision;     /* fp32, or bf16 with autocast's casts (autocast.c) */
	bool fused_attention;    /* attention without dropout as one fused op (else composed of
	                            products and a softmax) */
} ElabOptions;

/*
 * Load `path` and its imports, evaluate the model with its parameters and
 * build the graph: the network applied to the input, the loss, and the
 * optimizer settings. On a user error prints the diagnostic and returns
 * NULL. Everything is allocated in `arena`.
 */
Graph *elaborate(const char *path, const ElabOptions *opt, Arena *arena);

#endif
