//! Building the mesh: every shard's inboxes (one per sending shard) and its [`Home`], made
//! once on the main thread; one [`Endpoint`] per shard moves into its executor and starts there.

use crate::bus::{self, Bus};
use crate::reply::Home;
use crate::wake::{wake_pair, WakeReceiver};
use crate::{INBOX_DEPTH, REPLIES_OWED_MAX};
use crossbeam_queue::ArrayQueue;
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::sync::Arc;

/// One shard's queues, shared by all shards (an `Arc` in every endpoint).
pub(crate) struct ShardQueues<W> {
    /// Indexed by the sending shard, this shard included (the work it asks of itself, served
    /// after what is already queued, through the same path as its peers'). Each has exactly one
    /// producer (the sending shard's `Bus`) and one consumer (this shard's receive loop).
    inboxes: Box<[ArrayQueue<W>]>,
    pub(crate) home: Arc<Home>,
}

pub(crate) struct Mesh<W> {
    pub(crate) shards: Box<[ShardQueues<W>]>,
}

impl<W> Mesh<W> {
    /// The inbox of shard `to` that shard `from` sends to.
    pub(crate) fn inbox(&self, from: usize, to: usize) -> &ArrayQueue<W> {
        &self.shards[to].inboxes[from]
    }
}

/// Builds the mesh for `shards` shards, once on the main thread before the executors start.
/// Memory, allocated here: per ordered pair of shards (a shard and itself included) an inbox of [`INBOX_DEPTH`] work items
/// (`size_of::<W>() + 8` bytes each), per shard a reply queue of [`REPLIES_OWED_MAX`]
/// answers (32 bytes each: 2 MiB) and one socket pair.
pub fn mesh<W: Send + 'static>(shards: usize) -> Vec<Endpoint<W>> {
    assert!(shards > 0, "a mesh needs a shard");
    let mut sockets = Vec::with_capacity(shards);
    let queues = (0..shards)
        .map(|_| {
            let (wake, socket) = wake_pair();
            sockets.push(socket);
            let inboxes = (0..shards).map(|_| ArrayQueue::new(INBOX_DEPTH)).collect();
            let replies = ArrayQueue::new(REPLIES_OWED_MAX);
            let home = Arc::new(Home { replies, wake });
            ShardQueues { inboxes, home }
        })
        .collect();
    let mesh = Arc::new(Mesh { shards: queues });
    let endpoints = sockets.into_iter().enumerate();
    endpoints
        .map(|(id, socket)| Endpoint {
            id,
            mesh: mesh.clone(),
            socket,
            _not_sync: PhantomData,
        })
        .collect()
}

/// One shard's end of the mesh, before it starts. Moves into the shard's executor.
pub struct Endpoint<W> {
    id: usize,
    mesh: Arc<Mesh<W>>,
    /// The receiving end of this shard's wake socket pair.
    socket: OwnedFd,
    /// Send, not Sync: it becomes one executor's `Bus`.
    _not_sync: PhantomData<Cell<()>>,
}

impl<W: Send + 'static> Endpoint<W> {
    pub fn id(&self) -> usize {
        self.id
    }

    /// On the shard's own executor: starts the loop that receives work sent to this shard and
    /// replies addressed to it. Each work item goes to `serve(from, work)`; the future it
    /// returns is polled once inline and spawned as a task only if it is still pending (most
    /// work completes without waiting: no task spawn for it, one allocation).
    pub fn start<F, Fut>(self, serve: F) -> Rc<Bus<W>>
    where
        F: Fn(usize, W) -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let wake = WakeReceiver::new(self.socket);
        let bus = Rc::new(Bus::new(self.id, self.mesh));
        glommio::spawn_local(bus::receive(bus.clone(), serve, wake)).detach();
        bus
    }
}
