#!/bin/sh
# --tensorboard DIR: one epoch writes an event file holding, at step 1, the losses,
# accuracies and learning rate, a weight and a gradient histogram per parameter, and
# the grid of misclassified test images; read back with Python's protobuf from
# ctorch's .proto files (skipped without Debian's Fashion-MNIST; without python3's
# protobuf or protoc only the file's existence is checked).
# Usage: tensorboard.sh DIR_OF_THE_EXAMPLES PROTO_DIR
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist PROTO=$2
needs_fashion_mnist
"$F" --epochs 1 --limit 512 --test-limit 256 --workers 2 --out "$T/ck" --tensorboard "$T/tb" >"$T/log" 2>&1 ||
    fail "the run failed: $(cat "$T/log")"
contains "$T/log" "TensorBoard: logging to $T/tb"
set -- "$T"/tb/events.out.tfevents.*
[ -s "$1" ] || fail "no event file in $T/tb"
py=/usr/bin/python3
if ! [ -x "$py" ] || ! "$py" -c "import google.protobuf" 2>/dev/null || ! command -v protoc >/dev/null; then
    echo "ok: event file written (no python3 protobuf or protoc to read it)"
    exit 0
fi
mkdir "$T/py" && protoc --python_out="$T/py" -I"$PROTO" -I/usr/include "$PROTO"/*.proto || fail "protoc"
"$py" - "$1" "$T/py" <<'PY' || fail "the event file lacks what --tensorboard logs"
import struct, sys
sys.path.insert(0, sys.argv[2])
import event_pb2
data = open(sys.argv[1], "rb").read()
seen, i = {}, 0
while i < len(data):
    (n,) = struct.unpack("<Q", data[i:i + 8])
    ev = event_pb2.Event.FromString(data[i + 12:i + 12 + n])
    i += 12 + n + 4
    for v in ev.summary.value:
        seen[v.tag] = (ev.step, v.WhichOneof("value"), v)
want = {"loss/train": "simple_value", "loss/test": "simple_value", "accuracy/train": "simple_value",
        "accuracy/test": "simple_value", "lr": "simple_value", "weights/0.weight": "histo",
        "grads/0.weight": "histo", "weights/9.bias": "histo", "grads/9.bias": "histo",
        "misclassified": "image"}
for tag, kind in want.items():
    assert tag in seen and seen[tag][:2] == (1, kind), (tag, seen.get(tag, [None])[:2])
assert abs(seen["lr"][2].simple_value - 1e-3) < 1e-9
assert 0 < seen["accuracy/test"][2].simple_value < 1
img = seen["misclassified"][2].image
assert img.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n" and img.width == 224, img.width
print("ok: the event file holds", len(seen), "tags")
PY
