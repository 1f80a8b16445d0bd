//! The wake-up protocol's one flag: a receiver that found nothing to do sets `armed` before
//! it sleeps, and the first sender to find it set takes it and wakes the receiver.
//!
//! It is Dekker's pattern: each side writes its own location (the sender its queue, the
//! receiver `armed`), issues a `SeqCst` fence, then reads the other side's location. The two
//! fences are ordered one way or the other in the single total order of `SeqCst` operations,
//! so at least one side sees the other's write: either the receiver's re-check sees the
//! queued message (it does not sleep), or the sender sees `armed` set (it rings). The swap
//! makes "sees armed" exclusive, so one sleep costs at most one ring. The accesses themselves
//! may be `Relaxed`: the fences carry the ordering (C++20 [atomics.order]: of two SeqCst fences
//! the later one's side sees what the earlier one's side wrote before it).
//! `src/loom_model.rs` checks this against every interleaving.
//!
//! The receiver writes `armed` with swaps, not stores. It does so once per sleep, where the
//! cost does not matter, and every write of the flag is then a read-modify-write, which loom
//! 0.7 models correctly; a plain store racing a swap it does not (its issue #254: the store
//! lands between the swap's read and write, a history C11 forbids, and the model fails).
//!
//! glommio 0.9's sleep notifier pairs a `membarrier` on the sleeper's side with `Relaxed`
//! accesses and no barrier at all on the waker's side (its `membarrier::light()`, the compiler
//! fence such a pairing needs, is never called), so nothing orders queueing a foreign waker
//! before reading the flag; the broker saw shards sleep through wake-ups. This crate's
//! wake-ups never take that path.

use crate::sync::{fence, AtomicBool, Ordering};

/// Owned by the receiving shard's wake primitive; shared with every thread that may wake it.
#[derive(Debug, Default)]
pub(crate) struct Armed {
    armed: AtomicBool,
}

impl Armed {
    /// Receiver, before sleeping: arms, then re-checks for work. `true` means it is armed
    /// with nothing to do and may sleep until a ring; `false` means work came in (it is
    /// disarmed again, and a ring that raced with the disarm only costs a spurious wake).
    pub(crate) fn arm(&self, has_work: impl Fn() -> bool) -> bool {
        self.armed.swap(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if has_work() {
            self.disarm();
            return false;
        }
        true
    }

    /// Receiver, once awake: senders need not ring while it is working.
    pub(crate) fn disarm(&self) {
        self.armed.swap(false, Ordering::Relaxed);
    }

    /// Sender, after making its work visible (a push): `true` when it took the armed flag
    /// and must ring the receiver. Call it after every push; it costs a fence and a swap.
    pub(crate) fn take(&self) -> bool {
        fence(Ordering::SeqCst);
        self.armed.swap(false, Ordering::Relaxed)
    }
}
