#!/usr/bin/env bash
# Builds and runs the core self-test against a blst checkout.
#   tests/run-selftest.sh [BLST_DIR]
# BLST_DIR (default /tmp/blst) must hold bindings/blst.h; libblst.a is built
# there from src/server.c and build/assembly.S when missing. Copy blst from
# ~/.cargo/registry/src/index.crates.io-*/blst-*/blst if /tmp/blst is absent.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
blst="${1:-/tmp/blst}"
if [ ! -f "$blst/bindings/blst.h" ]; then
    src=$(ls -d "$HOME"/.cargo/registry/src/index.crates.io-*/blst-*/blst 2>/dev/null | tail -1 || true)
    [ -n "$src" ] || { echo "no blst at $blst and none in the cargo registry" >&2; exit 1; }
    rm -rf "$blst" && cp -r "$src" "$blst"
fi
if [ ! -f "$blst/libblst.a" ]; then
    (cd "$blst" && cc -O2 -fPIC -c src/server.c -o server.o &&
        cc -O2 -fPIC -c build/assembly.S -o assembly.o && ar rcs libblst.a server.o assembly.o)
fi
srcs=$(find "$here/src" -name '*.cpp' -not -path '*/cuda/*' | sort)
# The core once (objects of this checkout only, in a fresh folder), then
# one binary per self-test.
objs=$(mktemp -d "${TMPDIR:-/tmp}/cp_core_objs.XXXXXX")
trap 'rm -rf "$objs"' EXIT
# Every core compiles (JOBS, default: all of them), one object per source.
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
cxxflags=(-std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter -pthread
          -I"$here/include" -I"$here/src" -I"$blst/bindings")
obj_of() { echo "$objs/$(echo "${1#$here/src/}" | tr / _).o"; }
export -f obj_of
export here objs CXX
printf '%s\n' $srcs | xargs -P "$jobs" -I{} bash -c \
    '${CXX:-g++} "$@" -c "$0" -o "$(obj_of "$0")"' {} "${cxxflags[@]}"
built=()
for f in $srcs; do built+=("$(obj_of "$f")"); done
for t in core_selftest key_checks_selftest point_batch_selftest; do
    out="${TMPDIR:-/tmp}/cp_$t"
    # A self-test is tests/NAME.cpp, or every .cpp of the folder tests/NAME/.
    if [ -d "$here/tests/$t" ]; then
        tsrcs=("$here/tests/$t"/*.cpp)
    else
        tsrcs=("$here/tests/$t.cpp")
    fi
    ${CXX:-g++} "${cxxflags[@]}" "${tsrcs[@]}" "${built[@]}" "$blst/libblst.a" -o "$out"
    "$out"
done
