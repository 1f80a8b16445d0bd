//! END_TRANSACTION (Apache's `EndTransactionProcessor`): a producer's decision about one of
//! its half messages, usually oneway, after the send (`fromTransactionCheck=false`) or as the
//! answer to a CHECK_TRANSACTION_STATE (`true`).
//!
//! It may arrive on any shard's connection. Its `commitLogOffset` is the half record's
//! physical offset, whose high bits name the shard that stored it (and owns its real queue,
//! and holds the transaction in its book): the decision is made there, as typed work. A
//! commit appends the message to its real queue and the op record in one append; a rollback
//! appends the op record. A decision for a transaction that is not undecided (decided
//! already, by a second END_TRANSACTION or for an older copy of the half) changes nothing.
//!
//! Per decision: one read of the half record (from the hot tail if recent), one parse of its
//! properties, one append of one or two records, no copy of the body beyond the log's buffer.

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::now_ms;
use crate::broker::placement::owner_of_offset;
use crate::broker::processor::append::{hold_if_asked, store_own};
use crate::broker::shard::Shard;
use crate::broker::transaction::book::Resolve;
use crate::broker::transaction::message::{
    committed, end_deadline_ms, op_record, origin, producer_group,
};
use crate::broker::work::Work;
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::EndTransactionRequestHeader;
use crate::protocol::message::record::{sys_flag, RecordView};
use crate::server::Response;
use ringmq_shards::transaction::TRANS_HALF_TOPIC;

/// Apache's remark when the half message named by the request is not there.
const HALF_NOT_FOUND: &str = "Find prepared transaction message failed";

/// Serves END_TRANSACTION on the connection's shard: the decision is made on the shard that
/// stored the half message. An answer that decides nothing (UNKNOWN) is only logged, as
/// Apache does; the check-back will ask again.
pub async fn serve(
    shard: &Shard,
    command: &RemotingCommand,
    header: EndTransactionRequestHeader,
) -> BrokerResult<Response> {
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None);
    if decision(&header).is_none() {
        tracing::debug!(
            msg_id = header.msg_id,
            from_check = header.from_transaction_check,
            state = header.commit_or_rollback,
            "END_TRANSACTION without a decision: left to the check-back"
        );
        return Ok(ok.into());
    }
    let owner = owner_of_offset(header.commit_log_offset, shard.shards())
        .ok_or_else(|| BrokerError::Illegal(HALF_NOT_FOUND.into()))?;
    if owner == shard.id() {
        end(shard, header).await?;
    } else {
        let header = Box::new(header);
        shard
            .ask(owner, |reply| Work::EndTransaction { header, reply })
            .await?;
    }
    Ok(ok.into())
}

/// A decision: commit (true) or rollback (false); `None` for UNKNOWN or anything else.
fn decision(header: &EndTransactionRequestHeader) -> Option<bool> {
    match header.commit_or_rollback {
        sys_flag::TRANSACTION_COMMIT => Some(true),
        sys_flag::TRANSACTION_ROLLBACK => Some(false),
        _ => None,
    }
}

/// Owner half: applies the decision to the half message this shard stored.
pub async fn end(shard: &Shard, header: EndTransactionRequestHeader) -> BrokerResult<()> {
    let Some(commit) = decision(&header) else {
        return Ok(());
    };
    let not_found = || BrokerError::Illegal(HALF_NOT_FOUND.into());
    let record = shard
        .store()
        .read_at(header.commit_log_offset)
        .await
        .map_err(|_| not_found())?;
    let half = RecordView::parse(record).map_err(|_| not_found())?;
    if half.topic() != TRANS_HALF_TOPIC {
        return Err(not_found());
    }
    check_request(shard, &header, &half)?;
    let origin = origin(&half);
    shard.follow_transactions();
    match shard.with_transactions(|book| book.begin_resolve(origin)) {
        Resolve::Go => {}
        Resolve::Resolved | Resolve::Busy => {
            tracing::debug!(
                msg_id = header.msg_id,
                origin,
                commit,
                "END_TRANSACTION for a transaction already resolved: ignored"
            );
            return Ok(());
        }
    }
    let written = write_decision(shard, &half, &header, origin, commit).await;
    shard.with_transactions(|book| book.end_resolve(origin));
    shard.follow_transactions();
    written
}

/// Apache's checks of the request against the half message (`rejectCommitOrRollback`, 5.x;
/// `checkPrepareMessage`).
fn check_request(
    shard: &Shard,
    header: &EndTransactionRequestHeader,
    half: &RecordView,
) -> BrokerResult<()> {
    let timeout_ms = shard.config().transaction.timeout_ms();
    if !header.from_transaction_check {
        if let Some(deadline_ms) = end_deadline_ms(half.properties(), timeout_ms) {
            if now_ms() - half.born_timestamp_ms() > deadline_ms {
                return Err(BrokerError::IllegalOperation(format!(
                    "the producer's decision on message {} came after its check immunity \
                     time: it is left to the check-back",
                    header.msg_id
                )));
            }
        }
    }
    if producer_group(half.properties()) != Some(header.producer_group.as_str()) {
        return Err(BrokerError::Illegal("The producer group wrong".into()));
    }
    if half.queue_offset() != header.tran_state_table_offset {
        return Err(BrokerError::Illegal(
            "The transaction state table offset wrong".into(),
        ));
    }
    Ok(())
}

/// Commit: the message in its real queue, then the op record, in one append. Rollback: the op
/// record. A committed message asking for a delay level or a timer waits on this shard.
async fn write_decision(
    shard: &Shard,
    half: &RecordView,
    header: &EndTransactionRequestHeader,
    origin: i64,
    commit: bool,
) -> BrokerResult<()> {
    let op = op_record(origin, shard.store_host(), now_ms(), &shard.next_uniq_key());
    let records = if commit {
        let mut message = committed(half, header.commit_log_offset)
            .map_err(|e| BrokerError::Illegal(e.to_string()))?;
        hold_if_asked(shard, &mut message)?;
        vec![message, op]
    } else {
        vec![op]
    };
    store_own(shard, &records).await?;
    tracing::debug!(
        msg_id = header.msg_id,
        origin,
        commit,
        "transaction resolved"
    );
    Ok(())
}
