/* ct_memory_summary and ct_memory_snapshot_to_string: the allocator's statistics and
 * the recorded live blocks as text, laid out as torch.cuda.memory_summary's table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/memory.h"
#include "ctorch/tensor.h"
#include "core/error.h"
#include "core/strbuf.h"

static char *finish(ct_strbuf *t, const char *fn) {
    if (t->failed) ct_error("%s: out of memory", fn);
    return t->s;
}

/* As torch.cuda.memory_summary: a value in units of 1024 (bytes) or 1000 (counts),
 * the next unit taken while the reference value pref is at least 3/4 of it. */
static void put_scaled(ct_strbuf *t, int64_t v, int64_t pref, bool count) {
    static const char *sizes[] = {"B ", "KB", "MB", "GB", "TB", "PB"}, *counts[] = {" ", "K", "M"};
    const int64_t base = count ? 1000 : 1024;
    const int last = count ? 2 : 5;
    int u = 0;
    double p = (double)pref;
    while (u < last && p >= (count ? 750.0 * 1000 : 768.0 * 1024)) {
        v /= base;
        p /= (double)base;
        u++;
    }
    ct_strbuf_put(t, count ? "%7lld %s " : "%7lld %s", (long long)v, count ? counts[u] : sizes[u]);
}
static void put_size(ct_strbuf *t, int64_t v, int64_t pref) { put_scaled(t, v, pref, false); }
static void put_count(ct_strbuf *t, int64_t v, int64_t pref) { put_scaled(t, v, pref, true); }

#define RULE(c) "|%s|\n", c == '=' ? EQUALS : DASHES
static const char EQUALS[] = "===========================================================================";
static const char DASHES[] = "---------------------------------------------------------------------------";

enum { CUR = 1, PEAK = 2, TOTALS = 4 }; /* the columns a row has; the others show "-" */

static void put_row(ct_strbuf *t, const char *name, const ct_memory_stat *m, bool count, int columns) {
    void (*fmt)(ct_strbuf *, int64_t, int64_t) = count ? put_count : put_size;
    const int64_t v[4] = {m->current, m->peak, m->allocated, m->freed};
    const int has[4] = {columns & CUR, columns & PEAK, columns & TOTALS, columns & TOTALS};
    ct_strbuf_put(t, "| %-21s |", name);
    for (int i = 0; i < 4; i++) {
        ct_strbuf_put(t, " ");
        if (has[i]) fmt(t, v[i], v[i]);
        else ct_strbuf_put(t, "%10s", "-");
        ct_strbuf_put(t, " |");
    }
    ct_strbuf_put(t, "\n");
}

char *ct_memory_summary(ct_device d) {
    ct_allocator_stats s = ct_memory_stats(d);
    char dev[16];
    ct_strbuf t = {0};
    ct_strbuf_put(&t, RULE('='));
    char title[80];
    snprintf(title, sizeof title, "ctorch memory summary, device %s", ct_device_str(d, dev));
    ct_strbuf_put(&t, "|%*s%-*s|\n", (int)(75 - strlen(title)) / 2, "", 75 - (int)(75 - strlen(title)) / 2, title);
    ct_strbuf_put(&t, RULE('='));
    ct_strbuf_put(&t, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
    ct_strbuf_put(&t, RULE('-'));
    put_row(&t, "Allocated memory", &s.allocated_bytes, false, CUR | PEAK | TOTALS);
    ct_strbuf_put(&t, RULE('-'));
    put_row(&t, "Reserved memory", &s.reserved_bytes, false, CUR | PEAK);
    ct_strbuf_put(&t, RULE('-'));
    put_row(&t, "Allocations", &s.allocations, true, CUR | TOTALS);
    ct_strbuf_put(&t, RULE('-'));
    put_row(&t, "Largest block", &(ct_memory_stat){.peak = s.largest_allocation}, false, PEAK);
    ct_strbuf_put(&t, RULE('='));
    return finish(&t, "ct_memory_summary");
}

/* Blocks with the same origin (op, call site, dtype, shape) are one row. */
static bool same_origin(const ct_memory_block *a, const ct_memory_block *b) {
    if (strcmp(a->op, b->op) || a->backward != b->backward || a->line != b->line || a->dtype != b->dtype ||
        a->ndim != b->ndim || a->bytes != b->bytes)
        return false;
    if ((a->file == NULL) != (b->file == NULL) || (a->file && strcmp(a->file, b->file))) return false;
    return !memcmp(a->sizes, b->sizes, sizeof *a->sizes * (size_t)a->ndim);
}

typedef struct {
    const ct_memory_block *first;
    int64_t count, bytes;
} origin;

static int more_bytes_first(const void *x, const void *y) {
    const origin *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
    return a->first->seq < b->first->seq ? -1 : a->first->seq > b->first->seq;
}

static void put_human(ct_strbuf *t, int64_t bytes) {
    const char *units[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = 0;
    while (u < 4 && v >= 1024) {
        v /= 1024;
        u++;
    }
    if (u == 0) ct_strbuf_put(t, "%7lld %-2s", (long long)bytes, units[0]);
    else ct_strbuf_put(t, "%7.2f %-2s", v, units[u]);
}

char *ct_memory_snapshot_to_string(ct_device d, int limit) {
    int64_t n = ct_memory_snapshot(d, NULL, 0);
    if (n < 0) return NULL;
    ct_memory_block *b = malloc(sizeof *b * (size_t)(n ? n : 1));
    origin *o = malloc(sizeof *o * (size_t)(n ? n : 1));
    if (!b || !o) {
        free(b);
        free(o);
        ct_error("ct_memory_snapshot_to_string: out of memory");
        return NULL;
    }
    n = ct_memory_snapshot(d, b, n); /* blocks made in between are left out */
    int64_t n_origins = 0, total = 0;
    for (int64_t i = 0; i < n; i++) {
        total += b[i].bytes;
        int64_t k = 0;
        while (k < n_origins && !same_origin(o[k].first, &b[i])) k++;
        if (k == n_origins) o[n_origins++] = (origin){&b[i], 0, 0};
        o[k].count++;
        o[k].bytes += b[i].bytes;
    }
    qsort(o, (size_t)n_origins, sizeof *o, more_bytes_first);
    char dev[16];
    ct_strbuf t = {0};
    ct_strbuf_put(&t, "ctorch memory snapshot, device %s: %lld live blocks recorded, ", ct_device_str(d, dev), (long long)n);
    put_human(&t, total);
    ct_strbuf_put(&t, "\n%10s  %6s  %-9s %-20s %-28s %s\n", "Total", "Blocks", "Dtype", "Shape", "Op", "Call site");
    for (int64_t k = 0; k < n_origins && (limit <= 0 || k < limit); k++) {
        const ct_memory_block *f = o[k].first;
        char shape[CT_SHAPE_STR_MAX], op[64], site[300];
        ct_shape_str(f->ndim, f->sizes, shape);
        snprintf(op, sizeof op, "%s%s", f->op[0] ? f->op : "?", f->backward ? " (backward)" : "");
        if (f->file) snprintf(site, sizeof site, "%s:%d", f->file, f->line);
        else snprintf(site, sizeof site, "?");
        put_human(&t, o[k].bytes);
        ct_strbuf_put(&t, "  %6lld  %-9s %-20s %-28s %s\n", (long long)o[k].count, f->dtype ? ct_dtype_name(f->dtype) : "?", shape, op, site);
    }
    if (limit > 0 && n_origins > limit) ct_strbuf_put(&t, "... %lld more rows\n", (long long)(n_origins - limit));
    free(b);
    free(o);
    return finish(&t, "ct_memory_snapshot_to_string");
}
