//! The one owner-side store: every message a client sends, and every copy a consumer hands
//! back, is appended by the shard that owns its queue, here; and every record the broker makes
//! itself in this shard's own system queues (a transaction's half copies, op records and
//! commits), through [`store_own`]. A message asking to be held (a delay level, a 5.x timer)
//! is rewritten here into the record that holds it ([`hold_if_asked`]).
//!
//! Per append: one `append_batch` into the shard's log (one copy of each body into the log's
//! buffer); a cross-shard hop when the connection's shard does not own the queue (the
//! messages move, their bodies are not copied).

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::now_ms;
use crate::broker::shard::Shard;
use crate::broker::transaction::message::{check_immunity_ms, to_half};
use crate::broker::work::{Append, Work};
use crate::protocol::message::record::Message;
use ringmq_shards::record::TransactionType;
use ringmq_shards::schedule::SCHEDULE_TOPIC;
use ringmq_shards::timer::TIMER_TOPIC;
use ringmq_shards::transaction::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use ringmq_shards::AppendResult;

/// Stores `append` on shard `owner`: here, or through the bus.
pub async fn append_on(
    shard: &Shard,
    owner: usize,
    append: Append,
) -> BrokerResult<Vec<AppendResult>> {
    if owner == shard.id() {
        return store(shard, append).await;
    }
    shard
        .ask(owner, |reply| Work::Append { append, reply })
        .await
}

/// Owner half: appends messages to queues this shard owns. A message asking for a delay
/// level or a timer (where `delayable`) is stored as its SCHEDULE_TOPIC_XXXX or
/// rmq_sys_wheel_timer record on this shard, which delivers it to its queue when due; a prepared send (`half`) as its half record in
/// this shard's RMQ_SYS_TRANS_HALF_TOPIC queue, until its producer decides.
pub async fn store(shard: &Shard, append: Append) -> BrokerResult<Vec<AppendResult>> {
    if shard.is_stopping() {
        return Err(BrokerError::ShuttingDown);
    }
    let Append {
        mut messages,
        delayable,
        half,
    } = append;
    for message in &mut messages {
        // Routing is decided before the work is sent; storing elsewhere would lose the
        // message for every reader of its queue.
        assert_eq!(
            shard.owner_of(&message.topic, message.queue_id),
            shard.id(),
            "queue {}:{} stored by a shard that does not own it",
            message.topic,
            message.queue_id
        );
        if delayable && !half {
            hold_if_asked(shard, message)?;
        }
    }
    if half {
        return store_half(shard, messages).await;
    }
    append_counted(shard, &messages).await
}

/// Rewrites `message` into the record that holds it until due when it asks for that (neither a
/// prepared nor a rolled-back transaction message, as Apache's `handleScheduleMessage`): a
/// 5.x timer into its `rmq_sys_wheel_timer` stage, else a delay level into its
/// `SCHEDULE_TOPIC_XXXX` queue. A DELAY level wins over a timer. Both wait on this shard.
pub fn hold_if_asked(shard: &Shard, message: &mut Message) -> BrokerResult<()> {
    if !matches!(
        TransactionType::of(message.sys_flag),
        TransactionType::NotType | TransactionType::Commit
    ) {
        return Ok(());
    }
    let config = shard.store().config();
    if config.timers.place(message, now_ms())?.is_some() {
        return Ok(());
    }
    config
        .delay_levels
        .schedule(message)
        .map_err(|e| BrokerError::MessageIllegal(e.to_string()))?;
    Ok(())
}

/// A prepared send, admitted against the bound on undecided transactions, stored as its half
/// record and folded into the shard's transaction book before it is answered.
async fn store_half(shard: &Shard, mut messages: Vec<Message>) -> BrokerResult<Vec<AppendResult>> {
    debug_assert_eq!(messages.len(), 1, "a half message is a single send");
    shard
        .with_transactions(|book| book.admit_half())
        .map_err(|_| BrokerError::Busy("too many undecided transactions"))?;
    let admitted = HalfAdmitted(shard);
    messages.iter_mut().for_each(to_half);
    let stored = append_counted(shard, &messages).await;
    drop(admitted);
    shard.follow_transactions();
    let stored = stored?;
    // The first check is due after the message's own immunity when it asks for one shorter
    // than transactionTimeOut (the book's default for a new transaction).
    for (message, result) in messages.iter().zip(&stored) {
        let properties = std::str::from_utf8(&message.properties).unwrap_or("");
        let timeout_ms = shard.config().transaction.timeout_ms();
        let due_ms = now_ms() + check_immunity_ms(properties, timeout_ms).min(timeout_ms);
        let origin = result.queue_offset;
        shard.with_transactions(|book| book.set_due(origin, due_ms));
    }
    Ok(stored)
}

/// Releases a half message's admission when its append is over, however it ended.
struct HalfAdmitted<'a>(&'a Shard);

impl Drop for HalfAdmitted<'_> {
    fn drop(&mut self) {
        self.0.with_transactions(|book| book.half_stored());
    }
}

/// Appends records the broker makes itself: in this shard's own transaction queues (which
/// every shard has, placement aside, as its schedule queues) or in queues it owns (a commit's
/// real queue). One
/// append, so the records of one decision are one group-commit unit, in this order.
pub async fn store_own(shard: &Shard, messages: &[Message]) -> BrokerResult<Vec<AppendResult>> {
    if shard.is_stopping() {
        return Err(BrokerError::ShuttingDown);
    }
    for message in messages {
        let own_queue = match message.topic.as_str() {
            TRANS_HALF_TOPIC | TRANS_OP_HALF_TOPIC => message.queue_id == 0,
            // A committed message asking for a delay level or a timer waits on this shard.
            SCHEDULE_TOPIC | TIMER_TOPIC => true,
            _ => false,
        };
        if !own_queue && shard.owner_of(&message.topic, message.queue_id) != shard.id() {
            return Err(BrokerError::Internal(format!(
                "queue {}:{} is not stored by shard {}",
                message.topic,
                message.queue_id,
                shard.id()
            )));
        }
    }
    append_counted(shard, messages).await
}

async fn append_counted(shard: &Shard, messages: &[Message]) -> BrokerResult<Vec<AppendResult>> {
    let results = shard.store().append_batch(messages).await?;
    shard.count_put(results.len(), results.iter().map(|r| r.wrote_bytes).sum());
    Ok(results)
}
