/* A bump allocator: a parsed artifact owns one arena, freed at once. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct pk_arena_block {
    pk_arena_block *next;
    size_t used, cap;
    /* data follows, 16-aligned */
};

#define PK_ARENA_HDR ((sizeof(pk_arena_block) + 15u) & ~(size_t)15u)
#define PK_ARENA_CHUNK ((size_t)64 * 1024)

void *pk_arena_alloc(pk_arena *a, size_t size) {
    pk_arena_block *b = a->head;
    size_t need;
    if (size > SIZE_MAX - 15u - PK_ARENA_HDR) return NULL;
    need = (size + 15u) & ~(size_t)15u;
    if (need == 0) need = 16;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > PK_ARENA_CHUNK ? need : PK_ARENA_CHUNK;
        b = (pk_arena_block *)malloc(PK_ARENA_HDR + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        if (need > PK_ARENA_CHUNK && a->head) {  /* keep the current chunk open */
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    {
        unsigned char *p = (unsigned char *)b + PK_ARENA_HDR + b->used;
        b->used += need;
        memset(p, 0, need);
        return p;
    }
}

void *pk_arena_array(pk_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return pk_arena_alloc(a, n * size);
}

void pk_arena_free(pk_arena *a) {
    pk_arena_block *b = a->head;
    while (b) {
        pk_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}
