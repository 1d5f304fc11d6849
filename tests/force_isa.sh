#!/bin/sh
# Runs a test program with one instruction-set path forced, so that one machine
# checks every path it can run:
#   force_isa.sh openblas CORETYPE program [args...]   OpenBLAS's kernels (OPENBLAS_CORETYPE)
#   force_isa.sh ctorch CAPABILITY program [args...]   ctorch's (CT_CPU_CAPABILITY: default, avx2, avx512)
# Exits 77 (ctest: skipped) when this CPU lacks the instructions that path needs.
lib=$1 path=$2
shift 2
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
need() {
    for f in "$@"; do
        case "$flags" in *" $f "*) ;; *) echo "skipped: this CPU lacks $f, which the $lib $path path needs"; exit 77 ;; esac
    done
}
case $lib:$path in
openblas:SkylakeX | openblas:Cooperlake) need avx512f avx512cd avx512bw avx512dq avx512vl ;;
openblas:Haswell | openblas:Zen) need avx2 fma ;;
openblas:Sandybridge) need avx ;;
openblas:Nehalem) need sse4_2 ;;
ctorch:avx512) need avx512f ;;
ctorch:avx2) need avx2 fma bmi1 bmi2 f16c movbe ;;
ctorch:default) ;;
*) echo "force_isa.sh: unknown path $lib $path"; exit 2 ;;
esac
case $lib in
openblas) OPENBLAS_CORETYPE=$path exec "$@" ;;
ctorch) CT_CPU_CAPABILITY=$path exec "$@" ;;
esac
