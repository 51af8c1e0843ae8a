/*
 * link.h - turning the emitted object into an executable.
 */
#ifndef AUTOTM_LINK_H
#define AUTOTM_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include "optimizer.h"

/*
 * Link obj against the runtime library of target (GPU: the CUDA one) into the
 * executable out with the system C compiler ($CC, default cc). Returns
 * false with the reason in err.
 */
bool link_program(const char *obj, const char *out, TargetId target, char *err, size_t errlen);

/* The runtime library that programs of target link against, or NULL if none is found. */
const char *runtime_library(TargetId target);

#endif
