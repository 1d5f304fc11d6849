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

/* Registers a freshly created object (owning one reference) with the innermost open
 * scope, if any.  Every public function that returns a new reference calls this. */
void *ct_scope_register(void *obj);
/* Removes obj's registration from the innermost open scope (the reference passes to
 * the caller); false when it is not registered there. */
bool ct_scope_unregister(void *obj);

#endif
