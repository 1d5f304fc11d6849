#!/bin/sh
# --profile N: the N training steps after the first six are profiled; the run prints
# the op table and writes --out/profile/trace.json (a Chrome trace with the main
# thread and the loader workers) and key_averages.txt, and config.json does not record
# the flag (it decides no number).  Skipped (77) without Debian's Fashion-MNIST.
# Usage: profile.sh DIR_OF_THE_EXAMPLES
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist
needs_fashion_mnist
"$F" --epochs 1 --limit 640 --test-limit 128 --workers 2 --out "$T/run" --profile 2 >"$T/log" 2>&1 ||
    fail "the run failed: $(cat "$T/log")"
contains "$T/log" "profile of the training steps after the first 6: $T/run/profile/trace.json"
contains "$T/log" "Self CPU time total:"
contains "$T/run/profile/key_averages.txt" "ProfilerStep#6"
contains "$T/run/profile/key_averages.txt" "ProfilerStep#7"
contains "$T/run/profile/key_averages.txt" "convolution_backward"
grep -q "ProfilerStep#8" "$T/run/profile/key_averages.txt" && fail "a third step was profiled"
contains "$T/run/profile/trace.json" '"traceEvents"'
contains "$T/run/profile/trace.json" '"loader worker 0"'
grep -q '"profile"' "$T/run/config.json" && fail "config.json records --profile"
if [ -x /usr/bin/python3 ]; then
    /usr/bin/python3 -c "import json, sys; d = json.load(open(sys.argv[1])); assert len(d['traceEvents']) > 50" \
        "$T/run/profile/trace.json" || fail "trace.json is not a Chrome trace"
fi
echo "ok: --profile"
