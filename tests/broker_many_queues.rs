//! Many queues on one broker process: topics of Apache's largest writeQueueNums (1024) until
//! there are `RINGMQ_TEST_QUEUES` queues (default 20 480; the benchmark in docs/BENCHMARKS.md
//! runs 102 400), a message sent to and pulled from every one, rounds of them, a crash and a
//! recovery; the broker's RSS is read from /proc after each round and must stay bounded: the
//! consume queues hold only their unpersisted tails in memory, their files are not kept open.

mod broker_support;

use broker_support::requests::{call, create_topic, pull, records, send};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::response;
use std::rc::Rc;
use std::time::Duration;

/// Apache's `writeQueueNums` bound, the most queues a topic may have.
const QUEUES_PER_TOPIC: i32 = 1024;
const QUEUES_DEFAULT: usize = 20 * QUEUES_PER_TOPIC as usize;
/// Requests in flight at once (on one connection; responses match by opaque).
const IN_FLIGHT: usize = 256;
const ROUNDS: i64 = 3;
/// What each queue may add to the broker's RSS: its consume queue's state, its first page
/// cached by the persist that wrote it (until evicted), the broker's per-queue tables.
/// Measured 1.1 KiB at 102 400 queues (docs/BENCHMARKS.md).
const RSS_PER_QUEUE_MAX: u64 = 2048;
/// What the rounds after the first may add, with 2 shards: the caches bounded per shard, the
/// log's hot tail (64 MiB) and the consume-queue pages (16 MiB); the queues' entries stay on
/// disk (measured ~0.5 KiB a message, records and their key-index hits).
const RSS_GROWTH_AFTER_FIRST_MAX: u64 = (2 * (64 + 16)) << 20;

fn queues() -> usize {
    std::env::var("RINGMQ_TEST_QUEUES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(QUEUES_DEFAULT)
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

fn topic(i: usize) -> String {
    format!("Many{}", i / QUEUES_PER_TOPIC as usize)
}

fn queue_id(i: usize) -> i32 {
    (i % QUEUES_PER_TOPIC as usize) as i32
}

/// Runs `request(i)` for every queue `i`, at most [`IN_FLIGHT`] at once, checking each answer.
async fn for_every_queue<F, Fut>(n: usize, request: F)
where
    F: Fn(usize) -> Fut + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let request = Rc::new(request);
    let mut at = 0;
    while at < n {
        let end = n.min(at + IN_FLIGHT);
        let tasks: Vec<_> = (at..end)
            .map(|i| {
                let request = request.clone();
                glommio::spawn_local(async move { request(i).await })
            })
            .collect();
        for task in tasks {
            task.await;
        }
        at = end;
    }
}

async fn send_round(client: &Rc<RemotingClient>, n: usize, round: i64) {
    let client = client.clone();
    for_every_queue(n, move |i| {
        let client = client.clone();
        async move {
            let body = format!("q{i}-r{round}");
            let got = call(&client, send(&topic(i), queue_id(i), body.as_bytes(), &[])).await;
            assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
        }
    })
    .await;
}

/// Pulls every queue from offset 0 and checks it holds exactly `rounds` messages, in order.
async fn pull_all(client: &Rc<RemotingClient>, n: usize, rounds: i64) {
    let client = client.clone();
    for_every_queue(n, move |i| {
        let client = client.clone();
        async move {
            let request = pull("G", &topic(i), queue_id(i), 0, Some("*"), 0);
            let got = call(&client, request).await;
            assert_eq!(got.code, response::SUCCESS, "queue {i}: {:?}", got.remark);
            let bodies: Vec<String> = records(&got)
                .iter()
                .map(|r| String::from_utf8(r.body().to_vec()).unwrap())
                .collect();
            let expected: Vec<String> = (0..rounds).map(|r| format!("q{i}-r{r}")).collect();
            assert_eq!(bodies, expected, "queue {i}");
        }
    })
    .await;
}

#[test]
fn a_hundred_thousand_queues_send_pull_and_recover_with_bounded_rss() {
    let n = queues();
    let mut broker = Standalone::start(2);
    let addr = broker.broker_addr.clone();
    let topics = n.div_ceil(QUEUES_PER_TOPIC as usize);
    block_on(async {
        let client = RemotingClient::connect(&addr).await.unwrap();
        for t in 0..topics {
            let got = call(&client, create_topic(&topic(t * 1024), QUEUES_PER_TOPIC)).await;
            assert_eq!(got.code, response::SUCCESS, "{:?}", got.remark);
        }
    })
    .unwrap();
    let rss_empty = rss_bytes(broker.pid());
    let mut rss_rounds = Vec::new();
    block_on(async {
        let client = Rc::new(RemotingClient::connect(&addr).await.unwrap());
        for round in 0..ROUNDS {
            send_round(&client, n, round).await;
            pull_all(&client, n, round + 1).await;
            // A persist (every second) drops the persisted tails.
            glommio::timer::sleep(Duration::from_millis(2500)).await;
            rss_rounds.push(rss_bytes(broker.pid()));
        }
    })
    .unwrap();
    eprintln!(
        "{n} queues: RSS {} MiB with topics only, {:?} MiB after each round",
        rss_empty >> 20,
        rss_rounds.iter().map(|r| r >> 20).collect::<Vec<_>>()
    );
    let per_queue = rss_rounds[0].saturating_sub(rss_empty) / n as u64;
    assert!(
        per_queue <= RSS_PER_QUEUE_MAX,
        "{per_queue} bytes of RSS per queue"
    );
    let growth = rss_rounds[ROUNDS as usize - 1].saturating_sub(rss_rounds[0]);
    assert!(
        growth <= RSS_GROWTH_AFTER_FIRST_MAX,
        "RSS grew {} MiB over later rounds",
        growth >> 20
    );

    broker.kill();
    broker.start_again();
    let rss_recovered = rss_bytes(broker.pid());
    // Recovery scans only what follows the last checkpoint: the persists kept up with 100 000
    // queues, so that is far less than the last round's records (~200 bytes each).
    for _shard in 0..2 {
        let line = broker.wait_for_any_log(&["shard recovered shard="]);
        let scanned: u64 = line
            .split_whitespace()
            .find_map(|field| field.strip_prefix("scanned_bytes="))
            .and_then(|v| v.parse().ok())
            .expect("scanned_bytes in the recovery line");
        assert!(scanned < 100 * n as u64 / 2, "{line}");
    }
    block_on(async {
        let client = Rc::new(RemotingClient::connect(&addr).await.unwrap());
        pull_all(&client, n, ROUNDS).await;
    })
    .unwrap();
    eprintln!(
        "after kill -9: RSS {} MiB recovered, {} MiB after pulling every queue",
        rss_recovered >> 20,
        rss_bytes(broker.pid()) >> 20
    );
}
