//! Calls between shards: typed replies on 2 and 4 executors, Busy at the bounds, Dropped for a
//! ReplyTo dropped unanswered, and the slot of a call that gave up.
#![cfg(not(loom))] // the loom check builds only the protocol

mod support;

use futures_lite::future;
use ringmq_bus::{mesh, BusError, Endpoint, ReplyTo, INBOX_DEPTH};
use std::cell::RefCell;
use std::rc::Rc;
use support::{asker_and_peer, shard, Finish};

/// Turns of 1 ms a shard waits, after the barrier, for its peers' notifications (10 s).
const NOTIFY_WAIT_TURNS: usize = 10_000;

/// What the shards of these tests ask each other; each reply's type is fixed by its variant.
enum Work {
    Add(u64, u64, ReplyTo<u64>),
    Greet(String, ReplyTo<String>),
    /// Served by a future that is pending once: it becomes a task.
    AddLater(u64, u64, ReplyTo<u64>),
    /// Dropped unanswered.
    Ignore(ReplyTo<u64>),
    Notify(usize),
}

/// Serves `Work`; returns how many notifications came in.
fn start(endpoint: Endpoint<Work>) -> (Rc<ringmq_bus::Bus<Work>>, Rc<RefCell<Vec<usize>>>) {
    let notified = Rc::new(RefCell::new(Vec::new()));
    let seen = notified.clone();
    let bus = endpoint.start(move |from, work| {
        let seen = seen.clone();
        async move {
            match work {
                Work::Add(a, b, reply) => reply.send(a + b),
                Work::Greet(name, reply) => reply.send(format!("hello {name} from {from}")),
                Work::AddLater(a, b, reply) => {
                    future::yield_now().await;
                    reply.send(a + b);
                }
                Work::Ignore(reply) => drop(reply),
                Work::Notify(n) => seen.borrow_mut().push(n),
            }
        }
    });
    (bus, notified)
}

/// Every shard calls every other with each kind of work and notifies it; all answers are
/// typed and right, and work that waited was spawned while the rest was served inline.
fn calls_among(shards: usize) {
    let (finish, listeners) = Finish::new(shards);
    let handles: Vec<_> = mesh::<Work>(shards)
        .into_iter()
        .zip(listeners)
        .map(|(endpoint, listener)| {
            let finish = finish.clone();
            shard(&format!("shard-{}", endpoint.id()), move || async move {
                let (bus, notified) = start(endpoint);
                let me = bus.id();
                for peer in (0..bus.shards()).filter(|&peer| peer != me) {
                    let sum = bus.call(peer, |r| Work::Add(me as u64, 40, r)).await;
                    assert_eq!(sum.unwrap(), me as u64 + 40);
                    let hello = bus.call(peer, |r| Work::Greet(format!("{me}"), r)).await;
                    assert_eq!(hello.unwrap(), format!("hello {me} from {me}"));
                    let later = bus.call(peer, |r| Work::AddLater(1, 2, r)).await;
                    assert_eq!(later.unwrap(), 3);
                    bus.send(peer, Work::Notify(me)).unwrap();
                }
                finish.arrive(&listener).await;
                // A peer's Notify was sent before it arrived at the barrier, but it may still be
                // on its way (4 shards on 2 cores): wait for it, bounded.
                for _ in 0..NOTIFY_WAIT_TURNS {
                    if notified.borrow().len() == bus.shards() - 1 {
                        break;
                    }
                    glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
                }
                let mut notified = notified.borrow().clone();
                notified.sort_unstable();
                (me, bus.stats(), notified)
            })
        })
        .collect();
    for handle in handles {
        let (me, stats, notified) = handle.join().unwrap();
        let peers: Vec<usize> = (0..shards).filter(|&peer| peer != me).collect();
        assert_eq!(
            notified, peers,
            "shard {me} got one notification from each peer"
        );
        let served = peers.len() as u64;
        assert_eq!(
            stats.served_spawned, served,
            "one AddLater per peer became a task"
        );
        assert_eq!(stats.served_inline, 3 * served, "the rest completed inline");
        assert_eq!((stats.calls_pending, stats.replies_owed), (0, 0));
    }
}

#[test]
fn typed_calls_between_two_shards() {
    calls_among(2);
}

#[test]
fn typed_calls_among_four_shards() {
    calls_among(4);
}

/// The peer drops the ReplyTo unanswered: the call ends with Dropped, and nothing is left owed.
/// A shard may call itself: the work goes through its own inbox, behind what is queued there,
/// and the answer is typed as any other (the broker's shard 0 asks its own control plane so).
#[test]
fn a_shard_calls_itself_through_its_own_inbox() {
    let handle = shard("self", || async {
        let (bus, notified) = start(mesh::<Work>(1).pop().unwrap());
        let sum = bus.call(0, |r| Work::Add(2, 3, r)).await.unwrap();
        let later = bus.call(0, |r| Work::AddLater(4, 5, r)).await.unwrap();
        bus.send(0, Work::Notify(7)).unwrap();
        let hello = bus.call(0, |r| Work::Greet("me".into(), r)).await.unwrap();
        let notified = notified.borrow().clone();
        (sum, later, hello, notified, bus.stats())
    });
    let (sum, later, hello, notified, stats) = handle.join().unwrap();
    assert_eq!((sum, later), (5, 9));
    assert_eq!(hello, "hello me from 0");
    assert_eq!(
        notified,
        [7],
        "the send was served before the call queued behind it"
    );
    assert_eq!((stats.calls_pending, stats.replies_owed), (0, 0));
}

#[test]
fn a_dropped_reply_to_gives_dropped() {
    let (ignored, answered, stats) = asker_and_peer(
        |peer| start(peer).0,
        |asker| async move {
            let (bus, _) = start(asker);
            let ignored = bus.call(1, Work::Ignore).await;
            let answered = bus.call(1, |r| Work::Add(1, 1, r)).await;
            (ignored, answered, bus.stats())
        },
    );
    assert!(matches!(ignored, Err(BusError::Dropped)), "{ignored:?}");
    assert_eq!(
        answered.unwrap(),
        2,
        "the bus goes on after a dropped ReplyTo"
    );
    assert_eq!((stats.calls_pending, stats.replies_owed), (0, 0));
}

/// A peer that is not receiving (its endpoint never started): its inbox from us fills at
/// INBOX_DEPTH, and then a send or a call is refused at once, before the call builds its work.
#[test]
fn a_full_inbox_refuses_at_once() {
    let mut endpoints = mesh::<Work>(2);
    let asleep = endpoints.pop().unwrap();
    let asker = endpoints.pop().unwrap();
    let asker = shard("asker", move || async move {
        let (bus, _) = start(asker);
        for n in 0..INBOX_DEPTH {
            bus.send(1, Work::Notify(n)).expect("room in the inbox");
        }
        let sent = bus.send(1, Work::Notify(INBOX_DEPTH));
        let mut built = false;
        let called = bus
            .call(1, |r| {
                built = true;
                Work::Add(1, 1, r)
            })
            .await;
        (sent, called, built, bus.stats())
    });
    let (sent, called, built, stats) = asker.join().unwrap();
    drop(asleep);
    assert!(
        matches!(sent, Err(BusError::Busy("shard inbox full"))),
        "{sent:?}"
    );
    assert!(
        matches!(called, Err(BusError::Busy("shard inbox full"))),
        "{called:?}"
    );
    assert!(!built, "a refused call does not build its work");
    assert_eq!((stats.calls_pending, stats.replies_owed), (0, 0));
}
