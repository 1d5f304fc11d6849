#!/bin/sh
# Runs a test program with one instruction-set path forced, so that one machine
# checks every path it can run:
#   force_isa.sh openblas CORETYPE program [args...]   OpenBLAS's kernels (OPENBLAS_CORETYPE)
#   force_isa.sh ctorch CAPABILITY program [args...]   ctorch's (CT_CPU_CAPABILITY: default, avx2, avx512)
#   force_isa.sh onednn ISA program [args...]          oneDNN's (ONEDNN_MAX_CPU_ISA: AVX512_CORE_AMX,
#                                                       AVX512_CORE_BF16, AVX512_CORE, AVX2), or
#                                                       off: ctorch's own reduced kernels (CT_ONEDNN=0)
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
onednn:AVX512_CORE_AMX) need avx512f avx512bw avx512vl avx512dq avx512_bf16 amx_tile amx_bf16 ;;
onednn:AVX512_CORE_BF16) need avx512f avx512bw avx512vl avx512dq avx512_bf16 ;;
onednn:AVX512_CORE) need avx512f avx512bw avx512vl avx512dq ;;
onednn:AVX2) need avx2 ;;
onednn:off) ;;
*) echo "force_isa.sh: unknown path $lib $path"; exit 2 ;;
esac
case $lib in
openblas) OPENBLAS_CORETYPE=$path exec "$@" ;;
ctorch) CT_CPU_CAPABILITY=$path exec "$@" ;;
onednn) if [ "$path" = off ]; then CT_ONEDNN=0 exec "$@"; else ONEDNN_MAX_CPU_ISA=$path exec "$@"; fi ;;
esac
