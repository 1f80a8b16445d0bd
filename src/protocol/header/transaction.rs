//! Headers of transactional messages (REMOTING.md §4.4, §4.7).

use super::header;

header! {
    /// END_TRANSACTION request (`EndTransactionRequestHeader`), usually oneway.
    pub struct EndTransactionRequestHeader {
        opt topic: String = "topic",
        req producer_group: String = "producerGroup",
        /// Queue offset of the half message (the send response's `queueOffset`).
        req tran_state_table_offset: i64 = "tranStateTableOffset",
        /// Commit-log offset of the half message (from the send response's offsetMsgId).
        req commit_log_offset: i64 = "commitLogOffset",
        /// 0 unknown, 8 commit, 12 rollback (the sysFlag transaction bits).
        req commit_or_rollback: i32 = "commitOrRollback",
        def from_transaction_check: bool = "fromTransactionCheck",
        /// The client-visible message id (UNIQ_KEY).
        req msg_id: String = "msgId",
        opt transaction_id: String = "transactionId",
    }
}

header! {
    /// CHECK_TRANSACTION_STATE request (`CheckTransactionStateRequestHeader`), broker →
    /// producer, oneway; the body is the half message.
    pub struct CheckTransactionStateRequestHeader {
        opt topic: String = "topic",
        req tran_state_table_offset: i64 = "tranStateTableOffset",
        req commit_log_offset: i64 = "commitLogOffset",
        opt msg_id: String = "msgId",
        opt transaction_id: String = "transactionId",
        opt offset_msg_id: String = "offsetMsgId",
        /// 5.x (`RpcRequestHeader.bname`): the broker name the producer answers for.
        opt broker_name: String = "bname",
    }
}
