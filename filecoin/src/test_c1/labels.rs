//! The SDR labels a test C1 opens, and only those.
//!
//! A challenged node's label at layer l is computed as storage-proofs
//! labels (SHA-256 of the replica id, layer, node and its 37 parent labels:
//! the 6 DRG parents at layer l and the 8 expander parents at layer l - 1,
//! repeated; layer 1 has the DRG parents only), with the parents of the
//! real `StackedBucketGraph` of the sector's public params. Every parent
//! label that is not itself a challenged node's is a seeded stand-in.
//! Layers are computed in order and challenged nodes in ascending order,
//! so a challenged node that is another one's parent (DRG parents come
//! before their node, expander parents from the layer below) is computed
//! before it is read. Every label, computed or stand-in, is memoized per
//! (node, layer): a column, a labeling proof and a parent read all see the
//! same value.

use std::collections::{BTreeSet, HashMap};

use filecoin_hashers::sha256::Sha256Function;
use filecoin_hashers::{HashFunction, Hasher};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{LabelingProof, StackedBucketGraph, TOTAL_PARENTS};

use super::fixture_error;
use crate::error::Result;
use crate::fixture::seeded::{Kind, StandIns};

/// The labels of one test sector.
pub struct Labels<'g, H: 'static + Hasher> {
    graph: &'g StackedBucketGraph<H>,
    layers: usize,
    challenged: BTreeSet<u32>,
    stand_ins: StandIns,
    memo: HashMap<(u32, usize), H::Domain>,
}

impl<'g, H: 'static + Hasher> Labels<'g, H> {
    /// Computes every layer's label of every challenged node.
    pub fn compute(
        graph: &'g StackedBucketGraph<H>,
        replica_id: H::Domain,
        layers: usize,
        challenged: BTreeSet<u32>,
        stand_ins: StandIns,
    ) -> Result<Self> {
        if challenged.contains(&0) {
            // storage-proofs never challenges node 0 (it has no parents).
            return Err(fixture_error("node 0 cannot be challenged"));
        }
        let mut labels = Self {
            graph,
            layers,
            challenged,
            stand_ins,
            memo: HashMap::new(),
        };
        let nodes: Vec<u32> = labels.challenged.iter().copied().collect();
        for layer in 1..=layers {
            for &node in &nodes {
                let parents = labels.parent_labels(node, layer)?;
                let label = label_of::<H>(&replica_id, layer, node, &parents);
                // storage-proofs' own labeling check on what was computed.
                let proof = LabelingProof::<H>::new(layer as u32, node as u64, parents);
                if !proof.verify(&replica_id, &label) {
                    return Err(fixture_error(format!(
                        "the label of node {node} at layer {layer} is not storage-proofs'"
                    )));
                }
                labels.memo.insert((node, layer), label);
            }
        }
        Ok(labels)
    }

    /// The label of `node` at `layer` (1-based): computed for a challenged
    /// node, a stand-in for any other.
    pub fn label(&mut self, node: u32, layer: usize) -> Result<H::Domain> {
        if let Some(v) = self.memo.get(&(node, layer)) {
            return Ok(*v);
        }
        if self.challenged.contains(&node) {
            return Err(fixture_error(format!(
                "the label of challenged node {node} at layer {layer} was read before it was \
                 computed"
            )));
        }
        let v = self.stand_ins.value(Kind::Label, node as u64, layer as u64);
        self.memo.insert((node, layer), v);
        Ok(v)
    }

    /// The graph parents of `node`: DRG parents, then expander parents.
    pub fn parents(&self, node: u32) -> Result<Vec<u32>> {
        let mut parents = vec![0u32; self.graph.degree()];
        self.graph
            .parents(node as usize, &mut parents)
            .map_err(|e| fixture_error(format!("graph parents of node {node}: {e:#}")))?;
        Ok(parents)
    }

    /// The 37 parent labels that label `node` at `layer`, in storage-proofs'
    /// order (what a `LabelingProof` holds).
    pub fn parent_labels(&mut self, node: u32, layer: usize) -> Result<Vec<H::Domain>> {
        let parents = self.parents(node)?;
        let drg = self.graph.base_graph().degree();
        let mut direct = Vec::with_capacity(parents.len());
        for &p in &parents[..drg] {
            direct.push(self.label(p, layer)?);
        }
        if layer > 1 {
            for &p in &parents[drg..] {
                direct.push(self.label(p, layer - 1)?);
            }
        }
        Ok(direct.iter().copied().cycle().take(TOTAL_PARENTS).collect())
    }

    /// The column of `node`: its labels at layers 1..=layers.
    pub fn column(&mut self, node: u32) -> Result<Vec<H::Domain>> {
        (1..=self.layers).map(|l| self.label(node, l)).collect()
    }
}

/// storage-proofs' label: SHA-256 of the replica id, a 32-byte block of
/// layer (u32, big endian) and node (u64, big endian), and the parent
/// labels, trimmed to a field element.
fn label_of<H: Hasher>(
    replica_id: &H::Domain,
    layer: usize,
    node: u32,
    parents: &[H::Domain],
) -> H::Domain {
    let mut buf = Vec::with_capacity(64 + 32 * parents.len());
    buf.extend_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    let mut block = [0u8; 32];
    block[..4].copy_from_slice(&(layer as u32).to_be_bytes());
    block[4..12].copy_from_slice(&(node as u64).to_be_bytes());
    buf.extend_from_slice(&block);
    for p in parents {
        buf.extend_from_slice(AsRef::<[u8]>::as_ref(p));
    }
    let h = <Sha256Function as HashFunction<_>>::hash(&buf);
    let mut repr = [0u8; 32];
    repr.copy_from_slice(AsRef::<[u8]>::as_ref(&h));
    H::Domain::from(repr)
}
