//! The witness of a challenge's inclusion in the data tree (tree D, a
//! binary SHA-256 tree): what storage-proofs' `PoRCircuit` allocates for a
//! private path of arity 2 (per level the index bit, the sibling, the two
//! `pick`s of `insert`, the two children's bits and the SHA-256 of
//! `hash_multi_leaf_circuit` packed into the parent), then the path's bits
//! as one public input.

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::bit::AuxBits;
use super::label::{pack, reverse_bit_numbering, unpack};
use super::sha256::sha256;

/// Allocates the path from `leaf` up, given as the data tree's proof
/// gives it (`as_options`: per level the sibling and the index of the
/// node among the two), and returns the root it computes.
pub(crate) fn data_path<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    leaf: Scalar,
    path: &[(Vec<Option<Scalar>>, Option<usize>)],
    aux: &mut AuxBits,
) -> Result<Scalar, SynthesisError> {
    aux.flush(cs);
    let mut cur = leaf;
    let mut index_bits = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let [Some(sibling)] = siblings[..] else {
            return Err(SynthesisError::AssignmentMissing);
        };
        let right = index.ok_or(SynthesisError::AssignmentMissing)? & 1 == 1;
        index_bits.push(right);
        let (first, second) = if right {
            (sibling, cur)
        } else {
            (cur, sibling)
        };
        let one = |b: bool| if b { Scalar::ONE } else { Scalar::ZERO };
        cs.extend_aux(&[one(right), sibling, first, second]);

        // Each child's 255 bits padded to whole bytes and byte-reversed,
        // and the digest's bytes reversed before packing, as
        // `hash_multi_leaf_circuit` and `hash_circuit` order them.
        let mut preimage = reverse_bit_numbering(unpack(&first, aux));
        preimage.extend(reverse_bit_numbering(unpack(&second, aux)));
        let digest = sha256(&preimage, aux);
        cur = pack(&reverse_bit_numbering(digest));
        aux.flush(cs);
        cs.extend_aux(&[cur]);
    }
    // `multipack::pack_into_inputs` of the index bits (one number for up
    // to 254 levels).
    for chunk in index_bits.chunks(Scalar::CAPACITY as usize) {
        let mut value = Scalar::ZERO;
        for &bit in chunk.iter().rev() {
            value = value.double();
            if bit {
                value += Scalar::ONE;
            }
        }
        cs.alloc_input(|| "path", || Ok(value))?;
    }
    Ok(cur)
}
