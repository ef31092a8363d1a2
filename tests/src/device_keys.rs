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
    // A point off its curve is named, not a point outside the subgroup that
    // the device meets first: the curve checks run on the host beside the
    // device's subgroup checks, and their failure wins. Off-curve points in
    // a large section after the bad one (a point 2) and in the small ic.
    let mut p = good.clone();
    std::sync::Arc::make_mut(&mut p.h)[1] = t1;
    let mut torsion = Vec::new();
    p.write(&mut torsion).unwrap();
    let a0 = params_sections(&torsion)[2].0;
    let ic0 = 96 + 96 + 192 + 192 + 96 + 192 + 4;
    for (name, at) in [
        ("section a point 2", a0 + 2 * 96),
        ("section ic point 1", ic0 + 96),
    ] {
        let mut bytes = torsion.clone();
        // y's last byte flipped: still canonical, off the curve.
        bytes[at + 95] ^= 1;
        let bad = dir.0.join("bad.params");
        std::fs::write(&bad, &bytes).unwrap();
        let on = ProvingKey::load_file_on(ctx, ordinal, &bad, KeyCheck::Full)
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted on the device"));
        let off = ProvingKey::load_file(&bad, KeyCheck::Full).err().unwrap();
        assert!(
            on.to_string().contains(name) && on.to_string().contains("not on curve"),
            "{name}: {on}"
        );
        assert_eq!(on.to_string(), off.to_string(), "{name}");
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
    if made == expected {
        return;
    }
    // Name every differing point by section, with its scalar, and whether
    // the device gets that scalar right alone and within its thread's run.
    let mut report = Vec::new();
    for ((name, sec), (off, count, size)) in SECTION_NAMES.iter().zip(params_sections(&expected)) {
        let bad: Vec<usize> = (0..count)
            .filter(|&i| {
                made[off + i * size..off + (i + 1) * size]
                    != expected[off + i * size..off + (i + 1) * size]
            })
            .collect();
        if bad.is_empty() {
            continue;
        }
        report.push(format!(
            "section {name}: {} of {count} points differ, first {:?}",
            bad.len(),
            &bad[..bad.len().min(16)]
        ));
        let scalars =
            cuda_prover_bellperson::setup::test_key_scalars(&shape, [7; 32], *sec).unwrap();
        for &i in bad.iter().take(4) {
            let run = i & !7..(i | 7).min(count - 1) + 1;
            let alone = multiply_on(ctx, ordinal, &scalars[i..=i]);
            let in_run = multiply_on(ctx, ordinal, &scalars[run.clone()]);
            let want = expected_point(
                &scalars[i],
                *sec == cuda_prover_bellperson::core_api::KeySection::BG2,
            );
            report.push(format!(
                "  point {i}: scalar {:?} (its run {run:?}); alone {}, in its run {}",
                scalars[i],
                if alone.point(*sec, 0) == want {
                    "right"
                } else {
                    "WRONG"
                },
                if in_run.point(*sec, i - run.start) == want {
                    "right"
                } else {
                    "WRONG"
                },
            ));
        }
    }
    panic!(
        "{kind:?} 2^{log}: the device's key differs from the host's:\n{}",
        report.join("\n")
    );
}

const SECTION_NAMES: [(&str, cuda_prover_bellperson::core_api::KeySection); 5] = [
    ("h", cuda_prover_bellperson::core_api::KeySection::H),
    ("l", cuda_prover_bellperson::core_api::KeySection::L),
    ("a", cuda_prover_bellperson::core_api::KeySection::A),
    ("b_g1", cuda_prover_bellperson::core_api::KeySection::BG1),
    ("b_g2", cuda_prover_bellperson::core_api::KeySection::BG2),
];

/// (offset, points, bytes a point) of sections h, l, a, b_g1, b_g2 of a
/// key in bellperson's params format.
fn params_sections(b: &[u8]) -> Vec<(usize, usize, usize)> {
    let len = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    // alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, then ic.
    let mut at = 96 + 96 + 192 + 192 + 96 + 192;
    at += 4 + len(at) * 96;
    let mut out = Vec::new();
    for size in [96, 96, 96, 96, 192] {
        let n = len(at);
        out.push((at + 4, n, size));
        at += 4 + n * size;
    }
    out
}

/// The generator of G1 (or G2) times `s`, uncompressed.
fn expected_point(s: &blstrs::Scalar, g2: bool) -> Vec<u8> {
    use group::{Curve, Group};
    if g2 {
        (blstrs::G2Projective::generator() * s)
            .to_affine()
            .to_uncompressed()
            .to_vec()
    } else {
        (blstrs::G1Projective::generator() * s)
            .to_affine()
            .to_uncompressed()
            .to_vec()
    }
}

/// Points computed on a device from scalars: every section of a small key
/// (h with the scalars cycled to 2^k - 1 points).
pub struct DevicePoints(bellperson::groth16::Parameters<blstrs::Bls12>);

impl DevicePoints {
    /// Point `i` of section `sec`, uncompressed.
    pub fn point(&self, sec: cuda_prover_bellperson::core_api::KeySection, i: usize) -> Vec<u8> {
        use cuda_prover_bellperson::core_api::KeySection as S;
        let p = &self.0;
        match sec {
            S::H => p.h[i].to_uncompressed().to_vec(),
            S::L => p.l[i].to_uncompressed().to_vec(),
            S::A => p.a[i].to_uncompressed().to_vec(),
            S::BG1 => p.b_g1[i].to_uncompressed().to_vec(),
            S::BG2 => p.b_g2[i].to_uncompressed().to_vec(),
        }
    }
}

/// A key of generator multiples made on device `ordinal` of `ctx`: every
/// section holds the generator (of G1, or G2 for b_g2) times `s`, h the
/// scalars cycled to 2^k - 1 points.
pub fn multiply_on(ctx: &Context, ordinal: u32, s: &[blstrs::Scalar]) -> DevicePoints {
    use cuda_prover_bellperson::core_api::{KeyBuilder, KeySection, KeyShape, KeyVk};
    use group::{Curve, Group};
    let n = s.len();
    let hn = (n + 1).next_power_of_two() - 1;
    let g1 = blstrs::G1Projective::generator().to_affine();
    let g2 = blstrs::G2Projective::generator().to_affine();
    let vk = KeyVk {
        alpha_g1: core_g1(&g1),
        beta_g1: core_g1(&g1),
        beta_g2: core_g2(&g2),
        gamma_g2: core_g2(&g2),
        delta_g1: core_g1(&g1),
        delta_g2: core_g2(&g2),
        ic: vec![core_g1(&g1)],
    };
    let lens = KeyShape {
        ic_len: 1,
        h_len: hn as u64,
        l_len: n as u64,
        a_len: n as u64,
        b_g1_len: n as u64,
        b_g2_len: n as u64,
    };
    let fr: Vec<_> = s.iter().map(core_fr).collect();
    let h_fr: Vec<_> = s.iter().cycle().take(hn).map(core_fr).collect();
    let mut b = KeyBuilder::new(&vk, &lens).unwrap();
    b.fill(ctx, ordinal, KeySection::H, 0, &h_fr).unwrap();
    for sec in [
        KeySection::L,
        KeySection::A,
        KeySection::BG1,
        KeySection::BG2,
    ] {
        b.fill(ctx, ordinal, sec, 0, &fr).unwrap();
    }
    let dir = Scratch::new(&format!("multiply-{}-{ordinal}-{n}", ctx.backend_name()));
    let path = dir.0.join("k.params");
    b.finish(Some(&path)).unwrap();
    DevicePoints(
        bellperson::groth16::Parameters::<blstrs::Bls12>::read(
            std::fs::File::open(&path).unwrap(),
            false,
        )
        .unwrap(),
    )
}

/// `s` as the core's scalar (blst's Montgomery limbs).
fn core_fr(s: &blstrs::Scalar) -> cuda_prover_bellperson::core_api::Fr {
    cuda_prover_bellperson::core_api::Fr {
        l: blst::blst_fr::from(*s).l,
    }
}

/// `p` as the core's G1 point (blst's affine limbs).
fn core_g1(p: &G1Affine) -> cuda_prover_bellperson::core_api::G1Affine {
    let mut b = blst::blst_p1_affine::default();
    // SAFETY: `b` and the 96 bytes of the uncompressed encoding are valid
    // for the call; a point blstrs holds always decodes.
    let r = unsafe { blst::blst_p1_deserialize(&mut b, p.to_uncompressed().as_ptr()) };
    assert_eq!(r, blst::BLST_ERROR::BLST_SUCCESS);
    cuda_prover_bellperson::core_api::G1Affine {
        x: cuda_prover_sys::ffi::cp_fp { l: b.x.l },
        y: cuda_prover_sys::ffi::cp_fp { l: b.y.l },
    }
}

/// `p` as the core's G2 point.
fn core_g2(p: &G2Affine) -> cuda_prover_bellperson::core_api::G2Affine {
    let mut b = blst::blst_p2_affine::default();
    // SAFETY: as in `core_g1`, with the 192 bytes of a G2 point.
    let r = unsafe { blst::blst_p2_deserialize(&mut b, p.to_uncompressed().as_ptr()) };
    assert_eq!(r, blst::BLST_ERROR::BLST_SUCCESS);
    let fp2 = |f: blst::blst_fp2| cuda_prover_sys::ffi::cp_fp2 {
        fp: [
            cuda_prover_sys::ffi::cp_fp { l: f.fp[0].l },
            cuda_prover_sys::ffi::cp_fp { l: f.fp[1].l },
        ],
    };
    cuda_prover_bellperson::core_api::G2Affine {
        x: fp2(b.x),
        y: fp2(b.y),
    }
}

/// Scalars whose signed 16-bit windows reach every edge of the fixed-base
/// tables: single digits at the sign boundary, carries through every
/// window, the largest scalars below r, and random ones.
pub fn edge_scalars() -> Vec<blstrs::Scalar> {
    use ff::{Field, PrimeField};
    use rand_core::SeedableRng;
    let u = |v: u64| blstrs::Scalar::from(v);
    let mut v = Vec::new();
    for x in [
        1u64,
        2,
        3,
        0x7fff,
        0x8000,
        0x8001,
        0xffff,
        0x1_0000,
        0x1_0001,
        0x1_8000,
        0xffff_ffff,
        0x8000_8000,
        0xffff_ffff_ffff_ffff,
    ] {
        v.push(u(x));
    }
    for k in [16u64, 17, 31, 32, 127, 128, 200, 239, 240, 250, 254] {
        let p = u(2).pow_vartime([k]);
        v.push(p);
        v.push(p - u(1));
        v.push(p + u(1));
    }
    v.push(-u(1));
    v.push(-u(2));
    v.push(-u(0x8000));
    v.push(u(2).invert().unwrap());
    // Every window 0x8000 (each digit exactly at the sign boundary).
    let mut all_half = [0u8; 32];
    for i in 0..15 {
        all_half[2 * i + 1] = 0x80;
    }
    v.push(blstrs::Scalar::from_repr_vartime(all_half).unwrap());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for _ in 0..40 {
        v.push(blstrs::Scalar::random(&mut rng));
    }
    v
}

/// A key made on device `ordinal` of `ctx` from [`edge_scalars`] (and
/// every count of points from 1 to 20, for the partial runs of a thread's
/// points) holds exactly the generators times those scalars, in G1 and G2.
pub fn check_fixed_base_edges_on(ctx: &Context, ordinal: u32) {
    use group::{Curve, Group};
    let scalars = edge_scalars();
    let mut lens: Vec<usize> = (1..=20).collect();
    lens.push(scalars.len());
    for n in lens {
        let s: Vec<blstrs::Scalar> = scalars.iter().cycle().skip(n).take(n).copied().collect();
        let hn = (n + 1).next_power_of_two() - 1;
        let p = multiply_on(ctx, ordinal, &s).0;
        let mut bad = Vec::new();
        for (i, x) in s.iter().enumerate() {
            let e1 = (blstrs::G1Projective::generator() * x).to_affine();
            let e2 = (blstrs::G2Projective::generator() * x).to_affine();
            for (name, ok) in [
                ("h", (i..hn).step_by(n).all(|j| p.h[j] == e1)),
                ("l", p.l[i] == e1),
                ("a", p.a[i] == e1),
                ("b_g1", p.b_g1[i] == e1),
                ("b_g2", p.b_g2[i] == e2),
            ] {
                if !ok {
                    bad.push(format!("{name}[{i}] scalar {x:?}"));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{n} points on {}: {} wrong, first {:?}",
            ctx.backend_name(),
            bad.len(),
            &bad[..bad.len().min(12)]
        );
    }
}
