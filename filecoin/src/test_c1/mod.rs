//! Test C1 outputs: a valid commit-phase-1 output for a committed-capacity
//! (all-zero) sector of any size, made in seconds without sealing.
//!
//! **These are test fixtures, like the TEST parameters, and work only
//! because the fixture picks its own challenge seed.** On chain the seed
//! is randomness drawn after comm_r is committed (pre-commit), so a
//! prover cannot know which nodes will be challenged while it builds the
//! replica; that is what makes a vanilla proof evidence of a sealed
//! sector. Here the challenges are derived first (storage-proofs'
//! `InteractiveChallenges::derive`, through `PublicInputs::challenges`),
//! and only what they open is computed: the challenged nodes' labels at
//! every layer (from their parents in the sector's real
//! `StackedBucketGraph`), the openings of the zero data tree, and two
//! sparse trees (columns and replica) whose every other node is a seeded
//! stand-in. The proofs pass storage-proofs' vanilla verifier and the C2
//! circuit like a real C1's, but no replica lies behind comm_r: anyone can
//! make such a C1 for a seed of their choosing. Use them to exercise C2
//! (a 32 GiB sector's ten partitions) on machines that never sealed.
//!
//! Interactive PoRep only (`V1`, `V1_1`): synthetic PoRep derives its
//! challenges from comm_r, and non-interactive PoRep is not proved here.
//!
//! One concept per file: `identity` (the sector's ids, ticket and seed),
//! `zero_tree` (comm_d of zeros), `labels` (the challenged labels),
//! `proofs` (the column and replica trees, assembling storage-proofs'
//! `Proof`s), `wrapper` (lotus-bench / Curio's C2 input). The stand-ins
//! and sparse trees are `crate::fixture`'s, shared with `test_post`.

mod identity;
mod labels;
mod proofs;
pub mod wrapper;
mod zero_tree;

use std::time::{Duration, Instant};

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::{DefaultPieceDomain, MerkleTreeTrait, PoRepConfig, SealCommitPhase1Output};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    generate_replica_id, Challenges, Proof, PublicInputs, PublicParams, StackedDrg, Tau,
};

pub use identity::Identity;
use zero_tree::ZeroTree;

use crate::config::RegisteredSeal;
use crate::error::{FilecoinError, Result};
use crate::fixture::seeded::StandIns;
use crate::vanilla_check::vanilla_accepted;
use crate::with_sector_shape;

/// Where a test C1's stand-ins are drawn (its own stream of the seed).
const STAND_INS: &str = "cuda-prover test-c1 stand-in";

/// A test C1 and what a caller needs to run C2 on it.
#[derive(Debug, Clone)]
pub struct TestC1 {
    pub registered: RegisteredSeal,
    /// Prover id, sector id, ticket and challenge seed, from the seed.
    pub identity: Identity,
    pub comm_d: [u8; 32],
    pub comm_r: [u8; 32],
    pub partitions: usize,
    pub challenges_per_partition: usize,
    /// Columns opened (challenges and their parents, without repeats).
    pub columns: usize,
    /// filecoin-proofs' `SealCommitPhase1Output` as serde JSON, exactly as
    /// `seal_commit_phase1`'s output serializes.
    pub c1_json: Vec<u8>,
    /// Building the proofs, then storage-proofs' check of them.
    pub build: Duration,
    pub verify: Duration,
}

/// The test C1 of a CC sector of `registered`'s size, drawn from `seed`
/// (the same seed gives the same bytes). Its vanilla proofs have passed
/// storage-proofs' `verify_all_partitions` before it is returned.
pub fn generate_test_c1(registered: RegisteredSeal, seed: u64) -> Result<TestC1> {
    let config = registered.porep_config()?;
    for feature in [ApiFeature::SyntheticPoRep, ApiFeature::NonInteractivePoRep] {
        if config.feature_enabled(feature) {
            return Err(FilecoinError::Input(format!(
                "a test C1 is for interactive PoRep only, not {registered} ({feature:?} derives \
                 its challenges from comm_r)"
            )));
        }
    }
    with_sector_shape!(registered.size, generate_typed, registered, &config, seed)
}

fn generate_typed<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSeal,
    config: &PoRepConfig,
    seed: u64,
) -> Result<TestC1> {
    let t_build = Instant::now();
    let identity = Identity::from_seed(seed);
    let public_params = <StackedDrg<'_, Tree, DefaultPieceHasher> as ProofScheme<'_>>::setup(
        &setup_params(config).map_err(|e| FilecoinError::proofs("setup params", e))?,
    )
    .map_err(|e| FilecoinError::proofs("public params", e))?;
    if !matches!(public_params.challenges, Challenges::Interactive(_)) {
        return Err(fixture_error(
            "the public params' challenges are not interactive",
        ));
    }
    let graph = &public_params.graph;
    let data = ZeroTree::<DefaultPieceHasher>::new(graph.size())?;
    let comm_d = commitment(&data.root());
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &identity.prover_id,
        identity.sector_id,
        &identity.ticket,
        comm_d,
        &config.porep_id,
    );

    // storage-proofs' own challenges of every partition: interactive
    // ones depend on the replica id and the seed only.
    let inputs = PublicInputs::<_, DefaultPieceDomain> {
        replica_id,
        seed: Some(identity.seed),
        tau: None,
        k: None,
    };
    let partitions = usize::from(config.partitions);
    let challenges: Vec<Vec<usize>> = (0..partitions)
        .map(|k| inputs.challenges(&public_params.challenges, graph.size(), Some(k)))
        .collect();
    let built = proofs::build::<Tree, DefaultPieceHasher>(
        graph,
        public_params.num_layers,
        replica_id,
        &data,
        &challenges,
        StandIns::new(STAND_INS, seed),
    )?;
    let build = t_build.elapsed();

    let t_verify = Instant::now();
    check_vanilla(
        &public_params,
        PublicInputs {
            tau: Some(Tau {
                comm_d: data.root(),
                comm_r: built.comm_r,
            }),
            ..inputs
        },
        &built.vanilla_proofs,
    )?;
    let verify = t_verify.elapsed();

    let output = SealCommitPhase1Output::<Tree> {
        vanilla_proofs: built.vanilla_proofs,
        comm_r: commitment(&built.comm_r),
        comm_d,
        replica_id,
        seed: identity.seed,
        ticket: identity.ticket,
    };
    let c1_json = serde_json::to_vec(&output)
        .map_err(|e| fixture_error(format!("serializing the C1 output: {e}")))?;
    Ok(TestC1 {
        registered,
        identity,
        comm_d,
        comm_r: output.comm_r,
        partitions,
        challenges_per_partition: public_params.challenges.num_challenges_per_partition(),
        columns: built.columns,
        c1_json,
        build,
        verify,
    })
}

/// storage-proofs' vanilla verifier over every partition: a fixture it
/// rejects is never returned.
fn check_vanilla<Tree: 'static + MerkleTreeTrait>(
    public_params: &PublicParams<Tree>,
    inputs: PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    proofs: &[Vec<Proof<Tree, DefaultPieceHasher>>],
) -> Result<()> {
    vanilla_accepted("storage-proofs", "the test C1's vanilla proofs", || {
        StackedDrg::<'_, Tree, DefaultPieceHasher>::verify_all_partitions(
            public_params,
            &inputs,
            proofs,
        )
    })
}

fn commitment<D: Domain>(d: &D) -> [u8; 32] {
    let mut c = [0u8; 32];
    c.copy_from_slice(AsRef::<[u8]>::as_ref(d));
    c
}

/// An inconsistency inside the generator (never the caller's input).
fn fixture_error(message: impl Into<String>) -> FilecoinError {
    crate::fixture::fixture_error("test C1", message)
}
