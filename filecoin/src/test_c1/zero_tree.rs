//! The data tree of a committed-capacity sector: every leaf is a zero
//! node, so every subtree of 2^h leaves has the same root, and comm_d and
//! every comm_d opening follow from those `height + 1` hashes alone. No
//! tree is stored, at any sector size.

use filecoin_hashers::{Hasher, PoseidonArity};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};

use super::fixture_error;
use crate::error::Result;
use crate::fixture::sparse_tree::hash_children;

/// The roots of the all-zero subtrees of a binary tree, level by level.
pub struct ZeroTree<G: Hasher> {
    /// `levels[h]`: the root of a subtree of 2^h zero leaves.
    levels: Vec<G::Domain>,
}

impl<G: Hasher> ZeroTree<G> {
    /// The zero tree over `leaves` nodes (a power of two).
    pub fn new(leaves: usize) -> Result<Self> {
        if !leaves.is_power_of_two() || leaves < 2 {
            return Err(fixture_error(format!(
                "a data tree needs a power of two of at least 2 leaves, not {leaves}"
            )));
        }
        let height = leaves.trailing_zeros() as usize;
        // A CC sector's data is zeros; its leaves are the 32-byte zero node.
        let mut levels = vec![G::Domain::default()];
        for h in 0..height {
            let below = levels[h];
            levels.push(hash_children::<G>(&[below, below], h));
        }
        Ok(Self { levels })
    }

    /// comm_d.
    pub fn root(&self) -> G::Domain {
        self.levels[self.levels.len() - 1]
    }

    /// A data leaf: the zero node.
    pub fn leaf(&self) -> G::Domain {
        self.levels[0]
    }

    pub fn height(&self) -> usize {
        self.levels.len() - 1
    }

    /// The opening of `node`: a zero leaf, the zero subtree beside it at
    /// every level, the side taken from the node's bits.
    pub fn proof<A: 'static + PoseidonArity>(&self, node: usize) -> Result<MerkleProof<G, A>> {
        if A::to_usize() != 2 {
            return Err(fixture_error(format!(
                "the data tree is binary; a proof of arity {} was asked for",
                A::to_usize()
            )));
        }
        let path = (0..self.height())
            .map(|h| (vec![self.levels[h]], (node >> h) & 1))
            .collect();
        let proof = MerkleProof::from_parts(self.levels[0], self.root(), path);
        if !proof.validate(node) {
            return Err(fixture_error(format!(
                "the zero data tree's opening of node {node} does not verify"
            )));
        }
        Ok(proof)
    }
}
