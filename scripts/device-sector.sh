#!/usr/bin/env bash
# Builds what the 32 GiB sector modes of scripts/device-run.sh need on a GPU
# machine without Rust (bench-c2 and cuda-prover-filecoin, with the cuda
# feature), stripped and xz-compressed into dev-carry-sector/ (about 30 MB)
# with go.sh, which unpacks them into device-bin/ there and runs a mode:
#   bash dev-carry-sector/go.sh [MODE, default sector-workers] OUTDIR
# (END=SECONDS bounds sector-workers, as device-run.sh says).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
source scripts/cuda-env.sh
out=dev-carry-sector
mkdir -p "$out"
rm -f "$out"/*.xz
cargo build --release -p cuda-prover-filecoin --features cuda --bins
bench=$(cargo bench -p cuda-prover-filecoin --features cuda --bench c2 --no-run --message-format=json |
    python3 scripts/cargo-executables.py | awk '$1 == "c2" { print $2 }')
cp "$bench" "$out/bench-c2"
cp target/release/cuda-prover-filecoin "$out/cuda-prover-filecoin"
strip "$out/bench-c2" "$out/cuda-prover-filecoin"
xz -T0 -6 -f "$out/bench-c2" "$out/cuda-prover-filecoin"
cat > "$out/go.sh" <<'GO'
#!/usr/bin/env bash
# On the GPU machine, from the repository root: unpacks the binaries into
# device-bin/ and runs device-run.sh's MODE into OUTDIR.
set -u
if [ $# -ge 2 ]; then mode=$1 out=$2; else mode=sector-workers out=${1:?OUTDIR}; fi
here=$(dirname "$0")
mkdir -p device-bin "$out"
for f in "$here"/*.xz; do
    n=$(basename "$f" .xz)
    xz -dc "$f" > "device-bin/$n" && chmod +x "device-bin/$n"
done
cp scripts/device-run.sh device-bin/run.sh
bash device-bin/run.sh "$mode" "$out"
GO
chmod +x "$out/go.sh"
du -sh "$out"
