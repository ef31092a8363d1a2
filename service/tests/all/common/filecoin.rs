//! Filecoin fixtures for the cuzk.v1 tests that share them: the 2 KiB
//! TEST parameters (made on first use) and 2 KiB sectors sealed for the
//! test miner.

use std::path::PathBuf;
use std::sync::Mutex;

use cuda_prover_filecoin::sealing::{seal_test_sector_for, SealedSector};
use cuda_prover_filecoin::test_params::{
    default_test_parameter_dir, ensure_test_parameters, use_test_parameter_dir, TestCircuit,
};
use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
use cuda_prover_service::cuzk::convert::prover_id_of_miner;

/// The miner of the test sectors (f01000): its prover id is
/// [0xe8, 0x07, 0...].
pub const MINER: u64 = 1000;
/// StackedDrg2KiBV1_1 among the network's seal proof numbers.
pub const REGISTERED_2KIB_V1_1: u64 = 5;
/// StackedDrgWindow2KiBV1_1 (filecoin-proofs' V1_2) among the network's
/// PoSt proof numbers.
pub const WINDOW_2KIB_V1_1: u64 = 10;

/// The 2 KiB TEST parameters of `circuits`, made where missing, in the
/// default directory (which the filecoin-proofs calls of this process
/// read); returns the directory.
pub fn test_params(circuits: &[TestCircuit]) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one_at_a_time = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = use_test_parameter_dir(&default_test_parameter_dir().unwrap()).unwrap();
    ensure_test_parameters(circuits, |m| eprintln!("{m}")).unwrap();
    dir
}

/// A 2 KiB sector (number `sector_id`) sealed for the test miner in a
/// fresh directory.
pub fn seal_for_miner(sector_id: u64) -> SealedSector {
    test_params(&[TestCircuit::Porep(SectorSize::KIB_2)]);
    seal_test_sector_for(
        RegisteredSeal::new(SectorSize::KIB_2, SealVersion::V1_1),
        &super::temp_dir("sector"),
        sector_id,
        Some(prover_id_of_miner(MINER)),
    )
    .expect("sealing 2 KiB")
}
