//! The vanilla proofs of a PoSt or SnapDeals request when they come in
//! `vanilla_proof`: a JSON array of base64 strings.

/// The vanilla proofs of a PoSt or SnapDeals request in `vanilla_proof`:
/// a JSON array of base64 strings, one vanilla proof each (a Go client's
/// `[][]byte` as `encoding/json` writes it).
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
pub fn vanilla_field(proofs: &[Vec<u8>]) -> Vec<u8> {
    use base64::Engine as _;
    let strings: Vec<String> = proofs
        .iter()
        .map(|p| base64::engine::general_purpose::STANDARD.encode(p))
        .collect();
    serde_json::to_vec(&strings).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vanilla_lists_are_json_arrays_of_base64() {
        let v = vec![vec![1u8, 2, 3], vec![], vec![255; 40]];
        assert_eq!(vanilla_list(&vanilla_field(&v)), Ok(v));
        assert!(vanilla_list(b"").is_err());
        assert!(vanilla_list(b"[\"!!\"]").unwrap_err().contains("base64"));
        assert!(vanilla_list(b"{}").unwrap_err().contains("JSON array"));
    }
}
