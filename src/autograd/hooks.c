#include <stdlib.h>

#include "autograd/hooks.h"
#include "autograd/node.h"

typedef struct {
    int handle;
    ct_tensor_hook fn;
    void *ctx;
} hook_entry;

struct ct_hook_list {
    hook_entry *items;
    int len, cap, next_handle;
};

void ct_hooks_free(ct_hook_list *l) {
    if (!l) return;
    free(l->items);
    free(l);
}

void ct_node_hooks_free(ct_node_hook *h) {
    while (h) {
        ct_node_hook *next = h->next;
        if (h->tensor) h->tensor->hooks_attached = false;
        free(h);
        h = next;
    }
}

/* Non-leaf tensors register themselves once with their grad_fn. */
static bool attach_to_node(ct_tensor *t) {
    if (!t->grad_fn || t->hooks_attached) return true;
    ct_node_hook *h = malloc(sizeof *h);
    if (!h) {
        ct_error("out of memory registering a hook");
        return false;
    }
    h->tensor = t;
    h->next = t->grad_fn->pre_hooks;
    t->grad_fn->pre_hooks = h;
    t->hooks_attached = true;
    return true;
}

void ct_tensor_detach_hooks(ct_tensor *t) {
    if (!t->hooks_attached || !t->grad_fn) return;
    for (ct_node_hook **p = &t->grad_fn->pre_hooks; *p; p = &(*p)->next) {
        if ((*p)->tensor == t) {
            ct_node_hook *dead = *p;
            *p = dead->next;
            free(dead);
            break;
        }
    }
    t->hooks_attached = false;
}

int ct_register_hook(ct_tensor *t, ct_tensor_hook fn, void *ctx) {
    if (!t || !fn) {
        if (t) ct_error("ct_register_hook: hook function is NULL");
        return -1;
    }
    if (!ct_requires_grad_impl(t)) {
        ct_error("ct_register_hook: cannot register a hook on a tensor that doesn't require "
                 "gradient");
        return -1;
    }
    if (!t->hooks && !(t->hooks = calloc(1, sizeof *t->hooks))) {
        ct_error("out of memory registering a hook");
        return -1;
    }
    ct_hook_list *l = t->hooks;
    if (l->len == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        hook_entry *items = realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) {
            ct_error("out of memory registering a hook");
            return -1;
        }
        l->items = items;
        l->cap = cap;
    }
    if (!attach_to_node(t)) return -1;
    l->items[l->len] = (hook_entry){l->next_handle++, fn, ctx};
    return l->items[l->len++].handle;
}

int ct_remove_hook(ct_tensor *t, int handle) {
    if (!t) return -1;
    ct_hook_list *l = t->hooks;
    for (int i = 0; l && i < l->len; i++) {
        if (l->items[i].handle != handle) continue;
        for (int j = i + 1; j < l->len; j++) l->items[j - 1] = l->items[j];
        l->len--;
        return 0;
    }
    ct_error("ct_remove_hook: no hook with handle %d on this tensor", handle);
    return -1;
}

int ct_retain_grad(ct_tensor *t) {
    if (!t) return -1;
    if (!ct_requires_grad_impl(t)) {
        ct_error("ct_retain_grad: can't retain_grad on Tensor that has requires_grad=False");
        return -1;
    }
    if (!t->grad_fn) return 0; /* leaves keep their grad anyway */
    if (!attach_to_node(t)) return -1;
    t->retains_grad = true;
    return 0;
}

ct_tensor *ct_hooks_apply(ct_tensor *t, ct_tensor *grad) {
    ct_retain(grad);
    for (int i = 0; t->hooks && i < t->hooks->len; i++) {
        ct_tensor *r = t->hooks->items[i].fn(grad, t->hooks->items[i].ctx);
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
