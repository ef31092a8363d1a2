//! Winning and Window PoSt over a sealed 2 KiB sector through the engine
//! (host backend), with TEST parameters, checked by filecoin-proofs'
//! verifiers.

use crate::common;

use cuda_prover_filecoin::sealing::prove_post_for;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::{post_config, PostKind, SectorSize};
use cuda_prover_groth16::BlindingSource;
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::{verify_window_post, verify_winning_post, PublicReplicaInfo};
use storage_proofs_core::sector::SectorId;

use common::{host_prover, sealed_2kib, test_params};

fn randomness() -> [u8; 32] {
    let mut r = [0x5au8; 32];
    r[31] = 0;
    r
}

#[test]
fn winning_post_2kib_is_accepted_by_filecoin_proofs() {
    test_params(&[TestCircuit::WinningPost(SectorSize::KIB_2)]);
    let s = sealed_2kib();
    let prover = host_prover(1, BlindingSource::Random);
    let out = prove_post_for(&prover, s, PostKind::Winning, randomness()).expect("winning PoSt");
    let config = post_config(SectorSize::KIB_2, PostKind::Winning).unwrap();
    let replicas = [(
        SectorId::from(s.sector_id),
        PublicReplicaInfo::new(s.comm_r).unwrap(),
    )];
    let check = |bytes: &[u8]| {
        verify_winning_post::<SectorShape2KiB>(
            &config,
            &randomness(),
            &replicas,
            s.prover_id,
            bytes,
        )
    };
    assert!(check(&out.proof).expect("verifier runs"));
    let mut bad = out.proof.clone();
    bad[10] ^= 1;
    assert!(
        !matches!(check(&bad), Ok(true)),
        "a flipped byte was accepted"
    );
    let mut other = randomness();
    other[0] ^= 1;
    assert!(
        !verify_winning_post::<SectorShape2KiB>(
            &config,
            &other,
            &replicas,
            s.prover_id,
            &out.proof
        )
        .unwrap_or(false),
        "accepted for other randomness"
    );
}

#[test]
fn window_post_2kib_is_accepted_by_filecoin_proofs() {
    test_params(&[TestCircuit::WindowPost(SectorSize::KIB_2)]);
    let s = sealed_2kib();
    let prover = host_prover(1, BlindingSource::Random);
    let out = prove_post_for(&prover, s, PostKind::Window, randomness()).expect("window PoSt");
    let config = post_config(SectorSize::KIB_2, PostKind::Window).unwrap();
    let replicas = [(
        SectorId::from(s.sector_id),
        PublicReplicaInfo::new(s.comm_r).unwrap(),
    )]
    .into_iter()
    .collect();
    assert!(verify_window_post::<SectorShape2KiB>(
        &config,
        &randomness(),
        &replicas,
        s.prover_id,
        &out.proof
    )
    .expect("verifier runs"));
    let mut bad = out.proof.clone();
    bad[100] ^= 1;
    assert!(!matches!(
        verify_window_post::<SectorShape2KiB>(&config, &randomness(), &replicas, s.prover_id, &bad),
        Ok(true)
    ));
}
