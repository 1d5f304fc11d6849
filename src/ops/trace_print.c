/* The record hook's printer (ctorch/ops.h): one line per op call, tensors named by
 * first appearance, as torch.fx's print_tabular. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "ops/trace.h"
#include "core/mem.h"

struct ct_trace_printer {
    FILE *f;
    /* tensor -> name, open addressing; the printer holds a reference to each key */
    ct_tensor **keys;
    int64_t *ids;
    int64_t cap, count;
};

/* Shortest %g form that reads back as x, with a ".0" on integers as Python writes floats. */
static int format_double(double x, bool as_float, char *buf, size_t size) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, x);
        if (strtod(tmp, NULL) == x) break;
    }
    /* %g writes 10 as 1e+01 at one digit; Python keeps positional form below 1e16. */
    const char *e = strchr(tmp, 'e');
    if (e && atoi(e + 1) >= 0 && atoi(e + 1) < 16) snprintf(tmp, sizeof tmp, "%.0f", x);
    bool plain = !strpbrk(tmp, ".eEn"); /* n: nan, inf */
    if (strstr(tmp, "inf")) return snprintf(buf, size, "%s", x > 0 ? "inf" : "-inf");
    return snprintf(buf, size, "%s%s", tmp, as_float && plain ? ".0" : "");
}

int ct_value_format(const ct_value *v, char *buf, size_t size) {
    if (!v || !buf) {
        ct_error("ct_value_format: %s is NULL", v ? "buf" : "v");
        return -1;
    }
    if (v->none) return snprintf(buf, size, "None");
    char dev[16];
    switch (v->kind) {
    case CT_ARG_INT: return snprintf(buf, size, "%" PRId64, v->i);
    case CT_ARG_FLOAT: return format_double(v->f, true, buf, size);
    case CT_ARG_SCALAR: return format_double(v->f, false, buf, size);
    case CT_ARG_BOOL: return snprintf(buf, size, "%s", v->b ? "True" : "False");
    case CT_ARG_DTYPE: return snprintf(buf, size, "torch.%s", ct_dtype_name(v->dtype));
    case CT_ARG_STR: return snprintf(buf, size, "'%s'", v->s);
    case CT_ARG_DEVICE: return snprintf(buf, size, "'%s'", ct_device_str(v->device, dev));
    case CT_ARG_INT_LIST:
    case CT_ARG_FLOAT_LIST:
    case CT_ARG_BOOL_LIST: {
        int n = v->kind == CT_ARG_INT_LIST ? v->ints.n
                : v->kind == CT_ARG_FLOAT_LIST ? v->floats.n : v->bools.n;
        size_t len = 0;
        int total = snprintf(buf, size, "[");
        for (int i = 0; i < n; i++) {
            char item[48];
            if (v->kind == CT_ARG_INT_LIST) snprintf(item, sizeof item, "%" PRId64, v->ints.v[i]);
            else if (v->kind == CT_ARG_BOOL_LIST)
                snprintf(item, sizeof item, "%s", v->bools.v[i] ? "True" : "False");
            else format_double(v->floats.v[i], true, item, sizeof item);
            len = (size_t)total < size ? (size_t)total : size;
            total += snprintf(buf + len, size - len, "%s%s", i ? ", " : "", item);
        }
        len = (size_t)total < size ? (size_t)total : size;
        return total + snprintf(buf + len, size - len, "]");
    }
    default: return snprintf(buf, size, "<%s>", "generator");
    }
}

/* A hash table of twice the slots; false when out of memory (the old one kept). */
static bool grow(ct_trace_printer *p) {
    int64_t cap = p->cap ? p->cap * 2 : 64;
    ct_tensor **keys = ct_calloc((size_t)cap, sizeof *keys);
    int64_t *ids = keys ? ct_calloc((size_t)cap, sizeof *ids) : NULL;
    if (!ids) {
        free(keys);
        return false;
    }
    for (int64_t i = 0; i < p->cap; i++) {
        if (!p->keys[i]) continue;
        uint64_t h = ((uintptr_t)p->keys[i] >> 4) % (uint64_t)cap;
        while (keys[h]) h = (h + 1) % (uint64_t)cap;
        keys[h] = p->keys[i];
        ids[h] = p->ids[i];
    }
    free(p->keys);
    free(p->ids);
    p->keys = keys;
    p->ids = ids;
    p->cap = cap;
    return true;
}

/* The name of t, given a new one (and printed as an input line) when first met; -1
 * with an error when out of memory with the table full. */
static int64_t name_of(ct_trace_printer *p, ct_tensor *t, bool is_output) {
    /* kept at most half full; when it cannot grow, it goes on while a slot is free */
    if (p->count * 2 >= p->cap && !grow(p) && p->count + 1 >= p->cap) {
        ct_error("ct_trace_print: out of memory");
        return -1;
    }
    uint64_t h = ((uintptr_t)t >> 4) % (uint64_t)p->cap;
    while (p->keys[h] && p->keys[h] != t) h = (h + 1) % (uint64_t)p->cap;
    if (p->keys[h]) return p->ids[h];
    p->keys[h] = ct_retain(t);
    p->ids[h] = p->count++;
    if (!is_output) {
        char shape[CT_SHAPE_STR_MAX];
        fprintf(p->f, "%%%" PRId64 ": %s%s = input\n", p->ids[h], ct_dtype_name(t->dtype),
                ct_shape_str(t->ndim, t->sizes, shape));
    }
    return p->ids[h];
}

static void print_call(const ct_op_call *c, void *ctx) {
    ct_trace_printer *p = ctx;
    int64_t in_ids[64];
    for (int i = 0; i < c->n_inputs && i < 64; i++)
        in_ids[i] = c->inputs[i] ? name_of(p, c->inputs[i], false) : -1;
    for (int i = 0; i < c->n_outputs; i++) {
        char shape[CT_SHAPE_STR_MAX];
        ct_tensor *t = c->outputs[i];
        if (!t) {
            fprintf(p->f, "%sNone", i ? ", " : "");
            continue;
        }
        fprintf(p->f, "%s%%%" PRId64 ": %s%s", i ? ", " : "", name_of(p, t, true),
                ct_dtype_name(t->dtype), ct_shape_str(t->ndim, t->sizes, shape));
    }
    fprintf(p->f, "%s%s(", c->n_outputs ? " = " : "", c->schema->name);
    for (int i = 0; i < c->n_inputs; i++) {
        if (i >= 64) {
            fprintf(p->f, ", ...");
            break;
        }
        if (in_ids[i] < 0) fprintf(p->f, "%sNone", i ? ", " : "");
        else fprintf(p->f, "%s%%%" PRId64, i ? ", " : "", in_ids[i]);
    }
    for (int i = 0; i < c->schema->n_attrs; i++) {
        char v[256];
        ct_value_format(&c->attrs[i], v, sizeof v);
        fprintf(p->f, "%s%s=%s", i || c->n_inputs ? ", " : "", c->schema->attrs[i].name, v);
    }
    fprintf(p->f, ")%s\n", c->in_backward ? "  # backward" : "");
}

ct_trace_printer *ct_trace_print_begin(FILE *f) {
    if (!f) {
        ct_error("ct_trace_print_begin: f is NULL");
        return NULL;
    }
    ct_trace_printer *p = ct_calloc(1, sizeof *p);
    if (!p) {
        ct_error("ct_trace_print_begin: out of memory");
        return NULL;
    }
    p->f = f;
    if (ct_trace_push(print_call, p) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

int ct_trace_print_end(ct_trace_printer *p) {
    if (!p) {
        ct_error("ct_trace_print_end: p is NULL");
        return -1;
    }
    if (!ct_trace_is_top(print_call, p)) {
        ct_error("ct_trace_print_end: this printer is not the innermost hook of this thread");
        return -1;
    }
    ct_trace_pop();
    for (int64_t i = 0; i < p->cap; i++) ct_release(p->keys[i]);
    free(p->keys);
    free(p->ids);
    free(p);
    return 0;
}
