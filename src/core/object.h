/* Object header shared by every reference-counted ctorch object. */
#ifndef CT_CORE_OBJECT_H
#define CT_CORE_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct ct_object ct_object;
typedef void (*ct_destroy_fn)(ct_object *obj);

/* Note [Liveness magic]: `magic` is CT_OBJECT_ALIVE from ct_object_init until the
 * object's block is given back at the end of its destroy (which may still call
 * accessors on it): ct_lifetime_free clears it, and a pool's list overwrites it with
 * the link in its first word.  Public functions check the objects they are given with
 * ct_alive (one compare) and refuse a released one.  The check is reliable in the
 * debug lifetime mode (core/lifetime.h), where released blocks are held back instead
 * of being reused; otherwise a pool may hand the block to a new object at once, and a
 * stale pointer then sees a live one. */
#define CT_OBJECT_ALIVE 0x43544f42u /* "CTOB" */

struct ct_object {
    atomic_int refs;
    uint32_t magic; /* CT_OBJECT_ALIVE while alive (fits the padding before destroy) */
    ct_destroy_fn destroy; /* frees the object once refs reaches 0 */
};

static inline void ct_object_init(ct_object *o, ct_destroy_fn destroy) {
    atomic_init(&o->refs, 1);
    o->magic = CT_OBJECT_ALIVE;
    o->destroy = destroy;
}

/* Report "<fn>: argument <arg> was released (use after free)", or for an object
 * given in an options struct "<fn>: option .<name> was released (use after free)";
 * return false.  Cold. */
bool ct_released_error(const char *fn, int arg);
bool ct_released_option_error(const char *fn, const char *option);

/* ct_object_dead: obj is a released object (not NULL, its magic cleared).
 * ct_alive: whether obj (a ct_object or NULL) may be used: true for NULL (callers
 * handle NULL their own way) and for a live object; false with ct_released_error(fn,
 * arg) for a released one.  `arg` counts the public function's arguments from 1. */
static inline bool ct_object_dead(const void *obj) {
    return __builtin_expect(obj && ((const ct_object *)obj)->magic != CT_OBJECT_ALIVE, 0);
}
static inline bool ct_alive(const char *fn, int arg, const void *obj) {
    return !ct_object_dead(obj) || ct_released_error(fn, arg);
}

/* ct_alive for an object given as the option .<option>. */
static inline bool ct_option_alive(const char *fn, const char *option, const void *obj) {
    return !ct_object_dead(obj) || ct_released_option_error(fn, option);
}

/* ct_alive for each of the n objects of an array argument (NULL entries and a NULL
 * array pass). */
static inline bool ct_all_alive(const char *fn, int arg, const void *objs, int n) {
    const void *const *o = objs;
    for (int i = 0; o && i < n; i++)
        if (!ct_alive(fn, arg, o[i])) return false;
    return true;
}

/* ct_release, inline for the library's own hot paths (a dying tensor's, node's or
 * scope's references, most of them NULL or the only one).  A count of 1 is ours alone:
 * nobody else can retain or release the object, so it dies without the atomic
 * read-modify-write (the common case of temporaries).  The acquire load still orders
 * other threads' earlier releases before destroy. */
static inline void ct_object_release(void *obj) {
    if (!obj) return;
    ct_object *o = obj;
    if (ct_object_dead(o)) {
        ct_released_error("ct_release", 1); /* released twice: leave it alone */
        return;
    }
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
