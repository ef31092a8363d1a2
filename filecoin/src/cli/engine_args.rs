//! The flags of every subcommand that proves: the engine's own
//! (`cuda_prover_engine::EngineArgs`, as `cuda-prover prove` spells them)
//! and how a Filecoin job is prepared for it.

use cuda_prover_engine::Engine;
use cuda_prover_pipeline::SynthesisMode;

use crate::error::Result;

#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    #[command(flatten)]
    pub engine: cuda_prover_engine::EngineArgs,
    /// Partitions prepared ahead beside each device's running and queued
    /// ones (each holds one more witness in host memory, about 4 GiB for a
    /// 32 GiB PoRep partition): with a partition's parallel witness on
    /// every core, one lets the next partition's challenges fill the cores
    /// that the last challenges of one leave idle.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=16))]
    pub prepare_ahead: u32,
    /// auto: the witness path once the circuit's shape is known (kept as
    /// `<params>.shape` next to the params, recorded by a first full
    /// synthesis); full: a, b, c evaluated on the CPU; witness: the shape
    /// path, required.
    #[arg(long, default_value = "auto")]
    pub synthesis: SynthesisMode,
    /// On the witness path, synthesize a PoRep partition's challenges on
    /// every core (true) or the partition in one thread (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub parallel_witness: bool,
    /// On that parallel witness, make a challenge's SHA-256 parts from
    /// their values (true; the same witness, several times faster) or run
    /// bellperson's SHA-256 gadget (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub native_witness: bool,
}

impl EngineArgs {
    /// The engine, wrapped in a prover with this synthesis mode.
    pub fn prover(&self) -> Result<crate::FilecoinProver> {
        Ok(crate::FilecoinProver::new(self.engine()?)
            .with_synthesis(self.synthesis)
            .with_parallel_witness(self.parallel_witness)
            .with_native_witness(self.native_witness))
    }

    pub fn engine(&self) -> Result<Engine> {
        let engine = self
            .engine
            .engine(|c| c.prepare_ahead = self.prepare_ahead as usize)?;
        for d in engine.devices() {
            eprintln!(
                "device {}: {}{}",
                d.ordinal,
                d.name,
                if d.simulated { " (simulated)" } else { "" }
            );
        }
        Ok(engine)
    }
}
