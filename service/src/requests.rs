//! Idempotency keys: the `request_id` of cuzk.v1's SubmitProofRequest and
//! of cuda_prover.v1's SubmitRequest. A request whose id names a job the
//! daemon still knows answers with that job, never a second one; the same
//! id with other inputs is ALREADY_EXISTS. The ids of the two APIs are
//! apart (one API's id never names the other's job). With a journal, a
//! job's id, API and input digest are written with the job before the
//! submission answers, so the id names the job again after a restart.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tonic::Status;

use crate::job_id::JobId;
use crate::jobs::{JobEntry, JobSpec, Jobs};
use crate::server::shown_id;

/// The longest request id kept (Curio's are UUIDs or task ids).
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// The API a request id was given on. Its number is what the journal
/// keeps: 0 is cuzk.v1, the only API with request ids in journals of
/// earlier builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Api {
    #[default]
    Cuzk,
    Prover,
}

impl Api {
    pub fn number(self) -> u32 {
        match self {
            Api::Cuzk => 0,
            Api::Prover => 1,
        }
    }

    /// The API of a journaled number (None: one this build does not know).
    pub fn of_number(n: u32) -> Option<Self> {
        match n {
            0 => Some(Api::Cuzk),
            1 => Some(Api::Prover),
            _ => None,
        }
    }
}

/// Checks a request id's length (empty is no id).
pub fn check_id(request_id: &str) -> Result<(), Status> {
    if request_id.len() > MAX_REQUEST_ID_BYTES {
        return Err(Status::invalid_argument(format!(
            "request_id has {} bytes (at most {MAX_REQUEST_ID_BYTES})",
            request_id.len()
        )));
    }
    Ok(())
}

/// A request id's job and a digest of the request's inputs.
struct Known {
    digest: u64,
    entry: Arc<JobEntry>,
}

/// The request ids of the jobs the daemon knows, per API.
pub struct RequestIds {
    known: Mutex<HashMap<(Api, String), Known>>,
}

impl Default for RequestIds {
    fn default() -> Self {
        Self {
            known: Mutex::new(HashMap::new()),
        }
    }
}

impl RequestIds {
    /// Remembers the request ids of the jobs `jobs` knows (read back from
    /// the journal after a restart).
    pub fn read_back(&self, jobs: &Jobs) {
        let mut known = self.known.lock();
        for entry in jobs.all() {
            let o = &entry.spec.origin;
            if !o.request_id.is_empty() {
                known.insert(
                    (o.api, o.request_id.clone()),
                    Known {
                        digest: o.digest,
                        entry: entry.clone(),
                    },
                );
            }
        }
    }

    /// The job of a request: with an empty `request_id`, the one `submit`
    /// makes of `make()`'s spec; else the job the id names (ALREADY_EXISTS
    /// when `digest` differs from the first request's), or a new one,
    /// remembered under the id. `make` runs outside the lock (it parses
    /// the inputs); the id is checked again under the lock, which is held
    /// across `submit`, so two requests with one id racing give one job.
    pub fn submit(
        &self,
        jobs: &Jobs,
        api: Api,
        request_id: &str,
        digest: u64,
        make: impl FnOnce() -> Result<JobSpec, Status>,
        submit: impl FnOnce(JobSpec) -> Result<Arc<JobEntry>, Status>,
    ) -> Result<Arc<JobEntry>, Status> {
        check_id(request_id)?;
        if request_id.is_empty() {
            return submit(make()?);
        }
        let key = (api, request_id.to_string());
        if let Some(e) = self.known(jobs, &key, digest)? {
            return Ok(e);
        }
        let mut spec = make()?;
        spec.origin.api = api;
        spec.origin.request_id = request_id.to_string();
        spec.origin.digest = digest;
        let mut known = self.known.lock();
        if let Some(k) = known.get(&key).filter(|k| remembered(jobs, k)) {
            return same_inputs(request_id, k, digest);
        }
        let entry = submit(spec)?;
        forget_old(jobs, &mut known);
        known.insert(
            key,
            Known {
                digest,
                entry: entry.clone(),
            },
        );
        Ok(entry)
    }

    fn known(
        &self,
        jobs: &Jobs,
        key: &(Api, String),
        digest: u64,
    ) -> Result<Option<Arc<JobEntry>>, Status> {
        let mut known = self.known.lock();
        match known.get(key) {
            Some(k) if remembered(jobs, k) => same_inputs(&key.1, k, digest).map(Some),
            Some(_) => {
                known.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// The job a wire id names among those request ids still remember.
    pub fn find(&self, jobs: &Jobs, wire: &JobId) -> Option<Arc<JobEntry>> {
        self.known
            .lock()
            .values()
            .find(|k| k.entry.wire_id == *wire && remembered(jobs, k))
            .map(|k| k.entry.clone())
    }
}

/// Whether the daemon still remembers a request id's job: running, or
/// finished and neither past its retention time nor pushed out.
fn remembered(jobs: &Jobs, k: &Known) -> bool {
    !k.entry.snapshot().state.finished()
        || jobs
            .get(k.entry.id)
            .is_some_and(|e| Arc::ptr_eq(&e, &k.entry))
}

/// Drops request ids whose jobs ended and left the daemon's memory of
/// finished jobs, once there are more ids than it keeps.
fn forget_old(jobs: &Jobs, known: &mut HashMap<(Api, String), Known>) {
    if known.len() < jobs.keep_finished() + jobs.max_queue() {
        return;
    }
    known.retain(|_, k| !k.entry.snapshot().state.finished() || jobs.get(k.entry.id).is_some());
}

fn same_inputs(request_id: &str, k: &Known, digest: u64) -> Result<Arc<JobEntry>, Status> {
    if k.digest == digest {
        Ok(k.entry.clone())
    } else {
        Err(Status::already_exists(format!(
            "request_id '{}' names job {} of other inputs",
            shown_id(request_id),
            k.entry.wire_id
        )))
    }
}

/// FNV-1a, 64 bits: the digest of a request's inputs, the same to every
/// build of the daemon (a digest the journal kept means the same to a
/// later build).
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }

    pub fn u64(&mut self, v: u64) {
        v.to_le_bytes().iter().for_each(|&b| self.byte(b));
    }

    /// The bytes, after their length.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        b.iter().for_each(|&x| self.byte(x));
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The digest of a cuda_prover.v1 request's inputs: every field but its
/// request id, as protobuf encodes them (fields in number order, fields
/// left at their default not written, so a field added later does not
/// change the digest of a request that leaves it unset).
pub fn prover_digest(r: &crate::proto::SubmitRequest) -> u64 {
    let mut inputs = r.clone();
    inputs.request_id.clear();
    let mut h = Fnv::default();
    h.bytes(&prost::Message::encode_to_vec(&inputs));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto;

    #[test]
    fn the_digest_covers_every_input_but_the_id() {
        let base = proto::SubmitRequest {
            job: Some(proto::submit_request::Job::BuiltIn(proto::BuiltInJob {
                circuit: "bits".into(),
                log_constraints: 7,
                partitions: 1,
                seed: Some(3),
                synthesis: String::new(),
            })),
            request_id: "a".into(),
            ..Default::default()
        };
        let d = prover_digest(&base);
        let mut other_id = base.clone();
        other_id.request_id = "b".into();
        assert_eq!(prover_digest(&other_id), d);
        let mut other_name = base.clone();
        other_name.name = "x".into();
        assert_ne!(prover_digest(&other_name), d);
        let mut other_seed = base.clone();
        if let Some(proto::submit_request::Job::BuiltIn(b)) = &mut other_seed.job {
            b.seed = Some(4);
        }
        assert_ne!(prover_digest(&other_seed), d);
        // FNV-1a as published (its test vector for "a"), so that digests
        // journaled by one build mean the same to the next.
        let mut h = Fnv::default();
        h.byte(b'a');
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn api_numbers_round_trip() {
        for a in [Api::Cuzk, Api::Prover] {
            assert_eq!(Api::of_number(a.number()), Some(a));
        }
        assert_eq!(
            Api::default().number(),
            0,
            "older journals' ids are cuzk.v1's"
        );
        assert_eq!(Api::of_number(7), None);
    }
}
