//! Transactional messages, as Apache RocketMQ serves them (`TransactionalMessageBridge`,
//! `TransactionalMessageServiceImpl`, `TransactionalMessageCheckService`,
//! `EndTransactionProcessor`), per shard and without a lock.
//!
//! **Where things live.** A prepared (half) message is sent to the owner of its real queue,
//! like any send, and that shard stores it as a half record in its own
//! `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 (shard-local, as the delay levels' schedule queues are:
//! placement does not apply to it). Its decisions go to the same shard's own
//! `RMQ_SYS_TRANS_OP_HALF_TOPIC` queue 0, and a commit re-puts the message to its real queue,
//! which that very shard owns: a decision never leaves the shard. END_TRANSACTION may arrive on
//! any shard's connection; it carries the half's physical offset, whose high bits name the
//! shard, and goes there as typed work (`processor::transaction`).
//!
//! **What a shard knows** ([`book::TransactionBook`]): its undecided transactions, each by its
//! origin (the half-queue offset of its first half record) with its newest copy, followed from
//! the half and op consume queues in log order. The store makes a half record's tagsCode its
//! origin and an op record's the origin it resolves (`ringmq_shards::transaction`), so
//! following needs no read of the log: at start it replays both queues from the beginning
//! (recovery), afterwards it takes each new entry as it is appended. A decision is applied only
//! to an undecided transaction, so each is applied once, after restarts too.
//!
//! **Check-back** (`check_service`): every `transactionCheckInterval` each shard looks at its
//! undecided transactions that are due (`transactionTimeOut`, or the message's
//! `CHECK_IMMUNITY_TIME_IN_SECONDS`, after birth), stores a newer copy with
//! `TRANSACTION_CHECK_TIMES` counted up and sends CHECK_TRANSACTION_STATE for it to a live
//! producer of the group, through the shard holding that producer's connection; after
//! `transactionCheckMax` checks the message goes to `TRANS_CHECK_MAX_TIME_TOPIC`.
//!
//! **Crash safety.** A commit and its op record are one append (one group-commit unit, the
//! re-put first): after a crash either both are in the log or the op is not, and without it
//! the transaction is undecided again, checked back, and committed once. A rollback is its op
//! record alone. Nothing undecided is ever in a consumer's queue.

pub mod book;
pub mod check;
pub mod check_service;
pub mod message;

use std::time::Duration;

/// Apache's `transactionTimeOut`: a half message is first checked this long after its birth.
pub const TRANSACTION_TIMEOUT_DEFAULT: Duration = Duration::from_secs(6);
/// Apache 4.9's `transactionCheckInterval` (5.x: 30 s): how often undecided halves are checked.
pub const TRANSACTION_CHECK_INTERVAL_DEFAULT: Duration = Duration::from_secs(60);
/// Apache's `transactionCheckMax`: checks before a half is discarded.
pub const TRANSACTION_CHECK_MAX_DEFAULT: i32 = 15;
/// Shortest `transactionCheckInterval` accepted: each round reads every due half of a shard,
/// so a shorter one would keep a shard busy re-checking instead of serving.
pub const TRANSACTION_CHECK_INTERVAL_MIN: Duration = Duration::from_millis(100);
/// Longest `transactionTimeOut` and `transactionCheckInterval` accepted (a day): deadlines are
/// milliseconds added to wall-clock times, and a longer wait is a mistaken unit.
pub const TRANSACTION_DURATION_MAX: Duration = Duration::from_secs(24 * 3600);

/// The broker.conf keys of transactions (Apache's names and defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionConfig {
    /// `transactionTimeOut` (ms in the file).
    pub timeout: Duration,
    /// `transactionCheckInterval` (ms in the file).
    pub check_interval: Duration,
    /// `transactionCheckMax`.
    pub check_max: i32,
    /// `rejectTransactionMessage`: half messages are refused with NO_PERMISSION.
    pub reject_transaction_message: bool,
}

impl Default for TransactionConfig {
    fn default() -> Self {
        Self {
            timeout: TRANSACTION_TIMEOUT_DEFAULT,
            check_interval: TRANSACTION_CHECK_INTERVAL_DEFAULT,
            check_max: TRANSACTION_CHECK_MAX_DEFAULT,
            reject_transaction_message: false,
        }
    }
}

impl TransactionConfig {
    pub fn timeout_ms(&self) -> i64 {
        self.timeout.as_millis() as i64
    }
}
