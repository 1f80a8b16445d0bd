//! What the bus's tests share: executors sized for the sandbox, an end-of-test barrier that
//! keeps every shard serving until all are done, and a look at a thread's scheduling.

#![allow(dead_code)] // each test binary uses its own part of this

use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};
use ringmq_bus::{doorbell, mesh, Bell, Bus, Endpoint, Listener};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Enough for glommio's rings; these executors do no DMA I/O (the sandbox locks 8 MiB).
pub const IO_MEMORY: usize = 512 << 10;

/// Runs `run` on a new, unpinned glommio executor (the machine's two cores are shared).
pub fn shard<T, F, Fut>(name: &str, run: F) -> ExecutorJoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    LocalExecutorBuilder::new(Placement::Unbound)
        .name(name)
        .io_memory(IO_MEMORY)
        .spawn(run)
        .expect("start an executor")
}

/// A barrier for the end of a test: a shard that has done its part keeps serving the others
/// (awaiting its doorbell, not blocking its thread) until every shard has arrived.
pub struct Finish {
    arrived: AtomicUsize,
    bells: Vec<Bell>,
}

impl Finish {
    /// The barrier, and one listener per shard.
    pub fn new(shards: usize) -> (Arc<Self>, Vec<Listener>) {
        let (bells, listeners) = (0..shards).map(|_| doorbell()).unzip();
        let finish = Self {
            arrived: AtomicUsize::new(0),
            bells,
        };
        (Arc::new(finish), listeners)
    }

    pub async fn arrive(&self, listener: &Listener) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        self.bells.iter().for_each(Bell::ring);
        while self.arrived.load(Ordering::SeqCst) < self.bells.len() {
            listener.wait().await;
        }
    }
}

/// Runs a two-shard mesh: shard 1 is started by `start_peer` and serves until shard 0 has
/// run `ask` (which starts its own endpoint). Returns what `ask` returned.
pub fn asker_and_peer<W, S, A, Fut, T>(start_peer: S, ask: A) -> T
where
    W: Send + 'static,
    S: FnOnce(Endpoint<W>) -> Rc<Bus<W>> + Send + 'static,
    A: FnOnce(Endpoint<W>) -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    let mut endpoints = mesh::<W>(2);
    let (finish, mut listeners) = Finish::new(2);
    let (peer, peer_listener) = (endpoints.pop().unwrap(), listeners.pop().unwrap());
    let (asker, asker_listener) = (endpoints.pop().unwrap(), listeners.pop().unwrap());
    let other = finish.clone();
    let peer = shard("peer", move || async move {
        let _bus = start_peer(peer);
        other.arrive(&peer_listener).await;
    });
    let asker = shard("asker", move || async move {
        let asked = ask(asker).await;
        finish.arrive(&asker_listener).await;
        asked
    });
    let asked = asker.join().unwrap();
    peer.join().unwrap();
    asked
}

/// The calling thread's kernel id, to look at it from another thread.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// How the kernel has scheduled one thread of this process so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// 'S' while it sleeps (an idle glommio executor sleeps in io_uring_enter).
    pub state: char,
    /// Times it went to sleep plus times it was preempted: unchanged means it never ran.
    pub switches: u64,
    pub cpu_ns: u64,
}

pub fn scheduled(tid: i32) -> Scheduled {
    let task = format!("/proc/self/task/{tid}");
    let read = |file: &str| {
        let path = format!("{task}/{file}");
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
    };
    let stat = read("stat");
    // The command name is in parentheses and may hold spaces: the state follows the last ')'.
    let state = stat[stat.rfind(')').expect("stat") + 2..].chars().next();
    let status = read("status");
    let switches = status
        .lines()
        .filter(|line| line.contains("ctxt_switches"))
        .map(|line| {
            line.split_whitespace()
                .last()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    let schedstat = read("schedstat");
    let cpu_ns = schedstat
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    Scheduled {
        state: state.expect("state"),
        switches,
        cpu_ns,
    }
}

/// Polls (bounded) until thread `tid` sleeps: a test that must ring a sleeping executor waits
/// for that state rather than hoping a pause was long enough.
pub fn wait_until_asleep(tid: i32) -> Scheduled {
    const POLLS_MAX: usize = 20_000;
    for _ in 0..POLLS_MAX {
        let now = scheduled(tid);
        if now.state == 'S' {
            return now;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    panic!("thread {tid} did not go to sleep within {POLLS_MAX} polls");
}

/// Waits (bounded) for a quiet moment: thread `tid` asleep and not woken across `QUIET`.
/// A thread that wakes periodically more often than that never gets there and fails here.
pub fn wait_until_quiet(tid: i32) -> Scheduled {
    const QUIET: Duration = Duration::from_millis(50);
    const TRIES_MAX: usize = 40;
    for _ in 0..TRIES_MAX {
        let before = wait_until_asleep(tid);
        std::thread::sleep(QUIET);
        let after = scheduled(tid);
        if after.state == 'S' && after.switches == before.switches {
            return after;
        }
    }
    panic!("thread {tid} was not quiet for {QUIET:?} in {TRIES_MAX} tries");
}
