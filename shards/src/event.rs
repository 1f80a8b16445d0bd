//! A single-threaded "something changed" event: waiters remember the version they saw and
//! sleep until it moves. Used for flush progress and per-queue new-record wakeups, so nobody
//! polls. A waiter that is dropped (a long poll that timed out) deregisters at once, so the
//! waiter count stays exact and bounded by the callers' limits.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Owned by one shard; never crosses threads (`Cell`/`RefCell` make it `!Sync`).
#[derive(Default)]
pub struct Event {
    version: Cell<u64>,
    waiter_next: Cell<u64>,
    waiters: RefCell<Vec<(u64, Waker)>>,
}

impl Event {
    /// The current version; pass it to [`Event::changed`] to wait for the next notify.
    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Bumps the version and wakes every waiter.
    pub fn notify(&self) {
        self.version.set(self.version.get() + 1);
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for (_, waker) in waiters {
            waker.wake();
        }
    }

    /// Number of waiters currently registered.
    pub fn waiter_count(&self) -> usize {
        self.waiters.borrow().len()
    }

    /// Resolves once the version differs from `seen`.
    pub fn changed(&self, seen: u64) -> Changed<'_> {
        Changed {
            event: self,
            seen,
            id: None,
        }
    }

    fn deregister(&self, id: u64) {
        self.waiters.borrow_mut().retain(|(i, _)| *i != id);
    }
}

/// The future of [`Event::changed`].
pub struct Changed<'a> {
    event: &'a Event,
    seen: u64,
    id: Option<u64>,
}

impl Future for Changed<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let event = self.event;
        if event.version.get() != self.seen {
            if let Some(id) = self.id.take() {
                event.deregister(id);
            }
            return Poll::Ready(());
        }
        let mut waiters = event.waiters.borrow_mut();
        match self
            .id
            .and_then(|id| waiters.iter_mut().find(|(i, _)| *i == id))
        {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => {
                let id = event.waiter_next.get();
                event.waiter_next.set(id + 1);
                waiters.push((id, cx.waker().clone()));
                drop(waiters);
                self.id = Some(id);
            }
        }
        Poll::Pending
    }
}

impl Drop for Changed<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.event.deregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::{block_on, poll_once};

    #[test]
    fn dropped_waiters_deregister_and_notify_wakes() {
        let event = Event::default();
        for _ in 0..10 {
            let mut waiter = Box::pin(event.changed(event.version()));
            assert!(block_on(poll_once(&mut waiter)).is_none());
            assert_eq!(event.waiter_count(), 1);
        }
        assert_eq!(
            event.waiter_count(),
            0,
            "timed-out waiters must not pile up"
        );
        let seen = event.version();
        let mut waiter = Box::pin(event.changed(seen));
        assert!(block_on(poll_once(&mut waiter)).is_none());
        event.notify();
        assert!(block_on(poll_once(&mut waiter)).is_some());
        assert_eq!(event.waiter_count(), 0);
    }
}
