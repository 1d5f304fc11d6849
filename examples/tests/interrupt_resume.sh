#!/bin/sh
# Ctrl-C and --resume: a run interrupted by SIGINT exits with 130 after saving its
# partial epoch, and resuming it (with other hyper-parameters given, which the
# checkpoint overrides and names) ends with the very checkpoint file of a run never
# interrupted.  Skipped (77) without Debian's Fashion-MNIST.
# Usage: interrupt_resume.sh DIR_OF_THE_EXAMPLES
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist
needs_fashion_mnist
ARGS="--limit 256 --batch-size 32 --test-limit 128 --workers 2"

"$F" $ARGS --epochs 2 --out "$T/whole" >"$T/whole.log" 2>&1 || fail "the whole run failed: $(cat "$T/whole.log")"

# Many epochs, so that the signal comes well before the end.  The handler is
# installed before the model is printed.
"$F" $ARGS --epochs 50 --out "$T/cut" >"$T/cut.log" 2>&1 &
pid=$!
until grep -q "^Parameters:" "$T/cut.log"; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "the interrupted run exited with $rc, expected 130: $(cat "$T/cut.log")"
contains "$T/cut.log" "interrupted: finishing the current batch"
grep -q "^interrupted .*: saved .*; continue with --resume latest" "$T/cut.log" ||
    fail "the interrupted run did not say where it stopped: $(cat "$T/cut.log")"
grep "^interrupted " "$T/cut.log"
[ -e "$T/cut/config.json" ] || fail "no config.json beside the interrupted run's checkpoint"

"$F" $ARGS --epochs 2 --lr 0.5 --seed 7 --out "$T/cut" --resume latest >"$T/resume.log" 2>&1 ||
    fail "the resumed run failed: $(cat "$T/resume.log")"
contains "$T/resume.log" "resume: --lr 0.5 is overridden by the checkpoint's 0.001"
contains "$T/resume.log" "resume: --seed 7 is overridden by the checkpoint's 0"
contains "$T/cut/config.json" '"lr": 0.001,'
contains "$T/cut/config.json" '"seed": 0,'
contains "$T/cut/config.json" '"epochs": 2,'
cmp "$T/whole/ckpt-000002.safetensors" "$T/cut/ckpt-000002.safetensors" ||
    fail "the resumed run's checkpoint differs from the uninterrupted run's"
[ -e "$T/cut/interrupted.safetensors" ] && fail "interrupted.safetensors outlived the epoch it saved"
grep "^epoch 2:" "$T/whole.log" >"$T/a"
grep "^epoch 2:" "$T/resume.log" >"$T/b"
cmp "$T/a" "$T/b" || fail "epoch 2 differs: $(cat "$T/a") vs $(cat "$T/b")"
echo "ok: interrupted and resumed = uninterrupted"
