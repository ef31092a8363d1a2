//! The verifier, on the host (no device): replays the transcript, checks
//! every round and every layer's final claim, and the last claim against
//! the inputs' multilinear extension.

use p3_field::PrimeCharacteristicRing;

use crate::{
    eq_eval, interpolate, mle_eval, Ext, GkrError, TowerInput, TowerKind, TowerProof, Transcript,
};

fn reject(m: String) -> GkrError {
    GkrError::Rejected(m)
}

/// Accepts `proof` as a proof of its root for `input`; returns the root.
pub fn verify_tower(input: &TowerInput, proof: &TowerProof) -> Result<Vec<Ext>, GkrError> {
    let log_size = input.log_size()?;
    verify_tower_by(input.kind(), log_size, proof, |point| match input {
        TowerInput::Product(values) => vec![mle_eval(values, point)],
        TowerInput::Fraction {
            numerators,
            denominators,
        } => vec![mle_eval(numerators, point), mle_eval(denominators, point)],
    })
}

/// [`verify_tower`] for an input of `kind` and 2^log_size entries that the
/// caller evaluates: `claims(point)` gives its multilinear extensions at
/// `point` (`[values]` or `[numerators, denominators]`), asked once, at
/// the end.
pub fn verify_tower_by<F>(
    kind: TowerKind,
    log_size: u32,
    proof: &TowerProof,
    claims: F,
) -> Result<Vec<Ext>, GkrError>
where
    F: FnOnce(&[Ext]) -> Vec<Ext>,
{
    if proof.kind != kind || proof.log_size != log_size {
        return Err(reject(format!(
            "the proof is for a {:?} tower of 2^{}, the input a {:?} tower of 2^{}",
            proof.kind, proof.log_size, kind, log_size
        )));
    }
    let nvals = match kind {
        TowerKind::Product => 2,
        TowerKind::Fraction => 4,
    };
    if proof.root.len() != nvals / 2 || proof.layers.len() != log_size as usize {
        return Err(reject("wrong number of root values or layers".into()));
    }
    let mut tr = Transcript::new(kind, log_size);
    tr.observe_all(&proof.root);
    // The claim on the current layer: [value] or [numerator, denominator].
    let mut claim = proof.root.clone();
    let mut point: Vec<Ext> = Vec::new();
    for (layer, lp) in proof.layers.iter().enumerate() {
        let alpha = match kind {
            TowerKind::Fraction => tr.challenge(),
            TowerKind::Product => Ext::ZERO,
        };
        let mut sum = match kind {
            TowerKind::Product => claim[0],
            TowerKind::Fraction => claim[0] + alpha * claim[1],
        };
        if lp.rounds.len() != layer {
            return Err(reject(format!("layer {layer}: {} rounds", lp.rounds.len())));
        }
        let mut s = Vec::with_capacity(layer);
        for (k, evals) in lp.rounds.iter().enumerate() {
            if evals.len() != 4 {
                return Err(reject(format!(
                    "layer {layer} round {k}: {} values, not 4",
                    evals.len()
                )));
            }
            if evals[0] + evals[1] != sum {
                return Err(reject(format!(
                    "layer {layer} round {k}: g(0) + g(1) is not the claim"
                )));
            }
            tr.observe_all(evals);
            let c = tr.challenge();
            sum = interpolate(evals, c);
            s.push(c);
        }
        if lp.values.len() != nvals {
            return Err(reject(format!(
                "layer {layer}: {} final values",
                lp.values.len()
            )));
        }
        let eq = eq_eval(&point, &s);
        let v = &lp.values;
        let expected = match kind {
            TowerKind::Product => eq * v[0] * v[1],
            TowerKind::Fraction => eq * (v[0] * v[3] + v[1] * v[2] + alpha * v[2] * v[3]),
        };
        if expected != sum {
            return Err(reject(format!(
                "layer {layer}: the final values do not match the last round"
            )));
        }
        tr.observe_all(v);
        let lambda = tr.challenge();
        claim = match kind {
            TowerKind::Product => vec![v[0] + lambda * (v[1] - v[0])],
            TowerKind::Fraction => {
                vec![v[0] + lambda * (v[1] - v[0]), v[2] + lambda * (v[3] - v[2])]
            }
        };
        point = std::iter::once(lambda).chain(s).collect();
    }
    let inputs_ok = claims(&point) == claim;
    if !inputs_ok {
        return Err(reject(
            "the last claim does not match the inputs (a proof for other inputs)".into(),
        ));
    }
    Ok(proof.root.clone())
}
