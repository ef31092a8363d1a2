//! Which keys stay resident: an LRU bounded by a byte budget (the
//! [`crate::KeyStore`] counts host bytes). Pinned keys (preloaded) are never evicted; the
//! least recently used of the others go first when a new key needs room.
//! The cache holds `Arc`s: a key evicted while a job proves with it lives
//! until that job ends.

use std::sync::Arc;

/// One resident key as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resident {
    pub name: String,
    pub bytes: u64,
    pub pinned: bool,
}

struct Entry<V> {
    name: String,
    value: Arc<V>,
    bytes: u64,
    pinned: bool,
    last_use: u64,
}

pub struct Residency<V> {
    budget: u64,
    entries: Vec<Entry<V>>,
    clock: u64,
    evictions: u64,
}

impl<V> Residency<V> {
    pub fn new(budget_bytes: u64) -> Self {
        Self {
            budget: budget_bytes,
            entries: Vec::new(),
            clock: 0,
            evictions: 0,
        }
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Bytes of the resident keys.
    pub fn used(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// Keys evicted to make room, since the start.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The key, marked as just used.
    pub fn get(&mut self, name: &str) -> Option<Arc<V>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.iter_mut().find(|e| e.name == name).map(|e| {
            e.last_use = clock;
            e.value.clone()
        })
    }

    /// The key, without marking it as used.
    pub fn peek(&self, name: &str) -> Option<Arc<V>> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.value.clone())
    }

    /// Pins or unpins a resident key; false when it is not resident.
    pub fn set_pinned(&mut self, name: &str, pinned: bool) -> bool {
        match self.entries.iter_mut().find(|e| e.name == name) {
            Some(e) => {
                e.pinned = pinned;
                true
            }
            None => false,
        }
    }

    /// Adds a key (or pins it, when `pin` and it is there), evicting the
    /// least recently used unpinned keys until it fits. Returns the names
    /// evicted; an error when it cannot fit even with every unpinned key
    /// gone (nothing is evicted then).
    pub fn insert(
        &mut self,
        name: &str,
        value: Arc<V>,
        bytes: u64,
        pin: bool,
    ) -> Result<Vec<String>, String> {
        self.insert_evicting(name, value, bytes, pin)
            .map(|v| v.into_iter().map(|(n, _)| n).collect())
    }

    /// [`Residency::insert`], returning the evicted keys themselves.
    pub fn insert_evicting(
        &mut self,
        name: &str,
        value: Arc<V>,
        bytes: u64,
        pin: bool,
    ) -> Result<Vec<(String, Arc<V>)>, String> {
        self.clock += 1;
        let clock = self.clock;
        if let Some(e) = self.entries.iter_mut().find(|e| e.name == name) {
            e.last_use = clock;
            e.pinned |= pin;
            return Ok(Vec::new());
        }
        let pinned: u64 = self
            .entries
            .iter()
            .filter(|e| e.pinned)
            .map(|e| e.bytes)
            .sum();
        if pinned.saturating_add(bytes) > self.budget {
            return Err(format!(
                "key {name} needs {} MiB but only {} MiB of the {} MiB key budget are not pinned",
                bytes >> 20,
                self.budget.saturating_sub(pinned) >> 20,
                self.budget >> 20
            ));
        }
        let mut evicted = Vec::new();
        while self.used().saturating_add(bytes) > self.budget {
            let lru = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.pinned)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(i, _)| i)
                .expect("unpinned keys cover the shortfall");
            let e = self.entries.remove(lru);
            evicted.push((e.name, e.value));
            self.evictions += 1;
        }
        self.entries.push(Entry {
            name: name.to_string(),
            value,
            bytes,
            pinned: pin,
            last_use: clock,
        });
        Ok(evicted)
    }

    /// Drops a key, pinned or not; false when it was not resident.
    pub fn evict(&mut self, name: &str) -> bool {
        self.remove(name).is_some()
    }

    /// Drops a key, pinned or not, and returns it.
    pub fn remove(&mut self, name: &str) -> Option<Arc<V>> {
        let i = self.entries.iter().position(|e| e.name == name)?;
        Some(self.entries.remove(i).value)
    }

    /// The resident keys, most recently used first.
    pub fn list(&self) -> Vec<Resident> {
        let mut v: Vec<&Entry<V>> = self.entries.iter().collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.last_use));
        v.into_iter()
            .map(|e| Resident {
                name: e.name.clone(),
                bytes: e.bytes,
                pinned: e.pinned,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_unpinned_key_goes_first() {
        let mut r = Residency::new(300);
        assert!(r.insert("a", Arc::new(1), 100, true).unwrap().is_empty());
        r.insert("b", Arc::new(2), 100, false).unwrap();
        r.insert("c", Arc::new(3), 100, false).unwrap();
        assert_eq!(r.get("b"), Some(Arc::new(2)));
        // c is the least recently used unpinned key; a is pinned.
        assert_eq!(r.insert("d", Arc::new(4), 100, false).unwrap(), vec!["c"]);
        let names: Vec<String> = r.list().into_iter().map(|k| k.name).collect();
        assert_eq!(names, vec!["d", "b", "a"]);
        assert_eq!(r.evictions(), 1);
        // Two keys' room: b and d go, a stays.
        assert_eq!(
            r.insert("e", Arc::new(5), 200, false).unwrap(),
            vec!["b", "d"]
        );
        assert_eq!(r.used(), 300);
        // More than the unpinned room: refused, nothing evicted.
        let err = r.insert("f", Arc::new(6), 250, false).unwrap_err();
        assert!(err.contains("key budget"), "{err}");
        assert_eq!(r.list().len(), 2);
        assert!(r.evict("a"));
        assert!(!r.evict("a"));
    }
}
