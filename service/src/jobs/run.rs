//! The runner threads: each takes the queue's most urgent job, runs it
//! (a built-in circuit on the engine, or a Filecoin job through the
//! Filecoin prover) and finishes it with its result.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(feature = "filecoin")]
use cuda_prover_engine::gate::Priority;
#[cfg(feature = "filecoin")]
use cuda_prover_engine::Engine;
use cuda_prover_engine::{EngineError, RunControl};
use cuda_prover_groth16::Groth16Engine;
use cuda_prover_groth16::{BlindingSource, Job};
use cuda_prover_pipeline::circuits::BuiltIn;
use cuda_prover_pipeline::SynthesisMode;

use crate::errors::ServiceError;
use crate::proto::ErrorCode;

use super::result::{cancelled_result, failed, ms};
use super::{CancelReason, JobEntry, JobResult, JobState, Jobs, Timings, Work};

impl Jobs {
    pub(super) fn runner(self: Arc<Self>) {
        loop {
            let entry = {
                let mut g = self.inner.lock();
                loop {
                    if g.stopping {
                        return;
                    }
                    if let Some((_, e)) = g.queue.pop_first() {
                        *e.started.lock() = Some(Instant::now());
                        g.running.insert(e.id, e.clone());
                        break e;
                    }
                    self.work.wait(&mut g);
                }
            };
            let result = if entry.deadline_passed() {
                cancelled_result(Some(CancelReason::DeadlineBeforeStart))
            } else {
                entry.tx.send_modify(|s| s.state = JobState::Running);
                self.run(&entry)
            };
            let mut g = self.inner.lock();
            self.finish_locked(&mut g, &entry, result);
        }
    }

    fn run(&self, entry: &JobEntry) -> JobResult {
        let spec = &entry.spec;
        match &spec.work {
            Work::BuiltIn => {}
            #[cfg(feature = "filecoin")]
            Work::FilecoinC2(c2) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_c2(engine, c2, priority, cancel)
                })
            }
            #[cfg(feature = "filecoin")]
            Work::FilecoinPost(post) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_post(engine, post, priority, cancel)
                })
            }
            #[cfg(feature = "filecoin")]
            Work::FilecoinSnap(snap) => {
                return self.run_filecoin(entry, |f, engine, priority, cancel| {
                    f.run_snap(engine, snap, priority, cancel)
                })
            }
        }
        let mut key_load = Duration::ZERO;
        let outcome = (|| {
            let t_key = Instant::now();
            let (key, _) =
                self.keys
                    .get(spec.kind, spec.log_constraints, &spec.params_dir, false)?;
            key_load = t_key.elapsed();
            let subset;
            let engine = if spec.devices.is_empty() {
                &*self.engine
            } else {
                subset = self.engine.subset(&spec.devices)?;
                &subset
            };
            let base = spec.seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0)
                    ^ entry.id.rotate_left(32)
            });
            let circuits = (0..spec.partitions)
                .map(|k| BuiltIn::new(spec.kind, spec.log_constraints, base.wrapping_add(k as u64)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(EngineError::Setup)?;
            let job = Job {
                name: spec.name.clone(),
                partitions: circuits,
                blinding: spec
                    .seed
                    .map(BlindingSource::Seeded)
                    .unwrap_or(BlindingSource::Random),
                trim_after: false,
                synthesis: spec.synthesis,
                shape: (spec.synthesis != SynthesisMode::Full)
                    .then(|| key.shape())
                    .flatten(),
            };
            let ticket = engine
                .gate()
                .register(spec.priority, spec.partitions as usize);
            let control = RunControl {
                cancel: Some(&*entry.cancel),
                ticket: Some(&ticket),
            };
            let all = self.engine.devices();
            engine.run_with(job, key.key(), control, |p| {
                if let Some(i) = all.iter().position(|d| d.ordinal == p.device) {
                    self.device_partitions[i].fetch_add(1, Ordering::Relaxed);
                }
                entry.tx.send_modify(|s| s.done = p.done as u32);
            })
        })();
        match outcome {
            Ok(out) => {
                let mut proofs = Vec::with_capacity(out.proofs.len());
                for p in &out.proofs {
                    let mut bytes = Vec::with_capacity(192);
                    if let Err(e) = p.output.proof.write(&mut bytes) {
                        return failed(ServiceError::Internal(format!("encoding a proof: {e}")));
                    }
                    proofs.push(bytes);
                }
                JobResult {
                    state: JobState::Done,
                    verified: out.report.verified && proofs.len() == spec.partitions as usize,
                    proofs,
                    error: String::new(),
                    code: ErrorCode::Unspecified,
                    report_json: out.report.to_json(),
                    timings: Timings {
                        srs_load_ms: ms(key_load),
                        ..Timings::from_report(&out.report)
                    },
                }
            }
            Err(EngineError::Cancelled) => cancelled_result(entry.cancel_reason()),
            Err(e) => failed(e.into()),
        }
    }

    /// A Filecoin job (C2, PoSt, SnapDeals): the proof bytes only once
    /// filecoin-proofs' verifier accepted them (the filecoin crate never
    /// returns others). A panic of the proving code (filecoin-proofs on
    /// inputs it did not expect) fails the job, not the runner.
    #[cfg(feature = "filecoin")]
    fn run_filecoin<F>(&self, entry: &JobEntry, prove: F) -> JobResult
    where
        F: FnOnce(
            &crate::filecoin::FilecoinJobs,
            Engine,
            Priority,
            Arc<std::sync::atomic::AtomicBool>,
        ) -> Result<
            (Vec<u8>, cuda_prover_filecoin::JobTimes),
            cuda_prover_filecoin::FilecoinError,
        >,
    {
        use cuda_prover_filecoin::FilecoinError;
        use std::panic::{catch_unwind, AssertUnwindSafe};
        let spec = &entry.spec;
        let Some(filecoin) = &self.filecoin else {
            return failed(ServiceError::NotEnabled(
                "this daemon takes no Filecoin jobs".into(),
            ));
        };
        let ordinals: Vec<u32> = if spec.devices.is_empty() {
            self.engine.devices().iter().map(|d| d.ordinal).collect()
        } else {
            spec.devices.clone()
        };
        let engine = match self.engine.subset(&ordinals) {
            Ok(e) => e,
            Err(e) => return failed(e.into()),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            prove(filecoin, engine, spec.priority, entry.cancel.clone())
        }))
        .unwrap_or_else(|p| {
            Err(FilecoinError::Input(format!(
                "the prover stopped on these inputs: {}",
                cuda_prover_pipeline::panic_message(&*p)
            )))
        });
        match outcome {
            Ok((proof, times)) => {
                let report = &times.report;
                let all = self.engine.devices();
                for p in &report.per_partition {
                    if let Some(i) = all.iter().position(|d| d.ordinal == p.device) {
                        self.device_partitions[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
                entry.tx.send_modify(|s| s.done = s.total);
                JobResult {
                    state: JobState::Done,
                    verified: true,
                    proofs: vec![proof],
                    error: String::new(),
                    code: ErrorCode::Unspecified,
                    report_json: report.to_json(),
                    timings: Timings {
                        srs_load_ms: ms(times.key_load),
                        ..Timings::from_report(report)
                    },
                }
            }
            Err(FilecoinError::Engine(EngineError::Cancelled)) => {
                cancelled_result(entry.cancel_reason())
            }
            Err(e) => failed(e.into()),
        }
    }
}
