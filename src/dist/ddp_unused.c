/* find_unused_parameters (dist/ddp_impl.h): after the forward, the parameters whose
 * AccumulateGrad node the graph of the outputs reaches (PyTorch's
 * Reducer::search_unused_parameters); the others get no gradient from the backward. */
#include <stdlib.h>

#include "dist/ddp_impl.h"
#include "autograd/node.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/tensor_impl.h"

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

/* Marks n seen and pushes it when it is new; false when out of memory. */
static bool visit(node_set *seen, ct_node ***stack, size_t *sp, size_t *cap, ct_node *n) {
    int added = node_set_add(seen, n);
    if (added != 1) return added == 0;
    if (*sp == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        ct_node **p = ct_realloc(*stack, c * sizeof *p);
        if (!p) return false;
        *stack = p;
        *cap = c;
    }
    (*stack)[(*sp)++] = n;
    return true;
}

bool ct_ddp_search_unused(ddp_state *s, int n_out, ct_tensor *const *out) {
    node_set seen = {0};
    ct_node **stack = NULL;
    size_t sp = 0, cap = 0;
    bool ok = true;
    for (int i = 0; ok && i < n_out; i++) {
        ct_node *root = out[i] ? ct_grad_fn(out[i]) : NULL;
        if (root) ok = visit(&seen, &stack, &sp, &cap, root);
        while (ok && sp) {
            ct_node *n = stack[--sp];
            for (int k = 0; ok && k < n->n_in; k++)
                if (n->next[k].fn) ok = visit(&seen, &stack, &sp, &cap, n->next[k].fn);
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
