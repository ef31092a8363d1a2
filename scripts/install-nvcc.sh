#!/usr/bin/env bash
# Installs the CUDA 13.0 compiler toolchain from NVIDIA's PyPI wheels into
# .venv-cuda at the repository root. Afterwards: `source scripts/cuda-env.sh`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-cuda"
if [ ! -x "$venv/bin/pip" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet \
    "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" "nvidia-nvvm==13.0.*"
# The wheel's nvcc.profile looks for lib64 next to lib.
cu="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
[ -e "$cu/lib64" ] || ln -s lib "$cu/lib64"
"$cu/bin/nvcc" --version | tail -n 2
echo
echo "Toolchain in $cu. Use it with:"
echo "  source $root/scripts/cuda-env.sh"
echo "which exports:"
bash -c "source '$root/scripts/cuda-env.sh' >/dev/null && env | grep -E '^(PATH|LIBRARY_PATH|NVCC|CUDA_PATH|CUDA_HOME|RUSTFLAGS)=' | sed 's/^/  export /'"
