/*
 * link.h - turning the emitted object into an executable.
 */
#ifndef AUTOTM_LINK_H
#define AUTOTM_LINK_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Link obj against the runtime library (gpu: the CUDA one) into the
 * executable out with the system C compiler ($CC, default cc). Returns
 * false with the reason in err.
 */
bool link_program(const char *obj, const char *out, bool gpu, char *err, size_t errlen);

/* The runtime library that programs link against (gpu: the CUDA one), or NULL if none is found. */
const char *runtime_library(bool gpu);

#endif
