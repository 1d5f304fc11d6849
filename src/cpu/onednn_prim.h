/* What the oneDNN kernels (cpu/onednn_matmul.c, cpu/onednn_conv.c) share: the engine,
 * the primitive cache (cpu/onednn_cache.c) and execution (cpu/onednn_runtime.c). */
#ifndef CT_CPU_ONEDNN_PRIM_H
#define CT_CPU_ONEDNN_PRIM_H

#include <dnnl.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu/onednn.h"

/* A primitive's identity: everything its descriptor was made from (shapes, strides,
 * dtype, scales), including the thread count it was made for. */
enum { CT_ONEDNN_KEY_LEN = 24 };
typedef struct {
    int64_t v[CT_ONEDNN_KEY_LEN];
} ct_onednn_key;

/* A cached primitive, or the cached knowledge that oneDNN has none (prim NULL). */
typedef struct ct_onednn_prim {
    ct_onednn_key key;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    int refs;         /* the cache's own and each user's (cpu/onednn_cache.c's lock) */
    uint64_t used;    /* the cache's clock at the last lookup */
} ct_onednn_prim;

/* The cpu engine (made once); NULL when oneDNN cannot make one. */
dnnl_engine_t ct_onednn_engine(void);
/* The thread count oneDNN runs the next primitive with: ct_get_num_threads(), or 1
 * inside a parallel region.  ct_onednn_threads_begin makes it OpenMP's for this
 * thread (oneDNN reads omp_get_max_threads() when it makes and runs a primitive) and
 * returns what to give ct_onednn_threads_end. */
int ct_onednn_threads(void);
int ct_onednn_threads_begin(int threads);
void ct_onednn_threads_end(int saved);

/* Makes a primitive descriptor for the cache: dnnl_unimplemented (or any failure)
 * means oneDNN has no kernel for it. */
typedef dnnl_status_t (*ct_onednn_make_pd)(const void *ctx, const_dnnl_primitive_attr_t attr,
                                          dnnl_primitive_desc_t *pd);
/* The primitive of key, made by make(ctx, attr) on a miss (attr: user scratchpad mode,
 * plus what *attr_of(ctx) sets, may be NULL): NULL when oneDNN has none, or when
 * making it failed for want of memory (then the error is set and *failed true).  Give
 * it back with ct_onednn_release. */
ct_onednn_prim *ct_onednn_lookup(const ct_onednn_key *key, ct_onednn_make_pd make,
                                 dnnl_status_t (*attr_of)(const void *ctx, dnnl_primitive_attr_t attr),
                                 const void *ctx, const char *op, bool *failed);
void ct_onednn_release(ct_onednn_prim *p);

/* The calling thread's working buffers, kept between runs (at least `bytes`; NULL when
 * there is no memory): oneDNN's scratchpads, and operands in the layouts a primitive
 * chose (cpu/onednn_conv.c).  ct_onednn_buffers_trim releases those over 64 MiB. */
enum { CT_ONEDNN_SCRATCHPAD, CT_ONEDNN_STAGING, CT_ONEDNN_BUFFERS };
void *ct_onednn_buffer(int which, size_t bytes);
void ct_onednn_buffers_trim(void);

/* One argument of an execution: oneDNN's argument id and the buffer (in the layout
 * the primitive descriptor says). */
typedef struct {
    int arg;
    void *ptr;
} ct_onednn_arg;
/* Runs p on the calling thread's team with a scratchpad from ct_malloc; false when it
 * failed, having marked the op's result failed ("op: oneDNN ...") when report (a
 * parallel region's threads leave that to the thread that started it). */
bool ct_onednn_run(const ct_onednn_prim *p, const ct_onednn_arg *args, int nargs, const char *op,
                   bool report);

#endif
