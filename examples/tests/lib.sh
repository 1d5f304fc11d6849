# Checks shared by the example programs' tests (POSIX sh).

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect STATUS TEXT COMMAND...: COMMAND exits with STATUS and prints TEXT (stdout or
# stderr, as a fixed string).
expect() {
    want=$1 text=$2
    shift 2
    out=$("$@" 2>&1)
    got=$?
    [ "$got" = "$want" ] || fail "'$*' exited with $got, expected $want; it printed: $out"
    case $out in
    *"$text"*) ;;
    *) fail "'$*' did not print '$text'; it printed: $out" ;;
    esac
    echo "ok: $* -> $got"
}

# contains FILE TEXT: FILE holds TEXT (a fixed string).
contains() {
    grep -qF -- "$2" "$1" || fail "$1 lacks '$2'; it holds: $(cat "$1")"
}

# needs_fashion_mnist: exits 77 (skipped) without Debian's Fashion-MNIST; else makes
# the scratch directory $T, removed at exit.
needs_fashion_mnist() {
    [ -e /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz ] || {
        echo "skipped: no Fashion-MNIST (apt-get install dataset-fashion-mnist)"
        exit 77
    }
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
}
