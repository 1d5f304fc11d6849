#!/bin/sh
# The progress bar on a terminal (a pseudo-terminal from script(1)): lines
# redrawn in place with "\r" and erase-to-end-of-line, fitted to the width, with
# elapsed time, ETA and rate, one newline per epoch; and plain lines in a file, the
# final one once.  Usage: progress_bar.sh DIR_OF_THE_EXAMPLES
. "$(dirname "$0")/lib.sh"
P="$1/pad_collate --epochs 2 --samples 400 --workers 0 --min-accuracy 0"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
command -v script >/dev/null || fail "script(1) is missing (Debian's bsdutils)"

# on_terminal COLUMNS: the bar's output on a terminal that wide (only stderr reaches it).
on_terminal() {
    COLUMNS=$1 script -qec "stty cols $1 2>/dev/null; $P >/dev/null" /dev/null >"$T/tty" ||
        fail "pad_collate on a terminal exited with $?: $(cat "$T/tty")"
    # Each redraw, without its escape sequence, fits in the width less one column.
    tr '\r' '\n' <"$T/tty" | sed "s/${esc}\[K//" | awk -v max=$(($1 - 1)) '
        length($0) > max { print "a line of " length($0) " columns: " $0; bad = 1 }
        END { exit bad }' || fail "the bar is wider than a terminal of $1 columns"
    # One newline per epoch: the bar ends its line once (a terminal turns \n into \r\n).
    newlines=$(tr -cd '\n' <"$T/tty" | wc -c)
    [ "$newlines" -eq 2 ] || fail "$newlines lines on the terminal, expected 2: $(cat "$T/tty")"
}
esc=$(printf '\033')
cr=$(printf '\r')
on_terminal 100
contains "$T/tty" "${cr}epoch 1/2:   0%|"
contains "$T/tty" "| 0/13 [00:00<?, ? batches/s]${esc}[K"
contains "$T/tty" "${cr}epoch 2/2: 100%|####"
contains "$T/tty" "| 13/13 ["
contains "$T/tty" "batches/s, loss="
grep -q '\[[0-9][0-9]:[0-9][0-9]<[0-9][0-9]:[0-9][0-9], ' "$T/tty" ||
    fail "no [elapsed<eta, in: $(cat "$T/tty")"
on_terminal 40 # too narrow for a bar: the text is cut

# Not a terminal: plain lines, no control characters, the final state of each epoch once.
$P 2>"$T/plain" >/dev/null || fail "pad_collate exited with $?"
grep -q "$cr\|$esc" "$T/plain" && fail "control characters in the plain progress lines"
for epoch in 1 2; do
    n=$(grep -c "^epoch $epoch/2: 100% 13/13 \[" "$T/plain")
    [ "$n" -eq 1 ] || fail "epoch $epoch's final line $n times: $(cat "$T/plain")"
done
echo "ok: the progress bar on a terminal and in a file"
