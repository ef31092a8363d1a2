//! Where filecoin-proofs keeps one circuit's parameter files (its cache
//! identifier, `.params`, `.vk`, `.meta`), in the selected directory.

use filecoin_proofs::{MerkleTreeTrait, PoRepConfig, PoStConfig, TreeRHasher};
use std::path::PathBuf;
use storage_proofs_core::parameter_cache::{
    parameter_cache_metadata_path, parameter_cache_params_path, parameter_cache_verifying_key_path,
};

use super::TestCircuit;
use crate::config::{porep_config, post_config, PostKind, SealVersion};
use crate::error::{FilecoinError, Result};
use crate::update::{update_cache_identifier, update_public_params};
use crate::with_sector_shape;

/// Where filecoin-proofs keeps one circuit's files.
pub struct ParameterFiles {
    /// The cache identifier (`stacked-proof-of-replication-...`).
    pub id: String,
    pub params: PathBuf,
    pub vk: PathBuf,
    pub meta: PathBuf,
}

/// The files of a test circuit in the current parameter directory.
pub fn parameter_files(circuit: TestCircuit) -> Result<ParameterFiles> {
    match circuit {
        TestCircuit::Porep(size) => {
            let config = porep_config(size, SealVersion::V1_1)?;
            with_sector_shape!(size, porep_files, &config)
        }
        TestCircuit::WinningPost(size) => {
            let config = post_config(size, PostKind::Winning)?;
            with_sector_shape!(size, post_files, &config)
        }
        TestCircuit::WindowPost(size) => {
            let config = post_config(size, PostKind::Window)?;
            with_sector_shape!(size, post_files, &config)
        }
        TestCircuit::SnapDeals(size) => {
            let pp = update_public_params(size.bytes())?;
            with_sector_shape!(size, update_files, &pp)
        }
    }
}

fn update_files<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &storage_proofs_update::PublicParams,
) -> Result<ParameterFiles> {
    let id = update_cache_identifier::<Tree>(pp);
    Ok(ParameterFiles {
        params: parameter_cache_params_path(&id),
        vk: parameter_cache_verifying_key_path(&id),
        meta: parameter_cache_metadata_path(&id),
        id,
    })
}

fn porep_files<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<ParameterFiles> {
    let e = |e: anyhow::Error| FilecoinError::proofs("parameter paths", e);
    Ok(ParameterFiles {
        id: config.get_cache_identifier::<Tree>().map_err(e)?,
        params: config.get_cache_params_path::<Tree>().map_err(e)?,
        vk: config.get_cache_verifying_key_path::<Tree>().map_err(e)?,
        meta: config.get_cache_metadata_path::<Tree>().map_err(e)?,
    })
}

fn post_files<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<ParameterFiles> {
    let e = |e: anyhow::Error| FilecoinError::proofs("parameter paths", e);
    Ok(ParameterFiles {
        id: config.get_cache_identifier::<Tree>().map_err(e)?,
        params: config.get_cache_params_path::<Tree>().map_err(e)?,
        vk: config.get_cache_verifying_key_path::<Tree>().map_err(e)?,
        meta: config.get_cache_metadata_path::<Tree>().map_err(e)?,
    })
}
