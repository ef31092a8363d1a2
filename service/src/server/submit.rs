//! A cuda_prover.v1 submission: the job its request id names or a new one
//! (`submit_request`), the request checked and turned into a job's spec
//! (`spec`, `journaled_spec`, `check_devices`; Filecoin jobs in
//! `filecoin.rs`), and the spec handed to the job table (`submit_spec`).

use std::sync::Arc;
use std::time::Duration;

use cuda_prover_engine::gate::PRIORITY_DEFAULT;
use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::SynthesisMode;
use tonic::Status;

use crate::errors::ServiceError;
use crate::jobs::{JobEntry, JobSpec, Origin, Work};
use crate::proto;

use super::Service;

impl Service {
    /// The job of a cuda_prover.v1 submission: the one its request id
    /// names, or a new one.
    pub(super) fn submit_request(
        &self,
        mut r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<Arc<JobEntry>, Status> {
        let request_id = std::mem::take(&mut r.request_id);
        let digest = if request_id.is_empty() {
            0
        } else {
            crate::requests::prover_digest(&r)
        };
        self.requests.submit(
            &self.jobs,
            crate::requests::Api::Prover,
            &request_id,
            digest,
            || Ok(self.journaled_spec(r, wire)?),
            |spec| self.submit_spec(spec),
        )
    }

    /// The job of a submit; `wire` is the message's size as received (it
    /// counts unknown fields, which decoding dropped), when known.
    pub(crate) fn spec(
        &self,
        mut r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<JobSpec, ServiceError> {
        let bad = ServiceError::InvalidRequest;
        let size = prost::Message::encoded_len(&r).max(wire.unwrap_or(0));
        let b = match r.job.take() {
            Some(proto::submit_request::Job::BuiltIn(b)) => b,
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinC2(c2)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin C2 job", size, limit)?;
                return self.c2_spec(r, c2);
            }
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinPost(post)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin PoSt job", size, limit)?;
                return self.post_spec(r, post);
            }
            #[cfg(feature = "filecoin")]
            Some(proto::submit_request::Job::FilecoinSnap(snap)) => {
                let limit = self.config.max_filecoin_request_bytes;
                crate::wire_size::check_limit("a Filecoin SnapDeals job", size, limit)?;
                return self.snap_spec(r, snap);
            }
            #[cfg(not(feature = "filecoin"))]
            Some(
                proto::submit_request::Job::FilecoinC2(_)
                | proto::submit_request::Job::FilecoinPost(_)
                | proto::submit_request::Job::FilecoinSnap(_),
            ) => {
                return Err(ServiceError::NotBuilt(
                    "this daemon was built without Filecoin jobs (feature filecoin)".into(),
                ))
            }
            None => {
                return Err(bad("the request names no job (built_in, filecoin_c2, \
                     filecoin_post or filecoin_snap is required)"
                    .into()))
            }
        };
        // The decoder admits Filecoin-sized requests; others keep their limit.
        crate::wire_size::check_limit("a built-in job", size, self.config.max_request_bytes)?;
        let kind: Kind = b
            .circuit
            .parse()
            .map_err(|e: String| bad(format!("circuit: {e}")))?;
        if b.log_constraints > self.config.max_log_constraints {
            return Err(bad(format!(
                "log_constraints {} is above this daemon's limit of {}",
                b.log_constraints, self.config.max_log_constraints
            )));
        }
        cuda_prover_pipeline::circuits::BuiltIn::new(kind, b.log_constraints, 0)
            .map_err(|e| bad(format!("circuit: {e}")))?;
        if b.partitions == 0 || b.partitions > self.config.max_partitions {
            return Err(bad(format!(
                "partitions must be 1 to {}, not {}",
                self.config.max_partitions, b.partitions
            )));
        }
        let synthesis = if b.synthesis.is_empty() {
            SynthesisMode::Auto
        } else {
            b.synthesis
                .parse()
                .map_err(|e: String| bad(format!("synthesis: {e}")))?
        };
        if r.name.len() > 256 {
            return Err(bad("name: at most 256 bytes".into()));
        }
        self.check_devices(&r.devices)?;
        let params_dir = self
            .jobs
            .keys()
            .resolve_dir(&r.params_dir)
            .map_err(ServiceError::PermissionDenied)?;
        let name = if r.name.is_empty() {
            format!("{}-2^{}x{}", kind.name(), b.log_constraints, b.partitions)
        } else {
            r.name
        };
        Ok(JobSpec {
            work: Work::BuiltIn,
            origin: Origin::default(),
            name,
            kind,
            log_constraints: b.log_constraints,
            partitions: b.partitions,
            seed: b.seed,
            synthesis,
            priority: if r.priority == 0 {
                PRIORITY_DEFAULT
            } else {
                r.priority
            },
            devices: r.devices,
            params_dir,
            deadline: (r.deadline_ms > 0).then(|| Duration::from_millis(r.deadline_ms)),
        })
    }

    /// `spec`, with the request kept for the journal when there is one.
    pub(crate) fn journaled_spec(
        &self,
        r: proto::SubmitRequest,
        wire: Option<usize>,
    ) -> Result<JobSpec, ServiceError> {
        let copy = self.jobs.journaling().then(|| r.clone());
        let mut spec = self.spec(r, wire)?;
        spec.origin.request = copy;
        Ok(spec)
    }

    pub(super) fn check_devices(&self, devices: &[u32]) -> Result<(), ServiceError> {
        let ordinals: Vec<u32> = self
            .jobs
            .engine()
            .devices()
            .iter()
            .map(|d| d.ordinal)
            .collect();
        for (i, d) in devices.iter().enumerate() {
            if !ordinals.contains(d) {
                return Err(ServiceError::InvalidRequest(format!(
                    "device {d} is not one of this daemon's devices {ordinals:?}"
                )));
            }
            if devices[..i].contains(d) {
                return Err(ServiceError::InvalidRequest(format!(
                    "device {d} is named twice in the request's devices {devices:?}"
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn submit_spec(&self, spec: JobSpec) -> Result<Arc<JobEntry>, Status> {
        Ok(self.jobs.submit(spec).map_err(ServiceError::Submit)?)
    }
}
