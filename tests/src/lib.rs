//! Fixtures shared by the cross-layer tests and benchmarks: small circuits
//! with particular shapes, and a per-process cache of proving keys.

pub mod device_keys;

use std::collections::HashMap;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use cuda_prover_bellperson::circuits::{BuiltIn, Kind};
use cuda_prover_bellperson::{Backend, Context, ContextOptions, KeyCheck, ProvingKey};
use ff::Field;
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Bellperson params and the core's key for them.
pub struct Keys {
    pub params: Parameters<Bls12>,
    pub key: ProvingKey,
}

type Cache = Mutex<HashMap<String, Arc<Keys>>>;
static CACHE: Lazy<Cache> = Lazy::new(|| Mutex::new(HashMap::new()));

/// Params for a circuit shape, made once per process (deterministic seed).
pub fn keys_for<C: Circuit<Scalar>>(name: &str, shape: C) -> Arc<Keys> {
    let mut cache = CACHE.lock();
    if let Some(k) = cache.get(name) {
        return k.clone();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    let params =
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(shape, &mut rng).unwrap();
    // Generated just now by bellperson in this process: the subgroup checks
    // would only re-check bellperson's own arithmetic.
    let key = ProvingKey::from_params_with(&params, KeyCheck::TrustedUnchecked).unwrap();
    let k = Arc::new(Keys { params, key });
    cache.insert(name.to_string(), k.clone());
    k
}

pub fn builtin(kind: Kind, log: u32, seed: u64) -> BuiltIn {
    BuiltIn::new(kind, log, seed).unwrap()
}

pub fn builtin_keys(kind: Kind, log: u32) -> Arc<Keys> {
    keys_for(&format!("{}-{log}", kind.name()), builtin(kind, log, 0))
}

/// `n` public inputs x_i with x_i^3 + x_i + 5 = y_i computed in aux.
#[derive(Clone, Copy)]
pub struct MultiInput {
    pub inputs: usize,
    pub seed: u64,
}

impl MultiInput {
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        (0..self.inputs).map(|_| Scalar::random(&mut rng)).collect()
    }
}

impl Circuit<Scalar> for MultiInput {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for x in self.public_inputs() {
            let xv = cs.alloc_input(|| "x", || Ok(x))?;
            let sq = cs.alloc(|| "x^2", || Ok(x.square()))?;
            cs.enforce(|| "sq", |lc| lc + xv, |lc| lc + xv, |lc| lc + sq);
            let cube = cs.alloc(|| "x^3", || Ok(x.square() * x))?;
            cs.enforce(|| "cube", |lc| lc + sq, |lc| lc + xv, |lc| lc + cube);
            let y = cs.alloc(|| "y", || Ok(x.square() * x + x + Scalar::from(5u64)))?;
            cs.enforce(
                || "y",
                |lc| lc + cube + xv + (Scalar::from(5u64), CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + y,
            );
        }
        Ok(())
    }
}

/// Aux variables that appear only in C (zero density in A and B), next to
/// ordinary ones: z_i = x * w_i with z_i in C only.
#[derive(Clone, Copy)]
pub struct COnly {
    pub n: usize,
    pub seed: u64,
}

impl COnly {
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        vec![Scalar::random(&mut rng)]
    }
}

impl Circuit<Scalar> for COnly {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let x = Scalar::random(&mut rng);
        let xv = cs.alloc_input(|| "x", || Ok(x))?;
        for _ in 0..self.n {
            let w = Scalar::random(&mut rng);
            let wv = cs.alloc(|| "w", || Ok(w))?;
            let zv = cs.alloc(|| "z", || Ok(x * w))?;
            cs.enforce(|| "z = x*w", |lc| lc + xv, |lc| lc + wv, |lc| lc + zv);
        }
        Ok(())
    }
}

/// Which values the aux variables of a [`Pattern`] take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// Every w_i is 0.
    Zeros,
    /// Every w_i is 1.
    Ones,
    /// About a third 0, a third 1, a third random.
    Mixed,
}

/// `n` aux variables w_i with the given values and s_i = w_i^2 (one
/// constraint w_i * w_i = s_i each), and one public input x with x * 1 = x:
/// MSM scalars (A, B, L) that are all 0, all 1 or mixed, for any shape with
/// the same n (the values do not change the constraints).
#[derive(Clone, Copy)]
pub struct Pattern {
    pub n: usize,
    pub values: Values,
    pub seed: u64,
}

impl Pattern {
    pub fn public_inputs(&self) -> Vec<Scalar> {
        vec![Scalar::from(self.seed + 2)]
    }

    fn value(&self, rng: &mut ChaCha8Rng) -> Scalar {
        match self.values {
            Values::Zeros => Scalar::ZERO,
            Values::Ones => Scalar::ONE,
            Values::Mixed => match rng.next_u32() % 3 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            },
        }
    }
}

impl Circuit<Scalar> for Pattern {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let x = self.public_inputs()[0];
        let xv = cs.alloc_input(|| "x", || Ok(x))?;
        cs.enforce(
            || "x * 1 = x",
            |lc| lc + xv,
            |lc| lc + CS::one(),
            |lc| lc + xv,
        );
        for _ in 0..self.n {
            let w = self.value(&mut rng);
            let wv = cs.alloc(|| "w", || Ok(w))?;
            let sv = cs.alloc(|| "s", || Ok(w.square()))?;
            cs.enforce(|| "w * w = s", |lc| lc + wv, |lc| lc + wv, |lc| lc + sv);
        }
        Ok(())
    }
}

/// A chain whose witness is wrong at one step: the circuit is unsatisfied.
#[derive(Clone, Copy)]
pub struct Broken {
    pub steps: usize,
    pub bad_step: usize,
}

impl Circuit<Scalar> for Broken {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = Scalar::from(3u64);
        let mut xv = cs.alloc(|| "x0", || Ok(x))?;
        for i in 0..self.steps {
            let mut next = x.square() + Scalar::from(7u64);
            if i == self.bad_step {
                next += Scalar::ONE;
            }
            let nv = if i + 1 == self.steps {
                cs.alloc_input(|| "y", || Ok(next))?
            } else {
                cs.alloc(|| "x", || Ok(next))?
            };
            cs.enforce(
                || "step",
                |lc| lc + xv,
                |lc| lc + xv,
                |lc| lc + nv - (Scalar::from(7u64), CS::one()),
            );
            x = next;
            xv = nv;
        }
        Ok(())
    }
}

/// Keys for a built-in shape through the on-disk cache the CLI uses
/// (`CP_PARAMS_DIR`, default `params-cache/` at the workspace root), for
/// sizes too large to generate in every test process.
pub fn cached_builtin_keys(kind: Kind, log: u32) -> Arc<Keys> {
    let name = format!("file-{}-{log}", kind.name());
    if let Some(k) = CACHE.lock().get(&name) {
        return k.clone();
    }
    let dir = std::env::var_os("CP_PARAMS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../params-cache")
        });
    let shape = builtin(kind, log, 0);
    let key =
        cuda_prover_groth16::params::load_or_create(&dir, &shape, &|s| eprintln!("{s}")).unwrap();
    let path = cuda_prover_groth16::params::key_path(&dir, &shape);
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let params = Parameters::<Bls12>::read(f, false).unwrap();
    let k = Arc::new(Keys { params, key });
    CACHE.lock().insert(name, k.clone());
    k
}

/// A CUDA context over every usable device, for GPU tests: `None` (the
/// test says it skipped) when the CUDA backend is unavailable, unless
/// `CP_REQUIRE_GPU` is set, which makes that a failure.
pub fn gpu() -> Option<Context> {
    match Context::new(ContextOptions {
        backend: Backend::Cuda,
        host_devices: 0,
        host_threads: 0,
        devices: Vec::new(),
    }) {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var("CP_REQUIRE_GPU").is_ok() {
                panic!("CP_REQUIRE_GPU is set but the CUDA backend is unavailable: {e}");
            }
            eprintln!("SKIPPED: no CUDA device ({e})");
            None
        }
    }
}

/// A proof's serialized bytes (bellperson's `Proof::write`), for byte-for-byte
/// comparisons.
pub fn proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).expect("writing to a Vec cannot fail");
    v
}

/// bellperson 0.27's native proofs of `circuits` with the given blinding.
pub fn native_proofs<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    params: &Parameters<Bls12>,
    blinding: &[cuda_prover_bellperson::Blinding],
) -> Vec<bellperson::groth16::Proof<Bls12>> {
    bellperson::groth16::create_proof_batch(
        circuits,
        params,
        blinding.iter().map(|b| b.r).collect(),
        blinding.iter().map(|b| b.s).collect(),
    )
    .expect("bellperson proves")
}

/// The chunks a device part streams for `params` with chunk buffers of
/// `buffer_bytes` (the core's stream plan: H+L as one MSM, A, B in G1 with
/// buffer_bytes / 96 bases a chunk, B in G2 with buffer_bytes / 192).
pub fn expected_stream_chunks(params: &Parameters<Bls12>, buffer_bytes: u64) -> u64 {
    let g1 = buffer_bytes / 96;
    let g2 = buffer_bytes / 192;
    let chunks = |n: usize, per: u64| (n as u64).div_ceil(per).max(1);
    chunks(params.h.len() + params.l.len(), g1)
        + chunks(params.a.len(), g1)
        + chunks(params.b_g1.len(), g1)
        + chunks(params.b_g2.len(), g2)
}
