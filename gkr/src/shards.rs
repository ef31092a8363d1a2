//! Shards over devices: each shard is a tower proof of its own size, proved
//! by one worker per device (pinned to its CPU set when given), fed through
//! depth-one queues by an ownership policy (the engine's round-robin or
//! least-loaded), failing fast on the first error, and a collector that
//! restores shard order and verifies every shard before returning.
//!
//! This mirrors the engine's job runner for GKR work; the engine's device
//! discovery, policies and CPU-set pinning are used as they are.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use cuda_prover_engine::{cpus, Policy};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::{
    prove_tower, random_ext, random_nonzero_ext, verify_tower, Context, Ext, GkrError, ProveStats,
    TowerInput, TowerKind, TowerProof,
};

/// The largest shard (2^MAX_LOG_SIZE values), the core's limit.
pub const MAX_LOG_SIZE: u32 = 30;

/// One shard: a tower over 2^log_size seeded random values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    pub log_size: u32,
}

/// How shards are run.
#[derive(Debug, Clone)]
pub struct ShardConfig {
    pub kind: TowerKind,
    pub policy: Policy,
    pub seed: u64,
    /// One CPU set per worker (worker i takes set i % len).
    pub worker_cpus: Option<Vec<Vec<usize>>>,
}

/// One proved and verified shard.
#[derive(Debug, Clone)]
pub struct ShardResult {
    pub shard: usize,
    pub log_size: u32,
    pub device: u32,
    pub stats: ProveStats,
    pub verify: Duration,
    pub proof_bytes: usize,
    pub root: Vec<Ext>,
}

/// Every shard, in shard order.
#[derive(Debug, Clone)]
pub struct ShardReport {
    pub shards: Vec<ShardResult>,
    pub devices: Vec<u32>,
    pub wall: Duration,
}

/// Shard `shard`'s input: seeded by (seed, shard), so any process can
/// regenerate it.
pub fn shard_input(kind: TowerKind, seed: u64, shard: usize, log_size: u32) -> TowerInput {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (shard as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let n = 1usize << log_size;
    match kind {
        TowerKind::Product => TowerInput::Product((0..n).map(|_| random_ext(&mut rng)).collect()),
        TowerKind::Fraction => {
            let numerators = (0..n).map(|_| random_ext(&mut rng)).collect();
            let denominators = (0..n).map(|_| random_nonzero_ext(&mut rng)).collect();
            TowerInput::Fraction {
                numerators,
                denominators,
            }
        }
    }
}

// What the dispatcher knows of each worker: queued plus running shards,
// and their work (values) for least-loaded.
struct Load {
    in_flight: Vec<usize>,
    work: Vec<u64>,
}

struct Done {
    shard: usize,
    device: u32,
    result: Result<(TowerProof, ProveStats), GkrError>,
}

/// Proves `shards` on `devices` (open ordinals of `ctx`) and verifies each.
/// The first failure stops the job; its error names the shard and device.
pub fn run_shards(
    ctx: &Context,
    devices: &[u32],
    shards: &[ShardSpec],
    cfg: &ShardConfig,
) -> Result<ShardReport, GkrError> {
    if devices.is_empty() {
        return Err(GkrError::Invalid("no devices".into()));
    }
    if shards.is_empty() {
        return Err(GkrError::Invalid("no shards".into()));
    }
    for (k, s) in shards.iter().enumerate() {
        if s.log_size < 1 || s.log_size > MAX_LOG_SIZE {
            return Err(GkrError::Invalid(format!(
                "shard {k}: log size {} is not in 1..={MAX_LOG_SIZE}",
                s.log_size
            )));
        }
    }
    let t0 = Instant::now();
    let n = devices.len();
    let load = Mutex::new(Load {
        in_flight: vec![0; n],
        work: vec![0; n],
    });
    let freed = Condvar::new();
    let abort = AtomicBool::new(false);
    let (done_tx, done_rx) = mpsc::channel::<Done>();

    let (load, freed, abort) = (&load, &freed, &abort);
    let outcome = std::thread::scope(|scope| -> Result<Vec<ShardResult>, GkrError> {
        let mut queues = Vec::with_capacity(n);
        for (w, &device) in devices.iter().enumerate() {
            // Depth one: one shard waits while one runs.
            let (tx, rx) = mpsc::sync_channel::<usize>(1);
            queues.push(tx);
            let done_tx = done_tx.clone();
            let cpus_set = cfg.worker_cpus.as_ref().map(|s| s[w % s.len()].clone());
            scope.spawn(move || {
                if let Some(set) = cpus_set {
                    if let Err(e) = cpus::pin_current_thread(&set) {
                        log::warn!("worker {w}: {e}");
                    }
                }
                for shard in rx {
                    let result = if abort.load(Ordering::SeqCst) {
                        Err(GkrError::Invalid("skipped after an earlier failure".into()))
                    } else {
                        let input = shard_input(cfg.kind, cfg.seed, shard, shards[shard].log_size);
                        prove_tower(ctx, device as i32, None, shard as i64, &input)
                    };
                    {
                        let mut l = load.lock().unwrap();
                        l.in_flight[w] -= 1;
                        l.work[w] -= 1u64 << shards[shard].log_size;
                    }
                    freed.notify_all();
                    if done_tx.send(Done { shard, device, result }).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);

        // The dispatcher: the policy picks a worker with a free queue slot.
        let dispatcher = scope.spawn(move || {
            for (k, s) in shards.iter().enumerate() {
                let mut l = load.lock().unwrap();
                let w = loop {
                    if abort.load(Ordering::SeqCst) {
                        return;
                    }
                    let pick = match cfg.policy {
                        Policy::RoundRobin => Some(k % n).filter(|&w| l.in_flight[w] < 2),
                        Policy::LeastLoaded => (0..n)
                            .filter(|&w| l.in_flight[w] < 2)
                            .min_by_key(|&w| (l.work[w], w)),
                    };
                    match pick {
                        Some(w) => break w,
                        None => l = freed.wait(l).unwrap(),
                    }
                };
                l.in_flight[w] += 1;
                l.work[w] += 1u64 << s.log_size;
                drop(l);
                if queues[w].send(k).is_err() {
                    return;
                }
            }
        });

        // The collector: verifies each shard as it lands, keeps shard order.
        let mut got: BTreeMap<usize, ShardResult> = BTreeMap::new();
        let mut first_err: Option<(usize, GkrError)> = None;
        for d in done_rx {
            match d.result {
                Ok((proof, stats)) => {
                    let tv = Instant::now();
                    let input = shard_input(cfg.kind, cfg.seed, d.shard, shards[d.shard].log_size);
                    let bytes = proof.to_bytes();
                    let checked = TowerProof::from_bytes(&bytes).and_then(|p| verify_tower(&input, &p));
                    match checked {
                        Ok(root) => {
                            got.insert(
                                d.shard,
                                ShardResult {
                                    shard: d.shard,
                                    log_size: shards[d.shard].log_size,
                                    device: d.device,
                                    stats,
                                    verify: tv.elapsed(),
                                    proof_bytes: bytes.len(),
                                    root,
                                },
                            );
                        }
                        Err(e) => {
                            abort.store(true, Ordering::SeqCst);
                            freed.notify_all();
                            if first_err.as_ref().is_none_or(|(k, _)| d.shard < *k) {
                                first_err = Some((
                                    d.shard,
                                    GkrError::Shard {
                                        shard: d.shard,
                                        device: d.device,
                                        message: format!("the proof does not verify: {e}"),
                                    },
                                ));
                            }
                        }
                    }
                }
                Err(e) => {
                    let was_aborted = abort.swap(true, Ordering::SeqCst);
                    freed.notify_all();
                    let skipped = was_aborted && matches!(e, GkrError::Invalid(_));
                    if !skipped && first_err.as_ref().is_none_or(|(k, _)| d.shard < *k) {
                        first_err = Some((
                            d.shard,
                            GkrError::Shard {
                                shard: d.shard,
                                device: d.device,
                                message: e.to_string(),
                            },
                        ));
                    }
                }
            }
        }
        let _ = dispatcher.join();
        match first_err {
            Some((_, e)) => Err(e),
            None => Ok(got.into_values().collect()),
        }
    })?;
    if outcome.len() != shards.len() {
        return Err(GkrError::Invalid(format!(
            "{} of {} shards came back",
            outcome.len(),
            shards.len()
        )));
    }
    Ok(ShardReport {
        shards: outcome,
        devices: devices.to_vec(),
        wall: t0.elapsed(),
    })
}
