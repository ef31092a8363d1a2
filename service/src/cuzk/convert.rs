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

/// The sector sizes of the network's registered proof numbers, in the
/// order each group lists them.
#[cfg(feature = "filecoin")]
const REGISTERED_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// The sector size of a request: from `registered_proof` when it names
/// one (checked against `sector_size` when both are given), else from
/// `sector_size`, else 2 KiB (number 0). `allowed` are the numbers of the
/// kind; `what` names them for the error.
#[cfg(feature = "filecoin")]
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
#[cfg(feature = "filecoin")]
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
#[cfg(feature = "filecoin")]
pub fn snap_sector_size(registered_proof: u64, sector_size: u64) -> Result<u64, String> {
    registered_size(registered_proof, sector_size, 0..=4, "an update proof")
}

/// The multicodec of a sealed sector's CID (fil-commitment-sealed) and of
/// its data's (fil-commitment-unsealed), with their hash functions
/// (poseidon-bls12_381-a2-fc1, sha2-256-trunc254-padded).
#[cfg(feature = "filecoin")]
pub const SEALED: (u64, u64) = (0xf102, 0xb401);
#[cfg(feature = "filecoin")]
pub const UNSEALED: (u64, u64) = (0xf101, 0x1012);

/// Reads an unsigned LEB128 varint (at most 9 bytes, as multiformats allow).
#[cfg(feature = "filecoin")]
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The commitment a piece or sector CID carries: a binary CIDv1 of the
/// given codec and hash (`kind`), whose digest is the 32-byte commitment,
/// as lotus and Curio encode them; 32 bytes alone are taken as the
/// commitment itself.
#[cfg(feature = "filecoin")]
pub fn commitment_of_cid(b: &[u8], what: &str, kind: (u64, u64)) -> Result<[u8; 32], String> {
    if let Ok(c) = <[u8; 32]>::try_from(b) {
        return Ok(c);
    }
    if b.is_empty() {
        return Err(format!("{what} is empty (a CID or a 32-byte commitment)"));
    }
    let mut at = 0;
    let fields = (|| {
        Some((
            varint(b, &mut at)?,
            varint(b, &mut at)?,
            varint(b, &mut at)?,
            varint(b, &mut at)?,
        ))
    })();
    let Some((version, codec, hash, len)) = fields else {
        return Err(format!("{what}: not a binary CID ({} bytes)", b.len()));
    };
    if version != 1 {
        return Err(format!("{what}: CID version {version}, not 1"));
    }
    if (codec, hash) != kind {
        return Err(format!(
            "{what}: a CID of codec {codec:#x} and hash {hash:#x}, not {:#x} / {:#x}",
            kind.0, kind.1
        ));
    }
    if len != 32 || b.len() != at + 32 {
        return Err(format!(
            "{what}: a digest of {} bytes, not 32",
            b.len().saturating_sub(at)
        ));
    }
    let mut c = [0u8; 32];
    c.copy_from_slice(&b[at..]);
    Ok(c)
}

/// The binary CIDv1 of a commitment (what [`commitment_of_cid`] reads).
#[cfg(feature = "filecoin")]
pub fn cid_of_commitment(c: &[u8; 32], kind: (u64, u64)) -> Vec<u8> {
    let mut out = Vec::with_capacity(40);
    for mut v in [1, kind.0, kind.1, 32] {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(low);
                break;
            }
            out.push(low | 0x80);
        }
    }
    out.extend_from_slice(c);
    out
}

/// The vanilla proofs of a PoSt or SnapDeals request in `vanilla_proof`:
/// a JSON array of base64 strings, one vanilla proof each (a Go client's
/// `[][]byte` as `encoding/json` writes it).
#[cfg(feature = "filecoin")]
pub fn vanilla_list(b: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    use base64::Engine as _;
    if b.is_empty() {
        return Err(
            "vanilla_proof is empty: it takes the vanilla proofs, a JSON array \
                    of base64 strings"
                .into(),
        );
    }
    let strings: Vec<String> = serde_json::from_slice(b).map_err(|e| {
        format!("vanilla_proof is not a JSON array of base64 strings (the vanilla proofs): {e}")
    })?;
    strings
        .iter()
        .enumerate()
        .map(|(i, s)| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("vanilla_proof: entry {i} is not base64: {e}"))
        })
        .collect()
}

/// The `vanilla_proof` field of a list of vanilla proofs.
#[cfg(feature = "filecoin")]
pub fn vanilla_field(proofs: &[Vec<u8>]) -> Vec<u8> {
    use base64::Engine as _;
    let strings: Vec<String> = proofs
        .iter()
        .map(|p| base64::engine::general_purpose::STANDARD.encode(p))
        .collect();
    serde_json::to_vec(&strings).unwrap_or_default()
}

#[cfg(all(test, feature = "filecoin"))]
mod filecoin_tests {
    use super::*;

    #[test]
    fn cids_carry_commitments() {
        let c = [7u8; 32];
        let cid = cid_of_commitment(&c, SEALED);
        // CIDv1, fil-commitment-sealed, poseidon-bls12_381-a2-fc1, 32 bytes.
        assert_eq!(&cid[..8], &[0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20]);
        assert_eq!(commitment_of_cid(&cid, "x", SEALED), Ok(c));
        assert_eq!(commitment_of_cid(&c, "x", SEALED), Ok(c));
        assert!(commitment_of_cid(&cid, "x", UNSEALED)
            .unwrap_err()
            .contains("codec"));
        assert!(commitment_of_cid(&cid[..20], "x", SEALED).is_err());
        assert!(commitment_of_cid(&[], "x", SEALED)
            .unwrap_err()
            .contains("empty"));
        assert!(commitment_of_cid(&[0xff; 12], "x", SEALED).is_err());
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

    #[test]
    fn vanilla_lists_are_json_arrays_of_base64() {
        let v = vec![vec![1u8, 2, 3], vec![], vec![255; 40]];
        assert_eq!(vanilla_list(&vanilla_field(&v)), Ok(v));
        assert!(vanilla_list(b"").is_err());
        assert!(vanilla_list(b"[\"!!\"]").unwrap_err().contains("base64"));
        assert!(vanilla_list(b"{}").unwrap_err().contains("JSON array"));
    }
}
