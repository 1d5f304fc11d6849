#!/bin/sh
# ctorch's DistributedDataParallel against PyTorch 1.13's (gloo backend), side by side
# in one run: bench/bench_ddp.c and bench/bench_ddp.py on the MLP and the demo CNN,
# 1 process x 2 threads (no DDP, batch 64) and 2 processes x 1 thread (DDP, batch 32
# each), then a table of samples/s with the ratios ctorch/PyTorch and 2x1/1x2 per
# framework, and the share of ctorch's backward spent waiting for communication.
#
#   bench/ddp.sh [BUILD_DIR]      ROUNDS=n (default 2): the four runs alternate n times,
#                                 the best kept; REPS=n: timed repetitions in each run
#                                 MPIRUN_FLAGS: mpirun's (default: the Makefile's)
#
# PyTorch gets its best setting, torch.set_num_threads(n) with OPENBLAS_NUM_THREADS=1;
# ctorch's processes get OMP_NUM_THREADS=n.  The two frameworks run one after the
# other, never at the same time.
set -eu
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/machine.sh"
rounds=${ROUNDS:-2}
root_flag=
[ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root
flags=${MPIRUN_FLAGS:-"$root_flag --oversubscribe --bind-to none --mca btl self,vader"}
plugin=$(cd "$build" && pwd)/libctorch_mpi.so
[ -x "$build/bench/bench_ddp" ] || { echo "no $build/bench/bench_ddp: build it first" >&2; exit 1; }
[ -e "$plugin" ] || { echo "no $plugin: configure $build with Open MPI installed (libopenmpi-dev)" >&2; exit 1; }
have_torch=true
/usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null || {
    echo "PyTorch with gloo is not installed (apt-get install python3-torch): its column is empty" >&2
    have_torch=false
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-ddp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
r=1
while [ "$r" -le "$rounds" ]; do
    echo "round $r/$rounds" >&2
    OMP_NUM_THREADS=2 "$build/bench/bench_ddp" all 1x2 | tee -a "$tmp/ctorch" >&2
    # shellcheck disable=SC2086 # flags are words
    mpirun $flags -np 2 -x OMP_NUM_THREADS=1 -x CTORCH_DIST_PLUGIN="$plugin" \
        "$build/bench/bench_ddp" all 2x1 | tee -a "$tmp/ctorch" >&2
    if $have_torch; then
        /usr/bin/python3 "$here/bench_ddp.py" all 1x2 | tee -a "$tmp/torch" >&2
        /usr/bin/python3 "$here/bench_ddp.py" all 2x1 | tee -a "$tmp/torch" >&2
    fi
    r=$((r + 1))
done
[ -e "$tmp/torch" ] || : >"$tmp/torch"

echo
cpu_summary
echo "load average (1, 5, 15 min) before: $load_before, after: $(cut -d ' ' -f 1-3 /proc/loadavg) (above the core count, other jobs shared the cores: the figures, 1x2's most, are low)"
echo "ctorch $(git -C "$here" describe --always --dirty 2>/dev/null || echo "?") vs" \
    "$(sed -n 's/^# \(PyTorch [^ ]*\).*/\1/p' "$tmp/torch" | head -1) (gloo); mpirun $(mpirun --version 2>/dev/null | sed -n 's/.*(Open MPI) //p'), best of $rounds rounds, $(date -u +%Y-%m-%d)"
echo
awk -F '\t' '
    # The best round of each configuration (the highest rate), and the backward figures
    # of that same run.
    FNR == NR { if ($0 !~ /^#/ && (!($1 in torch) || $3 > torch[$1])) torch[$1] = $3; next }
    /^#/ { run++; next }
    $2 == "samples/s" { if (!($1 in ct) || $3 > ct[$1]) { ct[$1] = $3; best_run[$1] = run } next }
    { of_run[$1, run] = $3 }
    function ratio(a, b) { return (a != "" && b != "" && b > 0) ? sprintf("%.2fx", a / b) : "-" }
    function show(v) { return v == "" ? "-" : v }
    END {
        printf "| %-4s | %-28s | %16s | %17s | %14s |\n", "case", "configuration", "ctorch samples/s", "PyTorch samples/s", "ctorch/PyTorch"
        printf "|------|------------------------------|-----------------:|------------------:|---------------:|\n"
        split("mlp cnn", cases, " ")
        for (i = 1; i <= 2; i++) {
            c = cases[i]
            for (j = 1; j <= 2; j++) {
                cfg = j == 1 ? "1x2" : "2x1"
                what = j == 1 ? "1 process x 2 threads" : "2 processes x 1 thread, DDP"
                k = "ddp_" c "_" cfg
                printf "| %-4s | %-28s | %16s | %17s | %14s |\n", c, what, show(ct[k]), show(torch[k]), ratio(ct[k], torch[k])
            }
            a = "ddp_" c "_2x1"; b = "ddp_" c "_1x2"
            printf "| %-4s | %-28s | %16s | %17s | %14s |\n", c, "2x1 / 1x2", ratio(ct[a], ct[b]), ratio(torch[a], torch[b]), ""
        }
        printf "\nctorch DDP (2x1), per step: backward, of which waiting for the all-reduces\n"
        printf "| %-4s | %12s | %14s | %10s |\n", "case", "backward ms", "comm wait ms", "share %"
        printf "|------|-------------:|---------------:|-----------:|\n"
        for (i = 1; i <= 2; i++) {
            k = "ddp_" cases[i] "_2x1"
            n = best_run[k]
            printf "| %-4s | %12s | %14s | %10s |\n", cases[i], show(of_run[k "_backward", n]),
                   show(of_run[k "_comm_wait", n]), show(of_run[k "_comm_share", n])
        }
    }' "$tmp/torch" "$tmp/ctorch"
