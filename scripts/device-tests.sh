#!/usr/bin/env bash
# Builds the CUDA test binaries, the benchmarks (bench-prover, bench-scaling,
# bench-c2) and the CLIs (cuda-prover, cuda-prover-filecoin) here, and copies
# them (stripped) into device-bin/ with device-bin/run.sh, for a machine that
# has a GPU but no Rust toolchain. There: `device-bin/run.sh [tests|bench|stream|scaling|all] OUTDIR`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source scripts/cuda-env.sh
out=device-bin
mkdir -p "$out"
rm -f "$out"/test-* "$out"/bench-* "$out"/cuda-prover "$out"/cuda-prover-filecoin "$out"/cuda-prover-service "$out"/run.sh
# cargo JSON messages -> "target-name executable" lines (GKR's prefixed gkr-)
pick() { python3 scripts/cargo-executables.py; }
features="--features cuda-prover-tests/cuda,cuda-prover-gkr/cuda"
{
    cargo test --release --workspace $features --no-run --message-format=json
    cargo bench --workspace --bench prover --bench scaling --bench c2 $features --no-run --message-format=json
    cargo build --release --workspace --bins $features --message-format=json
} | pick | while read -r name exe; do
    case "$name" in
        cuda | gkr-cuda | engine | routing | proofs | bad_input | seed_scenario | pipeline | witness | isolation | key_checks) cp "$exe" "$out/test-$name" ;;
        prover) cp "$exe" "$out/bench-prover" ;;
        scaling) cp "$exe" "$out/bench-scaling" ;;
        cuda-prover) cp "$exe" "$out/cuda-prover" ;;
        c2) cp "$exe" "$out/bench-c2" ;;
        cuda-prover-filecoin) cp "$exe" "$out/cuda-prover-filecoin" ;;
        cuda-prover-service) cp "$exe" "$out/cuda-prover-service" ;;
    esac
done
strip "$out"/*
cp scripts/device-run.sh "$out/run.sh"
du -sh "$out"
