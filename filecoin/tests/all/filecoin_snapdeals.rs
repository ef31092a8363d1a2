//! SnapDeals (empty-sector-update) over a sealed 2 KiB sector through the
//! engine (host backend), with TEST parameters, checked by filecoin-proofs'
//! verifier.

use crate::common;

use cuda_prover_filecoin::sealing::prove_snap_for;
use cuda_prover_filecoin::test_params::TestCircuit;
use cuda_prover_filecoin::SectorSize;
use cuda_prover_groth16::BlindingSource;
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::verify_empty_sector_update_proof;

use common::{host_prover, registered_2kib, sealed_2kib, test_params};

#[test]
fn snapdeals_2kib_is_accepted_by_filecoin_proofs() {
    test_params(&[TestCircuit::SnapDeals(SectorSize::KIB_2)]);
    let s = sealed_2kib();
    let work =
        std::env::temp_dir().join(format!("cuda-prover-filecoin-snap-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let prover = host_prover(1, BlindingSource::Random);
    let (updated, out) = prove_snap_for(&prover, s, &work, 9).expect("SnapDeals proof");
    let config = registered_2kib().porep_config().unwrap();
    let check = |bytes: &[u8], comm_d_new: [u8; 32]| {
        verify_empty_sector_update_proof::<SectorShape2KiB>(
            &config,
            bytes,
            s.comm_r,
            updated.comm_r_new,
            comm_d_new,
        )
    };
    assert!(check(&out.proof, updated.comm_d_new).expect("verifier runs"));
    let mut bad = out.proof.clone();
    bad[20] ^= 1;
    assert!(!matches!(check(&bad, updated.comm_d_new), Ok(true)));
    let mut other_d = updated.comm_d_new;
    other_d[0] ^= 1;
    assert!(!matches!(check(&out.proof, other_d), Ok(true)));
    let _ = std::fs::remove_dir_all(&work);
}
