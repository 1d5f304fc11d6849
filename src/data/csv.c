/* A CSV file of numbers as a TensorDataset (features float32 [N, F], labels [N]).
 *
 * The text is read as RFC 4180 says: fields separated by the delimiter, rows ending
 * in LF or CRLF, and a field in double quotes may hold delimiters, newlines and
 * doubled quotes ("" for one).  Beyond the RFC, whitespace around a field (outside
 * its quotes) is ignored and blank lines are skipped.  Every row must have the first
 * row's number of fields; errors name the file, the line and the column.
 *
 * The tokenizer works in place on the file's text: a field's characters (quotes
 * removed, "" made one) are moved left over what was already read, and each field
 * ends with the NUL written where its delimiter or closing quote was. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "data/data_impl.h"
#include "ops/options.h"
#include "core/mem.h"

typedef struct {
    const char *op, *path;
    char delim;
    char *pos;         /* the next byte to read */
    long line, col;    /* where pos is, both from 1 */
    long row_line;     /* the line the current row starts on */
    char **field;      /* the current row's fields (pointers into the text) */
    long *field_line, *field_col;
    int n_fields, cap_fields;
} csv_reader;

/* Moves past the byte at pos (c, read before the byte was overwritten). */
static void consume(csv_reader *r, char c) {
    r->pos++;
    if (c == '\n') {
        r->line++;
        r->col = 1;
    } else {
        r->col++;
    }
}

static bool is_blank(char c, char delim) { return (c == ' ' || c == '\t' || c == '\r') && c != delim; }

static int syntax_error(const csv_reader *r, long line, long col, const char *what) {
    ct_error("%s: %s:%ld:%ld: %s", r->op, r->path, line, col, what);
    return -1;
}

static int add_field(csv_reader *r, char *s, long line, long col) {
    if (r->n_fields == r->cap_fields) {
        if (r->cap_fields > INT_MAX / 2) return syntax_error(r, line, col, "too many fields in a row");
        int cap = r->cap_fields ? 2 * r->cap_fields : 16;
        char **f = ct_realloc(r->field, sizeof *f * (size_t)cap);
        if (f) r->field = f;
        long *l = ct_realloc(r->field_line, sizeof *l * (size_t)cap);
        if (l) r->field_line = l;
        long *k = ct_realloc(r->field_col, sizeof *k * (size_t)cap);
        if (k) r->field_col = k;
        if (!f || !l || !k) {
            ct_error("%s: out of memory", r->op);
            return -1;
        }
        r->cap_fields = cap;
    }
    r->field[r->n_fields] = s;
    r->field_line[r->n_fields] = line;
    r->field_col[r->n_fields++] = col;
    return 0;
}

/* A quoted field at pos (its opening quote); leaves pos after the closing quote and
 * the field NUL-terminated at *out.  0, or -1 with an error. */
static int quoted_field(csv_reader *r, char **out) {
    long line = r->line, col = r->col;
    consume(r, '"');
    char *w = r->pos;
    *out = w;
    for (;;) {
        char c = *r->pos;
        if (!c) return syntax_error(r, line, col, "the quoted field that starts here is not closed");
        consume(r, c);
        if (c == '"') {
            if (*r->pos != '"') break;
            consume(r, '"'); /* "" is one quote */
        }
        *w++ = c;
    }
    *w = 0; /* w is behind pos: the opening quote at least was read */
    return 0;
}

/* Splits the next row into fields.  Returns 1 for a row, 0 at the end of the text,
 * -1 with an error.  Blank lines (only spaces, tabs, CRs) are skipped. */
static int next_row(csv_reader *r) {
    for (;;) {
        char *s = r->pos;
        while (is_blank(*s, r->delim)) s++;
        if (!*s) return 0;
        if (*s != '\n') break;
        while (r->pos <= s) consume(r, *r->pos);
    }
    r->row_line = r->line;
    r->n_fields = 0;
    for (;;) {
        while (is_blank(*r->pos, r->delim) && *r->pos != '\r') consume(r, *r->pos);
        long line = r->line, col = r->col;
        char *f;
        if (*r->pos == '"') {
            if (quoted_field(r, &f) != 0) return -1;
            while (is_blank(*r->pos, r->delim)) consume(r, *r->pos);
            char c = *r->pos;
            if (c && c != r->delim && c != '\n')
                return syntax_error(r, r->line, r->col,
                                    "a quoted field must end at its closing quote (a quote in a "
                                    "quoted field is written \"\")");
        } else {
            f = r->pos;
            char *p = f;
            while (*p && *p != r->delim && *p != '\n' && *p != '"') p++;
            if (*p == '"')
                return syntax_error(r, r->line, r->col + (long)(p - f),
                                    "a quote inside an unquoted field (quote the whole field)");
            while (r->pos < p) consume(r, *r->pos);
            char *e = p;
            while (e > f && isspace((unsigned char)e[-1])) e--;
            if (e < p) *e = 0; /* else the NUL goes where the delimiter is, below */
        }
        char c = *r->pos;
        if (c) {
            *r->pos = 0; /* ends an unquoted field (a quoted one ended already) */
            consume(r, c);
        }
        if (add_field(r, f, line, col) != 0) return -1;
        if (c != r->delim) return 1;
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
        ct_error("%s: %s: no column named '%s' in the header (line %ld)", op, r->path, o->label_name,
                 r->row_line);
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
        ct_error("%s: %s:%ld: expected %d fields, got %d", op, r->path, r->row_line, cols,
                 r->n_fields);
        return -1;
    }
    if (d->rows == d->cap) {
        int64_t cap = d->cap ? 2 * d->cap : 256;
        float *x = ct_realloc(d->x, sizeof(float) * (size_t)(cap * cols));
        if (x) d->x = x;
        double *y = ct_realloc(d->y, sizeof(double) * (size_t)cap);
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
            ct_error("%s: %s:%ld:%ld: field %d (\"%.40s\") is not a number", op, r->path,
                     r->field_line[i], r->field_col[i], i + 1, r->field[i]);
            return -1;
        }
        if (i != label) {
            *x++ = (float)v;
        } else if (ct_dtype_is_integral(o->label_dtype) && v != floor(v)) {
            ct_error("%s: %s:%ld:%ld: label %s is not an integer (give .label_dtype = CT_F32 for "
                     "real-valued labels)", op, r->path, r->field_line[i], r->field_col[i],
                     r->field[i]);
            return -1;
        } else if (ct_dtype_is_integral(o->label_dtype) && !ct_fits_integer(v, o->label_dtype)) {
            ct_error("%s: %s:%ld:%ld: label %s is out of range for %s", op, r->path,
                     r->field_line[i], r->field_col[i], r->field[i], ct_dtype_name(o->label_dtype));
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
    if (o.delimiter == '"' || o.delimiter == '\n' || o.delimiter == '\r') {
        ct_error("%s: the delimiter cannot be a quote or a line end (got %d)", op, o.delimiter);
        return NULL;
    }
    char *text = data_read_file(op, path, &len, NULL);
    if (!text) return NULL;
    if (memchr(text, 0, len)) {
        ct_error("%s: %s: not a text file (it holds a zero byte)", op, path);
        free(text);
        return NULL;
    }
    csv_reader r = {.op = op, .path = path, .delim = o.delimiter, .pos = text, .line = 1, .col = 1};
    csv_data d = {0};
    ct_dataset *ds = NULL;
    int got = next_row(&r), cols = r.n_fields;
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
    while (ok && (got = next_row(&r)) == 1) ok = push_row(op, &r, &d, cols, label, &o) == 0;
    if (got < 0) ok = false;
    if (ok && d.rows == 0) {
        ct_error("%s: %s: the file holds a header but no data rows", op, path);
        ok = false;
    }
    if (ok) ds = to_dataset(&d, label >= 0 ? cols - 1 : cols, label >= 0, o.label_dtype);
    free(d.x);
    free(d.y);
    free(r.field);
    free(r.field_line);
    free(r.field_col);
    free(text);
    return ds;
}
