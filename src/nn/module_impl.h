/* The module struct, private to src/nn. */
#ifndef CT_NN_MODULE_IMPL_H
#define CT_NN_MODULE_IMPL_H

#include <stdalign.h>
#include <stddef.h>

#include "ctorch/nn.h"
#include "ctorch/state_dict.h"
#include "core/object.h"

typedef struct {
    char *name;
    void *obj;       /* ct_tensor * or ct_module *, owned */
    bool persistent; /* buffers: part of the state dict */
} slot;

typedef struct {
    slot *items;
    int len, cap;
} slot_vec;

typedef struct {
    int kind; /* 0: forward pre-hook, 1: forward hook */
    int handle;
    void *fn;
    void *ctx;
} ct_module_hook;

/* Dotted names handed out by the iteration functions, one cache per kind. */
enum { NAMES_PARAMS, NAMES_BUFFERS, NAMES_PERSISTENT, NAMES_CHILDREN, NAMES_MODULES, NAME_CACHES };
typedef struct {
    char **items;
    int len;
} name_cache;

struct ct_module {
    ct_object obj;
    const ct_module_class *cls;
    slot_vec params, buffers, children;
    bool training;
    ct_module_hook *hooks;
    int n_hooks, next_handle;
    name_cache names[NAME_CACHES];
    size_t state_size; /* bytes of state[] (ct_module_set re-points its fields) */
    alignas(max_align_t) char state[];
};

/* What ct_module_walk lists: the iteration functions and the state dict use it. */
typedef enum { WALK_PARAMS, WALK_BUFFERS, WALK_PERSISTENT_BUFFERS, WALK_MODULES } walk_kind;
/* Lists entries of the sub-tree (see ct_named_parameters) and returns the count. */
int ct_module_walk(ct_module *m, int kind, const char **names, void **out, int max);

/* The checks of a strict ct_load_state_dict without the copy: 0, or -1 with its error. */
int ct_module_check_state_dict(ct_module *m, const ct_state_dict *sd);

#endif
