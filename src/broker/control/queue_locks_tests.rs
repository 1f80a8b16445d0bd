use super::*;

const T0: i64 = 1_700_000_000_000;

fn queue(queue_id: i32) -> MessageQueue {
    MessageQueue::new("T", "broker-a", queue_id)
}

fn queues(ids: std::ops::Range<i32>) -> Vec<MessageQueue> {
    ids.map(queue).collect()
}

#[test]
fn a_free_queue_is_locked_once_and_others_are_refused_while_it_lives() {
    let mut locks = QueueLocks::new();
    assert_eq!(locks.lock_batch("G", "c1", &queues(0..2), T0), queues(0..2));
    assert!(locks.is_locked_by("G", &queue(0), "c1", T0));
    assert!(!locks.is_locked_by("G", &queue(0), "c2", T0));
    // c2 gets only the queue nobody holds.
    assert_eq!(
        locks.lock_batch("G", "c2", &queues(1..3), T0 + LOCK_LIVE_MS),
        [queue(2)]
    );
    // Another group's lock on the same queue is independent.
    assert_eq!(locks.lock_batch("H", "c2", &[queue(0)], T0), [queue(0)]);
    assert_eq!(locks.len(), 4);
}

#[test]
fn relocking_renews_and_a_lock_expires_only_after_sixty_seconds() {
    let mut locks = QueueLocks::new();
    locks.lock_batch("G", "c1", &[queue(0)], T0);
    // Renewed at +50 s, so at +100 s it is still live (50 s old).
    assert_eq!(
        locks.lock_batch("G", "c1", &[queue(0)], T0 + 50_000),
        [queue(0)]
    );
    assert!(locks
        .lock_batch("G", "c2", &[queue(0)], T0 + 100_000)
        .is_empty());
    // Exactly 60 s after the renewal it is still held (Java: expired when older than 60 s).
    assert!(locks.is_locked_by("G", &queue(0), "c1", T0 + 50_000 + LOCK_LIVE_MS));
    assert!(!locks.is_locked_by("G", &queue(0), "c1", T0 + 50_001 + LOCK_LIVE_MS));
}

#[test]
fn an_expired_lock_is_stolen_and_the_old_owner_loses_it() {
    let mut locks = QueueLocks::new();
    locks.lock_batch("G", "c1", &[queue(0)], T0);
    let later = T0 + LOCK_LIVE_MS + 1;
    assert_eq!(locks.lock_batch("G", "c2", &[queue(0)], later), [queue(0)]);
    assert!(locks.is_locked_by("G", &queue(0), "c2", later));
    assert!(!locks.is_locked_by("G", &queue(0), "c1", later));
    assert!(locks.lock_batch("G", "c1", &[queue(0)], later).is_empty());
    // The old owner's unlock does not release the new owner's lock.
    locks.unlock_batch("G", "c1", &[queue(0)]);
    assert!(locks.is_locked_by("G", &queue(0), "c2", later));
    assert_eq!(locks.len(), 1);
}

#[test]
fn unlock_releases_only_the_callers_queues() {
    let mut locks = QueueLocks::new();
    locks.lock_batch("G", "c1", &queues(0..2), T0);
    locks.lock_batch("G", "c2", &queues(2..3), T0);
    locks.unlock_batch("G", "c1", &queues(0..3));
    assert!(!locks.is_locked_by("G", &queue(0), "c1", T0));
    assert!(locks.is_locked_by("G", &queue(2), "c2", T0));
    assert_eq!(locks.lock_batch("G", "c3", &queues(0..3), T0), queues(0..2));
    locks.unlock_batch("unknown", "c1", &queues(0..3));
    assert_eq!(locks.len(), 3);
}

#[test]
fn repeated_queues_in_one_request_are_locked_and_returned_once() {
    let mut locks = QueueLocks::new();
    let asked = [queue(1), queue(1), queue(2)];
    assert_eq!(
        locks.lock_batch("G", "c1", &asked, T0),
        [queue(1), queue(2)]
    );
    assert_eq!(locks.len(), 2);
    assert!(locks.lock_batch("G", "c1", &[], T0).is_empty());
}

#[test]
fn expire_drops_dead_locks_and_keeps_live_ones() {
    let mut locks = QueueLocks::new();
    locks.lock_batch("G", "c1", &queues(0..3), T0);
    locks.lock_batch("H", "c1", &queues(0..1), T0 + 30_000);
    assert_eq!(locks.expire(T0 + LOCK_LIVE_MS + 1), 3);
    assert_eq!(locks.len(), 1);
    assert!(locks.is_locked_by("H", &queue(0), "c1", T0 + LOCK_LIVE_MS + 1));
    assert_eq!(locks.expire(T0 + 30_000 + LOCK_LIVE_MS + 1), 1);
    assert!(locks.is_empty());
}

#[test]
fn a_group_holds_at_most_its_bound_until_locks_expire() {
    let max = LOCKS_PER_GROUP_MAX as i32;
    let mut locks = QueueLocks::new();
    assert_eq!(
        locks.lock_batch("G", "c1", &queues(0..max + 10), T0).len(),
        LOCKS_PER_GROUP_MAX
    );
    assert!(locks
        .lock_batch("G", "c2", &queues(max..max + 1), T0)
        .is_empty());
    // Renewing what it holds still works at the bound.
    assert_eq!(
        locks.lock_batch("G", "c1", &queues(0..1), T0 + 1),
        [queue(0)]
    );
    // Other groups are not affected.
    assert_eq!(locks.lock_batch("H", "c2", &queues(0..1), T0), [queue(0)]);
    // Once the old locks expire, new ones fit again.
    let later = T0 + LOCK_LIVE_MS + 2;
    assert_eq!(
        locks.lock_batch("G", "c2", &queues(max..max + 1), later),
        [queue(max)]
    );
    assert_eq!(locks.len(), 1);
}

#[test]
fn the_whole_table_is_bounded() {
    let per_group = LOCKS_PER_GROUP_MAX as i32;
    let mut locks = QueueLocks::new();
    let groups = LOCKS_MAX / LOCKS_PER_GROUP_MAX;
    for g in 0..groups {
        let got = locks.lock_batch(&format!("G{g}"), "c", &queues(0..per_group), T0);
        assert_eq!(got.len(), LOCKS_PER_GROUP_MAX);
    }
    assert_eq!(locks.len(), LOCKS_MAX);
    assert!(locks.lock_batch("late", "c", &queues(0..1), T0).is_empty());
    // The refused group left no empty entry behind.
    assert!(!locks.groups.contains_key("late"));
    assert_eq!(
        locks.lock_batch("late", "c", &queues(0..1), T0 + LOCK_LIVE_MS + 1),
        [queue(0)]
    );
    assert_eq!(locks.len(), 1);
}
