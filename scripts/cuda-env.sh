# Source this file (bash) to use the CUDA toolchain installed by
# scripts/install-nvcc.sh: nvcc on PATH, the static CUDA runtime on the
# linker path of cc, and NVCC for the `cc` crate (sys/build.rs adds the
# runtime's folder to rustc's link search itself).
_cp_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_cp_cu="$(ls -d "$_cp_root"/.venv-cuda/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -n 1)"
if [ -z "$_cp_cu" ] || [ ! -x "$_cp_cu/bin/nvcc" ]; then
    echo "cuda-env.sh: run scripts/install-nvcc.sh first" >&2
    return 1 2>/dev/null || exit 1
fi
export CUDA_PATH="$_cp_cu"
export CUDA_HOME="$_cp_cu"
export NVCC="$_cp_cu/bin/nvcc"
export PATH="$_cp_cu/bin:$PATH"
export LIBRARY_PATH="$_cp_cu/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
unset _cp_root _cp_cu
