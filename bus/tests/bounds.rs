//! The pending-calls bound: calls past it are refused at once, a call that gives up frees its
//! slot, and its late answer is discarded (the router's `forwards_past_the_bound` idea).
#![cfg(not(loom))] // the loom check builds only the protocol

mod support;

use futures_lite::future;
use ringmq_bus::{Bus, BusError, ReplyTo, CALLS_PENDING_MAX, REPLIES_OWED_MAX};
use std::cell::RefCell;
use std::rc::Rc;
use support::asker_and_peer;

enum Work {
    /// Held by the owner until AnswerAll.
    Hold(ReplyTo<usize>),
    /// Answers every held call with its arrival number, in arrival order.
    AnswerAll,
}

/// An owner shard that holds every call until told to answer them all.
fn owner(endpoint: ringmq_bus::Endpoint<Work>) -> Rc<Bus<Work>> {
    let held = Rc::new(RefCell::new(Vec::new()));
    endpoint.start(move |_, work| {
        let held = held.clone();
        async move {
            match work {
                Work::Hold(reply) => held.borrow_mut().push(reply),
                Work::AnswerAll => {
                    let held = std::mem::take(&mut *held.borrow_mut());
                    held.into_iter().enumerate().for_each(|(n, r)| r.send(n));
                }
            }
        }
    })
}

type Calls = Vec<glommio::Task<Result<usize, BusError>>>;

/// Makes calls to shard 1, each in its own task, until `until(bus)` holds; each is waiting
/// before the next is made. A call refused because the owner's inbox is momentarily full is
/// made again once the owner has drained some.
async fn call_until(bus: &Rc<Bus<Work>>, calls: &mut Calls, until: impl Fn(&Bus<Work>) -> bool) {
    while !until(bus) {
        let pending = bus.stats().calls_pending;
        let caller = bus.clone();
        calls.push(glommio::spawn_local(async move {
            loop {
                match caller.call(1, Work::Hold).await {
                    Err(BusError::Busy("shard inbox full")) => future::yield_now().await,
                    other => return other,
                }
            }
        }));
        // Bounded: the call is admitted once the owner drains its inbox, or it fails the test.
        for _ in 0..CALLS_PENDING_MAX {
            if bus.stats().calls_pending > pending {
                break;
            }
            glommio::executor().yield_task_queue_now().await;
        }
        assert!(
            bus.stats().calls_pending > pending,
            "a call below the bounds waits"
        );
    }
}

#[test]
fn calls_past_the_bounds_are_refused_and_slots_come_back() {
    let (refused, stats) = asker_and_peer(owner, |asker| async move {
        let bus = asker.start(|_, _| async {});
        (past_the_bounds(&bus).await, bus.stats())
    });
    assert_eq!(
        refused,
        [
            Err(BusError::Busy("too many calls waiting on other shards")),
            Err(BusError::Busy("too many replies owed to this shard")),
        ]
    );
    assert_eq!(
        (stats.calls_pending, stats.replies_owed),
        (0, 0),
        "all answered"
    );
}

/// Fills the pending bound; gives up on calls, which frees their slots but not their owed
/// replies; fills it again, which reaches the owed bound; then has the owner answer all.
/// Returns the two refusals.
async fn past_the_bounds(bus: &Rc<Bus<Work>>) -> [Result<usize, BusError>; 2] {
    let mut calls = Calls::new();
    let pending_max = |bus: &Bus<Work>| bus.stats().calls_pending == CALLS_PENDING_MAX;
    call_until(bus, &mut calls, pending_max).await;
    let too_many_calls = call_past_a_full_inbox(bus).await;
    give_up(bus, &mut calls, CALLS_PENDING_MAX / 2).await;
    give_up(bus, &mut calls, CALLS_PENDING_MAX / 2).await;
    assert_eq!(
        bus.stats().replies_owed,
        CALLS_PENDING_MAX,
        "given up, still owed"
    );
    call_until(bus, &mut calls, pending_max).await;
    assert_eq!(bus.stats().replies_owed, REPLIES_OWED_MAX);
    give_up(bus, &mut calls, 1).await;
    let too_many_owed = call_past_a_full_inbox(bus).await;
    answer_all(bus, calls).await;
    [too_many_calls, too_many_owed]
}

/// A call, made again while the owner's inbox is momentarily full (its thread not yet run on
/// a loaded host), so that what answers it is the bound under test.
async fn call_past_a_full_inbox(bus: &Rc<Bus<Work>>) -> Result<usize, BusError> {
    loop {
        match bus.call(1, Work::Hold).await {
            Err(BusError::Busy("shard inbox full")) => future::yield_now().await,
            other => return other,
        }
    }
}

/// Gives up on the `n` earliest calls: their slots are free at once (glommio drops a
/// cancelled task's future when it next runs it), while their replies stay owed.
async fn give_up(bus: &Rc<Bus<Work>>, calls: &mut Calls, n: usize) {
    let (pending, owed) = (bus.stats().calls_pending, bus.stats().replies_owed);
    drop(calls.drain(..n));
    for _ in 0..n {
        if bus.stats().calls_pending == pending - n {
            break;
        }
        glommio::executor().yield_task_queue_now().await;
    }
    assert_eq!(bus.stats().calls_pending, pending - n, "slots freed");
    assert_eq!(bus.stats().replies_owed, owed, "replies still owed");
}

/// The owner answers in arrival order; the calls still waiting get their own numbers, and the
/// answers of the calls that gave up are discarded on the way.
async fn answer_all(bus: &Rc<Bus<Work>>, calls: Calls) {
    while bus.send(1, Work::AnswerAll).is_err() {
        glommio::executor().yield_task_queue_now().await;
    }
    let mut previous = None;
    for call in calls {
        let n = call.await.expect("a waiting call is answered");
        assert!(previous < Some(n), "answers come in arrival order");
        previous = Some(n);
    }
}
