/*
 * emit_llvm.h - code generation: the training program as LLVM IR.
 */
#ifndef AUTOTM_EMIT_LLVM_H
#define AUTOTM_EMIT_LLVM_H

#include <stdbool.h>

#include "graph.h"
#include "place.h"
#include "schedule.h"

typedef struct EmitOptions {
	const char *obj_path;     /* the object file to write */
	const char *ll_path;      /* also write the module as text here, or NULL */
	double predicted_seconds; /* predicted step time, 0 if none */
	const char *record;       /* compile-time fields of the results record (JSON object) */
	char **ir_text;           /* if set, receives the module as text (free() it) */
	int64_t program_flags;    /* RtProgram.flags (RT_PROGRAM_*) */
} EmitOptions;

/*
 * Emit, verify and compile the program (memplan must have run on p); with
 * obj_path NULL only build the module (for ir_text).
 * Returns false with a message in err if a file cannot be written.
 */
bool emit_program(const Graph *g, const Schedule *s, const Placement *p, const EmitOptions *o, Arena *a,
                  char *err, size_t errlen);

/* Number of distinct kernels of the step (nodes with equal descriptions share one). */
int emit_count_kernels(const Graph *g, const Schedule *s, Arena *a);

#endif
