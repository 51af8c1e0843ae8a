/*
 * arena.c - chunked bump allocator (see arena.h).
 */
#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum { CHUNK_SIZE = 1 << 20, ALIGN = 16 };

struct ArenaChunk {
	ArenaChunk *prev; /* the chunk filled before this one */
	size_t size;      /* usable bytes in data[] */
	_Alignas(16) unsigned char data[];
};

void *arena_alloc(Arena *a, size_t n)
{
	n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (!a->chunk || a->used + n > a->chunk->size) {
		size_t size = n > CHUNK_SIZE ? n : CHUNK_SIZE;
		ArenaChunk *c = xmalloc(sizeof(ArenaChunk) + size);
		c->prev = a->chunk;
		c->size = size;
		a->chunk = c;
		a->used = 0;
	}
	void *p = a->chunk->data + a->used;
	a->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

void *arena_array(Arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size / 2)
		fatal_sys("out of memory: array of %zu x %zu bytes", n, size);
	return arena_alloc(a, n * size);
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	char probe[1];
	/* GCC 12 misreports a "null format string" here at -O1 and above (clang has no such warning). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
	int n = vsnprintf(probe, sizeof probe, fmt, ap2);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	va_end(ap2);
	if (n < 0)
		ICE("bad format string '%s'", fmt);
	char *p = arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = arena_vprintf(a, fmt, ap);
	va_end(ap);
	return p;
}

void arena_free(Arena *a)
{
	ArenaChunk *c = a->chunk;
	while (c) {
		ArenaChunk *prev = c->prev;
		free(c);
		c = prev;
	}
	a->chunk = NULL;
	a->used = 0;
	a->total = 0;
}

void *arena_grow(Arena *a, void *old, int *cap, size_t elsize, int n)
{
	if (*cap > (1 << 29))
		fatal_sys("out of memory: array of more than %d elements", *cap);
	int ncap = *cap ? *cap * 2 : 8;
	void *v = arena_array(a, (size_t)ncap, elsize);
	if (n)
		memcpy(v, old, (size_t)n * elsize);
	*cap = ncap;
	return v;
}
