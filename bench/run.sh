#!/bin/sh
# Runs the ctorch benchmarks and PyTorch's (bench/torch_ref.py, Debian's python3-torch)
# with the same thread count, then prints them side by side.
#
#   bench/run.sh [BUILD_DIR [name-substring]]     THREADS=n (default: all cores)
#
# ctorch/PyTorch is the ratio of the two figures; "ctorch speed" says how many times
# faster ctorch is (PyTorch's time over ctorch's, or ctorch's rate over PyTorch's).
set -eu
build=${1:-build}
pattern=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
threads=${THREADS:-$(nproc)}
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "ctorch: $build/bench/bench (threads $threads)" >&2
"$build/bench/bench" $pattern | tee "$tmp/ctorch" >&2
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "PyTorch: bench/torch_ref.py (threads $threads)" >&2
    /usr/bin/python3 "$here/torch_ref.py" $pattern | tee "$tmp/torch" >&2
else
    echo "PyTorch is not installed (apt-get install python3-torch): its column is empty" >&2
    : >"$tmp/torch"
fi

echo
echo "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores visible"
echo "ctorch $(git -C "$here" describe --always --dirty 2>/dev/null || echo "?") vs $(sed -n "s/^# \(PyTorch [^ ]*\).*/\1/p" "$tmp/torch" | head -1), threads $threads, $(date -u +%Y-%m-%d)"
awk -F '\t' '
    FNR == NR { if ($0 !~ /^#/) torch[$1] = $3; next }
    /^#/ { next }
    function num(v) { return v != "" && v != "n/a" && v + 0 > 0 }
    BEGIN { printf "| %-20s | %-8s | %10s | %10s | %14s | %12s |\n", "case", "unit", "ctorch", "PyTorch", "ctorch/PyTorch", "ctorch speed"
            printf "|%s|%s|%s|%s|%s|%s|\n", "----------------------", "----------", "-----------:", "-----------:", "---------------:", "-------------:" }
    {
        t = ($1 in torch) ? torch[$1] : "-"
        ratio = "-"; speed = "-"
        if (num($3) && num(t)) {
            ratio = sprintf("%.3g", $3 / t)
            lower_better = ($2 ~ /^(ns|ms|s)/)
            speed = sprintf("%.2fx", lower_better ? t / $3 : $3 / t)
        }
        printf "| %-20s | %-8s | %10s | %10s | %14s | %12s |\n", $1, $2, $3, t, ratio, speed
    }' "$tmp/torch" "$tmp/ctorch"
