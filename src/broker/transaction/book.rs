//! One shard's transaction book: its undecided transactions, each by its origin (the
//! half-queue offset of its first half record) with its newest half copy and when the
//! check-back looks at it next. Owned by the shard's executor; never sent across shards.
//!
//! The book is a fold over the shard's half and op queues in log order
//! ([`TransactionBook::follow`]): a half record whose origin is its own offset opens a
//! transaction, a later copy (a check stored it) becomes the transaction's newest copy, an op
//! record closes the transaction it names. A copy that comes after its transaction's op (a
//! check that raced a decision) opens nothing. Entries carry the origin in their tagsCode
//! (`ringmq_shards::transaction`), so the fold reads no record. At start it replays both queues
//! from their first entry, which is the recovery; afterwards it takes only the new entries, so
//! what it holds at any point is what the replay of the log up to there gives, after a crash
//! too.
//!
//! A decision is applied only to a transaction the book holds undecided, and only one at a
//! time ([`TransactionBook::begin_resolve`]): a second END_TRANSACTION for the same half, or
//! one for an older copy of it, finds it resolved and changes nothing.
//!
//! Memory: about 70 bytes per undecided transaction (a B-tree entry of 8 + 32 bytes and its
//! share of the nodes), so [`TRANSACTIONS_PENDING_MAX`] costs about 70 MiB per shard at worst;
//! a healthy producer decides within milliseconds and the book holds a handful.

use ringmq_shards::QueueEntry;
use std::collections::BTreeMap;

/// Undecided transactions a shard holds at once. A half message beyond it is refused with
/// SYSTEM_BUSY: without a bound, producers that never decide (and never answer checks) would
/// grow the book for `transactionCheckMax` rounds (15 min by default) at their send rate.
pub const TRANSACTIONS_PENDING_MAX: usize = 1 << 20;
/// Entries read from each queue per step of a fold: a copy of 24 bytes each, so one step
/// copies at most 192 KiB, and a replay of millions of entries at start is done in steps.
pub const FOLLOW_CHUNK_ENTRIES: usize = 4096;

/// Where the newest half record of a transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HalfCopy {
    pub queue_offset: i64,
    /// Client-visible physical offset (this shard's id in the high bits).
    pub physical_offset: i64,
}

/// The two queues the book follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowedQueue {
    Half,
    Op,
}

/// Where the book reads entries from: the shard's store, or a test's list.
pub trait EntrySource {
    /// Entries of `queue` from offset `from` on, at most `max`, in log order.
    fn entries(&self, queue: FollowedQueue, from: i64, max: usize) -> Vec<QueueEntry>;
}

/// An undecided transaction.
#[derive(Clone, Copy, Debug)]
struct Pending {
    copy: HalfCopy,
    /// Wall-clock ms from which the check-back looks at it.
    due_ms: i64,
    /// A decision for it is being written.
    resolving: bool,
}

/// What [`TransactionBook::begin_resolve`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// Undecided: the caller writes the decision, then calls `end_resolve`.
    Go,
    /// Not undecided here: decided, discarded, or never held. Nothing is to be done.
    Resolved,
    /// Another decision for it is being written.
    Busy,
}

/// A transaction the check-back is to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub origin: i64,
    pub copy: HalfCopy,
}

/// Why a half message is not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{TRANSACTIONS_PENDING_MAX} undecided transactions on this shard")]
pub struct BookFull;

/// One shard's undecided transactions (see the module doc).
#[derive(Debug, Default)]
pub struct TransactionBook {
    pending: BTreeMap<i64, Pending>,
    /// The next entry of each queue to fold in.
    half_next: i64,
    op_next: i64,
    /// Half messages admitted and not yet stored, counted against the bound.
    halves_in_flight: usize,
}

impl TransactionBook {
    /// Undecided transactions held.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Folds in every entry of both queues not yet seen, in log order; a transaction opened
    /// here is first due at `first_due_ms`. Returns how many entries were folded in.
    pub fn follow(&mut self, source: &impl EntrySource, first_due_ms: i64) -> usize {
        let mut folded = 0;
        loop {
            let halves = source.entries(FollowedQueue::Half, self.half_next, FOLLOW_CHUNK_ENTRIES);
            let ops = source.entries(FollowedQueue::Op, self.op_next, FOLLOW_CHUNK_ENTRIES);
            if halves.is_empty() && ops.is_empty() {
                return folded;
            }
            // A full chunk may have more behind it, which may come before the other queue's
            // next entry: stop at its end and read again.
            let halves_more = halves.len() == FOLLOW_CHUNK_ENTRIES;
            let ops_more = ops.len() == FOLLOW_CHUNK_ENTRIES;
            let (mut h, mut o) = (halves.iter().peekable(), ops.iter().peekable());
            loop {
                let half_first = match (h.peek(), o.peek()) {
                    (Some(half), Some(op)) => half.physical_offset < op.physical_offset,
                    (Some(_), None) if !ops_more => true,
                    (None, Some(_)) if !halves_more => false,
                    _ => break,
                };
                if half_first {
                    let entry = h.next().expect("peeked");
                    self.fold_half(entry, first_due_ms);
                } else {
                    let entry = o.next().expect("peeked");
                    self.fold_op(entry);
                }
                folded += 1;
            }
        }
    }

    fn fold_half(&mut self, entry: &QueueEntry, first_due_ms: i64) {
        debug_assert_eq!(entry.queue_offset, self.half_next, "half entries in order");
        self.half_next = entry.queue_offset + 1;
        let copy = HalfCopy {
            queue_offset: entry.queue_offset,
            physical_offset: entry.physical_offset,
        };
        let origin = entry.tags_code;
        if origin == entry.queue_offset {
            let opened = Pending {
                copy,
                due_ms: first_due_ms,
                resolving: false,
            };
            let known = self.pending.insert(origin, opened);
            debug_assert!(known.is_none(), "a half offset opens one transaction");
        } else if (0..entry.queue_offset).contains(&origin) {
            // A newer copy of an undecided transaction; of a resolved one it opens nothing.
            if let Some(pending) = self.pending.get_mut(&origin) {
                pending.copy = copy;
            }
        } else {
            tracing::warn!(
                offset = entry.queue_offset,
                origin,
                "half record names no earlier half: ignored"
            );
        }
    }

    fn fold_op(&mut self, entry: &QueueEntry) {
        debug_assert_eq!(entry.queue_offset, self.op_next, "op entries in order");
        self.op_next = entry.queue_offset + 1;
        // An op for a transaction not held (a repeat, or one naming nothing) changes nothing.
        self.pending.remove(&entry.tags_code);
    }

    /// Admits one half message before it is stored; [`Self::half_stored`] after.
    pub fn admit_half(&mut self) -> Result<(), BookFull> {
        if self.pending.len() + self.halves_in_flight >= TRANSACTIONS_PENDING_MAX {
            return Err(BookFull);
        }
        self.halves_in_flight += 1;
        Ok(())
    }

    /// An admitted half message was stored (or failed to be).
    pub fn half_stored(&mut self) {
        debug_assert!(self.halves_in_flight > 0);
        self.halves_in_flight = self.halves_in_flight.saturating_sub(1);
    }

    /// Claims the decision of the transaction of `origin`.
    pub fn begin_resolve(&mut self, origin: i64) -> Resolve {
        match self.pending.get_mut(&origin) {
            None => Resolve::Resolved,
            Some(pending) if pending.resolving => Resolve::Busy,
            Some(pending) => {
                pending.resolving = true;
                Resolve::Go
            }
        }
    }

    /// The decision claimed by `begin_resolve` was written (the op record, folded in later,
    /// closes the transaction) or failed (it stays undecided).
    pub fn end_resolve(&mut self, origin: i64) {
        if let Some(pending) = self.pending.get_mut(&origin) {
            pending.resolving = false;
        }
    }

    /// Up to `max` undecided transactions with origins above `after`, in origin order, that
    /// are due at `now_ms` and have no decision being written.
    pub fn due(&self, after: Option<i64>, now_ms: i64, max: usize) -> Vec<Due> {
        let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        self.pending
            .range((from, std::ops::Bound::Unbounded))
            .filter(|(_, p)| !p.resolving && p.due_ms <= now_ms)
            .take(max)
            .map(|(&origin, p)| Due {
                origin,
                copy: p.copy,
            })
            .collect()
    }

    /// When the check-back looks at the transaction of `origin` next (if it is undecided).
    pub fn set_due(&mut self, origin: i64, due_ms: i64) {
        if let Some(pending) = self.pending.get_mut(&origin) {
            pending.due_ms = due_ms;
        }
    }

    /// The newest copy of the transaction of `origin`, if it is undecided.
    pub fn copy(&self, origin: i64) -> Option<HalfCopy> {
        self.pending.get(&origin).map(|p| p.copy)
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
