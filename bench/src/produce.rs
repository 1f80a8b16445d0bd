//! Producers. Each producer runs `--in-flight` send loops on its thread's executor; a loop
//! sends, waits for the response, records it and sends again, so a producer never has more
//! than its window outstanding. Closed loop: the next send starts when a loop is free, and
//! latency is the request's round trip. Open loop: every send has a due time from the
//! [`Pacer`] and latency is measured from it, however late the send actually went out.

use crate::args::Workload;
use crate::cluster::QueueRef;
use crate::message::{key_of, pick_queue, SendTemplate};
use crate::pacing::Pacer;
use crate::run::{Setup, ThreadCtx};
use ringmq::client::RemotingClient;
use ringmq::protocol::codes::response;
use ringmq::server::connection::RemotingError;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// What the producers of one thread share.
pub struct Shared {
    template: RefCell<SendTemplate>,
    queues: Vec<QueueRef>,
    broker_names: Vec<Option<String>>,
    producers: u32,
    keys: Option<u32>,
    rate: Option<u64>,
    start: Instant,
}

impl Shared {
    pub fn new(workload: &Workload, setup: &Setup, thread: u32, start: Instant) -> Self {
        let spec = workload.produce.as_ref().expect("a produce workload");
        Self {
            template: RefCell::new(SendTemplate::new(
                workload.target.topic.clone(),
                spec.size,
                spec.batch,
                thread,
            )),
            queues: setup.queues.clone(),
            broker_names: setup.brokers.iter().map(|b| b.name.clone()).collect(),
            producers: spec.producers,
            keys: spec.keys,
            rate: spec.rate,
            start,
        }
    }
}

/// One producer: its connection's clients (one per broker), its pacing and its next ticket.
pub struct Producer {
    index: u32,
    clients: Rc<[RemotingClient]>,
    pacer: Option<Pacer>,
    ticket: Cell<u64>,
}

impl Producer {
    pub fn new(index: u32, clients: Rc<[RemotingClient]>, shared: &Shared) -> Self {
        Self {
            index,
            clients,
            pacer: shared
                .rate
                .map(|rate| Pacer::new(shared.start, rate, index, shared.producers)),
            ticket: Cell::new(0),
        }
    }
}

/// The name a failed response is counted under: `NAME(code)`.
pub fn code_name(code: i32) -> String {
    format!("{}({code})", response::name(code).unwrap_or("UNKNOWN"))
}

/// The name a transport failure is counted under.
pub fn transport_name(err: &RemotingError) -> &'static str {
    match err {
        RemotingError::Connect { .. } => "connect failed",
        RemotingError::Closed(_) => "connection closed",
        RemotingError::Timeout { .. } => "timeout",
        RemotingError::TooManyPending(_) => "too many pending",
        RemotingError::OutboxFull(_) => "outbox full",
    }
}

/// One send loop of `producer`, until the deadline, the message budget or a closed connection.
pub async fn send_loop(ctx: Rc<ThreadCtx>, shared: Rc<Shared>, producer: Rc<Producer>) {
    let spec = ctx.workload.produce.as_ref().expect("a produce workload");
    let batch = u64::from(spec.batch);
    let bytes = batch * spec.size as u64;
    let timeout = ctx.workload.target.timeout;
    loop {
        let ticket = producer.ticket.get();
        let due = producer.pacer.map(|pacer| pacer.due(ticket));
        let now = Instant::now();
        if now >= ctx.deadline || due.is_some_and(|due| due >= ctx.deadline) {
            break;
        }
        if !ctx.take_sends(batch) {
            break;
        }
        producer.ticket.set(ticket + 1);
        if let Some(due) = due.filter(|due| *due > now) {
            glommio::timer::sleep(due - now).await;
        }
        let message = ticket * u64::from(shared.producers) + u64::from(producer.index);
        let key = key_of(message, shared.keys);
        let queue = *pick_queue(&shared.queues, message, key.as_deref());
        let begun = due.unwrap_or_else(Instant::now);
        let req = shared.template.borrow_mut().request(
            &queue,
            shared.broker_names[queue.broker].as_deref(),
            key.as_deref(),
        );
        let result = producer.clients[queue.broker].request(req, timeout).await;
        let done = Instant::now();
        let progress = &ctx.progress;
        match result {
            Ok(resp) if resp.code == response::SUCCESS => {
                let mut recorder = ctx.produced.borrow_mut();
                recorder.count(done, batch, bytes);
                recorder.latency(done, done - begun);
                progress.produced.fetch_add(batch, Relaxed);
                progress.produced_bytes.fetch_add(bytes, Relaxed);
            }
            Ok(resp) => {
                ctx.produced.borrow_mut().error(code_name(resp.code));
                progress.errors.fetch_add(1, Relaxed);
            }
            Err(err) => {
                ctx.produced
                    .borrow_mut()
                    .error(transport_name(&err).to_owned());
                progress.errors.fetch_add(1, Relaxed);
                if matches!(err, RemotingError::Closed(_)) {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_named_by_code_and_number() {
        assert_eq!(code_name(response::SYSTEM_BUSY), "SYSTEM_BUSY(2)");
        assert_eq!(code_name(12345), "UNKNOWN(12345)");
    }
}
