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
//! order of one sequential synthesis: the first partition of a proof
//! appends each challenge's witness, and teaches the proof a challenge's
//! aux count; the partitions after it write each challenge straight into
//! its range of the assignment (no copy, no second set of pages). That
//! path is taken when the constraint system is a witness generator (the
//! witness path's); full synthesis, shape recording and bellperson's own
//! prover get the whole `StackedCircuit` as filecoin-proofs builds it.

use std::sync::{Arc, OnceLock};

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuda_prover_pipeline::{synthesize_pieces_in_place, SizeHint, Witness};
use ff::Field;
use filecoin_hashers::Hasher;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, StackedCircuit};

use super::witness;
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
    /// Into a witness generator, through [`witness::stacked`] rather than
    /// the gadgets.
    native: bool,
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for Piece<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let proofs = self.proof.into_iter().collect();
        if self.native && cs.is_witness_generator() {
            let c = self.commitments;
            witness::stacked(
                cs,
                c.replica_id,
                c.comm_d,
                c.comm_r,
                c.comm_r_last,
                c.comm_c,
                proofs,
            )
        } else {
            self.commitments.synthesize(cs, proofs)
        }
    }
}

/// One partition of a PoRep commit: its commitments and its vanilla
/// proofs (one per challenge), held once.
pub struct PorepPartition<Tree: 'static + MerkleTreeTrait> {
    commitments: Commitments<Tree>,
    proofs: Vec<VanillaProof<Tree>>,
    parallel: bool,
    native: bool,
    /// A challenge's aux count, learned by the first partition of the
    /// proof whose witness is made and shared by its partitions: from then
    /// on each challenge writes into its own range of the assignment.
    challenge_aux: Arc<OnceLock<usize>>,
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
            native: true,
            challenge_aux: Arc::default(),
        })
    }

    /// Shares what `other` learns of a challenge's size (and what it has
    /// learned): the partitions of one proof have challenges of one size.
    pub fn sharing_sizes_with(mut self, other: &Self) -> Self {
        self.challenge_aux = other.challenge_aux.clone();
        self
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

    /// Whether the parallel witness makes its challenges' SHA-256 parts
    /// from their values (default: yes; see `seal::witness`) rather than
    /// through bellpepper's gadget. Both give the same witness; the gadget
    /// is several times slower.
    pub fn with_native_witness(mut self, native: bool) -> Self {
        self.native = native;
        self
    }

    /// The partition's challenges.
    pub fn challenges(&self) -> usize {
        self.proofs.len()
    }

    /// The witness of the whole partition (ONE first, as
    /// `synthesize_witness` gives it), its challenges synthesized on every
    /// core of the current rayon pool; `hint` is the whole circuit's size.
    pub fn parallel_witness_of(self, hint: SizeHint) -> cuda_prover_pipeline::Result<Witness> {
        let mut cs = Witness::with_capacity(hint);
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        self.synthesize_in_place(&mut cs)?;
        Ok(cs)
    }

    /// The prefix and the challenges written into `cs` in place, the
    /// challenges on every core of the current rayon pool, once a
    /// challenge's size is learned where it can be.
    fn synthesize_in_place<CS: ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> cuda_prover_pipeline::Result<()> {
        self.learn_challenge_size();
        let learned = self.challenge_aux.clone();
        let (prefix, pieces) = self.split();
        synthesize_pieces_in_place(cs, prefix, pieces, &learned)
    }

    /// The shape of the partition's circuit (that of filecoin-proofs'
    /// blank circuit: the values play no part), its challenges recorded on
    /// every core of the current rayon pool.
    pub fn record_shape(self) -> cuda_prover_pipeline::Result<cuda_prover_pipeline::ShapeData> {
        let (prefix, pieces) = self.split();
        cuda_prover_pipeline::record_shape_pieces(prefix, pieces)
    }

    /// Teaches the proof a challenge's aux count when no partition of it
    /// has yet, from the prefix synthesized alone and with the first
    /// challenge (one challenge's witness, 1/18 of a 32 GiB partition's),
    /// so that the first partition too writes its challenges in place
    /// rather than synthesizing each into a witness of its own and
    /// appending it (2.5x the CPU time with the native witness). A
    /// challenge of another size is then an error naming it. If the probe
    /// fails, nothing is learned and the partition is synthesized as
    /// before (its error reported there).
    fn learn_challenge_size(&self) {
        if !self.native || self.challenge_aux.get().is_some() || self.proofs.len() < 2 {
            return;
        }
        let aux_of = |proof: Option<VanillaProof<Tree>>| {
            let piece = Piece {
                commitments: self.commitments,
                proof,
                native: self.native,
            };
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cuda_prover_pipeline::synthesize_witness(piece, SizeHint::default())
            }))
            .ok()
            .and_then(|w| w.ok())
            .map(|w| w.aux.len())
        };
        if let (Some(one), Some(prefix)) = (aux_of(Some(self.proofs[0].clone())), aux_of(None)) {
            if one > prefix {
                let _ = self.challenge_aux.set(one - prefix);
            }
        }
    }

    fn split(self) -> (Piece<Tree>, Vec<Piece<Tree>>) {
        let (commitments, native) = (self.commitments, self.native);
        let pieces = self
            .proofs
            .into_iter()
            .map(|p| Piece {
                commitments,
                proof: Some(p),
                native,
            })
            .collect();
        let prefix = Piece {
            commitments,
            proof: None,
            native,
        };
        (prefix, pieces)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PorepPartition<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !(self.parallel && cs.is_witness_generator() && self.proofs.len() > 1) {
            return self.commitments.synthesize(cs, self.proofs);
        }
        self.synthesize_in_place(cs).map_err(|e| match e {
            cuda_prover_pipeline::Error::Synthesis(e) => e,
            other => SynthesisError::IoError(std::io::Error::other(format!(
                "the partition's parallel witness: {other}"
            ))),
        })
    }
}

#[cfg(test)]
mod tests {
    use filecoin_proofs::constants::SectorShape2KiB;
    use storage_proofs_core::sector::SectorId;

    use crate::c1::C1File;
    use crate::test_c1::generate_test_c1;
    use crate::{prepare_c2, RegisteredSeal, SealVersion, SectorSize};

    use super::*;

    type Tree = SectorShape2KiB;

    /// The partitions of a 2 KiB test C1 (prepared as C2 prepares them).
    fn partitions(seed: u64) -> Vec<PorepPartition<Tree>> {
        let registered = RegisteredSeal::new(SectorSize::KIB_2, SealVersion::V1_1);
        let c1 = generate_test_c1(registered, seed).unwrap();
        let out = C1File::parse(&c1.c1_json)
            .unwrap()
            .output::<Tree>()
            .unwrap();
        let config = registered.porep_config().unwrap();
        let id = c1.identity;
        prepare_c2::<Tree>(&config, out, id.prover_id, SectorId::from(id.sector_id))
            .unwrap()
            .circuits
    }

    /// The native witness (the SHA-256 parts made from values) is the
    /// gadgets' witness, input for input and aux for aux.
    #[test]
    fn the_native_witness_is_the_gadgets() {
        for (k, (native, gadget)) in partitions(9).into_iter().zip(partitions(9)).enumerate() {
            let n = native.parallel_witness_of(SizeHint::default()).unwrap();
            let g = gadget
                .with_native_witness(false)
                .parallel_witness_of(SizeHint::default())
                .unwrap();
            let first = |a: &[Scalar], b: &[Scalar]| a.iter().zip(b).position(|(x, y)| x != y);
            assert_eq!(
                (n.aux_slice().len(), first(n.aux_slice(), g.aux_slice())),
                (g.aux_slice().len(), None),
                "partition {k}: aux count and first difference"
            );
            assert_eq!(n, g, "partition {k}");
        }
    }

    /// The first partition of a proof learns a challenge's size and the
    /// next writes its challenges in place: both witnesses equal the
    /// sequential synthesis of `StackedCircuit` (which
    /// tests/all/filecoin_parallel_witness.rs ties to filecoin-proofs' own).
    #[test]
    fn later_partitions_write_their_challenges_in_place() {
        let sequential = |p: PorepPartition<Tree>| {
            cuda_prover_pipeline::synthesize_witness(
                p.with_parallel_witness(false),
                SizeHint::default(),
            )
            .unwrap()
        };
        let expected: Vec<Witness> = partitions(5).into_iter().map(sequential).collect();
        let mut first = partitions(5);
        assert!(first[0].challenges() > 1, "pieces to split");
        // A second preparation of the same C1, sharing the first's sizes
        // (as the partitions of one preparation do).
        let second: Vec<_> = partitions(5)
            .into_iter()
            .map(|p| p.sharing_sizes_with(&first[0]))
            .collect();
        let learner = first.remove(0);
        let learned = learner.challenge_aux.clone();
        assert_eq!(learned.get(), None);
        let w = learner.parallel_witness_of(SizeHint::default()).unwrap();
        assert_eq!(w, expected[0], "the learning partition");
        let size = *learned.get().expect("the challenges' size is learned");
        assert!(size > 0);
        for (k, p) in second.into_iter().enumerate() {
            let w = cuda_prover_pipeline::synthesize_witness(p, SizeHint::default()).unwrap();
            assert_eq!(w, expected[k], "partition {k} in place");
        }
        assert_eq!(learned.get(), Some(&size));
        // The size is what the in-place path goes by: told another, the
        // partition is refused, naming the challenge.
        let mut wrong = partitions(5).remove(0);
        wrong.challenge_aux = Arc::new(OnceLock::from(size - 1));
        let e = cuda_prover_pipeline::synthesize_witness(wrong, SizeHint::default()).unwrap_err();
        assert!(
            e.to_string().contains("piece 0: allocates more than"),
            "{e}"
        );
    }
}
