//! The test that would have caught glommio's lost wake-up: many rounds of ping-pong between
//! executors that go idle between messages, so that every message has to wake a sleeping
//! shard, while CPU hog threads make the scheduler preempt them at every point of the
//! protocol. Every round must complete; a stall is reported, with each shard's progress,
//! after STALL_TIMEOUT instead of hanging the test run.

#![cfg(not(loom))] // the loom check builds only the protocol

mod support;

use futures_lite::future;
use ringmq_bus::{mesh, Bus, BusStats, ReplyTo};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;
use support::{shard, Finish};

/// Rounds each shard makes: about 4 s per test in release, 3 s in a debug build, with the
/// hogs on this two-core machine (a round then takes about 0.4 ms and 1 ms).
const ROUNDS: u64 = if cfg!(debug_assertions) {
    3_000
} else {
    10_000
};
/// Threads that spin while the shards ping-pong (the machine has two cores).
const HOGS: usize = 2;
/// Only a lost wake-up comes near it; it bounds the test instead of letting it hang.
const STALL_TIMEOUT: Duration = Duration::from_secs(120);

enum Work {
    Ping(u64, ReplyTo<u64>),
    /// Answered from a plain thread, not an executor: a ReplyTo goes anywhere.
    PingByThread(u64, ReplyTo<u64>),
}

/// Threads that burn CPU until dropped.
struct Hogs {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Hogs {
    fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let spin = |stop: Arc<AtomicBool>| move || while !stop.load(Ordering::Relaxed) {};
        let threads = (0..count)
            .map(|_| std::thread::spawn(spin(stop.clone())))
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).for_each(|hog| hog.join().unwrap());
    }
}

/// A ping for the answerer thread, or `None`: stop (glommio does not drop an executor's
/// detached tasks when it ends, so the buses' senders never go away by themselves).
type Answer = Option<(u64, ReplyTo<u64>)>;

/// Answers pings handed to it from any shard, until told to stop.
fn answerer() -> (mpsc::Sender<Answer>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<Answer>();
    let answer = move || {
        rx.iter()
            .map_while(|ping| ping)
            .for_each(|(n, r)| r.send(n + 1))
    };
    (tx, std::thread::spawn(answer))
}

fn start(endpoint: ringmq_bus::Endpoint<Work>, by_thread: mpsc::Sender<Answer>) -> Rc<Bus<Work>> {
    endpoint.start(move |_, work| {
        match work {
            Work::Ping(n, reply) => reply.send(n + 1),
            Work::PingByThread(n, reply) => by_thread.send(Some((n, reply))).unwrap(),
        }
        future::ready(())
    })
}

/// Shard `me` pings its peers in turn, one call at a time; every third answer comes from
/// the answerer thread.
async fn ping(bus: &Bus<Work>, progress: &AtomicU64) {
    let me = bus.id();
    let peers = bus.shards() as u64 - 1;
    for round in 0..ROUNDS {
        let peer = (me as u64 + 1 + round % peers) as usize % bus.shards();
        let answer = if round % 3 == 2 {
            bus.call(peer, |r| Work::PingByThread(round, r)).await
        } else {
            bus.call(peer, |r| Work::Ping(round, r)).await
        };
        assert_eq!(answer.unwrap(), round + 1, "shard {me} round {round}");
        progress.store(round + 1, Ordering::Relaxed);
    }
}

fn ping_pong(shards: usize) {
    let _hogs = Hogs::start(HOGS);
    let (by_thread, answerer) = answerer();
    let (finish, listeners) = Finish::new(shards);
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..shards).map(|_| AtomicU64::new(0)).collect());
    let (done_tx, done_rx) = mpsc::channel::<BusStats>();
    let handles: Vec<_> = mesh::<Work>(shards)
        .into_iter()
        .zip(listeners)
        .map(|(endpoint, listener)| {
            let (finish, progress, done, by_thread) = (
                finish.clone(),
                progress.clone(),
                done_tx.clone(),
                by_thread.clone(),
            );
            shard(&format!("ping-{}", endpoint.id()), move || async move {
                let bus = start(endpoint, by_thread);
                ping(&bus, &progress[bus.id()]).await;
                finish.arrive(&listener).await;
                done.send(bus.stats()).unwrap();
            })
        })
        .collect();
    drop(done_tx);
    let started = std::time::Instant::now();
    for _ in 0..shards {
        let stats = done_rx.recv_timeout(STALL_TIMEOUT).unwrap_or_else(|_| {
            let rounds: Vec<_> = progress.iter().map(|p| p.load(Ordering::Relaxed)).collect();
            panic!("stalled: rounds done per shard {rounds:?} of {ROUNDS} (a lost wake-up)")
        });
        // Proof that the shards really slept between messages, which is what is tested: each
        // round, a shard waiting for its answer sleeps (about 1.1 sleeps a round, measured).
        assert!(
            stats.sleeps >= ROUNDS / 2,
            "the shards did not sleep: {stats:?}"
        );
        assert_eq!((stats.calls_pending, stats.replies_owed), (0, 0));
    }
    eprintln!(
        "{shards} shards, {ROUNDS} rounds each: {:?}",
        started.elapsed()
    );
    handles.into_iter().for_each(|shard| shard.join().unwrap());
    by_thread.send(None).unwrap();
    answerer.join().unwrap();
}

#[test]
fn ping_pong_between_two_sleeping_shards_under_cpu_hogs() {
    ping_pong(2);
}

#[test]
fn ping_pong_among_four_sleeping_shards_under_cpu_hogs() {
    ping_pong(4);
}
