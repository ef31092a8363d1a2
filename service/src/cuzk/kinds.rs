//! The cuzk proof kind a job counts under (`kind_of`) and the kinds
//! GetStatus lists a queue of (`QUEUE_KINDS`).

use crate::cuzk_proto::ProofKind;
use crate::jobs::Work;

/// The cuzk proof kind a job counts under (built-in jobs: unspecified).
pub fn kind_of(work: &Work) -> ProofKind {
    match work {
        Work::BuiltIn => ProofKind::Unspecified,
        #[cfg(feature = "filecoin")]
        Work::FilecoinC2(_) => ProofKind::PorepSealCommit,
        #[cfg(feature = "filecoin")]
        Work::FilecoinPost(p) => match p.job {
            cuda_prover_filecoin::vanilla::PostJob::Winning => ProofKind::WinningPost,
            _ => ProofKind::WindowPostPartition,
        },
        #[cfg(feature = "filecoin")]
        Work::FilecoinSnap(_) => ProofKind::SnapDealsUpdate,
    }
}

/// The kinds GetStatus lists a queue of, in its order.
pub(super) const QUEUE_KINDS: [ProofKind; 5] = [
    ProofKind::PorepSealCommit,
    ProofKind::SnapDealsUpdate,
    ProofKind::WindowPostPartition,
    ProofKind::WinningPost,
    ProofKind::Unspecified,
];
