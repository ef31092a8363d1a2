//! A SubmitProofRequest made a job: the known job of its request id or a
//! new one (`submit`), the cuda_prover.v1 Filecoin job it asks for
//! (`filecoin_spec`, with `vanillas` for its vanilla proofs), and the
//! digest of its inputs that tells a retried request from a request id
//! reused with other inputs (`digest`).

use std::sync::Arc;

use tonic::Status;

use crate::cuzk_proto::{self as pb, ProofKind};
use crate::jobs::JobEntry;

use super::{convert, Cuzk};

impl Cuzk {
    /// The job of a request: the known one for its request id (the
    /// daemon's request ids of this API, read back from its journal after
    /// a restart), or a new one.
    pub(super) fn submit(
        &self,
        r: pb::SubmitProofRequest,
        wire: Option<usize>,
    ) -> Result<Arc<JobEntry>, Status> {
        let kind = convert::proof_kind(r.proof_kind).map_err(Status::invalid_argument)?;
        crate::requests::check_id(&r.request_id)?;
        let digest = digest(&r);
        self.service.requests().submit(
            self.service.jobs(),
            crate::requests::Api::Cuzk,
            &r.request_id,
            digest,
            || self.filecoin_spec(&r, kind, wire),
            |spec| self.service.submit_spec(spec),
        )
    }

    /// The cuda_prover.v1 job of a request: C2, PoSt or SnapDeals, checked
    /// as that API checks them.
    fn filecoin_spec(
        &self,
        r: &pb::SubmitProofRequest,
        kind: ProofKind,
        wire: Option<usize>,
    ) -> Result<crate::jobs::JobSpec, Status> {
        let priority =
            convert::gate_priority(kind, r.priority).map_err(Status::invalid_argument)?;
        #[cfg(feature = "filecoin")]
        {
            use crate::proto::submit_request::Job;
            let bad = |m: String| Status::invalid_argument(m);
            let prover_id: String = convert::prover_id_of_miner(r.miner_id)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let job = match kind {
                ProofKind::PorepSealCommit => {
                    if r.vanilla_proof.is_empty() {
                        return Err(Status::invalid_argument(
                            "vanilla_proof is empty: POREP_SEAL_COMMIT takes the C1 output there",
                        ));
                    }
                    // registered_proof 0 is StackedDrg2KiBV1, never a
                    // production seal; Curio leaves it 0 for C2 (the C1
                    // output names its proof).
                    let registered_proof = if r.registered_proof == 0 {
                        String::new()
                    } else {
                        convert::registered_seal_name(r.registered_proof).map_err(bad)?
                    };
                    Job::FilecoinC2(crate::proto::FilecoinC2Job {
                        c1_output: r.vanilla_proof.clone(),
                        prover_id,
                        sector_id: r.sector_number,
                        sector_size: r.sector_size,
                        registered_proof,
                    })
                }
                ProofKind::WinningPost | ProofKind::WindowPostPartition => {
                    let sector_size =
                        convert::post_sector_size(kind, r.registered_proof, r.sector_size)
                            .map_err(bad)?;
                    let winning = kind == ProofKind::WinningPost;
                    if winning && r.partition_index != 0 {
                        return Err(Status::invalid_argument(
                            "partition_index is for WINDOW_POST_PARTITION only",
                        ));
                    }
                    Job::FilecoinPost(crate::proto::FilecoinPostJob {
                        kind: if winning {
                            "winning"
                        } else {
                            "window-partition"
                        }
                        .into(),
                        sector_size,
                        randomness: r.randomness.clone(),
                        prover_id,
                        vanilla_proofs: vanillas(r).map_err(bad)?,
                        partition_index: r.partition_index,
                    })
                }
                ProofKind::SnapDealsUpdate => {
                    use convert::{commitment_of_cid, SEALED, UNSEALED};
                    let sector_size = convert::snap_sector_size(r.registered_proof, r.sector_size)
                        .map_err(bad)?;
                    let comm_r_old =
                        commitment_of_cid(&r.comm_r_old, "comm_r_old", SEALED).map_err(bad)?;
                    let comm_r_new =
                        commitment_of_cid(&r.comm_r_new, "comm_r_new", SEALED).map_err(bad)?;
                    let comm_d_new =
                        commitment_of_cid(&r.comm_d_new, "comm_d_new", UNSEALED).map_err(bad)?;
                    Job::FilecoinSnap(crate::proto::FilecoinSnapJob {
                        sector_size,
                        vanilla_proofs: vanillas(r).map_err(bad)?,
                        comm_r_old: comm_r_old.to_vec(),
                        comm_r_new: comm_r_new.to_vec(),
                        comm_d_new: comm_d_new.to_vec(),
                    })
                }
                ProofKind::Unspecified => {
                    return Err(Status::invalid_argument("proof_kind is unspecified"));
                }
            };
            let req = crate::proto::SubmitRequest {
                job: Some(job),
                priority,
                name: r.request_id.clone(),
                ..Default::default()
            };
            Ok(self.service.journaled_spec(req, wire)?)
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (r, wire, priority);
            Err(Status::unimplemented(
                "this daemon was built without Filecoin jobs (feature filecoin)",
            ))
        }
    }
}

/// The vanilla proofs of a PoSt or SnapDeals request: `vanilla_proofs`,
/// or, when that is empty, the JSON array of base64 strings in
/// `vanilla_proof`.
#[cfg(feature = "filecoin")]
fn vanillas(r: &pb::SubmitProofRequest) -> Result<Vec<Vec<u8>>, String> {
    if !r.vanilla_proofs.is_empty() {
        return Ok(r.vanilla_proofs.clone());
    }
    if r.vanilla_proof.is_empty() {
        return Err(
            "vanilla_proofs is empty (and so is vanilla_proof): this proof kind \
                    takes its vanilla proofs there"
                .into(),
        );
    }
    convert::vanilla_list(&r.vanilla_proof)
}

/// A digest of everything a request asks for but its id: a repeated id
/// with other inputs is a client's mistake, not the same job. FNV-1a over
/// the fields (each with its length), so that a digest the journal kept
/// means the same to a later build of the daemon.
pub(super) fn digest(r: &pb::SubmitProofRequest) -> u64 {
    let mut h = crate::requests::Fnv::default();
    for v in [
        r.proof_kind as u64,
        r.sector_size,
        r.registered_proof,
        r.priority as u64,
        r.sector_number,
        r.miner_id,
        r.partition_index as u64,
    ] {
        h.u64(v);
    }
    for b in [
        &r.vanilla_proof,
        &r.randomness,
        &r.comm_r_old,
        &r.comm_r_new,
        &r.comm_d_new,
    ] {
        h.bytes(b);
    }
    // Only when present, so that a request without the list keeps the
    // digest earlier builds journaled.
    if !r.vanilla_proofs.is_empty() {
        h.u64(r.vanilla_proofs.len() as u64);
        r.vanilla_proofs.iter().for_each(|b| h.bytes(b));
    }
    h.finish()
}
