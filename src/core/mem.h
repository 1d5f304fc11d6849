/* Every allocation ctorch makes goes through these (tensor storage, objects, pools,
 * graph nodes, strings, vectors), so that one switch can make any of them fail
 * (ctorch/memory.h: ct_test_fail_alloc_after, CT_FAIL_ALLOC_AFTER).  They behave as
 * the C library's functions of the same names; memory is released with free(). */
#ifndef CT_CORE_MEM_H
#define CT_CORE_MEM_H

#include <stddef.h>

void *ct_malloc(size_t size);
void *ct_calloc(size_t count, size_t size);
void *ct_realloc(void *p, size_t size);
char *ct_strdup(const char *s);
char *ct_strndup(const char *s, size_t n);
void *ct_aligned_alloc(size_t alignment, size_t size);

#endif
