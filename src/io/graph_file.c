/* .ctm files (ctorch/jit.h; the layout is docs/ctm.md): a traced graph as JSON and its
 * weights as a safetensors blob, in one file written atomically.
 *
 *   bytes 0..7    "CTMODEL\0"
 *   bytes 8..15   n, little-endian: the JSON's length
 *   n bytes       the graph, JSON (format "ctorch.ctm", version CTM_VERSION)
 *   the rest      a safetensors file: parameters and buffers by their state-dict
 *                 names, constants as "constant.<value id>"
 *
 * The reader trusts nothing: every id is checked against the value table, each node's
 * inputs must exist before it runs (the nodes are in execution order), ops are looked
 * up by name in this ctorch's op table, attributes are decoded by the kind the op's
 * schema gives and refused when of another kind, and each tensor of the blob must
 * have the dtype and shape its value declares.  Versions: a file of a version this
 * ctorch knows is read (older ones included); a newer one is refused by name. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "ctorch/version.h"
#include "io/graph_impl.h"
#include "io/json.h"
#include "io/read_file.h"
#include "io/safetensors.h"

#define CTM_MAGIC "CTMODEL"  /* with its NUL: 8 bytes */
#define CTM_VERSION 1        /* the newest layout this ctorch writes and reads */
#define MAX_ITEMS (1 << 20)  /* values, nodes, list entries: beyond any real graph */
#define SAVE "ct_graph_save"
#define LOAD "ct_graph_load"

static const char *const KINDS[] = {"input", "param", "buffer", "constant", "value"};

/* ---- writing ---- */

/* Writes s as a JSON string (or null). */
static void put_str(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    size_t size = strlen(s) * 6 + 3;
    char *buf = ct_malloc(size);
    if (buf && json_escape(buf, size, 0, s)) fputs(buf, f);
    else fputs("\"\"", f);
    free(buf);
}

/* A float that reads back to the same bits; JSON has no inf or nan, so those are strings. */
static void put_float(FILE *f, double x) {
    if (isnan(x)) fputs("\"nan\"", f);
    else if (isinf(x)) fputs(x > 0 ? "\"inf\"" : "\"-inf\"", f);
    else fprintf(f, "%.17g", x);
}

static void put_value(FILE *f, const ct_value *v) {
    char dev[16];
    if (v->none) {
        fputs("null", f);
        return;
    }
    switch (v->kind) {
    case CT_ARG_INT: fprintf(f, "%" PRId64, v->i); break;
    case CT_ARG_FLOAT:
    case CT_ARG_SCALAR: put_float(f, v->f); break;
    case CT_ARG_BOOL: fputs(v->b ? "true" : "false", f); break;
    case CT_ARG_DTYPE: put_str(f, ct_dtype_name(v->dtype)); break;
    case CT_ARG_STR: put_str(f, v->s); break;
    case CT_ARG_DEVICE: put_str(f, ct_device_str(v->device, dev)); break;
    case CT_ARG_INT_LIST:
        fputc('[', f);
        for (int i = 0; i < v->ints.n; i++) fprintf(f, "%s%" PRId64, i ? "," : "", v->ints.v[i]);
        fputc(']', f);
        break;
    case CT_ARG_FLOAT_LIST:
        fputc('[', f);
        for (int i = 0; i < v->floats.n; i++) {
            if (i) fputc(',', f);
            put_float(f, v->floats.v[i]);
        }
        fputc(']', f);
        break;
    case CT_ARG_BOOL_LIST:
        fputc('[', f);
        for (int i = 0; i < v->bools.n; i++) fprintf(f, "%s%s", i ? "," : "", v->bools.v[i] ? "true" : "false");
        fputc(']', f);
        break;
    default: fputs("null", f); break; /* a generator is not stored */
    }
}

static void put_ids(FILE *f, int n, const int *ids) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", ids[i]);
    fputc(']', f);
}

/* The key of value id's tensor in the blob. */
static void tensor_key(const ct_graph_value *v, int id, char *buf, size_t size) {
    if (v->kind == CT_GRAPH_CONST || !v->name) snprintf(buf, size, "constant.%d", id);
    else snprintf(buf, size, "%s", v->name);
}

static void put_graph(FILE *f, const ct_graph *g) {
    fprintf(f, "{\"format\":\"ctorch.ctm\",\"version\":%d,\"producer\":", CTM_VERSION);
    put_str(f, "ctorch " CTORCH_VERSION_STRING);
    fputs(",\n\"values\":[", f);
    for (int i = 0; i < g->n_values; i++) {
        const ct_graph_value *v = &g->values[i];
        fprintf(f, "%s\n{\"kind\":\"%s\",\"name\":", i ? "," : "", KINDS[v->kind]);
        put_str(f, v->name);
        fprintf(f, ",\"dtype\":\"%s\",\"shape\":", ct_dtype_name(v->dtype));
        fputc('[', f);
        for (int d = 0; d < v->ndim; d++) fprintf(f, "%s%" PRId64, d ? "," : "", v->sizes[d]);
        fputs("],\"dynamic\":[", f);
        for (int d = 0, k = 0; d < v->ndim; d++)
            if (v->dynamic[d]) fprintf(f, "%s%d", k++ ? "," : "", d);
        fputc(']', f);
        if (v->tensor) {
            char key[300];
            tensor_key(v, i, key, sizeof key);
            fputs(",\"tensor\":", f);
            put_str(f, key);
        }
        fputc('}', f);
    }
    fputs("],\n\"inputs\":", f);
    put_ids(f, g->n_inputs, g->inputs);
    fputs(",\"outputs\":", f);
    put_ids(f, g->n_outputs, g->outputs);
    fputs(",\"output_names\":[", f);
    for (int i = 0; i < g->n_outputs; i++) {
        if (i) fputc(',', f);
        put_str(f, g->output_names[i]);
    }
    fputs("],\n\"dynamic\":[", f);
    for (int j = 0; j < g->n_dyn; j++)
        fprintf(f, "%s{\"input\":%d,\"dim\":%d,\"size\":%" PRId64 "}", j ? "," : "", g->dyn[j].input,
                g->dyn[j].dim, g->dyn[j].size);
    fputs("],\n\"nodes\":[", f);
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        const ct_schema *s = n->pub.schema;
        fprintf(f, "%s\n{\"op\":\"%s\",\"inputs\":", i ? "," : "", s->name);
        put_ids(f, n->pub.n_inputs, n->pub.inputs);
        fputs(",\"outputs\":", f);
        put_ids(f, n->pub.n_outputs, n->pub.outputs);
        fputs(",\"attrs\":{", f);
        for (int a = 0; a < s->n_attrs; a++) {
            fprintf(f, "%s\"%s\":", a ? "," : "", s->attrs[a].name);
            put_value(f, &n->attrs[a]);
        }
        fputc('}', f);
        if (n->n_sym) {
            fputs(",\"sym\":[", f);
            for (int k = 0; k < n->n_sym; k++)
                fprintf(f, "%s[%d,%d,%d,%" PRId64 "]", k ? "," : "", n->sym[k].attr, n->sym[k].entry,
                        n->sym[k].dyn, n->sym[k].k);
            fputc(']', f);
        }
        fputc('}', f);
    }
    fputs("]}\n", f);
}

int ct_graph_save(const ct_graph *g, const char *path) {
    if (!graph_check(SAVE, g)) return -1;
    if (!path) {
        ct_error(SAVE ": path is NULL");
        return -1;
    }
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    if (!f) {
        ct_error(SAVE ": out of memory");
        return -1;
    }
    put_graph(f, g);
    bool ok = fclose(f) == 0;
    int rc = -1;
    CT_SCOPE {
        ct_state_dict *sd = ok ? ct_state_dict_new() : NULL;
        for (int i = 0; sd && ok && i < g->n_values; i++) {
            if (!g->values[i].tensor) continue;
            char key[300];
            tensor_key(&g->values[i], i, key, sizeof key);
            if (ct_state_dict_get(sd, key)) {
                ct_error(SAVE ": two tensors of the graph are named %s", key);
                ok = false;
            }
            ok = ok && ct_state_dict_set(sd, key, g->values[i].tensor) == 0;
        }
        ct_atomic_file af;
        if (sd && ok && ct_atomic_open(&af, path, SAVE) == 0) {
            uint64_t n = len;
            ok = ct_atomic_write(&af, CTM_MAGIC, 8) && ct_atomic_write(&af, &n, 8) &&
                 ct_atomic_write(&af, json, len) && ct_safetensors_write(&af, sd, NULL);
            rc = ct_atomic_commit(&af, ok);
        } else if (!ok && !ct_last_error()) {
            ct_error(SAVE ": out of memory");
        }
    }
    free(json);
    return rc;
}

/* ---- reading ---- */

typedef struct {
    const char *where; /* the path, or "buffer" */
    ct_graph *g;
    const ct_state_dict *sd;
} reader;

static bool bad(const reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(const reader *r, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ct_error(LOAD ": %s: %s", r->where, msg);
    return false;
}

/* An integer in [lo, hi] into *out. */
static bool get_int(const json_value *v, int64_t lo, int64_t hi, int64_t *out) {
    if (!v || v->kind != JSON_NUMBER || !v->is_integer || v->integer < lo || v->integer > hi) return false;
    *out = v->integer;
    return true;
}

static bool get_float(const json_value *v, double *out) {
    if (v && v->kind == JSON_NUMBER) {
        *out = v->number;
        return true;
    }
    if (!v || v->kind != JSON_STRING) return false;
    if (!strcmp(v->string, "inf")) *out = INFINITY;
    else if (!strcmp(v->string, "-inf")) *out = -INFINITY;
    else if (!strcmp(v->string, "nan")) *out = NAN;
    else return false;
    return true;
}

static bool get_dtype(const json_value *v, ct_dtype *out) {
    for (int d = 1; v && v->kind == JSON_STRING && d < CT_NUM_DTYPES; d++)
        if (!strcmp(v->string, ct_dtype_name((ct_dtype)d))) {
            *out = (ct_dtype)d;
            return true;
        }
    return false;
}

static const json_value *array(const json_value *v, size_t max) {
    return v && v->kind == JSON_ARRAY && v->len <= max ? v : NULL;
}

static bool read_value(reader *r, const json_value *v, int id) {
    const json_value *kind = json_get(v, "kind"), *name = json_get(v, "name");
    const json_value *shape = array(json_get(v, "shape"), CT_MAX_DIMS), *dyn = json_get(v, "dynamic");
    int k = -1;
    for (int i = 0; kind && kind->kind == JSON_STRING && i < 5; i++)
        if (!strcmp(kind->string, KINDS[i])) k = i;
    ct_dtype dtype;
    if (v->kind != JSON_OBJECT || k < 0 || !shape || !get_dtype(json_get(v, "dtype"), &dtype) ||
        (name && name->kind != JSON_STRING && name->kind != JSON_NULL))
        return bad(r, "value %d is not {kind, name, dtype, shape} of known kind and dtype", id);
    int64_t sizes[CT_MAX_DIMS];
    for (size_t d = 0; d < shape->len; d++)
        if (!get_int(&shape->items[d], 0, INT64_MAX / 2, &sizes[d]))
            return bad(r, "value %d: shape entry %zu is not a size", id, d);
    ct_tensor *t = NULL;
    if (k == CT_GRAPH_PARAM || k == CT_GRAPH_BUFFER || k == CT_GRAPH_CONST) {
        const json_value *key = json_get(v, "tensor");
        if (!key || key->kind != JSON_STRING) return bad(r, "value %d (%s) names no tensor", id, KINDS[k]);
        t = ct_state_dict_get(r->sd, key->string);
        if (!t) return bad(r, "value %d: tensor '%s' is not in the file's weights", id, key->string);
        ct_shape s = ct_shape_of(t);
        if (ct_dtype_of(t) != dtype || s.ndim != (int)shape->len ||
            memcmp(s.d, sizes, sizeof(int64_t) * shape->len))
            return bad(r, "value %d: tensor '%s' is not of the dtype and shape the graph declares", id,
                       key->string);
    }
    const char *nm = name && name->kind == JSON_STRING ? name->string : NULL;
    if (graph_add_value(r->g, LOAD, (ct_graph_value_kind)k, nm, dtype, (int)shape->len, sizes, t) < 0)
        return false;
    if (dyn && !array(dyn, CT_MAX_DIMS)) return bad(r, "value %d: dynamic is not a list of dims", id);
    for (size_t i = 0; dyn && i < dyn->len; i++) {
        int64_t d;
        if (!get_int(&dyn->items[i], 0, (int64_t)shape->len - 1, &d))
            return bad(r, "value %d: dynamic dim is not one of its dims", id);
        r->g->values[id].dynamic[d] = true;
    }
    return true;
}

/* Ids of a list: each in [-1 or 0, n_values). */
static bool read_ids(const reader *r, const json_value *v, bool absent_ok, int *out, int *n, const char *what) {
    if (!array(v, MAX_ITEMS)) return bad(r, "%s is not a list of value ids", what);
    for (size_t i = 0; i < v->len; i++) {
        int64_t id;
        if (!get_int(&v->items[i], absent_ok ? -1 : 0, r->g->n_values - 1, &id))
            return bad(r, "%s: entry %zu is not a value id (the graph has %d values)", what, i, r->g->n_values);
        out[i] = (int)id;
    }
    *n = (int)v->len;
    return true;
}

/* v as an attribute of kind a (the schema's) into *x, lists into storage the caller frees. */
static bool read_attr(const reader *r, const json_value *v, const ct_schema_arg *a, ct_value *x,
                      void **list, int node) {
    *x = (ct_value){.kind = a->kind};
    bool none_ok = a->optional || (a->default_value && !strcmp(a->default_value, "None")) ||
                   a->kind == CT_ARG_GENERATOR;
    if (!v) return bad(r, "node %d: attribute %s is missing", node, a->name);
    if (v->kind == JSON_NULL) {
        x->none = true;
        return none_ok || bad(r, "node %d: attribute %s (%s) cannot be None", node, a->name, a->type);
    }
    bool ok = false;
    switch (a->kind) {
    case CT_ARG_INT: ok = get_int(v, INT64_MIN, INT64_MAX, &x->i); break;
    case CT_ARG_FLOAT:
    case CT_ARG_SCALAR: ok = get_float(v, &x->f); break;
    case CT_ARG_BOOL: ok = v->kind == JSON_BOOL && ((x->b = v->boolean), true); break;
    case CT_ARG_DTYPE: ok = get_dtype(v, &x->dtype); break;
    case CT_ARG_STR: ok = v->kind == JSON_STRING && ((x->s = v->string), true); break;
    case CT_ARG_DEVICE:
        ok = v->kind == JSON_STRING && (!strcmp(v->string, "cpu") || !strcmp(v->string, "meta"));
        if (ok) x->device = !strcmp(v->string, "cpu") ? CT_CPU : CT_META;
        break;
    case CT_ARG_INT_LIST:
    case CT_ARG_FLOAT_LIST:
    case CT_ARG_BOOL_LIST: {
        if (!array(v, MAX_ITEMS)) break;
        size_t el = a->kind == CT_ARG_INT_LIST ? sizeof(int64_t) : a->kind == CT_ARG_FLOAT_LIST ? sizeof(double) : sizeof(bool);
        char *p = ct_malloc(el * (v->len + 1));
        if (!p) return bad(r, "out of memory");
        *list = p;
        ok = true;
        for (size_t e = 0; ok && e < v->len; e++) {
            if (a->kind == CT_ARG_INT_LIST) ok = get_int(&v->items[e], INT64_MIN, INT64_MAX, (int64_t *)p + e);
            else if (a->kind == CT_ARG_FLOAT_LIST) ok = get_float(&v->items[e], (double *)p + e);
            else ok = v->items[e].kind == JSON_BOOL && ((((bool *)p)[e] = v->items[e].boolean), true);
        }
        if (a->kind == CT_ARG_INT_LIST) x->ints = (typeof(x->ints)){(int)v->len, (const int64_t *)p};
        else if (a->kind == CT_ARG_FLOAT_LIST) x->floats = (typeof(x->floats)){(int)v->len, (const double *)p};
        else x->bools = (typeof(x->bools)){(int)v->len, (const bool *)p};
        break;
    }
    default: break; /* a generator is always None */
    }
    return ok || bad(r, "node %d: attribute %s is not a value of type %s", node, a->name, a->type);
}

static bool has_list(int n, const ct_schema_arg *a) {
    for (int i = 0; i < n; i++)
        if (a[i].kind == CT_ARG_TENSOR_LIST) return true;
    return false;
}

/* Node i; defined[] marks the values that exist before it runs. */
static bool read_node(reader *r, const json_value *v, int i, bool *defined) {
    const json_value *op = json_get(v, "op"), *attrs = json_get(v, "attrs");
    if (v->kind != JSON_OBJECT || !op || op->kind != JSON_STRING || !attrs || attrs->kind != JSON_OBJECT)
        return bad(r, "node %d is not {op, inputs, outputs, attrs}", i);
    const ct_schema *s = NULL;
    for (int k = 0; k < ct_num_ops() && !s; k++)
        if (!strcmp(ct_op_schema(k)->name, op->string)) s = ct_op_schema(k);
    if (!s) return bad(r, "node %d: unknown op '%s' (not in this ctorch's op table; a newer ctorch may have written the file)", i, op->string);
    const json_value *jin = json_get(v, "inputs"), *jout = json_get(v, "outputs");
    int n_in, n_out;
    size_t cap = (jin && jin->kind == JSON_ARRAY ? jin->len : 0) + (jout && jout->kind == JSON_ARRAY ? jout->len : 0) + 1;
    int *ids = ct_malloc(sizeof(int) * cap);
    if (!ids) return bad(r, "out of memory");
    bool ok = read_ids(r, jin, true, ids, &n_in, "node inputs") && read_ids(r, jout, true, ids + n_in, &n_out, "node outputs");
    if (ok && ((!has_list(s->n_inputs, s->inputs) && n_in != s->n_inputs) ||
               (!has_list(s->n_outputs, s->outputs) && n_out != s->n_outputs)))
        ok = bad(r, "node %d: %s takes %d inputs and gives %d outputs (the node has %d and %d)", i,
                 s->name, s->n_inputs, s->n_outputs, n_in, n_out);
    for (int k = 0; ok && k < n_in; k++)
        if (ids[k] >= 0 && !defined[ids[k]])
            ok = bad(r, "node %d (%s): input %d, value %d, is not computed before it", i, s->name, k, ids[k]);
    for (int k = 0; ok && k < n_out; k++) {
        int id = ids[n_in + k];
        if (id >= 0 && (defined[id] || r->g->values[id].kind != CT_GRAPH_VALUE))
            ok = bad(r, "node %d (%s): output %d, value %d, is not a fresh node output", i, s->name, k, id);
        else if (id >= 0) defined[id] = true;
    }
    ct_value vals[s->n_attrs + 1];
    void *lists[s->n_attrs + 1];
    memset(lists, 0, sizeof lists);
    for (int a = 0; ok && a < s->n_attrs; a++) ok = read_attr(r, json_get(attrs, s->attrs[a].name), &s->attrs[a], &vals[a], &lists[a], i);
    int node = ok ? graph_add_node(r->g, LOAD, s, n_in, ids, n_out, ids + n_in, vals) : -1;
    for (int a = 0; a < s->n_attrs; a++) free(lists[a]);
    free(ids);
    if (node < 0) return false;
    const json_value *sym = json_get(v, "sym");
    if (sym && !array(sym, MAX_ITEMS)) return bad(r, "node %d: sym is not a list", i);
    for (size_t k = 0; sym && k < sym->len; k++) {
        const json_value *e = &sym->items[k];
        int64_t at, en, dy, sl;
        if (!array(e, 4) || e->len != 4 || !get_int(&e->items[0], 0, s->n_attrs - 1, &at) ||
            !get_int(&e->items[2], 0, r->g->n_dyn - 1, &dy) || !get_int(&e->items[3], INT64_MIN / 4, INT64_MAX / 4, &sl))
            return bad(r, "node %d: sym entry %zu is not [attr, entry, dynamic dim, slope]", i, k);
        const ct_value *x = &r->g->nodes[node].attrs[at];
        int64_t n = x->kind == CT_ARG_INT ? 1 : x->kind == CT_ARG_INT_LIST && !x->none ? x->ints.n : 0;
        if (!get_int(&e->items[1], 0, n - 1, &en) || x->none)
            return bad(r, "node %d: sym entry %zu names no integer of the node's attributes", i, k);
        if (!graph_add_sym(r->g, node, (graph_sym){(int)at, (int)en, (int)dy, sl})) return bad(r, "out of memory");
    }
    return true;
}

static bool read_graph(reader *r, const json_value *root) {
    const json_value *fmt = json_get(root, "format"), *values = array(json_get(root, "values"), MAX_ITEMS);
    const json_value *nodes = array(json_get(root, "nodes"), MAX_ITEMS), *dyn = array(json_get(root, "dynamic"), MAX_ITEMS);
    const json_value *names = json_get(root, "output_names");
    int64_t version;
    if (!fmt || fmt->kind != JSON_STRING || strcmp(fmt->string, "ctorch.ctm"))
        return bad(r, "not a ctorch graph (format is not \"ctorch.ctm\")");
    if (!get_int(json_get(root, "version"), 1, INT64_MAX, &version)) return bad(r, "no format version");
    if (version > CTM_VERSION)
        return bad(r, "format version %" PRId64 " is newer than this ctorch reads (up to %d): load it with a newer ctorch",
                   version, CTM_VERSION);
    if (!values || !nodes || !dyn) return bad(r, "values, nodes and dynamic must be lists");
    for (size_t i = 0; i < values->len; i++)
        if (!read_value(r, &values->items[i], (int)i)) return false;
    int n_values = r->g->n_values;
    int *in = ct_malloc(sizeof(int) * (size_t)(n_values + 1)), *out = NULL;
    bool *defined = ct_calloc((size_t)n_values + 1, sizeof(bool));
    const json_value *jin = json_get(root, "inputs"), *jout = json_get(root, "outputs");
    int n_in = 0, n_out = 0;
    bool ok = in && defined && jin && jin->kind == JSON_ARRAY && jin->len <= (size_t)n_values &&
              jout && jout->kind == JSON_ARRAY && (out = ct_malloc(sizeof(int) * (jout->len + 1)));
    if (!ok) ok = bad(r, "inputs and outputs must be lists of value ids");
    ok = ok && read_ids(r, jin, false, in, &n_in, "inputs") && read_ids(r, jout, false, out, &n_out, "outputs");
    for (int i = 0; ok && i < n_values; i++) defined[i] = r->g->values[i].kind != CT_GRAPH_VALUE &&
                                                         r->g->values[i].kind != CT_GRAPH_INPUT;
    for (int i = 0; ok && i < n_in; i++) {
        if (r->g->values[in[i]].kind != CT_GRAPH_INPUT || defined[in[i]])
            ok = bad(r, "input %d: value %d is not an input (or is listed twice)", i, in[i]);
        else defined[in[i]] = true;
    }
    graph_dyn dd[dyn->len + 1];
    for (size_t j = 0; ok && j < dyn->len; j++) {
        int64_t a, d, s;
        const json_value *e = &dyn->items[j];
        ok = get_int(json_get(e, "input"), 0, n_in - 1, &a) &&
             get_int(json_get(e, "dim"), 0, r->g->values[in[a]].ndim - 1, &d) &&
             get_int(json_get(e, "size"), 1, INT64_MAX / 4, &s) && r->g->values[in[a]].sizes[d] == s;
        if (!ok) ok = bad(r, "dynamic dim %zu is not {input, dim, size} of a dim of an input", j);
        else dd[j] = (graph_dyn){(int)a, (int)d, s};
    }
    ok = ok && graph_set_dyn(r->g, LOAD, (int)dyn->len, dd);
    for (size_t i = 0; ok && i < nodes->len; i++) ok = read_node(r, &nodes->items[i], (int)i, defined);
    for (int i = 0; ok && i < n_out; i++)
        if (!defined[out[i]]) ok = bad(r, "output %d: value %d is never computed", i, out[i]);
    const char *onames[n_out + 1];
    char buf[n_out + 1][32];
    if (ok && names && !(names->kind == JSON_ARRAY && names->len == (size_t)n_out))
        ok = bad(r, "output_names must be one string per output");
    for (int i = 0; ok && i < n_out; i++) {
        snprintf(buf[i], sizeof buf[i], "output_%d", i);
        const json_value *nm = names ? &names->items[i] : NULL;
        onames[i] = nm && nm->kind == JSON_STRING ? nm->string : buf[i];
    }
    ok = ok && graph_set_io(r->g, LOAD, n_in, in, n_out, out, onames);
    free(in);
    free(out);
    free(defined);
    return ok;
}

static ct_graph *graph_from_buffer(const char *where, const unsigned char *data, size_t size) {
    reader r = {.where = where};
    uint64_t n;
    if (size < 16 || memcmp(data, CTM_MAGIC, 8)) {
        bad(&r, "not a .ctm file (no \"CTMODEL\" magic)");
        return NULL;
    }
    memcpy(&n, data + 8, 8);
    if (n > size - 16) {
        bad(&r, "the graph's length (%" PRIu64 " bytes) runs past the end of the file", n);
        return NULL;
    }
    char err[256];
    json_value *root = json_parse((const char *)data + 16, (size_t)n, err, sizeof err);
    if (!root) {
        bad(&r, "the graph: %s", err);
        return NULL;
    }
    ct_graph *g = NULL;
    CT_SCOPE {
        r.sd = ct_safetensors_from_buffer(data + 16 + n, size - 16 - n, (ct_load_file_options){0});
        if (!r.sd) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", ct_last_error() ? ct_last_error() : "");
            bad(&r, "the weights: %s", msg);
        }
        r.g = r.sd ? graph_new(LOAD) : NULL;
        if (r.g && root->kind == JSON_OBJECT && read_graph(&r, root)) g = ct_keep(r.g);
        else if (r.g && root->kind != JSON_OBJECT) bad(&r, "the graph is not a JSON object");
    }
    json_free(root);
    return g;
}

ct_graph *ct_graph_load_buffer(const void *data, size_t size) {
    if (!data) {
        ct_error(LOAD ": data is NULL");
        return NULL;
    }
    return graph_from_buffer("buffer", data, size);
}

ct_graph *ct_graph_load(const char *path) {
    if (!path) {
        ct_error(LOAD ": path is NULL");
        return NULL;
    }
    size_t size;
    unsigned char *data = ct_read_file(LOAD, path, &size);
    if (!data) return NULL;
    ct_graph *g = graph_from_buffer(path, data, size);
    free(data);
    return g;
}
