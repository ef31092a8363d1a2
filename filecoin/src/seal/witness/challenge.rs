//! The witness of one PoRep challenge: what storage-proofs'
//! `stacked::circuit::params::Proof::synthesize` allocates, in its order,
//! with its SHA-256 parts (the data tree's path and the eleven labels,
//! 99 % of the challenge's constraints) made here bit by bit and the
//! Poseidon parts (columns, their hashes and tree paths, the encoding)
//! through storage-proofs' and neptune's own gadgets.

use bellpepper_core::{num::AllocatedNum, ConstraintSystem, SynthesisError};
use bellperson::gadgets::boolean::Boolean;
use blstrs::Scalar;
use filecoin_hashers::{Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::MerkleTreeTrait;
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::{DiskStore, MerkleProofTrait, MerkleTreeWrapper};
use storage_proofs_porep::stacked::{self, StackedCircuit};
use typenum::{U11, U2};

use super::bit::{AuxBits, Bit};
use super::data_path::data_path;
use super::label::label;

type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// The circuit's view of a vanilla proof (storage-proofs' private
/// `params::Proof`, whose fields and column proofs are public), named
/// through the type `StackedCircuit::synthesize` takes.
#[allow(clippy::type_complexity)]
fn circuit_proof<A, B, C, D, E, F, P, V: Into<P>>(
    _synthesize: fn(A, B, C, D, E, F, Vec<P>) -> Result<(), SynthesisError>,
    vanilla: V,
) -> P {
    vanilla.into()
}

fn value_of(n: &AllocatedNum<Scalar>) -> Result<Scalar, SynthesisError> {
    n.get_value().ok_or(SynthesisError::AssignmentMissing)
}

/// storage-proofs' `enforce_inclusion`: a private path from `leaf` to
/// `root`, through `PoRCircuit`.
fn enforce_inclusion<H, U, V, W, CS>(
    cs: &mut CS,
    path: AuthPath<H, U, V, W>,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError>
where
    H: 'static + Hasher,
    U: 'static + PoseidonArity,
    V: 'static + PoseidonArity,
    W: 'static + PoseidonArity,
    CS: ConstraintSystem<Scalar>,
{
    PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
        cs,
        Root::Var(leaf.clone()),
        path,
        Root::Var(root.clone()),
        true,
    )
}

/// The commitments a challenge reads, allocated by the circuit's prefix.
pub(crate) struct Prefix<'a> {
    pub comm_c: &'a AllocatedNum<Scalar>,
    pub comm_r_last: &'a AllocatedNum<Scalar>,
    pub replica_id_bits: &'a [Boolean],
}

/// Allocates challenge `vanilla`'s witness into `cs` (a witness
/// generator) as the circuit's `Proof::synthesize` would.
pub(crate) fn challenge<Tree, CS>(
    cs: &mut CS,
    vanilla: VanillaProof<Tree>,
    prefix: &Prefix<'_>,
    aux: &mut AuxBits,
) -> Result<(), SynthesisError>
where
    Tree: 'static + MerkleTreeTrait,
    CS: ConstraintSystem<Scalar>,
{
    let data_tree_path = vanilla.comm_d_proofs.as_options();
    let layers = vanilla.labeling_proofs.len();
    let proof = circuit_proof(
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<&mut CS>,
        vanilla,
    );
    let data_leaf = proof.data_leaf.ok_or(SynthesisError::AssignmentMissing)?;
    let data_leaf_num = AllocatedNum::alloc(cs.namespace(|| "data_leaf"), || Ok(data_leaf))?;
    // The path's root is checked against comm_d by a constraint only (as
    // the gadget leaves it to the proof's verification).
    data_path(cs, data_leaf, &data_tree_path, aux)?;

    let drg_parents = proof.drg_parents_proofs.len();
    let mut columns = Vec::new();
    for parent in proof
        .drg_parents_proofs
        .into_iter()
        .chain(proof.exp_parents_proofs)
    {
        let (column, path) = parent.alloc(&mut *cs)?;
        let hash = column.hash(&mut *cs)?;
        enforce_inclusion(cs, path, prefix.comm_c, &hash)?;
        columns.push(column);
    }

    let challenge = UInt64::alloc(&mut *cs, proof.challenge)?;
    challenge.pack_into_input(&mut *cs)?;
    let node_be = challenge
        .to_bits_be()
        .iter()
        .map(Bit::of)
        .collect::<Result<Vec<_>, _>>()?;
    let replica_id = prefix
        .replica_id_bits
        .iter()
        .map(Bit::of)
        .collect::<Result<Vec<_>, _>>()?;

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        // The DRG parents' labels of this layer; above the first, the
        // expander parents' of the layer below (their columns hold no
        // first layer).
        let mut values = columns[..drg_parents]
            .iter()
            .map(|c| value_of(c.get_value(layer)))
            .collect::<Result<Vec<_>, _>>()?;
        if layer > 1 {
            for c in &columns[drg_parents..] {
                values.push(value_of(c.get_value(layer - 1))?);
            }
        }
        labels.push(label(
            cs,
            &replica_id,
            &node_be,
            layer as u32,
            &values,
            aux,
        )?);
    }

    let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
    let encoded = encode(&mut *cs, key, &data_leaf_num)?;
    enforce_inclusion(cs, proof.comm_r_last_path, prefix.comm_r_last, &encoded)?;

    let column_hash = match labels.len() {
        2 => poseidon_hash::<_, Scalar, U2>(&mut *cs, labels, &POSEIDON_CONSTANTS_2)?,
        11 => poseidon_hash::<_, Scalar, U11>(&mut *cs, labels, &POSEIDON_CONSTANTS_11)?,
        _ => return Err(SynthesisError::Unsatisfiable),
    };
    enforce_inclusion(cs, proof.comm_c_path, prefix.comm_c, &column_hash)
}
