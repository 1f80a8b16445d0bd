//! Shard-to-shard messaging for thread-per-core glommio executors that cannot lose a wake-up,
//! with typed replies. See README.md for the protocol, its proof and its bounds.
//!
//! [`doorbell`] wakes one executor from any thread (the stop signal); the shard-to-shard
//! bus built on the same wake primitive follows.
//!
//! Each shard has an inbox per sending shard and one reply queue, all bounded lock-free
//! queues, and one wake primitive: an `armed` flag and an AF_UNIX socket pair (`armed.rs`,
//! `wake.rs`). The queues are crossbeam-queue's `ArrayQueue`: bounded, allocation-free after
//! construction, multi-producer (the reply queue needs that) and widely used and tested
//! (crossbeam's own loom and miri runs); writing our own ring would add a second thing to
//! prove. The wake-up never goes through glommio's foreign wakers, whose flag and queue are
//! ordered `Relaxed` on the waker's side: a receiver sleeps in a read of its socket, so its
//! wake-up is a completion on its own io_uring.

// Under `--cfg loom` only the protocol and its model are built.
#![cfg_attr(loom, allow(dead_code))]

mod armed;
mod sync;

#[cfg(all(test, loom))]
mod loom_model;

#[cfg(not(loom))]
mod doorbell;
#[cfg(not(loom))]
mod wake;

#[cfg(not(loom))]
pub use doorbell::{doorbell, Bell, Listener};
