//! The collector: puts items back in order, checks that each arrived once
//! and was proved by the device that owned it, and verifies every output.

use std::sync::atomic::Ordering;

use crate::error::EngineError;
use crate::state::RunState;
use crate::work::{ItemDone, Work};

pub(crate) fn collect<W: Work>(
    work: &W,
    results: Vec<Option<ItemDone<W::Output>>>,
    duplicates: &[usize],
    state: &RunState<'_>,
) -> Result<Vec<ItemDone<W::Output>>, EngineError> {
    if let Some(k) = duplicates.first() {
        return Err(EngineError::Collector(format!(
            "partition {k} arrived more than once"
        )));
    }
    let mut out = Vec::with_capacity(results.len());
    for (k, r) in results.into_iter().enumerate() {
        let d = r.ok_or_else(|| EngineError::Collector(format!("partition {k} never arrived")))?;
        let owner = state.owner[k].load(Ordering::SeqCst);
        let proved_on = work.proved_on(&d.output);
        if owner != d.device as i64 || proved_on != d.device {
            return Err(EngineError::Collector(format!(
                "partition {k} was owned by device {owner} but proved by device {proved_on} (worker {})",
                d.device
            )));
        }
        work.verify(k, &d.output)?;
        out.push(d);
    }
    Ok(out)
}
