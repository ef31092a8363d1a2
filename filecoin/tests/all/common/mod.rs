//! Shared setup of the Filecoin tests: TEST parameters (seeded, cached in
//! the user cache directory, generated once under a lock), a sealed 2 KiB
//! sector per test binary, and host-backend provers.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use cuda_prover_engine::{
    open_context, BackendChoice, DeviceSelection, Engine, EngineConfig, Policy,
};
use cuda_prover_filecoin::sealing::{seal_test_sector, SealedSector};
use cuda_prover_filecoin::test_params::{
    default_test_parameter_dir, ensure_test_parameters, use_test_parameter_dir, TestCircuit,
};
use cuda_prover_filecoin::{FilecoinProver, RegisteredSeal, SealVersion, SectorSize};
use cuda_prover_groth16::BlindingSource;
use cuda_prover_pipeline::KeyCheck;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::{
    as_safe_commitment, DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, SealCommitPhase1Output,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

pub const SEED: u64 = 42;

/// Selects the test parameter directory and makes the given circuits'
/// TEST parameters (first use only). Every test calls it first.
pub fn test_params(circuits: &[TestCircuit]) {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = default_test_parameter_dir().expect("test parameter directory");
        use_test_parameter_dir(&dir).expect("selecting the test parameter directory")
    });
    ensure_test_parameters(circuits, |m| eprintln!("{m}")).expect("test parameters");
}

pub fn registered_2kib() -> RegisteredSeal {
    RegisteredSeal::new(SectorSize::KIB_2, SealVersion::V1_1)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cuda-prover-filecoin-test-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// One sealed 2 KiB sector per test binary.
pub fn sealed_2kib() -> &'static SealedSector {
    static S: OnceLock<SealedSector> = OnceLock::new();
    S.get_or_init(|| {
        test_params(&[]);
        seal_test_sector(registered_2kib(), &scratch("2kib"), SEED).expect("sealing 2 KiB")
    })
}

/// A sealed sector of another size (4 KiB, a test size of filecoin-proofs).
pub fn sealed_4kib() -> SealedSector {
    test_params(&[]);
    seal_test_sector(
        RegisteredSeal::new(SectorSize::KIB_4, SealVersion::V1_1),
        &scratch("4kib"),
        SEED,
    )
    .expect("sealing 4 KiB")
}

/// `cuda-prover-filecoin COMMAND ARGS`, run to its end.
pub fn filecoin_cli(command: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cuda-prover-filecoin"))
        .arg(command)
        .args(args)
        .output()
        .expect("running cuda-prover-filecoin")
}

/// A prover over `devices` simulated host devices.
pub fn host_prover(devices: u32, blinding: BlindingSource) -> FilecoinProver {
    let ctx = Arc::new(
        open_context(BackendChoice::Host, devices, &DeviceSelection::All).expect("host context"),
    );
    let engine = Engine::new(
        ctx,
        EngineConfig {
            devices: DeviceSelection::All,
            policy: Policy::RoundRobin,
            ..Default::default()
        },
    )
    .expect("engine");
    // TEST parameters made by this crate from a seed: vouched for, so the
    // tests do not spend minutes on subgroup checks of keys they generated.
    FilecoinProver::new(engine)
        .with_blinding(blinding)
        .with_key_check(KeyCheck::TrustedUnchecked)
}

/// A PoRep's public inputs, for a sector of shape `Tree`.
pub type StackedInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    DefaultPieceDomain,
>;
/// A PoRep's compound public params, for a sector of shape `Tree`.
pub type StackedParams<Tree> =
    compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>;

/// The public inputs and public params of a C1 output's partitions, built
/// as filecoin-proofs' `seal_commit_phase2` builds them (the tests'
/// reference, independent of this crate's `prepare_c2`).
pub fn stacked_public<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: &SealCommitPhase1Output<Tree>,
) -> (StackedInputs<Tree>, StackedParams<Tree>) {
    let public_inputs = stacked::PublicInputs {
        replica_id: c1.replica_id,
        tau: Some(stacked::Tau {
            comm_d: DefaultPieceDomain::try_from_bytes(&c1.comm_d).unwrap(),
            comm_r: as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&c1.comm_r, "comm_r")
                .unwrap(),
        }),
        k: None,
        seed: Some(c1.seed),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config).unwrap(),
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    let public_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'static, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .unwrap();
    (public_inputs, public_params)
}
