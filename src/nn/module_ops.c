/* Whole-module operations: freezing, zero_grad, conversion. */
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/tensor_impl.h"
#include "nn/module_impl.h"
#include "core/mem.h"

/* Every parameter (or buffer) of the sub-tree, in a malloc'd array; -1 (and *out NULL)
 * when out of memory. */
static int all(ct_module *m, int kind, ct_tensor ***out) {
    int n = ct_module_walk(m, kind, NULL, NULL, 0);
    *out = n >= 0 ? ct_malloc(sizeof(ct_tensor *) * (size_t)(n > 0 ? n : 1)) : NULL;
    if (!*out) {
        if (n >= 0) ct_error("out of memory listing module entries");
        return -1;
    }
    n = ct_module_walk(m, kind, NULL, (void **)*out, n);
    if (n < 0) {
        free(*out);
        *out = NULL;
    }
    return n;
}

void ct_module_requires_grad_(ct_module *m, bool requires_grad) {
    if (!ct_alive("ct_module_requires_grad_", 1, m)) return;
    if (!m) return;
    ct_tensor **ps;
    int n = all(m, WALK_PARAMS, &ps);
    for (int i = 0; i < n; i++) ct_set_requires_grad(ps[i], requires_grad);
    free(ps);
}

void ct_module_zero_grad_with(ct_module *m, ct_zero_grad_options o) {
    if (!ct_alive("ct_module_zero_grad", 1, m)) return;
    if (!m) return;
    ct_tensor **ps;
    int n = all(m, WALK_PARAMS, &ps);
    for (int i = 0; i < n; i++) {
        ct_tensor *g = ct_grad(ps[i]);
        if (!g) continue;
        if (o.set_to_none) {
            ct_set_grad(ps[i], NULL);
        } else {
            CT_SCOPE {
                CT_NO_GRAD { ct_zero_(g); }
            }
        }
    }
    free(ps);
}

/* Converts t in place: its storage and geometry are replaced by a converted copy's,
 * so that every holder of the tensor object sees the new data. */
static int convert(ct_tensor *t, ct_module_to_options o) {
    ct_dtype dt = o.dtype && ct_dtype_is_floating(t->dtype) ? o.dtype : t->dtype;
    ct_device dev = o.device.type ? o.device : t->storage->device;
    if (dt == t->dtype && ct_device_eq(dev, t->storage->device)) return 0;
    int rc = -1;
    CT_SCOPE {
        ct_tensor *c = NULL;
        CT_NO_GRAD { c = ct_to(t, .dtype = dt, .device = dev); }
        if (!c) break;
        ct_tensor_assign_data(t, c);
        rc = 0;
    }
    if (rc == 0 && t->grad) rc = convert(t->grad, o);
    return rc;
}

int ct_module_to_with(ct_module *m, ct_module_to_options o) {
    if (!ct_alive("ct_module_to", 1, m)) return -1;
    if (!m) return -1;
    if (o.dtype && !ct_dtype_is_floating(o.dtype)) {
        ct_error("ct_module_to: nn.Module.to only accepts floating point dtypes, but got "
                 "desired dtype=%s", ct_dtype_name(o.dtype));
        return -1;
    }
    int rc = 0;
    for (int kind = WALK_PARAMS; kind <= WALK_BUFFERS && rc == 0; kind++) {
        ct_tensor **ts;
        int n = all(m, kind, &ts);
        if (n < 0) rc = -1;
        for (int i = 0; i < n && rc == 0; i++) rc = convert(ts[i], o);
        free(ts);
    }
    return rc;
}
