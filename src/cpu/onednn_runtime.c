/* oneDNN's engine, thread count, switch and execution (cpu/onednn_prim.h). */
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl_debug.h>

#include "core/error.h"
#include "core/mem.h"
#include "cpu/onednn_prim.h"
#include "ctorch/base.h"

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static atomic_llong executed;

static void engine_make(void) {
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

dnnl_engine_t ct_onednn_engine(void) {
    pthread_once(&engine_once, engine_make);
    return engine;
}

bool ct_onednn_enabled(void) {
    static atomic_int state; /* 0: not read yet, 1 on, 2 off */
    int s = atomic_load_explicit(&state, memory_order_relaxed);
    if (!s) {
        const char *e = getenv("CT_ONEDNN");
        s = e && strcmp(e, "0") == 0 ? 2 : 1;
        atomic_store_explicit(&state, s, memory_order_relaxed);
    }
    return s == 1;
}

const char *ct_onednn_isa(void) {
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "all";
    }
}

int64_t ct_onednn_executed(void) { return atomic_load(&executed); }

int ct_onednn_threads(void) { return omp_in_parallel() ? 1 : ct_get_num_threads(); }

int ct_onednn_threads_begin(int threads) {
    int saved = omp_get_max_threads();
    if (saved != threads) omp_set_num_threads(threads);
    return saved;
}

void ct_onednn_threads_end(int saved) {
    if (omp_get_max_threads() != saved) omp_set_num_threads(saved);
}

/* The calling thread's buffers, kept between runs: a fresh one for a large product
 * (brgemm packs its operands in its scratchpad, megabytes for 1024^3) costs its page
 * faults on every call, several times the product itself.  They only grow, and one
 * is released when a run needed more than KEEP. */
enum { KEEP = 64 << 20 };
static _Thread_local void *buf[CT_ONEDNN_BUFFERS];
static _Thread_local size_t buf_size[CT_ONEDNN_BUFFERS];

/* A thread's buffers are freed when it exits (OpenMP's workers come and go with the
 * team size): the key's destructor runs on the exiting thread, its TLS still live. */
static pthread_key_t buf_key;
static pthread_once_t buf_key_once = PTHREAD_ONCE_INIT;
static _Thread_local bool buf_key_set;

static void free_buffers(void *unused) {
    (void)unused;
    for (int i = 0; i < CT_ONEDNN_BUFFERS; i++) {
        free(buf[i]);
        buf[i] = NULL;
        buf_size[i] = 0;
    }
}

static void make_buf_key(void) { (void)pthread_key_create(&buf_key, free_buffers); }

void *ct_onednn_buffer(int which, size_t bytes) {
    if (bytes <= buf_size[which]) return buf[which];
    if (!buf_key_set) {
        pthread_once(&buf_key_once, make_buf_key);
        buf_key_set = pthread_setspecific(buf_key, &buf_key_set) == 0;
    }
    free(buf[which]);
    buf[which] = ct_malloc(bytes);
    buf_size[which] = buf[which] ? bytes : 0;
    return buf[which];
}

void ct_onednn_buffers_trim(void) {
    for (int i = 0; i < CT_ONEDNN_BUFFERS; i++)
        if (buf_size[i] > KEEP) {
            free(buf[i]);
            buf[i] = NULL;
            buf_size[i] = 0;
        }
}

bool ct_onednn_run(const ct_onednn_prim *p, const ct_onednn_arg *args, int nargs, const char *op,
                   bool report) {
    enum { MAX_ARGS = 8 };
    dnnl_exec_arg_t exec[MAX_ARGS + 1];
    int made = 0;
    dnnl_status_t st = dnnl_success;
    dnnl_stream_t stream = NULL;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    void *scratch = sbytes ? ct_onednn_buffer(CT_ONEDNN_SCRATCHPAD, sbytes) : NULL;
    if (sbytes && !scratch) {
        if (report) ct_error_fail_result("out of memory in %s (oneDNN's scratchpad of %zu bytes)", op, sbytes);
        return false;
    }
    for (int i = 0; st == dnnl_success && i < nargs + (sbytes ? 1 : 0) && i <= MAX_ARGS; i++) {
        int arg = i < nargs ? args[i].arg : DNNL_ARG_SCRATCHPAD;
        const dnnl_memory_desc_t *md = i < nargs ? dnnl_primitive_desc_query_md(p->pd, dnnl_query_exec_arg_md, arg) : smd;
        exec[i].arg = arg;
        st = dnnl_memory_create(&exec[i].memory, md, ct_onednn_engine(), i < nargs ? args[i].ptr : scratch);
        if (st == dnnl_success) made++;
    }
    if (st == dnnl_success) st = dnnl_stream_create(&stream, ct_onednn_engine(), dnnl_stream_default_flags);
    if (st == dnnl_success) st = dnnl_primitive_execute(p->prim, stream, made, exec);
    if (st == dnnl_success) st = dnnl_stream_wait(stream);
    if (stream) dnnl_stream_destroy(stream);
    for (int i = 0; i < made; i++) dnnl_memory_destroy(exec[i].memory);
    if (st != dnnl_success) {
        if (report) ct_error_fail_result("%s: oneDNN failed to run the primitive: %s", op, dnnl_status2str(st));
        return false;
    }
    atomic_fetch_add(&executed, 1);
    return true;
}
