#!/usr/bin/env bash
# Builds tests/cuda_selftest/*.cu with the wheel nvcc (scripts/install-nvcc.sh)
# against blst (built in /tmp from the blst crate's source) and the CUDA
# backend sources, into device-bin/cuda_selftest (stripped).
# Usage: extern/cuda-prover/tests/cuda_build_selftest.sh [archs, default 90]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
source "$root/scripts/cuda-env.sh"
archs="${1:-90}"
reg="$(ls -d "$HOME"/.cargo/registry/src/index.crates.io-*/ | head -n 1)"
blst="$(ls -d "$reg"/blst-0.3.17/blst)"
sppark="$(ls -d "$reg"/sppark-0.1.16/sppark)"
core="$root/extern/cuda-prover"
work="${TMPDIR:-/tmp}/cuda-selftest-build"
mkdir -p "$work" "$root/device-bin"

# blst with its ADX assembly, matching -D__ADX__ below (sppark's host field
# arithmetic calls blst's mulx_* routines).
if [ ! -f "$work/libblst.a" ]; then
    cc -O2 -fPIC -fno-builtin -D__ADX__ -c "$blst/src/server.c" -o "$work/server.o"
    cc -O2 -fPIC -D__ADX__ -c "$blst/build/assembly.S" -o "$work/assembly.o"
    ar rcs "$work/libblst.a" "$work/server.o" "$work/assembly.o"
fi

gencode=()
for a in ${archs//,/ }; do gencode+=("-gencode=arch=compute_$a,code=sm_$a"); done
flags=(-O3 -std=c++17 -Xcompiler -fPIC --expt-relaxed-constexpr -cudart=static
       -DCP_WITH_CUDA -DFEATURE_BLS12_381 -D__ADX__
       -I"$core/include" -I"$core/src" -I"$core/src/cuda"
       -I"$blst/bindings" -I"$blst/src" -I"$sppark" "${gencode[@]}")

objs=()
pids=()
# witness_pool.cpp, witness_pack.cpp: host code the CUDA device lends its
# pinned buffers with and packs witnesses with;
# r1cs.cpp: the host rows of a phased pass (eval_row_range, first_unsatisfied).
# The self-test's files (tests/cuda_selftest/) get objects of their own
# names, selftest_*.o, beside the backend's.
for f in "$core"/src/cuda/*.cu "$core"/src/cuda/device/*.cu "$core/src/witness_pool.cpp" "$core/src/witness_pack.cpp" \
    "$core/src/r1cs.cpp" \
    "$core"/tests/cuda_selftest/*.cu; do
    case "$f" in
    "$core"/tests/cuda_selftest/*) o="$work/selftest_$(basename "${f%.*}").o" ;;
    *) o="$work/$(basename "${f%.*}").o" ;;
    esac
    objs+=("$o")
    nvcc "${flags[@]}" -c "$f" -o "$o" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
nvcc "${flags[@]}" "${objs[@]}" "$work/libblst.a" -o "$root/device-bin/cuda_selftest" -lpthread -ldl -lrt
strip "$root/device-bin/cuda_selftest"
ls -l "$root/device-bin/cuda_selftest"
