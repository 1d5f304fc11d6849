/* ctorch/state_dict.h — ordered name -> tensor maps: module and optimizer state.
 *
 *     ct_module *model = ct_gru(4, 8), *other = ct_gru(4, 8);
 *     ct_state_dict *sd = ct_module_state_dict(model);     // "weight_ih_l0", ...
 *     ct_load_state_dict(other, sd);                        // strict by default
 *     ct_load_result r;
 *     ct_state_dict_remove(sd, "bias_hh_l0");
 *     ct_load_state_dict(other, sd, .non_strict = true, .result = &r);  // r.n_missing == 1
 */
#ifndef CTORCH_STATE_DICT_H
#define CTORCH_STATE_DICT_H

#include "nn.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_state_dict ct_state_dict; /* an ordered map of names to tensors */

ct_state_dict *ct_state_dict_new(void);  /* an empty state dict */
#define ct_state_dict_new(...) CT_AT(ct_state_dict_new(__VA_ARGS__))
/* Inserts or replaces (keeping the first insertion's position); retains t. */
int ct_state_dict_set(ct_state_dict *sd, const char *key, ct_tensor *t);
#define ct_state_dict_set(sd, key, t) CT_AT(ct_state_dict_set(sd, key, t))
ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *key); /* borrowed; NULL if absent */
#define ct_state_dict_get(sd, key) CT_AT(ct_state_dict_get(sd, key))
int ct_state_dict_len(const ct_state_dict *sd);                     /* the number of entries */
#define ct_state_dict_len(sd) CT_AT(ct_state_dict_len(sd))
const char *ct_state_dict_key(const ct_state_dict *sd, int i);      /* the i-th key, in order */
#define ct_state_dict_key(sd, i) CT_AT(ct_state_dict_key(sd, i))
ct_tensor *ct_state_dict_value(const ct_state_dict *sd, int i); /* borrowed */
#define ct_state_dict_value(sd, i) CT_AT(ct_state_dict_value(sd, i))
/* Removes key's entry, releasing its tensor; 0, or -1 when absent. */
int ct_state_dict_remove(ct_state_dict *sd, const char *key);
#define ct_state_dict_remove(sd, key) CT_AT(ct_state_dict_remove(sd, key))

/* Parameters and persistent buffers under their dotted names, as detached tensors
 * sharing the module's memory (like module.state_dict()). */
ct_state_dict *ct_module_state_dict(ct_module *m);
#define ct_module_state_dict(m) CT_AT(ct_module_state_dict(m))

/* What ct_load_state_dict found missing and unexpected (load_state_dict's result). */
typedef struct {
    int n_missing;              /* the module's keys the dict lacks */
    int n_unexpected;           /* the dict's keys the module lacks */
    const char *missing[64];    /* first 64 names; valid while the module and dict live */
    const char *unexpected[64]; /* first 64 names, likewise */
} ct_load_result;
/* Options of ct_load_state_dict. */
typedef struct {
    bool non_strict;        /* strict (the default) fails on missing or unexpected keys */
    ct_load_result *result; /* filled when given */
} ct_load_options;
/* Copies values into the module's tensors (converting dtype and device, as
 * map_location does).  Errors list missing keys, unexpected keys and shape
 * mismatches as PyTorch does; nothing is changed when it fails.  Returns 0 or -1. */
int ct_load_state_dict_with(ct_module *m, const ct_state_dict *sd, ct_load_options o);
#define ct_load_state_dict(m, sd, ...) \
    CT_AT(ct_load_state_dict_with(m, sd, CT_OPTIONS(ct_load_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
