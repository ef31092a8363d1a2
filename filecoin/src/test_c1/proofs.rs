//! The vanilla proofs of a test C1: storage-proofs' `stacked::Proof` of
//! every challenge, from the zero data tree, the computed labels and the
//! two sparse trees.
//!
//! Per challenge, as storage-proofs' prover lays it out: the comm_d
//! opening; the challenged node's column and its 6 DRG and 8 expander
//! parents' columns, each opened in the column tree (a column's leaf is
//! the Poseidon hash of its labels over all layers, `Column::hash`); one
//! labeling proof per layer; the encoding proof (the last layer's parents:
//! the key); the replica tree's opening of the encoded node (key + data,
//! data 0). comm_r is `hash2(comm_c, comm_r_last)` with the tree hasher.

use std::collections::{BTreeSet, HashMap};

use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{
    Column, ColumnProof, EncodingProof, LabelingProof, Proof, ReplicaColumnProof,
    StackedBucketGraph,
};

use super::fixture_error;
use super::labels::Labels;
use super::zero_tree::ZeroTree;
use crate::error::Result;
use crate::fixture::seeded::{Kind, StandIns};
use crate::fixture::sparse_tree::{SparseTree, TreeShape};

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// The proofs of every partition and the replica commitment they open.
pub struct Built<Tree: MerkleTreeTrait, G: Hasher> {
    pub vanilla_proofs: Vec<Vec<Proof<Tree, G>>>,
    pub comm_r: Domain<Tree>,
    /// Columns opened in the column tree (challenges and their parents).
    pub columns: usize,
}

/// Builds the proofs of `challenges` (one list per partition).
pub fn build<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher>(
    graph: &StackedBucketGraph<Tree::Hasher>,
    layers: usize,
    replica_id: Domain<Tree>,
    data: &ZeroTree<G>,
    challenges: &[Vec<usize>],
    stand_ins: StandIns,
) -> Result<Built<Tree, G>> {
    let challenged = challenges
        .iter()
        .flatten()
        .map(|&c| u32::try_from(c).map_err(|_| fixture_error(format!("challenge {c} > 2^32"))))
        .collect::<Result<BTreeSet<u32>>>()?;
    let mut labels = Labels::compute(graph, replica_id, layers, challenged.clone(), stand_ins)?;
    let shape = TreeShape::of::<Tree>(graph.size())?;

    // The column tree: the columns of the challenges and their parents.
    let mut opened = challenged.clone();
    for &c in &challenged {
        opened.extend(labels.parents(c)?);
    }
    let mut columns = HashMap::with_capacity(opened.len());
    let mut c_leaves = HashMap::with_capacity(opened.len());
    for &n in &opened {
        let column = Column::<Tree::Hasher>::new(n, labels.column(n)?)
            .map_err(|e| fixture_error(format!("column {n}: {e:#}")))?;
        c_leaves.insert(n as u64, column.hash().into());
        columns.insert(n, column);
    }
    let tree_c =
        SparseTree::<Tree::Hasher>::build(shape.clone(), c_leaves, stand_ins, Kind::TreeC)?;

    // The replica tree: each challenge's encoded node, its last layer's
    // label (the key) plus its data, as storage-proofs' `encode` adds them.
    let data_node: Fr = data.leaf().into();
    let mut r_leaves = HashMap::with_capacity(challenged.len());
    for &c in &challenged {
        let key: Fr = labels.label(c, layers)?.into();
        r_leaves.insert(c as u64, (key + data_node).into());
    }
    let tree_r = SparseTree::<Tree::Hasher>::build(shape, r_leaves, stand_ins, Kind::TreeR)?;
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r.root());

    let column_proof = |n: u32| -> Result<ColumnProof<TreeProof<Tree>>> {
        let column = columns
            .get(&n)
            .cloned()
            .ok_or_else(|| fixture_error(format!("column {n} was not opened")))?;
        ColumnProof::from_column(column, tree_c.proof(n as u64)?)
            .map_err(|e| fixture_error(format!("column proof {n}: {e:#}")))
    };
    let drg = graph.base_graph().degree();
    let mut vanilla_proofs = Vec::with_capacity(challenges.len());
    for partition in challenges {
        let mut proofs = Vec::with_capacity(partition.len());
        for &c in partition {
            let node = c as u32;
            let parents = labels.parents(node)?;
            let labeling_proofs = (1..=layers)
                .map(|l| {
                    let parent_labels = labels.parent_labels(node, l)?;
                    Ok(LabelingProof::new(l as u32, c as u64, parent_labels))
                })
                .collect::<Result<Vec<_>>>()?;
            let key_parents = labels.parent_labels(node, layers)?;
            proofs.push(Proof {
                comm_d_proofs: data.proof(c)?,
                comm_r_last_proof: tree_r.proof(c as u64)?,
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column_proof(node)?,
                    drg_parents: parents[..drg]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                    exp_parents: parents[drg..]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                },
                labeling_proofs,
                encoding_proof: EncodingProof::new(layers as u32, c as u64, key_parents),
            });
        }
        vanilla_proofs.push(proofs);
    }
    Ok(Built {
        vanilla_proofs,
        comm_r,
        columns: opened.len(),
    })
}
