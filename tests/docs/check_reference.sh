#!/bin/sh
# Builds the API reference with the project's Doxyfile and fails on any doxygen
# warning: an undocumented public function, macro, type or field, a broken
# reference, a malformed comment.
#
#     tests/docs/check_reference.sh SOURCE_DIR OUTPUT_DIR [HEADER_DIR]
#
# writes OUTPUT_DIR/html and OUTPUT_DIR/warnings.log, prints the warnings and exits 1
# when there is any.  HEADER_DIR replaces the inputs (the headers and pages) with the
# headers of that directory: the test that the check refuses an undocumented
# declaration uses it.
set -u
src=${1:?usage: check_reference.sh SOURCE_DIR OUTPUT_DIR [HEADER_DIR]}
out=${2:?usage: check_reference.sh SOURCE_DIR OUTPUT_DIR [HEADER_DIR]}
headers=${3:-}
if ! command -v doxygen >/dev/null 2>&1; then
    echo "doxygen is not installed: the API reference needs it (make deps, or apt-get install doxygen)"
    exit 1
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
cd "$src" || exit 1
rm -rf "$out/html"
# Doxygen reads an empty file when its filter fails: run the filter on each header
# first, and require the same number of lines (so warnings name the header's lines).
for h in ${headers:-include/ctorch.h include/ctorch}; do
    for f in $(find "$h" -name '*.h'); do
        got=$(awk -f tools/doxygen_filter.awk "$f" | wc -l)
        if [ "$got" != "$(wc -l <"$f")" ]; then
            echo "tools/doxygen_filter.awk failed on $f (or changed its number of lines)"
            exit 1
        fi
    done
done
{
    cat Doxyfile
    echo "OUTPUT_DIRECTORY = $out"
    echo "WARN_LOGFILE = $out/warnings.log"
    if [ -n "$headers" ]; then
        echo "INPUT = $headers"
        echo "USE_MDFILE_AS_MAINPAGE ="
    fi
} | doxygen - >"$out/doxygen.log" 2>&1
rc=$?
if [ -s "$out/warnings.log" ] || [ $rc -ne 0 ]; then
    cat "$out/doxygen.log" "$out/warnings.log"
    echo "the API reference has $(grep -c . "$out/warnings.log") warning line(s) (doxygen exit status $rc):" \
         "document what is named above (tools/doxygen_filter.awk says how header comments are read)"
    exit 1
fi
echo "API reference: $out/html/index.html"
