//! Everything a test C1 draws from its `--seed`: the sector's identity
//! (prover id, sector id, ticket, challenge seed) and the stand-ins for
//! what is never computed (labels of nodes no challenge needs, tree nodes
//! off every opened path).
//!
//! Stand-ins are a function of (seed, kind, a, b) alone: SHA-256 of those,
//! with the top two bits cleared as storage-proofs clears its labels, so
//! each is a field element and the same (node, layer) or (level, index)
//! always gets the same value, whichever proof asks first.

use filecoin_hashers::sha256::Sha256Function;
use filecoin_hashers::{Domain, HashFunction};
use rand::RngCore;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Who and what the fixture's sector is, drawn from the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    /// The interactive PoRep challenge seed (on chain, the randomness drawn
    /// after the pre-commit; here the fixture's own choice).
    pub seed: [u8; 32],
}

impl Identity {
    /// The same seed gives the same identity: ChaCha20 from the seed, as
    /// `sealing::seal_test_sector` draws its sector's, 32-byte values with
    /// the top byte's two high bits cleared (as lotus draws tickets).
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let prover_id = field_bytes(&mut rng);
        let sector_id = 1 + (rng.next_u32() as u64 % 1_000_000);
        let ticket = field_bytes(&mut rng);
        let seed = field_bytes(&mut rng);
        Self {
            prover_id,
            sector_id,
            ticket,
            seed,
        }
    }
}

fn field_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    b
}

/// What a stand-in stands for; each kind is its own stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The label of a node at a layer (a = node, b = layer).
    Label,
    /// A node of the column tree, comm_c's (a = level, b = index).
    TreeC,
    /// A node of the replica tree, comm_r_last's (a = level, b = index).
    TreeR,
}

/// The source of stand-in values for one fixture.
#[derive(Debug, Clone, Copy)]
pub struct StandIns {
    seed: u64,
}

impl StandIns {
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// The stand-in of `kind` at (a, b): a field element, the same every
    /// time it is asked for.
    pub fn value<D: Domain>(&self, kind: Kind, a: u64, b: u64) -> D {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(b"cuda-prover test-c1 stand-in");
        buf.extend_from_slice(&self.seed.to_le_bytes());
        buf.push(kind as u8);
        buf.extend_from_slice(&a.to_le_bytes());
        buf.extend_from_slice(&b.to_le_bytes());
        // storage-proofs' SHA-256, trimmed to 254 bits: a canonical field
        // element's little-endian bytes.
        let h = <Sha256Function as HashFunction<_>>::hash(&buf);
        let mut repr = [0u8; 32];
        repr.copy_from_slice(AsRef::<[u8]>::as_ref(&h));
        D::from(repr)
    }
}
