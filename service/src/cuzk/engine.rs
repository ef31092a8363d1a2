//! The cuzk.v1 `ProvingEngine` service: submit, await, prove and cancel
//! proofs; the daemon's status and metrics; preload and evict SRS (keys).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::cuzk_proto::proving_engine_server::ProvingEngine;
use crate::cuzk_proto::{
    self as pb, await_proof_response::Status as AwaitStatus, srs_status::Tier as SrsTier,
};
use crate::jobs::JobState;

use super::job_view::{response, result};
use super::kinds::QUEUE_KINDS;
use super::{convert, kind_of, Cuzk};

#[tonic::async_trait]
impl ProvingEngine for Arc<Cuzk> {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit(req.into_inner(), wire)?;
        Ok(Response::new(pb::SubmitProofResponse {
            job_id: e.wire_id.to_string(),
            queue_position: self.queue_position(&e),
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let e = self.job(&r.job_id)?;
        if r.timeout_ms == 0 {
            let done = result(&e).await?;
            return Ok(Response::new(response(&e, &done)));
        }
        let wait = std::time::Duration::from_millis(r.timeout_ms);
        match tokio::time::timeout(wait, result(&e)).await {
            Ok(done) => {
                let done = done?;
                Ok(Response::new(response(&e, &done)))
            }
            Err(_) => Ok(Response::new(pb::AwaitProofResponse {
                job_id: e.wire_id.to_string(),
                status: AwaitStatus::Timeout as i32,
                error_message: format!(
                    "job {} has not ended after {} ms; it goes on",
                    e.wire_id, r.timeout_ms
                ),
                ..Default::default()
            })),
        }
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let wire = crate::wire_size::of(&req);
        let submit = req.into_inner().submit.ok_or_else(|| {
            Status::invalid_argument("ProveRequest has no submit (the SubmitProofRequest)")
        })?;
        let e = self.submit(submit, wire)?;
        let r = result(&e).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(response(&e, &r)),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        let before = e.snapshot().state;
        let after = self
            .service
            .jobs()
            .cancel(e.id, crate::jobs::CancelReason::Request);
        let was_running = !before.finished() && after == Some(JobState::Running);
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let jobs = self.service.jobs();
        let (queued, running) = jobs.list();
        let queues = QUEUE_KINDS
            .iter()
            .map(|&k| pb::QueueStatus {
                proof_kind: convert::queue_name(k).to_string(),
                pending: queued.iter().filter(|e| kind_of(&e.spec.work) == k).count() as u32,
                in_progress: running
                    .iter()
                    .filter(|e| kind_of(&e.spec.work) == k)
                    .count() as u32,
            })
            .collect();
        // Every device serves every running job's partitions.
        let current_job_id = running
            .iter()
            .map(|e| e.wire_id.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut running_kinds: Vec<&str> = running
            .iter()
            .map(|e| convert::queue_name(kind_of(&e.spec.work)))
            .collect();
        running_kinds.dedup();
        let current_proof_kind = running_kinds.join(",");
        let engine = jobs.engine();
        let gpus = engine
            .devices()
            .iter()
            .map(|d| {
                let info = engine.context().device_info(d.ordinal).ok();
                pb::GpuStatus {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    vram_total_bytes: info.as_ref().map(|i| i.total_bytes).unwrap_or(0),
                    vram_free_bytes: info.as_ref().map(|i| i.free_bytes).unwrap_or(0),
                    current_job_id: current_job_id.clone(),
                    current_proof_kind: current_proof_kind.clone(),
                }
            })
            .collect();
        let tier = |pinned: bool| {
            if pinned {
                SrsTier::Hot
            } else {
                SrsTier::Warm
            }
        };
        // Filecoin keys are listed below, by their circuit ids.
        #[cfg_attr(not(feature = "filecoin"), allow(unused_mut))]
        let mut loaded_srs: Vec<pb::SrsStatus> = jobs
            .keys()
            .list_built_in()
            .into_iter()
            .map(|k| pb::SrsStatus {
                circuit_id: k.name,
                tier: tier(k.pinned) as i32,
                size_bytes: k.bytes,
                ref_count: 0,
            })
            .collect();
        #[cfg(feature = "filecoin")]
        if let Some(f) = jobs.filecoin() {
            for (id, p) in f.loaded_key_ids() {
                loaded_srs.push(pb::SrsStatus {
                    size_bytes: std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0),
                    circuit_id: id,
                    tier: SrsTier::Hot as i32,
                    ref_count: 0,
                });
            }
        }
        let usage = jobs.keys().usage();
        let (used, budget) = (usage.used, usage.budget);
        Ok(Response::new(pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: jobs.metrics.done.load(Ordering::Relaxed),
            total_proofs_failed: jobs.metrics.failed.load(Ordering::Relaxed),
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_memory_bytes: used,
            pinned_memory_limit_bytes: budget,
        }))
    }

    async fn get_metrics(
        &self,
        _req: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: self.service.prometheus(),
        }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let r = req.into_inner();
        let (filecoin, params) = self.filecoin_key(&r.circuit_id, false)?;
        #[cfg(feature = "filecoin")]
        {
            let took = tokio::task::spawn_blocking(move || filecoin.preload(&params))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(crate::errors::ServiceError::Filecoin)?;
            // A load that happened shows at least 1 ms: 0 is "loaded
            // already" only.
            Ok(Response::new(pb::PreloadSrsResponse {
                already_loaded: took.is_zero(),
                load_time_ms: took.as_micros().div_ceil(1000) as u64,
            }))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (filecoin, params);
            unreachable!("filecoin_key refuses every request without the filecoin feature")
        }
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let r = req.into_inner();
        let (filecoin, params) = self.filecoin_key(&r.circuit_id, true)?;
        #[cfg(feature = "filecoin")]
        let (was_loaded, freed_bytes) = {
            let size = std::fs::metadata(&params).map(|m| m.len()).unwrap_or(0);
            let was_loaded = filecoin.evict(&params);
            (was_loaded, if was_loaded { size } else { 0 })
        };
        #[cfg(not(feature = "filecoin"))]
        let (was_loaded, freed_bytes) = {
            let _ = (filecoin, params);
            (false, 0)
        };
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded,
            freed_bytes,
        }))
    }
}
