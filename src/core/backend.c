/* The backend registry: one backend per device type, registered at start-up, the
 * copies between devices and fills. */
#include <pthread.h>

#include "core/backend.h"

const ct_backend *ct_backends_[CT_NUM_DEVICE_TYPES];
atomic_bool ct_backends_ready_;
static pthread_once_t backends_once = PTHREAD_ONCE_INIT;

static void init_backends(void) {
    ct_register_builtin_backends();
    atomic_store_explicit(&ct_backends_ready_, true, memory_order_release);
}

void ct_backends_init_(void) { pthread_once(&backends_once, init_backends); }

/* At load time, so that a bad backend stops the program at start-up. */
__attribute__((constructor)) static void init_at_start_up(void) { ct_backends_init_(); }

bool ct_backend_register(const ct_backend *b) {
    if (!b || !b->name || b->type <= CT_DEV_UNSET || b->type >= CT_NUM_DEVICE_TYPES ||
        !b->alloc || !b->free || !b->copy || !b->fill || !b->run_loop || !b->synchronize ||
        !(b->kernel_tables ||
          (b->family_kernels && b->slots_of > CT_DEV_UNSET && b->slots_of < CT_NUM_DEVICE_TYPES &&
           b->slots_of != b->type))) {
        ct_error("ct_backend_register: backend %s lacks a required member or has an invalid "
                 "device type", b && b->name ? b->name : "(unnamed)");
        return false;
    }
    if (ct_backends_[b->type]) {
        ct_error("ct_backend_register: backend %s: its device type has backend %s already",
                 b->name, ct_backends_[b->type]->name);
        return false;
    }
    ct_backends_[b->type] = b;
    return true;
}

const ct_backend *ct_backend_of(const char *op, ct_device d) {
    const ct_backend *b = ct_backend_for_type(d.type);
    if (!b) {
        char buf[16];
        ct_error("%s: no backend for device %s in this build of ctorch", op,
                 ct_device_str(d, buf));
    }
    return b;
}

bool ct_device_synchronize(const char *op, ct_device d) {
    const ct_backend *b = ct_backend_of(op, d);
    if (b) b->synchronize(d);
    return b != NULL;
}

/* A device's backend copies to and from the host, so a copy between the cpu and a
 * device goes to the device's backend. */
void ct_copy_into(ct_tensor *dst, const ct_tensor *src) {
    ct_device_type t = dst->storage->device.type;
    if (t == CT_DEV_CPU) t = src->storage->device.type;
    ct_backend_for_type(t)->copy(dst, src);
}

void ct_fill_into(ct_tensor *dst, const void *value) {
    ct_backend_for_type(dst->storage->device.type)->fill(dst, value);
}
