//! The engine: one worker per device, synthesis on a CPU pool, depth-one
//! queues, an ownership policy, fail-fast cancellation and a collector that
//! restores partition order and verifies every proof.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bellpepper_core::Circuit;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use cuda_prover_pipeline::{
    catch_circuit_panic, gpu_prove_start, panic_message, prepare, synthesize_recording, Blinding,
    Context, DeviceInfo, DeviceMutex, Error as ProveError, PartitionProof, Prepared, ProvingKey,
    Scalar, Shape, ShapeData, SizeHint, SynthesisMode, SynthesizedJob,
};
use parking_lot::Mutex;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::cpus::pin_current_thread;
use crate::devices::{resolve, DeviceSelection};
use crate::error::EngineError;
use crate::report::{DeviceReport, JobReport, PartitionReport, TrimReport};

/// Which device proves which partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Partition k on device k % n: deterministic.
    RoundRobin,
    /// The next partition to the device expected to be free first.
    LeastLoaded,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round-robin",
            Policy::LeastLoaded => "least-loaded",
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" | "rr" => Ok(Policy::RoundRobin),
            "least-loaded" | "ll" => Ok(Policy::LeastLoaded),
            o => Err(format!(
                "unknown policy '{o}' (expected round-robin or least-loaded)"
            )),
        }
    }
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub devices: DeviceSelection,
    pub policy: Policy,
    /// One CPU set per device, in device order; its workers run there.
    pub worker_cpus: Option<Vec<Vec<usize>>>,
    /// Synthesis threads; 0 means one per worker.
    pub synthesis_threads: usize,
    /// Workers per device (at least 1). Workers of one device share its
    /// mutex: device parts stay serialized while synthesis hand-off and
    /// epilogues overlap. Each worker adds one queue slot and one running
    /// partition to the in-flight bound (2 x workers).
    pub workers_per_device: usize,
    /// A cap on the memory the core may use on each of the engine's devices
    /// (bytes; `--device-memory-limit`). A key that does not fit next to a
    /// proof's working set is streamed through the device in chunks. `None`
    /// leaves the context's limits as they are.
    pub device_memory_limit: Option<u64>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            devices: DeviceSelection::All,
            policy: Policy::RoundRobin,
            worker_cpus: None,
            synthesis_threads: 0,
            workers_per_device: 1,
            device_memory_limit: None,
        }
    }
}

/// Where the blinding factors of a job come from.
#[derive(Debug, Clone, Copy)]
pub enum BlindingSource {
    /// Fresh randomness from the operating system.
    Random,
    /// Reproducible: partition k uses a generator seeded with (seed, k).
    Seeded(u64),
}

impl BlindingSource {
    fn for_partition(&self, k: usize) -> Blinding {
        let mut rng = match self {
            BlindingSource::Random => ChaCha20Rng::from_entropy(),
            BlindingSource::Seeded(seed) => {
                let mut s = [0u8; 32];
                s[..8].copy_from_slice(&seed.to_le_bytes());
                s[8..16].copy_from_slice(&(k as u64).to_le_bytes());
                ChaCha20Rng::from_seed(s)
            }
        };
        Blinding::random(&mut rng)
    }
}

/// N partitions of one circuit.
pub struct Job<C> {
    pub name: String,
    pub partitions: Vec<C>,
    pub blinding: BlindingSource,
    /// Trim every device's cache after the job (a memory handoff).
    pub trim_after: bool,
    /// Full synthesis or the witness path (see [`SynthesisMode`]).
    pub synthesis: SynthesisMode,
    /// The circuit's shape, when known (checked against the key before
    /// work starts). Without one, `Auto` records it from the first full
    /// synthesis and proves the later partitions from witnesses.
    pub shape: Option<Arc<Shape>>,
}

impl<C> Job<C> {
    /// A job with random blinding, automatic synthesis and no shape yet.
    pub fn new(name: impl Into<String>, partitions: Vec<C>) -> Self {
        Self {
            name: name.into(),
            partitions,
            blinding: BlindingSource::Random,
            trim_after: false,
            synthesis: SynthesisMode::Auto,
            shape: None,
        }
    }
}

/// A job's proofs in partition order, and its report.
pub struct JobOutput {
    pub proofs: Vec<PartitionProof>,
    pub report: JobReport,
    /// The shape the job proved witnesses with (given or recorded).
    pub shape: Option<Arc<Shape>>,
    /// The constraints recorded during this job, when it had no shape:
    /// worth saving next to the params (see `shape_file`).
    pub recorded_shape: Option<ShapeData>,
}

/// What the progress callback sees after each partition.
#[derive(Debug, Clone)]
pub struct Progress {
    pub partition: usize,
    pub device: u32,
    pub done: usize,
    pub total: usize,
    /// Partitions done per device, in the engine's device order.
    pub done_per_device: Vec<usize>,
}

/// Workers over a set of devices of one context.
pub struct Engine {
    ctx: Arc<Context>,
    devices: Vec<DeviceInfo>,
    mutexes: Vec<DeviceMutex>,
    config: EngineConfig,
}

struct Queued {
    partition: usize,
    prepared: Prepared,
    synthesis: Duration,
    blinding: Blinding,
    enqueued: Instant,
}

struct Done {
    proof: PartitionProof,
    worker_device: u32,
    queue_wait: Duration,
}

/// A counting semaphore bounding synthesized partitions in flight.
struct Permits {
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Permits {
    fn new(n: usize) -> Self {
        let (tx, rx) = bounded(n);
        for _ in 0..n {
            tx.send(()).expect("fresh channel");
        }
        Self { tx, rx }
    }
    fn acquire(&self) {
        self.rx.recv().expect("permits live as long as the job");
    }
    fn release(&self) {
        let _ = self.tx.send(());
    }
}

/// State shared by the threads of one job.
struct Shared {
    cancel: AtomicBool,
    first_error: Mutex<Option<EngineError>>,
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
    permits: Permits,
    owner: Vec<AtomicI64>,
    outstanding: Vec<AtomicUsize>,
    avg_device_ns: Vec<AtomicU64>,
    mode: SynthesisMode,
    /// The shape witnesses are proved with, once known.
    shape: OnceLock<Arc<Shape>>,
    /// Set by the synthesizer that records the shape (Auto without one).
    recording: AtomicBool,
    recorded: Mutex<Option<ShapeData>>,
}

impl Shared {
    fn fail(&self, e: EngineError) {
        let mut slot = self.first_error.lock();
        if slot.is_none() {
            *slot = Some(e);
        }
        self.cancel.store(true, Ordering::SeqCst);
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    fn enter(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.permits.release();
    }

    /// Least-loaded choice: the device whose queue would drain first,
    /// estimated from its outstanding partitions and its mean device time.
    fn least_loaded(&self) -> usize {
        let known: Vec<u64> = self
            .avg_device_ns
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .filter(|&a| a > 0)
            .collect();
        let fallback = if known.is_empty() {
            1
        } else {
            known.iter().sum::<u64>() / known.len() as u64
        };
        (0..self.outstanding.len())
            .min_by_key(|&i| {
                let avg = match self.avg_device_ns[i].load(Ordering::SeqCst) {
                    0 => fallback,
                    a => a,
                };
                (self.outstanding[i].load(Ordering::SeqCst) as u128 + 1) * avg as u128
            })
            .unwrap_or(0)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ns_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Engine {
    /// Resolves and validates the devices; no work starts here.
    pub fn new(ctx: Arc<Context>, config: EngineConfig) -> Result<Self, EngineError> {
        let devices = resolve(&ctx, &config.devices)?;
        if let Some(sets) = &config.worker_cpus {
            if sets.len() != devices.len() {
                return Err(EngineError::Setup(format!(
                    "{} CPU sets for {} workers: give one set per device",
                    sets.len(),
                    devices.len()
                )));
            }
        }
        if let Some(bytes) = config.device_memory_limit {
            if bytes == 0 {
                return Err(EngineError::Setup(
                    "a device memory limit of 0 bytes: give a positive limit".into(),
                ));
            }
            for d in &devices {
                ctx.set_memory_limit(d.ordinal, Some(bytes))
                    .map_err(|e| EngineError::Setup(e.to_string()))?;
            }
        }
        let mutexes = devices
            .iter()
            .map(|_| DeviceMutex::new().map_err(|e| EngineError::Setup(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            ctx,
            devices,
            mutexes,
            config,
        })
    }

    pub fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Checks that every device has room for one proof: the key and the
    /// working set, or else the working set with the key's bases streamed
    /// in chunks (`MemoryEstimate::streamed_bytes`); the error names the
    /// device.
    pub fn check_memory(&self, key: &ProvingKey) -> Result<(), EngineError> {
        self.check_memory_with(key, None)
    }

    /// [`Engine::check_memory`] with a shape's device copy on top.
    pub fn check_memory_with(
        &self,
        key: &ProvingKey,
        shape: Option<&Shape>,
    ) -> Result<(), EngineError> {
        let n = key
            .domain_size()
            .map_err(|e| EngineError::Setup(e.to_string()))?;
        let shape_bytes = shape.map(|s| s.info().device_bytes).unwrap_or(0);
        for d in &self.devices {
            // The device's own backend's estimate (the CUDA layout on a GPU).
            let est = key
                .device_memory_estimate(&self.ctx, d.ordinal, n)
                .map_err(|e| EngineError::Setup(e.to_string()))?;
            let need = est
                .working_bytes
                .saturating_add(est.srs_bytes)
                .saturating_add(shape_bytes);
            let info = self
                .ctx
                .device_info(d.ordinal)
                .map_err(|e| EngineError::Setup(e.to_string()))?;
            let streamed = est.streamed_bytes.saturating_add(shape_bytes);
            if info.free_bytes < need && info.free_bytes < streamed {
                return Err(EngineError::Setup(format!(
                    "device {} ({}) has {} MiB free but the job needs {} MiB (key {} MiB + working set {} MiB + shape {} MiB), or {} MiB with the key streamed in chunks",
                    d.ordinal,
                    info.name,
                    info.free_bytes >> 20,
                    need.div_ceil(1 << 20),
                    est.srs_bytes >> 20,
                    est.working_bytes >> 20,
                    shape_bytes >> 20,
                    streamed.div_ceil(1 << 20)
                )));
            }
        }
        Ok(())
    }

    /// Every ordinal of the context's backend that the core touched (bound
    /// a thread to, allocated on, made a context on), by the core's record:
    /// a job should touch its own devices only.
    pub fn devices_touched(&self) -> Result<Vec<u32>, EngineError> {
        let setup = |e: cuda_prover_pipeline::Error| EngineError::Setup(e.to_string());
        let n = self.ctx.device_count().map_err(|e| setup(e.into()))?;
        let mut out = Vec::new();
        for d in 0..n as u32 {
            if self.ctx.touched(d).map_err(|e| setup(e.into()))? {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// Frees every device's working cache, timed.
    pub fn trim_all(&self) -> Result<Vec<TrimReport>, EngineError> {
        self.devices
            .iter()
            .map(|d| {
                let t = Instant::now();
                let freed = self
                    .ctx
                    .trim(d.ordinal)
                    .map_err(|e| EngineError::Setup(e.to_string()))?;
                Ok(TrimReport {
                    device: d.ordinal,
                    freed_bytes: freed,
                    seconds: t.elapsed().as_secs_f64(),
                })
            })
            .collect()
    }

    /// Runs a job to completion or to its first failure.
    pub fn run<C, P>(
        &self,
        job: Job<C>,
        key: &ProvingKey,
        mut progress: P,
    ) -> Result<JobOutput, EngineError>
    where
        C: Circuit<Scalar> + Send,
        P: FnMut(&Progress),
    {
        if let Some(shape) = &job.shape {
            key.check_shape(shape).map_err(|e| {
                EngineError::Setup(format!("the job's shape does not fit its key: {e}"))
            })?;
        } else if job.synthesis == SynthesisMode::Witness {
            return Err(EngineError::Setup(
                "witness synthesis needs the circuit's shape: give one, or use auto (which records it from the first partition)".into(),
            ));
        }
        self.check_memory_with(key, job.shape.as_deref())?;
        let n = self.devices.len();
        let total = job.partitions.len();
        if total == 0 {
            return Err(EngineError::Setup("the job has no partitions".into()));
        }
        // Worker w serves device w % n: round-robin over workers is
        // round-robin over devices.
        let workers = n * self.config.workers_per_device.max(1);
        let worker_device: Vec<usize> = (0..workers).map(|w| w % n).collect();
        let bound = 2 * workers;
        let shared = Shared {
            cancel: AtomicBool::new(false),
            first_error: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            peak_in_flight: AtomicUsize::new(0),
            permits: Permits::new(bound),
            owner: (0..total).map(|_| AtomicI64::new(-1)).collect(),
            outstanding: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            avg_device_ns: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            mode: job.synthesis,
            shape: OnceLock::new(),
            recording: AtomicBool::new(false),
            recorded: Mutex::new(None),
        };
        let given_shape = job.synthesis != SynthesisMode::Full;
        if let (true, Some(shape)) = (given_shape, job.shape.clone()) {
            let _ = shared.shape.set(shape);
        }
        let slots: Vec<Mutex<Option<C>>> = job
            .partitions
            .into_iter()
            .map(|c| Mutex::new(Some(c)))
            .collect();
        let next = AtomicUsize::new(0);
        let synth_threads = if self.config.synthesis_threads == 0 {
            workers
        } else {
            self.config.synthesis_threads
        };
        let policy = self.config.policy;
        let blinding = job.blinding;
        let hint = key
            .size_hint()
            .map_err(|e| EngineError::Setup(e.to_string()))?;

        let start = Instant::now();
        let mut results: Vec<Option<Done>> = (0..total).map(|_| None).collect();
        let mut duplicates = Vec::new();
        let mut done_per_device = vec![0usize; n];
        let mut done = 0usize;

        let ordinals: Vec<u32> = worker_device
            .iter()
            .map(|&i| self.devices[i].ordinal)
            .collect();
        std::thread::scope(|s| {
            let (res_tx, res_rx) = unbounded::<Done>();
            let mut queue_txs = Vec::with_capacity(workers);
            for (w, &i) in worker_device.iter().enumerate() {
                let dev = &self.devices[i];
                let (qtx, qrx) = bounded::<Queued>(1);
                queue_txs.push(qtx);
                let res_tx = res_tx.clone();
                let shared = &shared;
                let ctx = &*self.ctx;
                let mutex = &self.mutexes[i];
                let cpus = self.config.worker_cpus.as_ref().map(|v| v[i].clone());
                let ordinal = dev.ordinal;
                s.spawn(move || {
                    worker(ctx, key, ordinal, w, mutex, cpus, qrx, res_tx, shared);
                });
            }
            drop(res_tx);
            for _ in 0..synth_threads {
                let queue_txs = queue_txs.clone();
                let (shared, slots, next, ordinals) = (&shared, &slots, &next, &ordinals);
                s.spawn(move || {
                    synthesizer(
                        shared, slots, next, &queue_txs, ordinals, policy, blinding, hint, key,
                    );
                });
            }
            drop(queue_txs);

            for d in res_rx.iter() {
                let k = d.proof.partition;
                let slot = d.worker_device;
                let idx = self
                    .devices
                    .iter()
                    .position(|x| x.ordinal == slot)
                    .unwrap_or(0);
                done += 1;
                done_per_device[idx] += 1;
                progress(&Progress {
                    partition: k,
                    device: slot,
                    done,
                    total,
                    done_per_device: done_per_device.clone(),
                });
                if results[k].is_some() {
                    duplicates.push(k);
                } else {
                    results[k] = Some(d);
                }
            }
        });
        let wall = start.elapsed();

        if let Some(e) = shared.first_error.lock().take() {
            return Err(e);
        }
        let mut out = self.collect(
            job.name,
            policy,
            results,
            duplicates,
            &shared,
            key,
            wall,
            bound,
            job.trim_after,
        )?;
        out.shape = shared.shape.get().cloned();
        out.recorded_shape = shared.recorded.lock().take();
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        name: String,
        policy: Policy,
        results: Vec<Option<Done>>,
        duplicates: Vec<usize>,
        shared: &Shared,
        key: &ProvingKey,
        wall: Duration,
        bound: usize,
        trim_after: bool,
    ) -> Result<JobOutput, EngineError> {
        if let Some(k) = duplicates.first() {
            return Err(EngineError::Collector(format!(
                "partition {k} arrived more than once"
            )));
        }
        let mut proofs = Vec::with_capacity(results.len());
        let mut per_partition = Vec::with_capacity(results.len());
        for (k, r) in results.into_iter().enumerate() {
            let d =
                r.ok_or_else(|| EngineError::Collector(format!("partition {k} never arrived")))?;
            let owner = shared.owner[k].load(Ordering::SeqCst);
            if owner != d.worker_device as i64 || d.proof.output.device != d.worker_device {
                return Err(EngineError::Collector(format!(
                    "partition {k} was owned by device {owner} but proved by device {} (worker {})",
                    d.proof.output.device, d.worker_device
                )));
            }
            let ok = key
                .verify(&d.proof.output.proof, &d.proof.public_inputs)
                .map_err(|e| EngineError::Collector(e.to_string()))?;
            if !ok {
                return Err(EngineError::Verification {
                    partition: k,
                    device: d.worker_device,
                });
            }
            let t = &d.proof.output.timings;
            per_partition.push(PartitionReport {
                partition: k,
                device: d.worker_device,
                synthesis_ms: (!d.proof.witness_only).then(|| ms(d.proof.synthesis)),
                witness_ms: d.proof.witness_only.then(|| ms(d.proof.synthesis)),
                evaluation_ms: ns_ms(t.eval_ns),
                host_bytes: d.proof.host_bytes,
                queue_wait_ms: ms(d.queue_wait),
                lock_wait_ms: ns_ms(t.wait_ns),
                device_ms: ns_ms(t.device_ns),
                epilogue_ms: ns_ms(t.epilogue_ns),
                ntt_ms: ns_ms(t.ntt_ns),
                msm_h_ms: ns_ms(t.msm_h_ns),
                msm_l_ms: ns_ms(t.msm_l_ns),
                msm_a_ms: ns_ms(t.msm_a_ns),
                msm_b_g1_ms: ns_ms(t.msm_b_g1_ns),
                msm_b_g2_ms: ns_ms(t.msm_b_g2_ns),
                batch_add_ms: ns_ms(t.batch_add_ns),
                upload_ms: ns_ms(t.upload_ns),
                peak_device_bytes: t.peak_device_bytes,
                estimated_device_bytes: t.estimated_device_bytes,
                stream_chunks: t.stream_chunks,
            });
            proofs.push(d.proof);
        }
        let wall_s = wall.as_secs_f64();
        let per_device: Vec<DeviceReport> = self
            .devices
            .iter()
            .map(|dev| {
                let mine: Vec<&PartitionReport> = per_partition
                    .iter()
                    .filter(|p| p.device == dev.ordinal)
                    .collect();
                let busy_s = mine.iter().map(|p| p.device_ms).sum::<f64>() / 1e3;
                DeviceReport {
                    device: dev.ordinal,
                    name: dev.name.clone(),
                    partitions: mine.len(),
                    busy_s,
                    busy_fraction: if wall_s > 0.0 { busy_s / wall_s } else { 0.0 },
                    synthesis_s: mine
                        .iter()
                        .map(|p| p.synthesis_ms.or(p.witness_ms).unwrap_or(0.0))
                        .sum::<f64>()
                        / 1e3,
                    queue_wait_s: mine.iter().map(|p| p.queue_wait_ms).sum::<f64>() / 1e3,
                    epilogue_s: mine.iter().map(|p| p.epilogue_ms).sum::<f64>() / 1e3,
                    peak_device_bytes: mine.iter().map(|p| p.peak_device_bytes).max().unwrap_or(0),
                    estimated_device_bytes: mine
                        .iter()
                        .map(|p| p.estimated_device_bytes)
                        .max()
                        .unwrap_or(0),
                }
            })
            .collect();
        let total_busy: f64 = per_device.iter().map(|d| d.busy_s).sum();
        let trims = if trim_after {
            self.trim_all()?
        } else {
            Vec::new()
        };
        let report = JobReport {
            job: name,
            backend: self.ctx.backend_name().to_string(),
            policy: policy.name().to_string(),
            devices: self.devices.iter().map(|d| d.ordinal).collect(),
            partitions: proofs.len(),
            wall_s,
            proofs_per_s: if wall_s > 0.0 {
                proofs.len() as f64 / wall_s
            } else {
                0.0
            },
            scaling_efficiency: if wall_s > 0.0 {
                total_busy / (self.devices.len() as f64 * wall_s)
            } else {
                0.0
            },
            makespan_busy_s: per_device.iter().map(|d| d.busy_s).fold(0.0, f64::max),
            peak_in_flight: shared.peak_in_flight.load(Ordering::SeqCst),
            in_flight_bound: bound,
            verified: true,
            devices_touched: self.devices_touched()?,
            per_device,
            per_partition,
            trims,
        };
        Ok(JobOutput {
            proofs,
            report,
            shape: None,
            recorded_shape: None,
        })
    }
}

/// One partition for the device, by the job's synthesis mode: the witness
/// alone once the shape is known; in Auto without a shape, the first
/// synthesizer to get here records it during its full synthesis and the
/// others synthesize in full until it is there. A panic in the circuit (the
/// caller's code) is an error, not a torn-down engine.
fn synthesize_partition<C: Circuit<Scalar>>(
    shared: &Shared,
    circuit: C,
    hint: SizeHint,
    key: &ProvingKey,
) -> Result<Prepared, ProveError> {
    if shared.mode == SynthesisMode::Full {
        return prepare(circuit, hint, None);
    }
    if let Some(shape) = shared.shape.get() {
        return prepare(circuit, hint, Some(shape));
    }
    if shared.recording.swap(true, Ordering::SeqCst) {
        return prepare(circuit, hint, None);
    }
    let (synth, data) = catch_circuit_panic(|| synthesize_recording(circuit, hint))?;
    // A shape that does not fit the key is left unused: this partition's
    // full proof reports the mismatch.
    if let Ok(shape) = Shape::new(&data) {
        if key.check_shape(&shape).is_ok() {
            let _ = shared.shape.set(Arc::new(shape));
            *shared.recorded.lock() = Some(data);
        }
    }
    Ok(Prepared::Full(synth))
}

/// Synthesis thread: takes the next partition, synthesizes it, hands it to
/// its device's depth-one queue.
#[allow(clippy::too_many_arguments)]
fn synthesizer<C: Circuit<Scalar> + Send>(
    shared: &Shared,
    slots: &[Mutex<Option<C>>],
    next: &AtomicUsize,
    queues: &[Sender<Queued>],
    ordinals: &[u32],
    policy: Policy,
    blinding: BlindingSource,
    hint: SizeHint,
    key: &ProvingKey,
) {
    let n = queues.len();
    loop {
        if shared.cancelled() {
            return;
        }
        shared.permits.acquire();
        let k = next.fetch_add(1, Ordering::SeqCst);
        if k >= slots.len() || shared.cancelled() {
            shared.permits.release();
            return;
        }
        shared.enter();
        let circuit = slots[k]
            .lock()
            .take()
            .expect("each partition is taken once");
        let t = Instant::now();
        let synth = match synthesize_partition(shared, circuit, hint, key) {
            Ok(p) => p,
            Err(source) => {
                shared.fail(EngineError::Synthesis {
                    partition: k,
                    source,
                });
                shared.leave();
                return;
            }
        };
        let item = Queued {
            partition: k,
            prepared: synth,
            synthesis: t.elapsed(),
            blinding: blinding.for_partition(k),
            enqueued: Instant::now(),
        };
        let dev = match policy {
            Policy::RoundRobin => k % n,
            Policy::LeastLoaded => shared.least_loaded(),
        };
        shared.owner[k].store(ordinals[dev] as i64, Ordering::SeqCst);
        shared.outstanding[dev].fetch_add(1, Ordering::SeqCst);
        if queues[dev].send(item).is_err() {
            shared.outstanding[dev].fetch_sub(1, Ordering::SeqCst);
            shared.fail(EngineError::WorkerDied {
                device: ordinals[dev],
                message: "its queue closed".into(),
            });
            shared.leave();
            return;
        }
    }
}

/// Worker: owns one device. Binds it on its own thread, proves what its
/// queue holds, reports to the collector; after a failure it drains its
/// queue without proving.
#[allow(clippy::too_many_arguments)]
fn worker(
    ctx: &Context,
    key: &ProvingKey,
    ordinal: u32,
    index: usize,
    mutex: &DeviceMutex,
    cpus: Option<Vec<usize>>,
    queue: Receiver<Queued>,
    results: Sender<Done>,
    shared: &Shared,
) {
    let setup = cpus
        .as_deref()
        .map(pin_current_thread)
        .unwrap_or(Ok(()))
        .and_then(|_| ctx.select_gpu(Some(ordinal)).map_err(|e| e.to_string()));
    if let Err(message) = setup {
        shared.fail(EngineError::WorkerDied {
            device: ordinal,
            message,
        });
    } else if let Err(source) = match shared.shape.get() {
        Some(shape) => key.prepare_shape(ctx, ordinal, shape),
        None => key.prepare(ctx, ordinal),
    } {
        // Key upload and cache allocation overlap the first synthesis.
        shared.fail(EngineError::Device {
            device: ordinal,
            source,
        });
    }
    let mut done = 0u64;
    let mut total_ns = 0u64;
    for item in queue.iter() {
        if shared.cancelled() {
            shared.outstanding[index].fetch_sub(1, Ordering::SeqCst);
            shared.leave();
            continue;
        }
        let k = item.partition;
        let queue_wait = item.enqueued.elapsed();
        let t = Instant::now();
        let (witness_only, host_bytes) = (item.prepared.is_witness(), item.prepared.host_bytes());
        let job = SynthesizedJob {
            partitions: vec![item.prepared],
            blinding: vec![item.blinding],
            tags: vec![k as i64],
        };
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            gpu_prove_start(ctx, &job, key, Some(mutex), ordinal).and_then(|h| h.finish())
        }));
        drop(job);
        let elapsed = t.elapsed().as_nanos() as u64;
        done += 1;
        total_ns += elapsed;
        shared.avg_device_ns[index].store(total_ns / done, Ordering::SeqCst);
        shared.outstanding[index].fetch_sub(1, Ordering::SeqCst);
        match outcome {
            Ok(Ok(mut outs)) if outs.len() == 1 => {
                let (_, output, public_inputs) = outs.pop().expect("one proof");
                let proof = PartitionProof {
                    partition: k,
                    output,
                    public_inputs,
                    synthesis: item.synthesis,
                    witness_only,
                    host_bytes,
                };
                let _ = results.send(Done {
                    proof,
                    worker_device: ordinal,
                    queue_wait,
                });
            }
            Ok(Ok(outs)) => shared.fail(EngineError::Collector(format!(
                "device {ordinal} returned {} proofs for partition {k}",
                outs.len()
            ))),
            Ok(Err(e)) => shared.fail(EngineError::Partition {
                partition: k,
                device: ordinal,
                source: e,
            }),
            Err(panic) => {
                shared.fail(EngineError::WorkerDied {
                    device: ordinal,
                    message: panic_message(&*panic),
                });
            }
        }
        shared.leave();
    }
    let _ = ctx.select_gpu(None);
}
