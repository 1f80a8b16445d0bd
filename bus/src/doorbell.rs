//! A wake-up from any thread to one executor that cannot be lost (the stop signal): the same
//! wake primitive as a shard's bus, with one "rung" flag in place of the queues.

use crate::wake::{wake_pair, WakeReceiver, WakeSender};
use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

struct Shared {
    /// Set by a ring, cleared by the wait that returns for it: rings coalesce here.
    rung: AtomicBool,
    wake: WakeSender,
}

/// Rings a [`Listener`] from any thread.
#[derive(Clone)]
pub struct Bell(Arc<Shared>);

/// Waits, on one executor, for its [`Bell`] to ring.
pub struct Listener {
    shared: Arc<Shared>,
    /// The receiving end of the socket pair; each wait reads a duplicate through glommio,
    /// since a glommio socket belongs to the executor it was made on and this may move.
    socket: OwnedFd,
    waiting: Cell<bool>,
}

/// Makes a bell and its listener, on any thread.
pub fn doorbell() -> (Bell, Listener) {
    let (wake, socket) = wake_pair();
    let shared = Arc::new(Shared {
        rung: AtomicBool::new(false),
        wake,
    });
    let listener = Listener {
        shared: shared.clone(),
        socket,
        waiting: Cell::new(false),
    };
    (Bell(shared), listener)
}

impl Bell {
    /// Wakes the listener's current or next wait. Never blocks; rings before that wait
    /// returns count as one.
    pub fn ring(&self) {
        self.0.rung.store(true, Ordering::Relaxed);
        self.0.wake.notify();
    }
}

impl Listener {
    /// Returns once per one-or-more rings since the last return. One wait at a time; a wait
    /// costs a few syscalls (a `dup` and glommio's registration), fine for a stop signal.
    pub async fn wait(&self) {
        assert!(
            !self.waiting.replace(true),
            "a Listener has one waiter at a time"
        );
        let _waiting = Reset(&self.waiting);
        let socket = self
            .socket
            .try_clone()
            .expect("duplicate the doorbell socket");
        let mut receiver = WakeReceiver::new(socket);
        let shared = &self.shared;
        receiver
            .until(&shared.wake, || shared.rung.load(Ordering::Relaxed))
            .await;
        let was_rung = shared.rung.swap(false, Ordering::Relaxed);
        debug_assert!(was_rung, "only a wait clears the rung flag");
    }
}

/// Clears the one-waiter flag however the wait ends (returned or dropped).
struct Reset<'a>(&'a Cell<bool>);

impl Drop for Reset<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}
