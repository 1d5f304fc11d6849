/* Error reporting inside the library.
 *
 * ct_error() is for user errors: it sets the thread-local message (naming the op,
 * what it got and what it expected) and calls the installed handler; the caller then
 * returns NULL or -1.  CT_ASSERT() is for internal invariants: a failure is a bug in
 * ctorch, never the user's input. */
#ifndef CT_CORE_ERROR_H
#define CT_CORE_ERROR_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

void ct_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The kinds of user error that callers act on by kind rather than by wording (the test
 * harness counts a sample that cannot run on the meta device instead of failing it). */
typedef enum {
    CT_ERR_OTHER,
    CT_ERR_DEVICE_MISMATCH, /* tensors of one call on different devices */
    CT_ERR_NO_VALUES,       /* a tensor's values needed, and it has none (meta: ops/host.h) */
} ct_error_kind;
/* ct_error, marking the error as of kind k. */
void ct_error_of_kind(ct_error_kind k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The kind of the pending error (CT_ERR_OTHER when none is pending, or for ct_error's). */
ct_error_kind ct_last_error_kind(void);
/* For an allocation failure the code between it and the op's result does not check (a
 * kernel's working memory, a graph node): sets the error now, and the next result
 * registered on this thread (ct_scope_register) is released and replaced by NULL, so
 * the op in progress returns NULL.  ct_clear_error() drops a pending one. */
void ct_error_fail_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether a result is to fail (clearing the mark): for ct_scope_register. */
bool ct_error_take_failed_result(void);
/* Only for broken invariants (CT_ASSERT) and start-up failures the library cannot run
 * without; an allocation failure is an error like any other (ct_error). */
_Noreturn void ct_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* On this thread, errors set the message without calling the handler (loader
 * workers: their errors reach the handler when ct_loader_next re-reports them on the
 * consumer's thread). */
void ct_error_defer_handler(bool defer);
/* Errors reported on this thread so far: a change across a user callback means the
 * callback reported one (ct_set_error). */
unsigned ct_error_count(void);
/* The call site recorded by the public macros for the current thread. */
void ct_current_site(const char **file, int *line);

/* Formats a shape as "[2, 3]" into buf. */
#define CT_SHAPE_STR_MAX 256
const char *ct_shape_str(int ndim, const int64_t *d, char buf[CT_SHAPE_STR_MAX]);

#define CT_ASSERT(cond)                                                                  \
    do {                                                                                 \
        if (!(cond)) ct_fatal("internal error at %s:%d: %s", __FILE__, __LINE__, #cond); \
    } while (0)

#endif
