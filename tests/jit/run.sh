#!/bin/sh
# ctorch-run end to end: MAKE_CTM traces a model, ctorch-run runs the saved file, and the
# output must equal ct_forward's bitwise; then the error cases and their exit statuses.
# run.sh CTORCH_RUN MAKE_CTM WORK_DIR
set -u
RUN=$1 MAKE=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$MAKE" make "$W" || fail "make_ctm make"
"$RUN" "$W/model.ctm" --input "$W/x.safetensors" --output "$W/y.safetensors" || fail "ctorch-run"
"$MAKE" compare "$W/y.safetensors" "$W/want.safetensors" || fail "outputs differ"
"$RUN" "$W/model.ctm" --print > "$W/print.txt" || fail "--print"
grep -q "= input input_0" "$W/print.txt" || fail "--print shows no input"
"$RUN" --help | grep -q usage || fail "--help"
# Usage errors: exit status 2.
"$RUN" 2> "$W/err.txt"; [ $? = 2 ] || fail "no arguments: status"
grep -q "no model file" "$W/err.txt" || fail "no arguments: message"
"$RUN" "$W/model.ctm" --input 2> "$W/err.txt"; [ $? = 2 ] || fail "--input without file: status"
"$RUN" "$W/model.ctm" --input "$W/x.safetensors" 2> "$W/err.txt"; [ $? = 2 ] || fail "no --output: status"
# Other errors: exit status 1 and a message naming what was wrong.
"$RUN" "$W/none.ctm" --print 2> "$W/err.txt"; [ $? = 1 ] || fail "missing model: status"
grep -q "none.ctm" "$W/err.txt" || fail "missing model: message"
"$RUN" "$W/model.ctm" --input "$W/none.safetensors" --output "$W/o.safetensors" 2> "$W/err.txt"
[ $? = 1 ] || fail "missing input file: status"
grep -q "none.safetensors" "$W/err.txt" || fail "missing input file: message"
"$RUN" "$W/model.ctm" --input "$W/unnamed.safetensors" --output "$W/o.safetensors" 2> "$W/err.txt"
[ $? = 1 ] || fail "input not in the file: status"
grep -q "has no tensor named 'input_0'" "$W/err.txt" || fail "input not in the file: message"
"$RUN" "$W/model.ctm" --input "$W/wide.safetensors" --output "$W/o.safetensors" 2> "$W/err.txt"
[ $? = 1 ] || fail "input of the wrong shape: status"
grep -q "input_0" "$W/err.txt" || fail "input of the wrong shape: message"
[ ! -e "$W/o.safetensors" ] || fail "a failed run wrote its output file"
exit 0
