#!/bin/sh
# The layering rule of the backend seam (core/backend.h): code above the backends
# (core, ops, autograd, nn, optim, amp, io, data and the kernel ABI in kernels/) includes
# nothing from a backend's directory (cpu/, meta/), and ops, autograd, nn, optim, io
# and data call no ct_cpu_* function: they reach a device's memory through its
# backend and read values on the host through ops/host.h.
#
#     tests/layering/check_layers.sh SRC_DIR
#
# prints each offending line and exits 1; exits 0 when there is none.  There are no
# exceptions.
set -u
src=${1:?usage: check_layers.sh SRC_DIR}
status=0
for dir in core ops autograd nn optim amp io data kernels; do
    [ -d "$src/$dir" ] || continue
    for f in "$src/$dir"/*.c "$src/$dir"/*.h; do
        [ -f "$f" ] || continue
        rel=${f#"$src"/}
        for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(\(\.\.\/\)*\(cpu\|meta\)\/[^"]*\)".*/\1/p' "$f"); do
            inc=${inc#../}
            echo "$rel includes \"$inc\": code above the backends includes no backend header"
            status=1
        done
        case $dir in core | kernels) continue ;; esac
        if grep -n 'ct_cpu_[A-Za-z0-9_]*[[:space:]]*(' "$f" >/dev/null; then
            grep -n 'ct_cpu_[A-Za-z0-9_]*[[:space:]]*(' "$f" | sed "s|^|$rel:|;s|\$|  <- calls into src/cpu|"
            status=1
        fi
    done
done
exit $status
