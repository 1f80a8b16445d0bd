//! Shard-to-shard messaging for thread-per-core glommio executors that cannot lose a wake-up,
//! with typed replies. See README.md for the protocol, its proof and its bounds.
//!
//! [`mesh`] builds one [`Endpoint`] per shard on the main thread; each starts on its own
//! executor and becomes that shard's [`Bus`]: [`Bus::call`] sends work that embeds a
//! [`ReplyTo`] and waits for its typed answer, [`Bus::send`] fires and forgets. [`doorbell`]
//! wakes one executor from any thread (the stop signal).
//!
//! Each shard has an inbox per sending shard and one reply queue, all bounded lock-free
//! queues, and one wake primitive: an `armed` flag and an AF_UNIX socket pair (`armed.rs`,
//! `wake.rs`). The queues are crossbeam-queue's `ArrayQueue`: bounded, allocation-free after
//! construction, multi-producer (the reply queue needs that), widely used, and tested by its
//! authors under Miri as well (its tests carry Miri-sized variants); writing our own ring
//! would add a second thing to prove. One caveat, in its nature: a pop that meets a push
//! between its index claim and its slot write spins (then yields) until the push completes. The wake-up never goes through glommio's foreign wakers, whose flag and queue are
//! ordered `Relaxed` on the waker's side: a receiver sleeps in a read of its socket, so its
//! wake-up is a completion on its own io_uring.

// Under `--cfg loom` only the protocol and its model are built.
#![cfg_attr(loom, allow(dead_code))]

mod armed;
mod sync;

#[cfg(all(test, loom))]
mod loom_model;

#[cfg(not(loom))]
mod bus;
#[cfg(not(loom))]
mod doorbell;
#[cfg(not(loom))]
mod mesh;
#[cfg(not(loom))]
mod pending;
#[cfg(not(loom))]
mod reply;
#[cfg(not(loom))]
mod wake;

#[cfg(not(loom))]
pub use bus::{Bus, BusStats};
#[cfg(not(loom))]
pub use doorbell::{doorbell, Bell, Listener};
#[cfg(not(loom))]
pub use mesh::{mesh, Endpoint};
#[cfg(not(loom))]
pub use reply::ReplyTo;

/// Work queued from one shard to another: each ordered pair of shards has an inbox this deep
/// (the router's ROUTER_CHANNEL_DEPTH). A forwarded request costs a few hundred bytes here;
/// 1024 of them absorb a burst from a full client pipeline, while a shard that falls behind
/// is noticed (`Busy`, RocketMQ's SYSTEM_BUSY) within milliseconds.
pub const INBOX_DEPTH: usize = 1024;

/// Calls one shard may wait on at once (the router's FORWARDS_PENDING_MAX). Long polls hold a
/// call for up to their suspend time (15 s by default), so this bounds parked pulls routed
/// through a shard too.
pub const CALLS_PENDING_MAX: usize = 32 * 1024;

/// Replies owed to one shard: those of its pending calls, plus those of calls it dropped whose
/// ReplyTo still lives at a peer (a connection closed while its long poll is parked there, for
/// at most a suspend time). Twice the pending bound lets a shard whose callers all gave up go
/// on calling while those answers drain. It sizes the reply queue, so that a reply (an answer
/// or a dropped ReplyTo) is always queued: `ReplyTo` asserts it.
pub const REPLIES_OWED_MAX: usize = 2 * CALLS_PENDING_MAX;

/// Why a call or send failed.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusError {
    /// Refused at once: the peer's inbox is full or this shard waits on too much already.
    #[error("busy: {0}")]
    Busy(&'static str),
    /// The peer dropped the call's ReplyTo unanswered (it is stopping).
    #[error("the peer dropped the call unanswered")]
    Dropped,
}

/// What moves between threads: an endpoint into its executor, a ReplyTo to wherever the work
/// is done, a bell to any thread, a listener into its executor.
#[cfg(all(test, not(loom)))]
mod thread_safety {
    fn send<T: Send>() {}
    fn send_sync_clone<T: Send + Sync + Clone>() {}

    #[test]
    fn handles_move_where_they_are_used() {
        send::<crate::Endpoint<String>>();
        send::<crate::ReplyTo<String>>();
        send::<crate::Listener>();
        send_sync_clone::<crate::Bell>();
    }
}
