#include <pthread.h>
#include <stdlib.h>

#include "autograd/hooks.h"
#include "autograd/node.h"
#include "core/mem.h"

struct ct_hook_entry {
    int handle;
    ct_tensor_hook fn;
    void *ctx;
};

struct ct_post_hook_entry {
    int handle;
    ct_post_accumulate_grad_hook fn;
    void *ctx;
};

void ct_node_hooks_free(ct_node_hook *h) {
    while (h) {
        ct_node_hook *next = h->next;
        if (h->tensor) h->tensor->autograd_meta->attached_to = NULL;
        free(h);
        h = next;
    }
}

void ct_tensor_detach_hooks(ct_tensor *t) {
    ct_autograd_meta *m = t->autograd_meta;
    if (!m || !m->attached_to) return;
    for (ct_node_hook **p = &m->attached_to->pre_hooks; *p; p = &(*p)->next) {
        if ((*p)->tensor == t) {
            ct_node_hook *dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    }
    m->attached_to = NULL;
}

/* ---- the interface core releases metas through (core/autograd_meta.h) ---- */

static void release_meta(ct_tensor *t) {
    ct_tensor_detach_hooks(t);
    free(t->autograd_meta->hooks);
    free(t->autograd_meta->post_hooks);
    free(t->autograd_meta);
    t->autograd_meta = NULL;
}

static const ct_autograd_interface autograd_interface = {"autograd", release_meta};
static pthread_once_t register_once = PTHREAD_ONCE_INIT;

static void register_interface(void) {
    if (!ct_autograd_register(&autograd_interface)) ct_fatal("%s", ct_last_error());
}
/* At start-up, as PyTorch's AutogradMetaFactoryRegisterer; and before the first meta,
 * whatever runs first (a constructor of the program's may make one). */
__attribute__((constructor)) static void register_at_start_up(void) {
    pthread_once(&register_once, register_interface);
}

/* t's meta, made on first use; NULL with an error when out of memory. */
static ct_autograd_meta *meta_of(ct_tensor *t) {
    if (t->autograd_meta) return t->autograd_meta;
    pthread_once(&register_once, register_interface);
    if (!(t->autograd_meta = ct_calloc(1, sizeof *t->autograd_meta)))
        ct_error("out of memory registering a hook");
    return t->autograd_meta;
}

/* Non-leaf tensors register themselves once with their grad_fn (and stay with it when
 * an in-place op gives them a new one). */
static bool attach_to_node(ct_tensor *t) {
    ct_autograd_meta *m = t->autograd_meta;
    if (!t->grad_fn || m->attached_to) return true;
    ct_node_hook *h = ct_malloc(sizeof *h);
    if (!h) {
        ct_error("out of memory registering a hook");
        return false;
    }
    h->tensor = t;
    h->next = t->grad_fn->pre_hooks;
    t->grad_fn->pre_hooks = h;
    m->attached_to = t->grad_fn;
    return true;
}

int ct_register_hook(ct_tensor *t, ct_tensor_hook fn, void *ctx) {
    if (!ct_alive("ct_register_hook", 1, t)) return -1;
    if (!t || !fn) {
        if (t) ct_error("ct_register_hook: hook function is NULL");
        return -1;
    }
    if (!ct_requires_grad_impl(t)) {
        ct_error("ct_register_hook: cannot register a hook on a tensor that doesn't require "
                 "gradient");
        return -1;
    }
    ct_autograd_meta *m = meta_of(t);
    if (!m) return -1;
    if (m->n_hooks == m->cap) {
        int cap = m->cap ? m->cap * 2 : 4;
        ct_hook_entry *items = ct_realloc(m->hooks, (size_t)cap * sizeof *items);
        if (!items) {
            ct_error("out of memory registering a hook");
            return -1;
        }
        m->hooks = items;
        m->cap = cap;
    }
    if (!attach_to_node(t)) return -1;
    m->hooks[m->n_hooks] = (ct_hook_entry){m->next_handle++, fn, ctx};
    return m->hooks[m->n_hooks++].handle;
}

int ct_register_post_accumulate_grad_hook(ct_tensor *leaf, ct_post_accumulate_grad_hook fn,
                                          void *ctx) {
    if (!ct_alive("ct_register_post_accumulate_grad_hook", 1, leaf)) return -1;
    if (!leaf) return -1;
    if (!fn) {
        ct_error("ct_register_post_accumulate_grad_hook: hook function is NULL");
        return -1;
    }
    if (!ct_requires_grad_impl(leaf)) {
        ct_error("ct_register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
                 "doesn't require gradient");
        return -1;
    }
    if (leaf->grad_fn) {
        ct_error("ct_register_post_accumulate_grad_hook: post accumulate grad hooks cannot be "
                 "registered on non-leaf tensors");
        return -1;
    }
    ct_autograd_meta *m = meta_of(leaf);
    if (!m) return -1;
    if (m->n_post_hooks == m->post_cap) {
        int cap = m->post_cap ? m->post_cap * 2 : 2;
        ct_post_hook_entry *items = ct_realloc(m->post_hooks, (size_t)cap * sizeof *items);
        if (!items) {
            ct_error("out of memory registering a hook");
            return -1;
        }
        m->post_hooks = items;
        m->post_cap = cap;
    }
    m->post_hooks[m->n_post_hooks] = (ct_post_hook_entry){m->next_handle++, fn, ctx};
    return m->post_hooks[m->n_post_hooks++].handle;
}

bool ct_hooks_run_post_accumulate(ct_tensor *leaf) {
    ct_autograd_meta *m = leaf->autograd_meta;
    unsigned errors = ct_error_count();
    /* Indexed each time: a hook may register more (the array may move). */
    for (int i = 0; i < m->n_post_hooks; i++) {
        m->post_hooks[i].fn(leaf, m->post_hooks[i].ctx);
        if (ct_error_count() != errors) return false;
    }
    return true;
}

int ct_remove_hook(ct_tensor *t, int handle) {
    if (!ct_alive("ct_remove_hook", 1, t)) return -1;
    if (!t) return -1;
    ct_autograd_meta *m = t->autograd_meta;
    for (int i = 0; m && i < m->n_hooks; i++) {
        if (m->hooks[i].handle != handle) continue;
        for (int j = i + 1; j < m->n_hooks; j++) m->hooks[j - 1] = m->hooks[j];
        m->n_hooks--;
        return 0;
    }
    for (int i = 0; m && i < m->n_post_hooks; i++) {
        if (m->post_hooks[i].handle != handle) continue;
        for (int j = i + 1; j < m->n_post_hooks; j++) m->post_hooks[j - 1] = m->post_hooks[j];
        m->n_post_hooks--;
        return 0;
    }
    ct_error("ct_remove_hook: no hook with handle %d on this tensor", handle);
    return -1;
}

int ct_retain_grad(ct_tensor *t) {
    if (!ct_alive("ct_retain_grad", 1, t)) return -1;
    if (!t) return -1;
    if (!ct_requires_grad_impl(t)) {
        ct_error("ct_retain_grad: can't retain_grad on Tensor that has requires_grad=False");
        return -1;
    }
    if (!t->grad_fn) return 0; /* leaves keep their grad anyway */
    ct_autograd_meta *m = meta_of(t);
    if (!m || !attach_to_node(t)) return -1;
    m->retains_grad = true;
    return 0;
}

ct_tensor *ct_hooks_apply(ct_tensor *t, ct_tensor *grad) {
    ct_retain(grad);
    ct_autograd_meta *m = t->autograd_meta;
    for (int i = 0; m && i < m->n_hooks; i++) {
        ct_tensor *r = m->hooks[i].fn(grad, m->hooks[i].ctx);
        if (!r) continue; /* the hook only looked */
        if (r->ndim != grad->ndim || ct_shape_numel(r->ndim, r->sizes) != grad->numel) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error("hook returned a gradient of shape %s, expected %s",
                     ct_shape_str(r->ndim, r->sizes, a), ct_shape_str(grad->ndim, grad->sizes, b));
            ct_release(grad);
            return NULL;
        }
        ct_retain(r);
        ct_release(grad);
        grad = r;
    }
    return grad;
}
