//! One sector of a test PoSt: its replica tree (comm_r_last), of the
//! sector's real `MerkleTreeTrait` shape, sparse and opened at the
//! sector's challenges; a stand-in comm_c; comm_r = hash2(comm_c,
//! comm_r_last) with the tree hasher, as storage-proofs computes it; and
//! the `FallbackPoStSectorProof` that filecoin-proofs'
//! `generate_single_vanilla_proof` returns for those challenges.
//!
//! A replica leaf is a stand-in too (a real one is a label plus the
//! sector's data): the PoSt opens the replica tree only.

use std::collections::HashMap;

use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, MerkleTreeTrait};
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{Proof, SectorProof};

use super::identity::SeededSector;
use crate::error::Result;
use crate::fixture::seeded::Kind;
use crate::fixture::sparse_tree::{SparseTree, TreeShape};
use crate::sector::SectorSize;

/// The vanilla proof of `sector` for `challenges` (leaf indices of its
/// replica tree, as `generate_fallback_sector_challenges` gives them).
pub fn vanilla_proof<Tree: 'static + MerkleTreeTrait>(
    size: SectorSize,
    sector: &SeededSector,
    challenges: &[u64],
) -> Result<FallbackPoStSectorProof<Tree>> {
    let stand_ins = sector.stand_ins;
    let shape = TreeShape::of::<Tree>(size.nodes() as usize)?;
    // A leaf is the value the tree would draw for it unopened.
    let leaves: HashMap<u64, _> = challenges
        .iter()
        .map(|&c| (c, stand_ins.value(Kind::TreeR, 0, c)))
        .collect();
    let tree_r = SparseTree::<Tree::Hasher>::build(shape, leaves, stand_ins, Kind::TreeR)?;
    let comm_c = stand_ins.value(Kind::CommC, 0, 0);
    let comm_r_last = tree_r.root();
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let inclusion_proofs = challenges
        .iter()
        .map(|&c| tree_r.proof::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(c))
        .collect::<Result<Vec<_>>>()?;
    Ok(FallbackPoStSectorProof {
        sector_id: SectorId::from(sector.sector_id),
        comm_r,
        vanilla_proof: Proof {
            sectors: vec![SectorProof {
                inclusion_proofs,
                comm_c,
                comm_r_last,
            }],
        },
    })
}
