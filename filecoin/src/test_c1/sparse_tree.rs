//! A Merkle tree of which only the opened leaves are known: comm_c's
//! column tree and comm_r_last's replica tree of a test C1.
//!
//! The tree has the shape of the sector's `MerkleTreeTrait` (base arity,
//! then one sub-tree level and one top-tree level where the shape has
//! them, as `with_shape` / filecoin-proofs' `SectorShape*` say). A node on
//! an opened leaf's path is hashed from its children, as storage-proofs'
//! `InclusionPath::root` hashes them; every other child is a seeded
//! stand-in, kept once drawn so that every path through it sees the same
//! value. Nothing else of the tree exists.

use std::collections::{BTreeSet, HashMap};

use filecoin_hashers::{Domain, HashFunction, Hasher, PoseidonArity};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};

use super::fixture_error;
use super::seeded::{Kind, StandIns};
use crate::error::Result;

/// One node from its children, as `InclusionPath::root` computes it:
/// the hasher's `multi_node` at the height within the path's segment.
pub fn hash_children<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    node_of::<H::Function, H::Domain>(children, height)
}

fn node_of<F: HashFunction<D>, D: Domain>(children: &[D], height: usize) -> D {
    let mut f = F::default();
    f.reset();
    f.multi_node(children, height)
}

/// A typenum arity as a number (0: no such level).
fn arity<A: PoseidonArity>() -> usize {
    A::to_usize()
}

/// The arity of each level, leaves first, and the height `multi_node`
/// is given there (heights count from 0 again in the sub and top trees,
/// whose paths are segments of their own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeShape {
    pub arities: Vec<usize>,
    heights: Vec<usize>,
}

impl TreeShape {
    /// The shape of `Tree` over `leaves` nodes.
    pub fn of<Tree: MerkleTreeTrait>(leaves: usize) -> Result<Self> {
        let base = arity::<Tree::Arity>();
        let sub = arity::<Tree::SubTreeArity>();
        let top = arity::<Tree::TopTreeArity>();
        let bad = || {
            fixture_error(format!(
                "{leaves} leaves do not make a tree of arity {base}/{sub}/{top}"
            ))
        };
        let mut base_leaves = leaves;
        for a in [sub, top].into_iter().filter(|a| *a > 0) {
            if base_leaves % a != 0 {
                return Err(bad());
            }
            base_leaves /= a;
        }
        let (mut arities, mut heights) = (Vec::new(), Vec::new());
        while base_leaves > 1 {
            if base < 2 || base_leaves % base != 0 {
                return Err(bad());
            }
            heights.push(arities.len());
            arities.push(base);
            base_leaves /= base;
        }
        for a in [sub, top].into_iter().filter(|a| *a > 0) {
            arities.push(a);
            heights.push(0);
        }
        Ok(Self { arities, heights })
    }
}

/// The known part of a tree: the opened leaves, every node above them and
/// the stand-ins beside them.
pub struct SparseTree<H: Hasher> {
    shape: TreeShape,
    /// `levels[h]`: the nodes of level h that exist (level 0: leaves).
    levels: Vec<HashMap<u64, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    /// Builds the paths of `leaves` (index -> value) up to the root;
    /// `kind` names the stand-in stream of the other children.
    pub fn build(
        shape: TreeShape,
        leaves: HashMap<u64, H::Domain>,
        stand_ins: StandIns,
        kind: Kind,
    ) -> Result<Self> {
        if leaves.is_empty() {
            return Err(fixture_error("a sparse tree needs a leaf"));
        }
        let mut levels = vec![leaves];
        for (h, (&arity, &height)) in shape.arities.iter().zip(&shape.heights).enumerate() {
            let level = &mut levels[h];
            let groups: BTreeSet<u64> = level.keys().map(|j| j / arity as u64).collect();
            let mut above = HashMap::with_capacity(groups.len());
            for g in groups {
                let children: Vec<H::Domain> = (0..arity as u64)
                    .map(|k| {
                        let j = g * arity as u64 + k;
                        *level
                            .entry(j)
                            .or_insert_with(|| stand_ins.value(kind, h as u64, j))
                    })
                    .collect();
                above.insert(g, hash_children::<H>(&children, height));
            }
            levels.push(above);
        }
        let top = &levels[levels.len() - 1];
        if top.len() != 1 || !top.contains_key(&0) {
            return Err(fixture_error("a sparse tree's leaves lie outside the tree"));
        }
        Ok(Self { shape, levels })
    }

    pub fn root(&self) -> H::Domain {
        self.levels[self.levels.len() - 1][&0]
    }

    /// The opening of leaf `index` as storage-proofs' `MerkleProof` of the
    /// tree's shape (base path, then the sub and top elements).
    pub fn proof<A, B, C>(&self, index: u64) -> Result<MerkleProof<H, A, B, C>>
    where
        A: 'static + PoseidonArity,
        B: 'static + PoseidonArity,
        C: 'static + PoseidonArity,
    {
        let missing = || fixture_error(format!("leaf {index} was not opened"));
        let leaf = *self.levels[0].get(&index).ok_or_else(missing)?;
        let mut path = Vec::with_capacity(self.shape.arities.len());
        let mut j = index;
        for (h, &arity) in self.shape.arities.iter().enumerate() {
            let (g, at) = (j / arity as u64, j % arity as u64);
            let siblings = (0..arity as u64)
                .filter(|k| *k != at)
                .map(|k| self.levels[h].get(&(g * arity as u64 + k)).copied())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(missing)?;
            path.push((siblings, at as usize));
            j = g;
        }
        let proof = MerkleProof::<H, A, B, C>::from_parts(leaf, self.root(), path);
        // The shape's levels must be the proof type's: storage-proofs'
        // own check of the path, root and index.
        if !proof.validate(index as usize) {
            return Err(fixture_error(format!(
                "the opening of leaf {index} does not verify (arity {}/{}/{} against levels {:?})",
                A::to_usize(),
                B::to_usize(),
                C::to_usize(),
                self.shape.arities
            )));
        }
        Ok(proof)
    }
}
