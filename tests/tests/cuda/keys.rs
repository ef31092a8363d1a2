//! Keys on the GPU: fixed-base edge cases, keygen equal to the host's
//! cores, and subgroup checks that name the same point as the host's.

use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::{KeyCheck, ProvingKey};
use cuda_prover_tests::{builtin, cached_builtin_keys, gpu};

use crate::common::max_log;

#[test]
fn cuda_fixed_base_edges() {
    let Some(ctx) = gpu() else { return };
    cuda_prover_tests::device_keys::check_fixed_base_edges_on(&ctx, 0);
}

#[test]
fn cuda_keygen_equals_host_cores() {
    let Some(ctx) = gpu() else { return };
    // Small and medium sections, G1 and G2, dense and 0/1-heavy columns.
    for (kind, log) in [(Kind::Chain, 10), (Kind::Bits, 14), (Kind::Chain, 16)] {
        cuda_prover_tests::device_keys::check_keygen_on(&ctx, 0, kind, log);
    }
}

#[test]
fn cuda_subgroup_checks_name_the_same_point() {
    let Some(ctx) = gpu() else { return };
    cuda_prover_tests::device_keys::check_loads_on(&ctx, 0);
    // The same key checked on the host's cores and on the GPU (the key
    // file from CP_PARAMS_DIR, where the GPU machine's runs keep them).
    let Some(dir) = std::env::var_os("CP_PARAMS_DIR") else {
        return;
    };
    let log = max_log().max(18);
    cached_builtin_keys(Kind::Chain, log);
    let path = cuda_prover_groth16::params::key_path(
        std::path::Path::new(&dir),
        &builtin(Kind::Chain, log, 0),
    );
    let (on_host, h) = ProvingKey::load_file(&path, KeyCheck::FullNoDigest).unwrap();
    let (on_gpu, g) = ProvingKey::load_file_on(&ctx, 0, &path, KeyCheck::FullNoDigest).unwrap();
    assert_eq!(on_host.fingerprint(), on_gpu.fingerprint());
    eprintln!(
        "subgroup checks of chain 2^{log} ({} points): host cores {:.3} s, gpu {:.3} s (loads {:.3} s / {:.3} s)",
        g.points,
        h.subgroup_time.as_secs_f64(),
        g.subgroup_time.as_secs_f64(),
        h.total.as_secs_f64(),
        g.total.as_secs_f64()
    );
}
