//! GKR shards as engine work: each shard is a tower proof of its own size
//! over seeded random values. The engine's workers (one per device, on
//! their CPU sets), ownership policies, depth-one queues, fail-fast and
//! collector run them through [`Work`]; the collector verifies every shard.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cuda_prover_engine::{DeviceSlot, Engine, EngineError, RunControl, Work};
use p3_field::PrimeCharacteristicRing;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::{
    mle_eval_drawn, prove_tower, random_ext, random_nonzero_ext, verify_tower_by, Ext, GkrError,
    ProveStats, TowerInput, TowerKind, TowerProof, MLE_CHUNK_LOG,
};

/// The largest shard (2^MAX_LOG_SIZE values), the core's limit.
pub const MAX_LOG_SIZE: u32 = 30;

/// The most shards of one run.
pub const MAX_SHARDS: usize = 1_000_000;

/// Host bytes one shard holds at its peak: its input (one array of
/// 2^log_size extension elements for a product tower, two for fractions),
/// and as much again three times over for the tower's layers and what the
/// backend keeps of it (on the host backend the device's buffers are host
/// memory too).
pub fn shard_host_bytes(kind: TowerKind, log_size: u32) -> u64 {
    let arrays: u64 = match kind {
        TowerKind::Product => 1,
        TowerKind::Fraction => 2,
    };
    arrays * 4 * ((std::mem::size_of::<Ext>() as u64) << log_size.min(40))
}

/// One shard: a tower over 2^log_size seeded random values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    pub log_size: u32,
}

/// What the shards prove and how their inputs are drawn.
#[derive(Debug, Clone, Copy)]
pub struct ShardConfig {
    pub kind: TowerKind,
    pub seed: u64,
}

/// One proved and verified shard.
#[derive(Debug, Clone)]
pub struct ShardResult {
    pub shard: usize,
    pub log_size: u32,
    pub device: u32,
    pub stats: ProveStats,
    /// Drawing the input (CPU, before the device).
    pub prepare: Duration,
    /// Waiting in its device's queue.
    pub queue_wait: Duration,
    pub proof_bytes: usize,
    pub root: Vec<Ext>,
}

/// Every shard, in shard order, all verified.
#[derive(Debug, Clone)]
pub struct ShardReport {
    pub shards: Vec<ShardResult>,
    pub devices: Vec<u32>,
    pub wall: Duration,
    /// The collector's verification of every shard (drawing each input
    /// again included), part of `wall`.
    pub verify: Duration,
}

/// The tag of the small tower that readies a GPU before its first shard
/// (shards are tagged with their index).
pub const WARM_UP_TAG: i64 = -1;

/// Entries drawn from one generator stream of [`shard_input`].
pub const INPUT_CHUNK: usize = 1 << 14;

/// Shard `shard`'s input: seeded by (seed, shard), so the collector (or
/// anyone) can draw it again. Entries are drawn in chunks of
/// [`INPUT_CHUNK`], chunk c of array a (0: values or numerators, 1:
/// denominators) from ChaCha8 stream `a * 2^48 + c` of the (seed, shard)
/// key, the chunks on every core: the same values whatever the thread
/// count.
pub fn shard_input(kind: TowerKind, seed: u64, shard: usize, log_size: u32) -> TowerInput {
    let n = 1usize << log_size;
    let key = shard_key(seed, shard);
    match kind {
        TowerKind::Product => TowerInput::Product(draw(key, 0, n, random_ext)),
        TowerKind::Fraction => TowerInput::Fraction {
            numerators: draw(key, 0, n, random_ext),
            denominators: draw(key, 1, n, random_nonzero_ext),
        },
    }
}

type Draw = fn(&mut ChaCha8Rng) -> Ext;

fn shard_key(seed: u64, shard: usize) -> u64 {
    seed ^ (shard as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

// Entries c * INPUT_CHUNK .. of array `array` into `out` (at most
// INPUT_CHUNK of them).
fn draw_chunk(key: u64, array: u64, c: usize, out: &mut [Ext], f: Draw) {
    let mut rng = ChaCha8Rng::seed_from_u64(key);
    rng.set_stream((array << 48) | c as u64);
    for x in out {
        *x = f(&mut rng);
    }
}

fn draw(key: u64, array: u64, n: usize, f: Draw) -> Vec<Ext> {
    let mut v: Vec<Ext> = Vec::with_capacity(n);
    v.spare_capacity_mut()[..n]
        .par_chunks_mut(INPUT_CHUNK)
        .enumerate()
        .for_each(|(c, out)| {
            let mut rng = ChaCha8Rng::seed_from_u64(key);
            rng.set_stream((array << 48) | c as u64);
            for x in out {
                x.write(f(&mut rng));
            }
        });
    // SAFETY: the loop above wrote every one of the first n slots (the
    // chunks cover [0, n)), and n is within the capacity.
    unsafe { v.set_len(n) };
    v
}

/// The multilinear extensions of shard `shard`'s input at `point` (its
/// log size is point.len()): `[values]`, or `[numerators, denominators]`,
/// as [`mle_eval`](crate::mle_eval) of [`shard_input`] gives them, drawing
/// and folding chunk by chunk without holding the input.
pub fn shard_input_claims(kind: TowerKind, seed: u64, shard: usize, point: &[Ext]) -> Vec<Ext> {
    let key = shard_key(seed, shard);
    // mle_eval_drawn's chunks are INPUT_CHUNK long once the input is.
    const _: () = assert!(INPUT_CHUNK == 1 << MLE_CHUNK_LOG);
    let eval =
        |array: u64, f: Draw| mle_eval_drawn(point, |c, out| draw_chunk(key, array, c, out, f));
    match kind {
        TowerKind::Product => vec![eval(0, random_ext)],
        TowerKind::Fraction => vec![eval(0, random_ext), eval(1, random_nonzero_ext)],
    }
}

/// What a worker makes of one shard: its proof, encoded, and where and how
/// long.
pub struct ShardOutput {
    pub device: u32,
    pub proof: Vec<u8>,
    pub root: Vec<Ext>,
    pub stats: ProveStats,
}

/// The shards of one job as engine [`Work`].
pub struct ShardWork<'a> {
    shards: &'a [ShardSpec],
    config: ShardConfig,
    verify_ns: AtomicU64,
}

impl<'a> ShardWork<'a> {
    pub fn new(shards: &'a [ShardSpec], config: ShardConfig) -> Self {
        Self {
            shards,
            config,
            verify_ns: AtomicU64::new(0),
        }
    }

    /// Time the collector spent verifying so far.
    pub fn verify_time(&self) -> Duration {
        Duration::from_nanos(self.verify_ns.load(Ordering::Relaxed))
    }

    fn input(&self, k: usize) -> TowerInput {
        shard_input(
            self.config.kind,
            self.config.seed,
            k,
            self.shards[k].log_size,
        )
    }
}

fn partition_error(partition: usize, device: u32, e: GkrError) -> EngineError {
    match e {
        GkrError::Core(source) => EngineError::Partition {
            partition,
            device,
            source: source.into(),
        },
        other => EngineError::Collector(format!("shard {partition} on device {device}: {other}")),
    }
}

impl Work for ShardWork<'_> {
    type Prepared = TowerInput;
    type Output = ShardOutput;

    fn items(&self) -> usize {
        self.shards.len()
    }

    /// A tower's device work grows with its 2^log_size values.
    fn cost(&self, item: usize) -> u64 {
        1u64 << self.shards[item].log_size.min(62)
    }

    fn ready_device(&self, slot: &DeviceSlot<'_>) -> Result<(), EngineError> {
        // A GPU's first tower pays for the upload ring (pinned buffers, copy
        // stream) and the kernels' first launches: a tower of two values
        // here, while the first shards are drawn. The host backend has
        // nothing to warm, and its per-device counters stay the shards'.
        if slot.ctx.backend_name() != "cuda" {
            return Ok(());
        }
        let input = TowerInput::Product(vec![Ext::ONE; 2]);
        prove_tower(slot.ctx, &slot.placement(), WARM_UP_TAG, &input)
            .map(|_| ())
            .map_err(|e| match e {
                GkrError::Core(source) => EngineError::Device {
                    device: slot.ordinal,
                    source: source.into(),
                },
                other => EngineError::Setup(format!("warming device {}: {other}", slot.ordinal)),
            })
    }

    fn prepare(&self, item: usize) -> Result<TowerInput, EngineError> {
        Ok(self.input(item))
    }

    fn prove(
        &self,
        item: usize,
        input: TowerInput,
        slot: &DeviceSlot<'_>,
    ) -> Result<ShardOutput, EngineError> {
        // The tag is the shard: the core's faults and delays name it.
        let (proof, stats) = prove_tower(slot.ctx, &slot.placement(), item as i64, &input)
            .map_err(|e| partition_error(item, slot.ordinal, e))?;
        Ok(ShardOutput {
            device: stats.device,
            proof: proof.to_bytes(),
            root: proof.root,
            stats,
        })
    }

    fn proved_on(&self, output: &ShardOutput) -> u32 {
        output.device
    }

    fn verify(&self, item: usize, output: &ShardOutput) -> Result<(), EngineError> {
        let t0 = Instant::now();
        // The input is drawn again chunk by chunk and folded as it comes:
        // never held whole.
        let (kind, seed) = (self.config.kind, self.config.seed);
        let ok = TowerProof::from_bytes(&output.proof).and_then(|p| {
            verify_tower_by(kind, self.shards[item].log_size, &p, |point| {
                shard_input_claims(kind, seed, item, point)
            })
        });
        self.verify_ns
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match ok {
            Ok(_) => Ok(()),
            Err(e) => {
                log::error!("shard {item} on device {}: {e}", output.device);
                Err(EngineError::Verification {
                    partition: item,
                    device: output.device,
                })
            }
        }
    }
}

/// Refuses shards whose inputs and towers the host cannot hold at once:
/// each worker holds at most one shard drawn and waiting and one proving,
/// so the largest 2 x workers shards count (`available`: what the process
/// may still allocate; `None`: unknown, nothing is checked).
pub fn check_host_memory(
    engine: &Engine,
    shards: &[ShardSpec],
    kind: TowerKind,
    available: Option<u64>,
) -> Result<(), EngineError> {
    let Some(available) = available else {
        return Ok(());
    };
    let workers = engine.devices().len() * engine.config().workers_per_device.max(1);
    let mut sizes: Vec<u64> = shards
        .iter()
        .map(|s| shard_host_bytes(kind, s.log_size))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let at_once = sizes.len().min(2 * workers);
    let need: u64 = sizes[..at_once].iter().sum();
    if need > available {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(EngineError::Setup(format!(
            "the shards need {:.1} GiB of host memory at once (the largest {at_once} of them, \
             {:.1} GiB the largest: input and tower), and {:.1} GiB is available: \
             use smaller or fewer shards",
            gib(need),
            gib(sizes[0]),
            gib(available)
        )));
    }
    Ok(())
}

/// Proves and verifies `shards` on the engine's devices with its policy;
/// the first failure stops the job and names the shard and device.
pub fn run_shards(
    engine: &Engine,
    shards: &[ShardSpec],
    config: ShardConfig,
) -> Result<ShardReport, EngineError> {
    if shards.is_empty() {
        return Err(EngineError::Setup("no shards".into()));
    }
    if shards.len() > MAX_SHARDS {
        return Err(EngineError::Setup(format!(
            "{} shards: at most {MAX_SHARDS} a run",
            shards.len()
        )));
    }
    for (k, s) in shards.iter().enumerate() {
        if s.log_size < 1 || s.log_size > MAX_LOG_SIZE {
            return Err(EngineError::Setup(format!(
                "shard {k}: log size {} is not in 1..={MAX_LOG_SIZE}",
                s.log_size
            )));
        }
    }
    check_host_memory(
        engine,
        shards,
        config.kind,
        cuda_prover_engine::host_memory::available_bytes(),
    )?;
    let work = ShardWork::new(shards, config);
    let t0 = Instant::now();
    let out = engine.run_work(&work, RunControl::default(), |_| {})?;
    let wall = t0.elapsed();
    let verify = work.verify_time();
    let shards = out
        .items
        .into_iter()
        .map(|d| ShardResult {
            shard: d.item,
            log_size: shards[d.item].log_size,
            device: d.device,
            prepare: d.prepare_time,
            queue_wait: d.queue_wait,
            proof_bytes: d.output.proof.len(),
            root: d.output.root,
            stats: d.output.stats,
        })
        .collect();
    Ok(ShardReport {
        shards,
        devices: engine.devices().iter().map(|d| d.ordinal).collect(),
        wall,
        verify,
    })
}
