//! Consumers: one pull loop per queue, on the thread of the queue's connection. A loop asks
//! for `--pull-batch` messages from its offset with long polling allowed, counts what comes
//! back and moves to `nextBeginOffset`, as a RocketMQ pull consumer does. Its subscription,
//! carried in each pull, is `*` or `--sql92`'s expression (the broker filters; the offset moves
//! past what it drops). Catch-up loops stop
//! at the queue's max offset taken before the run; follow and end-to-end loops go on until
//! the run stops them.
//!
//! Latency: catch-up records each pull's round trip; follow and end-to-end record, per
//! message, the time from the send time stamped in its body to its arrival here.

use crate::args::ConsumeMode;
use crate::message::{now_us, stamp_of};
use crate::produce::{code_name, transport_name};
use crate::run::ThreadCtx;
use futures_lite::future;
use ringmq::client::RemotingClient;
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use ringmq::protocol::message::split_records;
use ringmq::server::connection::RemotingError;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// Pull sysFlag bit: the broker may hold the pull until a message arrives (`PullSysFlag`).
const PULL_FLAG_SUSPEND: i32 = 0x2;
/// Pull sysFlag bit: the subscription expression is in the header, so the broker needs no
/// heartbeat from this consumer first.
const PULL_FLAG_SUBSCRIPTION: i32 = 0x4;

/// How much longer than the hold time a broker may keep a long poll: Apache RocketMQ checks
/// held pulls every 5 s (REMOTING.md §9.1 step 9).
const LONG_POLL_SLACK: Duration = Duration::from_secs(5);

fn pull_request(ctx: &ThreadCtx, queue_id: i32, offset: i64) -> RemotingCommand {
    let spec = ctx.workload.consume.as_ref().expect("a consume workload");
    let header = PullMessageRequestHeader {
        consumer_group: spec.group.clone(),
        topic: ctx.workload.target.topic.clone(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: spec.pull_batch as i32,
        sys_flag: PULL_FLAG_SUSPEND | PULL_FLAG_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: spec.suspend.as_millis() as i64,
        subscription: Some(spec.sql92.clone().unwrap_or_else(|| "*".to_owned())),
        sub_version: 0,
        expression_type: Some(if spec.sql92.is_some() { "SQL92" } else { "TAG" }.to_owned()),
        max_msg_bytes: None,
        request_source: None,
        proxy_forward_client_id: None,
    };
    RemotingCommand::request(request::PULL_MESSAGE).with_header(&header)
}

/// Whether the loop should stop after this pull.
enum Next {
    Continue,
    Stop,
}

/// Pulls queue `index` of the run's queues until the run stops it, its end offset is reached,
/// or the broker refuses it.
pub async fn pull_loop(ctx: Rc<ThreadCtx>, clients: Rc<[RemotingClient]>, index: usize) {
    let queue = ctx.setup.queues[index];
    let mut offset = ctx.setup.start_offsets[index];
    let end = ctx.setup.end_offsets.as_ref().map(|ends| ends[index]);
    let spec = ctx.workload.consume.as_ref().expect("a consume workload");
    let timeout = ctx.workload.target.timeout + spec.suspend + LONG_POLL_SLACK;
    let client = &clients[queue.broker];
    while !ctx.consumers_stopped() && end.is_none_or(|end| offset < end) {
        let req = pull_request(&ctx, queue.queue_id, offset);
        let sent = Instant::now();
        let answer = future::or(async { Some(client.request(req, timeout).await) }, async {
            ctx.until_stopped().await;
            None
        })
        .await;
        let Some(result) = answer else { break };
        let next = match result {
            Ok(resp) => on_response(&ctx, resp, sent, &mut offset),
            Err(err) => {
                ctx.consumed
                    .borrow_mut()
                    .error(transport_name(&err).to_owned());
                ctx.progress.errors.fetch_add(1, Relaxed);
                if matches!(err, RemotingError::Closed(_)) {
                    Next::Stop
                } else {
                    Next::Continue
                }
            }
        };
        if matches!(next, Next::Stop) {
            break;
        }
        let consumed = ctx.progress.consumed.load(Relaxed);
        let done = if ctx.workload.produce.is_some() {
            ctx.drained()
        } else {
            consumed >= ctx.workload.target.messages
        };
        if done {
            ctx.stop_consumers();
        }
    }
}

fn on_response(ctx: &ThreadCtx, resp: RemotingCommand, sent: Instant, offset: &mut i64) -> Next {
    let found = resp.code == response::SUCCESS;
    let moved = matches!(
        resp.code,
        response::PULL_NOT_FOUND | response::PULL_RETRY_IMMEDIATELY | response::PULL_OFFSET_MOVED
    );
    if !found && !moved {
        ctx.consumed.borrow_mut().error(code_name(resp.code));
        ctx.progress.errors.fetch_add(1, Relaxed);
        return Next::Stop;
    }
    match resp.decode_header::<PullMessageResponseHeader>() {
        Ok(header) => *offset = header.next_begin_offset,
        Err(_) => {
            ctx.consumed
                .borrow_mut()
                .error("pull response without offsets".to_owned());
            ctx.progress.errors.fetch_add(1, Relaxed);
            return Next::Stop;
        }
    }
    if found {
        record_messages(ctx, resp, sent);
    }
    Next::Continue
}

fn record_messages(ctx: &ThreadCtx, resp: RemotingCommand, sent: Instant) {
    let done = Instant::now();
    let arrived_us = now_us();
    let catch_up = ctx
        .workload
        .consume
        .as_ref()
        .is_some_and(|c| c.mode == ConsumeMode::CatchUp);
    let mut recorder = ctx.consumed.borrow_mut();
    let (mut messages, mut bytes) = (0u64, 0u64);
    for record in split_records(resp.body) {
        let Ok(record) = record else {
            recorder.error("malformed record".to_owned());
            break;
        };
        let body = record.body();
        messages += 1;
        bytes += body.len() as u64;
        if !catch_up {
            if let Some(sent_us) = stamp_of(&body) {
                recorder.latency(
                    done,
                    Duration::from_micros(arrived_us.saturating_sub(sent_us)),
                );
            }
        }
    }
    recorder.count(done, messages, bytes);
    if catch_up {
        recorder.latency(done, done - sent);
    }
    ctx.progress.consumed.fetch_add(messages, Relaxed);
}
