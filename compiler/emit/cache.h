/*
 * cache.h - the program cache: executables built by `autotmc run` and
 * `sweep`, under $XDG_CACHE_HOME/autotm/programs (or ~/.cache/...), named
 * by the model and a hash of the program's LLVM module and of the runtime
 * library it links, so that an unchanged program is linked once.
 *
 * Each program is installed atomically and durably (written beside its
 * place, synced, renamed) with a checksum file (PROGRAM.sum) recorded at
 * build time; a cached program is used only while its bytes match the
 * checksum, else it is built again: a truncated or damaged file is never
 * run.
 */
#ifndef AUTOTM_CACHE_H
#define AUTOTM_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"

/*
 * The cache's path of the program of `model` whose module text is ir,
 * linked with the runtime library at `runtime` (its bytes are part of the
 * key: a rebuilt runtime makes new programs); NULL after an error message.
 * The name holds the model's first CACHE_NAME_CHARS characters, so that it
 * fits any file system whatever the model is called. Temporary files that
 * killed builds left in the cache are removed on the way (tempfiles.h).
 */
enum { CACHE_NAME_CHARS = 64 };
const char *cache_program_path(Arena *a, const char *model, const char *ir, const char *runtime);

/*
 * Before any work: that the cache exists (made if missing) and takes the
 * longest name a build writes there; false with the reason in err.
 */
bool cache_check(Arena *a, char *err, size_t errlen);

/* Whether path holds a program whose bytes match the checksum recorded when it was installed. */
bool cache_valid(Arena *a, const char *path);

/* Install the linked program tmp as path, with its checksum; false with err (tmp is removed either way). */
bool cache_install(Arena *a, const char *tmp, const char *path, char *err, size_t errlen);

#endif
