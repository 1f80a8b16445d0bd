//! A measurement, not a check of speed: GET_ROUTEINFO_BY_TOPIC against the real `ringmq
//! namesrv`, one connection, sequential and pipelined. Ignored by default; run with
//! `cargo test --release -p ringmq --test namesrv_throughput -- --ignored --nocapture`
//! (with `NAMESRV_BENCH_TARGET=host:port` to measure another NameServer instead).
//! Every response is checked, so it also fails if the server answers wrongly under load.

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::response;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Topics the broker registers; requests cycle through them.
const TOPICS: usize = 100;
/// Requests in the sequential run (one in flight).
const SEQUENTIAL_REQUESTS: usize = 20_000;
/// Requests in the pipelined run, and how many are in flight at once.
const PIPELINED_REQUESTS: usize = 200_000;
const IN_FLIGHT: usize = 128;
/// Each run stops early past this, so the measurement is bounded in time too.
const RUN_TIME_MAX: Duration = Duration::from_secs(60);

fn topic_name(i: usize) -> &'static str {
    Box::leak(format!("topic-{}", i % TOPICS).into_boxed_str())
}

/// Runs `requests` route lookups with `in_flight` workers; returns (done, elapsed, latencies µs).
async fn run(
    client: &Rc<RemotingClient>,
    requests: usize,
    in_flight: usize,
    topics: &Rc<Vec<&'static str>>,
) -> (usize, Duration, Vec<u32>) {
    let latencies = Rc::new(RefCell::new(Vec::with_capacity(requests)));
    let started = Instant::now();
    let workers: Vec<_> = (0..in_flight)
        .map(|worker| {
            let (client, latencies, topics) = (client.clone(), latencies.clone(), topics.clone());
            glommio::spawn_local(async move {
                for i in (worker..requests).step_by(in_flight) {
                    if started.elapsed() > RUN_TIME_MAX {
                        return;
                    }
                    let sent = Instant::now();
                    let resp = call(&client, route_request(topics[i % TOPICS], 479)).await;
                    assert_eq!(resp.code, response::SUCCESS);
                    latencies
                        .borrow_mut()
                        .push(sent.elapsed().as_micros() as u32);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await;
    }
    let elapsed = started.elapsed();
    let mut latencies = latencies.take();
    latencies.sort_unstable();
    (latencies.len(), elapsed, latencies)
}

fn report(name: &str, (done, elapsed, latencies): (usize, Duration, Vec<u32>)) {
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "{name}: {done} requests in {elapsed:.2?} = {:.0} req/s; latency µs p50 {} p99 {} p99.9 {} max {}",
        done as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        pct(0.999),
        latencies.last().unwrap()
    );
}

#[test]
#[ignore = "measurement; run explicitly with --release"]
fn route_lookup_throughput() {
    // NAMESRV_BENCH_TARGET=host:port measures another NameServer (e.g. Apache's) the same way.
    let target = std::env::var("NAMESRV_BENCH_TARGET").ok();
    let ours = target.is_none().then(|| NameServerProcess::start(None));
    let addr = target.unwrap_or_else(|| ours.as_ref().unwrap().addr.clone());
    block_on(async {
        let topics: Rc<Vec<&'static str>> = Rc::new((0..TOPICS).map(topic_name).collect());
        let table: Vec<(&'static str, i32)> = topics.iter().map(|t| (*t, 8)).collect();
        let broker_conn = RemotingClient::connect(&addr).await.expect("connect");
        register(
            &broker_conn,
            &Broker::master("broker-a", "127.0.0.1:10911", &table),
        )
        .await;
        let client = Rc::new(RemotingClient::connect(&addr).await.expect("connect"));
        report(
            "sequential",
            run(&client, SEQUENTIAL_REQUESTS, 1, &topics).await,
        );
        report(
            &format!("pipelined x{IN_FLIGHT}"),
            run(&client, PIPELINED_REQUESTS, IN_FLIGHT, &topics).await,
        );
    })
    .unwrap();
}
