//! Filecoin submissions (C2, PoSt, SnapDeals): the checks every one passes
//! (`filecoin_request`) and each kind's request checked and turned into a
//! job's spec (`c2_spec`, `post_spec`, `snap_spec`).

use std::sync::Arc;
use std::time::Duration;

use cuda_prover_pipeline::circuits::Kind;
use cuda_prover_pipeline::SynthesisMode;

use crate::errors::ServiceError;
use crate::jobs::{JobSpec, Origin, Work};
use crate::proto;

use super::Service;

impl Service {
    /// The checks every Filecoin job's request passes: the daemon takes
    /// Filecoin jobs, the request names no params_dir (the parameters are
    /// the daemon's), its name and devices are valid.
    fn filecoin_request(&self, r: &proto::SubmitRequest) -> Result<(), ServiceError> {
        if self.jobs.filecoin().is_none() {
            return Err(ServiceError::NotEnabled(
                "this daemon takes no Filecoin jobs (started without them)".into(),
            ));
        }
        if !r.params_dir.is_empty() {
            return Err(ServiceError::InvalidRequest(
                "params_dir: Filecoin jobs use the daemon's Filecoin parameters; leave it empty"
                    .into(),
            ));
        }
        if r.name.len() > 256 {
            return Err(ServiceError::InvalidRequest(
                "name: at most 256 bytes".into(),
            ));
        }
        self.check_devices(&r.devices)
    }

    /// A Filecoin job's spec from its checked request.
    fn filecoin_spec(
        r: proto::SubmitRequest,
        name: String,
        partitions: u32,
        level: cuda_prover_engine::gate::Priority,
        work: Work,
    ) -> JobSpec {
        JobSpec {
            name: if r.name.is_empty() { name } else { r.name },
            // Unused by Filecoin jobs.
            kind: Kind::Chain,
            log_constraints: 0,
            partitions,
            seed: None,
            synthesis: SynthesisMode::Auto,
            priority: if r.priority == 0 { level } else { r.priority },
            devices: r.devices,
            params_dir: std::path::PathBuf::new(),
            deadline: (r.deadline_ms > 0).then(|| Duration::from_millis(r.deadline_ms)),
            work,
            origin: Origin::default(),
        }
    }

    /// A Filecoin C2 job: the C1 output is parsed and checked against the
    /// request here, so a malformed one is refused at submission. The
    /// parameters are the daemon's (the request's params_dir must be empty).
    pub(super) fn c2_spec(
        &self,
        r: proto::SubmitRequest,
        c2: proto::FilecoinC2Job,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::PRIORITY_C2;
        self.filecoin_request(&r)?;
        let c2 = crate::filecoin::C2Spec::check(c2).map_err(ServiceError::InvalidRequest)?;
        Ok(Self::filecoin_spec(
            r,
            c2.name(),
            c2.partitions,
            PRIORITY_C2,
            Work::FilecoinC2(Arc::new(c2)),
        ))
    }

    /// A Filecoin PoSt job: the vanilla proofs are decoded and their count
    /// and shape checked here, so malformed ones are refused at submission.
    pub(super) fn post_spec(
        &self,
        r: proto::SubmitRequest,
        post: proto::FilecoinPostJob,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::{PRIORITY_WINDOW_POST, PRIORITY_WINNING_POST};
        use cuda_prover_filecoin::vanilla::PostJob;
        self.filecoin_request(&r)?;
        let post = crate::filecoin::PostSpec::check(post).map_err(ServiceError::InvalidRequest)?;
        let level = match post.job {
            PostJob::Winning => PRIORITY_WINNING_POST,
            PostJob::Window | PostJob::WindowPartition(_) => PRIORITY_WINDOW_POST,
        };
        Ok(Self::filecoin_spec(
            r,
            post.name(),
            1,
            level,
            Work::FilecoinPost(Arc::new(post)),
        ))
    }

    /// A Filecoin SnapDeals job: the vanilla proofs are decoded and counted
    /// and the commitments checked here.
    pub(super) fn snap_spec(
        &self,
        r: proto::SubmitRequest,
        snap: proto::FilecoinSnapJob,
    ) -> Result<JobSpec, ServiceError> {
        use cuda_prover_engine::gate::PRIORITY_C2;
        self.filecoin_request(&r)?;
        let snap = crate::filecoin::SnapSpec::check(snap).map_err(ServiceError::InvalidRequest)?;
        Ok(Self::filecoin_spec(
            r,
            snap.name(),
            snap.partitions(),
            PRIORITY_C2,
            Work::FilecoinSnap(Arc::new(snap)),
        ))
    }
}
