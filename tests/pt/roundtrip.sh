#!/bin/sh
# ctorch -> .pt -> PyTorch -> .pt -> ctorch, and torchvision's resnet18 state dict read
# by ctorch; skipped (77) where /usr/bin/python3 has no torch (Debian's python3-torch).
#
#     roundtrip.sh PT_TORCH_PROGRAM WORK_DIR
set -eu
prog=$1 dir=$2
here=$(dirname "$0")
py=/usr/bin/python3
if ! "$py" -c "import torch" 2>/dev/null; then
    echo "skipped: $py cannot import torch"
    exit 77
fi
rm -rf "$dir" && mkdir -p "$dir"
if "$py" -c "import torchvision" 2>/dev/null; then
    "$py" "$here/../fixtures/gen_pt.py" resnet18 "$dir"
else
    echo "note: no torchvision, resnet18 left out"
fi
"$prog" write "$dir"
"$py" "$here/roundtrip.py" "$dir"
"$prog" read "$dir"
rm -rf "$dir"
