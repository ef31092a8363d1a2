//! Proving-key checks through the Rust layers: keys with points outside the
//! prime-order subgroup are refused unless the caller vouches for them, the
//! verified digest makes a second load cheap, hostile files are clean errors,
//! and huge sizes are refused before any allocation.

use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    create_proof_batch, Blinding, Context, ContextOptions, ErrorCode, KeyCheck, ProvingKey,
    SubgroupCheck,
};
use cuda_prover_tests::device_keys::{check_loads_on, torsion_g1, torsion_g2};
use cuda_prover_tests::{builtin, builtin_keys};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

fn params() -> Parameters<Bls12> {
    builtin_keys(Kind::Chain, 7).params.clone()
}

#[test]
fn torsion_points_in_parameters_are_refused() {
    let t1 = torsion_g1();
    let t2 = torsion_g2();
    type Edit = fn(&mut Parameters<Bls12>, G1Affine, G2Affine);
    let edits: [(&str, Edit); 8] = [
        ("alpha_g1", |p, t, _| p.vk.alpha_g1 = t),
        ("delta_g1", |p, t, _| p.vk.delta_g1 = t),
        ("gamma_g2", |p, _, t| p.vk.gamma_g2 = t),
        ("section ic point 1", |p, t, _| p.vk.ic[1] = t),
        ("section h point 5", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.h)[5] = t
        }),
        ("section l point 0", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.l)[0] = t
        }),
        ("section b_g1 point 2", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.b_g1)[2] = t
        }),
        ("section b_g2 point 3", |p, _, t| {
            std::sync::Arc::make_mut(&mut p.b_g2)[3] = t
        }),
    ];
    let ctx = Context::host(1).unwrap();
    for (name, edit) in edits {
        let mut p = params();
        edit(&mut p, t1, t2);
        let err = ProvingKey::from_params(&p).err().expect("torsion accepted");
        assert_eq!(err.code(), Some(ErrorCode::ParamsFormat), "{name}: {err}");
        assert!(
            err.to_string().contains(name) && err.to_string().contains("subgroup"),
            "{name}: {err}"
        );
        // Through the file format too.
        let mut bytes = Vec::new();
        p.write(&mut bytes).unwrap();
        let err = ProvingKey::from_bytes(&bytes)
            .err()
            .expect("torsion accepted");
        assert!(err.to_string().contains(name), "{name}: {err}");
        // A caller that vouches for the key gets it, but no proof leaves the
        // core outside the prime-order groups: where the torsion component
        // reaches a proof point, the proof is refused.
        let key = ProvingKey::from_params_with(&p, KeyCheck::TrustedUnchecked).unwrap();
        let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(1), 1);
        match create_proof_batch(
            &ctx,
            vec![builtin(Kind::Chain, 7, 2)],
            &key,
            &bl,
            &Placement::on(0),
        ) {
            Err(e) => assert!(
                e.to_string().contains("prime-order subgroup"),
                "{name}: {e}"
            ),
            Ok(proofs) => {
                let pr = &proofs[0].proof;
                assert!(bool::from(pr.a.is_torsion_free()), "{name}");
                assert!(bool::from(pr.b.is_torsion_free()), "{name}");
                assert!(bool::from(pr.c.is_torsion_free()), "{name}");
            }
        }
    }
}

#[test]
fn verified_digest_skips_the_second_check() {
    let dir = std::env::temp_dir().join(format!("cp-keychecks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.params");
    let mut bytes = Vec::new();
    params().write(&mut bytes).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let (_, r1) = ProvingKey::load_file(&path, KeyCheck::Full).unwrap();
    assert_eq!(r1.subgroup, SubgroupCheck::Checked);
    assert!(r1.digest_written && r1.subgroup_time > Duration::ZERO);
    let (_, r2) = ProvingKey::load_file(&path, KeyCheck::Full).unwrap();
    assert_eq!(r2.subgroup, SubgroupCheck::DigestMatched);
    assert_eq!(r2.subgroup_time, Duration::ZERO);
    assert_eq!(r2.points, r1.points);
    // The same content under another name has no record: checked again.
    let copy = dir.join("copy.params");
    std::fs::copy(&path, &copy).unwrap();
    let (_, r3) = ProvingKey::load_file(&copy, KeyCheck::FullNoDigest).unwrap();
    assert_eq!(r3.subgroup, SubgroupCheck::Checked);
    assert!(!r3.digest_written);
    assert!(!dir.join("copy.params.verified").exists());
    // A torsion point swapped in after the record was written is caught.
    let mut p = params();
    std::sync::Arc::make_mut(&mut p.l)[3] = torsion_g1();
    let mut bad = Vec::new();
    p.write(&mut bad).unwrap();
    assert_eq!(bad.len(), bytes.len());
    std::fs::write(&path, &bad).unwrap();
    let err = ProvingKey::load_file(&path, KeyCheck::Full).err().unwrap();
    assert!(err.to_string().contains("section l point 3"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Through the digest the core leaves the on-curve check until it knows
/// whether the file's verified record vouches for it: the error a file
/// gets is still the one a reading from the start with every check finds
/// (an earlier point off its curve before a later bad encoding, in the
/// same section and across sections), the buffer path's message, and a
/// record that no longer matches the bytes vouches for nothing.
#[test]
fn the_first_bad_point_is_named_with_the_curve_check_deferred() {
    let dir = std::env::temp_dir().join(format!("cp-keycurve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut orig = Vec::new();
    params().write(&mut orig).unwrap();
    let be32 = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    // Section starts: vk (864 bytes), then ic, h, l, a, b_g1 (G1), b_g2.
    let mut first = Vec::new();
    let mut at = 864;
    for elem in [96, 96, 96, 96, 96, 192] {
        first.push(at + 4);
        at += 4 + be32(&orig, at) * elem;
    }
    let (h0, l0, a0) = (first[1], first[2], first[3]);
    // y's last byte flipped: still canonical, off the curve.
    let off_curve = |b: &mut Vec<u8>, p: usize| b[p + 95] ^= 1;
    // x above p with the flag bits clear: a bad encoding.
    let bad_encoding = |b: &mut Vec<u8>, p: usize| b[p..p + 48].fill(0x1f);
    let cases: [(&str, &str, Vec<u8>); 3] = [
        ("section h point 5", "not on curve", {
            let mut b = orig.clone();
            off_curve(&mut b, h0 + 5 * 96);
            bad_encoding(&mut b, h0 + 10 * 96);
            b
        }),
        ("section h point 3", "not on curve", {
            let mut b = orig.clone();
            off_curve(&mut b, h0 + 3 * 96);
            bad_encoding(&mut b, l0);
            b
        }),
        ("section a point 2", "not on curve", {
            let mut b = orig.clone();
            off_curve(&mut b, a0 + 2 * 96);
            b
        }),
    ];
    let path = dir.join("k.params");
    for (name, why, bytes) in cases {
        // A record of the original beside it: it must not vouch for these.
        std::fs::write(&path, &orig).unwrap();
        let (_, r) = ProvingKey::load_file(&path, KeyCheck::Full).unwrap();
        assert!(r.subgroup == SubgroupCheck::Checked || r.subgroup == SubgroupCheck::DigestMatched);
        std::fs::write(&path, &bytes).unwrap();
        let from_file = ProvingKey::load_file(&path, KeyCheck::Full)
            .err()
            .expect("accepted");
        let from_buffer = ProvingKey::from_bytes(&bytes).err().expect("accepted");
        assert_eq!(
            from_file.code(),
            Some(ErrorCode::ParamsFormat),
            "{from_file}"
        );
        let msg = from_file.to_string();
        assert!(msg.contains(name) && msg.contains(why), "{name}: {msg}");
        let buffer_msg = from_buffer.to_string();
        assert!(
            buffer_msg.contains(name) && buffer_msg.contains(why),
            "{name}: {buffer_msg}"
        );
        // The same words from the section's name to the reason (the
        // offset included), the file's path aside.
        let words = |m: &str| {
            let from = m.find(name).unwrap();
            m[from..from + m[from..].find(why).unwrap() + why.len()].to_string()
        };
        assert_eq!(words(&msg), words(&buffer_msg), "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hostile_params_files_are_clean_errors() {
    let dir = std::env::temp_dir().join(format!("cp-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A named pipe: refused at once, not waited on.
    let fifo = dir.join("pipe.params");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let t = Instant::now();
    let err = ProvingKey::from_file(&fifo).err().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(err.code(), Some(ErrorCode::ParamsIo), "{err}");
    assert!(err.to_string().contains("named pipe"), "{err}");
    // A file shrinking and growing while loads run: clean errors or keys,
    // never a SIGBUS (which would end this test process).
    let path = dir.join("moving.params");
    let mut bytes = Vec::new();
    params().write(&mut bytes).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut ok, mut io, mut format) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let len = [bytes.len() as u64 / 3, bytes.len() as u64, 100][(i % 3) as usize];
                f.set_len(len).unwrap();
                if len == bytes.len() as u64 {
                    use std::os::unix::fs::FileExt;
                    f.write_all_at(&bytes, 0).unwrap();
                }
                i += 1;
            }
        });
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(2) {
            match ProvingKey::load_file(&path, KeyCheck::FullNoDigest) {
                Ok(_) => ok += 1,
                Err(e) if e.code() == Some(ErrorCode::ParamsIo) => io += 1,
                Err(e) if e.code() == Some(ErrorCode::ParamsFormat) => format += 1,
                Err(e) => panic!("unexpected: {e}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    eprintln!("moving file: {ok} loaded, {io} I/O errors, {format} format errors");
    assert!(ok + io + format > 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn huge_sizes_are_refused() {
    let err = Context::new(ContextOptions {
        host_devices: u32::MAX,
        ..Default::default()
    })
    .err()
    .unwrap();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("4294967295"), "{err}");
    let key = &builtin_keys(Kind::Chain, 7).key;
    for n in [1u64 << 32, 1 << 60, u64::MAX] {
        let err = key.memory_estimate(n).err().unwrap();
        assert_eq!(err.code(), Some(ErrorCode::InvalidArgument), "{err}");
    }
    assert!(key.memory_estimate(1 << 31).unwrap().working_bytes >= (1u64 << 31) * 128);
}

#[test]
fn fixed_base_edges_on_the_host_backend() {
    cuda_prover_tests::device_keys::check_fixed_base_edges_on(&Context::host(2).unwrap(), 1);
}

#[test]
fn subgroup_checks_on_a_device_name_the_same_point() {
    check_loads_on(&Context::host(2).unwrap(), 1);
}
