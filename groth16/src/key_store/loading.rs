//! Loads in flight, one per key name: two callers asking for the same key
//! at once load it once (the second waits, then finds it resident), while
//! different keys load side by side.

use std::collections::HashSet;

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
pub(crate) struct LoadSlots {
    loading: Mutex<HashSet<String>>,
    done: Condvar,
}

/// The right to load one key; released on drop.
pub(crate) struct LoadSlot<'a> {
    slots: &'a LoadSlots,
    name: String,
}

impl LoadSlots {
    /// Waits until no one else loads `name`, then takes its slot.
    pub(crate) fn hold(&self, name: &str) -> LoadSlot<'_> {
        let mut loading = self.loading.lock();
        while loading.contains(name) {
            self.done.wait(&mut loading);
        }
        loading.insert(name.to_string());
        LoadSlot {
            slots: self,
            name: name.to_string(),
        }
    }
}

impl Drop for LoadSlot<'_> {
    fn drop(&mut self) {
        self.slots.loading.lock().remove(&self.name);
        self.slots.done.notify_all();
    }
}
