/* Warnings (core/warn.h): one handler for the process, stderr by default. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "ctorch/base.h"
#include "core/warn.h"

static void print_warning(const char *message) { fprintf(stderr, "ctorch: warning: %s\n", message); }

static _Atomic(ct_warning_handler) handler = print_warning;
static _Thread_local unsigned long value_reads;

ct_warning_handler ct_set_warning_handler(ct_warning_handler h) {
    return atomic_exchange(&handler, h ? h : print_warning);
}

void ct_warn(const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    ct_warning_handler h = handler;
    h(message);
}

void ct_note_value_read(void) { value_reads++; }
unsigned long ct_value_reads(void) { return value_reads; }
