//! The params file a PreloadSRS or EvictSRS circuit id names
//! (`filecoin_key`), and the daemon's Filecoin jobs that load and evict
//! it.

#[cfg(feature = "filecoin")]
use std::sync::Arc;

use tonic::Status;

#[cfg(feature = "filecoin")]
use crate::server::shown_id;

use super::{convert, Cuzk};

#[cfg(feature = "filecoin")]
type FilecoinHandle = Arc<crate::filecoin::FilecoinJobs>;
#[cfg(not(feature = "filecoin"))]
type FilecoinHandle = ();

impl Cuzk {
    /// The params file a PreloadSRS or EvictSRS circuit id names: a key as
    /// `<kind>-<size>` (`porep-32g`, `snap-32g`, `wpost-32g`,
    /// `winning-32g`, as GetStatus lists it) or a seal proof's name; for
    /// EvictSRS also a params file whose key is loaded (as cuda_prover.v1's
    /// Status lists it).
    pub(super) fn filecoin_key(
        &self,
        circuit_id: &str,
        loaded_path: bool,
    ) -> Result<(FilecoinHandle, std::path::PathBuf), Status> {
        let circuit = convert::circuit(circuit_id).map_err(Status::invalid_argument)?;
        #[cfg(feature = "filecoin")]
        {
            use crate::filecoin::FilecoinKey;
            use convert::{Circuit, KeyKind};
            use cuda_prover_filecoin::{FilecoinError, RegisteredSeal, SealVersion, SectorSize};
            let filecoin = self.service.jobs().filecoin_handle().ok_or_else(|| {
                Status::failed_precondition(
                    "this daemon takes no Filecoin jobs (started without them)",
                )
            })?;
            let bad = |e: String| Status::invalid_argument(e);
            let key = match circuit {
                Circuit::Key(kind, bytes) => {
                    let size = SectorSize::new(bytes)
                        .map_err(|e| bad(format!("circuit_id '{}': {e}", shown_id(circuit_id))))?;
                    match kind {
                        KeyKind::Porep => {
                            FilecoinKey::Porep(RegisteredSeal::new(size, SealVersion::V1_1))
                        }
                        KeyKind::SnapDeals => FilecoinKey::SnapDeals(size),
                        KeyKind::WindowPost => FilecoinKey::WindowPost(size),
                        KeyKind::WinningPost => FilecoinKey::WinningPost(size),
                    }
                }
                Circuit::Named(name) => match name.parse() {
                    Ok(r) => FilecoinKey::Porep(r),
                    Err(e) => {
                        let e: FilecoinError = e;
                        let path = std::path::PathBuf::from(&name);
                        if loaded_path && filecoin.loaded_keys().contains(&path) {
                            return Ok((filecoin, path));
                        }
                        return Err(bad(format!(
                            "circuit_id '{}' is neither {} nor a seal proof's name ({e})",
                            shown_id(&name),
                            convert::CIRCUIT_FORMS
                        )));
                    }
                },
            };
            // A size the kind's proofs do not have is the client's error.
            let params = filecoin.params_of(key).map_err(|e| match e {
                FilecoinError::SectorSize(m) => {
                    bad(format!("circuit_id '{}': {m}", shown_id(circuit_id)))
                }
                e => Status::failed_precondition(format!("{key}: {e}")),
            })?;
            Ok((filecoin, params))
        }
        #[cfg(not(feature = "filecoin"))]
        {
            let _ = (circuit, loaded_path);
            Err(Status::unimplemented(
                "this daemon was built without Filecoin jobs (feature filecoin)",
            ))
        }
    }
}
