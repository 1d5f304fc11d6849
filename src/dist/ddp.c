/* DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): a module
 * "DistributedDataParallel" whose child "module" is the model, and its public
 * functions.  Its construction is in ddp_sync.c, its reducer in ddp_reducer.c
 * (dist/ddp_impl.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist/ddp_impl.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"

double ct_ddp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool ct_ddp_append(ct_ddp_strbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n =
            vsnprintf(b->text ? b->text + b->len : NULL, b->text ? b->cap - b->len : 0, fmt, ap);
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

static const ct_module_class DDP_CLASS;

/* m's state, or NULL with an error naming fn when m is not a DDP module. */
static ddp_state *ddp_of(const char *fn, ct_module *m) {
    if (!m) return NULL;
    if (strcmp(ct_module_type(m), DDP_CLASS.name) ||
        ((ddp_state *)ct_module_state(m))->magic != CT_DDP_MAGIC) {
        ct_error("%s: expected a DistributedDataParallel module (made by ct_ddp), got %s", fn,
                 ct_module_type(m));
        return NULL;
    }
    return ct_module_state(m);
}

static int ddp_forward(ct_module *self, int n_in, ct_tensor *const *in, ct_tensor **out,
                       int max_out) {
    ddp_state *s = ct_module_state(self);
    bool grad = ct_is_grad_enabled();
    if (grad && s->require_finalize) {
        ct_ddp_report_unfinished(s);
        return -1;
    }
    if (s->broadcast_buffers && s->world > 1 && ct_ddp_sync_buffers(s)) return -1;
    int n = ct_forward_multi(s->model, n_in, in, out, max_out);
    if (n < 0) return -1;
    if (grad && !s->no_sync && ct_module_is_training(s->model) &&
        !ct_ddp_prepare_backward(s, n < max_out ? n : max_out, out))
        return -1;
    return n;
}

static void ddp_destroy(ct_module *self) {
    ddp_state *s = ct_module_state(self);
    double waited = 0;
    ct_ddp_wait_buckets(s, &waited);
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

static const ct_module_class DDP_CLASS = {
    .name = "DistributedDataParallel",
    .forward_multi = ddp_forward,
    .destroy = ddp_destroy,
};

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
    ddp_state init = {.magic = CT_DDP_MAGIC,
                      .group = o.group,
                      .broadcast_buffers = o.broadcast_buffers,
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
    bool ok = names && ts;
    if (!ok) ct_error("ct_ddp: out of memory");
    if (ok) {
        ct_named_parameters(model, names, ts, n);
        ct_named_buffers(model, names + n, ts + n, nb);
    }
    if (ok && init.world > 1)
        ok = ct_ddp_check_models(&init, n, nb, names, ts) == 0 &&
             ct_ddp_broadcast_from_rank0(&init, n + nb, ts) == 0;
    ct_module *ddp = NULL;
    if (ok) ddp = ct_module_new(&DDP_CLASS, sizeof(ddp_state));
    if (ddp) {
        ddp_state *s = ct_module_state(ddp);
        *s = init;
        s->model = ct_module_add(ddp, "module", model);
        ok = s->model && collect_params(s, n, names, ts) &&
             ct_ddp_assign_buckets(s, o.bucket_cap_mb > 0 ? o.bucket_cap_mb : 25.0);
        for (int i = 0; ok && i < s->n_params; i++) {
            ddp_param *p = &s->params[i];
            ok = (p->hook =
                      ct_register_post_accumulate_grad_hook(p->param, ct_ddp_grad_ready, p)) >= 0;
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
