/* The backends of this build, registered at start-up (core/backend.h).  A new backend
 * (src/cuda, ...) adds its init here. */
#include "core/backend.h"
#include "cpu/backend.h"
#include "meta/backend.h"

void ct_register_builtin_backends(void) {
    ct_cpu_backend_init();
    ct_meta_backend_init();
}
