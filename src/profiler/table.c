/* The key_averages table (ct_profiler_table), laid out as PyTorch 1.13's
 * torch.autograd.profiler_util._build_table: events averaged by name (and input
 * shapes when grouped) in first-seen order, optionally sorted (descending, stable),
 * right-aligned columns of 12 (the name's as wide as the longest name plus 4, at most
 * 55), two spaces after each column, and the units of _format_time / _format_memory. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/profiler_impl.h"
#include "core/error.h"
#include "core/mem.h"

typedef struct {
    const char *name, *shapes; /* the key */
    double cpu_total, self_total; /* microseconds */
    int64_t mem, self_mem, count;
    int first; /* order of first appearance */
} row;

/* _format_time: microseconds as "12.345us", "1.234ms" or "1.234s". */
static void format_time(char *buf, size_t n, double us) {
    if (us >= 1e6) snprintf(buf, n, "%.3fs", us / 1e6);
    else if (us >= 1e3) snprintf(buf, n, "%.3fms", us / 1e3);
    else snprintf(buf, n, "%.3fus", us);
}

/* _format_time_share */
static void format_share(char *buf, size_t n, double us, double total) {
    if (total == 0) snprintf(buf, n, "NaN");
    else snprintf(buf, n, "%.2f%%", us * 100.0 / total);
}

/* _format_memory: "512 b", "1.50 Kb", "2.00 Mb", "1.00 Gb". */
static void format_memory(char *buf, size_t n, int64_t bytes) {
    const double KB = 1024, MB = 1024 * KB, GB = 1024 * MB;
    double a = bytes < 0 ? -(double)bytes : (double)bytes;
    if (a >= GB) snprintf(buf, n, "%.2f Gb", (double)bytes / GB);
    else if (a >= MB) snprintf(buf, n, "%.2f Mb", (double)bytes / MB);
    else if (a >= KB) snprintf(buf, n, "%.2f Kb", (double)bytes / KB);
    else snprintf(buf, n, "%lld b", (long long)bytes);
}

static const char *const sort_keys[] = {"cpu_time", "cpu_time_total", "self_cpu_time_total",
                                        "cpu_memory_usage", "self_cpu_memory_usage", "count"};
enum { N_SORT_KEYS = sizeof sort_keys / sizeof *sort_keys };

static double sort_value(const row *r, int key) {
    switch (key) {
    case 0: return r->cpu_total / (double)r->count;
    case 1: return r->cpu_total;
    case 2: return r->self_total;
    case 3: return (double)r->mem;
    case 4: return (double)r->self_mem;
    default: return (double)r->count;
    }
}

static int by_key(const void *a, const void *b, void *key) {
    const row *x = a, *y = b;
    double vx = sort_value(x, *(int *)key), vy = sort_value(y, *(int *)key);
    if (vx != vy) return vx > vy ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static uint64_t hash_key(const char *name, const char *shapes) {
    uint64_t h = 1469598103934665603u;
    for (const char *s = name; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    h = (h ^ 0xff) * 1099511628211u;
    for (const char *s = shapes ? shapes : ""; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The rows of key_averages, in first-seen order; *n_rows gets their number. */
static row *key_averages(const ct_profiler *p, bool by_shape, int *n_rows) {
    int n = p->n_events;
    size_t size = 16;
    while (size < 2 * (size_t)n) size *= 2;
    int *slot = ct_malloc(size * sizeof *slot);
    row *rows = ct_calloc((size_t)n, sizeof *rows);
    if (!slot || !rows) {
        free(slot);
        free(rows);
        ct_error("ct_profiler_table: out of memory");
        return NULL;
    }
    memset(slot, 0xff, size * sizeof *slot);
    int m = 0;
    for (int i = 0; i < n; i++) {
        const ct_profiler_event *e = &p->events[i];
        const char *shapes = by_shape ? (e->input_shapes ? e->input_shapes : "[]") : NULL;
        size_t h = (size_t)hash_key(e->name, shapes) & (size - 1);
        while (slot[h] >= 0 && (strcmp(rows[slot[h]].name, e->name) ||
                                (shapes && strcmp(rows[slot[h]].shapes, shapes))))
            h = (h + 1) & (size - 1);
        if (slot[h] < 0) {
            rows[m] = (row){.name = e->name, .shapes = shapes, .first = m};
            slot[h] = m++;
        }
        row *r = &rows[slot[h]];
        r->cpu_total += e->dur_us;
        r->self_total += e->self_us;
        r->mem += e->cpu_memory;
        r->self_mem += e->self_cpu_memory;
        r->count++;
    }
    free(slot);
    *n_rows = m;
    return rows;
}

char *(ct_profiler_table)(ct_profiler *p, ct_profiler_table_options o) {
    const char *fn = "ct_profiler_table";
    if (!prof_has_events(p, fn)) return NULL;
    int key = -1;
    if (o.sort_by) {
        for (int k = 0; k < N_SORT_KEYS; k++)
            if (!strcmp(o.sort_by, sort_keys[k])) key = k;
        if (key < 0) {
            ct_error("%s: unknown sort_by \"%s\" (expected cpu_time, cpu_time_total, "
                     "self_cpu_time_total, cpu_memory_usage, self_cpu_memory_usage or count)",
                     fn, o.sort_by);
            return NULL;
        }
    }
    int n = 0;
    row *rows = key_averages(p, o.group_by_input_shape, &n);
    if (!rows) return NULL;
    if (key >= 0) qsort_r(rows, (size_t)n, sizeof *rows, by_key, &key);
    enum { W = 12, NAME_MAX_W = 55, SHAPES_MAX_W = 80 };
    int name_w = 0, shapes_w = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(rows[i].name) + 4;
        if (l > name_w) name_w = l;
        if (rows[i].shapes && (l = (int)strlen(rows[i].shapes) + 4) > shapes_w) shapes_w = l;
        total += rows[i].self_total;
    }
    if (name_w > NAME_MAX_W) name_w = NAME_MAX_W;
    if (shapes_w > SHAPES_MAX_W) shapes_w = SHAPES_MAX_W;
    bool mem = p->o.profile_memory, shapes = o.group_by_input_shape;
    int n_cols = 6 + (mem ? 2 : 0) + 1;
    static const char *const heads[] = {"Self CPU %", "Self CPU", "CPU total %", "CPU total",
                                        "CPU time avg", "CPU Mem", "Self CPU Mem", "# of Calls"};

    char *out = NULL;
    size_t out_len = 0;
    FILE *f = open_memstream(&out, &out_len);
    if (!f) {
        free(rows);
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    /* The separator line, then the headings. */
    char sep[512];
    int sl = 0;
    int widths[12];
    widths[0] = name_w;
    for (int c = 1; c < n_cols; c++) widths[c] = W;
    if (shapes) widths[n_cols++] = shapes_w;
    for (int c = 0; c < n_cols && sl < (int)sizeof sep - 90; c++) {
        memset(sep + sl, '-', (size_t)widths[c]);
        sl += widths[c];
        sep[sl++] = ' ';
        sep[sl++] = ' ';
    }
    sep[sl] = 0;
    fprintf(f, "%s\n%*s  ", sep, name_w, "Name");
    for (int h = 0; h < 8; h++)
        if (mem || (h != 5 && h != 6)) fprintf(f, "%*s  ", W, heads[h]);
    if (shapes) fprintf(f, "%*s  ", shapes_w, "Input Shapes");
    fprintf(f, "\n%s\n", sep);

    int limit = o.row_limit ? o.row_limit : 100;
    for (int i = 0; i < n && i != limit; i++) {
        const row *r = &rows[i];
        char name[NAME_MAX_W + 1], b[6][32];
        if ((int)strlen(r->name) >= NAME_MAX_W - 3) snprintf(name, sizeof name, "%.*s...", NAME_MAX_W - 3, r->name);
        else snprintf(name, sizeof name, "%s", r->name);
        format_share(b[0], 32, r->self_total, total);
        format_time(b[1], 32, r->self_total);
        format_share(b[2], 32, r->cpu_total, total);
        format_time(b[3], 32, r->cpu_total);
        format_time(b[4], 32, r->cpu_total / (double)r->count);
        fprintf(f, "%*s  ", name_w, name);
        for (int c = 0; c < 5; c++) fprintf(f, "%*s  ", W, b[c]);
        if (mem) {
            format_memory(b[0], 32, r->mem);
            format_memory(b[1], 32, r->self_mem);
            fprintf(f, "%*s  %*s  ", W, b[0], W, b[1]);
        }
        fprintf(f, "%*lld  ", W, (long long)r->count);
        if (shapes) fprintf(f, "%*.*s  ", shapes_w, shapes_w, r->shapes);
        fputc('\n', f);
    }
    char t[32];
    format_time(t, sizeof t, total);
    fprintf(f, "%s\nSelf CPU time total: %s\n", sep, t);
    free(rows);
    if (fclose(f) != 0 || !out) {
        free(out);
        ct_error("%s: out of memory", fn);
        return NULL;
    }
    return out;
}
