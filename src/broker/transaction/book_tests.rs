use super::*;
use std::cell::RefCell;

/// A shard's log as far as the book sees it: half and op entries in append order.
#[derive(Default)]
struct Log {
    halves: RefCell<Vec<QueueEntry>>,
    ops: RefCell<Vec<QueueEntry>>,
    next_physical: RefCell<i64>,
}

impl Log {
    fn push(&self, queue: FollowedQueue, tags_code: i64) -> QueueEntry {
        let physical_offset = {
            let mut next = self.next_physical.borrow_mut();
            *next += 100;
            *next
        };
        let list = match queue {
            FollowedQueue::Half => &self.halves,
            FollowedQueue::Op => &self.ops,
        };
        let mut list = list.borrow_mut();
        let entry = QueueEntry {
            queue_offset: list.len() as i64,
            physical_offset,
            tags_code,
        };
        list.push(entry);
        entry
    }

    /// A first half record: its own origin. Returns its origin.
    fn half(&self) -> i64 {
        let offset = self.halves.borrow().len() as i64;
        self.push(FollowedQueue::Half, offset).queue_offset
    }

    /// A check's copy of the transaction of `origin`. Returns the copy.
    fn copy(&self, origin: i64) -> HalfCopy {
        let entry = self.push(FollowedQueue::Half, origin);
        HalfCopy {
            queue_offset: entry.queue_offset,
            physical_offset: entry.physical_offset,
        }
    }

    fn op(&self, origin: i64) {
        self.push(FollowedQueue::Op, origin);
    }
}

impl EntrySource for Log {
    fn entries(&self, queue: FollowedQueue, from: i64, max: usize) -> Vec<QueueEntry> {
        let list = match queue {
            FollowedQueue::Half => self.halves.borrow(),
            FollowedQueue::Op => self.ops.borrow(),
        };
        list.iter().skip(from as usize).take(max).copied().collect()
    }
}

fn undecided(book: &TransactionBook) -> Vec<i64> {
    book.due(None, i64::MAX, usize::MAX)
        .iter()
        .map(|d| d.origin)
        .collect()
}

#[test]
fn halves_open_transactions_and_ops_close_them() {
    let log = Log::default();
    let (a, b, c) = (log.half(), log.half(), log.half());
    log.op(b);
    let mut book = TransactionBook::default();
    assert_eq!(book.follow(&log, 0), 4);
    assert_eq!(undecided(&book), [a, c]);
    log.op(a);
    log.op(a); // a second decision for the same half changes nothing
    log.op(99); // nor one for a half never held
    assert_eq!(book.follow(&log, 0), 3);
    assert_eq!(undecided(&book), [c]);
    assert_eq!(book.follow(&log, 0), 0, "nothing new");
}

#[test]
fn a_checks_copy_is_the_newest_and_one_after_the_decision_opens_nothing() {
    let log = Log::default();
    let a = log.half();
    let first = log.copy(a);
    let second = log.copy(a);
    let mut book = TransactionBook::default();
    book.follow(&log, 0);
    assert_eq!(book.copy(a), Some(second));
    assert_ne!(book.copy(a), Some(first));
    log.op(a);
    log.copy(a); // the check raced the decision: stored after it
    book.follow(&log, 0);
    assert_eq!(book.copy(a), None);
    assert!(book.is_empty());
}

#[test]
fn replaying_the_log_gives_what_following_it_gave() {
    let log = Log::default();
    let mut live = TransactionBook::default();
    for round in 0..50 {
        let origin = log.half();
        if round % 3 == 0 {
            log.copy(origin);
        }
        if round % 2 == 0 {
            log.op(origin);
        }
        if round % 5 == 0 && origin > 0 {
            log.op(origin - 1);
        }
        live.follow(&log, round);
    }
    let mut replayed = TransactionBook::default();
    replayed.follow(&log, 0);
    assert_eq!(undecided(&replayed), undecided(&live));
    for origin in undecided(&live) {
        assert_eq!(replayed.copy(origin), live.copy(origin));
    }
}

#[test]
fn a_replay_longer_than_a_chunk_keeps_log_order_across_chunk_ends() {
    let log = Log::default();
    let total = FOLLOW_CHUNK_ENTRIES * 2 + 17;
    // Many halves first, then a burst of ops deciding the odd ones, then copies of the even
    // ones made after: if ops were folded ahead of their halves, or copies ahead of the ops,
    // the result would differ.
    for _ in 0..total {
        log.half();
    }
    for origin in (1..total as i64).step_by(2) {
        log.op(origin);
    }
    for origin in (0..total as i64).step_by(2) {
        log.copy(origin);
        log.copy(origin + 1); // decided already: opens nothing
    }
    let mut book = TransactionBook::default();
    let copies = 2 * total.div_ceil(2);
    assert_eq!(book.follow(&log, 0), total + total / 2 + copies);
    let left = undecided(&book);
    assert_eq!(left.len(), total.div_ceil(2));
    assert!(left.iter().all(|origin| origin % 2 == 0));
    assert_eq!(
        book.copy(0).map(|c| c.queue_offset),
        Some(total as i64),
        "the copy made after the ops"
    );
}

#[test]
fn one_decision_at_a_time_and_a_failed_one_leaves_it_undecided() {
    let log = Log::default();
    let a = log.half();
    let mut book = TransactionBook::default();
    book.follow(&log, 0);
    assert_eq!(book.begin_resolve(a), Resolve::Go);
    assert_eq!(
        book.begin_resolve(a),
        Resolve::Busy,
        "a duplicate while writing"
    );
    assert!(
        book.due(None, i64::MAX, 10).is_empty(),
        "not checked while deciding"
    );
    book.end_resolve(a); // the write failed: no op record
    assert_eq!(book.begin_resolve(a), Resolve::Go);
    log.op(a);
    book.follow(&log, 0);
    book.end_resolve(a);
    assert_eq!(book.begin_resolve(a), Resolve::Resolved);
    assert_eq!(book.begin_resolve(12), Resolve::Resolved, "never held");
}

#[test]
fn due_transactions_come_in_origin_order_from_a_cursor() {
    let log = Log::default();
    let origins: Vec<i64> = (0..10).map(|_| log.half()).collect();
    let mut book = TransactionBook::default();
    book.follow(&log, 1_000);
    assert!(
        book.due(None, 999, 100).is_empty(),
        "none due before their time"
    );
    book.set_due(origins[4], 5_000);
    let first: Vec<i64> = book.due(None, 1_000, 3).iter().map(|d| d.origin).collect();
    assert_eq!(first, [0, 1, 2]);
    let next: Vec<i64> = book
        .due(Some(2), 1_000, 3)
        .iter()
        .map(|d| d.origin)
        .collect();
    assert_eq!(next, [3, 5, 6], "4 is not due yet");
    assert_eq!(book.due(Some(9), 1_000, 3), []);
}

#[test]
fn halves_beyond_the_bound_are_not_admitted() {
    let mut book = TransactionBook::default();
    for _ in 0..TRANSACTIONS_PENDING_MAX {
        book.admit_half().unwrap();
    }
    assert_eq!(book.admit_half(), Err(BookFull));
    book.half_stored();
    assert_eq!(book.admit_half(), Ok(()));
}
