#!/bin/sh
# fashion_mnist --ddp on 2 processes under mpirun: rank 0 alone prints and saves, the
# checkpoint holds the model's own keys (no "module." prefix) and the world size,
# SIGUSR1 to mpirun (which forwards it; mpirun meets Ctrl-C with SIGTERM, taken the
# same way) saves the partial epoch with exit status 130, and resuming it on 2
# processes ends with the very checkpoint of a run never interrupted; another world
# size, or no --ddp, is refused.  Skipped (77) without Debian's Fashion-MNIST.
# Usage: ddp.sh DIR_OF_THE_EXAMPLES MPIRUN [MPIRUN_FLAGS...]   (CTORCH_DIST_PLUGIN set)
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist
shift
needs_fashion_mnist
MPI="$* -x OMP_NUM_THREADS=1 -x CTORCH_DIST_PLUGIN"
# 64 batches per process and epoch: the signal comes well inside epoch 1.
ARGS="--ddp --limit 4096 --batch-size 32 --test-limit 256 --workers 1"

$MPI -np 2 "$F" $ARGS --epochs 2 --out "$T/whole" >"$T/whole.log" 2>&1 ||
    fail "the whole run failed: $(cat "$T/whole.log")"
contains "$T/whole.log" "data-parallel: 2 processes, batch 32 per process (64 in all)"
[ "$(grep -c '^epoch 2:' "$T/whole.log")" = 1 ] || fail "not rank 0 alone printed: $(cat "$T/whole.log")"
[ "$(grep -c '^epoch 2/2: 100%' "$T/whole.log")" = 1 ] ||
    fail "not rank 0 alone showed the progress: $(cat "$T/whole.log")"
grep "^epoch 2:" "$T/whole.log"
contains "$T/whole/config.json" '"world_size": 2}'
contains "$T/whole/config.json" '"batch_size": 32,'
head -c 4096 "$T/whole/ckpt-000002.safetensors" >"$T/header"
contains "$T/header" '"model.0.weight"'
grep -q 'module\.' "$T/header" && fail "the checkpoint's keys have the wrapper's module. prefix"

$MPI -np 2 "$F" $ARGS --epochs 50 --out "$T/cut" >"$T/cut.log" 2>&1 &
pid=$!
until grep -q "^Parameters:" "$T/cut.log"; do # every rank has its handlers by then
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
done
kill -USR1 "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "the interrupted run exited with $rc, expected 130: $(cat "$T/cut.log")"
grep -q "^interrupted .*: saved .*; continue with --resume latest" "$T/cut.log" ||
    fail "the interrupted run did not say where it stopped: $(cat "$T/cut.log")"
grep "^interrupted " "$T/cut.log"

expect 1 "was trained with --ddp on 2 processes: resume it with --ddp under mpirun -np 2" \
    $MPI -np 1 "$F" $ARGS --epochs 2 --out "$T/cut" --resume latest
expect 1 "was trained with --ddp on 2 processes" \
    "$F" --limit 4096 --batch-size 32 --epochs 2 --out "$T/cut" --resume latest
$MPI -np 2 "$F" $ARGS --epochs 2 --out "$T/cut" --resume latest >"$T/resume.log" 2>&1 ||
    fail "the resumed run failed: $(cat "$T/resume.log")"
contains "$T/resume.log" "resumed from $T/cut/"
cmp "$T/whole/ckpt-000002.safetensors" "$T/cut/ckpt-000002.safetensors" ||
    fail "the resumed run's checkpoint differs from the uninterrupted run's"
grep "^epoch 2:" "$T/whole.log" >"$T/a"
grep "^epoch 2:" "$T/resume.log" >"$T/b"
cmp "$T/a" "$T/b" || fail "epoch 2 differs: $(cat "$T/a") vs $(cat "$T/b")"

# A run without --ddp is not resumed with it.
"$F" --limit 512 --batch-size 32 --test-limit 64 --workers 1 --epochs 1 --out "$T/single" \
    >"$T/single.log" 2>&1 || fail "the single-process run failed: $(cat "$T/single.log")"
expect 1 "was trained without --ddp: resume it without" \
    $MPI -np 2 "$F" --ddp --limit 512 --batch-size 32 --epochs 2 --out "$T/single" --resume latest
echo "ok: data-parallel run, interrupted and resumed = uninterrupted"
