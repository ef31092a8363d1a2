//! Proving keys: bellperson params in memory or on disk, held by the core.

use std::path::Path;

use crate::core_api;
use bellperson::groth16::{
    prepare_verifying_key, verify_proof, Parameters, PreparedVerifyingKey, Proof, VerifyingKey,
};
use blstrs::{Bls12, Scalar};
use sha2::{Digest, Sha256};

use crate::convert::{g1, g1_slice, g2, g2_slice, to_g1, to_g2};
use crate::error::{Error, Result};
use crate::shape::Shape;
pub use core_api::{KeyCheck, LoadReport, SubgroupCheck};

/// SHA-256 of a verifying key's points: what a shape file is tied to.
pub fn vk_fingerprint(vk: &VerifyingKey<Bls12>) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in [&vk.alpha_g1, &vk.beta_g1, &vk.delta_g1]
        .into_iter()
        .chain(&vk.ic)
    {
        h.update(p.to_compressed());
    }
    for p in [&vk.beta_g2, &vk.gamma_g2, &vk.delta_g2] {
        h.update(p.to_compressed());
    }
    h.finalize().into()
}

/// A proving key loaded into the core, with the verifying key beside it.
pub struct ProvingKey {
    core: core_api::Key,
    vk: VerifyingKey<Bls12>,
    pvk: PreparedVerifyingKey<Bls12>,
    fingerprint: [u8; 32],
}

impl ProvingKey {
    /// From bellperson parameters in memory (the core copies them and
    /// checks every point, subgroups included).
    pub fn from_params(p: &Parameters<Bls12>) -> Result<Self> {
        Self::from_params_with(p, KeyCheck::Full)
    }

    /// From bellperson parameters, checked as `check` says:
    /// [`KeyCheck::TrustedUnchecked`] skips the subgroup checks, for a
    /// caller that generated the parameters itself.
    pub fn from_params_with(p: &Parameters<Bls12>, check: KeyCheck) -> Result<Self> {
        let (core, _) = core_api::Key::load_parts(
            &core_api::KeyParts {
                alpha_g1: g1(&p.vk.alpha_g1),
                beta_g1: g1(&p.vk.beta_g1),
                beta_g2: g2(&p.vk.beta_g2),
                gamma_g2: g2(&p.vk.gamma_g2),
                delta_g1: g1(&p.vk.delta_g1),
                delta_g2: g2(&p.vk.delta_g2),
                ic: g1_slice(&p.vk.ic),
                h: g1_slice(&p.h),
                l: g1_slice(&p.l),
                a: g1_slice(&p.a),
                b_g1: g1_slice(&p.b_g1),
                b_g2: g2_slice(&p.b_g2),
            },
            check,
        )?;
        Ok(Self::with_vk(core, p.vk.clone()))
    }

    /// From a file written by bellperson's `Parameters::write`. The core
    /// parses it (in parallel) and checks every point, subgroups included
    /// (paid once per file content: see [`KeyCheck::Full`]).
    pub fn from_file(path: &Path) -> Result<Self> {
        Ok(Self::load_file(path, KeyCheck::Full)?.0)
    }

    /// From a file, checked as `check` says, with what the load did.
    pub fn load_file(path: &Path, check: KeyCheck) -> Result<(Self, LoadReport)> {
        let (core, report) = core_api::Key::load_file(path, check)?;
        Ok((Self::from_core(core)?, report))
    }

    /// From the file `name` of the directory open as `dir` (one path
    /// component, no link followed; its verified record kept in the same
    /// directory), checked as `check` says; `shown` names it in messages.
    pub fn load_file_at(
        dir: std::os::fd::BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        shown: &Path,
        check: KeyCheck,
    ) -> Result<(Self, LoadReport)> {
        let (core, report) = core_api::Key::load_file_at(None, dir, name, shown, check)?;
        Ok((Self::from_core(core)?, report))
    }

    /// From a file, checked as `check` says, the subgroup checks (when
    /// made) on device `ordinal` of `ctx`.
    pub fn load_file_on(
        ctx: &cuda_prover_device::Context,
        ordinal: u32,
        path: &Path,
        check: KeyCheck,
    ) -> Result<(Self, LoadReport)> {
        let (core, report) = core_api::Key::load_file_on(ctx, ordinal, path, check)?;
        Ok((Self::from_core(core)?, report))
    }

    /// The same format from memory, every point checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_with(bytes, KeyCheck::Full)
    }

    /// The same format from memory, checked as `check` says.
    pub fn from_bytes_with(bytes: &[u8], check: KeyCheck) -> Result<Self> {
        Self::from_core(core_api::Key::load_bytes(bytes, check)?.0)
    }

    fn from_core(core: core_api::Key) -> Result<Self> {
        let raw = core.vk()?;
        let bad = || Error::Invalid("the core returned a verifying key point off the curve".into());
        let vk = VerifyingKey {
            alpha_g1: to_g1(&raw.alpha_g1).ok_or_else(bad)?,
            beta_g1: to_g1(&raw.beta_g1).ok_or_else(bad)?,
            beta_g2: to_g2(&raw.beta_g2).ok_or_else(bad)?,
            gamma_g2: to_g2(&raw.gamma_g2).ok_or_else(bad)?,
            delta_g1: to_g1(&raw.delta_g1).ok_or_else(bad)?,
            delta_g2: to_g2(&raw.delta_g2).ok_or_else(bad)?,
            ic: raw
                .ic
                .iter()
                .map(|p| to_g1(p).ok_or_else(bad))
                .collect::<Result<_>>()?,
        };
        Ok(Self::with_vk(core, vk))
    }

    pub(crate) fn with_vk(core: core_api::Key, vk: VerifyingKey<Bls12>) -> Self {
        let pvk = prepare_verifying_key(&vk);
        let fingerprint = vk_fingerprint(&vk);
        Self {
            core,
            vk,
            pvk,
            fingerprint,
        }
    }

    /// SHA-256 of the verifying key's points: what a shape file is tied to.
    pub fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }

    pub fn vk(&self) -> &VerifyingKey<Bls12> {
        &self.vk
    }

    pub fn prepared_vk(&self) -> &PreparedVerifyingKey<Bls12> {
        &self.pvk
    }

    /// The core's handle of this key.
    pub fn core(&self) -> &core_api::Key {
        &self.core
    }

    /// Lengths of the key's queries.
    pub fn shape(&self) -> Result<core_api::KeyShape> {
        Ok(self.core.shape()?)
    }

    /// The evaluation domain of the key's circuit (the H query has one
    /// point fewer): an upper bound on its constraint count.
    pub fn domain_size(&self) -> Result<u64> {
        Ok(self.shape()?.h_len + 1)
    }

    /// The sizes a synthesis for this key will reach: the domain bounds the
    /// constraints, the L query has one point per aux variable.
    pub fn size_hint(&self) -> Result<crate::SizeHint> {
        let s = self.shape()?;
        Ok(crate::SizeHint {
            constraints: self.domain_size()? as usize,
            inputs: s.ic_len as usize,
            aux: s.l_len as usize,
        })
    }

    /// Uploads this key to `ordinal` and allocates the working cache for
    /// its full domain, so the first proof there pays neither.
    pub fn prepare(&self, ctx: &cuda_prover_device::Context, ordinal: u32) -> Result<()> {
        Ok(self.core.prepare(ctx, ordinal, self.domain_size()?)?)
    }

    /// [`ProvingKey::prepare`] for proofs from `shape`: the shape's
    /// matrices are placed on the device too.
    pub fn prepare_shape(
        &self,
        ctx: &cuda_prover_device::Context,
        ordinal: u32,
        shape: &Shape,
    ) -> Result<()> {
        Ok(self.core.prepare_shape(ctx, ordinal, shape.core())?)
    }

    /// Whether `shape` belongs to this key (query lengths and densities);
    /// the error names the first disagreement.
    pub fn check_shape(&self, shape: &Shape) -> Result<()> {
        Ok(self.core.check_shape(shape.core())?)
    }

    /// Memory one proof of `num_constraints` constraints needs by the host
    /// backend's layout (no context). For a device, use
    /// [`ProvingKey::device_memory_estimate`].
    pub fn memory_estimate(&self, num_constraints: u64) -> Result<core_api::MemoryEstimate> {
        Ok(self.core.memory_estimate(num_constraints)?)
    }

    /// Device memory one proof of `num_constraints` constraints needs on
    /// device `ordinal` of `ctx`, by that device's backend (CUDA or host).
    pub fn device_memory_estimate(
        &self,
        ctx: &cuda_prover_device::Context,
        ordinal: u32,
        num_constraints: u64,
    ) -> Result<core_api::MemoryEstimate> {
        Ok(self
            .core
            .device_memory_estimate(ctx, ordinal, num_constraints)?)
    }

    /// Checks a proof with bellperson's verifier. `public_inputs` excludes ONE.
    pub fn verify(&self, proof: &Proof<Bls12>, public_inputs: &[Scalar]) -> Result<bool> {
        verify_proof(&self.pvk, proof, public_inputs)
            .map_err(|e| Error::Invalid(format!("verifier error: {e}")))
    }
}
