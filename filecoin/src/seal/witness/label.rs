//! The witness of one labeling step of a PoRep challenge: the parents'
//! labels unpacked to bits (`AllocatedNum::to_bits_le`, each parent once
//! per layer) and storage-proofs' `create_label_circuit` (SHA-256 over the
//! replica id, the layer, the node and 37 parent labels, packed into one
//! number), in the order `stacked::circuit::params::Proof::synthesize`
//! allocates them.

use bellpepper_core::{num::AllocatedNum, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::bit::{AuxBits, Bit};
use super::sha256::sha256;

/// The parents a label hashes, as the gadget repeats them: 37 of them.
const TOTAL_PARENTS: usize = 37;

/// The bits `to_bits_le` allocates for `value` (its 255 bits, least
/// significant first), as variables.
pub(crate) fn unpack(value: &Scalar, aux: &mut AuxBits) -> Vec<Bit> {
    let bytes = value.to_bytes_le();
    (0..Scalar::NUM_BITS as usize)
        .map(|i| {
            let bit = (bytes[i / 8] >> (i % 8)) & 1 == 1;
            aux.push(bit);
            Bit::is(bit)
        })
        .collect()
}

/// storage-proofs' `reverse_bit_numbering`: padded to whole bytes with
/// constant zeros, each byte's bits reversed.
pub(crate) fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    while !bits.len().is_multiple_of(8) {
        bits.push(Bit::Const(false));
    }
    bits.chunks(8)
        .flat_map(|byte| byte.iter().rev().copied())
        .collect()
}

/// The number `multipack::pack_bits` makes of the first 254 bits
/// (least significant first).
pub(crate) fn pack(bits: &[Bit]) -> Scalar {
    let mut bytes = [0u8; 32];
    for (i, b) in bits.iter().take(Scalar::CAPACITY as usize).enumerate() {
        bytes[i / 8] |= u8::from(b.value()) << (i % 8);
    }
    // Below 2^254, so below the modulus.
    Option::from(Scalar::from_bytes_le(&bytes)).unwrap_or(Scalar::ZERO)
}

/// The label of `node` at `layer` (1-based) from its parents' labels (the
/// DRG parents, then at layers above the first the expander parents):
/// allocated as the gadgets allocate it and returned as the gadget's
/// number. `replica_id` and `node` are the bits the circuit passes
/// (the replica id's after `reverse_bit_numbering`, the challenge's 64
/// bits most significant first).
pub(crate) fn label<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    replica_id: &[Bit],
    node_be: &[Bit],
    layer: u32,
    parents: &[Scalar],
    aux: &mut AuxBits,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let parent_bits: Vec<Vec<Bit>> = parents
        .iter()
        .map(|p| reverse_bit_numbering(unpack(p, aux)))
        .collect();
    let expanded: Vec<&Vec<Bit>> = if layer > 1 {
        parent_bits
            .iter()
            .chain(&parent_bits)
            .chain(&parent_bits[..9])
            .collect()
    } else {
        let mut v: Vec<&Vec<Bit>> = (0..6).flat_map(|_| parent_bits.iter()).collect();
        v.push(&parent_bits[0]);
        v
    };
    if expanded.len() != TOTAL_PARENTS {
        return Err(SynthesisError::Unsatisfiable);
    }

    let mut input = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    input.extend_from_slice(replica_id);
    input.resize(256, Bit::Const(false));
    input.extend((0..32).rev().map(|i| Bit::Const((layer >> i) & 1 == 1)));
    input.extend_from_slice(node_be);
    input.resize(512, Bit::Const(false));
    for parent in expanded {
        input.extend_from_slice(parent);
        while !input.len().is_multiple_of(256) {
            input.push(Bit::Const(false));
        }
    }
    let digest = sha256(&input, aux);
    let value = pack(&reverse_bit_numbering(digest));
    aux.flush(cs);
    AllocatedNum::alloc(cs.namespace(|| "label"), || Ok(value))
}
