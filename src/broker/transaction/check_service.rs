//! The check-back service of one shard (Apache's `TransactionalMessageCheckService`): every
//! `transactionCheckInterval` a round looks at the shard's undecided transactions that are
//! due, oldest first, and for each (`check::decide`) waits, checks, or discards.
//!
//! A check stores a newer copy of the half record (`TRANSACTION_CHECK_TIMES` counted up; the
//! book then names that copy) and sends CHECK_TRANSACTION_STATE for it, oneway with the copy
//! as body, to a live producer of the message's group, through the shard holding that
//! producer's connection (typed work). The producer answers with END_TRANSACTION
//! (`fromTransactionCheck=true`) naming the copy. As in Apache the check is counted whether a
//! producer was online or not, so a group that never comes back has its halves discarded after
//! `transactionCheckMax` rounds. A discard stores the message in `TRANS_CHECK_MAX_TIME_TOPIC`
//! (on the shard owning that topic's queue, so one consumer sees every discard) and then the
//! op record that resolves it here.
//!
//! Bounds: a round works in batches of [`CHECK_BATCH_MAX`] transactions (one append for the
//! batch's copies, one for its op records, a yield between batches) and visits each undecided
//! transaction at most once, so it is bounded by `TRANSACTIONS_PENDING_MAX`. Nothing runs per
//! message on a timer: the round is one timer per shard.
//!
//! Cost per check: one read of the newest copy, one re-encode into the log (the body copied
//! once more), 1/64 of an append, one bus message to the producer's shard and one oneway
//! frame; per batch one control-plane question per producer group.

use super::book::{Due, HalfCopy};
use super::check::{decide, CheckDecision, CheckRules};
use super::message::{check_body, discarded, op_record, producer_group, renewed};
use crate::broker::control::ops::{ControlOp, ProducerChannel};
use crate::broker::control::topics::TRANS_CHECK_MAX_TIME_TOPIC;
use crate::broker::error::BrokerResult;
use crate::broker::now_ms;
use crate::broker::processor::append::{append_on, store_own};
use crate::broker::shard::Shard;
use crate::broker::work::{Append, CheckRequest, Work};
use crate::protocol::header::CheckTransactionStateRequestHeader;
use crate::protocol::message::record::{property, Message, RecordView, StoreFields};
use crate::protocol::message::OffsetMsgId;
use ringmq_shards::transaction::TRANS_HALF_TOPIC;
use ringmq_shards::AppendResult;
use std::collections::HashMap;
use std::rc::Rc;

/// Transactions one batch of a round looks at: their copies are stored in one append (one
/// group commit), and the shard serves its other work between batches.
pub const CHECK_BATCH_MAX: usize = 64;

/// What one round did, for the log and the tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundCount {
    pub checked: usize,
    pub discarded: usize,
    pub waiting: usize,
}

/// Runs a round every `transactionCheckInterval`, forever (cancelled at the stop).
pub async fn run(shard: Rc<Shard>) {
    let interval = shard.config().transaction.check_interval;
    loop {
        glommio::timer::Timer::new(interval).await;
        match round(&shard).await {
            Ok(count) if count != RoundCount::default() => {
                tracing::debug!(shard = shard.id(), ?count, "transaction check round")
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(
                shard = shard.id(),
                %err,
                "transaction check round failed; the next one retries"
            ),
        }
    }
}

/// One round: every undecided transaction due when it starts, in origin order.
pub async fn round(shard: &Shard) -> BrokerResult<RoundCount> {
    let rules = rules(shard);
    let start_ms = now_ms();
    shard.follow_transactions();
    let mut count = RoundCount::default();
    let mut after = None;
    loop {
        let due = shard.with_transactions(|book| book.due(after, start_ms, CHECK_BATCH_MAX));
        let Some(last) = due.last() else {
            return Ok(count);
        };
        after = Some(last.origin);
        check_batch(shard, &rules, &due, &mut count).await?;
        futures_lite::future::yield_now().await;
    }
}

fn rules(shard: &Shard) -> CheckRules {
    let config = shard.config();
    CheckRules {
        timeout_ms: config.transaction.timeout_ms(),
        check_max: config.transaction.check_max,
        file_reserved_ms: config.retention.store_config().file_reserved.as_millis() as i64,
    }
}

/// A transaction a batch checks: its origin and the copy to store.
struct Renewal {
    origin: i64,
    copy: Message,
}

async fn check_batch(
    shard: &Shard,
    rules: &CheckRules,
    due: &[Due],
    count: &mut RoundCount,
) -> BrokerResult<()> {
    let mut renewals = Vec::new();
    let mut discards = Vec::new();
    for due in due {
        // Decided (or checked) since the batch was taken: nothing to do.
        if shard.with_transactions(|book| book.copy(due.origin)) != Some(due.copy) {
            continue;
        }
        let half = match read_half(shard, due.copy).await {
            Ok(half) => half,
            Err(err) => {
                tracing::warn!(origin = due.origin, %err, "half message unreadable: checked next round");
                shard.with_transactions(|book| book.set_due(due.origin, now_ms()));
                continue;
            }
        };
        match decide(half.properties(), half.born_timestamp_ms(), now_ms(), rules) {
            CheckDecision::NotBefore(at_ms) => {
                count.waiting += 1;
                shard.with_transactions(|book| book.set_due(due.origin, at_ms));
            }
            CheckDecision::Check { times } => renewals.push(Renewal {
                origin: due.origin,
                copy: renewed(&half, times, due.origin),
            }),
            CheckDecision::Discard(reason) => {
                tracing::warn!(
                    origin = due.origin,
                    msg_id = half.property(property::UNIQ_KEY),
                    ?reason,
                    "half message discarded to {TRANS_CHECK_MAX_TIME_TOPIC}"
                );
                discards.push((due.origin, discarded(&half)));
            }
        }
    }
    count.discarded += discards.len();
    discard(shard, discards).await?;
    count.checked += renewals.len();
    check(shard, renewals).await
}

async fn read_half(shard: &Shard, copy: HalfCopy) -> BrokerResult<RecordView> {
    let record = shard.store().read_at(copy.physical_offset).await?;
    RecordView::parse(record)
        .map_err(|e| crate::broker::error::BrokerError::Internal(e.to_string()))
}

/// Stores the discarded messages where `TRANS_CHECK_MAX_TIME_TOPIC`'s queue lives, then the
/// op records resolving them here. A crash between the two repeats the discard.
async fn discard(shard: &Shard, discards: Vec<(i64, Message)>) -> BrokerResult<()> {
    if discards.is_empty() {
        return Ok(());
    }
    if shard.topic(TRANS_CHECK_MAX_TIME_TOPIC).is_none() {
        shard
            .control(|reply| ControlOp::CreateCheckMaxTimeTopic { reply })
            .await?;
    }
    let (origins, messages): (Vec<i64>, Vec<Message>) = discards.into_iter().unzip();
    let owner = shard.owner_of(TRANS_CHECK_MAX_TIME_TOPIC, 0);
    let append = Append {
        messages,
        delayable: false,
        half: false,
    };
    append_on(shard, owner, append).await?;
    let now = now_ms();
    let ops: Vec<Message> = origins
        .iter()
        .map(|&origin| op_record(origin, shard.store_host(), now, &shard.next_uniq_key()))
        .collect();
    store_own(shard, &ops).await?;
    shard.follow_transactions();
    Ok(())
}

/// Stores the batch's copies in one append, then asks a producer of each one's group.
async fn check(shard: &Shard, renewals: Vec<Renewal>) -> BrokerResult<()> {
    if renewals.is_empty() {
        return Ok(());
    }
    let copies: Vec<Message> = renewals.iter().map(|r| r.copy.clone()).collect();
    let stored = store_own(shard, &copies).await?;
    shard.follow_transactions();
    let now = now_ms();
    let mut producers = Producers::default();
    for (renewal, stored) in renewals.iter().zip(stored) {
        let copy = HalfCopy {
            queue_offset: stored.queue_offset,
            physical_offset: stored.physical_offset,
        };
        // Decided while the copy was stored: no question to ask.
        if shard.with_transactions(|book| book.copy(renewal.origin)) != Some(copy) {
            continue;
        }
        // Looked at again in the next round.
        shard.with_transactions(|book| book.set_due(renewal.origin, now));
        send_check(shard, &mut producers, &renewal.copy, stored).await;
    }
    Ok(())
}

/// The producer each group's checks of one batch go to.
#[derive(Default)]
struct Producers(HashMap<String, Option<ProducerChannel>>);

impl Producers {
    async fn of(&mut self, shard: &Shard, group: &str) -> Option<ProducerChannel> {
        if let Some(known) = self.0.get(group) {
            return *known;
        }
        let asked = shard
            .control(|reply| ControlOp::ProducerChannel {
                group: group.to_owned(),
                reply,
            })
            .await;
        let channel = asked.unwrap_or_else(|err| {
            tracing::debug!(%err, group, "could not look up a producer");
            None
        });
        self.0.insert(group.to_owned(), channel);
        channel
    }
}

/// CHECK_TRANSACTION_STATE for a stored copy, as Apache's `sendCheckMessage` fills it.
async fn send_check(
    shard: &Shard,
    producers: &mut Producers,
    copy: &Message,
    stored: AppendResult,
) {
    let properties = std::str::from_utf8(&copy.properties).unwrap_or("");
    let uniq_key = crate::protocol::message::record::find_property(properties, property::UNIQ_KEY)
        .map(str::to_owned);
    let Some(group) = producer_group(properties) else {
        tracing::debug!(msg_id = ?uniq_key, "half message without a producer group: not checked");
        return;
    };
    let Some(producer) = producers.of(shard, group).await else {
        tracing::debug!(group, msg_id = ?uniq_key, "no producer of the group online: not checked");
        return;
    };
    let fields = StoreFields {
        queue_offset: stored.queue_offset,
        physical_offset: stored.physical_offset,
        store_timestamp_ms: stored.store_timestamp_ms,
        store_host: shard.store_host(),
    };
    let body = match check_body(copy, fields) {
        Ok(body) => body,
        Err(err) => {
            tracing::warn!(%err, "transaction check not sent");
            return;
        }
    };
    let offset_msg_id = OffsetMsgId {
        store_host: shard.store_host(),
        commit_log_offset: stored.physical_offset,
    };
    let header = CheckTransactionStateRequestHeader {
        topic: Some(TRANS_HALF_TOPIC.to_owned()),
        tran_state_table_offset: stored.queue_offset,
        commit_log_offset: stored.physical_offset,
        msg_id: uniq_key.clone(),
        transaction_id: uniq_key,
        offset_msg_id: Some(offset_msg_id.to_string()),
        broker_name: Some(shard.config().broker_name.clone()),
    };
    let check = CheckRequest { header, body };
    if producer.shard == shard.id() {
        shard.check_transaction_state(producer.connection, &check);
        return;
    }
    let work = Work::CheckTransaction {
        connection: producer.connection,
        check: Box::new(check),
    };
    if let Err(err) = shard.bus().send(producer.shard, work) {
        // Counted as a check all the same: the next round asks again.
        tracing::debug!(%err, "transaction check not handed to the producer's shard");
    }
}
