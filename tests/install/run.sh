#!/bin/sh
# Installs ctorch from a build tree into a temporary prefix, then builds hello.c
# outside the tree with pkg-config, linked against the shared and then the static
# library, and checks what it prints.  The shared build runs as the README says, with
# no LD_LIBRARY_PATH: ctorch.pc gives it an rpath to the prefix.
#   run.sh BUILD_DIR VERSION CC [EXTRA_CFLAGS...]   (EXTRA_CFLAGS: sanitizer flags of that build)
set -eu
build=$1; version=$2; cc=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctorch-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
pc=$(dirname "$(find "$prefix" -name ctorch.pc)")
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cp "$here/hello.c" "$tmp/"
cd "$tmp"
want="ctorch $version sum=14 grad=2 4 6"
[ "$(pkg-config --modversion ctorch)" = "$version" ] ||
    { echo "FAIL ctorch.pc says version $(pkg-config --modversion ctorch), not $version"; exit 1; }

check() { # name, command...
    name=$1; shift
    got=$("$@") || { echo "FAIL $name: exit status $?"; exit 1; }
    [ "$got" = "$want" ] || { echo "FAIL $name: printed '$got', expected '$want'"; exit 1; }
    echo "ok $name: $got"
}

# Shared library: the headers and -lctorch come from the prefix only.
echo "pkg-config --cflags --libs ctorch: $(pkg-config --cflags --libs ctorch)"
"$cc" "$@" -Wall -Wextra -Werror hello.c -o hello_shared $(pkg-config --cflags --libs ctorch)
libdir=$(pkg-config --variable=libdir ctorch)
# SONAME libctorch.so.MAJOR.MINOR while the major version is 0, else libctorch.so.MAJOR.
case $version in 0.*) abi=${version%.*} ;; *) abi=${version%%.*} ;; esac
readelf -d "$libdir/libctorch.so" | grep -q "SONAME.*\[libctorch\.so\.$abi\]" ||
    { echo "FAIL SONAME is not libctorch.so.$abi:"; readelf -d "$libdir/libctorch.so" | grep SONAME; exit 1; }
echo "ok SONAME libctorch.so.$abi"
check shared env -u LD_LIBRARY_PATH ./hello_shared

# Static library: --static adds the private dependencies (OpenBLAS, zlib, OpenMP);
# -l:libctorch.a picks the archive over the .so next to it.
static_flags=$(pkg-config --cflags --libs --static ctorch | sed 's/-lctorch\b/-l:libctorch.a/')
echo "pkg-config --cflags --libs --static ctorch: $static_flags"
"$cc" "$@" -Wall -Wextra -Werror hello.c -o hello_static $static_flags
if readelf -d hello_static | grep -q 'libctorch\.so'; then
    echo "FAIL static: hello_static needs libctorch.so"; exit 1
fi
check static ./hello_static

# The MPI plugin, when this build has one, is installed beside the library, where
# the installed libctorch.so finds it (no CTORCH_DIST_PLUGIN).
if [ -e "$build/libctorch_mpi.so" ]; then
    [ -e "$libdir/libctorch_mpi.so" ] || { echo "FAIL libctorch_mpi.so is not installed in $libdir"; exit 1; }
    cat >dist_available.c <<'C'
#include <stdio.h>
#include <ctorch.h>
int main(void) { printf("available=%d\n", ct_dist_is_available()); return 0; }
C
    "$cc" "$@" -Wall -Wextra -Werror dist_available.c -o dist_available $(pkg-config --cflags --libs ctorch)
    got=$(env -u LD_LIBRARY_PATH -u CTORCH_DIST_PLUGIN ./dist_available)
    [ "$got" = "available=1" ] || { echo "FAIL the installed library does not find its MPI plugin: $got"; exit 1; }
    echo "ok the installed MPI plugin loads"
fi
