//! Running a workload: one glommio executor per load thread, each with its share of the
//! connections, producers and queues; a progress line from the main thread once a second;
//! the threads' recorders merged at the end.
//!
//! Thread t of T owns connections t, t+T, t+2T…; producer p sends on connection p % M and
//! queue i is pulled on connection i % M, so every producer and queue lives on the thread of its
//! connection and nothing on the data path is shared between threads but the atomic counters
//! of [`Progress`].

use crate::args::{ConsumeMode, Workload};
use crate::cluster::{Broker, QueueRef};
use crate::error::BenchError;
use crate::recorder::{LatencyKind, Recorder, Summary};
use crate::{consume, produce};
use glommio::sync::Semaphore;
use ringmq::client::{block_on, RemotingClient};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often the progress line is printed.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// How long an end-to-end run's consumers go on after the producers' deadline, for the
/// messages still on their way; they stop sooner once everything sent has been consumed.
pub const E2E_DRAIN: Duration = Duration::from_secs(2);

/// What was found out before the run: brokers, queues and where consumers start and stop.
#[derive(Debug, Clone)]
pub struct Setup {
    pub brokers: Vec<Broker>,
    pub queues: Vec<QueueRef>,
    /// Per queue, the offset consumers start at.
    pub start_offsets: Vec<i64>,
    /// Per queue, the offset catch-up consumers stop at.
    pub end_offsets: Option<Vec<i64>>,
}

/// Counters every thread adds to: the progress line reads them, producers take their message
/// budget from them, and end-to-end consumers learn from them that everything is consumed.
#[derive(Debug, Default)]
pub struct Progress {
    pub sends_taken: AtomicU64,
    pub produced: AtomicU64,
    pub produced_bytes: AtomicU64,
    pub consumed: AtomicU64,
    pub errors: AtomicU64,
    pub producing_threads: AtomicU32,
}

/// One load thread's state, owned by its executor.
pub struct ThreadCtx {
    pub workload: Arc<Workload>,
    pub setup: Arc<Setup>,
    pub progress: Arc<Progress>,
    /// Producers send nothing due at or after this.
    pub deadline: Instant,
    pub produced: RefCell<Recorder>,
    pub consumed: RefCell<Recorder>,
    /// Closed when consumers must stop: it ends their pending long polls.
    stop: Semaphore,
    stopped: Cell<bool>,
}

impl ThreadCtx {
    /// Takes `messages` from the run's message budget; false when it is spent.
    pub fn take_sends(&self, messages: u64) -> bool {
        let before = self.progress.sends_taken.fetch_add(messages, Relaxed);
        before + messages <= self.workload.target.messages
    }

    pub fn consumers_stopped(&self) -> bool {
        self.stopped.get()
    }

    pub fn stop_consumers(&self) {
        if !self.stopped.replace(true) {
            self.stop.close();
        }
    }

    /// Resolves when consumers must stop.
    pub async fn until_stopped(&self) {
        // A closed semaphore fails every acquire: that is the signal.
        let _ = self.stop.acquire(1).await;
    }

    /// Whether an end-to-end run has consumed everything it produced.
    pub fn drained(&self) -> bool {
        let p = &self.progress;
        p.producing_threads.load(Relaxed) == 0
            && p.consumed.load(Relaxed) >= p.produced.load(Relaxed)
    }
}

struct ThreadOutcome {
    started: Instant,
    produced: Recorder,
    consumed: Recorder,
}

/// The merged results.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub produce: Option<Summary>,
    pub consume: Option<Summary>,
}

fn consume_kind(workload: &Workload) -> LatencyKind {
    match (&workload.produce, &workload.consume) {
        (_, Some(c)) if c.mode == ConsumeMode::CatchUp => LatencyKind::Pull,
        _ => LatencyKind::EndToEnd,
    }
}

/// Runs `workload` against `setup`'s brokers; prints a progress line unless `quiet`.
pub fn run(workload: Workload, setup: Setup, quiet: bool) -> Result<RunOutcome, BenchError> {
    let workload = Arc::new(workload);
    let setup = Arc::new(setup);
    let progress = Arc::new(Progress::default());
    let threads = workload.target.threads;
    if workload.produce.is_some() {
        progress.producing_threads.store(threads, Relaxed);
    }
    let epoch = Instant::now();
    let (done_tx, done_rx) = mpsc::channel();
    let mut handles = Vec::new();
    for thread in 0..threads {
        let (workload, setup, progress) = (workload.clone(), setup.clone(), progress.clone());
        let done_tx = done_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("bench-{thread}"))
            .spawn(move || {
                let outcome = block_on(thread_run(thread, workload, setup, progress, epoch))
                    .map_err(BenchError::Runtime)
                    .and_then(|r| r);
                let _ = done_tx.send(outcome);
            })
            .map_err(BenchError::Runtime)?;
        handles.push(handle);
    }
    drop(done_tx);
    let mut outcomes = Vec::new();
    let mut line = ProgressLine::new(epoch);
    loop {
        match done_rx.recv_timeout(PROGRESS_INTERVAL) {
            Ok(outcome) => outcomes.push(outcome),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !quiet {
                    eprintln!("{}", line.next(&progress));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for handle in handles {
        handle
            .join()
            .map_err(|_| BenchError::Thread("a load thread panicked".into()))?;
    }
    let outcomes: Vec<ThreadOutcome> = outcomes.into_iter().collect::<Result<_, _>>()?;
    Ok(merge(&workload, outcomes, epoch))
}

fn merge(workload: &Workload, outcomes: Vec<ThreadOutcome>, epoch: Instant) -> RunOutcome {
    let started = outcomes.iter().map(|o| o.started).min().unwrap_or(epoch);
    let mut produced = Recorder::new(epoch, LatencyKind::Send);
    let mut consumed = Recorder::new(epoch, consume_kind(workload));
    for outcome in &outcomes {
        produced.merge(&outcome.produced);
        consumed.merge(&outcome.consumed);
    }
    // Throughput is over the span from the first thread's start to the last message.
    let span = |r: &Recorder| {
        r.last().map_or(workload.target.duration, |last| {
            last.saturating_duration_since(started)
        })
    };
    RunOutcome {
        produce: workload
            .produce
            .as_ref()
            .map(|_| produced.summary(span(&produced))),
        consume: workload
            .consume
            .as_ref()
            .map(|_| consumed.summary(span(&consumed))),
    }
}

async fn thread_run(
    thread: u32,
    workload: Arc<Workload>,
    setup: Arc<Setup>,
    progress: Arc<Progress>,
    epoch: Instant,
) -> Result<ThreadOutcome, BenchError> {
    let target = &workload.target;
    let (threads, connections) = (target.threads, target.connections);
    // Connection slot c (global) → its clients, one per broker.
    let mut slots: Vec<Option<Rc<[RemotingClient]>>> = vec![None; connections as usize];
    for c in (thread..connections).step_by(threads as usize) {
        let mut clients = Vec::with_capacity(setup.brokers.len());
        for broker in &setup.brokers {
            let client = RemotingClient::connect(&broker.addr)
                .await
                .map_err(|source| BenchError::Remoting {
                    addr: broker.addr.clone(),
                    source,
                })?;
            clients.push(client.with_serialize_type(target.header.into()));
        }
        slots[c as usize] = Some(clients.into());
    }
    let slot = |i: u64| slots[(i % u64::from(connections)) as usize].clone();
    let started = Instant::now();
    let ctx = Rc::new(ThreadCtx {
        workload: workload.clone(),
        setup: setup.clone(),
        progress: progress.clone(),
        deadline: started + target.duration,
        produced: RefCell::new(Recorder::new(epoch, LatencyKind::Send)),
        consumed: RefCell::new(Recorder::new(epoch, consume_kind(&workload))),
        stop: Semaphore::new(0),
        stopped: Cell::new(false),
    });

    let mut pullers = Vec::new();
    if workload.consume.is_some() {
        let stop_at = ctx.deadline
            + if workload.produce.is_some() {
                E2E_DRAIN
            } else {
                Duration::ZERO
            };
        for i in 0..setup.queues.len() {
            if let Some(clients) = slot(i as u64) {
                pullers.push(glommio::spawn_local(consume::pull_loop(
                    ctx.clone(),
                    clients,
                    i,
                )));
            }
        }
        // Weak: a timer still sleeping when the consumers are done must not keep the context.
        let timer_ctx = Rc::downgrade(&ctx);
        glommio::spawn_local(async move {
            glommio::timer::sleep(stop_at.saturating_duration_since(Instant::now())).await;
            if let Some(ctx) = timer_ctx.upgrade() {
                ctx.stop_consumers();
            }
        })
        .detach();
    }
    if let Some(spec) = &workload.produce {
        let mut senders = Vec::new();
        let shared = Rc::new(produce::Shared::new(&workload, &setup, thread, started));
        for p in (thread..spec.producers).step_by(threads as usize) {
            let clients =
                slot(u64::from(p)).expect("producer p lives on the thread of connection p % M");
            let producer = Rc::new(produce::Producer::new(p, clients, &shared));
            for _ in 0..spec.in_flight {
                senders.push(glommio::spawn_local(produce::send_loop(
                    ctx.clone(),
                    shared.clone(),
                    producer.clone(),
                )));
            }
        }
        for sender in senders {
            sender.await;
        }
        progress.producing_threads.fetch_sub(1, Relaxed);
    }
    for puller in pullers {
        puller.await;
    }
    ctx.stop_consumers();
    let ctx =
        Rc::try_unwrap(ctx).map_err(|_| BenchError::Thread("tasks outlived the run".into()))?;
    Ok(ThreadOutcome {
        started,
        produced: ctx.produced.into_inner(),
        consumed: ctx.consumed.into_inner(),
    })
}

/// The line printed once a second: totals and the rates over the last interval.
struct ProgressLine {
    epoch: Instant,
    last_at: Instant,
    last_produced: u64,
    last_consumed: u64,
}

impl ProgressLine {
    fn new(epoch: Instant) -> Self {
        Self {
            epoch,
            last_at: epoch,
            last_produced: 0,
            last_consumed: 0,
        }
    }

    fn next(&mut self, progress: &Progress) -> String {
        let now = Instant::now();
        let produced = progress.produced.load(Relaxed);
        let consumed = progress.consumed.load(Relaxed);
        let seconds = now.duration_since(self.last_at).as_secs_f64().max(1e-3);
        let line = format_progress(
            now.duration_since(self.epoch),
            produced,
            (produced - self.last_produced) as f64 / seconds,
            consumed,
            (consumed - self.last_consumed) as f64 / seconds,
            progress.errors.load(Relaxed),
        );
        self.last_at = now;
        self.last_produced = produced;
        self.last_consumed = consumed;
        line
    }
}

fn format_progress(
    elapsed: Duration,
    produced: u64,
    produce_rate: f64,
    consumed: u64,
    consume_rate: f64,
    errors: u64,
) -> String {
    format!(
        "[{:>6.1}s] produced {produced} ({produce_rate:.0} msg/s)  consumed {consumed} ({consume_rate:.0} msg/s)  errors {errors}",
        elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_totals_and_rates() {
        let line = format_progress(Duration::from_millis(3000), 1200, 400.0, 10, 3.4, 2);
        assert_eq!(
            line,
            "[   3.0s] produced 1200 (400 msg/s)  consumed 10 (3 msg/s)  errors 2"
        );
    }
}
