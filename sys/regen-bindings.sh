#!/usr/bin/env bash
# Regenerates sys/src/bindings.rs from extern/cuda-prover/include/cuda_prover.h.
# Needs libclang (Debian: apt-get install libclang-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
CP_REGEN_BINDINGS=1 CP_REQUIRE_LIBCLANG=1 cargo test -p cuda-prover-sys --test bindings -- --exact committed_bindings_match_header
echo "wrote sys/src/bindings.rs"
