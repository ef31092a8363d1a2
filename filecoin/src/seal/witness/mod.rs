//! The witness of a PoRep partition's circuit made without its SHA-256
//! gadget.
//!
//! A 32 GiB partition is about 130 million constraints, 99 % of them
//! bellpepper's SHA-256 gadget (eleven labels of 20 compressions and a
//! 30-level data tree path per challenge). Run as a witness generator, that
//! gadget spent most of its time building linear combinations nobody reads.
//! Here the same allocations are made from the values alone: [`bit`] and
//! [`word`] mirror bellpepper's `Boolean` and `UInt32` (constants, negated
//! views and the allocations each operation makes), [`sha256`] its
//! SHA-256, [`label`] and [`data_path`] the PoRep parts built on it,
//! [`challenge`] one challenge (its Poseidon parts through the crates' own
//! gadgets) and [`stacked`] the circuit's prefix and challenges. The
//! witness is byte-identical to filecoin-proofs' `StackedCircuit`
//! synthesized into a witness generator (tests here and in
//! `filecoin/tests/all/filecoin_parallel_witness.rs`); constraint systems
//! that record constraints keep getting the gadgets.

mod bit;
mod challenge;
mod data_path;
mod label;
mod sha256;
mod word;

use bellpepper_core::{num::AllocatedNum, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait};
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked;

use bit::AuxBits;
use challenge::Prefix;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// `StackedCircuit::synthesize` into `cs`, which must be a witness
/// generator: the prefix through the gadgets (a few hundred constraints),
/// each challenge through [`challenge::challenge`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn stacked<Tree, CS>(
    cs: &mut CS,
    replica_id: TreeDomain<Tree>,
    comm_d: Option<DefaultPieceDomain>,
    comm_r: Option<TreeDomain<Tree>>,
    comm_r_last: TreeDomain<Tree>,
    comm_c: TreeDomain<Tree>,
    proofs: Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Scalar>,
{
    debug_assert!(cs.is_witness_generator());
    let replica_id_num = AllocatedNum::alloc(&mut *cs, || Ok(replica_id.into()))?;
    replica_id_num.inputize(&mut *cs)?;
    let replica_id_bits = reverse_bit_numbering(replica_id_num.to_bits_le(&mut *cs)?);
    let comm_d_num = AllocatedNum::alloc(&mut *cs, || {
        comm_d
            .map(Into::into)
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    comm_d_num.inputize(&mut *cs)?;
    let comm_r_num = AllocatedNum::alloc(&mut *cs, || {
        comm_r
            .map(Into::into)
            .ok_or(SynthesisError::AssignmentMissing)
    })?;
    comm_r_num.inputize(&mut *cs)?;
    let comm_r_last_num = AllocatedNum::alloc(&mut *cs, || Ok(comm_r_last.into()))?;
    let comm_c_num = AllocatedNum::alloc(&mut *cs, || Ok(comm_c.into()))?;
    let hash =
        <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c_num, &comm_r_last_num)?;
    constraint::equal(cs, || "comm_r", &comm_r_num, &hash);

    let prefix = Prefix {
        comm_c: &comm_c_num,
        comm_r_last: &comm_r_last_num,
        replica_id_bits: &replica_id_bits,
    };
    let mut aux = AuxBits::default();
    for proof in proofs {
        challenge::challenge(cs, proof, &prefix, &mut aux)?;
    }
    Ok(())
}
