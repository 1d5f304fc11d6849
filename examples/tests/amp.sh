#!/bin/sh
# --amp f16 (autocast and the gradient scaler): the checkpoints keep the scaler's
# state and config.json the mode; a run interrupted by SIGINT and resumed without
# --amp takes f16 from its checkpoint and ends with the very checkpoint file of a run
# never interrupted; another --amp on resume is overridden and named.  Skipped (77)
# without Debian's Fashion-MNIST.
# Usage: amp.sh DIR_OF_THE_EXAMPLES
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist
needs_fashion_mnist
ARGS="--limit 256 --batch-size 32 --test-limit 128 --workers 2"

"$F" $ARGS --amp f16 --epochs 2 --out "$T/whole" >"$T/whole.log" 2>&1 ||
    fail "the whole run failed: $(cat "$T/whole.log")"
contains "$T/whole.log" "mixed precision: autocast to f16, gradient scaler"
contains "$T/whole/config.json" '"amp": "f16"'
grep -aq '"scaler.scale"' "$T/whole/ckpt-000002.safetensors" || fail "the checkpoint holds no scaler state"

"$F" $ARGS --amp f16 --epochs 50 --out "$T/cut" >"$T/cut.log" 2>&1 &
pid=$!
until grep -q "^Parameters:" "$T/cut.log"; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 130 ] || fail "the interrupted run exited with $rc, expected 130: $(cat "$T/cut.log")"
grep "^interrupted " "$T/cut.log"

"$F" $ARGS --epochs 2 --out "$T/cut" --resume latest >"$T/resume.log" 2>&1 ||
    fail "the resumed run failed: $(cat "$T/resume.log")"
contains "$T/resume.log" "resume: --amp f16 from the checkpoint"
contains "$T/cut/config.json" '"amp": "f16"'
cmp "$T/whole/ckpt-000002.safetensors" "$T/cut/ckpt-000002.safetensors" ||
    fail "the resumed run's checkpoint differs from the uninterrupted run's"

"$F" $ARGS --amp bf16 --epochs 3 --out "$T/whole" --resume latest >"$T/other.log" 2>&1 ||
    fail "the run resumed with another --amp failed: $(cat "$T/other.log")"
contains "$T/other.log" "resume: --amp bf16 is overridden by the checkpoint's f16"
contains "$T/other.log" "epoch 3: "
echo "ok: --amp f16 interrupted and resumed = uninterrupted; its mode and scaler are kept"
