/* Object header shared by every reference-counted ctorch object. */
#ifndef CT_CORE_OBJECT_H
#define CT_CORE_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ct_object ct_object;
typedef void (*ct_destroy_fn)(ct_object *obj);

struct ct_object {
    atomic_int refs;
    ct_destroy_fn destroy; /* frees the object once refs reaches 0 */
};

static inline void ct_object_init(ct_object *o, ct_destroy_fn destroy) {
    atomic_init(&o->refs, 1);
    o->destroy = destroy;
}

/* ct_release, inline for the library's own hot paths (a dying tensor's, node's or
 * scope's references, most of them NULL or the only one).  A count of 1 is ours alone:
 * nobody else can retain or release the object, so it dies without the atomic
 * read-modify-write (the common case of temporaries).  The acquire load still orders
 * other threads' earlier releases before destroy. */
static inline void ct_object_release(void *obj) {
    if (!obj) return;
    ct_object *o = obj;
    if (atomic_load_explicit(&o->refs, memory_order_acquire) == 1 ||
        atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        o->destroy(o);
}

/* Registers a freshly created object (owning one reference) with the innermost open
 * scope, if any.  Every public function that returns a new reference calls this. */
void *ct_scope_register(void *obj);
/* Removes obj's registration from the innermost open scope (the reference passes to
 * the caller); false when it is not registered there. */
bool ct_scope_unregister(void *obj);

#endif
