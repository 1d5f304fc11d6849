# Sourced by the bench runners: the line every table opens with, the CPU's model, the
# cores this process sees and the SIMD flags that decide which kernels run.
cpu_summary() {
    echo "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores visible; SIMD flags:" \
        "$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' |
            grep -E '^(sse4_2|avx|avx2|fma|f16c|avx512[a-z_0-9]*|amx[a-z_0-9]*)$' | tr '\n' ' ')"
}
