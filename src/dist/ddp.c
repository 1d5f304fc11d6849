/* DistributedDataParallel (torch.nn.parallel.DistributedDataParallel) and its reducer.
 *
 * The wrapper is a module "DistributedDataParallel" whose child "module" is the model.
 * At construction every rank describes its parameters and buffers (names, dtypes,
 * shapes) and the descriptions are all-gathered, so a mismatch fails on every rank
 * with the same message (never a hang in a later collective); then rank 0's values
 * are broadcast.
 *
 * The reducer follows PyTorch's (torch/csrc/distributed/c10d/reducer.cpp): the
 * parameters that require grad, in reverse registration order (roughly the order
 * backward produces their gradients), are packed into buckets, one flat buffer each
 * (one dtype per bucket; the first capped at 1 MiB so that communication starts
 * early, the others at bucket_cap_mb).  A forward in training mode with grad enabled
 * prepares a backward; each parameter's post-accumulate-grad hook copies its .grad
 * into its slot, and a bucket whose slots are all filled is all-reduced
 * asynchronously, buckets strictly in index order (MPI matches collectives by order,
 * so every rank starts them in the same order whatever order the hooks ran in).
 * When the last bucket has started, a callback queued to the end of the backward
 * waits for them all, divides by the world size and copies the results back into
 * the .grads.  A backward that leaves a bucket incomplete (a parameter got no
 * gradient) makes the next forward fail with PyTorch's error, unless
 * find_unused_parameters: then the forward walks the graph from its outputs and the
 * parameters it does not reach are filled in (their .grad, or zeros) at the
 * backward's first hook; a parameter that no rank gave a gradient keeps its .grad. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctorch.h"
#include "ctorch/distributed.h"
#include "autograd/node.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "core/tensor_impl.h"

#define DDP_MAGIC 0x44445031u                   /* "DDP1": the state is a ddp_state */
#define DEFAULT_FIRST_BUCKET_BYTES (1 << 20) /* PyTorch's _DEFAULT_FIRST_BUCKET_BYTES */

typedef struct ddp_state ddp_state;

/* A parameter the reducer averages (one that requires grad). */
typedef struct {
    ddp_state *ddp;
    ct_tensor *param; /* borrowed: the model owns it */
    char *name;       /* its dotted name in the model */
    int bucket;
    ct_tensor *slot;  /* owned: its part of the bucket's buffer, shaped like it */
    int hook;         /* its post-accumulate-grad hook */
    bool ready;       /* its slot is filled in this backward */
    bool has_grad;    /* ... with a gradient (else zeros: it got none on this rank) */
    bool reached;     /* find_unused_parameters: the forward's outputs depend on it */
} ddp_param;

typedef struct {
    ct_tensor *flat; /* owned: the slots of its parameters, contiguous */
    int size;        /* how many parameters */
    int pending;     /* of which not ready yet in this backward */
    ct_work *work;   /* its all-reduce, while running */
} ddp_bucket;

struct ddp_state {
    unsigned magic;
    ct_module *model; /* borrowed: the child "module" */
    ct_process_group *group;
    int rank, world;
    bool broadcast_buffers, find_unused;
    ddp_param *params; /* in registration order (PyTorch's parameter indices) */
    int n_params;
    ddp_bucket *buckets;
    int n_buckets;
    int next_bucket;       /* the next bucket to start */
    bool expect_hooks;     /* a forward prepared the next backward */
    bool require_finalize; /* a slot was filled since the last finished reduction */
    bool marked_unused;    /* the unreached parameters are filled in this backward */
    bool no_sync;
    double t_prepared; /* when the forward prepared the backward */
    ct_ddp_stats stats;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const ct_module_class DDP_CLASS;

/* m's state, or NULL with an error naming fn when m is not a DDP module. */
static ddp_state *ddp_of(const char *fn, ct_module *m) {
    if (!m) return NULL;
    if (strcmp(ct_module_type(m), DDP_CLASS.name) ||
        ((ddp_state *)ct_module_state(m))->magic != DDP_MAGIC) {
        ct_error("%s: expected a DistributedDataParallel module (made by ct_ddp), got %s", fn,
                 ct_module_type(m));
        return NULL;
    }
    return ct_module_state(m);
}

static ct_dist_options group_options(const ddp_state *s) {
    return (ct_dist_options){.group = s->group};
}

/* ---- construction: the same model everywhere --------------------------------- */

typedef struct {
    char *text;
    size_t len, cap;
} strbuf;

static bool append(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool append(strbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->text ? b->text + b->len : NULL, b->text ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return false;
        if (b->text && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return true;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
        char *p = ct_realloc(b->text, cap);
        if (!p) {
            ct_error("ct_ddp: out of memory");
            return false;
        }
        b->text = p;
        b->cap = cap;
    }
}

/* One line per parameter and buffer: "parameter fc.weight float32 [10, 32]\n". */
static bool describe(strbuf *b, const char *kind, int n, const char **names, ct_tensor **ts) {
    for (int i = 0; i < n; i++) {
        char shape[CT_SHAPE_STR_MAX];
        ct_shape sh = ct_shape_of(ts[i]);
        if (!append(b, "%s %s %s %s%s\n", kind, names[i], ct_dtype_name(ct_dtype_of(ts[i])),
                    ct_shape_str(sh.ndim, sh.d, shape),
                    strcmp(kind, "parameter") || ct_requires_grad(ts[i]) ? "" : " requires_grad=False"))
            return false;
    }
    return true;
}

/* The message for line i of two descriptions that differ: a parameter's name, dtype
 * or shape on rank r against rank 0's. */
static void report_mismatch(const char *mine, const char *theirs, int r) {
    char kind[16], name[512], dtype[16], shape[CT_SHAPE_STR_MAX];
    char kind0[16], name0[512], dtype0[16], shape0[CT_SHAPE_STR_MAX];
    int a = sscanf(mine, "%15s %511s %15s %255[^\n]", kind, name, dtype, shape);
    int b = sscanf(theirs, "%15s %511s %15s %255[^\n]", kind0, name0, dtype0, shape0);
    if (a != 4 || b != 4 || strcmp(kind, kind0) || strcmp(name, name0)) {
        ct_error("ct_ddp: DDP expects the same model on every rank, but rank %d has %s%s%s where "
                 "rank 0 has %s%s%s", r, a == 4 ? kind : "nothing", a == 4 ? " " : "",
                 a == 4 ? name : "", b == 4 ? kind0 : "nothing", b == 4 ? " " : "", b == 4 ? name0 : "");
    } else if (strcmp(dtype, dtype0)) {
        ct_error("ct_ddp: %s '%s' has dtype %s on rank %d but %s on rank 0", kind, name, dtype, r, dtype0);
    } else {
        ct_error("ct_ddp: %s '%s' has shape %s on rank %d but %s on rank 0", kind, name, shape, r, shape0);
    }
}

/* Every rank's description against rank 0's: 0, or -1 with the same error on every
 * rank (the first rank that differs, at its first differing line). */
static int verify_across_ranks(const ddp_state *s, const strbuf *desc) {
    int rc = -1;
    CT_SCOPE {
        int64_t len = (int64_t)desc->len + 1;
        ct_tensor *n = ct_tensor_from(&len, CT_I64, CT_SHAPE(1));
        if (!n || ct_dist_all_reduce_with(n, (ct_dist_options){.group = s->group, .op = CT_DIST_MAX}))
            break;
        int64_t max_len = (int64_t)ct_item(n);
        ct_tensor *mine = ct_zeros(CT_SHAPE(max_len), .dtype = CT_U8);
        ct_tensor *all = ct_empty(CT_SHAPE((int64_t)s->world * max_len), .dtype = CT_U8);
        if (!mine || !all) break;
        memcpy(ct_data_ptr(mine), desc->text, desc->len);
        if (ct_dist_all_gather_into_tensor_with(all, mine, group_options(s))) break;
        const char *texts = ct_data_ptr(all);
        rc = 0;
        for (int r = 1; r < s->world && rc == 0; r++) {
            const char *t = texts + (size_t)r * (size_t)max_len, *t0 = texts;
            if (!strcmp(t, t0)) continue;
            while (*t && *t0) { /* to the first differing line */
                const char *e = strchr(t, '\n'), *e0 = strchr(t0, '\n');
                if (e - t != e0 - t0 || memcmp(t, t0, (size_t)(e - t))) break;
                t = e + 1;
                t0 = e0 + 1;
            }
            report_mismatch(t, t0, r);
            rc = -1;
        }
    }
    return rc;
}

/* Rank 0's values of ts into every rank's, one broadcast per dtype (PyTorch's
 * _sync_module_states coalesces them the same way). */
static int broadcast_from_rank0(const ddp_state *s, int n, ct_tensor **ts) {
    int rc = 0;
    CT_NO_GRAD CT_SCOPE {
        for (int dt = 1; dt < CT_NUM_DTYPES && rc == 0; dt++) {
            int k = 0;
            ct_tensor **flat_parts = ct_calloc((size_t)(n ? n : 1), sizeof *flat_parts);
            if (!flat_parts) {
                ct_error("ct_ddp: out of memory");
                rc = -1;
                break;
            }
            for (int i = 0; i < n; i++)
                if ((int)ct_dtype_of(ts[i]) == dt) flat_parts[k++] = ct_reshape(ts[i], CT_SHAPE(-1));
            ct_tensor *flat = k ? ct_cat(k, flat_parts, 0) : NULL;
            free(flat_parts);
            if (!k) continue;
            if (!flat || ct_dist_broadcast_with(flat, group_options(s))) {
                rc = -1;
                break;
            }
            if (s->rank == 0) continue;
            int64_t off = 0;
            for (int i = 0; i < n && rc == 0; i++) {
                if ((int)ct_dtype_of(ts[i]) != dt) continue;
                int64_t numel = ct_numel(ts[i]);
                if (!ct_copy_(ts[i], ct_view(ct_narrow(flat, 0, off, numel), ct_shape_of(ts[i]))))
                    rc = -1;
                off += numel;
            }
        }
    }
    return rc;
}

/* The model's buffers (borrowed), counted in *n; NULL with *n = 0 when it has none. */
static ct_tensor **buffers_of(ct_module *model, int *n) {
    *n = ct_buffers(model, NULL, 0);
    ct_tensor **b = *n ? ct_calloc((size_t)*n, sizeof *b) : NULL;
    if (*n && !b) {
        ct_error("ct_ddp: out of memory");
        *n = -1;
        return NULL;
    }
    if (*n) ct_buffers(model, b, *n);
    return b;
}

static int sync_buffers(const ddp_state *s) {
    int n, rc;
    ct_tensor **b = buffers_of(s->model, &n);
    rc = n < 0 ? -1 : n ? broadcast_from_rank0(s, n, b) : 0;
    free(b);
    return rc;
}

/* ---- the reducer -------------------------------------------------------------- */

static void finalize(void *ctx);

/* Starts the buckets that are complete, in index order, and queues the end of the
 * reduction once the last has started.  False with an error. */
static bool start_ready_buckets(ddp_state *s) {
    while (s->next_bucket < s->n_buckets && s->buckets[s->next_bucket].pending == 0) {
        ddp_bucket *b = &s->buckets[s->next_bucket++];
        if (s->world > 1) {
            ct_dist_options o = group_options(s);
            o.work = &b->work;
            if (ct_dist_all_reduce_with(b->flat, o)) return false;
        }
        s->stats.buckets++;
        s->stats.bytes += ct_numel(b->flat) * (int64_t)ct_dtype_size(ct_dtype_of(b->flat));
    }
    if (s->next_bucket == s->n_buckets) return ct_autograd_queue_callback(finalize, s) == 0;
    return true;
}

/* Fills p's slot with its .grad (zeros when it has none). */
static bool mark_ready(ddp_param *p) {
    ddp_state *s = p->ddp;
    if (p->ready) {
        ct_error("ct_ddp: Expected to mark a variable ready only once. This error is caused by one "
                 "of the following reasons: 1) Use of a module parameter outside the `forward` "
                 "function. Please make sure model parameters are not shared across multiple "
                 "concurrent forward-backward passes. or try to use _set_static_graph() as a "
                 "workaround if this module graph does not change during training loop.2) Reused "
                 "parameters in multiple reentrant backward passes. For example, if you use "
                 "multiple `checkpoint` functions to wrap the same part of your model, it would "
                 "result in the same set of parameters been used by different reentrant backward "
                 "passes multiple times, and hence marking a variable ready multiple times. DDP "
                 "does not support such use cases in default. (parameter '%s')", p->name);
        return false;
    }
    p->ready = true;
    s->require_finalize = true;
    ct_tensor *g = ct_grad(p->param);
    p->has_grad = g != NULL;
    bool ok = true;
    CT_NO_GRAD CT_SCOPE ok = (g ? ct_copy_(p->slot, g) : ct_zero_(p->slot)) != NULL;
    if (!ok) return false;
    s->buckets[p->bucket].pending--;
    return start_ready_buckets(s);
}

/* The post-accumulate-grad hook of every reduced parameter.  Errors reach the
 * backward through the error count (ct_hooks_run_post_accumulate). */
static void on_grad_ready(ct_tensor *leaf, void *ctx) {
    (void)leaf;
    ddp_param *p = ctx;
    ddp_state *s = p->ddp;
    if (!s->expect_hooks) return; /* no_sync, eval, or the reduction is done */
    if (s->find_unused && !s->marked_unused) {
        s->marked_unused = true;
        for (int i = 0; i < s->n_params; i++)
            if (!s->params[i].reached && !s->params[i].ready && !mark_ready(&s->params[i])) return;
    }
    mark_ready(p);
}

/* With find_unused_parameters, the parameters no rank gave a gradient: used[i] is 0
 * after a MAX over the ranks.  NULL when not needed (every slot counts). */
static int32_t *globally_used(ddp_state *s, double *waited) {
    if (!s->find_unused) return NULL;
    int32_t *used = ct_calloc((size_t)s->n_params, sizeof *used);
    if (!used) {
        ct_error("ct_ddp: out of memory");
        return NULL;
    }
    for (int i = 0; i < s->n_params; i++) used[i] = s->params[i].has_grad;
    if (s->world == 1) return used;
    bool ok = false;
    CT_SCOPE {
        ct_tensor *t = ct_tensor_from(used, CT_I32, CT_SHAPE(s->n_params));
        double t0 = now();
        ok = t && ct_dist_all_reduce_with(t, (ct_dist_options){.group = s->group, .op = CT_DIST_MAX}) == 0;
        *waited += now() - t0;
        if (ok) memcpy(used, ct_data_ptr(t), (size_t)s->n_params * sizeof *used);
    }
    if (!ok) {
        free(used);
        return NULL;
    }
    return used;
}

/* Waits for the buckets and frees their work (after an error too). */
static int wait_buckets(ddp_state *s, double *waited) {
    int rc = 0;
    for (int i = 0; i < s->n_buckets; i++) {
        ddp_bucket *b = &s->buckets[i];
        if (!b->work) continue;
        double t0 = now();
        if (rc == 0 && ct_work_wait(b->work)) rc = -1;
        ct_work_free(b->work);
        *waited += now() - t0;
        b->work = NULL;
    }
    return rc;
}

/* The queued end of a synchronised backward: averages, then writes the .grads. */
static void finalize(void *ctx) {
    ddp_state *s = ctx;
    double waited = 0;
    s->expect_hooks = false;
    s->require_finalize = false;
    if (wait_buckets(s, &waited)) return;
    bool ok = true;
    int32_t *used = NULL;
    if (s->find_unused && !(used = globally_used(s, &waited))) return;
    CT_NO_GRAD CT_SCOPE {
        for (int i = 0; ok && s->world > 1 && i < s->n_buckets; i++)
            ok = ct_mul_scalar_(s->buckets[i].flat, 1.0 / s->world) != NULL; /* as PyTorch */
        for (int i = 0; ok && i < s->n_params; i++) {
            ddp_param *p = &s->params[i];
            if (used && !used[i]) continue; /* no rank had a gradient: .grad stays as it is */
            ct_tensor *g = ct_grad(p->param);
            ok = g ? ct_copy_(g, p->slot) != NULL : ct_set_grad(p->param, ct_clone(p->slot)) == 0;
        }
    }
    free(used);
    if (!ok) return;
    s->stats.steps++;
    s->stats.comm_wait_s += waited;
    s->stats.backward_s += now() - s->t_prepared;
}

/* ---- find_unused_parameters: what the forward's graph reaches --------------- */

/* A set of node pointers (open addressing). */
typedef struct {
    ct_node **slots;
    size_t cap, len;
} node_set;

static size_t hash_ptr(const void *p) {
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* Adds n: 1 when new, 0 when present, -1 when out of memory. */
static int node_set_add(node_set *s, ct_node *n) {
    if (2 * (s->len + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        ct_node **slots = ct_calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t j = hash_ptr(s->slots[i]) & (cap - 1);
            while (slots[j]) j = (j + 1) & (cap - 1);
            slots[j] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t j = hash_ptr(n) & (s->cap - 1);
    for (; s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == n) return 0;
    s->slots[j] = n;
    s->len++;
    return 1;
}

static bool node_set_has(const node_set *s, const ct_node *n) {
    if (!s->cap) return false;
    for (size_t j = hash_ptr(n) & (s->cap - 1); s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == n) return true;
    return false;
}

/* Sets each parameter's reached: whether the graph of outputs leads to its
 * AccumulateGrad node. */
static bool search_unused(ddp_state *s, int n_out, ct_tensor *const *out) {
    node_set seen = {0};
    ct_node **stack = NULL;
    size_t sp = 0, cap = 0;
    bool ok = true;
    for (int i = 0; ok && i < n_out; i++) {
        ct_node *root = out[i] ? ct_grad_fn(out[i]) : NULL;
        if (!root) continue;
        int added = node_set_add(&seen, root);
        ok = added >= 0;
        if (added != 1) continue;
        if (sp == cap) {
            cap = cap ? 2 * cap : 64;
            ct_node **p = ct_realloc(stack, cap * sizeof *p);
            if (!(ok = p != NULL)) break;
            stack = p;
        }
        stack[sp++] = root;
        while (ok && sp) {
            ct_node *n = stack[--sp];
            for (int k = 0; ok && k < n->n_in; k++) {
                ct_node *next = n->next[k].fn;
                if (!next) continue;
                added = node_set_add(&seen, next);
                if (added < 0) ok = false;
                if (added != 1) continue;
                if (sp == cap) {
                    cap = cap ? 2 * cap : 64;
                    ct_node **p = ct_realloc(stack, cap * sizeof *p);
                    if (!(ok = p != NULL)) break;
                    stack = p;
                }
                stack[sp++] = next;
            }
        }
    }
    for (int i = 0; ok && i < s->n_params; i++) {
        ct_node *acc = s->params[i].param->grad_acc;
        s->params[i].reached = acc && node_set_has(&seen, acc);
    }
    free(stack);
    free(seen.slots);
    if (!ok) ct_error("ct_ddp: out of memory searching the graph for unused parameters");
    return ok;
}

/* PyTorch's Reducer::ensure_prior_reduction_finished. */
static void report_unfinished(const ddp_state *s) {
    strbuf idx = {0}, names = {0};
    bool ok = true;
    for (int i = 0; ok && i < s->n_params; i++) {
        if (s->params[i].ready) continue;
        ok = append(&idx, "%s%d", idx.len ? " " : "", i) &&
             append(&names, "%s%s", names.len ? ", " : "", s->params[i].name);
    }
    const char *hint =
        s->find_unused
            ? "Since `find_unused_parameters=True` is enabled, this likely  means that not all "
              "`forward` outputs participate in computing loss. You can fix this by "
            : "You can enable unused parameter detection by passing the keyword argument "
              "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and "
              "by \n";
    if (ok)
        ct_error("ct_ddp: Expected to have finished reduction in the prior iteration before "
                 "starting a new one. This error indicates that your module has parameters that "
                 "were not used in producing loss. %smaking sure all `forward` function outputs "
                 "participate in calculating loss. \nIf you already have done the above, then "
                 "the distributed data parallel module wasn't able to locate the output tensors "
                 "in the return value of your module's `forward` function. Please include the "
                 "loss function and the structure of the return value of `forward` of your "
                 "module when reporting this issue (e.g. list, dict, iterable).\nParameter "
                 "indices which did not receive grad for rank %d: %s\nParameters which did not "
                 "receive grad for rank %d: %s",
                 hint, s->rank, idx.text, s->rank, names.text);
    free(idx.text);
    free(names.text);
}

/* Reducer::prepare_for_backward: the next backward synchronises. */
static bool prepare_backward(ddp_state *s, int n_out, ct_tensor *const *out) {
    for (int i = 0; i < s->n_buckets; i++) s->buckets[i].pending = s->buckets[i].size;
    for (int i = 0; i < s->n_params; i++) s->params[i].ready = s->params[i].has_grad = false;
    s->next_bucket = 0;
    s->marked_unused = false;
    if (s->find_unused && !search_unused(s, n_out, out)) return false;
    s->expect_hooks = true;
    s->t_prepared = now();
    return true;
}

/* ---- the module --------------------------------------------------------------- */

static int ddp_forward(ct_module *self, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    ddp_state *s = ct_module_state(self);
    bool grad = ct_is_grad_enabled();
    if (grad && s->require_finalize) {
        report_unfinished(s);
        return -1;
    }
    if (s->broadcast_buffers && s->world > 1 && sync_buffers(s)) return -1;
    int n = ct_forward_multi(s->model, n_in, in, out, max_out);
    if (n < 0) return -1;
    if (grad && !s->no_sync && ct_module_is_training(s->model) &&
        !prepare_backward(s, n < max_out ? n : max_out, out))
        return -1;
    return n;
}

static void ddp_destroy(ct_module *self) {
    ddp_state *s = ct_module_state(self);
    double waited = 0;
    wait_buckets(s, &waited);
    for (int i = 0; i < s->n_params; i++) {
        ddp_param *p = &s->params[i];
        if (p->hook >= 0) ct_remove_hook(p->param, p->hook);
        ct_release(p->slot);
        free(p->name);
    }
    for (int i = 0; i < s->n_buckets; i++) ct_release(s->buckets[i].flat);
    free(s->params);
    free(s->buckets);
}

static void ddp_extra_repr(const ct_module *self, char *buf, size_t size) {
    const ddp_state *s = ct_module_state(self);
    snprintf(buf, size, "world_size=%d, buckets=%d%s", s->world, s->n_buckets,
             s->find_unused ? ", find_unused_parameters=True" : "");
}

static const ct_module_class DDP_CLASS = {
    .name = "DistributedDataParallel",
    .forward_multi = ddp_forward,
    .extra_repr = ddp_extra_repr,
    .destroy = ddp_destroy,
};

/* PyTorch's _compute_bucket_assignment_by_size over the parameters in reverse order:
 * one open bucket per dtype, closed once it holds its limit. */
static bool assign_buckets(ddp_state *s, double cap_mb) {
    int64_t cap = (int64_t)(cap_mb * 1024 * 1024);
    int64_t first = cap < DEFAULT_FIRST_BUCKET_BYTES ? cap : DEFAULT_FIRST_BUCKET_BYTES;
    int open[CT_NUM_DTYPES];
    int64_t bytes[CT_NUM_DTYPES], limit[CT_NUM_DTYPES];
    bool had[CT_NUM_DTYPES] = {0};
    for (int d = 0; d < CT_NUM_DTYPES; d++) open[d] = -1;
    if (!(s->buckets = ct_calloc((size_t)(s->n_params ? s->n_params : 1), sizeof *s->buckets))) {
        ct_error("ct_ddp: out of memory");
        return false;
    }
    for (int i = s->n_params - 1; i >= 0; i--) {
        ddp_param *p = &s->params[i];
        ct_dtype d = ct_dtype_of(p->param);
        if (open[d] < 0) {
            open[d] = s->n_buckets++;
            bytes[d] = 0;
            limit[d] = had[d] ? cap : first;
            had[d] = true;
        }
        p->bucket = open[d];
        s->buckets[open[d]].size++;
        bytes[d] += ct_numel(p->param) * (int64_t)ct_dtype_size(d);
        if (bytes[d] >= limit[d]) open[d] = -1;
    }
    /* The flat buffers, and each parameter's slot: a view of its bucket's. */
    int64_t *fill = ct_calloc((size_t)(s->n_buckets ? s->n_buckets : 1), sizeof *fill);
    if (!fill) {
        ct_error("ct_ddp: out of memory");
        return false;
    }
    for (int i = 0; i < s->n_params; i++) fill[s->params[i].bucket] += ct_numel(s->params[i].param);
    bool ok = true;
    CT_SCOPE {
        for (int b = 0; ok && b < s->n_buckets; b++) {
            const ddp_param *any = NULL;
            for (int i = 0; !any && i < s->n_params; i++)
                if (s->params[i].bucket == b) any = &s->params[i];
            ct_tensor *flat = ct_zeros(CT_SHAPE(fill[b]), .dtype = ct_dtype_of(any->param),
                                       .device = ct_device_of(any->param));
            ok = flat != NULL;
            if (ok) s->buckets[b].flat = ct_retain(flat);
            fill[b] = 0;
        }
        for (int i = s->n_params - 1; ok && i >= 0; i--) {
            ddp_param *p = &s->params[i];
            int64_t numel = ct_numel(p->param);
            ct_tensor *slot = ct_view(ct_narrow(s->buckets[p->bucket].flat, 0, fill[p->bucket], numel),
                                      ct_shape_of(p->param));
            ok = slot != NULL;
            if (ok) p->slot = ct_retain(slot);
            fill[p->bucket] += numel;
        }
    }
    free(fill);
    return ok;
}

/* The reduced parameters (those requiring grad) with their names and hooks. */
static bool collect_params(ddp_state *s, int n, const char **names, ct_tensor **ps) {
    int k = 0;
    for (int i = 0; i < n; i++) k += ct_requires_grad(ps[i]);
    if (!(s->params = ct_calloc((size_t)(k ? k : 1), sizeof *s->params))) {
        ct_error("ct_ddp: out of memory");
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!ct_requires_grad(ps[i])) continue;
        ddp_param *p = &s->params[s->n_params++];
        *p = (ddp_param){.ddp = s, .param = ps[i], .hook = -1, .name = ct_strdup(names[i])};
        if (!p->name) {
            ct_error("ct_ddp: out of memory");
            return false;
        }
    }
    return true;
}

ct_module *ct_ddp_with(ct_module *model, ct_ddp_options o) {
    if (!ct_alive("ct_ddp", 1, model)) return NULL;
    if (!model) return NULL;
    if (o.bucket_cap_mb < 0) {
        ct_error("ct_ddp: bucket_cap_mb must be positive, got %g", o.bucket_cap_mb);
        return NULL;
    }
    ddp_state init = {.magic = DDP_MAGIC, .group = o.group, .broadcast_buffers = o.broadcast_buffers,
                      .find_unused = o.find_unused_parameters};
    if (o.group) {
        init.rank = ct_dist_group_rank(o.group);
        init.world = ct_dist_group_size(o.group);
        if (init.rank < 0) {
            ct_error("ct_ddp: this process is not a member of the group");
            return NULL;
        }
    } else {
        init.rank = ct_dist_rank();
        init.world = ct_dist_world_size();
    }
    /* Check and synchronise before the wrapper adopts the model: on failure the
     * caller still owns it. */
    int n = ct_named_parameters(model, NULL, NULL, 0), nb = ct_named_buffers(model, NULL, NULL, 0);
    const char **names = ct_calloc((size_t)(n + nb + 1), sizeof *names);
    ct_tensor **ts = ct_calloc((size_t)(n + nb + 1), sizeof *ts);
    strbuf desc = {0};
    bool ok = names && ts;
    if (!ok) ct_error("ct_ddp: out of memory");
    if (ok) {
        ct_named_parameters(model, names, ts, n);
        ct_named_buffers(model, names + n, ts + n, nb);
        ok = append(&desc, "%s", "") && describe(&desc, "parameter", n, names, ts) &&
             describe(&desc, "buffer", nb, names + n, ts + n);
    }
    if (ok && init.world > 1)
        ok = verify_across_ranks(&init, &desc) == 0 && broadcast_from_rank0(&init, n + nb, ts) == 0;
    free(desc.text);
    ct_module *ddp = NULL;
    if (ok) ddp = ct_module_new(&DDP_CLASS, sizeof(ddp_state));
    if (ddp) {
        ddp_state *s = ct_module_state(ddp);
        *s = init;
        s->model = ct_module_add(ddp, "module", model);
        ok = s->model && collect_params(s, n, names, ts) &&
             assign_buckets(s, o.bucket_cap_mb > 0 ? o.bucket_cap_mb : 25.0);
        for (int i = 0; ok && i < s->n_params; i++) {
            ddp_param *p = &s->params[i];
            ok = (p->hook = ct_register_post_accumulate_grad_hook(p->param, on_grad_ready, p)) >= 0;
        }
        if (!ok) {
            if (!s->model) s->magic = 0; /* no child: destroy has nothing to undo */
            ct_release(ddp);
            ddp = NULL;
        }
    }
    free(names);
    free(ts);
    return ddp;
}

ct_module *ct_ddp_module(ct_module *ddp) {
    if (!ct_alive("ct_ddp_module", 1, ddp)) return NULL;
    ddp_state *s = ddp_of("ct_ddp_module", ddp);
    return s ? s->model : NULL;
}

ct_ddp_no_sync_guard ct_ddp_no_sync_begin(ct_module *ddp) {
    ct_ddp_no_sync_guard g = {0};
    if (!ct_alive("ct_ddp_no_sync_begin", 1, ddp)) return g;
    ddp_state *s = ddp_of("ct_ddp_no_sync_begin", ddp);
    if (!s) return g; /* the block is skipped: the error says why */
    g = (ct_ddp_no_sync_guard){.ddp = ddp, .prev = s->no_sync, .once = 1};
    s->no_sync = true;
    return g;
}

void ct_ddp_no_sync_end(ct_ddp_no_sync_guard *g) {
    if (!g || !g->ddp) return;
    ddp_state *s = ct_module_state(g->ddp);
    s->no_sync = g->prev;
    g->ddp = NULL;
}

ct_ddp_stats ct_ddp_get_stats(ct_module *ddp, bool reset) {
    ct_ddp_stats st = {0};
    if (!ct_alive("ct_ddp_get_stats", 1, ddp)) return st;
    ddp_state *s = ddp_of("ct_ddp_get_stats", ddp);
    if (!s) return st;
    st = s->stats;
    if (reset) s->stats = (ct_ddp_stats){0};
    return st;
}
