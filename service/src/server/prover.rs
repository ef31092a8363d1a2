//! The cuda_prover.v1 `Prover` service: submit, await, prove and cancel
//! jobs; the daemon's status and metrics; preload and evict keys; drain
//! and shut down.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::errors::{job_state, ServiceError};
use crate::health::Stage;
use crate::jobs::{CancelReason, JobState};
use crate::proto;
use crate::proto::prover_server::Prover;

use super::job_view::{events, job_status, EventStream};
use super::Service;

#[tonic::async_trait]
impl Prover for Arc<Service> {
    async fn submit(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<proto::SubmitReply>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit_request(req.into_inner(), wire)?;
        Ok(Response::new(proto::SubmitReply {
            job_id: e.wire_id.to_string(),
        }))
    }

    type AwaitStream = EventStream;

    async fn r#await(
        &self,
        req: Request<proto::AwaitRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let e = self.job(&req.into_inner().job_id)?;
        Ok(Response::new(events(e)))
    }

    type ProveStream = EventStream;

    async fn prove(
        &self,
        req: Request<proto::SubmitRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let wire = crate::wire_size::of(&req);
        let e = self.submit_request(req.into_inner(), wire)?;
        Ok(Response::new(events(e)))
    }

    async fn cancel(
        &self,
        req: Request<proto::CancelRequest>,
    ) -> Result<Response<proto::CancelReply>, Status> {
        let id = req.into_inner().job_id;
        let e = self.job(&id)?;
        let state = self
            .jobs
            .cancel(e.id, CancelReason::Request)
            .unwrap_or(JobState::Cancelled);
        Ok(Response::new(proto::CancelReply {
            state: state.name().into(),
            job_state: job_state(state) as i32,
        }))
    }

    async fn status(
        &self,
        _req: Request<proto::StatusRequest>,
    ) -> Result<Response<proto::StatusReply>, Status> {
        let (queued, running) = self.jobs.list();
        let engine = self.jobs.engine();
        let devices = engine
            .devices()
            .iter()
            .zip(&self.jobs.device_partitions)
            .map(|(d, n)| {
                let info = engine.context().device_info(d.ordinal).ok();
                proto::DeviceStatus {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    simulated: d.simulated,
                    free_bytes: info.as_ref().map(|i| i.free_bytes).unwrap_or(0),
                    total_bytes: info.as_ref().map(|i| i.total_bytes).unwrap_or(0),
                    partitions: n.load(Ordering::Relaxed),
                }
            })
            .collect();
        let budget = self.jobs.keys().usage().budget;
        #[cfg(feature = "filecoin")]
        let filecoin_keys = self
            .jobs
            .filecoin()
            .map(|f| {
                f.loaded_key_ids()
                    .into_iter()
                    .map(|(id, path)| proto::FilecoinKeyStatus {
                        circuit_id: id,
                        bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                        params_file: path.display().to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        #[cfg(not(feature = "filecoin"))]
        let filecoin_keys = Vec::new();
        Ok(Response::new(proto::StatusReply {
            version: env!("CARGO_PKG_VERSION").into(),
            backend: engine.context().backend_name().into(),
            draining: self.jobs.draining(),
            queued: queued.iter().map(|e| job_status(e)).collect(),
            running: running.iter().map(|e| job_status(e)).collect(),
            devices,
            keys: self
                .jobs
                .keys()
                .list()
                .into_iter()
                .map(|k| proto::ResidentKey {
                    key: k.name,
                    bytes: k.bytes,
                    pinned: k.pinned,
                })
                .collect(),
            key_budget_bytes: budget,
            max_queue: self.config.max_queue as u32,
            max_running: self.config.max_running as u32,
            filecoin_keys,
        }))
    }

    async fn metrics(
        &self,
        _req: Request<proto::MetricsRequest>,
    ) -> Result<Response<proto::MetricsReply>, Status> {
        Ok(Response::new(proto::MetricsReply {
            prometheus_text: self.prometheus(),
        }))
    }

    async fn preload(
        &self,
        req: Request<proto::KeyRequest>,
    ) -> Result<Response<proto::KeyReply>, Status> {
        let r = req.into_inner();
        let (kind, dir, name) = self.key_ref(&r)?;
        if r.log_constraints > self.config.max_log_constraints {
            return Err(ServiceError::InvalidRequest(format!(
                "log_constraints {} is above this daemon's limit of {}",
                r.log_constraints, self.config.max_log_constraints
            ))
            .into());
        }
        let jobs = self.jobs.clone();
        let log = r.log_constraints;
        let (key, evicted) =
            tokio::task::spawn_blocking(move || jobs.keys().get(kind, log, &dir, true))
                .await
                .map_err(|e| ServiceError::Internal(e.to_string()))?
                .map_err(ServiceError::Engine)?;
        let bytes = key.bytes();
        Ok(Response::new(proto::KeyReply {
            key: name,
            bytes,
            evicted,
        }))
    }

    async fn evict(
        &self,
        req: Request<proto::KeyRequest>,
    ) -> Result<Response<proto::KeyReply>, Status> {
        let (_, _, name) = self.key_ref(&req.into_inner())?;
        if !self.jobs.keys().evict(&name) {
            return Err(ServiceError::NotFound(format!("key {name} is not resident")).into());
        }
        Ok(Response::new(proto::KeyReply {
            key: name.clone(),
            bytes: 0,
            evicted: vec![name],
        }))
    }

    async fn drain(
        &self,
        _req: Request<proto::DrainRequest>,
    ) -> Result<Response<proto::DrainReply>, Status> {
        self.readiness.set(Stage::Draining).await;
        let jobs = self.jobs.clone();
        tokio::task::spawn_blocking(move || jobs.drain())
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        Ok(Response::new(proto::DrainReply {}))
    }

    async fn shutdown(
        &self,
        req: Request<proto::ShutdownRequest>,
    ) -> Result<Response<proto::ShutdownReply>, Status> {
        let now = req.into_inner().now;
        self.readiness.set(Stage::Draining).await;
        let jobs = self.jobs.clone();
        tokio::task::spawn_blocking(move || if now { jobs.stop_now() } else { jobs.drain() })
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.shutdown.notify_one();
        Ok(Response::new(proto::ShutdownReply {}))
    }
}
