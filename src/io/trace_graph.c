/* ct_trace (ctorch/jit.h): a module's forward recorded through the record hook into a
 * graph.
 *
 * The recorder maps each tensor it meets to a value id.  A tensor first met as an op's
 * input is a graph input (mapped before the forward), a parameter or buffer of the
 * module (by its state-dict name), or else a constant, captured by value (a copy, so
 * a later in-place change does not reach the graph).  Each op's outputs become new
 * values; an in-place op's output is the same tensor as its input and is mapped again,
 * to the new value, so later readers see the written one.  The recorder holds a
 * reference to every tensor it mapped until the trace ends: a freed temporary's
 * address may be reused by a new tensor, which must not inherit its id.  Ops run by
 * the autograd engine (in_backward) are not part of the forward and are skipped.
 *
 * Dims marked dynamic are traced once more each, with that dim one larger, and the
 * integer attributes that changed get their slope (Note [Dynamic dims] in
 * io/graph_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "core/warn.h"
#include "ctorch/autograd.h"
#include "ctorch/shape.h"
#include "io/graph_impl.h"

#define OP "ct_trace"
#define MAX_OUTPUTS 64

typedef struct {
    ct_graph *g;
    bool failed;
    ct_tensor **keys; /* mapped tensors (one reference each), their value ids */
    int *ids;
    int n, cap;
    int n_params, n_buffers; /* the module's, by state-dict name */
    const char **param_names, **buffer_names;
    ct_tensor **params, **buffers;
} recorder;

static int lookup(const recorder *r, const ct_tensor *t) {
    for (int i = r->n - 1; i >= 0; i--)
        if (r->keys[i] == t) return r->ids[i];
    return -1;
}

static bool map_tensor(recorder *r, ct_tensor *t, int id) {
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 64;
        ct_tensor **k = ct_realloc(r->keys, sizeof *k * (size_t)cap);
        if (k) r->keys = k;
        int *ids = k ? ct_realloc(r->ids, sizeof *ids * (size_t)cap) : NULL;
        if (!ids) {
            ct_error(OP ": out of memory");
            return false;
        }
        r->ids = ids;
        r->cap = cap;
    }
    r->keys[r->n] = ct_retain(t);
    r->ids[r->n++] = id;
    return true;
}

static int add_value(recorder *r, ct_graph_value_kind kind, const char *name, ct_tensor *t, ct_tensor *held) {
    ct_shape s = ct_shape_of(t);
    return graph_add_value(r->g, OP, kind, name, ct_dtype_of(t), s.ndim, s.d, held);
}

static int find(ct_tensor *const *ts, int n, const ct_tensor *t) {
    for (int i = 0; i < n; i++)
        if (ts[i] == t) return i;
    return -1;
}

/* The id of t, first met as an input: a parameter, a buffer or a constant. */
static int value_of(recorder *r, ct_tensor *t) {
    int id = lookup(r, t);
    if (id >= 0) return id;
    int p = find(r->params, r->n_params, t), b = find(r->buffers, r->n_buffers, t);
    if (p >= 0) id = add_value(r, CT_GRAPH_PARAM, r->param_names[p], t, t);
    else if (b >= 0) id = add_value(r, CT_GRAPH_BUFFER, r->buffer_names[b], t, t);
    else {
        CT_SCOPE {
            ct_tensor *c = ct_clone(ct_detach(t));
            id = c ? add_value(r, CT_GRAPH_CONST, NULL, t, c) : -1;
        }
    }
    return id >= 0 && map_tensor(r, t, id) ? id : -1;
}

static void hook(const ct_op_call *c, void *ctx) {
    recorder *r = ctx;
    if (r->failed || c->in_backward) return;
    int ids[c->n_inputs + c->n_outputs + 1];
    for (int i = 0; i < c->n_inputs && !r->failed; i++) {
        ids[i] = c->inputs[i] ? value_of(r, c->inputs[i]) : -1;
        r->failed = c->inputs[i] && ids[i] < 0;
    }
    for (int i = 0; i < c->n_outputs && !r->failed; i++) {
        ct_tensor *t = c->outputs[i];
        int id = t ? add_value(r, CT_GRAPH_VALUE, NULL, t, NULL) : -1;
        r->failed = t && (id < 0 || !map_tensor(r, t, id));
        ids[c->n_inputs + i] = id;
    }
    r->failed = r->failed || graph_add_node(r->g, OP, c->schema, c->n_inputs, ids, c->n_outputs,
                                            ids + c->n_inputs, c->attrs) < 0;
}

static bool collect_state(recorder *r, ct_module *m) {
    r->n_params = ct_named_parameters(m, NULL, NULL, 0);
    r->n_buffers = ct_named_buffers(m, NULL, NULL, 0);
    if (r->n_params < 0 || r->n_buffers < 0) return false;
    r->param_names = ct_calloc((size_t)r->n_params + 1, sizeof(char *));
    r->buffer_names = ct_calloc((size_t)r->n_buffers + 1, sizeof(char *));
    r->params = ct_calloc((size_t)r->n_params + 1, sizeof(ct_tensor *));
    r->buffers = ct_calloc((size_t)r->n_buffers + 1, sizeof(ct_tensor *));
    if (!r->param_names || !r->buffer_names || !r->params || !r->buffers) {
        ct_error(OP ": out of memory");
        return false;
    }
    ct_named_parameters(m, r->param_names, r->params, r->n_params);
    ct_named_buffers(m, r->buffer_names, r->buffers, r->n_buffers);
    return true;
}

static void recorder_free(recorder *r) {
    for (int i = 0; i < r->n; i++) ct_release(r->keys[i]);
    free(r->keys);
    free(r->ids);
    free(r->param_names);
    free(r->buffer_names);
    free(r->params);
    free(r->buffers);
}

/* One forward of m on inputs recorded into a new graph (in the scope); the module's
 * outputs into outs (retained by the scope too), their count into *n_out. */
static ct_graph *record(ct_module *m, ct_tensor *const *inputs, int n_in, const ct_trace_options *o,
                        ct_tensor **outs, int *n_out) {
    recorder r = {.g = graph_new(OP)};
    bool ok = r.g && collect_state(&r, m);
    int in_ids[n_in + 1], out_ids[MAX_OUTPUTS];
    for (int i = 0; i < n_in && ok; i++) {
        char name[32];
        snprintf(name, sizeof name, "input_%d", i);
        int id = add_value(&r, CT_GRAPH_INPUT, o->input_names ? o->input_names[i] : name, inputs[i], NULL);
        ok = id >= 0 && map_tensor(&r, inputs[i], id);
        in_ids[i] = id;
    }
    int n = -1;
    if (ok && ct_trace_push(hook, &r) == 0) {
        CT_NO_GRAD { n = ct_forward_multi(m, n_in, inputs, outs, MAX_OUTPUTS); }
        ct_trace_pop();
    }
    ok = ok && n >= 0 && !r.failed;
    if (ok && n > MAX_OUTPUTS) {
        ct_error(OP ": the module returned %d outputs (at most %d can be traced)", n, MAX_OUTPUTS);
        ok = false;
    }
    const char *names[MAX_OUTPUTS];
    char buf[MAX_OUTPUTS][32];
    for (int i = 0; ok && i < n; i++) {
        int id = value_of(&r, outs[i]);
        ok = id >= 0;
        out_ids[i] = id;
        snprintf(buf[i], sizeof buf[i], "output_%d", i);
        names[i] = o->output_names ? o->output_names[i] : buf[i];
        if (ok && !r.g->values[id].name) {
            char *s = ct_malloc(strlen(names[i]) + 1);
            if (s) r.g->values[id].name = strcpy(s, names[i]);
        }
    }
    ok = ok && graph_set_io(r.g, OP, n_in, in_ids, n, out_ids, names);
    recorder_free(&r);
    *n_out = n;
    return ok ? r.g : NULL;
}

static bool is_int_kind(ct_arg_type k) { return k == CT_ARG_INT || k == CT_ARG_INT_LIST; }

/* Records into g the slopes of the attributes that changed between g and h, a trace
 * with dynamic dim j one larger (Note [Dynamic dims]). */
static bool add_slopes(ct_graph *g, const ct_graph *h, int j, const ct_dynamic_dim *d) {
    if (h->n_nodes != g->n_nodes) {
        ct_error(OP ": the forward ran %d ops at size %lld of input %d's dim %d but %d at size %lld: "
                 "its control flow depends on a dim marked dynamic",
                 g->n_nodes, (long long)g->dyn[j].size, d->input, d->dim, h->n_nodes,
                 (long long)g->dyn[j].size + 1);
        return false;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *a = &g->nodes[i], *b = &h->nodes[i];
        if (a->pub.schema != b->pub.schema) {
            ct_error(OP ": op %d is %s at one size of input %d's dim %d and %s at another: the "
                     "forward's control flow depends on a dim marked dynamic",
                     i, a->pub.schema->name, d->input, d->dim, b->pub.schema->name);
            return false;
        }
        for (int k = 0; k < a->pub.schema->n_attrs; k++) {
            const ct_value *x = &a->attrs[k], *y = &b->attrs[k];
            if (!is_int_kind(x->kind) || x->none || y->none) continue;
            int n = x->kind == CT_ARG_INT ? 1 : x->ints.n;
            if (x->kind == CT_ARG_INT_LIST && y->ints.n != n) continue;
            for (int e = 0; e < n; e++) {
                int64_t v0 = x->kind == CT_ARG_INT ? x->i : x->ints.v[e];
                int64_t v1 = y->kind == CT_ARG_INT ? y->i : y->ints.v[e];
                int64_t s0 = g->dyn[j].size;
                bool scales = v0 % s0 == 0 && v1 - v0 == v0 / s0;
                if (v1 != v0 && !graph_add_sym(g, i, (graph_sym){k, e, j, scales ? 0 : v1 - v0})) {
                    ct_error(OP ": out of memory");
                    return false;
                }
            }
        }
    }
    for (int v = 0; v < g->n_values && v < h->n_values; v++)
        for (int e = 0; e < g->values[v].ndim && e < h->values[v].ndim; e++)
            if (g->values[v].sizes[e] != h->values[v].sizes[e]) g->values[v].dynamic[e] = true;
    return true;
}

/* Whether a and b hold the same bits in the same shape and dtype. */
static bool same_bits(ct_tensor *a, ct_tensor *b) {
    if (ct_dtype_of(a) != ct_dtype_of(b)) return false;
    ct_shape sa = ct_shape_of(a), sb = ct_shape_of(b);
    if (sa.ndim != sb.ndim || memcmp(sa.d, sb.d, sizeof(int64_t) * (size_t)sa.ndim)) return false;
    bool same = false;
    CT_SCOPE {
        ct_tensor *x = ct_contiguous(ct_to(a, .device = CT_CPU)), *y = ct_contiguous(ct_to(b, .device = CT_CPU));
        same = x && y && !memcmp(ct_data_ptr(x), ct_data_ptr(y), (size_t)ct_numel(x) * ct_dtype_size(ct_dtype_of(x)));
    }
    return same;
}

static bool check_outputs(ct_graph *g, ct_tensor *const *inputs, int n_in, ct_tensor **outs, int n_out) {
    ct_tensor *got[MAX_OUTPUTS];
    bool ok = false;
    CT_SCOPE {
        int n = ct_graph_run(g, inputs, n_in, got, MAX_OUTPUTS);
        ok = n == n_out;
        for (int i = 0; ok && i < n; i++) {
            if (!same_bits(got[i], outs[i])) {
                ct_error(OP ": check_trace: output %d of the traced graph differs from the module's "
                         "(the forward does something the trace did not record: a factory, a "
                         "random draw or a change of state)", i);
                ok = false;
            }
        }
        if (n >= 0 && n != n_out && n >= 0)
            ct_error(OP ": check_trace: the graph gave %d outputs, the module %d", n, n_out);
    }
    return ok;
}

static bool check_args(ct_module *m, ct_tensor *const *inputs, int n, const ct_trace_options *o) {
    if (!m || (n > 0 && !inputs) || n < 0) {
        ct_error(OP ": %s", !m ? "module is NULL" : "inputs must be given (n >= 0)");
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!inputs[i]) {
            ct_error(OP ": input %d is NULL", i);
            return false;
        }
    for (int j = 0; j < o->n_dynamic; j++) {
        const ct_dynamic_dim *d = &o->dynamic[j];
        if (d->input < 0 || d->input >= n || d->dim < 0 || d->dim >= ct_ndim(inputs[d->input])) {
            ct_error(OP ": dynamic dim %d names input %d's dim %d, which does not exist", j, d->input, d->dim);
            return false;
        }
    }
    return true;
}

ct_graph *ct_trace_with(ct_module *m, ct_tensor *const *inputs, int n_in, ct_trace_options o) {
    if (!ct_alive(OP, 1, m) || !ct_all_alive(OP, 2, inputs, n_in)) return NULL;
    if (!check_args(m, inputs, n_in, &o)) return NULL;
    if (ct_module_is_training(m))
        ct_warn(OP ": the module is in train mode: the trace records train-mode behaviour "
                "(dropout, batch statistics) and might not generalize; call ct_module_eval first");
    ct_graph *g = NULL;
    CT_SCOPE {
        ct_tensor *outs[MAX_OUTPUTS];
        int n_out;
        unsigned long reads = ct_value_reads();
        g = record(m, inputs, n_in, &o, outs, &n_out);
        if (g && ct_value_reads() != reads)
            ct_warn(OP ": the forward read a tensor's value (ct_item, ct_copy_to_buffer, ...): the "
                    "trace treats it as a constant, so it might not generalize to other inputs");
        graph_dyn dyn[o.n_dynamic + 1];
        for (int j = 0; j < o.n_dynamic; j++)
            dyn[j] = (graph_dyn){o.dynamic[j].input, o.dynamic[j].dim,
                                 ct_size(inputs[o.dynamic[j].input], o.dynamic[j].dim)};
        bool ok = g && graph_set_dyn(g, OP, o.n_dynamic, dyn);
        for (int j = 0; ok && j < o.n_dynamic; j++) {
            const ct_dynamic_dim *d = &o.dynamic[j];
            g->values[g->inputs[d->input]].dynamic[d->dim] = true;
            ct_tensor *more[n_in + 1], *outs2[MAX_OUTPUTS];
            memcpy(more, inputs, sizeof *more * (size_t)n_in);
            ct_tensor *x = inputs[d->input];
            more[d->input] = ct_cat(2, (ct_tensor *[]){x, ct_narrow(x, d->dim, 0, 1)}, d->dim);
            int n2;
            ct_trace_options o2 = o;
            o2.output_names = NULL;
            o2.input_names = NULL;
            ct_graph *h = more[d->input] ? record(m, more, n_in, &o2, outs2, &n2) : NULL;
            ok = h && add_slopes(g, h, j, d);
        }
        ok = ok && (!o.check_trace || check_outputs(g, inputs, n_in, outs, n_out));
        if (ok) ct_keep(g);
        else g = NULL;
    }
    return g;
}
