//! The cross-shard router: how a shard asks another shard to do something and gets the answer.
//!
//! Two glommio channel meshes join every pair of shards: one carries requests, one carries
//! replies. Keeping replies on their own channels means a shard that is busy serving requests
//! still drains the answers it waits for, so two shards forwarding to each other cannot
//! deadlock. Requests are sent with `try_send`: when the owner's channel is full the caller
//! gets `BrokerError::Busy` at once (RocketMQ's SYSTEM_BUSY) instead of queueing unboundedly.

use super::error::{BrokerError, BrokerResult};
use super::work::{Reply, Work};
use glommio::channels::channel_mesh::{MeshBuilder, Senders};
use glommio::channels::local_channel::{self, LocalSender};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;

/// Requests queued from one shard to another. A forwarded request costs a few hundred bytes
/// here; 1024 of them absorb a burst from a full client pipeline while a shard that falls
/// behind is noticed (SYSTEM_BUSY) within milliseconds.
pub const ROUTER_CHANNEL_DEPTH: usize = 1024;
/// Forwarded requests one shard may wait on at once. Long polls hold an entry for up to their
/// suspend time (15 s by default), so this bounds parked pulls routed through a shard too.
pub const FORWARDS_PENDING_MAX: usize = 32 * 1024;

struct Envelope {
    id: u64,
    from: usize,
    work: Work,
}

struct ReplyEnvelope {
    id: u64,
    reply: BrokerResult<Reply>,
}

/// The meshes' builders, made once before the shards start and cloned into each.
#[derive(Clone)]
pub struct RouterMesh {
    requests: MeshBuilder<Envelope, glommio::channels::channel_mesh::Full>,
    replies: MeshBuilder<ReplyEnvelope, glommio::channels::channel_mesh::Full>,
}

impl RouterMesh {
    pub fn new(shards: usize) -> Self {
        Self {
            requests: MeshBuilder::full(shards, ROUTER_CHANNEL_DEPTH),
            // A reply is never refused (the requester waits for it), so its channel only
            // needs to hold what the requests' channels can have in flight.
            replies: MeshBuilder::full(shards, ROUTER_CHANNEL_DEPTH),
        }
    }
}

/// One shard's end of the router.
pub struct Router {
    shard_id: usize,
    shards: usize,
    requests: Senders<Envelope>,
    replies: Senders<ReplyEnvelope>,
    pending: RefCell<HashMap<u64, LocalSender<BrokerResult<Reply>>>>,
    next_id: Cell<u64>,
}

impl Router {
    /// Joins the meshes (every shard must join before any returns) and starts the loops that
    /// serve requests from other shards with `serve` and deliver their replies.
    pub async fn join<F, Fut>(mesh: RouterMesh, serve: F) -> BrokerResult<Rc<Self>>
    where
        F: Fn(usize, Work) -> Fut + Clone + 'static,
        Fut: Future<Output = BrokerResult<Reply>> + 'static,
    {
        let join_failed = |_| BrokerError::Internal("could not join the shard mesh".into());
        let (requests, mut request_rx) = mesh.requests.join().await.map_err(join_failed)?;
        let (replies, mut reply_rx) = mesh.replies.join().await.map_err(join_failed)?;
        let router = Rc::new(Self {
            shard_id: requests.peer_id(),
            shards: requests.nr_consumers(),
            requests,
            replies,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
        });
        for (_, stream) in request_rx.streams() {
            let (router, serve) = (router.clone(), serve.clone());
            glommio::spawn_local(async move {
                while let Some(envelope) = stream.recv().await {
                    let (router, serve) = (router.clone(), serve.clone());
                    glommio::spawn_local(async move {
                        let Envelope { id, from, work } = envelope;
                        let reply = serve(from, work).await;
                        // The requester is gone only when the broker is stopping.
                        let _ = router
                            .replies
                            .send_to(from, ReplyEnvelope { id, reply })
                            .await;
                    })
                    .detach();
                }
            })
            .detach();
        }
        for (_, stream) in reply_rx.streams() {
            let router = router.clone();
            glommio::spawn_local(async move {
                while let Some(ReplyEnvelope { id, reply }) = stream.recv().await {
                    // No entry: the requester gave up (its connection closed).
                    if let Some(waiter) = router.pending.borrow_mut().remove(&id) {
                        let _ = waiter.try_send(reply);
                    }
                }
            })
            .detach();
        }
        Ok(router)
    }

    pub fn shard_id(&self) -> usize {
        self.shard_id
    }

    pub fn shards(&self) -> usize {
        self.shards
    }

    /// Has shard `to` do `work` and waits for its reply. Fails with `Busy` at once when `to`
    /// is not keeping up or too many forwards are outstanding here.
    pub async fn call(&self, to: usize, work: Work) -> BrokerResult<Reply> {
        debug_assert_ne!(to, self.shard_id, "local work is not routed");
        if self.pending.borrow().len() >= FORWARDS_PENDING_MAX {
            return Err(BrokerError::Busy(
                "too many requests waiting on other shards",
            ));
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = local_channel::new_bounded(1);
        let envelope = Envelope {
            id,
            from: self.shard_id,
            work,
        };
        self.requests
            .try_send_to(to, envelope)
            .map_err(|_| BrokerError::Busy("shard queue full"))?;
        self.pending.borrow_mut().insert(id, tx);
        // Remove the entry if this future is dropped before the reply comes.
        let guard = PendingGuard { router: self, id };
        let reply = rx.recv().await;
        std::mem::forget(guard);
        reply.unwrap_or(Err(BrokerError::ShuttingDown))
    }
}

struct PendingGuard<'a> {
    router: &'a Router,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.router.pending.borrow_mut().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::control_plane::ControlOp;
    use glommio::channels::shared_channel;
    use glommio::LocalExecutorBuilder;

    /// Enough for glommio's rings; these executors do no DMA I/O.
    const IO_MEMORY: usize = 512 << 10;

    /// A shard whose owner never answers: the forwards it waits on are bounded, and the one
    /// past the bound fails at once with Busy (SYSTEM_BUSY) instead of queueing.
    #[test]
    fn forwards_past_the_bound_are_refused_at_once() {
        let mesh = RouterMesh::new(2);
        let (done_tx, done_rx) = shared_channel::new_bounded::<()>(1);
        let owner_mesh = mesh.clone();
        let owner = LocalExecutorBuilder::default()
            .io_memory(IO_MEMORY)
            .spawn(move || async move {
                let _router = Router::join(owner_mesh, |_, _| futures_lite::future::pending())
                    .await
                    .unwrap();
                let done = done_rx.connect().await;
                let _ = done.recv().await;
            })
            .unwrap();
        let asker = LocalExecutorBuilder::default()
            .io_memory(IO_MEMORY)
            .spawn(move || async move {
                let router = Router::join(mesh, |_, _| async { Ok(Reply::Done) })
                    .await
                    .unwrap();
                let owner_id = 1 - router.shard_id();
                let mut waiting = Vec::new();
                while router.pending.borrow().len() < FORWARDS_PENDING_MAX {
                    let r = router.clone();
                    waiting.push(glommio::spawn_local(async move {
                        r.call(
                            owner_id,
                            Work::Control(ControlOp::FindOrCreateGroup("g".into())),
                        )
                        .await
                        .is_ok()
                    }));
                    glommio::yield_if_needed().await;
                    if waiting.len() % 1024 == 0 {
                        glommio::executor().yield_task_queue_now().await;
                    }
                }
                let refused = router
                    .call(
                        owner_id,
                        Work::Control(ControlOp::FindOrCreateGroup("g".into())),
                    )
                    .await;
                let done = done_tx.connect().await;
                let _ = done.send(()).await;
                matches!(refused, Err(BrokerError::Busy(_)))
            })
            .unwrap();
        assert!(
            asker.join().unwrap(),
            "the forward past the bound was not refused with Busy"
        );
        owner.join().unwrap();
    }
}
