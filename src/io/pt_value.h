/* The values of ctorch/pt.h (what a pickle holds), shared by the unpickler, the .pt
 * loader and the writer. */
#ifndef CT_IO_PT_VALUE_H
#define CT_IO_PT_VALUE_H

#include "ctorch.h"
#include "ctorch/pt.h"
#include "core/object.h"

/* Kinds that exist only while a pickle is read (never in a loaded tree). */
enum {
    PT_STORAGE = CT_PT_DICT + 1, /* a persistent id's storage: tensor is its elements, 1-d */
    PT_GLOBAL,                   /* a class or function the unpickler allowed: id, str its name */
};

struct ct_pt_value {
    ct_object obj;
    uint8_t kind;     /* a ct_pt_kind or PT_* */
    bool sealed;      /* the unpickler placed it in a container: it takes no more items */
    bool opaque;      /* the unpickler: it holds a storage or global somewhere */
    uint16_t height;  /* the unpickler: 1 + the deepest item's height */
    bool b;           /* a bool; a dict: an OrderedDict */
    int64_t i;        /* an int; PT_GLOBAL: which one */
    double f;
    char *str;        /* str and bytes (NUL-terminated), PT_GLOBAL's and PT_STORAGE's name */
    size_t len;       /* str's bytes */
    ct_tensor *tensor;
    ct_pt_value **items, **keys; /* list, tuple, dict (keys: dict only) */
    int64_t n, cap;
};

/* A new value owning one reference, not registered with any scope; NULL (with an
 * error naming fn) when out of memory.  pt_new_str copies n bytes of s. */
ct_pt_value *pt_new(int kind, const char *fn);
ct_pt_value *pt_new_str(int kind, const char *s, size_t n, const char *fn);
/* Appends item (retained) to a list, tuple or dict's keys+items; false when out of memory. */
bool pt_push(ct_pt_value *seq, ct_pt_value *key, ct_pt_value *item, const char *fn);
/* d[key] = item (both retained), replacing an equal key's item as Python's dict does. */
bool pt_dict_put(ct_pt_value *d, ct_pt_value *key, ct_pt_value *item, const char *fn);
/* Whether a and b are equal as dict keys (str, bytes, int, bool, None; else identity). */
bool pt_key_equal(const ct_pt_value *a, const ct_pt_value *b);

#endif
