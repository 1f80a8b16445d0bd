//! A single-threaded "something changed" event: waiters remember the version they saw and
//! sleep until it moves. Used for flush completion and per-queue new-record wakeups, so
//! nobody polls.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

/// Owned by one shard; never crosses threads (`Cell`/`RefCell` make it `!Sync`).
#[derive(Default)]
pub struct Event {
    version: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Event {
    /// The current version; pass it to [`Event::changed`] to wait for the next notify.
    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Bumps the version and wakes every waiter.
    pub fn notify(&self) {
        self.version.set(self.version.get() + 1);
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
    }

    /// Number of registered waiters (some may have been dropped since).
    pub fn waiter_count(&self) -> usize {
        self.wakers.borrow().len()
    }

    /// Resolves once the version differs from `seen`.
    pub async fn changed(&self, seen: u64) {
        poll_fn(|cx| {
            if self.version.get() != seen {
                return Poll::Ready(());
            }
            let mut wakers = self.wakers.borrow_mut();
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }
}
