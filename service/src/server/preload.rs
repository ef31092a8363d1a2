//! The keys named ahead of jobs: a `--preload` entry checked against the
//! daemon (`preload_target`) and its key loaded and pinned (`preload_key`),
//! and the key a Preload or Evict request names (`key_ref`).

#[cfg(feature = "filecoin")]
use std::sync::Arc;

use cuda_prover_pipeline::circuits::Kind;
use tonic::Status;

use crate::errors::ServiceError;
use crate::health::Preload;
use crate::keys::Keys;
use crate::proto;

use super::Service;

impl Service {
    /// Checks a preload entry against this daemon (its limits, params
    /// dirs, Filecoin jobs) without loading anything.
    pub(super) fn preload_target(&self, p: &Preload) -> Result<PreloadTarget, String> {
        match p {
            Preload::BuiltIn {
                kind,
                log_constraints,
                params_dir,
            } => {
                if *log_constraints > self.config.max_log_constraints {
                    return Err(format!(
                        "preload {p}: log_constraints {log_constraints} is above this daemon's \
                         limit of {}",
                        self.config.max_log_constraints
                    ));
                }
                cuda_prover_pipeline::circuits::BuiltIn::new(*kind, *log_constraints, 0)
                    .map_err(|e| format!("preload {p}: {e}"))?;
                let dir = self
                    .jobs
                    .keys()
                    .resolve_dir(params_dir)
                    .map_err(|e| format!("preload {p}: {e}"))?;
                Ok(PreloadTarget::BuiltIn(*kind, *log_constraints, dir))
            }
            #[cfg(feature = "filecoin")]
            Preload::Filecoin(kind, arg) => {
                use crate::filecoin::FilecoinKey;
                use crate::health::FilecoinPreload;
                use cuda_prover_filecoin::{RegisteredSeal, SealVersion, SectorSize};
                let filecoin = self.jobs.filecoin_handle().ok_or_else(|| {
                    format!("preload {p}: this daemon takes no Filecoin jobs (--no-filecoin)")
                })?;
                let e = |e: cuda_prover_filecoin::FilecoinError| format!("preload {p}: {e}");
                let key = if *kind == FilecoinPreload::C2 && arg.starts_with("StackedDrg") {
                    FilecoinKey::Porep(arg.parse::<RegisteredSeal>().map_err(e)?)
                } else {
                    let size: SectorSize = arg.parse().map_err(e)?;
                    match kind {
                        FilecoinPreload::C2 => {
                            FilecoinKey::Porep(RegisteredSeal::new(size, SealVersion::V1_1))
                        }
                        FilecoinPreload::WinningPost => FilecoinKey::WinningPost(size),
                        FilecoinPreload::WindowPost => FilecoinKey::WindowPost(size),
                        FilecoinPreload::SnapDeals => FilecoinKey::SnapDeals(size),
                    }
                };
                let params = filecoin.params_of(key).map_err(e)?;
                Ok(PreloadTarget::Filecoin(filecoin, params))
            }
            #[cfg(not(feature = "filecoin"))]
            Preload::Filecoin(..) => Err(format!(
                "preload {p}: this daemon was built without Filecoin jobs (feature filecoin)"
            )),
        }
    }

    /// Loads and pins a preload entry's key (blocking).
    pub(crate) fn preload_key(&self, p: &Preload) -> Result<(), String> {
        match self.preload_target(p)? {
            PreloadTarget::BuiltIn(kind, log, dir) => self
                .jobs
                .keys()
                .get(kind, log, &dir, true)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            #[cfg(feature = "filecoin")]
            PreloadTarget::Filecoin(filecoin, params) => filecoin
                .preload(&params)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    /// The key a preload or evict request names: its circuit, its params
    /// dir (within the configured ones) and its name among resident keys.
    pub(super) fn key_ref(
        &self,
        r: &proto::KeyRequest,
    ) -> Result<(Kind, std::path::PathBuf, String), Status> {
        let kind: Kind = r
            .circuit
            .parse()
            .map_err(|e: String| ServiceError::InvalidRequest(format!("circuit: {e}")))?;
        let dir = self
            .jobs
            .keys()
            .resolve_dir(&r.params_dir)
            .map_err(ServiceError::PermissionDenied)?;
        let name = Keys::name(kind, r.log_constraints, &dir);
        Ok((kind, dir, name))
    }
}

/// A preload entry resolved against the daemon.
pub(super) enum PreloadTarget {
    BuiltIn(Kind, u32, std::path::PathBuf),
    #[cfg(feature = "filecoin")]
    /// A Filecoin key (C2, PoSt, SnapDeals): its params file.
    Filecoin(Arc<crate::filecoin::FilecoinJobs>, std::path::PathBuf),
}
