/* The registered autograd interface (core/autograd_meta.h). */
#include <stdatomic.h>

#include "core/autograd_meta.h"
#include "core/error.h"
#include "core/tensor_impl.h"

static _Atomic(const ct_autograd_interface *) registered;

bool ct_autograd_register(const ct_autograd_interface *iface) {
    if (!iface || !iface->name || !iface->release_meta) {
        ct_error("ct_autograd_register: interface %s lacks a required member",
                 iface && iface->name ? iface->name : "(unnamed)");
        return false;
    }
    const ct_autograd_interface *none = NULL;
    if (!atomic_compare_exchange_strong(&registered, &none, iface)) {
        ct_error("ct_autograd_register: interface %s: interface %s is registered already",
                 iface->name, none->name);
        return false;
    }
    return true;
}

const ct_autograd_interface *ct_autograd_interface_get(void) {
    return atomic_load_explicit(&registered, memory_order_acquire);
}

void ct_autograd_release_meta(ct_tensor *t) {
    const ct_autograd_interface *iface = ct_autograd_interface_get();
    if (iface) iface->release_meta(t);
}

_Thread_local int ct_trace_backward_depth;
