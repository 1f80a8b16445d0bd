//! Wake-ups that must not be lost and sleeps that must be real: a doorbell rung from a plain
//! thread wakes a sleeping executor, rings coalesce, and an idle shard does not run at all.

#![cfg(not(loom))] // the loom check builds only the protocol

mod support;

use futures_lite::future;
use glommio::timer::sleep;
use ringmq_bus::{doorbell, mesh, ReplyTo};
use std::sync::mpsc;
use std::time::Duration;
use support::{scheduled, shard, thread_id, wait_until_asleep, wait_until_quiet};

/// How long a test waits for an executor to answer before it calls the wake-up lost. Only a
/// lost wake-up comes near it; it bounds the test instead of letting it hang.
const STALL_TIMEOUT: Duration = Duration::from_secs(60);

#[test]
fn a_doorbell_rung_from_a_std_thread_wakes_a_sleeping_executor() {
    const ROUNDS: usize = 20;
    let (bell, listener) = doorbell();
    let (tid_tx, tid_rx) = mpsc::channel();
    let (ack_tx, ack_rx) = mpsc::channel();
    let executor = shard("listener", move || async move {
        tid_tx.send(thread_id()).unwrap();
        for _ in 0..ROUNDS {
            listener.wait().await;
            ack_tx.send(()).unwrap();
        }
    });
    let tid = tid_rx.recv().unwrap();
    for round in 0..ROUNDS {
        wait_until_asleep(tid);
        bell.ring();
        let woke = ack_rx.recv_timeout(STALL_TIMEOUT);
        assert!(woke.is_ok(), "round {round}: the ring was lost");
    }
    executor.join().unwrap();
}

#[test]
fn rings_before_a_wait_return_from_it_once() {
    let (bell, listener) = doorbell();
    let executor = shard("listener", move || async move {
        (0..3).for_each(|_| bell.ring());
        listener.wait().await;
        let again = future::poll_once(listener.wait()).await;
        let from = bell.clone();
        std::thread::spawn(move || from.ring()).join().unwrap();
        listener.wait().await;
        again.is_none()
    });
    assert!(executor.join().unwrap(), "three rings made two returns");
}

enum Work {
    Ping(u64, ReplyTo<u64>),
}

fn serve(_: usize, work: Work) -> future::Ready<()> {
    let Work::Ping(n, reply) = work;
    reply.send(n + 1);
    future::ready(())
}

/// An idle shard, whose only tasks wait on its bus and on its stop bell, does not run at all:
/// once it has settled after start-up (glommio wakes a new executor a few times in its first
/// milliseconds), its thread is neither scheduled (its context switches do not change) nor
/// charged CPU time over the window. A shard with the 10 ms timer this crate replaces is watched over the
/// same window and does wake: the measure can see a wake-up. Then a call wakes the idle one.
#[test]
fn an_idle_shard_sleeps_until_called() {
    const WINDOW: Duration = Duration::from_millis(300);
    let mut endpoints = mesh::<Work>(2);
    let (caller_end, idle_end) = (endpoints.remove(0), endpoints.remove(0));
    let (tid_tx, tid_rx) = mpsc::channel();
    let [(idle_bell, idle_stop), (ticker_bell, ticker_stop), (call_bell, call_now)] =
        [doorbell(), doorbell(), doorbell()];
    let idle_tid = tid_tx.clone();
    let idle = shard("idle", move || async move {
        let bus = idle_end.start(serve);
        idle_tid.send(("idle", thread_id())).unwrap();
        idle_stop.wait().await;
        bus.stats()
    });
    let ticker = shard("ticker", move || async move {
        glommio::spawn_local(async {
            loop {
                sleep(Duration::from_millis(10)).await;
            }
        })
        .detach();
        tid_tx.send(("ticker", thread_id())).unwrap();
        ticker_stop.wait().await;
    });
    let caller = shard("caller", move || async move {
        let bus = caller_end.start(serve);
        call_now.wait().await;
        bus.call(1, |r| Work::Ping(41, r)).await
    });
    let mut tids: Vec<_> = tid_rx.iter().take(2).collect();
    tids.sort();
    let [(_, idle_tid), (_, ticker_tid)] = [tids[0], tids[1]];
    let (idle_before, ticker_before) = (wait_until_quiet(idle_tid), scheduled(ticker_tid));
    std::thread::sleep(WINDOW);
    let (idle_after, ticker_after) = (scheduled(idle_tid), scheduled(ticker_tid));
    call_bell.ring();
    let answer = caller.join().unwrap();
    idle_bell.ring();
    ticker_bell.ring();
    let stats = idle.join().unwrap();
    ticker.join().unwrap();
    let cpu_ns = idle_after.cpu_ns - idle_before.cpu_ns;
    let ticker_wakes = ticker_after.switches - ticker_before.switches;
    eprintln!("over {WINDOW:?}: idle shard {cpu_ns} ns on CPU, ticker woke {ticker_wakes} times");
    assert_eq!(idle_after.state, 'S', "the idle shard still sleeps");
    assert_eq!(
        idle_after.switches, idle_before.switches,
        "the idle shard never woke"
    );
    assert!(cpu_ns < 50_000, "the idle shard ran for {cpu_ns} ns");
    assert!(
        ticker_wakes >= 3,
        "a 10 ms timer woke its shard {ticker_wakes} times"
    );
    assert_eq!(answer.unwrap(), 42, "the idle shard woke for a call");
    assert!(stats.sleeps >= 1 && stats.served_inline == 1, "{stats:?}");
}
