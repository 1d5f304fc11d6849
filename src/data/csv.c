/* A CSV file of numbers as a TensorDataset (features float32 [N, F], labels [N]).
 * Every row must have the first row's number of fields; errors name the line. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "data/data_impl.h"
#include "ops/options.h"

typedef struct {
    const char *path;
    char delim;
    int line;     /* 1-based line number of the row being parsed */
    char **field; /* the current row's fields (pointers into the buffer) */
    int n_fields, cap_fields;
} csv_reader;

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* Splits the row at *pos (up to its newline, which is consumed) into fields.  Returns
 * 1 for a row, 0 at the end of the text, -1 out of memory.  Blank lines are skipped. */
static int next_row(csv_reader *r, char **pos) {
    for (;;) {
        char *s = *pos;
        if (!*s) return 0;
        char *nl = strchr(s, '\n');
        if (nl) *nl = 0;
        *pos = nl ? nl + 1 : s + strlen(s);
        r->line++;
        if (!*trim(s)) continue;
        r->n_fields = 0;
        for (char *f = s;; ) {
            if (r->n_fields == r->cap_fields) {
                int cap = r->cap_fields ? 2 * r->cap_fields : 16;
                char **grown = realloc(r->field, sizeof *grown * (size_t)cap);
                if (!grown) return -1;
                r->field = grown;
                r->cap_fields = cap;
            }
            char *d = strchr(f, r->delim);
            if (d) *d = 0;
            r->field[r->n_fields++] = trim(f);
            if (!d) break;
            f = d + 1;
        }
        return 1;
    }
}

static bool parse_number(const char *s, double *v) {
    char *end;
    if (!*s) return false;
    *v = strtod(s, &end);
    return *end == 0;
}

/* The column index of the label (or -1 for none), from the options and the header. */
static int label_index(const char *op, const csv_reader *r, bool header, const ct_csv_options *o) {
    int n = r->n_fields;
    if (o->no_label) return -1;
    if (o->label_name) {
        if (!header) {
            ct_error("%s: %s: label_name '%s' given but the file has no header row", op, r->path,
                     o->label_name);
            return -2;
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(r->field[i], o->label_name)) return i;
        ct_error("%s: %s: no column named '%s' in the header (line %d)", op, r->path, o->label_name,
                 r->line);
        return -2;
    }
    int64_t col;
    if (!ct_opt_int(op, "label_column", o->label_column, -1, &col)) return -2;
    int64_t c = col < 0 ? col + n : col;
    if (c < 0 || c >= n) {
        ct_error("%s: %s: label_column %lld is out of range for %d columns", op, r->path,
                 (long long)col, n);
        return -2;
    }
    return (int)c;
}

typedef struct {
    float *x;
    double *y;
    int64_t rows, cap;
} csv_data;

static int push_row(const char *op, csv_reader *r, csv_data *d, int cols, int label,
                    const ct_csv_options *o) {
    if (r->n_fields != cols) {
        ct_error("%s: %s:%d: expected %d fields, got %d", op, r->path, r->line, cols, r->n_fields);
        return -1;
    }
    if (d->rows == d->cap) {
        int64_t cap = d->cap ? 2 * d->cap : 256;
        float *x = realloc(d->x, sizeof(float) * (size_t)(cap * cols));
        if (x) d->x = x;
        double *y = realloc(d->y, sizeof(double) * (size_t)cap);
        if (y) d->y = y;
        if (!x || !y) {
            ct_error("%s: out of memory", op);
            return -1;
        }
        d->cap = cap;
    }
    int nf = label >= 0 ? cols - 1 : cols;
    float *x = d->x + d->rows * nf;
    for (int i = 0; i < cols; i++) {
        double v;
        if (!parse_number(r->field[i], &v)) {
            ct_error("%s: %s:%d: field %d (\"%s\") is not a number", op, r->path, r->line, i + 1,
                     r->field[i]);
            return -1;
        }
        if (i != label) {
            *x++ = (float)v;
        } else if (ct_dtype_is_integral(o->label_dtype) && v != floor(v)) {
            ct_error("%s: %s:%d: label %s is not an integer (give .label_dtype = CT_F32 for "
                     "real-valued labels)", op, r->path, r->line, r->field[i]);
            return -1;
        } else if (ct_dtype_is_integral(o->label_dtype) && !ct_fits_integer(v, o->label_dtype)) {
            ct_error("%s: %s:%d: label %s is out of range for %s", op, r->path, r->line,
                     r->field[i], ct_dtype_name(o->label_dtype));
            return -1;
        } else {
            d->y[d->rows] = v;
        }
    }
    d->rows++;
    return 0;
}

static ct_dataset *to_dataset(const csv_data *d, int nf, bool has_label, ct_dtype label_dtype) {
    ct_dataset *ds = NULL;
    CT_SCOPE {
        ct_tensor *t[2] = {ct_tensor_f32(d->x, CT_SHAPE(d->rows, nf)), NULL};
        if (has_label) t[1] = ct_to(ct_tensor_f64(d->y, CT_SHAPE(d->rows)), .dtype = label_dtype);
        ds = ct_keep(ct_tensor_dataset(has_label ? 2 : 1, t));
    }
    return ds;
}

ct_dataset *ct_csv_dataset_with(const char *path, ct_csv_options o) {
    const char *op = "ct_csv_dataset";
    if (!o.delimiter) o.delimiter = ',';
    if (!o.label_dtype) o.label_dtype = CT_I64;
    size_t len;
    char *text = data_read_file(op, path, &len), *pos = text;
    if (!text) return NULL;
    if (memchr(text, 0, len)) {
        ct_error("%s: %s: not a text file (it holds a zero byte)", op, path);
        free(text);
        return NULL;
    }
    csv_reader r = {.path = path, .delim = o.delimiter};
    csv_data d = {0};
    ct_dataset *ds = NULL;
    int got = next_row(&r, &pos), cols = r.n_fields;
    if (got == 0) ct_error("%s: %s: the file holds no rows", op, path);
    bool header = o.header == CT_CSV_HEADER_YES;
    if (got == 1 && o.header == CT_CSV_HEADER_AUTO) {
        double v;
        for (int i = 0; i < cols && !header; i++) header = !parse_number(r.field[i], &v);
    }
    int label = got == 1 ? label_index(op, &r, header, &o) : -2;
    bool ok = label >= -1;
    if (ok && label >= 0 && cols < 2) {
        ct_error("%s: %s: one column is a label without features (give .no_label = true)", op, path);
        ok = false;
    }
    if (ok && !header) ok = push_row(op, &r, &d, cols, label, &o) == 0;
    while (ok && (got = next_row(&r, &pos)) == 1) ok = push_row(op, &r, &d, cols, label, &o) == 0;
    if (got < 0) {
        ct_error("%s: out of memory", op);
        ok = false;
    }
    if (ok && d.rows == 0) {
        ct_error("%s: %s: the file holds a header but no data rows", op, path);
        ok = false;
    }
    if (ok) ds = to_dataset(&d, label >= 0 ? cols - 1 : cols, label >= 0, o.label_dtype);
    free(d.x);
    free(d.y);
    free(r.field);
    free(text);
    return ds;
}
