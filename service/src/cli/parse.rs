//! The value parsers of the command line's options: token, retention,
//! socket mode, device list and sector size.

const MAX_TOKEN_BYTES: usize = 4096;

/// A token is sent in a request header: visible ASCII only (no space, no
/// newline, no control character), 1 to 4096 bytes.
pub(super) fn parse_token(t: &str) -> Result<String, String> {
    if t.is_empty() {
        return Err("the token is empty".into());
    }
    if t.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "the token has {} bytes (at most {MAX_TOKEN_BYTES})",
            t.len()
        ));
    }
    if let Some((i, c)) = t.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(format!(
            "the token may hold visible ASCII only; byte {i} is {:?}",
            c
        ));
    }
    Ok(t.to_string())
}

/// A retention time: a whole number with a unit (s, m, h, d), 1 s to
/// 3650 days.
pub(super) fn parse_retention(s: &str) -> Result<std::time::Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("'{s}': a whole number and a unit, e.g. 90s, 30m, 24h, 7d"))?;
    let unit_s = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("'{s}': the unit is s, m, h or d (e.g. 24h)")),
    };
    let secs = n
        .checked_mul(unit_s)
        .filter(|t| (1..=3650 * 86_400).contains(t))
        .ok_or_else(|| format!("'{s}': between 1s and 3650d"))?;
    Ok(std::time::Duration::from_secs(secs))
}

/// An octal file mode of permission bits only (0660, 600).
pub(super) fn parse_socket_mode(s: &str) -> Result<u32, String> {
    let m = u32::from_str_radix(s.trim_start_matches("0o"), 8)
        .map_err(|_| format!("'{s}' is not an octal mode (e.g. 0660)"))?;
    if m > 0o777 {
        return Err(format!("'{s}': permission bits only (at most 0777)"));
    }
    Ok(m)
}

pub(super) fn parse_devices(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse()
                .map_err(|_| format!("bad device ordinal '{p}' in '{s}'"))
        })
        .collect()
}

/// A sector size: bytes, or what the Filecoin crate reads (2KiB, 32GiB).
pub(super) fn parse_sector_size(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(n);
    }
    #[cfg(feature = "filecoin")]
    {
        s.parse::<cuda_prover_filecoin::SectorSize>()
            .map(|z| z.bytes())
            .map_err(|e| format!("--sector-size {s}: {e}"))
    }
    #[cfg(not(feature = "filecoin"))]
    Err(format!("--sector-size {s}: give the size in bytes"))
}
