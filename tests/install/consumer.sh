#!/bin/sh
# Builds consumer/ (a CMake project using ctorch) one way and runs its two programs,
# linked against the shared and the static library.
#   consumer.sh MODE BUILD_DIR SOURCE_DIR VERSION CC LAUNCHER [FLAGS...]
# MODE: package (installs BUILD_DIR into a temporary prefix, then find_package; asking
# for an incompatible version must fail), subdirectory (builds the library again in
# the consumer's tree) or fetchcontent (configures only).  LAUNCHER: a compiler
# launcher such as ccache, or none.  FLAGS: sanitizer flags of that build.
set -eu
mode=$1; build=$2; source=$3; version=$4; cc=$5; launcher=$6; shift 6
[ "$launcher" = none ] && launcher=
flags="$*"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
want="ctorch $version sum=14 grad=2 4 6"
major_minor=${version%.*}

configure() { # build dir, cmake arguments...
    dir=$1; shift
    cmake -S "$here/consumer" -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_C_FLAGS="$flags" \
          -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" "$@"
}
run() { # program
    got=$(env -u LD_LIBRARY_PATH "$1") || { echo "FAIL $mode $(basename "$1"): exit status $?"; exit 1; }
    [ "$got" = "$want" ] || { echo "FAIL $mode $(basename "$1"): printed '$got', expected '$want'"; exit 1; }
    echo "ok $mode $(basename "$1"): $got"
}
build_and_run() { # build dir
    cmake --build "$1" -j 2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; echo "FAIL $mode: build"; exit 1; }
    run "$1/hello_shared"
    run "$1/hello_static"
}

case $mode in
package)
    prefix=$tmp/prefix
    cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
    configure "$tmp/ok" -DCT_USE=package -DCT_WANT_VERSION="$major_minor" -DCMAKE_PREFIX_PATH="$prefix" \
        >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; echo "FAIL find_package(ctorch $major_minor)"; exit 1; }
    build_and_run "$tmp/ok"
    # 0.x: another minor version (older or newer) or major version is incompatible.
    major=${version%%.*}; minor=${major_minor#*.}
    bad="$major.$((minor + 1)) $((major + 1)).0"
    [ "$minor" -eq 0 ] || bad="$bad $major.$((minor - 1))"
    for v in $bad; do
        if configure "$tmp/bad-$v" -DCT_USE=package -DCT_WANT_VERSION="$v" -DCMAKE_PREFIX_PATH="$prefix" \
               >"$tmp/bad.log" 2>&1; then
            echo "FAIL find_package(ctorch $v) accepted ctorch $version"; exit 1
        fi
        # (CMake wraps its message: compare with the lines joined.)
        tr -s ' \n' '  ' <"$tmp/bad.log" | grep -q "compatible with requested version \"$v\"" ||
            { cat "$tmp/bad.log"; echo "FAIL find_package(ctorch $v) failed for another reason"; exit 1; }
        echo "ok find_package(ctorch $v) refuses ctorch $version"
    done
    ;;
subdirectory)
    configure "$tmp/sub" -DCT_USE=subdirectory -DCT_SOURCE="$source" >"$tmp/configure.log" 2>&1 ||
        { cat "$tmp/configure.log"; echo "FAIL add_subdirectory configure"; exit 1; }
    build_and_run "$tmp/sub"
    ;;
fetchcontent)
    configure "$tmp/fetch" -DCT_USE=fetchcontent -DCT_SOURCE="$source" >"$tmp/configure.log" 2>&1 ||
        { cat "$tmp/configure.log"; echo "FAIL FetchContent configure"; exit 1; }
    # (Linking to a missing ctorch::ctorch or ctorch::ctorch_static fails the configure.)
    echo "ok fetchcontent: configured, with ctorch::ctorch and ctorch::ctorch_static"
    ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
