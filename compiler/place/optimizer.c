/*
 * optimizer.c - the tables of optimizer.h, from optimizers.def and
 * targets.def, and their lookups.
 */
#include "optimizer.h"

#include <stdio.h>
#include <string.h>

const TargetInfo target_info[NUM_TARGETS] = {
#define TARGET(id, nm, kf, dx, sum) [TARGET_##id] = {nm, kf, dx, sum},
#include "targets.def"
#undef TARGET
};

const OptimizerInfo optimizer_info[NUM_OPTIMIZERS] = {
#define OPTIMIZER(id, nm, kind, limit, targets, moves, flags, fallback, sum) \
	[OPT_##id] = {nm, kind, limit, targets, moves, flags, OPT_##fallback, sum},
#include "optimizers.def"
#undef OPTIMIZER
};

bool optimizer_has(OptimizerId o, unsigned flags)
{
	return (optimizer_info[o].flags & flags) == flags;
}

bool optimizer_find(const char *name, OptimizerId *out)
{
	for (int i = 0; i < NUM_OPTIMIZERS; i++)
		if (strcmp(name, optimizer_info[i].name) == 0) {
			*out = (OptimizerId)i;
			return true;
		}
	return false;
}

bool target_find(const char *name, TargetId *out)
{
	for (int i = 0; i < NUM_TARGETS; i++)
		if (strcmp(name, target_info[i].name) == 0) {
			*out = (TargetId)i;
			return true;
		}
	return false;
}

bool optimizer_allowed(OptimizerId o, TargetId t)
{
	return optimizer_info[o].targets >> t & 1;
}

/* The names of the optimizers allowed on a target of `targets` for which keep() holds (NULL: all). */
static const char *names(unsigned targets, bool (*keep)(OptimizerId o), char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < NUM_OPTIMIZERS; i++) {
		if (!(optimizer_info[i].targets & targets) || (keep && !keep((OptimizerId)i)))
			continue;
		int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", optimizer_info[i].name);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	return buf;
}

const char *optimizer_names(unsigned targets, char *buf, size_t size)
{
	return names(targets, NULL, buf, size);
}

const char *optimizer_names_if(bool (*keep)(OptimizerId o), char *buf, size_t size)
{
	return names(~0u, keep, buf, size);
}

OptimizerId optimizer_default(bool sized)
{
	return sized ? OPT_AUTO : OPT_ALL_FAST;
}
