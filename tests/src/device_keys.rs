//! Keys made and checked on a device (any backend's): the same assertions
//! for the host backend's tests and the CUDA ones.

use std::path::{Path, PathBuf};

use blstrs::{G1Affine, G2Affine};
use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::setup::{make_test_key_on, write_test_key};
use cuda_prover_bellperson::{Context, ErrorCode, KeyCheck, ProvingKey, ShapeData, SubgroupCheck};

use crate::builtin_keys;

/// A point of E(Fp) outside G1: x counts up until x^3 + 4 has a root; the
/// cofactor is not cleared.
pub fn torsion_g1() -> G1Affine {
    for x0 in 3u64.. {
        let xv = [x0, 0, 0, 0, 0, 0];
        let four = [4u64, 0, 0, 0, 0, 0];
        // SAFETY: blst's field functions with pointers to initialized
        // values alive for each call.
        let bytes = unsafe {
            let (mut x, mut b, mut rhs, mut y) = Default::default();
            blst::blst_fp_from_uint64(&mut x, xv.as_ptr());
            blst::blst_fp_from_uint64(&mut b, four.as_ptr());
            blst::blst_fp_sqr(&mut rhs, &x);
            blst::blst_fp_mul(&mut rhs, &rhs, &x);
            blst::blst_fp_add(&mut rhs, &rhs, &b);
            if !blst::blst_fp_sqrt(&mut y, &rhs) {
                continue;
            }
            let p = blst::blst_p1_affine { x, y };
            let mut out = [0u8; 96];
            blst::blst_p1_affine_serialize(out.as_mut_ptr(), &p);
            out
        };
        let p = G1Affine::from_uncompressed_unchecked(&bytes).unwrap();
        assert!(!bool::from(p.is_torsion_free()), "x = {x0} gave a G1 point");
        return p;
    }
    unreachable!()
}

/// The same over E'(Fp2): y^2 = x^3 + 4(1 + i).
pub fn torsion_g2() -> G2Affine {
    for x0 in 3u64.. {
        let xv = [x0, 0, 0, 0, 0, 0];
        let four = [4u64, 0, 0, 0, 0, 0];
        // SAFETY: as above.
        let bytes = unsafe {
            let mut x = blst::blst_fp2::default();
            let mut b = blst::blst_fp2::default();
            blst::blst_fp_from_uint64(&mut x.fp[0], xv.as_ptr());
            blst::blst_fp_from_uint64(&mut b.fp[0], four.as_ptr());
            blst::blst_fp_from_uint64(&mut b.fp[1], four.as_ptr());
            let (mut rhs, mut y) = Default::default();
            blst::blst_fp2_sqr(&mut rhs, &x);
            blst::blst_fp2_mul(&mut rhs, &rhs, &x);
            blst::blst_fp2_add(&mut rhs, &rhs, &b);
            if !blst::blst_fp2_sqrt(&mut y, &rhs) {
                continue;
            }
            let p = blst::blst_p2_affine { x, y };
            let mut out = [0u8; 192];
            blst::blst_p2_affine_serialize(out.as_mut_ptr(), &p);
            out
        };
        let p = G2Affine::from_uncompressed_unchecked(&bytes).unwrap();
        assert!(!bool::from(p.is_torsion_free()));
        return p;
    }
    unreachable!()
}

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("cp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, p: &bellperson::groth16::Parameters<blstrs::Bls12>) {
    let mut bytes = Vec::new();
    p.write(&mut bytes).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A key's subgroup checks on device `ordinal` of `ctx`: a good file is
/// checked and loads; a point outside the subgroup in a large section (G1
/// and G2) is refused with the host check's own message, naming the point.
pub fn check_loads_on(ctx: &Context, ordinal: u32) {
    let dir = Scratch::new(&format!("loads-on-{}-{ordinal}", ctx.backend_name()));
    let good = builtin_keys(Kind::Chain, 9).params.clone();
    let path = dir.0.join("good.params");
    write(&path, &good);
    let (key, rep) = ProvingKey::load_file_on(ctx, ordinal, &path, KeyCheck::FullNoDigest).unwrap();
    assert_eq!(rep.subgroup, SubgroupCheck::Checked);
    let (host, _) = ProvingKey::load_file(&path, KeyCheck::FullNoDigest).unwrap();
    assert_eq!(key.fingerprint(), host.fingerprint());
    type Edit = fn(&mut bellperson::groth16::Parameters<blstrs::Bls12>, G1Affine, G2Affine);
    let edits: [(&str, Edit); 4] = [
        ("section h point 1", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.h)[1] = t
        }),
        ("section l point 300", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.l)[300] = t
        }),
        ("section a point 0", |p, t, _| {
            std::sync::Arc::make_mut(&mut p.a)[0] = t
        }),
        ("section b_g2 point 7", |p, _, t| {
            std::sync::Arc::make_mut(&mut p.b_g2)[7] = t
        }),
    ];
    let (t1, t2) = (torsion_g1(), torsion_g2());
    for (name, edit) in edits {
        let mut p = good.clone();
        edit(&mut p, t1, t2);
        let bad = dir.0.join("bad.params");
        write(&bad, &p);
        let on = ProvingKey::load_file_on(ctx, ordinal, &bad, KeyCheck::Full)
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted on the device"));
        let off = ProvingKey::load_file(&bad, KeyCheck::Full).err().unwrap();
        assert_eq!(on.code(), Some(ErrorCode::ParamsFormat), "{name}: {on}");
        assert!(on.to_string().contains(name), "{name}: {on}");
        assert_eq!(on.to_string(), off.to_string(), "{name}");
        assert!(
            !dir.0.join("bad.params.verified").exists(),
            "{name}: a record"
        );
    }
}

/// A TEST key made on device `ordinal` of `ctx` has the bytes of the one
/// the host's cores write, for `kind` at 2^`log`.
pub fn check_keygen_on(ctx: &Context, ordinal: u32, kind: Kind, log: u32) {
    let c = BuiltIn::new(kind, log, 3).unwrap();
    let shape = ShapeData::record(c).unwrap();
    let mut expected = Vec::new();
    let t = std::time::Instant::now();
    let (vk, _) = write_test_key(&shape, [7; 32], &mut expected, &mut |_| {}).unwrap();
    let host_s = t.elapsed().as_secs_f64();
    let dir = Scratch::new(&format!("keygen-on-{}-{ordinal}", ctx.backend_name()));
    let path = dir.0.join("k.params");
    let t = std::time::Instant::now();
    let (key, _) =
        make_test_key_on(&shape, [7; 32], ctx, ordinal, Some(&path), &mut |_| {}).unwrap();
    let dev_s = t.elapsed().as_secs_f64();
    eprintln!(
        "keygen {kind:?} 2^{log}: {} on device {ordinal} {dev_s:.2} s, host cores {host_s:.2} s",
        ctx.backend_name()
    );
    assert_eq!(*key.vk(), vk);
    let made = std::fs::read(&path).unwrap();
    assert_eq!(made.len(), expected.len());
    if let Some(i) = made.iter().zip(&expected).position(|(a, b)| a != b) {
        panic!("{kind:?} 2^{log}: the device's key differs from byte {i}");
    }
}
