//! Several daemons (one per host, or per device group) behind one client:
//! each job goes to the daemon with the most free capacity, by the status
//! each reports (jobs queued and running per device). A daemon that does
//! not answer is skipped. This is placement, not a cluster manager: see
//! the README for driving many hosts from an existing scheduler.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::client::{Client, ClientError, JobOutcome};
use crate::proto;

pub struct Hosts {
    clients: Vec<Client>,
    /// Breaks ties in turn.
    turn: AtomicUsize,
}

/// Where a job went.
#[derive(Debug, Clone)]
pub struct Placed {
    pub host: usize,
    pub addr: String,
    pub job_id: String,
}

impl Hosts {
    pub async fn connect(addrs: &[String], token: Option<&str>) -> Result<Self, ClientError> {
        if addrs.is_empty() {
            return Err(ClientError::Invalid("no daemon addresses".into()));
        }
        let mut clients = Vec::new();
        for a in addrs {
            clients.push(Client::connect(a, token).await?);
        }
        Ok(Self {
            clients,
            turn: AtomicUsize::new(0),
        })
    }

    pub fn clients(&self) -> &[Client] {
        &self.clients
    }

    /// The daemon with the least load per device: (queued + running + 1)
    /// jobs over its devices, ties taken in turn.
    pub async fn pick(&self) -> Result<usize, ClientError> {
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        let n = self.clients.len();
        let mut best: Option<(f64, usize)> = None;
        let mut last_err = None;
        for i in 0..n {
            let h = (start + i) % n;
            match self.clients[h].status().await {
                Ok(s) => {
                    let devices = s.devices.len().max(1) as f64;
                    let load = (s.queued.len() + s.running.len() + 1) as f64 / devices;
                    if !s.draining && best.is_none_or(|(b, _)| load < b) {
                        best = Some((load, h));
                    }
                }
                Err(e) => {
                    log::warn!("daemon {} skipped: {e}", self.clients[h].addr());
                    last_err = Some(e);
                }
            }
        }
        match (best, last_err) {
            (Some((_, h)), _) => Ok(h),
            (None, Some(e)) => Err(e),
            (None, None) => Err(ClientError::Invalid("every daemon is draining".into())),
        }
    }

    pub async fn submit(&self, req: proto::SubmitRequest) -> Result<Placed, ClientError> {
        let host = self.pick().await?;
        let job_id = self.clients[host].submit(req).await?;
        Ok(Placed {
            host,
            addr: self.clients[host].addr().to_string(),
            job_id,
        })
    }

    pub async fn await_job(&self, placed: &Placed) -> Result<JobOutcome, ClientError> {
        self.clients[placed.host]
            .await_job(&placed.job_id, |_, _, _| {})
            .await
    }
}
