//! cuzk.v1's request fields in this daemon's terms: proof kinds and
//! priorities on the engine's gate, a miner id as a prover id, the
//! network's registered seal proof numbers.

use cuda_prover_engine::gate::{
    Priority, PRIORITY_C2, PRIORITY_WINDOW_POST, PRIORITY_WINNING_POST,
};

use crate::cuzk_proto::{Priority as CuzkPriority, ProofKind};

/// The prover id of a miner: the payload of its ID address (the actor id
/// as unsigned LEB128), zero-padded on the right to 32 bytes, as lotus and
/// Curio build it.
pub fn prover_id_of_miner(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            id[i] = low;
            return id;
        }
        id[i] = low | 0x80;
        i += 1;
    }
}

/// A proof kind of a request: an error (for INVALID_ARGUMENT) for 0 and for
/// numbers cuzk.v1 does not define.
pub fn proof_kind(n: i32) -> Result<ProofKind, String> {
    match ProofKind::try_from(n) {
        Ok(ProofKind::Unspecified) => Err(
            "proof_kind is unspecified: 1 POREP_SEAL_COMMIT, 2 SNAP_DEALS_UPDATE, \
             3 WINDOW_POST_PARTITION or 4 WINNING_POST"
                .into(),
        ),
        Ok(k) => Ok(k),
        Err(_) => Err(format!(
            "proof_kind {n} is not a proof kind of cuzk.v1 (1 POREP_SEAL_COMMIT, \
             2 SNAP_DEALS_UPDATE, 3 WINDOW_POST_PARTITION, 4 WINNING_POST)"
        )),
    }
}

/// The gate's level of a proof kind: WinningPoSt > WindowPoSt > C2 =
/// SnapDeals.
pub fn kind_level(kind: ProofKind) -> Priority {
    match kind {
        ProofKind::WinningPost => PRIORITY_WINNING_POST,
        ProofKind::WindowPostPartition => PRIORITY_WINDOW_POST,
        ProofKind::PorepSealCommit | ProofKind::SnapDealsUpdate | ProofKind::Unspecified => {
            PRIORITY_C2
        }
    }
}

/// A request's priority on the gate: the kind's level moved within its
/// band (LOW -10, NORMAL and unspecified 0, HIGH +10, CRITICAL +20), so
/// that a CRITICAL C2 still yields to every WindowPoSt.
pub fn gate_priority(kind: ProofKind, priority: i32) -> Result<Priority, String> {
    let level = kind_level(kind);
    let p = CuzkPriority::try_from(priority).map_err(|_| {
        format!("priority {priority} is not one of cuzk.v1's (1 LOW to 4 CRITICAL)")
    })?;
    Ok(match p {
        CuzkPriority::Low => level - 10,
        CuzkPriority::Unspecified | CuzkPriority::Normal => level,
        CuzkPriority::High => level + 10,
        CuzkPriority::Critical => level + 20,
    })
}

/// The registered seal proof of the network's number: 0-4 `V1`, 5-9
/// `V1_1`, 10-14 `V1_1_Feat_SyntheticPoRep`, sizes 2 KiB, 8 MiB, 512 MiB,
/// 32 GiB, 64 GiB in each group. The name `RegisteredSeal` parses.
#[cfg(feature = "filecoin")]
pub fn registered_seal_name(n: u64) -> Result<String, String> {
    const SIZES: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];
    const VERSIONS: [&str; 3] = ["V1", "V1_1", "V1_1_Feat_SyntheticPoRep"];
    if n >= 15 {
        return Err(format!(
            "registered_proof {n} is not a seal proof this daemon proves (0 to 14: \
             StackedDrg V1, V1_1 and V1_1 synthetic PoRep)"
        ));
    }
    Ok(format!(
        "StackedDrg{}{}",
        SIZES[(n % 5) as usize],
        VERSIONS[(n / 5) as usize]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_id_address_payloads() {
        assert_eq!(prover_id_of_miner(0), [0u8; 32]);
        assert_eq!(&prover_id_of_miner(1)[..2], &[1, 0]);
        assert_eq!(&prover_id_of_miner(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id_of_miner(128)[..3], &[0x80, 0x01, 0]);
        assert_eq!(&prover_id_of_miner(1000)[..3], &[0xe8, 0x07, 0]);
        let max = prover_id_of_miner(u64::MAX);
        assert_eq!(
            &max[..10],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        assert!(max[10..].iter().all(|&b| b == 0));
    }

    #[test]
    fn kinds_and_priorities() {
        assert!(proof_kind(0).is_err());
        assert!(proof_kind(5).unwrap_err().contains("not a proof kind"));
        assert_eq!(proof_kind(1), Ok(ProofKind::PorepSealCommit));
        let c2_critical = gate_priority(ProofKind::PorepSealCommit, 4).unwrap();
        let window_low = gate_priority(ProofKind::WindowPostPartition, 1).unwrap();
        let winning_low = gate_priority(ProofKind::WinningPost, 1).unwrap();
        assert!(c2_critical < window_low && window_low < winning_low);
        assert_eq!(
            gate_priority(ProofKind::PorepSealCommit, 0),
            Ok(PRIORITY_C2)
        );
        assert_eq!(
            gate_priority(ProofKind::SnapDealsUpdate, 2),
            gate_priority(ProofKind::PorepSealCommit, 2)
        );
        assert!(gate_priority(ProofKind::WinningPost, 9).is_err());
    }

    #[cfg(feature = "filecoin")]
    #[test]
    fn registered_seal_numbers() {
        assert_eq!(registered_seal_name(5).unwrap(), "StackedDrg2KiBV1_1");
        assert_eq!(registered_seal_name(8).unwrap(), "StackedDrg32GiBV1_1");
        assert_eq!(registered_seal_name(0).unwrap(), "StackedDrg2KiBV1");
        assert_eq!(
            registered_seal_name(14).unwrap(),
            "StackedDrg64GiBV1_1_Feat_SyntheticPoRep"
        );
        assert!(registered_seal_name(15).is_err());
    }
}
