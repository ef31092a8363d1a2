//! Sector and piece commitments in requests: binary CIDv1s of Filecoin's
//! commitment codecs, as lotus and Curio encode them, or 32 bytes alone.

/// The multicodec of a sealed sector's CID (fil-commitment-sealed) and of
/// its data's (fil-commitment-unsealed), with their hash functions
/// (poseidon-bls12_381-a2-fc1, sha2-256-trunc254-padded).
pub const SEALED: (u64, u64) = (0xf102, 0xb401);
pub const UNSEALED: (u64, u64) = (0xf101, 0x1012);

/// Reads an unsigned LEB128 varint (at most 9 bytes, as multiformats allow).
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

#[cfg(test)]
mod tests {
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
}
