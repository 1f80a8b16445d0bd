//! The atomics of the wake-up protocol, from loom when the model check runs (`--cfg loom`)
//! and from std otherwise, so the checked code is the code that ships.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, Ordering};
