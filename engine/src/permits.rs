//! A counting semaphore bounding the prepared items of a run in flight.

use crossbeam_channel::{bounded, Receiver, Sender};

pub(crate) struct Permits {
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Permits {
    pub(crate) fn new(n: usize) -> Self {
        let (tx, rx) = bounded(n);
        for _ in 0..n {
            tx.send(()).expect("fresh channel");
        }
        Self { tx, rx }
    }

    pub(crate) fn acquire(&self) {
        self.rx.recv().expect("permits live as long as the run");
    }

    pub(crate) fn release(&self) {
        let _ = self.tx.send(());
    }
}
