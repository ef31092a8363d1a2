//! The prover driver: the tower's layers and every sumcheck round on the
//! device, Fiat-Shamir on the host between rounds.

use std::time::{Duration, Instant};

use p3_field::PrimeCharacteristicRing;

use crate::{
    from_bb4, to_bb4, Bb4, Context, DeviceMutex, Ext, GkrError, LayerProof, SumcheckTerm,
    TowerKind, TowerProof, Transcript,
};
use cuda_prover_pipeline::Tower;

/// What a tower proves: the product of `values`, or the sum of the
/// fractions `values[i] / denominators[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TowerInput {
    Product(Vec<Ext>),
    Fraction {
        numerators: Vec<Ext>,
        denominators: Vec<Ext>,
    },
}

impl TowerInput {
    pub fn kind(&self) -> TowerKind {
        match self {
            TowerInput::Product(_) => TowerKind::Product,
            TowerInput::Fraction { .. } => TowerKind::Fraction,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TowerInput::Product(v) => v.len(),
            TowerInput::Fraction { numerators, .. } => numerators.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// log2 of the length, or an error for a length that is not a power of
    /// two >= 2 (or fractions of unequal lengths).
    pub fn log_size(&self) -> Result<u32, GkrError> {
        let n = self.len();
        if let TowerInput::Fraction {
            numerators,
            denominators,
        } = self
        {
            if numerators.len() != denominators.len() {
                return Err(GkrError::Invalid(format!(
                    "{} numerators but {} denominators",
                    numerators.len(),
                    denominators.len()
                )));
            }
        }
        if n < 2 || !n.is_power_of_two() {
            return Err(GkrError::Invalid(format!(
                "a tower needs 2^n values, n >= 1; got {n}"
            )));
        }
        Ok(n.trailing_zeros())
    }
}

/// Times of one layer's reduction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayerTimes {
    /// Placing eq and the views of the child layer.
    pub setup: Duration,
    /// The rounds: device work and the transcript in between.
    pub rounds: Duration,
}

/// Where and how long a proof took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProveStats {
    pub device: u32,
    /// Uploading the input and building every layer.
    pub build: Duration,
    pub layers: Vec<LayerTimes>,
    pub total: Duration,
}

// The core's form of the values, converted on every core for large inputs.
fn bb4s(v: &[Ext]) -> Vec<Bb4> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if v.len() < 1 << 16 || threads == 1 {
        return v.iter().map(to_bb4).collect();
    }
    let mut out = vec![[0u32; 4]; v.len()];
    let chunk = v.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (src, dst) in v.chunks(chunk).zip(out.chunks_mut(chunk)) {
            s.spawn(move || {
                for (x, y) in src.iter().zip(dst) {
                    *y = to_bb4(x);
                }
            });
        }
    });
    out
}

const ONE: Bb4 = [1, 0, 0, 0];

/// Proves `input` on the device chosen by `gpu_index` (an ordinal, or the
/// core's GPU_AUTO / GPU_BOUND); `tag` is what the core's faults and delays
/// match.
pub fn prove_tower(
    ctx: &Context,
    gpu_index: i32,
    mutex: Option<&DeviceMutex>,
    tag: i64,
    input: &TowerInput,
) -> Result<(TowerProof, ProveStats), GkrError> {
    let t0 = Instant::now();
    let log_size = input.log_size()?;
    let kind = input.kind();
    let mut tower = match input {
        TowerInput::Product(v) => Tower::new(ctx, gpu_index, mutex, tag, kind, &bb4s(v), None),
        TowerInput::Fraction {
            numerators,
            denominators,
        } => Tower::new(
            ctx,
            gpu_index,
            mutex,
            tag,
            kind,
            &bb4s(numerators),
            Some(&bb4s(denominators)),
        ),
    }
    .map_err(GkrError::core)?;
    let mut stats = ProveStats {
        device: tower.device(),
        build: t0.elapsed(),
        ..Default::default()
    };
    let mut tr = Transcript::new(kind, log_size);
    let root: Vec<Ext> = tower
        .root()
        .map_err(GkrError::core)?
        .iter()
        .map(from_bb4)
        .collect();
    tr.observe_all(&root);

    let mut point: Vec<Ext> = Vec::new();
    let mut layers = Vec::with_capacity(log_size as usize);
    for layer in 0..log_size {
        let ts = Instant::now();
        let alpha = match kind {
            TowerKind::Fraction => tr.challenge(),
            TowerKind::Product => Ext::ZERO,
        };
        // Tables: 0 = eq, then L, R or pL, pR, qL, qR.
        let terms = match kind {
            TowerKind::Product => vec![SumcheckTerm {
                coeff: ONE,
                factors: vec![0, 1, 2],
            }],
            TowerKind::Fraction => vec![
                SumcheckTerm {
                    coeff: ONE,
                    factors: vec![0, 1, 4],
                },
                SumcheckTerm {
                    coeff: ONE,
                    factors: vec![0, 2, 3],
                },
                SumcheckTerm {
                    coeff: to_bb4(&alpha),
                    factors: vec![0, 3, 4],
                },
            ],
        };
        let mut sc = tower
            .layer_sumcheck(layer, &bb4s(&point))
            .map_err(GkrError::core)?;
        let setup = ts.elapsed();
        let tr0 = Instant::now();
        let mut rounds = Vec::with_capacity(layer as usize);
        let mut s = Vec::with_capacity(layer as usize);
        for _ in 0..layer {
            let evals: Vec<Ext> = sc
                .round(&terms, 3)
                .map_err(GkrError::core)?
                .iter()
                .map(from_bb4)
                .collect();
            tr.observe_all(&evals);
            let c = tr.challenge();
            sc.fold(to_bb4(&c)).map_err(GkrError::core)?;
            s.push(c);
            rounds.push(evals);
        }
        let values: Vec<Ext> = sc.values(0).map_err(GkrError::core)?[1..]
            .iter()
            .map(from_bb4)
            .collect();
        tr.observe_all(&values);
        let lambda = tr.challenge();
        point = std::iter::once(lambda).chain(s).collect();
        layers.push(LayerProof { rounds, values });
        stats.layers.push(LayerTimes {
            setup,
            rounds: tr0.elapsed(),
        });
    }
    stats.total = t0.elapsed();
    Ok((
        TowerProof {
            kind,
            log_size,
            root,
            layers,
        },
        stats,
    ))
}
