/* DDP's reducer (Note [The reducer], dist/ddp_impl.h): buckets, the gradient hooks,
 * the asynchronous all-reduces started in bucket order, and the callback that ends a
 * synchronised backward. */
#include <stdlib.h>
#include <string.h>

#include "dist/ddp_impl.h"
#include "core/error.h"
#include "core/mem.h"

#define DEFAULT_FIRST_BUCKET_BYTES (1 << 20) /* PyTorch's _DEFAULT_FIRST_BUCKET_BYTES */

static void finalize(void *ctx);

/* Starts the buckets that are complete, in index order, and queues the end of the
 * reduction once the last has started.  False with an error. */
static bool start_ready_buckets(ddp_state *s) {
    while (s->next_bucket < s->n_buckets && s->buckets[s->next_bucket].pending == 0) {
        ddp_bucket *b = &s->buckets[s->next_bucket++];
        if (s->world > 1) {
            ct_dist_options o = ct_ddp_group_options(s);
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
                 "does not support such use cases in default. (parameter '%s')",
                 p->name);
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

/* Errors reach the backward through the error count (ct_hooks_run_post_accumulate). */
void ct_ddp_grad_ready(ct_tensor *leaf, void *ctx) {
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
        double t0 = ct_ddp_now();
        ok = t && ct_dist_all_reduce_with(
                      t, (ct_dist_options){.group = s->group, .op = CT_DIST_MAX}) == 0;
        *waited += ct_ddp_now() - t0;
        ok = ok && ct_copy_to_buffer(t, used, CT_I32, (size_t)s->n_params * sizeof *used) == 0;
    }
    if (!ok) {
        free(used);
        return NULL;
    }
    return used;
}

int ct_ddp_wait_buckets(ddp_state *s, double *waited) {
    int rc = 0;
    for (int i = 0; i < s->n_buckets; i++) {
        ddp_bucket *b = &s->buckets[i];
        if (!b->work) continue;
        double t0 = ct_ddp_now();
        if (rc == 0 && ct_work_wait(b->work)) rc = -1;
        ct_work_free(b->work);
        *waited += ct_ddp_now() - t0;
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
    if (ct_ddp_wait_buckets(s, &waited)) return;
    bool ok = true;
    int32_t *used = NULL;
    if (s->find_unused && !(used = globally_used(s, &waited))) return;
    CT_NO_GRAD CT_SCOPE {
        for (int i = 0; ok && s->world > 1 && i < s->n_buckets; i++)
            ok = ct_mul_scalar_(s->buckets[i].flat, 1.0 / s->world) != NULL; /* PyTorch's factor */
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
    s->stats.backward_s += ct_ddp_now() - s->t_prepared;
}

void ct_ddp_report_unfinished(const ddp_state *s) {
    ct_ddp_strbuf idx = {0}, names = {0};
    bool ok = true;
    for (int i = 0; ok && i < s->n_params; i++) {
        if (s->params[i].ready) continue;
        ok = ct_ddp_append(&idx, "%s%d", idx.len ? " " : "", i) &&
             ct_ddp_append(&names, "%s%s", names.len ? ", " : "", s->params[i].name);
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

bool ct_ddp_prepare_backward(ddp_state *s, int n_out, ct_tensor *const *out) {
    for (int i = 0; i < s->n_buckets; i++) s->buckets[i].pending = s->buckets[i].size;
    for (int i = 0; i < s->n_params; i++) s->params[i].ready = s->params[i].has_grad = false;
    s->next_bucket = 0;
    s->marked_unused = false;
    if (s->find_unused && !ct_ddp_search_unused(s, n_out, out)) return false;
    s->expect_hooks = true;
    s->t_prepared = ct_ddp_now();
    return true;
}

/* PyTorch's _compute_bucket_assignment_by_size over the parameters in reverse order:
 * one open bucket per dtype, closed once it holds its limit. */
bool ct_ddp_assign_buckets(ddp_state *s, double cap_mb) {
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
            ct_tensor *slot =
                ct_view(ct_narrow(s->buckets[p->bucket].flat, 0, fill[p->bucket], numel),
                        ct_shape_of(p->param));
            ok = slot != NULL;
            if (ok) p->slot = ct_retain(slot);
            fill[p->bucket] += numel;
        }
    }
    free(fill);
    return ok;
}
