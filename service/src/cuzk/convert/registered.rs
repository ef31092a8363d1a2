//! The network's registered proof numbers in this daemon's terms: a seal
//! proof's name, and the sector size of a PoSt or SnapDeals request.

use crate::cuzk_proto::ProofKind;

/// The registered seal proof of the network's number: 0-4 `V1`, 5-9
/// `V1_1`, 10-14 `V1_1_Feat_SyntheticPoRep`, sizes 2 KiB, 8 MiB, 512 MiB,
/// 32 GiB, 64 GiB in each group. The name `RegisteredSeal` parses.
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

/// The sector sizes of the network's registered proof numbers, in the
/// order each group lists them.
const REGISTERED_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// The sector size of a request: from `registered_proof` when it names
/// one (checked against `sector_size` when both are given), else from
/// `sector_size`, else 2 KiB (number 0). `allowed` are the numbers of the
/// kind; `what` names them for the error.
fn registered_size(
    registered_proof: u64,
    sector_size: u64,
    allowed: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<u64, String> {
    if registered_proof == 0 && sector_size != 0 {
        return Ok(sector_size);
    }
    if !allowed.contains(&registered_proof) {
        return Err(format!(
            "registered_proof {registered_proof} is not {what} this daemon proves \
             ({} to {})",
            allowed.start(),
            allowed.end()
        ));
    }
    let size = REGISTERED_SIZES[(registered_proof % 5) as usize];
    if sector_size != 0 && sector_size != size {
        return Err(format!(
            "sector_size {sector_size} disagrees with registered_proof {registered_proof} \
             ({size} bytes)"
        ));
    }
    Ok(size)
}

/// The sector size of a PoSt request. The network's PoSt numbers: 0-4
/// StackedDrgWinning V1, 5-9 StackedDrgWindow V1 (retired: API 1.0 window
/// proofs are no longer accepted by the chain), 10-14 StackedDrgWindow V1_1
/// (filecoin-proofs' V1_2), 2 KiB first in each group.
pub fn post_sector_size(
    kind: ProofKind,
    registered_proof: u64,
    sector_size: u64,
) -> Result<u64, String> {
    match kind {
        ProofKind::WinningPost => {
            registered_size(registered_proof, sector_size, 0..=4, "a winning PoSt proof")
        }
        _ => {
            if (5..=9).contains(&registered_proof) {
                return Err(format!(
                    "registered_proof {registered_proof} is a V1 window PoSt, which this \
                     daemon does not prove (10 to 14: StackedDrgWindow V1_1)"
                ));
            }
            if registered_proof == 0 {
                // 0 is a winning number: the request leaves the proof unnamed.
                return Ok(if sector_size == 0 {
                    2 << 10
                } else {
                    sector_size
                });
            }
            registered_size(
                registered_proof,
                sector_size,
                10..=14,
                "a window PoSt proof",
            )
        }
    }
}

/// The sector size of a SnapDeals request: the network's update proof
/// numbers 0-4 (StackedDrg*V1, 2 KiB first).
pub fn snap_sector_size(registered_proof: u64, sector_size: u64) -> Result<u64, String> {
    registered_size(registered_proof, sector_size, 0..=4, "an update proof")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    #[test]
    fn registered_post_and_update_numbers() {
        assert_eq!(post_sector_size(ProofKind::WinningPost, 0, 0), Ok(2048));
        assert_eq!(post_sector_size(ProofKind::WinningPost, 3, 0), Ok(32 << 30));
        assert!(post_sector_size(ProofKind::WinningPost, 10, 0).is_err());
        assert_eq!(
            post_sector_size(ProofKind::WindowPostPartition, 10, 2048),
            Ok(2048)
        );
        assert_eq!(
            post_sector_size(ProofKind::WindowPostPartition, 0, 0),
            Ok(2048)
        );
        assert!(post_sector_size(ProofKind::WindowPostPartition, 5, 0)
            .unwrap_err()
            .contains("V1 window"));
        assert!(post_sector_size(ProofKind::WindowPostPartition, 13, 2048)
            .unwrap_err()
            .contains("disagrees"));
        assert_eq!(snap_sector_size(3, 0), Ok(32 << 30));
        assert!(snap_sector_size(5, 0).is_err());
    }
}
