#!/bin/sh
# Writes event files with every SummaryWriter method (test_tensorboard's test_write_all)
# and reads them back with Python's protobuf (classes protoc makes from ctorch's .proto
# files, into the build tree) in check_events.py.  Exit 77 (skipped) without
# /usr/bin/python3, its protobuf and numpy, or protoc.
#
#     check.sh TEST_TENSORBOARD PROTO_DIR WORK_DIR
set -eu
test_bin=$1 proto=$2 work=$3
py=/usr/bin/python3
[ -x "$py" ] || { echo "skipped: no $py"; exit 77; }
"$py" -c "import google.protobuf, numpy" 2>/dev/null || { echo "skipped: $py lacks protobuf or numpy (python3-protobuf, python3-numpy)"; exit 77; }
command -v protoc >/dev/null || { echo "skipped: no protoc (protobuf-compiler)"; exit 77; }
rm -rf "$work"
mkdir -p "$work/py" "$work/events"
protoc --python_out="$work/py" -I"$proto" -I/usr/include "$proto"/*.proto
CT_TB_DIR="$work/events" "$test_bin" test_write_all
"$py" "$(dirname "$0")/check_events.py" "$work/events" "$work/py"
