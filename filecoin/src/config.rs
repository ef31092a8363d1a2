//! Proof configurations as the Filecoin network registers them: a sector
//! size and a version give filecoin-proofs' `PoRepConfig` (with the
//! network's porep id) and `PoStConfig`.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs::constants::{
    WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT,
    WINNING_POST_SECTOR_COUNT,
};
use filecoin_proofs::{PoRepConfig, PoStConfig, PoStType};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};

use crate::error::FilecoinError;
use crate::sector::SectorSize;

/// The seal proof versions this crate proves (non-interactive PoRep, an
/// aggregated proof, is not one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SealVersion {
    /// `StackedDrg*V1` (API 1.0.0).
    V1,
    /// `StackedDrg*V1_1` (API 1.1.0), what sealing workers use.
    V1_1,
    /// `StackedDrg*V1_1_Feat_SyntheticPoRep` (API 1.2.0).
    V1_1SyntheticPoRep,
}

impl SealVersion {
    fn suffix(self) -> &'static str {
        match self {
            SealVersion::V1 => "V1",
            SealVersion::V1_1 => "V1_1",
            SealVersion::V1_1SyntheticPoRep => "V1_1_Feat_SyntheticPoRep",
        }
    }

    /// The network's registered proof number of the first (2 KiB) size;
    /// the five production sizes follow in order.
    fn first_id(self) -> u64 {
        match self {
            SealVersion::V1 => 0,
            SealVersion::V1_1 => 5,
            SealVersion::V1_1SyntheticPoRep => 10,
        }
    }

    fn api(self) -> (ApiVersion, Vec<ApiFeature>) {
        match self {
            SealVersion::V1 => (ApiVersion::V1_0_0, vec![]),
            SealVersion::V1_1 => (ApiVersion::V1_1_0, vec![]),
            SealVersion::V1_1SyntheticPoRep => {
                (ApiVersion::V1_2_0, vec![ApiFeature::SyntheticPoRep])
            }
        }
    }
}

const PRODUCTION: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];

/// A registered seal proof: `StackedDrg2KiBV1_1` and the like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegisteredSeal {
    pub size: SectorSize,
    pub version: SealVersion,
}

impl RegisteredSeal {
    pub fn new(size: SectorSize, version: SealVersion) -> Self {
        Self { size, version }
    }

    /// The network's porep id: the registered proof number and a zero nonce,
    /// little endian. Sizes outside the five production ones (test sizes)
    /// get the number the next production size would have, offset by 100,
    /// so they never collide with a real one.
    pub fn porep_id(&self) -> [u8; 32] {
        let name = self.size.to_string();
        let number = match PRODUCTION.iter().position(|p| *p == name) {
            Some(i) => self.version.first_id() + i as u64,
            None => 100 + self.version.first_id() + self.size.bytes().trailing_zeros() as u64,
        };
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&number.to_le_bytes());
        id
    }

    pub fn porep_config(&self) -> Result<PoRepConfig, FilecoinError> {
        porep_config(self.size, self.version)
    }
}

impl fmt::Display for RegisteredSeal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StackedDrg{}{}", self.size, self.version.suffix())
    }
}

impl FromStr for RegisteredSeal {
    type Err = FilecoinError;
    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        let rest = s.strip_prefix("StackedDrg").ok_or_else(|| {
            FilecoinError::Input(format!("'{s}' is not a registered seal proof name"))
        })?;
        // Longest suffix first: V1_1_Feat_... before V1_1 before V1.
        for version in [
            SealVersion::V1_1SyntheticPoRep,
            SealVersion::V1_1,
            SealVersion::V1,
        ] {
            if let Some(size) = rest.strip_suffix(version.suffix()) {
                return Ok(RegisteredSeal::new(size.parse()?, version));
            }
        }
        Err(FilecoinError::Input(format!(
            "'{s}' is not a seal proof this prover supports (StackedDrg<size>V1, V1_1 or \
             V1_1_Feat_SyntheticPoRep)"
        )))
    }
}

/// filecoin-proofs' `PoRepConfig` of a size and version.
pub fn porep_config(size: SectorSize, version: SealVersion) -> Result<PoRepConfig, FilecoinError> {
    let (api, features) = version.api();
    let id = RegisteredSeal::new(size, version).porep_id();
    PoRepConfig::new_groth16_with_features(size.bytes(), id, api, features)
        .map_err(|e| FilecoinError::proofs("porep config", e))
}

/// Which proof of spacetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PostKind {
    Winning,
    Window,
}

impl PostKind {
    /// `winning` or `window`, as the command line and the daemon's
    /// `FilecoinPostJob.kind` name it.
    pub fn name(self) -> &'static str {
        match self {
            PostKind::Winning => "winning",
            PostKind::Window => "window",
        }
    }
}

impl fmt::Display for PostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PostKind {
    type Err = FilecoinError;
    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        [PostKind::Winning, PostKind::Window]
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                FilecoinError::Input(format!("'{s}' is not a PoSt kind (winning or window)"))
            })
    }
}

/// filecoin-proofs' `PoStConfig` as the network registers it: winning PoSt
/// at API 1.0.0 (`StackedDrgWinning*V1`), window PoSt at API 1.2.0
/// (`StackedDrgWindow*V1_2`).
pub fn post_config(size: SectorSize, kind: PostKind) -> Result<PoStConfig, FilecoinError> {
    Ok(match kind {
        PostKind::Winning => PoStConfig {
            sector_size: filecoin_proofs::SectorSize(size.bytes()),
            challenge_count: WINNING_POST_CHALLENGE_COUNT,
            sector_count: WINNING_POST_SECTOR_COUNT,
            typ: PoStType::Winning,
            priority: false,
            api_version: ApiVersion::V1_0_0,
        },
        PostKind::Window => {
            let sector_count = WINDOW_POST_SECTOR_COUNT
                .read()
                .map_err(|_| FilecoinError::Proofs("window post sector counts poisoned".into()))?
                .get(&size.bytes())
                .copied()
                .ok_or_else(|| {
                    FilecoinError::SectorSize(format!("no window PoSt sector count for {size}"))
                })?;
            PoStConfig {
                sector_size: filecoin_proofs::SectorSize(size.bytes()),
                challenge_count: WINDOW_POST_CHALLENGE_COUNT,
                sector_count,
                typ: PoStType::Window,
                priority: false,
                api_version: ApiVersion::V1_2_0,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ids_match_the_network() {
        let r: RegisteredSeal = "StackedDrg2KiBV1_1".parse().unwrap();
        assert_eq!(r, RegisteredSeal::new(SectorSize::KIB_2, SealVersion::V1_1));
        assert_eq!(r.to_string(), "StackedDrg2KiBV1_1");
        assert_eq!(r.porep_id()[0], 5);
        let r: RegisteredSeal = "StackedDrg32GiBV1_1_Feat_SyntheticPoRep".parse().unwrap();
        assert_eq!(r.porep_id()[0], 13);
        assert_eq!(
            "StackedDrg64GiBV1"
                .parse::<RegisteredSeal>()
                .unwrap()
                .porep_id()[0],
            4
        );
        assert!("StackedDrg2KiBV9".parse::<RegisteredSeal>().is_err());
        assert!("Foo".parse::<RegisteredSeal>().is_err());
    }
}
