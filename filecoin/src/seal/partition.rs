//! One PoRep commit partition as a circuit: filecoin-proofs'
//! `StackedCircuit`, whose witness-only synthesis runs the partition's
//! challenges on every core.
//!
//! `StackedCircuit::synthesize` allocates a prefix (replica id, comm_d,
//! comm_r, comm_r_last, comm_c and the check comm_r = H(comm_c ||
//! comm_r_last)) and then one sub-circuit per challenge, each reading only
//! the prefix's variables. So the circuit with no challenge is the prefix,
//! the circuit with challenge i alone is the prefix followed by challenge
//! i's allocations, and the glue's witness pieces put those together in the
//! order of one sequential synthesis. That path is taken when the
//! constraint system is a witness generator (the witness path's);
//! full synthesis, shape recording and bellperson's own prover get the
//! whole `StackedCircuit` as filecoin-proofs builds it.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuda_prover_pipeline::{synthesize_pieces, synthesize_witness_pieces, SizeHint, Witness};
use filecoin_hashers::Hasher;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, StackedCircuit};

use crate::error::{FilecoinError, Result};

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type VanillaProof<Tree> = stacked::Proof<Tree, DefaultPieceHasher>;

/// What `StackedCircuit`'s prefix allocates, as `StackedCompound::circuit`
/// takes it from the public inputs and the first vanilla proof.
struct Commitments<Tree: 'static + MerkleTreeTrait> {
    replica_id: TreeDomain<Tree>,
    comm_d: Option<DefaultPieceDomain>,
    comm_r: Option<TreeDomain<Tree>>,
    comm_r_last: TreeDomain<Tree>,
    comm_c: TreeDomain<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> Clone for Commitments<Tree> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Tree: 'static + MerkleTreeTrait> Copy for Commitments<Tree> {}

impl<Tree: 'static + MerkleTreeTrait> Commitments<Tree> {
    /// `StackedCircuit` with these commitments and `proofs` (the vanilla
    /// proofs turned into circuit proofs, as `StackedCompound::circuit`
    /// does, without a copy).
    fn synthesize<CS: ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
        proofs: Vec<VanillaProof<Tree>>,
    ) -> Result<(), SynthesisError> {
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize(
            cs,
            Some(self.replica_id),
            self.comm_d,
            self.comm_r,
            Some(self.comm_r_last),
            Some(self.comm_c),
            proofs.into_iter().map(Into::into).collect(),
        )
    }
}

/// The prefix (no proof) or the prefix and one challenge.
struct Piece<Tree: 'static + MerkleTreeTrait> {
    commitments: Commitments<Tree>,
    proof: Option<VanillaProof<Tree>>,
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for Piece<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.commitments
            .synthesize(cs, self.proof.into_iter().collect())
    }
}

/// One partition of a PoRep commit: its commitments and its vanilla
/// proofs (one per challenge), held once.
pub struct PorepPartition<Tree: 'static + MerkleTreeTrait> {
    commitments: Commitments<Tree>,
    proofs: Vec<VanillaProof<Tree>>,
    parallel: bool,
}

impl<Tree: 'static + MerkleTreeTrait> PorepPartition<Tree> {
    /// The partition of `proofs` (its vanilla proofs, in challenge order),
    /// checked as `StackedCompound::circuit` checks them: at least one, all
    /// with the first one's comm_r_last and comm_c. Its witness is
    /// synthesized in parallel (see [`Self::with_parallel_witness`]).
    pub fn new(
        public_inputs: &stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
        proofs: Vec<VanillaProof<Tree>>,
    ) -> Result<Self> {
        let first = proofs.first().ok_or_else(|| {
            FilecoinError::Input("a partition circuit needs at least one vanilla proof".into())
        })?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        if proofs.iter().any(|p| p.comm_r_last() != comm_r_last) {
            return Err(FilecoinError::VanillaProofs(
                "the partition's proofs have inconsistent comm_r_lasts".into(),
            ));
        }
        if proofs.iter().any(|p| p.comm_c() != comm_c) {
            return Err(FilecoinError::VanillaProofs(
                "the partition's proofs have inconsistent comm_cs".into(),
            ));
        }
        Ok(Self {
            commitments: Commitments {
                replica_id: public_inputs.replica_id,
                comm_d: public_inputs.tau.as_ref().map(|t| t.comm_d),
                comm_r: public_inputs.tau.as_ref().map(|t| t.comm_r),
                comm_r_last,
                comm_c,
            },
            proofs,
            parallel: true,
        })
    }

    /// Whether a witness-only synthesis runs the challenges on every core
    /// (default: yes). Off, it is one sequential `StackedCircuit`.
    pub fn with_parallel_witness(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    pub fn parallel_witness(&self) -> bool {
        self.parallel
    }

    /// The partition's challenges.
    pub fn challenges(&self) -> usize {
        self.proofs.len()
    }

    /// The witness of the whole partition (ONE first, as
    /// `synthesize_witness` gives it), its challenges synthesized on every
    /// core of the current rayon pool; `hint` is the whole circuit's size.
    pub fn parallel_witness_of(self, hint: SizeHint) -> cuda_prover_pipeline::Result<Witness> {
        let (prefix, pieces) = self.split();
        synthesize_witness_pieces(prefix, pieces, hint)
    }

    /// The shape of the partition's circuit (that of filecoin-proofs'
    /// blank circuit: the values play no part), its challenges recorded on
    /// every core of the current rayon pool.
    pub fn record_shape(self) -> cuda_prover_pipeline::Result<cuda_prover_pipeline::ShapeData> {
        let (prefix, pieces) = self.split();
        cuda_prover_pipeline::record_shape_pieces(prefix, pieces)
    }

    fn split(self) -> (Piece<Tree>, Vec<Piece<Tree>>) {
        let commitments = self.commitments;
        let pieces = self
            .proofs
            .into_iter()
            .map(|p| Piece {
                commitments,
                proof: Some(p),
            })
            .collect();
        let prefix = Piece {
            commitments,
            proof: None,
        };
        (prefix, pieces)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PorepPartition<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !(self.parallel && cs.is_witness_generator() && self.proofs.len() > 1) {
            return self.commitments.synthesize(cs, self.proofs);
        }
        let (prefix, pieces) = self.split();
        synthesize_pieces(cs, prefix, pieces).map_err(|e| match e {
            cuda_prover_pipeline::Error::Synthesis(e) => e,
            other => SynthesisError::IoError(std::io::Error::other(format!(
                "the partition's parallel witness: {other}"
            ))),
        })
    }
}
