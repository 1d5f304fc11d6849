#!/bin/sh
# The example programs' flags: bad values are errors naming the flag and the value
# (exit 2), --help goes to stdout (exit 0), a missing dataset is exit 1 and leaves no
# config.json.  Usage: cli_errors.sh DIR_OF_THE_EXAMPLES
. "$(dirname "$0")/lib.sh"
F=$1/fashion_mnist
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

expect 2 "fashion_mnist: --batch-size: '32abc' is not an integer" "$F" --batch-size 32abc
expect 2 "--workers: 'two' is not an integer" "$F" --workers two
expect 2 "--threads: 'x' is not an integer" "$F" --threads x
expect 2 "--seed: '-1' is out of range" "$F" --seed -1
expect 2 "--seed: '18446744073709551616' is out of range" "$F" --seed 18446744073709551616
expect 2 "--lr: '0' is out of range" "$F" --lr=0
expect 2 "--lr: '1e-3x' is not a number" "$F" --lr 1e-3x
expect 2 "--epochs: '3.5' is not an integer" "$F" --epochs=3.5
expect 2 "--epochs: '99999999999999999999' is out of range" "$F" --epochs 99999999999999999999
expect 2 "--epochs needs a value" "$F" --epochs
expect 2 "--out: '' is empty" "$F" --out=
expect 2 "unknown option --bogus" "$F" --bogus 1
expect 2 "--overwrite takes no value" "$F" --overwrite=yes
expect 2 "unexpected argument 'extra'" "$F" extra

# --help: stdout only, every flag with its default.
"$F" --help >"$T/help" 2>"$T/help.err" || fail "--help exited with $?"
[ -s "$T/help.err" ] && fail "--help wrote to stderr: $(cat "$T/help.err")"
for line in "--epochs N" "train until this epoch (default 3)" "--batch-size N" "(default 64)" \
    "--lr X" "(default 0.001)" "--workers N" "--seed N" "--limit N" "--test-limit N" \
    "--threads N" "--min-accuracy A" "--out DIR" "(default runs/fashion_mnist)" \
    "--resume latest|PATH" "--data DIR" "--overwrite" "-h, --help"; do
    contains "$T/help" "$line"
done
expect 0 "usage: pad_collate" "$1/pad_collate" -h

# A missing dataset: exit 1 naming the directory, and no --out left behind (nor
# config.json in an --out that existed).  --epochs=2 shows the flags were accepted.
expect 1 "cannot read the dataset: ct_fashion_mnist: dataset not found" \
    "$F" --epochs=2 --data "$T/none" --out "$T/run"
expect 1 "$T/none" "$F" --data "$T/none" --out "$T/run"
[ -e "$T/run" ] && fail "a failed run left $T/run"
mkdir "$T/kept"
expect 1 "dataset not found" "$F" --data "$T/none" --out "$T/kept"
[ -e "$T/kept/config.json" ] && fail "a failed run left $T/kept/config.json"
expect 1 "no checkpoint to resume in $T/kept" "$F" --resume latest --out "$T/kept"
expect 1 "cannot resume: " "$F" --resume "$T/none.safetensors" --out "$T/kept"

# The other examples' flags.
expect 2 "pad_collate: --samples: '1e3' is not an integer" "$1/pad_collate" --samples 1e3
expect 2 "--min-accuracy: '2' is out of range (expected 0 to 1)" "$1/pad_collate" --min-accuracy 2
expect 2 "char_lstm: --steps: '0' is out of range" "$1/char_lstm" --steps 0
expect 1 "char_lstm: cannot open $T/none" "$1/char_lstm" --text "$T/none"
printf 'abc' >"$T/short.txt"
expect 1 "is too short" "$1/char_lstm" --text "$T/short.txt"
expect 0 "skipped: no Fashion-MNIST in $T/none" "$1/fashion_mnist_loader" --data "$T/none"
