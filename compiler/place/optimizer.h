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
/* The moves a placement makes, in order of what they allow (optimizers.def). */
typedef enum MoveKind { MOVES_NONE, MOVES_SYNC, MOVES_ASYNC, MOVES_SPANNING } MoveKind;

/* An optimizer's flags (optimizers.def's flags column). */
enum {
	OFLAG_RECOMPUTES = 1 << 0,
	OFLAG_STATIC_TIERS = 1 << 1,
	OFLAG_OFFLOADS = 1 << 2,
	OFLAG_MAY_OFFLOAD = 1 << 3,
	OFLAG_SEGMENTS = 1 << 4,
	OFLAG_STARTS = 1 << 5,
	OFLAG_PORTFOLIO = 1 << 6,
	OFLAG_FAST_ONLY = 1 << 7,
	OFLAG_MANAGED = 1 << 8,
};

typedef enum OptimizerId {
#define OPTIMIZER(id, name, kind, limit, targets, moves, flags, fallback, summary) OPT_##id,
#include "optimizers.def"
#undef OPTIMIZER
	NUM_OPTIMIZERS
} OptimizerId;
#define OPT_NONE NUM_OPTIMIZERS /* optimizers.def's fallback: none */

typedef struct OptimizerInfo {
	const char *name;     /* --optimizer NAME */
	OptimizerKind kind;   /* ILP or baseline */
	LimitRule limit;      /* whether it needs the fast tier's size */
	unsigned targets;     /* TARGET_BIT mask of the targets it runs on */
	MoveKind moves;       /* the moves it makes */
	unsigned flags;       /* OFLAG_RECOMPUTES, ... */
	OptimizerId fallback; /* whose placement it returns where it finds none (OPT_NONE) */
	const char *summary;
} OptimizerInfo;
extern const OptimizerInfo optimizer_info[NUM_OPTIMIZERS];

/* Whether optimizer o has every flag of `flags`. */
bool optimizer_has(OptimizerId o, unsigned flags);

/* The optimizer / target of that name; false if there is none. */
bool optimizer_find(const char *name, OptimizerId *out);
bool target_find(const char *name, TargetId *out);

/* Whether optimizer o runs on target t. */
bool optimizer_allowed(OptimizerId o, TargetId t);

/* "static, sync, async, ..." of the optimizers allowed on the targets in mask, into buf. */
const char *optimizer_names(unsigned targets, char *buf, size_t size);
/* The same of the optimizers for which keep() holds ("auto" for those that offload), into buf. */
const char *optimizer_names_if(bool (*keep)(OptimizerId o), char *buf, size_t size);

/* The optimizer used when none is given: with a fast-tier size (sized), or without one. */
OptimizerId optimizer_default(bool sized);

#endif
