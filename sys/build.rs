// Compiles the C++ core with `cc` and links it. The host backend is always
// built; the `cuda` feature adds the CUDA backend, compiled with nvcc against
// sppark's headers. Nothing else happens here: the bindings are generated
// ahead of time (see sys/regen-bindings.sh) and committed.
use std::env;
use std::path::{Path, PathBuf};

fn sources(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(sources(&p, ext));
            } else if p.extension().map(|x| x == ext).unwrap_or(false) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let core = manifest.join("../extern/cuda-prover");
    let include = core.join("include");
    let src = core.join("src");
    let blst_src = PathBuf::from(env::var("DEP_BLST_C_SRC").expect("blst exposes its C source"));
    let blst_bindings = blst_src.join("../bindings");
    let cuda = env::var("CARGO_FEATURE_CUDA").is_ok();

    println!("cargo:rerun-if-changed={}", core.display());
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUDA_PROVER_CUDA_ARCHS");

    let mut cpp = cc::Build::new();
    cpp.cpp(true)
        .std("c++17")
        .include(&include)
        .include(&src)
        .include(&blst_bindings)
        .flag_if_supported("-pthread")
        .flag_if_supported("-Wno-unused-parameter")
        .warnings(true);
    if cuda {
        cpp.define("CP_WITH_CUDA", None);
    }
    // The host backend and the shared orchestration: every .cpp under src/
    // except the CUDA folder.
    for f in sources(&src, "cpp") {
        if !f.components().any(|c| c.as_os_str() == "cuda") {
            cpp.file(f);
        }
    }
    cpp.compile("cuda_prover_core");

    if cuda {
        build_cuda(&src, &include, &blst_bindings);
    }
}

fn build_cuda(src: &Path, include: &Path, blst_bindings: &Path) {
    let sppark_root = PathBuf::from(env::var("DEP_SPPARK_ROOT").expect("sppark exposes its root"));
    // sppark's host-side field types include blst's blst_t.hpp from blst's C source.
    let blst_src = blst_bindings.join("../src");
    let cuda_src = src.join("cuda");
    let nvcc = find_nvcc();
    let adx = blst_uses_adx();
    let archs = env::var("CUDA_PROVER_CUDA_ARCHS").unwrap_or_else(|_| "80,90".to_string());

    // One library per .cu file: each is compiled whole-program (no -rdc), as
    // sppark's kernels expect, and the units stay free of each other's
    // non-template kernels.
    let files = sources(&cuda_src, "cu");
    // cc picks nvcc from $NVCC (and recognizes it as nvcc from that).
    env::set_var("NVCC", &nvcc);
    std::thread::scope(|scope| {
        for f in &files {
            let (archs, sppark_root, blst_src, cuda_src) =
                (&archs, &sppark_root, &blst_src, &cuda_src);
            scope.spawn(move || {
                let stem = f.file_stem().unwrap().to_string_lossy().to_string();
                let mut nv = cc::Build::new();
                nv.cuda(true)
                    .cudart("none")
                    .cargo_metadata(false)
                    .warnings(false)
                    .debug(false)
                    .opt_level(3)
                    .include(include)
                    .include(src)
                    .include(cuda_src)
                    .include(blst_bindings)
                    .include(blst_src)
                    .include(sppark_root)
                    .define("CP_WITH_CUDA", None)
                    .define("FEATURE_BLS12_381", None)
                    .flag("-std=c++17")
                    .flag("-Xcompiler")
                    .flag("-fPIC")
                    .flag("--expt-relaxed-constexpr")
                    .flag("-cudart=static");
                // sm_90 machine code (H100/H200) so the first proof pays no PTX
                // JIT, sm_80 machine code for A100, and compute_90 PTX as the
                // fallback for newer GPUs.
                for a in archs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                    nv.flag(format!("-gencode=arch=compute_{a},code=sm_{a}"));
                }
                nv.flag("-gencode=arch=compute_90,code=compute_90");
                if adx {
                    nv.define("__ADX__", None);
                }
                nv.file(f);
                nv.compile(&format!("cuda_prover_cuda_{stem}"));
            });
        }
    });

    // Link order: each library before the ones it uses (device ->
    // device/* -> eval, msm, ntt -> registry), as `sources` sorts them.
    println!(
        "cargo:rustc-link-search=native={}",
        env::var("OUT_DIR").unwrap()
    );
    for f in &files {
        let stem = f.file_stem().unwrap().to_string_lossy();
        println!("cargo:rustc-link-lib=static=cuda_prover_cuda_{stem}");
    }
    println!("cargo:rustc-link-lib=dylib=stdc++");

    // The CUDA runtime is linked statically; it loads the driver at run time,
    // so a machine without a GPU gets an error code, not a link failure.
    if let Some(dir) = cuda_lib_dir(&nvcc) {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
    println!("cargo:rustc-link-lib=dylib=rt");
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-link-lib=dylib=pthread");
}

// Whether the blst crate compiles its ADX (mulx) assembly, which it decides
// the same way: sppark's host code calls blst's assembly by those names.
fn blst_uses_adx() -> bool {
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return false;
    }
    if env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .contains("target-cpu=")
    {
        return env::var("CARGO_CFG_TARGET_FEATURE")
            .unwrap_or_default()
            .split(',')
            .any(|f| f == "adx");
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("adx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

// nvcc from $NVCC, else from PATH, else the .venv-cuda of the workspace.
fn find_nvcc() -> PathBuf {
    if let Ok(p) = env::var("NVCC") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return p;
        }
        if let Some(found) = search_path(&p.to_string_lossy()) {
            return found;
        }
    }
    if let Some(found) = search_path("nvcc") {
        return found;
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    if let Ok(entries) = std::fs::read_dir(manifest.join("../.venv-cuda/lib")) {
        for e in entries.flatten() {
            let p = e.path().join("site-packages/nvidia/cu13/bin/nvcc");
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "nvcc not found: run scripts/install-nvcc.sh and `source scripts/cuda-env.sh`, or set NVCC"
    );
}

fn search_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

// The folder holding libcudart_static.a next to nvcc (toolkit or wheel layout).
fn cuda_lib_dir(nvcc: &Path) -> Option<PathBuf> {
    let root = nvcc.canonicalize().ok()?.parent()?.parent()?.to_path_buf();
    let mut candidates = vec![
        root.join("lib64"),
        root.join("lib"),
        root.join("targets/x86_64-linux/lib"),
        root.join("targets/sbsa-linux/lib"),
    ];
    if let Ok(p) = env::var("CUDA_PATH") {
        candidates.push(PathBuf::from(&p).join("lib64"));
        candidates.push(PathBuf::from(&p).join("lib"));
    }
    candidates
        .into_iter()
        .find(|d| d.join("libcudart_static.a").is_file())
}
