//! GKR shards as engine work: each shard is a tower proof of its own size
//! over seeded random values. The engine's workers (one per device, on
//! their CPU sets), ownership policies, depth-one queues, fail-fast and
//! collector run them through [`Work`]; the collector verifies every shard.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cuda_prover_engine::{DeviceSlot, Engine, EngineError, RunControl, Work};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::{
    prove_tower, random_ext, random_nonzero_ext, verify_tower, Ext, GkrError, ProveStats,
    TowerInput, TowerKind, TowerProof,
};

/// The largest shard (2^MAX_LOG_SIZE values), the core's limit.
pub const MAX_LOG_SIZE: u32 = 30;

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
    let key = seed ^ (shard as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    match kind {
        TowerKind::Product => TowerInput::Product(draw(key, 0, n, random_ext)),
        TowerKind::Fraction => TowerInput::Fraction {
            numerators: draw(key, 0, n, random_ext),
            denominators: draw(key, 1, n, random_nonzero_ext),
        },
    }
}

fn draw(key: u64, array: u64, n: usize, f: fn(&mut ChaCha8Rng) -> Ext) -> Vec<Ext> {
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
            source,
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
        let (proof, stats) = prove_tower(
            slot.ctx,
            slot.ordinal as i32,
            Some(slot.mutex),
            item as i64,
            &input,
        )
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
        let ok =
            TowerProof::from_bytes(&output.proof).and_then(|p| verify_tower(&self.input(item), &p));
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
    for (k, s) in shards.iter().enumerate() {
        if s.log_size < 1 || s.log_size > MAX_LOG_SIZE {
            return Err(EngineError::Setup(format!(
                "shard {k}: log size {} is not in 1..={MAX_LOG_SIZE}",
                s.log_size
            )));
        }
    }
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
