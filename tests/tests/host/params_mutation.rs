//! A seeded mutation campaign against the params parser and the key-loading
//! entry points of the ABI (buffer, file, in-memory parts): truncations,
//! byte and bit flips, length fields, torsion points, points at infinity,
//! flag bits, swapped and replaced points. Every case must end in a clean
//! error (the right code, a message naming the place) or in a key whose
//! proofs lie in the right groups (A and C in G1, B in G2). Cases that change
//! bytes no valid key could have (everything but swaps and replacements by
//! valid points) must be rejected. Keys are small (2^7) so the campaign
//! takes seconds.

use std::collections::BTreeMap;

use blstrs::{G1Affine, G2Affine};
use cuda_prover_bellperson::circuits::Kind;
use cuda_prover_bellperson::core_api;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{
    create_proof_batch, Blinding, Context, ErrorCode, KeyCheck, ProvingKey,
};
use cuda_prover_device as device;
use cuda_prover_sys::ffi;
use cuda_prover_tests::{builtin, builtin_keys};
use group::prime::PrimeCurveAffine;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

const SEED: u64 = 0x5eed_c0de;
const LOG: u32 = 7;
const VK: usize = 3 * 96 + 3 * 192;
const ELEM: [usize; 6] = [96, 96, 96, 96, 96, 192];
const NAMES: [&str; 6] = ["ic", "h", "l", "a", "b_g1", "b_g2"];

/// Where each section's length field and points are in the original file.
struct Layout {
    count_at: [usize; 6],
    counts: [usize; 6],
}

impl Layout {
    fn of(b: &[u8]) -> Self {
        let mut off = VK;
        let mut count_at = [0; 6];
        let mut counts = [0; 6];
        for s in 0..6 {
            count_at[s] = off;
            counts[s] = u32::from_be_bytes(b[off..off + 4].try_into().unwrap()) as usize;
            off += 4 + counts[s] * ELEM[s];
        }
        assert_eq!(off, b.len());
        Self { count_at, counts }
    }
    fn point_at(&self, s: usize, i: usize) -> usize {
        self.count_at[s] + 4 + i * ELEM[s]
    }
    /// A random point: (section or 6 + vk index, offset, width).
    fn random_point(&self, rng: &mut ChaCha8Rng) -> (String, usize, usize) {
        let k = rng.next_u32() as usize % 12;
        if k < 6 {
            let (off, w) = [
                (0, 96),
                (96, 96),
                (192, 192),
                (384, 192),
                (576, 96),
                (672, 192),
            ][k];
            let name = [
                "alpha_g1", "beta_g1", "beta_g2", "gamma_g2", "delta_g1", "delta_g2",
            ][k];
            return (name.to_string(), off, w);
        }
        let s = k - 6;
        let i = rng.next_u32() as usize % self.counts[s];
        (
            format!("section {} point {i}", NAMES[s]),
            self.point_at(s, i),
            ELEM[s],
        )
    }
}

/// An encoded point of E(Fp) (G1) or E'(Fp2) (G2) outside the prime-order
/// subgroup: x counts up from `start` until the curve equation has a root;
/// the cofactor is not cleared.
fn torsion_bytes(g2: bool, start: u64) -> Vec<u8> {
    for x0 in start.. {
        let xv = [x0, 0, 0, 0, 0, 0];
        let four = [4u64, 0, 0, 0, 0, 0];
        // SAFETY: blst's field functions take pointers to initialized
        // values of the right types, all alive for the calls.
        unsafe {
            if !g2 {
                let (mut x, mut b, mut rhs, mut y) = Default::default();
                blst::blst_fp_from_uint64(&mut x, xv.as_ptr());
                blst::blst_fp_from_uint64(&mut b, four.as_ptr());
                blst::blst_fp_sqr(&mut rhs, &x);
                blst::blst_fp_mul(&mut rhs, &rhs, &x);
                blst::blst_fp_add(&mut rhs, &rhs, &b);
                if blst::blst_fp_sqrt(&mut y, &rhs) {
                    let p = blst::blst_p1_affine { x, y };
                    assert!(blst::blst_p1_affine_on_curve(&p) && !blst::blst_p1_affine_in_g1(&p));
                    let mut out = vec![0u8; 96];
                    blst::blst_p1_affine_serialize(out.as_mut_ptr(), &p);
                    return out;
                }
            } else {
                let mut x = blst::blst_fp2::default();
                let mut b = blst::blst_fp2::default();
                blst::blst_fp_from_uint64(&mut x.fp[0], xv.as_ptr());
                blst::blst_fp_from_uint64(&mut x.fp[1], xv.as_ptr());
                blst::blst_fp_from_uint64(&mut b.fp[0], four.as_ptr());
                blst::blst_fp_from_uint64(&mut b.fp[1], four.as_ptr());
                let (mut rhs, mut y) = Default::default();
                blst::blst_fp2_sqr(&mut rhs, &x);
                blst::blst_fp2_mul(&mut rhs, &rhs, &x);
                blst::blst_fp2_add(&mut rhs, &rhs, &b);
                if blst::blst_fp2_sqrt(&mut y, &rhs) {
                    let p = blst::blst_p2_affine { x, y };
                    assert!(blst::blst_p2_affine_on_curve(&p) && !blst::blst_p2_affine_in_g2(&p));
                    let mut out = vec![0u8; 192];
                    blst::blst_p2_affine_serialize(out.as_mut_ptr(), &p);
                    return out;
                }
            }
        }
    }
    unreachable!()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind2 {
    Truncate,
    ByteFlip,
    BitFlip,
    LengthField,
    Torsion,
    Infinity,
    Compressed,
    SortFlag,
    Swap,
    Replace,
}

impl Kind2 {
    /// Whether a valid key could result (the bytes stay valid points).
    fn may_be_accepted(self) -> bool {
        matches!(self, Kind2::Swap | Kind2::Replace)
    }
}

/// One mutant: the bytes and what to expect in an error message.
struct Mutant {
    kind: Kind2,
    bytes: Vec<u8>,
    expect: Option<String>,
}

fn mutants(orig: &[u8], rng: &mut ChaCha8Rng) -> Vec<Mutant> {
    let lay = Layout::of(orig);
    let mut out = Vec::new();
    let n = orig.len();
    let mut push = |kind, bytes, expect: Option<String>| {
        out.push(Mutant {
            kind,
            bytes,
            expect,
        })
    };
    // Truncations: every structural boundary, then random lengths.
    let mut cuts: Vec<usize> = vec![0, 1, 95, 96, VK - 1, VK, VK + 3, n - 1];
    for s in 0..6 {
        cuts.extend([
            lay.count_at[s],
            lay.count_at[s] + 2,
            lay.point_at(s, 0) + 50,
        ]);
    }
    while cuts.len() < 150 {
        cuts.push(rng.next_u32() as usize % n);
    }
    for c in cuts {
        push(Kind2::Truncate, orig[..c].to_vec(), Some("params: ".into()));
    }
    // Byte and bit flips at random offsets.
    for _ in 0..250 {
        let mut b = orig.to_vec();
        let at = rng.next_u32() as usize % n;
        b[at] ^= (rng.next_u32() % 255 + 1) as u8;
        push(Kind2::ByteFlip, b, None);
    }
    for _ in 0..250 {
        let mut b = orig.to_vec();
        let at = rng.next_u32() as usize % n;
        b[at] ^= 1 << (rng.next_u32() % 8);
        push(Kind2::BitFlip, b, None);
    }
    // Length fields: off by one, zero, huge, random.
    for i in 0..120 {
        let s = i % 6;
        let at = lay.count_at[s];
        let c = lay.counts[s] as u32;
        let v = match (i / 6) % 5 {
            0 => c.wrapping_add(1),
            1 => c.wrapping_sub(1),
            2 => 0,
            3 => u32::MAX - (rng.next_u32() % 3),
            _ => rng.next_u32() % (4 * c + 8),
        };
        if v == c {
            continue;
        }
        let mut b = orig.to_vec();
        b[at..at + 4].copy_from_slice(&v.to_be_bytes());
        // Changing b_g1's count alone is seen at b_g2 when both still fit.
        push(Kind2::LengthField, b, Some("params: ".into()));
    }
    // Torsion points in random places.
    for i in 0..100 {
        let (name, at, w) = lay.random_point(rng);
        let mut b = orig.to_vec();
        b[at..at + w].copy_from_slice(&torsion_bytes(w == 192, 17 + i));
        push(
            Kind2::Torsion,
            b,
            Some(format!(
                "{name} (offset {at}): on the curve but not in the prime-order subgroup"
            )),
        );
    }
    // Infinity, compressed flag, sort flag.
    for _ in 0..50 {
        let (name, at, w) = lay.random_point(rng);
        let mut b = orig.to_vec();
        b[at..at + w].fill(0);
        b[at] = 0x40;
        push(
            Kind2::Infinity,
            b,
            Some(format!("{name} (offset {at}): point at infinity")),
        );
    }
    for _ in 0..30 {
        let (name, at, _) = lay.random_point(rng);
        let mut b = orig.to_vec();
        b[at] |= 0x80;
        push(
            Kind2::Compressed,
            b,
            Some(format!("{name} (offset {at}): compressed")),
        );
    }
    for _ in 0..30 {
        let (name, at, _) = lay.random_point(rng);
        let mut b = orig.to_vec();
        b[at] |= 0x20;
        push(
            Kind2::SortFlag,
            b,
            Some(format!("{name} (offset {at}): non-canonical")),
        );
    }
    // Valid points moved around: the key is well formed (but not the one
    // the circuit's verifying key expects).
    for _ in 0..20 {
        let s = 1 + rng.next_u32() as usize % 5;
        let i = rng.next_u32() as usize % lay.counts[s];
        let j = (i + 1 + rng.next_u32() as usize % (lay.counts[s] - 1)) % lay.counts[s];
        let mut b = orig.to_vec();
        let (pi, pj, w) = (lay.point_at(s, i), lay.point_at(s, j), ELEM[s]);
        let tmp = b[pi..pi + w].to_vec();
        b.copy_within(pj..pj + w, pi);
        b[pj..pj + w].copy_from_slice(&tmp);
        push(Kind2::Swap, b, None);
    }
    for _ in 0..20 {
        let (_, at, w) = lay.random_point(rng);
        let mut b = orig.to_vec();
        let p = if w == 96 {
            G1Affine::generator().to_uncompressed().to_vec()
        } else {
            G2Affine::generator().to_uncompressed().to_vec()
        };
        b[at..at + w].copy_from_slice(&p);
        push(Kind2::Replace, b, None);
    }
    out
}

fn in_g1(p: &G1Affine) -> bool {
    let bytes = p.to_uncompressed();
    let mut a = blst::blst_p1_affine::default();
    // SAFETY: 96 readable bytes and a valid out pointer.
    unsafe {
        blst::blst_p1_deserialize(&mut a, bytes.as_ptr()) == blst::BLST_ERROR::BLST_SUCCESS
            && blst::blst_p1_affine_in_g1(&a)
    }
}

fn in_g2(p: &G2Affine) -> bool {
    let bytes = p.to_uncompressed();
    let mut a = blst::blst_p2_affine::default();
    // SAFETY: 192 readable bytes and a valid out pointer.
    unsafe {
        blst::blst_p2_deserialize(&mut a, bytes.as_ptr()) == blst::BLST_ERROR::BLST_SUCCESS
            && blst::blst_p2_affine_in_g2(&a)
    }
}

/// Checks one outcome; returns whether the key was accepted.
fn judge(
    ctx: &Context,
    kind: Kind2,
    expect: Option<&str>,
    result: cuda_prover_bellperson::Result<ProvingKey>,
    io_ok: bool,
) -> bool {
    match result {
        Err(e) => {
            let code = e.code();
            assert!(
                code == Some(ErrorCode::ParamsFormat)
                    || (io_ok && code == Some(ErrorCode::ParamsIo)),
                "{kind:?}: {e}"
            );
            let msg = e.to_string();
            assert!(msg.contains("params"), "{kind:?}: {msg}");
            if let Some(x) = expect {
                assert!(msg.contains(x), "{kind:?}: expected '{x}' in: {msg}");
            }
            false
        }
        Ok(key) => {
            assert!(kind.may_be_accepted(), "{kind:?} mutant accepted");
            let c = builtin(Kind::Chain, LOG, 3);
            let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(9), 1);
            let proofs = create_proof_batch(ctx, vec![c], &key, &bl, &Placement::on(0))
                .unwrap_or_else(|e| panic!("{kind:?}: an accepted key must prove: {e}"));
            let p = &proofs[0].proof;
            assert!(
                in_g1(&p.a) && in_g2(&p.b) && in_g1(&p.c),
                "{kind:?}: proof outside its groups"
            );
            // The verifier runs to an answer (it need not be yes: the key's
            // queries no longer match its verifying key).
            key.verify(p, &[c.public_input()]).unwrap();
            true
        }
    }
}

fn original() -> Vec<u8> {
    let keys = builtin_keys(Kind::Chain, LOG);
    let mut v = Vec::new();
    keys.params.write(&mut v).unwrap();
    v
}

#[test]
fn mutation_campaign_over_buffers() {
    let orig = original();
    let ctx = Context::host(1).unwrap();
    // The unmutated key loads and its proofs verify.
    let key = ProvingKey::from_bytes(&orig).unwrap();
    let c = builtin(Kind::Chain, LOG, 3);
    let bl = Blinding::random_vec(&mut ChaCha8Rng::seed_from_u64(9), 1);
    let p = create_proof_batch(&ctx, vec![c], &key, &bl, &Placement::on(0)).unwrap();
    assert!(key.verify(&p[0].proof, &[c.public_input()]).unwrap());

    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let ms = mutants(&orig, &mut rng);
    let mut tally: BTreeMap<Kind2, (usize, usize)> = BTreeMap::new();
    for m in &ms {
        let accepted = judge(
            &ctx,
            m.kind,
            m.expect.as_deref(),
            ProvingKey::from_bytes_with(&m.bytes, KeyCheck::Full),
            false,
        );
        let t = tally.entry(m.kind).or_default();
        if accepted {
            t.1 += 1
        } else {
            t.0 += 1
        }
    }
    eprintln!("campaign over buffers (rejected, accepted): {tally:?}");
    assert!(ms.len() >= 1000, "{} cases", ms.len());
    // Swapped points are a different key, but a well-formed one.
    assert!(tally[&Kind2::Swap].1 > 0 && tally[&Kind2::Replace].1 > 0);
}

#[test]
fn mutation_campaign_through_files() {
    let orig = original();
    let ctx = Context::host(1).unwrap();
    let dir = std::env::temp_dir().join(format!("cp-mutation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("k.params");
    // A verified record for the original: tampered contents must not ride
    // on it.
    std::fs::write(&path, &orig).unwrap();
    let (_, r) = ProvingKey::load_file(&path, KeyCheck::Full).unwrap();
    assert!(r.digest_written);
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 1);
    let ms = mutants(&orig, &mut rng);
    let mut n = 0;
    for m in ms.iter().step_by(8) {
        std::fs::write(&path, &m.bytes).unwrap();
        judge(
            &ctx,
            m.kind,
            m.expect.as_deref(),
            ProvingKey::load_file(&path, KeyCheck::Full).map(|(k, _)| k),
            true,
        );
        n += 1;
    }
    assert!(n >= 100, "{n}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The original key as in-memory parts (the core's layout, decoded here).
struct Parts {
    vk1: [core_api::G1Affine; 3],
    vk2: [core_api::G2Affine; 3],
    g1: [Vec<core_api::G1Affine>; 5],
    g2: Vec<core_api::G2Affine>,
}

fn g1_from(b: &[u8]) -> core_api::G1Affine {
    let mut a = blst::blst_p1_affine::default();
    // SAFETY: 96 readable bytes, a valid out pointer.
    assert_eq!(
        unsafe { blst::blst_p1_deserialize(&mut a, b.as_ptr()) },
        blst::BLST_ERROR::BLST_SUCCESS
    );
    core_api::G1Affine {
        x: ffi::cp_fp { l: a.x.l },
        y: ffi::cp_fp { l: a.y.l },
    }
}

fn g2_from(b: &[u8]) -> core_api::G2Affine {
    let mut a = blst::blst_p2_affine::default();
    // SAFETY: 192 readable bytes, a valid out pointer.
    assert_eq!(
        unsafe { blst::blst_p2_deserialize(&mut a, b.as_ptr()) },
        blst::BLST_ERROR::BLST_SUCCESS
    );
    let fp2 = |f: &blst::blst_fp2| ffi::cp_fp2 {
        fp: [ffi::cp_fp { l: f.fp[0].l }, ffi::cp_fp { l: f.fp[1].l }],
    };
    core_api::G2Affine {
        x: fp2(&a.x),
        y: fp2(&a.y),
    }
}

fn g1_unchecked(b: &[u8]) -> core_api::G1Affine {
    let mut a = blst::blst_p1_affine::default();
    // SAFETY: as above; torsion points decode (blst checks the curve only).
    assert_eq!(
        unsafe { blst::blst_p1_deserialize(&mut a, b.as_ptr()) },
        blst::BLST_ERROR::BLST_SUCCESS
    );
    core_api::G1Affine {
        x: ffi::cp_fp { l: a.x.l },
        y: ffi::cp_fp { l: a.y.l },
    }
}

impl Parts {
    fn of(b: &[u8]) -> Self {
        let lay = Layout::of(b);
        let g1s = |s: usize| {
            (0..lay.counts[s])
                .map(|i| g1_from(&b[lay.point_at(s, i)..]))
                .collect()
        };
        Self {
            vk1: [g1_from(&b[0..]), g1_from(&b[96..]), g1_from(&b[576..])],
            vk2: [g2_from(&b[192..]), g2_from(&b[384..]), g2_from(&b[672..])],
            g1: [g1s(0), g1s(1), g1s(2), g1s(3), g1s(4)],
            g2: (0..lay.counts[5])
                .map(|i| g2_from(&b[lay.point_at(5, i)..]))
                .collect(),
        }
    }
    fn load(&self, check: KeyCheck) -> device::Result<core_api::Key> {
        core_api::Key::load_parts(
            &core_api::KeyParts {
                alpha_g1: self.vk1[0],
                beta_g1: self.vk1[1],
                beta_g2: self.vk2[0],
                gamma_g2: self.vk2[1],
                delta_g1: self.vk1[2],
                delta_g2: self.vk2[2],
                ic: &self.g1[0],
                h: &self.g1[1],
                l: &self.g1[2],
                a: &self.g1[3],
                b_g1: &self.g1[4],
                b_g2: &self.g2,
            },
            check,
        )
        .map(|(s, _)| s)
    }
}

/// x + p: the same field element, not reduced (x < p < 2^383, so it fits).
fn add_p(x: &mut [u64; 6]) {
    const P: [u64; 6] = [
        0xb9fe_ffff_ffff_aaab,
        0x1eab_fffe_b153_ffff,
        0x6730_d2a0_f6b0_f624,
        0x6477_4b84_f385_12bf,
        0x4b1b_a7b6_434b_acd7,
        0x1a01_11ea_397f_e69a,
    ];
    let mut carry = 0u128;
    for (l, p) in x.iter_mut().zip(P) {
        carry += *l as u128 + p as u128;
        *l = carry as u64;
        carry >>= 64;
    }
    assert_eq!(carry, 0);
}

#[test]
fn mutation_campaign_over_parts() {
    let orig = original();
    let good = Parts::of(&orig);
    good.load(KeyCheck::Full).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 2);
    let t1 = g1_unchecked(&torsion_bytes(false, 5));
    let t2 = {
        let b = torsion_bytes(true, 5);
        let mut a = blst::blst_p2_affine::default();
        // SAFETY: 192 readable bytes, a valid out pointer.
        unsafe { blst::blst_p2_deserialize(&mut a, b.as_ptr()) };
        let fp2 = |f: &blst::blst_fp2| ffi::cp_fp2 {
            fp: [ffi::cp_fp { l: f.fp[0].l }, ffi::cp_fp { l: f.fp[1].l }],
        };
        core_api::G2Affine {
            x: fp2(&a.x),
            y: fp2(&a.y),
        }
    };
    let mut cases = 0;
    for i in 0..120 {
        let mut p = Parts::of(&orig);
        let how = i % 4;
        // Where: a vk point or a query point, G1 or G2.
        let g2 = rng.next_u32() % 4 == 0;
        let (g1p, g2p): (
            Option<&mut core_api::G1Affine>,
            Option<&mut core_api::G2Affine>,
        ) = if g2 {
            let k = rng.next_u32() as usize % (p.g2.len() + 3);
            (
                None,
                Some(if k < 3 {
                    &mut p.vk2[k]
                } else {
                    &mut p.g2[k - 3]
                }),
            )
        } else {
            let s = rng.next_u32() as usize % 6;
            if s == 5 {
                (Some(&mut p.vk1[rng.next_u32() as usize % 3]), None)
            } else {
                let i = rng.next_u32() as usize % p.g1[s].len();
                (Some(&mut p.g1[s][i]), None)
            }
        };
        let expect = match how {
            0 => "subgroup",
            1 => "infinity",
            2 => "not on curve",
            _ => "not reduced",
        };
        let limb = rng.next_u32() as usize % 6;
        if let Some(q) = g1p {
            match how {
                0 => *q = t1,
                1 => *q = core_api::G1Affine::default(),
                2 => q.y.l[limb] ^= 1 << (rng.next_u32() % 60),
                _ => add_p(&mut q.x.l),
            }
        } else if let Some(q) = g2p {
            match how {
                0 => *q = t2,
                1 => *q = core_api::G2Affine::default(),
                2 => q.y.fp[1].l[limb] ^= 1 << (rng.next_u32() % 60),
                _ => add_p(&mut q.x.fp[0].l),
            }
        }
        let e = match p.load(KeyCheck::Full) {
            Err(e) => e,
            Ok(_) => panic!("parts case {i} ({expect}) accepted"),
        };
        assert_eq!(e.code, device::ErrorCode::ParamsFormat, "{e}");
        assert!(
            e.message.contains(expect),
            "case {i}: expected '{expect}': {e}"
        );
        // The cheap checks hold for trusted keys too; only the subgroup
        // check is the caller's to waive.
        let trusted = p.load(KeyCheck::TrustedUnchecked);
        assert_eq!(trusted.is_ok(), how == 0, "case {i} trusted");
        cases += 1;
    }
    assert!(cases >= 100);
}
