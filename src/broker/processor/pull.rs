//! PULL_MESSAGE and LITE_PULL_MESSAGE, with long polling, on the queue's owner shard; the
//! connection's shard routes the pull and writes the records it gets back as they are.
//!
//! Status rules follow Apache 5.x (`DefaultMessageStore.getMessage` statuses, mapped to codes
//! as `PullMessageProcessor.composeResponseHeader` maps them, the status as the remark):
//!
//! | store status | when | code | nextBeginOffset |
//! |---|---|---|---|
//! | NO_MESSAGE_IN_QUEUE | the queue has never held a message (max 0) | PULL_NOT_FOUND at offset 0, else PULL_OFFSET_MOVED | 0 |
//! | OFFSET_TOO_SMALL | offset below the min (retention removed it) | PULL_OFFSET_MOVED | min |
//! | OFFSET_OVERFLOW_ONE | offset at the max | PULL_NOT_FOUND (a long poll waits) | offset |
//! | OFFSET_OVERFLOW_BADLY | offset past the max | PULL_OFFSET_MOVED | max (4.9: min while min is 0) |
//! | NO_MATCHED_MESSAGE | every entry read was filtered out (by tag or SQL92) | PULL_RETRY_IMMEDIATELY | past them |
//! | MESSAGE_WAS_REMOVING | retention removed what the read was reading | PULL_RETRY_IMMEDIATELY | the new min |
//! | FOUND | records | SUCCESS | past them |
//!
//! NO_MATCHED_LOGIC_QUEUE needs no row: a queue that was never written reads as an empty one,
//! as in Apache, whose store creates the queue on the lookup.
//!
//! Filtering, as Apache's `ExpressionMessageFilter`: a TAG subscription by the consume queue
//! entry's tag code, an SQL92 one by its compiled selector over the record's properties
//! (`enablePropertyFilter` must be on); both on the one read path, skipped entries advancing
//! the offset. A held pull is answered when a matching message arrives or at its suspend
//! time: messages that do not match are stepped over while it waits, as Apache's hold
//! service checks the filter before it wakes a pull.
//!
//! Per pull: the records are slices of the store's buffers from the read to the socket: no
//! copy on the broker side (the response is written with one vectored write). A FOUND answer
//! carries no remark (Apache writes "FOUND"; no client reads it), the others their status.

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::filter::Selector;
use crate::broker::shard::Shard;
use crate::broker::work::{Origin, Pulled, Work};
use crate::protocol::body::heartbeat::SubscriptionData;
use crate::protocol::body::{MASTER_ID, PERM_READ};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use crate::server::Response;
use bytes::Bytes;
use ringmq_shards::record::RecordView;
use ringmq_shards::{QueueReadRequest, RecordFilter};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Pull sysFlag bits (`PullSysFlag`).
const FLAG_COMMIT_OFFSET: i32 = 0x1;
const FLAG_SUSPEND: i32 = 0x2;
const FLAG_SUBSCRIPTION: i32 = 0x4;
/// Longest a pull is held waiting for messages, whatever the client asks (Java clients ask
/// 15 s for push consumers, 20 s for lite pull); past it a held pull costs a waiter slot for
/// nothing.
const SUSPEND_TIME_MAX: Duration = Duration::from_secs(30);
/// Largest body one pull returns when the client sets no byte limit; Java's
/// `maxTransferBytesOnMessageInMemory` is 256 KiB — ours serves from the hot tail too, and a
/// larger budget lets catch-up reads move more per round trip.
const PULL_BYTES_MAX_DEFAULT: usize = 1 << 20;

/// What reading a queue found, before it becomes a response code: Apache's
/// `GetMessageStatus` values that ringmq can meet.
enum PullOutcome {
    Messages(Vec<Bytes>),
    /// Nothing to return yet (OFFSET_OVERFLOW_ONE, or NO_MESSAGE_IN_QUEUE at offset 0): a
    /// long poll waits here.
    NotFound(&'static str),
    /// Nothing readable in range (NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING): the client
    /// retries from `next` at once.
    RetryImmediately(&'static str),
    /// The offset is outside the queue (OFFSET_TOO_SMALL, OFFSET_OVERFLOW_BADLY,
    /// NO_MESSAGE_IN_QUEUE elsewhere than 0): the client continues from `next`.
    OffsetMoved(&'static str),
}

/// Serves a pull on the connection's shard: the queue's owner reads (and holds) it.
pub async fn serve(
    shard: &Shard,
    origin: Origin,
    command: &RemotingCommand,
    header: PullMessageRequestHeader,
) -> BrokerResult<Response> {
    let owner = shard.owner_of(&header.topic, header.queue_id);
    let pulled = if owner == shard.id() {
        pull(shard, origin, header).await?
    } else {
        let header = Box::new(header);
        shard
            .ask(owner, |reply| Work::Pull {
                origin,
                header,
                reply,
            })
            .await?
    };
    let response_header = PullMessageResponseHeader {
        suggest_which_broker_id: MASTER_ID,
        next_begin_offset: pulled.next_begin_offset,
        min_offset: pulled.min_offset,
        max_offset: pulled.max_offset,
        offset_delta: None,
        topic_sys_flag: Some(pulled.topic_sys_flag),
        group_sys_flag: Some(pulled.group_sys_flag),
        forbidden_type: None,
    };
    let remark = pulled.status.map(str::to_owned);
    let command =
        RemotingCommand::response_to(command, pulled.code, remark).with_header(&response_header);
    Ok(Response::gathered(command, pulled.records))
}

/// Owner half: checks the pull, stores the offset it commits, reads the queue and, when
/// nothing is there and the client asked to, holds the pull until messages arrive or its
/// suspend time passes.
pub async fn pull(
    shard: &Shard,
    origin: Origin,
    header: PullMessageRequestHeader,
) -> BrokerResult<Pulled> {
    debug_assert_eq!(shard.owner_of(&header.topic, header.queue_id), shard.id());
    let group = shard.group_config(&header.consumer_group).await?;
    if !group.consume_enable {
        return Err(BrokerError::NoPermission(format!(
            "subscription group no permission, {}",
            header.consumer_group
        )));
    }
    let topic = shard
        .topic(&header.topic)
        .ok_or_else(|| BrokerError::TopicNotExist(header.topic.clone()))?;
    if topic.perm & PERM_READ == 0 {
        return Err(BrokerError::NoPermission(format!(
            "the topic[{}] pulling message is forbidden",
            header.topic
        )));
    }
    if header.queue_id < 0 || header.queue_id >= topic.read_queue_nums {
        return Err(BrokerError::Illegal(format!(
            "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
            header.queue_id, header.topic, topic.read_queue_nums, origin.peer
        )));
    }
    let filter = pull_filter(shard, &header)?;
    let sql_test = filter.selector.as_ref().map(|selector| {
        move |record: &Bytes| {
            RecordView::parse(record.clone()).is_ok_and(|view| selector.matches(view.properties()))
        }
    });
    let filters = ReadFilters {
        tags: filter.data.code_filter(),
        records: sql_test.as_ref().map(|test| RecordFilter(test)),
    };

    // The commit offset travels with the pull (push consumers). Stored on arrival, as Java
    // does: a pull held for seconds must not write its then-stale offset over commits made
    // meanwhile (the client may even have shut down and committed its final ones).
    if header.sys_flag & FLAG_COMMIT_OFFSET != 0 && header.commit_offset >= 0 {
        shard.store().set_consumer_offset(
            &header.consumer_group,
            &header.topic,
            header.queue_id,
            header.commit_offset,
        )?;
    }

    let mut read = read_for_pull(shard, &header, header.queue_offset, filters).await?;
    if header.sys_flag & FLAG_SUSPEND != 0 && matches!(read.found, PullOutcome::NotFound(_)) {
        let wait = Duration::from_millis(header.suspend_timeout_millis.max(0) as u64)
            .min(SUSPEND_TIME_MAX);
        read = hold(shard, &header, filters, wait).await?;
    }
    let (code, status, records) = match read.found {
        PullOutcome::Messages(records) => {
            shard.count_got(records.len());
            (response::SUCCESS, None, records)
        }
        PullOutcome::NotFound(status) => (response::PULL_NOT_FOUND, Some(status), Vec::new()),
        PullOutcome::RetryImmediately(status) => {
            (response::PULL_RETRY_IMMEDIATELY, Some(status), Vec::new())
        }
        PullOutcome::OffsetMoved(status) => {
            // Apache warns here too ("PULL_OFFSET_MOVED:correction offset").
            tracing::warn!(
                group = %header.consumer_group,
                topic = %header.topic,
                queue_id = header.queue_id,
                offset = header.queue_offset,
                next = read.next,
                status,
                "pull offset moved"
            );
            (response::PULL_OFFSET_MOVED, Some(status), Vec::new())
        }
    };
    Ok(Pulled {
        code,
        status,
        next_begin_offset: read.next,
        min_offset: read.min,
        max_offset: read.max,
        topic_sys_flag: topic.topic_sys_flag,
        group_sys_flag: group.group_sys_flag,
        records,
    })
}

/// What a pull filters by: its subscription, and the compiled selector of a non-TAG one.
struct PullFilter {
    data: SubscriptionData,
    selector: Option<Rc<Selector>>,
}

/// The subscription to filter by: the one in the request when it carries one (lite pull,
/// `postSubscriptionWhenPull`), else the group's from its heartbeats, as Java does; with the
/// refusals Apache makes, in its order.
fn pull_filter(shard: &Shard, header: &PullMessageRequestHeader) -> BrokerResult<PullFilter> {
    let from_request = header.sys_flag & FLAG_SUBSCRIPTION != 0;
    let data = if from_request {
        let expression = header.subscription.as_deref().unwrap_or("*");
        SubscriptionData::from_expression(
            &header.topic,
            expression,
            header.expression_type.as_deref(),
        )
        .map_err(|e| BrokerError::SubscriptionParseFailed(e.to_string()))?
    } else {
        let data = shard
            .group_subscription(&header.consumer_group, &header.topic)
            .ok_or_else(|| BrokerError::SubscriptionNotExist {
                group: header.consumer_group.clone(),
                topic: header.topic.clone(),
            })?;
        if data.sub_version < header.sub_version {
            return Err(BrokerError::SubscriptionNotLatest);
        }
        data
    };
    if data.is_tag_type() || data.class_filter_mode {
        return Ok(PullFilter {
            data,
            selector: None,
        });
    }
    // Apache's lite-pull path passes every message when the expression does not compile
    // (an `assert` guards it, off in production); ringmq refuses it.
    let selector =
        shard
            .selector(&header.consumer_group, &data)
            .map_err(|e| match from_request {
                true => BrokerError::InvalidSelector(e),
                false => BrokerError::FilterDataNotExist(e),
            })?;
    if !shard.config().enable_property_filter {
        return Err(BrokerError::PropertyFilterDisabled(data.expression_type));
    }
    Ok(PullFilter {
        data,
        selector: Some(selector),
    })
}

/// A held pull: waits for entries past what it has read so far; entries that arrive but do
/// not match are stepped over and the wait goes on, until a read finds messages or the time
/// is up. Whatever it answers, its next offset is past what it stepped over.
async fn hold(
    shard: &Shard,
    header: &PullMessageRequestHeader,
    filters: ReadFilters<'_>,
    wait: Duration,
) -> BrokerResult<QueueState> {
    let deadline = Instant::now() + wait;
    let mut from = header.queue_offset;
    loop {
        let arrived = shard
            .store()
            .wait_for_offset(&header.topic, header.queue_id, from);
        let timer = glommio::timer::Timer::new(deadline.saturating_duration_since(Instant::now()));
        futures_lite::future::or(async { arrived.await.map(|_| ()) }, async {
            timer.await;
            Ok(())
        })
        .await?;
        let read = read_for_pull(shard, header, from, filters).await?;
        let stepped_over = matches!(
            read.found,
            PullOutcome::RetryImmediately(NO_MATCHED_MESSAGE)
        ) && read.next > from;
        if !stepped_over || Instant::now() >= deadline {
            return Ok(read);
        }
        from = read.next;
    }
}

/// The filters of one read.
#[derive(Clone, Copy)]
struct ReadFilters<'a> {
    tags: Option<&'a [i32]>,
    records: Option<RecordFilter<'a>>,
}

const NO_MATCHED_MESSAGE: &str = "NO_MATCHED_MESSAGE";
const NO_MESSAGE_IN_QUEUE: &str = "NO_MESSAGE_IN_QUEUE";

/// One read of the queue.
struct QueueState {
    found: PullOutcome,
    next: i64,
    min: i64,
    max: i64,
}

/// Reads the queue once, from `offset`.
async fn read_for_pull(
    shard: &Shard,
    header: &PullMessageRequestHeader,
    offset: i64,
    filters: ReadFilters<'_>,
) -> BrokerResult<QueueState> {
    let store = shard.store();
    let (topic, queue_id) = (&header.topic[..], header.queue_id);
    let min = store.min_offset(topic, queue_id);
    let max = store.max_offset(topic, queue_id);
    let at = |found, next| {
        Ok(QueueState {
            found,
            next,
            min,
            max,
        })
    };
    if max == 0 {
        // NO_MESSAGE_IN_QUEUE is "moved" unless the client already asks for 0.
        let found = if offset == 0 {
            PullOutcome::NotFound(NO_MESSAGE_IN_QUEUE)
        } else {
            PullOutcome::OffsetMoved(NO_MESSAGE_IN_QUEUE)
        };
        return at(found, 0);
    }
    if offset < min {
        return at(PullOutcome::OffsetMoved("OFFSET_TOO_SMALL"), min);
    }
    if offset == max {
        return at(PullOutcome::NotFound("OFFSET_OVERFLOW_ONE"), offset);
    }
    if offset > max {
        return at(PullOutcome::OffsetMoved("OFFSET_OVERFLOW_BADLY"), max);
    }
    let max_bytes = header
        .max_msg_bytes
        .filter(|&b| b > 0)
        .map_or(PULL_BYTES_MAX_DEFAULT, |b| b as usize);
    let read = store
        .read_queue(QueueReadRequest {
            topic,
            queue_id,
            offset,
            max_count: header.max_msg_nums.max(1) as usize,
            max_bytes,
            tag_filter: filters.tags,
            record_filter: filters.records,
        })
        .await?;
    if read.records.is_empty() {
        let status = if read.min_offset > min {
            "MESSAGE_WAS_REMOVING"
        } else {
            NO_MATCHED_MESSAGE
        };
        return Ok(QueueState {
            found: PullOutcome::RetryImmediately(status),
            next: read.next_offset,
            min: read.min_offset,
            max,
        });
    }
    at(PullOutcome::Messages(read.records), read.next_offset)
}
