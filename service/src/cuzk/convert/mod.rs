//! cuzk.v1's request fields in this daemon's terms: proof kinds and
//! priorities on the engine's gate, a miner id as a prover id, circuit
//! ids (here); the network's registered proof numbers (`registered.rs`),
//! commitments as CIDs (`cid.rs`) and vanilla proof lists (`vanilla.rs`)
//! for the Filecoin kinds.

#[cfg(feature = "filecoin")]
mod cid;
#[cfg(feature = "filecoin")]
mod registered;
#[cfg(feature = "filecoin")]
mod vanilla;

#[cfg(feature = "filecoin")]
pub use cid::{cid_of_commitment, commitment_of_cid, SEALED, UNSEALED};
#[cfg(feature = "filecoin")]
pub use registered::{post_sector_size, registered_seal_name, snap_sector_size};
#[cfg(feature = "filecoin")]
pub use vanilla::{vanilla_field, vanilla_list};

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

/// The name of a proof kind's queue in GetStatus (cuzk's names; the
/// cuda_prover.v1 API's built-in jobs under `built-in`).
pub fn queue_name(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepSealCommit => "porep-c2",
        ProofKind::SnapDealsUpdate => "snap-update",
        ProofKind::WindowPostPartition => "window-post",
        ProofKind::WinningPost => "winning-post",
        ProofKind::Unspecified => "built-in",
    }
}

/// The proof kind whose key a circuit id names, by cuzk's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `porep-`: commit phase 2 (the `V1_1` key).
    Porep,
    /// `snap-`: SnapDeals (empty-sector-update).
    SnapDeals,
    /// `wpost-`: WindowPoSt.
    WindowPost,
    /// `winning-`: WinningPoSt.
    WinningPost,
}

impl KeyKind {
    /// cuzk's prefix of the kind's circuit ids.
    pub fn prefix(self) -> &'static str {
        match self {
            KeyKind::Porep => "porep",
            KeyKind::SnapDeals => "snap",
            KeyKind::WindowPost => "wpost",
            KeyKind::WinningPost => "winning",
        }
    }
}

/// The forms of a circuit id, for messages.
pub const CIRCUIT_FORMS: &str = "porep-<size>, snap-<size>, wpost-<size> or winning-<size> \
     (porep-32g, winning-2k)";

/// What a PreloadSRS or EvictSRS circuit id names.
#[derive(Debug, PartialEq, Eq)]
pub enum Circuit {
    /// `<kind>-<size>`: the key of that kind for that sector size, in
    /// bytes.
    Key(KeyKind, u64),
    /// Anything else: a seal proof's name or a params file.
    Named(String),
}

/// Reads a circuit id: `<kind>-<size>` (kinds `porep`, `snap`, `wpost`,
/// `winning`) with the size as a number and a unit (`k`, `m`, `g`,
/// optionally followed by `ib`, any case), or a name.
pub fn circuit(id: &str) -> Result<Circuit, String> {
    if id.is_empty() {
        return Err(format!(
            "circuit_id is empty: {CIRCUIT_FORMS}, or a seal proof's name"
        ));
    }
    let Some((prefix, size)) = id.split_once('-') else {
        return Ok(Circuit::Named(id.to_string()));
    };
    let kind = match prefix {
        "porep" => KeyKind::Porep,
        "snap" => KeyKind::SnapDeals,
        "wpost" => KeyKind::WindowPost,
        "winning" => KeyKind::WinningPost,
        _ => return Ok(Circuit::Named(id.to_string())),
    };
    let lower = size.to_ascii_lowercase();
    let unit_at = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(unit_at);
    let shift = match unit.strip_suffix("ib").unwrap_or(unit) {
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => {
            return Err(format!(
                "circuit_id '{id}': the size '{size}' is not a number of k, m or g \
                 ({CIRCUIT_FORMS})"
            ))
        }
    };
    let n: u64 = digits
        .parse()
        .ok()
        .filter(|&n| n > 0 && n < 1 << 20)
        .ok_or_else(|| format!("circuit_id '{id}': the size '{size}' has no usable number"))?;
    Ok(Circuit::Key(kind, n << shift))
}

/// The circuit id of a kind's key for a sector size, as cuzk writes them
/// and [`circuit`] reads them: `porep-32g`, `wpost-2k`, `snap-512m`.
pub fn circuit_id(kind: KeyKind, bytes: u64) -> String {
    let size = match bytes {
        b if b != 0 && b % (1 << 30) == 0 => format!("{}g", b >> 30),
        b if b != 0 && b % (1 << 20) == 0 => format!("{}m", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}k", b >> 10),
        b => format!("{b}b"),
    };
    format!("{}-{size}", kind.prefix())
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

    #[test]
    fn circuit_ids() {
        use KeyKind::*;
        assert_eq!(circuit("porep-32g"), Ok(Circuit::Key(Porep, 32 << 30)));
        assert_eq!(circuit("porep-2k"), Ok(Circuit::Key(Porep, 2048)));
        assert_eq!(circuit("porep-512MiB"), Ok(Circuit::Key(Porep, 512 << 20)));
        assert_eq!(circuit("snap-32g"), Ok(Circuit::Key(SnapDeals, 32 << 30)));
        assert_eq!(circuit("wpost-64g"), Ok(Circuit::Key(WindowPost, 64 << 30)));
        assert_eq!(circuit("winning-2k"), Ok(Circuit::Key(WinningPost, 2048)));
        assert_eq!(circuit("snap-8m"), Ok(Circuit::Key(SnapDeals, 8 << 20)));
        for k in [Porep, SnapDeals, WindowPost, WinningPost] {
            let id = format!("{}-32g", k.prefix());
            assert_eq!(circuit(&id), Ok(Circuit::Key(k, 32 << 30)), "{id}");
        }
        assert_eq!(
            circuit("window-32g"),
            Ok(Circuit::Named("window-32g".into()))
        );
        assert!(circuit("winning-32t").is_err());
        assert_eq!(
            circuit("StackedDrg2KiBV1_1"),
            Ok(Circuit::Named("StackedDrg2KiBV1_1".into()))
        );
        assert!(circuit("").is_err());
        assert!(circuit("porep-32t").is_err());
        assert!(circuit("porep-g").is_err());
        // Written as cuzk writes them, and read back.
        for (k, bytes, id) in [
            (Porep, 32u64 << 30, "porep-32g"),
            (Porep, 64 << 30, "porep-64g"),
            (WindowPost, 2048, "wpost-2k"),
            (WinningPost, 8 << 20, "winning-8m"),
            (SnapDeals, 512 << 20, "snap-512m"),
        ] {
            assert_eq!(circuit_id(k, bytes), id);
            assert_eq!(circuit(id), Ok(Circuit::Key(k, bytes)), "{id}");
        }
        assert_eq!(queue_name(ProofKind::PorepSealCommit), "porep-c2");
        assert_eq!(queue_name(ProofKind::WinningPost), "winning-post");
    }
}
