//! Priorities across concurrent runs on one engine. Every run that holds a
//! [`Ticket`] asks for its turn before taking its next item: it waits while
//! a run of higher priority still has items to take, and among runs of the
//! same priority the one that took an item least recently goes first
//! (fairness). Runs without a ticket are not ordered.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// Larger runs first. The named levels are the Filecoin order: a
/// WinningPoSt is due within seconds, a WindowPoSt within its deadline, a
/// C2 when it is done.
pub type Priority = u32;
pub const PRIORITY_WINNING_POST: Priority = 300;
pub const PRIORITY_WINDOW_POST: Priority = 200;
pub const PRIORITY_C2: Priority = 100;
/// Built-in circuit jobs, unless they say otherwise.
pub const PRIORITY_DEFAULT: Priority = 100;

struct RunEntry {
    priority: Priority,
    /// Items not yet taken.
    remaining: usize,
    /// Preparation threads of the run waiting for their turn.
    waiting: usize,
    /// The gate's clock when the run last took an item.
    last_turn: u64,
}

#[derive(Default)]
struct Inner {
    runs: BTreeMap<u64, RunEntry>,
    next_id: u64,
    clock: u64,
}

/// Shared by the runs of one engine (see `Engine::gate`).
#[derive(Default)]
pub struct PriorityGate {
    inner: Mutex<Inner>,
    turn: Condvar,
}

/// A run's place at the gate; leaves it when dropped.
pub struct Ticket {
    gate: Arc<PriorityGate>,
    id: u64,
}

impl PriorityGate {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Registers a run of `items` items.
    pub fn register(self: &Arc<Self>, priority: Priority, items: usize) -> Ticket {
        let mut g = self.inner.lock();
        let id = g.next_id;
        g.next_id += 1;
        let clock = g.clock;
        g.runs.insert(
            id,
            RunEntry {
                priority,
                remaining: items,
                waiting: 0,
                last_turn: clock,
            },
        );
        Ticket {
            gate: self.clone(),
            id,
        }
    }

    /// Runs with items left to take, as (priority, items left), most
    /// urgent first.
    pub fn pending(&self) -> Vec<(Priority, usize)> {
        let g = self.inner.lock();
        let mut v: Vec<_> = g
            .runs
            .values()
            .filter(|r| r.remaining > 0)
            .map(|r| (r.priority, r.remaining))
            .collect();
        v.sort_by_key(|r| std::cmp::Reverse(r.0));
        v
    }
}

impl Inner {
    fn my_turn(&self, id: u64) -> bool {
        let Some(me) = self.runs.get(&id) else {
            return true;
        };
        !self.runs.iter().any(|(&other, r)| {
            other != id
                && r.remaining > 0
                && (r.priority > me.priority
                    || (r.priority == me.priority
                        && r.waiting > 0
                        && (r.last_turn, other) < (me.last_turn, id)))
        })
    }
}

impl Ticket {
    /// Blocks until the run may take its next item, or `cancelled` says so.
    pub fn wait_turn(&self, cancelled: &dyn Fn() -> bool) {
        let mut g = self.gate.inner.lock();
        if let Some(r) = g.runs.get_mut(&self.id) {
            r.waiting += 1;
        }
        while !g.my_turn(self.id) && !cancelled() {
            // A timed wait: cancellation is a flag, not a notification.
            self.gate.turn.wait_for(&mut g, Duration::from_millis(20));
        }
        if let Some(r) = g.runs.get_mut(&self.id) {
            r.waiting -= 1;
        }
    }

    /// The run took an item; `remaining` are left to take.
    pub fn took(&self, remaining: usize) {
        let mut g = self.gate.inner.lock();
        g.clock += 1;
        let clock = g.clock;
        if let Some(r) = g.runs.get_mut(&self.id) {
            r.remaining = remaining;
            r.last_turn = clock;
        }
        drop(g);
        self.gate.turn.notify_all();
    }

    /// The run has nothing left to take (done, failed or cancelled).
    pub fn finish(&self) {
        let mut g = self.gate.inner.lock();
        if let Some(r) = g.runs.get_mut(&self.id) {
            r.remaining = 0;
        }
        drop(g);
        self.gate.turn.notify_all();
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.inner.lock().runs.remove(&self.id);
        self.gate.turn.notify_all();
    }
}
