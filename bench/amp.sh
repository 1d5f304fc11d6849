#!/bin/sh
# ctorch's mixed precision against PyTorch 1.13's, side by side in one run:
# bench/bench_amp.c and bench/bench_amp.py train the MLP, the demo CNN and an LSTM in
# float32 and under bfloat16 autocast; then a table of samples/s, of the activations
# and of the tensor memory a step adds at its peak, with the ratios ctorch/PyTorch
# and bf16/fp32.
#
#   bench/amp.sh [BUILD_DIR]      ROUNDS=n (default 2): the two programs alternate n
#                                 times, the best rate and the lowest peak kept
#                                 THREADS=n (default 2): the threads of each
#
# PyTorch gets its best setting, torch.set_num_threads(n) with OPENBLAS_NUM_THREADS=1;
# ctorch gets OMP_NUM_THREADS=n.  The two frameworks run one after the other, never at
# the same time.  PyTorch's peak comes from its profiler (bench/bench_amp.py says how).
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/machine.sh"
rounds=${ROUNDS:-2}
threads=${THREADS:-2}
[ -x "$build/bench/bench_amp" ] || { echo "no $build/bench/bench_amp: build it first" >&2; exit 1; }
have_torch=true
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
    echo "PyTorch is not installed (apt-get install python3-torch): its columns are empty" >&2
    have_torch=false
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-amp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
r=1
while [ "$r" -le "$rounds" ]; do
    echo "round $r/$rounds" >&2
    OMP_NUM_THREADS=$threads "$build/bench/bench_amp" all both | tee -a "$tmp/ctorch" >&2
    if $have_torch; then
        OPENBLAS_NUM_THREADS=1 THREADS=$threads /usr/bin/python3 "$here/bench_amp.py" all both 2>/dev/null |
            tee -a "$tmp/torch" >&2
    fi
    r=$((r + 1))
done
[ -e "$tmp/torch" ] || : >"$tmp/torch"

echo
cpu_summary
echo "load average (1, 5, 15 min) before: $load_before, after: $(cut -d ' ' -f 1-3 /proc/loadavg) (above the core count, other jobs shared the cores: the rates are low)"
echo "ctorch $(git -C "$here" describe --always --dirty 2>/dev/null || echo "?") vs" \
    "$(sed -n 's/^# \(PyTorch [^ ]*\).*/\1/p' "$tmp/torch" | head -1), $threads threads each, best of $rounds rounds, $(date -u +%Y-%m-%d)"
echo
awk -F '\t' '
    # The best of the rounds: the highest rate, the lowest memory.
    function keep(arr, k, v, unit) {
        if (!(k in arr) || (unit == "MB" ? v < arr[k] : v > arr[k])) arr[k] = v
    }
    /^#/ { next }
    FNR == NR { keep(torch, $1, $3, $2); next }
    { keep(ct, $1, $3, $2) }
    function ratio(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2fx", a / b) : "-" }
    function show(v) { return v == "" ? "-" : v }
    function row(c, mode, a, b, ca, pa, pb, xa, xb) {
        printf "| %-4s | %-9s | %16s | %17s | %14s | %10s | %11s | %10s | %11s |\n", c, mode, a, b, ca, pa, pb, xa, xb
    }
    END {
        row("case", "mode", "ctorch samples/s", "PyTorch samples/s", "ctorch/PyTorch", "ctorch act", "PyTorch act",
            "ctorch peak", "PyTorch peak")
        printf "|------|-----------|-----------------:|------------------:|---------------:|-----------:|------------:|------------:|-------------:|\n"
        split("mlp cnn lstm", cases, " ")
        for (i = 1; i <= 3; i++) {
            c = cases[i]
            for (j = 1; j <= 2; j++) {
                k = "amp_" c "_" (j == 1 ? "fp32" : "bf16")
                row(c, j == 1 ? "float32" : "bf16 amp", show(ct[k]), show(torch[k]), ratio(ct[k], torch[k]),
                    show(ct[k "_act"]), show(torch[k "_act"]), show(ct[k "_peak"]), show(torch[k "_peak"]))
            }
            a = "amp_" c "_bf16"; b = "amp_" c "_fp32"
            row(c, "bf16/fp32", ratio(ct[a], ct[b]), ratio(torch[a], torch[b]), "",
                ratio(ct[a "_act"], ct[b "_act"]), ratio(torch[a "_act"], torch[b "_act"]),
                ratio(ct[a "_peak"], ct[b "_peak"]), ratio(torch[a "_peak"], torch[b "_peak"]))
        }
        print ""
        print "act: what forward and loss leave allocated (the activations), MB; peak: what a whole step adds at its peak, MB"
    }' "$tmp/torch" "$tmp/ctorch"
