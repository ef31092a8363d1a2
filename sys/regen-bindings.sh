#!/usr/bin/env bash
# Regenerates sys/src/bindings.rs from extern/cuda-prover/include/cuda_prover.h,
# the umbrella over the family headers of include/cuda_prover/ (core, groth16,
# gkr, testing): the bindings hold every family, in the umbrella's order.
# Needs libclang (Debian: apt-get install libclang-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
CP_REGEN_BINDINGS=1 CP_REQUIRE_LIBCLANG=1 cargo test --release -p cuda-prover-sys --test bindings -- --exact committed_bindings_match_header
echo "wrote sys/src/bindings.rs"
