//! A core backend's `Context` by name (`cuda` or `host`), or `None` with a
//! line saying why where it is unavailable (or not a core backend).

use cuda_prover_bellperson::{Backend, Context, ContextOptions};

pub(crate) fn context(backend: &str) -> Option<Context> {
    let b = match backend {
        "cuda" => Backend::Cuda,
        "host" => Backend::Host,
        _ => return None,
    };
    match Context::new(ContextOptions {
        backend: b,
        host_devices: 1,
        host_threads: 0,
        devices: Vec::new(),
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            println!("  {backend}: unavailable ({e})");
            None
        }
    }
}
