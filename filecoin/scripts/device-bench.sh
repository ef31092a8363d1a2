#!/usr/bin/env bash
# Builds the Filecoin C2 bench and the cuda-prover-filecoin binary with the
# CUDA backend here and copies them (stripped) into device-bin/filecoin/, for
# a GPU machine without Rust or network. There:
#   device-bin/filecoin/bench-c2 --backends cuda,bellperson --runs 3 \
#       --params-dir /tmp/fc-test-params --json "$OUT/c2.json"
# (the bench generates the 2 KiB TEST parameters into --params-dir first).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck disable=SC1091
source scripts/cuda-env.sh
out=device-bin/filecoin
mkdir -p "$out"
rm -f "$out"/bench-c2 "$out"/cuda-prover-filecoin
pick() { # cargo JSON messages -> "target-name executable" lines
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"], m["executable"])'
}
# The feature set of scripts/device-tests.sh: one CUDA build serves both.
features="--features cuda-prover-tests/cuda,cuda-prover-gkr/cuda"
{
    cargo bench --workspace --bench c2 $features --no-run --message-format=json
    cargo build --release --workspace --bins $features --message-format=json
} | pick | while read -r name exe; do
    case "$name" in
        c2) cp "$exe" "$out/bench-c2" ;;
        cuda-prover-filecoin) cp "$exe" "$out/cuda-prover-filecoin" ;;
    esac
done
strip "$out"/*
du -sh "$out"
