//! Single-proof latency per backend: bellperson's CPU prover end to end,
//! and a core backend's prover on both paths (a, b, c from the CPU, or the
//! witness alone with a, b, c evaluated by the core) with the core's
//! per-phase times.

use std::time::Instant;

use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::Bls12;
use cuda_prover_bellperson::Placement;
use cuda_prover_bellperson::{prove_from_assignments, prove_from_witnesses, Blinding, Context};
use cuda_prover_groth16::params::key_path;
use cuda_prover_tests::proof_bytes;
use serde_json::{json, Value};

use crate::args::Args;
use crate::compare::SameBytes;
use crate::phases::{ms, phases};
use crate::synthesis::Prepared;

/// bellperson's `create_proof_batch` from the key's file, synthesis
/// included: the best of `--cpu-repeats`.
pub(crate) fn bellperson_latency(
    args: &Args,
    prep: &Prepared,
    bl: &[Blinding],
    same: &mut SameBytes,
) -> Value {
    let f = std::fs::File::open(key_path(&args.params_dir, &prep.shape)).unwrap();
    let params = Parameters::<Bls12>::read(std::io::BufReader::new(f), false).unwrap();
    let mut best = f64::MAX;
    let mut proof = None;
    for _ in 0..args.cpu_repeats.max(1) {
        let t = Instant::now();
        let p =
            create_proof_batch(vec![prep.circuit], &params, vec![bl[0].r], vec![bl[0].s]).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        proof = Some(p[0].clone());
    }
    let b = proof_bytes(&proof.unwrap());
    same.check(&b);
    println!("  bellperson cpu: {best:.3} s per proof (synthesis included)");
    json!({ "end_to_end_s": best })
}

/// A core backend's prover time on both paths: the best of `--repeats`
/// (cuda) or `--cpu-repeats` after a first, which is reported apart.
pub(crate) fn core_latency(
    args: &Args,
    backend: &str,
    ctx: &Context,
    p: &Prepared,
    bl: &[Blinding],
    same: &mut SameBytes,
) -> Value {
    let (key, synth) = (&p.key, &p.synth);
    let mut first = 0.0;
    let mut best = f64::MAX;
    let mut out = None;
    let repeats = if backend == "cuda" {
        args.repeats
    } else {
        args.cpu_repeats
    };
    for i in 0..repeats.max(1) + 1 {
        let t = Instant::now();
        let o =
            prove_from_assignments(ctx, key, std::slice::from_ref(synth), bl, &Placement::on(0))
                .unwrap();
        let dt = t.elapsed().as_secs_f64();
        if i == 0 {
            first = dt;
        } else {
            best = best.min(dt);
        }
        out = Some(o.into_iter().next().unwrap());
    }
    let o = out.unwrap();
    assert!(key.verify(&o.proof, synth.public_inputs()).unwrap());
    let b = proof_bytes(&o.proof);
    same.check(&b);
    let t = &o.timings;
    println!(
        "  {backend}: prover {best:.3} s (first in process {first:.3} s), end to end {:.3} s; \
         upload {:.1} ntt {:.1} msm h {:.1} l {:.1} a {:.1} b_g1 {:.1} b_g2 {:.1} batch-add {:.1} epilogue {:.1} ms; peak device {} MiB",
        best + p.synthesis_s,
        ms(t.upload_ns), ms(t.ntt_ns), ms(t.msm_h_ns), ms(t.msm_l_ns), ms(t.msm_a_ns),
        ms(t.msm_b_g1_ns), ms(t.msm_b_g2_ns), ms(t.batch_add_ns), ms(t.epilogue_ns),
        t.peak_device_bytes >> 20
    );
    let mut entry = json!({
        "prover_s": best, "first_prover_s": first, "end_to_end_s": best + p.synthesis_s,
        "phases": phases(&o),
    });
    // The witness path: the same proof from the witness alone.
    let mut wbest = f64::MAX;
    let mut wout = None;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let o = prove_from_witnesses(
            ctx,
            key,
            &p.circuit_shape,
            std::slice::from_ref(&p.witness),
            bl,
            &Placement::on(0),
        )
        .unwrap();
        wbest = wbest.min(t.elapsed().as_secs_f64());
        wout = Some(o.into_iter().next().unwrap());
    }
    let wo = wout.unwrap();
    same.and(proof_bytes(&wo.proof) == b);
    let wt = &wo.timings;
    println!(
        "  {backend} witness path: prover {wbest:.3} s (evaluation {:.1} ms, upload {:.1} ms, device {:.1} ms), end to end {:.3} s",
        ms(wt.eval_ns), ms(wt.upload_ns), ms(wt.device_ns), wbest + p.witness_s
    );
    entry["witness_path"] = json!({
        "prover_s": wbest, "end_to_end_s": wbest + p.witness_s, "phases": phases(&wo),
    });
    entry
}
