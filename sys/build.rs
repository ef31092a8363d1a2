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
    // SAFETY: the first thing this build script does, before it opens any
    // file, so the descriptors that cargo's jobserver variables name are
    // still the jobserver's. `cc` (compiling the C++ core in parallel) reads
    // the same descriptors; neither closes them.
    let jobs = unsafe { jobserver::Client::from_env() };
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let core = manifest.join("../extern/cuda-prover");
    let include = core.join("include");
    let src = core.join("src");
    let blst_src = PathBuf::from(env::var("DEP_BLST_C_SRC").expect("blst exposes its C source"));
    let blst_bindings = blst_src.join("../bindings");
    let cuda = env::var("CARGO_FEATURE_CUDA").is_ok();

    // A folder is scanned whole, subfolders included: the sources and every
    // header, the umbrella include/cuda_prover.h and the family headers
    // under include/cuda_prover/.
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
        build_cuda(&src, &include, &blst_bindings, jobs.as_ref());
    }
}

fn build_cuda(src: &Path, include: &Path, blst_bindings: &Path, jobs: Option<&jobserver::Client>) {
    let sppark_root = PathBuf::from(env::var("DEP_SPPARK_ROOT").expect("sppark exposes its root"));
    // sppark's host-side field types include blst's blst_t.hpp from blst's C source.
    let blst_src = blst_bindings.join("../src");
    let cuda_src = src.join("cuda");
    let nvcc = find_nvcc();
    let adx = blst_uses_adx();
    let archs = env::var("CUDA_PROVER_CUDA_ARCHS").unwrap_or_else(|_| "80,90".to_string());

    // One static library per .cu file: each is compiled whole-program (no
    // -rdc, which `cc` would turn on for a build of several CUDA files), as
    // sppark's kernels expect, and the units stay free of each other's
    // non-template kernels. The files compile in parallel on the jobs cargo
    // gives the build (its jobserver, else NUM_JOBS), the files with the most
    // device code first, so that the longest compile starts at once.
    let files = sources(&cuda_src, "cu");
    let mut slowest_first = files.clone();
    slowest_first.sort_by_key(|f| std::cmp::Reverse(device_code_weight(f)));
    // sm_90 machine code (H100/H200) so the first proof pays no PTX JIT,
    // sm_80 machine code for A100, and compute_90 PTX as the fallback for
    // newer GPUs.
    let real: Vec<String> = archs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    let mut gencodes: Vec<String> = real
        .iter()
        .map(|a| format!("-gencode=arch=compute_{a},code=sm_{a}"))
        .collect();
    gencodes.push("-gencode=arch=compute_90,code=compute_90".to_string());
    // nvcc runs its front end (cicc) once per virtual architecture and the
    // assembler once per real one, one after the other unless told
    // otherwise: for the MSM file that is two front ends of minutes each.
    let front_ends = real.len() + usize::from(!real.iter().any(|a| a == "90"));
    // cc picks nvcc from $NVCC (and recognizes it as nvcc from that).
    env::set_var("NVCC", &nvcc);
    let compile = |f: &Path| {
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
            .include(&cuda_src)
            .include(blst_bindings)
            .include(&blst_src)
            .include(&sppark_root)
            .define("CP_WITH_CUDA", None)
            .define("FEATURE_BLS12_381", None)
            .flag("-std=c++17")
            .flag("-Xcompiler")
            .flag("-fPIC")
            .flag("--expt-relaxed-constexpr")
            .flag("-cudart=static")
            .flag(format!("--threads={front_ends}"));
        for g in &gencodes {
            nv.flag(g);
        }
        if adx {
            nv.define("__ADX__", None);
        }
        nv.file(f);
        nv.compile(&format!("cuda_prover_cuda_{stem}"));
    };
    parallel_on_jobs(&slowest_first, jobs, compile);

    // One library per file, in `sources`' order (device/* sorts before
    // device.cu). Their order does not matter: cargo bundles them all into
    // this crate's rlib, one archive the linker searches as a whole.
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

// Runs `job` for every file, as many at once as cargo's jobserver lends
// tokens (this build script holds one; each further job waits for one), or
// NUM_JOBS at once without a jobserver. Files are started in order.
fn parallel_on_jobs(
    files: &[PathBuf],
    client: Option<&jobserver::Client>,
    job: impl Fn(&Path) + Sync,
) {
    let workers = env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for w in 0..workers {
            let (next, failed, job) = (&next, &failed, &job);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= files.len() || failed.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                // Worker 0 runs on the token this build script holds.
                let _token = match (w, client) {
                    (0, _) | (_, None) => None,
                    (_, Some(c)) => Some(c.acquire().expect("a jobserver token")),
                };
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&files[i])));
                if run.is_err() {
                    failed.store(true, std::sync::atomic::Ordering::SeqCst);
                    panic!("compiling {} failed", files[i].display());
                }
            });
        }
    });
}

// How much device code a .cu file instantiates, to start the slowest compiles
// first: the MSM (Pippenger and tables in G1 and G2, minutes per
// architecture: msm.cu, whose parts msm_context_*.cuh include the engine),
// then the files with kernels of their own, then the rest.
fn device_code_weight(f: &Path) -> u32 {
    let text = std::fs::read_to_string(f).unwrap_or_default();
    if text.contains("#include \"msm_engine.cuh\"") || text.contains("#include \"msm_context_") {
        2
    } else if text.contains("__global__") {
        1
    } else {
        0
    }
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

// A program on PATH, as `which` finds it. The same crate (and version) that
// sppark's build script uses: with it in both builds, the build scripts'
// shared dependencies keep one set of features, so turning `cuda` on
// rebuilds no dependency of another crate (ec-gpu-gen, bellperson, ...).
fn search_path(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
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
