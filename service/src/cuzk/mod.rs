//! `cuzk.v1.ProvingEngine` (`proto/cuzk/v1/cuzk.proto`): the API Curio's
//! cuzk client speaks, served by the same daemon beside `cuda_prover.v1`.
//! Its jobs go into the same queue, at the same gate levels (WinningPoSt >
//! WindowPoSt > C2 = SnapDeals), and their proofs pass filecoin-proofs'
//! verifier before they are returned, as every Filecoin job's do.
//!
//! Proof kinds, each a Filecoin job of the cuda_prover.v1 API (and written
//! to the journal in that form), the prover id made from `miner_id`:
//! - POREP_SEAL_COMMIT: C2 (the C1 output in `vanilla_proof`).
//! - WINNING_POST and WINDOW_POST_PARTITION: PoSt from the challenged
//!   sectors' vanilla proofs (`vanilla_proofs`, each filecoin-proofs-api's
//!   bincode `FallbackPoStSectorProof`) and the 32-byte `randomness`; a
//!   window partition is the one `partition_index` names, its answer that
//!   partition's proof.
//! - SNAP_DEALS_UPDATE: the update's vanilla partition proofs
//!   (`vanilla_proofs`, each a bincode `PartitionProof`) and the three
//!   commitments `comm_r_old`, `comm_r_new`, `comm_d_new` (32 bytes each,
//!   or binary CIDs).
//!
//! With `vanilla_proofs` empty, those kinds read the list from
//! `vanilla_proof` as a JSON array of base64 strings.
//! The sector size comes from `registered_proof` (the network's numbers of
//! the kind) or `sector_size`. Malformed inputs are INVALID_ARGUMENT at
//! submission, and nothing is queued.
//!
//! `request_id` is an idempotency key: a request whose id names a job this
//! daemon knows answers with that job (ALREADY_EXISTS when its inputs
//! differ from the first request's).

pub mod convert;
mod engine;
mod job_view;
mod kinds;
mod srs;
mod submit;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wire;

use std::sync::Arc;
use std::time::Instant;

use crate::server::Service;

pub use kinds::kind_of;

/// The longest request id kept (Curio's are UUIDs or task ids).
pub use crate::requests::MAX_REQUEST_ID_BYTES;

/// The cuzk.v1 service over the daemon's [`Service`].
pub struct Cuzk {
    service: Arc<Service>,
    started: Instant,
}

impl Cuzk {
    pub fn new(service: Arc<Service>) -> Arc<Self> {
        Arc::new(Self {
            service,
            started: Instant::now(),
        })
    }
}
