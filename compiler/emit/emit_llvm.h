/*
 * emit_llvm.h - code generation: the training program as LLVM IR.
 */
#ifndef AUTOTM_EMIT_LLVM_H
#define AUTOTM_EMIT_LLVM_H

#include <stdbool.h>

#include "graph.h"
#include "placement.h"
#include "schedule.h"

/* The evaluation pass (RT_PROGRAM_EVAL_PASS, RT_PROGRAM_EVAL_ONLY): its graph, placed and planned. */
typedef struct EmitEval {
	const Graph *g;           /* the evaluation graph (ElabOptions.eval); NULL: none */
	const Schedule *s;        /* its order */
	const Placement *p;       /* its placement, memplan done */
	double predicted_seconds; /* predicted time of a batch, 0 if none */
} EmitEval;

typedef struct EmitOptions {
	double predicted_seconds; /* predicted step time, 0 if none */
	const char *record;       /* compile-time fields of the results record (JSON object) */
	int64_t program_flags;    /* RtProgram.flags (RT_PROGRAM_*) */
	EmitEval eval;            /* with RT_PROGRAM_EVAL_PASS: the pass; with RT_PROGRAM_EVAL_ONLY: the program
	                             (the same graph, schedule and placement as emit_module's) */
} EmitOptions;

/* An emitted program: its LLVM module, for the host's generic CPU. */
typedef struct Module Module;

/* Emit and verify the program of placement p (memplan must have run on it). */
Module *emit_module(const Graph *g, const Schedule *s, const Placement *p, const EmitOptions *o, Arena *a);
/* The module as text (free() it): what the program cache is keyed by. */
char *module_text(const Module *m);
/* Write the module as text (--emit-llvm) / compile it to an object; false with err. */
bool module_write_ll(const Module *m, const char *path, char *err, size_t errlen);
bool module_write_object(const Module *m, const char *path, char *err, size_t errlen);
void module_free(Module *m);

/* Number of distinct kernels of the step (nodes with equal descriptions share one). */
int emit_count_kernels(const Graph *g, const Schedule *s, Arena *a);

#endif
