//! One shard's bus: calls and sends to other shards, and the receive loop that serves the work
//! sent here and delivers the answers to this shard's calls. Owned by the shard (in an `Rc`).

use crate::mesh::Mesh;
use crate::pending::{Pending, Waiting};
use crate::reply::{Home, ReplyTo};
use crate::wake::WakeReceiver;
use crate::{BusError, REPLIES_OWED_MAX};
use crossbeam_queue::ArrayQueue;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Waker};

/// Work items taken from one inbox, and answers from the reply queue, before the receive loop
/// lets the shard's other tasks run: fairness between peers and with the shard's own work.
const RECEIVE_BATCH_MAX: usize = 64;

/// What a bus has done, for tests and the broker's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Calls this shard waits on now (bounded by [`crate::CALLS_PENDING_MAX`]).
    pub calls_pending: usize,
    /// Replies owed to this shard now, including those of calls that gave up (bounded by
    /// [`REPLIES_OWED_MAX`]).
    pub replies_owed: usize,
    /// Times the receive loop found nothing to do and slept on its wake socket.
    pub sleeps: u64,
    /// Work items whose future completed on its first, inline poll.
    pub served_inline: u64,
    /// Work items whose future was still pending and became a task.
    pub served_spawned: u64,
}

pub struct Bus<W> {
    id: usize,
    mesh: Arc<Mesh<W>>,
    pending: RefCell<Pending>,
    /// Only this shard changes it: up when a call is admitted, down when its answer is taken
    /// off the reply queue, so the queue never holds more than this.
    replies_owed: Cell<usize>,
    stats: Cell<BusStats>,
}

impl<W> Bus<W> {
    pub(crate) fn new(id: usize, mesh: Arc<Mesh<W>>) -> Self {
        Self {
            id,
            mesh,
            pending: RefCell::default(),
            replies_owed: Cell::new(0),
            stats: Cell::default(),
        }
    }

    pub fn id(&self) -> usize {
        self.id
    }

    pub fn shards(&self) -> usize {
        self.mesh.shards.len()
    }

    pub fn stats(&self) -> BusStats {
        BusStats {
            calls_pending: self.pending.borrow().len(),
            replies_owed: self.replies_owed.get(),
            ..self.stats.get()
        }
    }

    /// Sends the work `make` builds (it embeds the ReplyTo) to shard `to` (this one
    /// included: its own work then waits behind what is queued here) and
    /// waits for the typed answer. `Err(Busy)` at once when `to`'s inbox is full or this shard
    /// already waits on too many calls; `Err(Dropped)` if the ReplyTo is dropped unanswered
    /// (the peer is stopping). Dropping the returned future before the answer frees its
    /// pending slot; a late answer is discarded.
    pub async fn call<T: Send + 'static>(
        &self,
        to: usize,
        make: impl FnOnce(ReplyTo<T>) -> W,
    ) -> Result<T, BusError> {
        let inbox = self.outbox(to)?;
        if self.replies_owed.get() >= REPLIES_OWED_MAX {
            return Err(BusError::Busy("too many replies owed to this shard"));
        }
        let call = self.pending.borrow_mut().begin();
        let call = call.ok_or(BusError::Busy("too many calls waiting on other shards"))?;
        self.replies_owed.set(self.replies_owed.get() + 1);
        // Made before `make` runs, so that a panic there frees the slot.
        let waiting = Waiting::new(&self.pending, call);
        let reply_to = ReplyTo::new(call, self.home().clone());
        self.push(to, inbox, make(reply_to));
        waiting.await
    }

    /// Fire and forget (e.g. "notify this connection"); `Err(Busy)` when the inbox is full.
    pub fn send(&self, to: usize, work: W) -> Result<(), BusError> {
        let inbox = self.outbox(to)?;
        self.push(to, inbox, work);
        Ok(())
    }

    /// This shard's inbox at `to`, when it has room.
    fn outbox(&self, to: usize) -> Result<&ArrayQueue<W>, BusError> {
        assert!(
            to < self.shards(),
            "no shard {to} in a mesh of {}",
            self.shards()
        );
        let inbox = self.mesh.inbox(self.id, to);
        if inbox.is_full() {
            return Err(BusError::Busy("shard inbox full"));
        }
        Ok(inbox)
    }

    fn push(&self, to: usize, inbox: &ArrayQueue<W>, work: W) {
        // This shard is the inbox's only producer and found room; the consumer only adds room.
        let pushed = inbox.push(work);
        assert!(pushed.is_ok(), "an inbox with room refused a push");
        self.mesh.shards[to].home.wake.notify();
    }

    fn home(&self) -> &Arc<Home> {
        &self.mesh.shards[self.id].home
    }

    fn has_work(&self) -> bool {
        let queues = &self.mesh.shards[self.id];
        !queues.home.replies.is_empty() || self.inboxes().any(|(_, inbox)| !inbox.is_empty())
    }

    fn inboxes(&self) -> impl Iterator<Item = (usize, &ArrayQueue<W>)> {
        (0..self.shards()).map(move |from| (from, self.mesh.inbox(from, self.id)))
    }

    fn take_replies(&self) {
        for _ in 0..RECEIVE_BATCH_MAX {
            let Some(answer) = self.home().replies.pop() else {
                return;
            };
            let owed = self.replies_owed.get();
            assert!(owed > 0, "an answer came that no call was owed");
            self.replies_owed.set(owed - 1);
            // Woken, or a late answer dropped, outside the borrow of `pending`.
            let delivered = self.pending.borrow_mut().answer(answer);
            if let Ok(Some(waker)) = delivered {
                waker.wake();
            }
        }
    }

    fn count(&self, spawned: bool) {
        let mut stats = self.stats.get();
        if spawned {
            stats.served_spawned += 1;
        } else {
            stats.served_inline += 1;
        }
        self.stats.set(stats);
    }
}

/// The shard's receive loop: sleeps until work or answers come, serves a batch, lets the
/// shard's other tasks run, and again. It runs for as long as the executor does.
pub(crate) async fn receive<W, F, Fut>(bus: Rc<Bus<W>>, serve: F, mut wake: WakeReceiver)
where
    F: Fn(usize, W) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let home = bus.home().clone();
    loop {
        wake.until(&home.wake, || bus.has_work()).await;
        bus.stats.set(BusStats {
            sleeps: wake.sleeps(),
            ..bus.stats.get()
        });
        bus.take_replies();
        for (from, inbox) in bus.inboxes() {
            for work in std::iter::from_fn(|| inbox.pop()).take(RECEIVE_BATCH_MAX) {
                serve_one(&bus, serve(from, work));
            }
        }
        glommio::yield_if_needed().await;
    }
}

/// Polls `work` once here and spawns it only if it is still pending; the task's first poll
/// registers the task's own waker (a future must wake the waker of its latest poll). The
/// inline poll's waker is a no-op, not the loop's: thousands of parked calls may keep the
/// waker of their first poll, and glommio counts a task's waker clones in an `i16`.
fn serve_one<W>(bus: &Bus<W>, work: impl Future<Output = ()> + 'static) {
    let mut work = Box::pin(work);
    let pending = work
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending();
    if pending {
        glommio::spawn_local(work).detach();
    }
    bus.count(pending);
}
