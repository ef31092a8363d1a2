//! The witness of bellpepper's SHA-256 gadget (`gadgets::sha256::sha256`):
//! the same padding, message schedule and rounds, the deferred additions
//! of `a` and `e` included, so every bit the gadget allocates is allocated
//! here in its place with its value.

use super::bit::{AuxBits, Bit};
use super::word::Word;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// SHA-256 of `input` (a whole number of bytes, most significant bit
/// first): the 256 bits of the digest, most significant first, as the
/// gadget returns them.
pub(crate) fn sha256(input: &[Bit], aux: &mut AuxBits) -> Vec<Bit> {
    assert!(input.len().is_multiple_of(8), "whole bytes");
    let mut padded = input.to_vec();
    let len = padded.len() as u64;
    padded.push(Bit::Const(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((len >> i) & 1 == 1)));
    let mut state = IV.map(Word::constant);
    for block in padded.chunks(512) {
        state = compress(block, &state, aux);
    }
    state.iter().flat_map(Word::bits_be).collect()
}

/// An addition the gadget defers until the word is read (`Maybe`).
enum Pending {
    Ready(Word),
    Sum(Vec<Word>),
}

impl Pending {
    fn compute(self, more: &[Word], aux: &mut AuxBits) -> Word {
        match self {
            Pending::Ready(w) => w,
            Pending::Sum(mut v) => {
                v.extend_from_slice(more);
                Word::addmany(&v, aux)
            }
        }
    }
}

/// `sha256_compression_function` over one 512-bit block.
fn compress(block: &[Bit], current: &[Word; 8], aux: &mut AuxBits) -> [Word; 8] {
    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let x = w[i - 15];
        let s0 = x.rotr(7).xor(&x.rotr(18), aux).xor(&x.shr(3), aux);
        let y = w[i - 2];
        let s1 = y.rotr(17).xor(&y.rotr(19), aux).xor(&y.shr(10), aux);
        let next = Word::addmany(&[w[i - 16], s0, w[i - 7], s1], aux);
        w.push(next);
    }

    let mut a = Pending::Ready(current[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *current;
    let mut e = Pending::Ready(current[4]);
    for i in 0..64 {
        let new_e = e.compute(&[], aux);
        let s1 = new_e
            .rotr(6)
            .xor(&new_e.rotr(11), aux)
            .xor(&new_e.rotr(25), aux);
        let ch = Word::ch(&new_e, &f, &g, aux);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.compute(&[], aux);
        let s0 = new_a
            .rotr(2)
            .xor(&new_a.rotr(13), aux)
            .xor(&new_a.rotr(22), aux);
        let maj = Word::maj(&new_a, &b, &c, aux);

        h = g;
        g = f;
        f = new_e;
        e = Pending::Sum(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Pending::Sum(temp1.iter().copied().chain([s0, maj]).collect());
    }

    [
        a.compute(&[current[0]], aux),
        Word::addmany(&[current[1], b], aux),
        Word::addmany(&[current[2], c], aux),
        Word::addmany(&[current[3], d], aux),
        e.compute(&[current[4]], aux),
        Word::addmany(&[current[5], f], aux),
        Word::addmany(&[current[6], g], aux),
        Word::addmany(&[current[7], h], aux),
    ]
}

#[cfg(test)]
mod tests {
    use bellpepper_core::ConstraintSystem;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use blstrs::Scalar;
    use cuda_prover_pipeline::{SizeHint, Witness};
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::bit::{AuxBits, Bit};
    use super::sha256;

    /// Input bits: each a constant, an allocated bit or a negated one
    /// (with `constants` the share of constants).
    fn input(rng: &mut ChaCha8Rng, len: usize, constants: f64) -> Vec<Bit> {
        (0..len)
            .map(|_| {
                let value = rng.gen::<bool>();
                if rng.gen_bool(constants) {
                    Bit::Const(value)
                } else {
                    Bit::Var {
                        value,
                        neg: rng.gen::<bool>(),
                    }
                }
            })
            .collect()
    }

    /// The gadget's witness and digest, and the native ones, over `bits`
    /// (the allocated inputs allocated first in both).
    fn both(bits: &[Bit]) -> ((Witness, Vec<Bit>), (Witness, Vec<Bit>)) {
        let mut g = Witness::with_capacity(SizeHint::default());
        let booleans: Vec<Boolean> = bits
            .iter()
            .map(|b| match *b {
                Bit::Const(v) => Boolean::Constant(v),
                Bit::Var { value, neg } => {
                    let a = Boolean::from(AllocatedBit::alloc(&mut g, Some(value ^ neg)).unwrap());
                    if neg {
                        a.not()
                    } else {
                        a
                    }
                }
            })
            .collect();
        let digest = bellperson::gadgets::sha256::sha256(&mut g, &booleans).unwrap();
        let digest = digest.iter().map(|b| Bit::of(b).unwrap()).collect();

        let mut n = Witness::with_capacity(SizeHint::default());
        for b in bits {
            if let Bit::Var { value, neg } = *b {
                let v = if value ^ neg {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                };
                n.alloc(|| "", || Ok(v)).unwrap();
            }
        }
        let mut aux = AuxBits::default();
        let native = sha256(bits, &mut aux);
        aux.flush(&mut n);
        ((g, digest), (n, native))
    }

    #[test]
    fn sha256_allocates_what_the_gadget_allocates() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (len, constants) in [
            (0, 0.0),
            (8, 0.0),
            (256, 0.0),
            (440, 0.3),
            (512, 0.5),
            (512, 1.0),
            (1024, 0.9),
            (1512, 0.05),
        ] {
            let bits = input(&mut rng, len, constants);
            let ((g, gd), (n, nd)) = both(&bits);
            assert_eq!(gd, nd, "digest bits, {len} bits with {constants} constants");
            let (ga, na) = (g.aux_slice(), n.aux_slice());
            let first = ga.iter().zip(na).position(|(a, b)| a != b);
            assert_eq!(
                (ga.len(), first),
                (na.len(), None),
                "aux count and first difference, {len} bits with {constants} constants"
            );
            if len > 0 && constants < 1.0 {
                assert!(ga.len() > 20_000, "the gadget allocated");
            }
        }
    }
}
