/*
 * optimizer.h - the placement optimizers and the targets as tables
 * (optimizers.def, targets.def): what each needs and allows. Everything
 * that depends on which optimizer or target was chosen asks these
 * tables; no other code compares their names.
 */
#ifndef AUTOTM_OPTIMIZER_H
#define AUTOTM_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum TargetId {
#define TARGET(id, name, kernels_fast, duplex, summary) TARGET_##id,
#include "targets.def"
#undef TARGET
	NUM_TARGETS
} TargetId;

#define TARGET_BIT(id) (1u << TARGET_##id)

typedef struct TargetInfo {
	const char *name;   /* --backend NAME */
	bool kernels_fast;  /* kernels read and write the fast tier only */
	bool duplex;        /* a copy engine per direction */
	const char *summary;
} TargetInfo;
extern const TargetInfo target_info[NUM_TARGETS];

typedef enum OptimizerKind { OPTIMIZER_ILP, OPTIMIZER_BASELINE } OptimizerKind;
typedef enum LimitRule { LIMIT_NEEDED, LIMIT_NONE, LIMIT_OPTIONAL } LimitRule;

typedef enum OptimizerId {
#define OPTIMIZER(id, name, kind, limit, targets, summary) OPT_##id,
#include "optimizers.def"
#undef OPTIMIZER
	NUM_OPTIMIZERS
} OptimizerId;

typedef struct OptimizerInfo {
	const char *name;   /* --optimizer NAME */
	OptimizerKind kind; /* ILP or baseline */
	LimitRule limit;    /* whether it needs the fast tier's size */
	unsigned targets;   /* TARGET_BIT mask of the targets it runs on */
	const char *summary;
} OptimizerInfo;
extern const OptimizerInfo optimizer_info[NUM_OPTIMIZERS];

/* The optimizer / target of that name; false if there is none. */
bool optimizer_find(const char *name, OptimizerId *out);
bool target_find(const char *name, TargetId *out);

/* Whether optimizer o runs on target t. */
bool optimizer_allowed(OptimizerId o, TargetId t);

/* "static, sync, async, ..." of the optimizers allowed on the targets in mask, into buf. */
const char *optimizer_names(unsigned targets, char *buf, size_t size);

#endif
