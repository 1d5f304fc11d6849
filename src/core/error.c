#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ctorch/base.h"
#include "core/error.h"
#include "core/prof.h"

static _Thread_local char message[2048];
static _Thread_local int pending;
static _Thread_local ct_error_kind kind;
static _Thread_local const char *site_file;
static _Thread_local int site_line;
static _Atomic(ct_error_handler) handler;

void ct__site(const char *file, int line) {
    site_file = file;
    site_line = line;
    if (__builtin_expect(ct_prof_on, 0)) ct_prof_boundary(); /* a user call starts (core/prof.h) */
}

void ct_current_site(const char **file, int *line) {
    *file = site_file;
    *line = site_line;
}

static _Thread_local bool handler_deferred;
static _Thread_local unsigned error_count;

/* Sets the message and calls the handler (unless deferred on this thread). */
static void verror(const char *fmt, va_list ap) {
    vsnprintf(message, sizeof message, fmt, ap);
    pending = 1;
    error_count++;
    ct_error_handler h = handler;
    if (h && !handler_deferred) h(message, site_file, site_line);
}

void ct_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kind = CT_ERR_OTHER;
    verror(fmt, ap);
    va_end(ap);
}

void ct_error_of_kind(ct_error_kind k, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kind = k;
    verror(fmt, ap);
    va_end(ap);
}

ct_error_kind ct_last_error_kind(void) { return pending ? kind : CT_ERR_OTHER; }

void (ct_set_error)(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kind = CT_ERR_OTHER;
    verror(fmt, ap);
    va_end(ap);
}

static _Thread_local bool result_failed;

void ct_error_fail_result(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kind = CT_ERR_OTHER;
    verror(fmt, ap);
    va_end(ap);
    result_failed = true;
}

bool ct_error_take_failed_result(void) {
    if (__builtin_expect(!result_failed, 1)) return false;
    result_failed = false;
    return true;
}

void ct_error_defer_handler(bool defer) { handler_deferred = defer; }
unsigned ct_error_count(void) { return error_count; }

void ct_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ctorch: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

const char *ct_last_error(void) { return pending ? message : NULL; }

void ct_clear_error(void) {
    pending = 0;
    result_failed = false;
    message[0] = 0;
}

ct_error_handler ct_set_error_handler(ct_error_handler h) { return atomic_exchange(&handler, h); }

void ct_abort_on_error(const char *msg, const char *file, int line) {
    if (file)
        fprintf(stderr, "%s:%d: error: %s\n", file, line, msg);
    else
        fprintf(stderr, "error: %s\n", msg);
    abort();
}

const char *ct_shape_str(int ndim, const int64_t *d, char buf[CT_SHAPE_STR_MAX]) {
    int n = snprintf(buf, CT_SHAPE_STR_MAX, "[");
    for (int i = 0; i < ndim && n < CT_SHAPE_STR_MAX; i++)
        n += snprintf(buf + n, CT_SHAPE_STR_MAX - n, i ? ", %lld" : "%lld", (long long)d[i]);
    if (n < CT_SHAPE_STR_MAX) snprintf(buf + n, CT_SHAPE_STR_MAX - n, "]");
    return buf;
}
