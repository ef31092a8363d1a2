//! The prover driver: the tower's layers and every sumcheck round on the
//! device, Fiat-Shamir on the host between rounds.

use std::time::{Duration, Instant};

use p3_field::PrimeCharacteristicRing;

use crate::{
    from_bb4, montgomery_words, to_bb4, Bb4, Context, Ext, GkrError, LayerProof, SumcheckTerm,
    TowerKind, TowerProof, Transcript,
};
use cuda_prover_device::Placement;

use crate::kernels::{Bb4Form, Tower, TowerOptions};

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
    /// Uploading the input and building every layer (the call, as the
    /// caller sees it).
    pub build: Duration,
    /// The core's share of `build` spent copying (and checking) the input.
    pub build_upload: Duration,
    /// The core's share of `build` spent building the layers.
    pub build_layers: Duration,
    pub layers: Vec<LayerTimes>,
    pub total: Duration,
}

const ONE: Bb4 = [1, 0, 0, 0];

/// How [`prove_tower_with`] hands the input to the core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProveOptions {
    /// Elements per piece of the input's copy to the device (0: the
    /// backend's default); the proof is the same for every value.
    pub chunk_elements: usize,
}

/// Proves `input` where `place` says (a device ordinal, or the core's
/// GPU_AUTO / GPU_BOUND, under its mutex or the device's own); `tag` is
/// what the core's faults and delays match.
pub fn prove_tower(
    ctx: &Context,
    place: &Placement<'_>,
    tag: i64,
    input: &TowerInput,
) -> Result<(TowerProof, ProveStats), GkrError> {
    prove_tower_with(ctx, place, tag, input, &ProveOptions::default())
}

/// [`prove_tower`] with options. The input's elements go to the core as
/// they are in memory (Montgomery words), with no conversion on the host.
pub fn prove_tower_with(
    ctx: &Context,
    place: &Placement<'_>,
    tag: i64,
    input: &TowerInput,
    options: &ProveOptions,
) -> Result<(TowerProof, ProveStats), GkrError> {
    let t0 = Instant::now();
    let log_size = input.log_size()?;
    let kind = input.kind();
    let tower_options = TowerOptions {
        form: Bb4Form::Montgomery,
        chunk_elements: options.chunk_elements,
    };
    let (values, denominators) = match input {
        TowerInput::Product(v) => (montgomery_words(v), None),
        TowerInput::Fraction {
            numerators,
            denominators,
        } => (
            montgomery_words(numerators),
            Some(montgomery_words(denominators)),
        ),
    };
    let mut tower =
        Tower::with_options(ctx, place, tag, kind, values, denominators, &tower_options)
            .map_err(GkrError::core)?;
    let build = t0.elapsed();
    let times = tower.build_times().map_err(GkrError::core)?;
    let mut stats = ProveStats {
        device: tower.device(),
        build,
        build_upload: times.upload,
        build_layers: times.layers,
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
            .layer_sumcheck(layer, &point.iter().map(to_bb4).collect::<Vec<_>>())
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
