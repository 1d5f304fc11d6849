#!/bin/sh
# Runs a test program with OpenBLAS forced to one core type (kernel set), so that one
# machine checks the results of every core type it can run:
#   openblas_core.sh CORETYPE program [args...]
# Exits 77 (ctest: skipped) when this CPU lacks the instructions that core type needs.
core=$1
shift
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
need() {
    for f in "$@"; do
        case "$flags" in *" $f "*) ;; *) echo "skipped: this CPU lacks $f, which OpenBLAS's $core kernels need"; exit 77 ;; esac
    done
}
case $core in
SkylakeX | Cooperlake) need avx512f avx512cd avx512bw avx512dq avx512vl ;;
Haswell | Zen) need avx2 fma ;;
Sandybridge) need avx ;;
Nehalem) need sse4_2 ;;
*) echo "openblas_core.sh: unknown core type $core"; exit 2 ;;
esac
OPENBLAS_CORETYPE=$core exec "$@"
