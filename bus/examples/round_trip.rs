//! Round-trip latency of a call between two idle shards, next to the same ping-pong over
//! glommio's shared channels (with no timer to rescue a lost wake-up).
//!
//! `cargo run --release -p ringmq-bus --example round_trip [rounds [hogs]]`: `hogs` threads
//! spin meanwhile (default 0), to see the wake-ups under a preempting scheduler.
//!
//! Shard 0 calls shard 1 once at a time, so shard 1 sleeps before each call and shard 0
//! before each answer: every round trip includes two wake-ups of sleeping executors.

use glommio::channels::shared_channel;
use glommio::{LocalExecutorBuilder, Placement};
use ringmq_bus::{mesh, ReplyTo};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Enough for glommio's rings; no DMA I/O here (the sandbox locks 8 MiB).
const IO_MEMORY: usize = 512 << 10;
/// A glommio round trip slower than this is counted as a wake-up that was lost.
const STALL_TIMEOUT: Duration = Duration::from_secs(5);

struct Ping(u64, ReplyTo<u64>);

fn executor<T: Send + 'static, Fut: std::future::Future<Output = T> + 'static>(
    run: impl FnOnce() -> Fut + Send + 'static,
) -> glommio::ExecutorJoinHandle<T> {
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(IO_MEMORY)
        .spawn(run)
        .expect("start an executor")
}

/// Round-trip times through the bus, in order.
fn bus_round_trips(rounds: u64) -> Vec<Duration> {
    let mut endpoints = mesh::<Ping>(2);
    let (stop_bell, stop) = ringmq_bus::doorbell();
    let server = endpoints.pop().unwrap();
    let client = endpoints.pop().unwrap();
    let server = executor(move || async move {
        let _bus = server.start(|_, Ping(n, reply)| async move { reply.send(n + 1) });
        stop.wait().await;
    });
    let client = executor(move || async move {
        let bus = client.start(|_, _| async {});
        let mut times = Vec::with_capacity(rounds as usize);
        for n in 0..rounds {
            let started = Instant::now();
            let answer = bus.call(1, |reply| Ping(n, reply)).await;
            times.push(started.elapsed());
            assert_eq!(answer.unwrap(), n + 1);
        }
        times
    });
    let times = client.join().unwrap();
    stop_bell.ring();
    server.join().unwrap();
    times
}

/// Round-trip times through two glommio shared channels, or the round that stalled.
fn glommio_round_trips(rounds: u64) -> Result<Vec<Duration>, u64> {
    let (ask_tx, ask_rx) = shared_channel::new_bounded::<u64>(1);
    let (answer_tx, answer_rx) = shared_channel::new_bounded::<u64>(1);
    let (progress_tx, progress) = mpsc::channel();
    let _server = executor(move || async move {
        let (asks, answers) = (ask_rx.connect().await, answer_tx.connect().await);
        while let Some(n) = asks.recv().await {
            answers.send(n + 1).await.unwrap();
        }
    });
    let _client = executor(move || async move {
        let (asks, answers) = (ask_tx.connect().await, answer_rx.connect().await);
        for n in 0..rounds {
            let started = Instant::now();
            asks.send(n).await.unwrap();
            assert_eq!(answers.recv().await, Some(n + 1));
            progress_tx.send(started.elapsed()).unwrap();
        }
    });
    // Not joined: a stalled executor never ends, and the process exits past it.
    (0..rounds)
        .map(|n| progress.recv_timeout(STALL_TIMEOUT).map_err(|_| n))
        .collect()
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: {} round trips, p50 {:?} p99 {:?} p99.9 {:?} max {:?}",
        times.len(),
        at(0.5),
        at(0.99),
        at(0.999),
        at(1.0)
    );
}

/// Starts `count` threads that spin until the process exits.
fn hogs(count: usize) {
    for _ in 0..count {
        std::thread::spawn(|| loop {
            std::hint::spin_loop();
        });
    }
}

fn main() {
    let arg = |n: usize, default: u64| {
        let arg = std::env::args().nth(n);
        arg.map_or(default, |a| a.parse().expect("a number"))
    };
    let rounds = arg(1, 10_000);
    hogs(arg(2, 0) as usize);
    report("ringmq-bus call", bus_round_trips(rounds));
    match glommio_round_trips(rounds) {
        Ok(times) => report("glommio shared_channel", times),
        Err(round) => println!("glommio shared_channel: stalled at round {round} (lost wake-up)"),
    }
    std::process::exit(0);
}
