/*
 * reasons.h - why a plan makes each move and recompute (reasons.c).
 */
#ifndef AUTOTM_REASONS_H
#define AUTOTM_REASONS_H

#include <stddef.h>
#include <stdint.h>

#include "costmodel.h"
#include "placement.h"

/* One reason in words for each of p's moves (move[i]) and recomputes (recompute[i]). */
typedef struct Reasons {
	const char **move;
	const char **recompute;
} Reasons;

/*
 * The reasons of p's decisions, from fast[step], the fast tier's bytes at
 * every step (as the pool holds them): a move to the slow tier, where the
 * fast tier is fullest while the tensor is out (full: beside it, over the
 * limit); a move to the fast tier, the kernel that reads it; an
 * asynchronous move, the kernels it hides behind; a recompute, its time
 * against moving the tensor out and back.
 */
Reasons *plan_reasons(const Placement *p, const CostModel *cm, const int64_t *fast, Arena *a);

/* name, or where longer than `most`, its start and its end around "...", into buf. */
const char *short_name(const char *name, size_t most, char *buf, size_t size);

#endif
