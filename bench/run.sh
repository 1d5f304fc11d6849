#!/bin/sh
# Runs the ctorch benchmarks and PyTorch's (bench/torch_ref.py, Debian's python3-torch)
# with the same thread count (PyTorch with OPENBLAS_NUM_THREADS=1 and
# torch.set_num_threads(n), its best setting: both pools at n oversubscribe the cores),
# then prints them side by side.
#
#   bench/run.sh [BUILD_DIR [name-substring]]     THREADS=n (default: all cores)
#   bench/run.sh BUILD_DIR train                  the training benchmarks only
#
# Then the training benchmarks (bench/bench_train.c against bench/bench_train.py): each
# case (mlp, cnn, lstm) in its own process on both sides, so that the peak RSS is the
# case's, TRAIN_REPS times (default 3, best kept), printed as a second table with the
# issue's targets, with THREADS threads (default 2).  TRAIN=0 skips them.
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

if [ "$pattern" != train ]; then
echo "ctorch: $build/bench/bench (threads $threads)" >&2
"$build/bench/bench" $pattern | tee "$tmp/ctorch" >&2
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "PyTorch: bench/torch_ref.py (threads $threads)" >&2
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/torch_ref.py" $pattern | tee "$tmp/torch" >&2
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
fi

# ---- training benchmarks ------------------------------------------------------------
[ "${TRAIN:-1}" != 0 ] && { [ -z "$pattern" ] || [ "$pattern" = train ]; } || exit 0
reps=${TRAIN_REPS:-3}
threads=${THREADS:-2} # the issue's setting, whatever the machine has
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
have_torch=$(/usr/bin/python3 -c 'import torch' 2>/dev/null && echo 1 || echo 0)
: >"$tmp/train_ct"
: >"$tmp/train_torch"
for r in $(seq "$reps"); do
    for c in mlp cnn lstm; do
        echo "training $c, run $r/$reps" >&2
        "$build/bench/bench_train" "$c" "$threads" | tee -a "$tmp/train_ct" >&2
        if [ "$have_torch" = 1 ]; then
            OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/bench_train.py" "$c" "$threads" | tee -a "$tmp/train_torch" >&2
        fi
    done
done
echo
echo "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores visible, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "training: ctorch $(git -C "$here" describe --always --dirty 2>/dev/null || echo "?") vs $(sed -n "s/^# \(PyTorch [^ ]*\).*/\1/p" "$tmp/train_torch" | head -1), threads $threads, best of $reps, $(date -u +%Y-%m-%d)"
echo
# best of the runs: the highest rate, the lowest time or memory
best='
    /^#/ { next }
    { k = $1; v = $3 }
    v == "n/a" { if (!(k in b)) { b[k] = v; u[k] = $2; order[n++] = k }; next }
    !(k in b) { b[k] = v; u[k] = $2; order[n++] = k; next }
    $2 ~ /\/s$/ ? v + 0 > b[k] + 0 : v + 0 < b[k] + 0 { b[k] = v }
    END { for (i = 0; i < n; i++) printf "%s\t%s\t%s\n", order[i], u[order[i]], b[order[i]] }'
awk -F '\t' "$best" "$tmp/train_torch" >"$tmp/train_torch.best"
awk -F '\t' "$best" "$tmp/train_ct" >"$tmp/train_ct.best"
awk -F '\t' '
    FNR == NR { torch[$1] = $3; next }
    function num(v) { return v != "" && v != "n/a" && v + 0 > 0 }
    BEGIN { printf "| %-22s | %-9s | %9s | %9s | %14s | %8s | %6s |\n", "case", "unit", "ctorch", "PyTorch", "ctorch/PyTorch", "target", "met"
            printf "|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------", "-----------", "----------:", "----------:", "---------------:", "---------:", "--------" }
    {
        t = ($1 in torch) ? torch[$1] : "-"
        ratio = "-"; target = "-"; met = "-"
        # targets of the issue: speed as "how many times PyTorch", memory at most PyTorch
        if ($1 == "train_mlp") target = 1.5
        else if ($1 == "train_cnn" || $1 == "train_lstm") target = 1.0
        else if ($1 ~ /_rss$/) target = 1.0
        if (num($3) && num(t)) {
            ratio = sprintf("%.3g", $3 / t)
            x = ($2 == "ms") ? t / $3 : $3 / t   # ms: PyTorch over ctorch (times faster)
            if (target != "-") met = ($1 ~ /_rss$/) ? (x <= target ? "yes" : "no") : (x >= target ? "yes" : "no")
            if ($2 == "ms") ratio = ratio " (" sprintf("%.2fx", x) ")"
        }
        if (target != "-") target = ($1 ~ /_rss$/) ? "<= " target : ">= " target "x"
        printf "| %-22s | %-9s | %9s | %9s | %14s | %8s | %6s |\n", $1, $2, $3, t, ratio, target, met
    }' "$tmp/train_torch.best" "$tmp/train_ct.best"
