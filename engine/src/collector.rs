//! The collector: checks each item as it arrives (proved by the device that
//! owned it, and its output verified), while the others are still being
//! proved; at the end it puts the items back in order and checks that each
//! arrived once.

use std::sync::atomic::Ordering;

use crate::error::EngineError;
use crate::state::RunState;
use crate::work::{ItemDone, Work};

/// One item as it arrives: its owner and its output. An error fails the
/// run (fail-fast).
pub(crate) fn check_item<W: Work>(
    work: &W,
    d: &ItemDone<W::Output>,
    state: &RunState<'_>,
) -> Result<(), EngineError> {
    let k = d.item;
    let owner = state.owner[k].load(Ordering::SeqCst);
    let proved_on = work.proved_on(&d.output);
    if owner != d.device as i64 || proved_on != d.device {
        return Err(EngineError::Collector(format!(
            "item {k} was owned by device {owner} but proved by device {proved_on} (worker {})",
            d.device
        )));
    }
    work.verify(k, &d.output)
}

/// The items in order, once every one arrived and passed [`check_item`].
pub(crate) fn collect<O>(
    results: Vec<Option<ItemDone<O>>>,
    duplicates: &[usize],
) -> Result<Vec<ItemDone<O>>, EngineError> {
    if let Some(k) = duplicates.first() {
        return Err(EngineError::Collector(format!(
            "item {k} arrived more than once"
        )));
    }
    let mut out = Vec::with_capacity(results.len());
    for (k, r) in results.into_iter().enumerate() {
        let d = r.ok_or_else(|| EngineError::Collector(format!("item {k} never arrived")))?;
        out.push(d);
    }
    Ok(out)
}
