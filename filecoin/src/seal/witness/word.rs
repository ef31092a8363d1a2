//! A 32-bit word of the SHA-256 gadget's witness, as bellpepper's `UInt32`
//! holds it: 32 [`Bit`]s, least significant first. Its operations allocate
//! what `UInt32`'s allocate, bit 0 first, with their values.

use super::bit::{AuxBits, Bit};

#[derive(Clone, Copy)]
pub(crate) struct Word([Bit; 32]);

impl Word {
    /// `UInt32::constant`.
    pub(crate) fn constant(value: u32) -> Self {
        Word(std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)))
    }

    /// `UInt32::from_bits_be`: the first bit is the most significant.
    pub(crate) fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32, "a word is 32 bits");
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    /// `UInt32::into_bits_be`.
    pub(crate) fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.0.iter().rev().copied()
    }

    pub(crate) fn value(&self) -> u32 {
        self.0
            .iter()
            .enumerate()
            .fold(0, |v, (i, b)| v | (u32::from(b.value()) << i))
    }

    fn is_constant(&self) -> bool {
        self.0.iter().all(|b| matches!(b, Bit::Const(_)))
    }

    /// `UInt32::rotr`.
    pub(crate) fn rotr(&self, by: usize) -> Self {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    /// `UInt32::shr`: the top bits become constant zeros.
    pub(crate) fn shr(&self, by: usize) -> Self {
        Word(std::array::from_fn(|i| {
            self.0.get(i + by).copied().unwrap_or(Bit::Const(false))
        }))
    }

    /// `UInt32::xor`.
    pub(crate) fn xor(&self, other: &Self, aux: &mut AuxBits) -> Self {
        let mut out = [Bit::Const(false); 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.0[i].xor(other.0[i], aux);
        }
        Word(out)
    }

    /// `UInt32::sha256_ch`.
    pub(crate) fn ch(a: &Self, b: &Self, c: &Self, aux: &mut AuxBits) -> Self {
        let mut out = [Bit::Const(false); 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = Bit::ch(a.0[i], b.0[i], c.0[i], aux);
        }
        Word(out)
    }

    /// `UInt32::sha256_maj`.
    pub(crate) fn maj(a: &Self, b: &Self, c: &Self, aux: &mut AuxBits) -> Self {
        let mut out = [Bit::Const(false); 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = Bit::maj(a.0[i], b.0[i], c.0[i], aux);
        }
        Word(out)
    }

    /// `UInt32::addmany`: a constant when every operand's every bit is;
    /// otherwise every bit of the sum up to the largest sum the operands
    /// can make (carries included) is allocated, and the low 32 are the
    /// word.
    pub(crate) fn addmany(operands: &[Word], aux: &mut AuxBits) -> Self {
        assert!((2..=10).contains(&operands.len()), "2 to 10 operands");
        let sum: u64 = operands.iter().map(|w| u64::from(w.value())).sum();
        if operands.iter().all(Word::is_constant) {
            return Word::constant(sum as u32);
        }
        let mut max = operands.len() as u64 * u64::from(u32::MAX);
        let mut i = 0;
        while max != 0 {
            aux.push((sum >> i) & 1 == 1);
            max >>= 1;
            i += 1;
        }
        Word(std::array::from_fn(|i| Bit::is((sum >> i) & 1 == 1)))
    }
}
