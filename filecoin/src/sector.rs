//! Sector sizes and the merkle-tree shape each one uses, chosen at run time
//! without panicking on an unknown size.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs::constants::{
    SECTOR_SIZE_16_KIB, SECTOR_SIZE_16_MIB, SECTOR_SIZE_1_GIB, SECTOR_SIZE_2_KIB,
    SECTOR_SIZE_32_GIB, SECTOR_SIZE_32_KIB, SECTOR_SIZE_4_KIB, SECTOR_SIZE_512_MIB,
    SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};

use crate::error::FilecoinError;

/// A sector size filecoin-proofs has a tree shape for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SectorSize(u64);

const ALL: [(u64, &str); 10] = [
    (SECTOR_SIZE_2_KIB, "2KiB"),
    (SECTOR_SIZE_4_KIB, "4KiB"),
    (SECTOR_SIZE_16_KIB, "16KiB"),
    (SECTOR_SIZE_32_KIB, "32KiB"),
    (SECTOR_SIZE_8_MIB, "8MiB"),
    (SECTOR_SIZE_16_MIB, "16MiB"),
    (SECTOR_SIZE_512_MIB, "512MiB"),
    (SECTOR_SIZE_1_GIB, "1GiB"),
    (SECTOR_SIZE_32_GIB, "32GiB"),
    (SECTOR_SIZE_64_GIB, "64GiB"),
];

impl SectorSize {
    pub const KIB_2: SectorSize = SectorSize(SECTOR_SIZE_2_KIB);
    pub const KIB_4: SectorSize = SectorSize(SECTOR_SIZE_4_KIB);

    /// Bytes; an error for a size filecoin-proofs has no shape for.
    pub fn new(bytes: u64) -> Result<Self, FilecoinError> {
        if ALL.iter().any(|(b, _)| *b == bytes) {
            Ok(SectorSize(bytes))
        } else {
            Err(FilecoinError::SectorSize(format!(
                "{bytes} bytes is not a sector size filecoin-proofs supports ({})",
                ALL.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
            )))
        }
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Merkle leaves (32-byte nodes) of the sector.
    pub fn nodes(self) -> u64 {
        self.0 / 32
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ALL.iter().find(|(b, _)| *b == self.0).map(|(_, n)| *n);
        match name {
            Some(n) => f.write_str(n),
            None => write!(f, "{} bytes", self.0),
        }
    }
}

impl FromStr for SectorSize {
    type Err = FilecoinError;
    /// `2KiB`, `2kib`, `32GiB` or a byte count.
    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        let t = s.trim();
        if let Ok(bytes) = t.parse::<u64>() {
            return SectorSize::new(bytes);
        }
        ALL.iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(t))
            .map(|(b, _)| SectorSize(*b))
            .ok_or_else(|| {
                FilecoinError::SectorSize(format!(
                    "'{s}' is not a sector size (expected one of {})",
                    ALL.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
                ))
            })
    }
}

/// Calls `$f::<Tree>(args...)` with the tree shape of a `SectorSize`.
/// Every size `SectorSize` accepts has a shape, so the match is total.
#[macro_export]
#[doc(hidden)]
macro_rules! with_sector_shape {
    ($size:expr, $f:ident $(, $args:expr)* $(,)?) => {{
        use $crate::__filecoin_proofs::constants as fc;
        match $crate::SectorSize::bytes($size) {
            fc::SECTOR_SIZE_2_KIB => $f::<fc::SectorShape2KiB>($($args),*),
            fc::SECTOR_SIZE_4_KIB => $f::<fc::SectorShape4KiB>($($args),*),
            fc::SECTOR_SIZE_16_KIB => $f::<fc::SectorShape16KiB>($($args),*),
            fc::SECTOR_SIZE_32_KIB => $f::<fc::SectorShape32KiB>($($args),*),
            fc::SECTOR_SIZE_8_MIB => $f::<fc::SectorShape8MiB>($($args),*),
            fc::SECTOR_SIZE_16_MIB => $f::<fc::SectorShape16MiB>($($args),*),
            fc::SECTOR_SIZE_512_MIB => $f::<fc::SectorShape512MiB>($($args),*),
            fc::SECTOR_SIZE_1_GIB => $f::<fc::SectorShape1GiB>($($args),*),
            fc::SECTOR_SIZE_32_GIB => $f::<fc::SectorShape32GiB>($($args),*),
            _ => $f::<fc::SectorShape64GiB>($($args),*),
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_bytes() {
        assert_eq!("2KiB".parse::<SectorSize>().unwrap(), SectorSize::KIB_2);
        assert_eq!("2048".parse::<SectorSize>().unwrap(), SectorSize::KIB_2);
        assert_eq!(
            "32gib".parse::<SectorSize>().unwrap().bytes(),
            SECTOR_SIZE_32_GIB
        );
        assert!("3KiB".parse::<SectorSize>().is_err());
        assert!(SectorSize::new(1000).is_err());
        assert_eq!(SectorSize::KIB_2.to_string(), "2KiB");
    }
}
