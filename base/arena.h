/*
 * arena.h - bump allocation for the AST and the graph.
 *
 * Everything the front end and the passes build lives until the compiler
 * exits, so nothing is freed one by one: an Arena hands out memory from
 * large chunks and arena_free() releases them all at once.
 */
#ifndef AUTOTM_ARENA_H
#define AUTOTM_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ArenaChunk ArenaChunk;

typedef struct Arena {
	ArenaChunk *chunk; /* current chunk; older ones are linked behind it */
	size_t used;       /* bytes used in the current chunk */
	size_t total;      /* bytes handed out over the arena's life */
} Arena;

void *arena_alloc(Arena *a, size_t n);            /* zeroed, 16-byte aligned */
void *arena_array(Arena *a, size_t n, size_t size); /* overflow-checked */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
void arena_free(Arena *a);

/*
 * Growable arrays whose storage comes from an arena: `VEC(Node *) nodes;`
 * then `vec_push(arena, &nodes, n)`. Growing copies into a fresh block; the
 * old one is simply abandoned to the arena.
 */
#define VEC(T) struct { T *v; int n, cap; }
#define vec_push(a, vec, x)                                                        \
	do {                                                                       \
		if ((vec)->n == (vec)->cap)                                        \
			(vec)->v = arena_grow((a), (vec)->v, &(vec)->cap, sizeof *(vec)->v, (vec)->n); \
		(vec)->v[(vec)->n++] = (x);                                        \
	} while (0)

void *arena_grow(Arena *a, void *old, int *cap, size_t elsize, int n);

#endif
