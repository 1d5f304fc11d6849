#!/bin/sh
# Fails on any symbol a library exports outside ctorch's namespace, and on any public
# function the headers declare that it does not export.
#   check_symbols.sh INCLUDE_DIR|- LIB...
# A shared library's exported symbols are its defined dynamic ones (nm -D); an
# archive's are its defined global ones (nm -g), which a program linking it sees.
# Allowed: ct_* and CT_* (functions, and the ct__site call-site recorder).  With
# INCLUDE_DIR, every function of INCLUDE_DIR/ctorch/*.h must be among them (`-` skips
# this check).
set -eu
export LC_ALL=C # one sort order for comm
here=$(cd "$(dirname "$0")" && pwd)
include=$1; shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-symbols.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$include" != - ]; then
    awk -v list=1 -f "$here/../call_sites/check_wrappers.awk" "$include"/ctorch/*.h |
        sort -u >"$tmp/public"
fi
status=0
for lib in "$@"; do
    case $lib in
        *.so | *.so.*) nm -D --defined-only "$lib" ;;
        *) nm -g --defined-only "$lib" ;;
    esac | awk 'NF == 3 { print $3 }' | sort -u >"$tmp/exported"
    grep -v -E '^(ct_|CT_)' "$tmp/exported" >"$tmp/foreign" || true
    n=$(wc -l <"$tmp/exported"); ok=1
    if [ "$n" -eq 0 ]; then echo "FAIL $lib: no exported symbols (not a library?)"; status=1; continue; fi
    if [ -s "$tmp/foreign" ]; then
        echo "FAIL $lib exports $(wc -l <"$tmp/foreign") of $n symbols outside ct_/CT_:"
        sed 's/^/  /' "$tmp/foreign"
        ok=0
    fi
    if [ "$include" != - ]; then
        comm -23 "$tmp/public" "$tmp/exported" >"$tmp/missing"
        if [ -s "$tmp/missing" ]; then
            echo "FAIL $lib does not export $(wc -l <"$tmp/missing") public functions:"
            sed 's/^/  /' "$tmp/missing"
            ok=0
        fi
    fi
    if [ $ok = 1 ]; then echo "ok $lib: $n symbols, all ct_/CT_"; else status=1; fi
done
exit $status
