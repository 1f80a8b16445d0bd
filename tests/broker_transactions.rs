//! Transactional messages against a real `ringmq standalone` with 2 shards, with the project's
//! own client sending the requests the Java producer sends: a half message is invisible until
//! END_TRANSACTION commits it, then delivered once with its id (whichever shard the decision
//! arrives on); a rollback is never delivered; a second decision changes nothing; an undecided
//! one is checked back (CHECK_TRANSACTION_STATE to the producer's connection, as Apache fills
//! it) and after `transactionCheckMax` checks moved to TRANS_CHECK_MAX_TIME_TOPIC; and across a
//! SIGKILL nothing decided is lost or repeated and nothing undecided is delivered.
//!
//! Every wait is on an event: END_TRANSACTION is sent as a request (answered once the decision
//! is applied), checks are awaited as they arrive, deliveries by long polls.

mod broker_support;

use broker_support::inbox::Inbox;
use broker_support::process_support::TempDir;
use broker_support::requests::{call, create_topic, pull, records, send};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::body::heartbeat::{HeartbeatData, ProducerData};
use ringmq::protocol::body::{self};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use ringmq::protocol::message::record::{sys_flag, RecordView};
use ringmq::protocol::message::OffsetMsgId;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TOPIC: &str = "TxnTopic";
const GROUP: &str = "TxnConsumers";
const PRODUCER_GROUP: &str = "P_txn";
const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
const CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// Checks begin 1 s after a half's birth, every 500 ms, at most 2 per message.
const CONF: &str = "transactionTimeOut=1000\ntransactionCheckInterval=500\ntransactionCheckMax=2\n";
/// Bound on waiting for a check or a delivery: many rounds on a loaded machine.
const WAIT: Duration = Duration::from_secs(30);
/// A long poll's hold, within [`WAIT`].
const HOLD_MS: i64 = 15_000;

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    since.as_millis() as i64
}

fn start(extra: &[&str]) -> (TempDir, Standalone) {
    let dir = TempDir::new("txn-conf");
    let conf = dir.path().join("broker.conf");
    std::fs::write(&conf, CONF).unwrap();
    let mut args = vec!["-c", conf.to_str().unwrap()];
    args.extend_from_slice(extra);
    let broker = Standalone::start_with(2, &args);
    (dir, broker)
}

/// A CHECK_TRANSACTION_STATE as the producer got it.
struct Check {
    header: CheckTransactionStateRequestHeader,
    message: RecordView,
}

/// The checks of message `uniq_key` that `inbox` got so far.
fn checks_of(inbox: &Inbox, uniq_key: &str) -> Vec<Check> {
    inbox
        .of_code(code::CHECK_TRANSACTION_STATE)
        .iter()
        .map(|r| Check {
            header: r.decode_header().expect("a check's header"),
            message: RecordView::parse(r.body.clone()).expect("a check's body is a record"),
        })
        .filter(|c| c.header.msg_id.as_deref() == Some(uniq_key))
        .collect()
}

/// Waits until message `uniq_key` was checked `times` times; returns its checks.
async fn await_checks(inbox: &Inbox, uniq_key: &str, times: usize) -> Vec<Check> {
    let enough = |inbox: &Inbox| Some(checks_of(inbox, uniq_key)).filter(|c| c.len() >= times);
    match inbox.wait_for(WAIT, enough).await {
        Some(checks) => checks,
        None => panic!(
            "{uniq_key}: {} of {times} checks within {WAIT:?}",
            checks_of(inbox, uniq_key).len()
        ),
    }
}

/// A producer of [`PRODUCER_GROUP`]: its connection, heartbeating once, and what it was sent.
struct Producer {
    client: RemotingClient,
    inbox: Rc<Inbox>,
}

async fn producer(addr: &str) -> Producer {
    let inbox = Rc::new(Inbox::default());
    let client = RemotingClient::connect_with(addr, inbox.clone())
        .await
        .unwrap();
    let data = HeartbeatData {
        client_id: "txn-producer@1".into(),
        producer_data_set: vec![ProducerData {
            group_name: PRODUCER_GROUP.into(),
        }],
        ..HeartbeatData::default()
    };
    let heartbeat =
        RemotingCommand::request(code::HEART_BEAT).with_body(body::encode(&data).unwrap());
    let answer = call(&client, heartbeat).await;
    assert_eq!(answer.code, response::SUCCESS, "{:?}", answer.remark);
    Producer { client, inbox }
}

/// A half message as the Java producer sends it: TRAN_MSG, PGROUP, the prepared sysFlag.
struct Half {
    uniq_key: String,
    queue_id: i32,
    /// The send response's queueOffset: the half record's offset in the half queue.
    queue_offset: i64,
    /// From the send response's msgId (the offsetMsgId): the half record's physical offset.
    commit_log_offset: i64,
}

async fn send_half(client: &RemotingClient, queue_id: i32, body: &str) -> Half {
    // Opaque to the broker: any unique text serves as the client-made id.
    let uniq_key = format!("TXN-{body}-{queue_id}");
    let props = [
        ("TAGS", "TagT"),
        ("UNIQ_KEY", uniq_key.as_str()),
        ("TRAN_MSG", "true"),
        ("PGROUP", PRODUCER_GROUP),
        ("seq", body),
    ];
    let request = send(TOPIC, queue_id, body.as_bytes(), &props);
    let mut header: SendMessageRequestHeader =
        SendMessageRequestHeader::decode_from(&request).unwrap();
    header.producer_group = PRODUCER_GROUP.into();
    header.sys_flag = sys_flag::TRANSACTION_PREPARED;
    // Born now: a half older than fileReservedTime (72 h) is discarded at its first check.
    header.born_timestamp = now_ms();
    let request = RemotingCommand::request(code::SEND_MESSAGE_V2)
        .with_header(&SendMessageRequestHeaderV2(header))
        .with_body(request.body);
    let resp = call(client, request).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
    let header: SendMessageResponseHeader = resp.decode_header().unwrap();
    assert_eq!(
        header.queue_id, queue_id,
        "the queue it was sent to, as Apache answers"
    );
    assert_eq!(header.transaction_id.as_deref(), Some(uniq_key.as_str()));
    let id = OffsetMsgId::parse(&header.msg_id).unwrap();
    Half {
        uniq_key,
        queue_id,
        queue_offset: header.queue_offset,
        commit_log_offset: id.commit_log_offset,
    }
}

/// The body [`send_half`] sent for `half`.
fn half_body(half: &Half) -> &str {
    half.uniq_key
        .strip_prefix("TXN-")
        .and_then(|rest| rest.rsplit_once('-'))
        .map(|(body, _)| body)
        .expect("made by send_half")
}

/// END_TRANSACTION for `half` (as a request, so its answer says the decision was applied).
fn end(
    half: &Half,
    decision: i32,
    from_check: Option<&CheckTransactionStateRequestHeader>,
) -> RemotingCommand {
    let (table_offset, log_offset) = match from_check {
        Some(check) => (check.tran_state_table_offset, check.commit_log_offset),
        None => (half.queue_offset, half.commit_log_offset),
    };
    RemotingCommand::request(code::END_TRANSACTION).with_header(&EndTransactionRequestHeader {
        topic: None,
        producer_group: PRODUCER_GROUP.into(),
        tran_state_table_offset: table_offset,
        commit_log_offset: log_offset,
        commit_or_rollback: decision,
        from_transaction_check: from_check.is_some(),
        msg_id: half.uniq_key.clone(),
        transaction_id: Some(half.uniq_key.clone()),
    })
}

async fn decide(client: &RemotingClient, request: RemotingCommand) {
    let resp = call(client, request).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
}

/// What `topic`'s queue holds from offset 0, waiting up to [`HOLD_MS`] for a first record when
/// `hold`.
async fn queue(client: &RemotingClient, topic: &str, queue_id: i32, hold: bool) -> Vec<RecordView> {
    let hold_ms = if hold { HOLD_MS } else { 0 };
    let got = call(client, pull(GROUP, topic, queue_id, 0, Some("*"), hold_ms)).await;
    match got.code {
        response::SUCCESS => records(&got),
        code => {
            assert!(
                code == response::PULL_NOT_FOUND || code == response::PULL_OFFSET_MOVED,
                "{code}: {:?}",
                got.remark
            );
            Vec::new()
        }
    }
}

/// The messages of the real topic's queue `queue_id`, by UNIQ_KEY.
async fn delivered(client: &RemotingClient, queue_id: i32) -> Vec<String> {
    queue(client, TOPIC, queue_id, false)
        .await
        .iter()
        .map(|r| r.property("UNIQ_KEY").unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_half_message_is_invisible_until_committed_then_delivered_once_with_its_id() {
    let (_conf, broker) = start(&[]);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        call(&client, create_topic(TOPIC, 4)).await;
        // Queues 0 and 1 live on different shards: one decision crosses shards.
        let halves = [
            send_half(&client, 0, "a").await,
            send_half(&client, 1, "b").await,
        ];
        for half in &halves {
            assert!(
                delivered(&client, half.queue_id).await.is_empty(),
                "invisible"
            );
        }
        for half in &halves {
            decide(&client, end(half, sys_flag::TRANSACTION_COMMIT, None)).await;
        }
        for half in &halves {
            let got = queue(&client, TOPIC, half.queue_id, true).await;
            assert_eq!(got.len(), 1, "delivered once");
            let message = &got[0];
            assert_eq!(message.property("UNIQ_KEY"), Some(half.uniq_key.as_str()));
            assert_eq!(
                message.sys_flag() & sys_flag::TRANSACTION_MASK,
                sys_flag::TRANSACTION_COMMIT
            );
            assert_eq!(
                message.prepared_transaction_offset(),
                half.commit_log_offset
            );
            for gone in ["TRAN_MSG", "REAL_TOPIC", "REAL_QID"] {
                assert_eq!(message.property(gone), None, "{gone}");
            }
            assert_eq!(message.property("PGROUP"), Some(PRODUCER_GROUP));
            assert_eq!(message.body(), half_body(half).as_bytes());
        }
        // A second decision for the same half, either way, changes nothing.
        for half in &halves {
            decide(&client, end(half, sys_flag::TRANSACTION_COMMIT, None)).await;
            decide(&client, end(half, sys_flag::TRANSACTION_ROLLBACK, None)).await;
            assert_eq!(
                delivered(&client, half.queue_id).await,
                [half.uniq_key.as_str()]
            );
        }
        // An offset naming no half is Apache's error.
        let mut wrong = end(&halves[0], sys_flag::TRANSACTION_COMMIT, None);
        wrong.ext_fields.insert("commitLogOffset", "12");
        let resp = call(&client, wrong).await;
        assert_eq!(resp.code, response::SYSTEM_ERROR);
        assert_eq!(
            resp.remark.as_deref(),
            Some("Find prepared transaction message failed")
        );
        let mut group = end(&halves[0], sys_flag::TRANSACTION_COMMIT, None);
        group.ext_fields.insert("producerGroup", "other");
        let resp = call(&client, group).await;
        assert_eq!(resp.remark.as_deref(), Some("The producer group wrong"));
    })
    .unwrap();
}

#[test]
fn a_rolled_back_half_is_never_delivered_and_a_late_commit_changes_nothing() {
    let (_conf, broker) = start(&[]);
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        call(&client, create_topic(TOPIC, 4)).await;
        let half = send_half(&client, 2, "r").await;
        decide(&client, end(&half, sys_flag::TRANSACTION_ROLLBACK, None)).await;
        decide(&client, end(&half, sys_flag::TRANSACTION_COMMIT, None)).await;
        // UNKNOWN decides nothing (Apache only logs it).
        decide(&client, end(&half, 0, None)).await;
        // A committed message after it in the same queue shows the queue was looked at
        // after both decisions.
        let later = send_half(&client, 2, "later").await;
        decide(&client, end(&later, sys_flag::TRANSACTION_COMMIT, None)).await;
        let got = queue(&client, TOPIC, 2, true).await;
        let keys: Vec<_> = got
            .iter()
            .map(|r| r.property("UNIQ_KEY").unwrap())
            .collect();
        assert_eq!(keys, [later.uniq_key.as_str()]);
    })
    .unwrap();
}

#[test]
fn an_undecided_half_is_checked_back_and_committed_by_the_answer() {
    let (_conf, broker) = start(&[]);
    block_on(async {
        let producer = producer(&broker.broker_addr).await;
        let client = &producer.client;
        call(client, create_topic(TOPIC, 4)).await;
        let committed = send_half(client, 0, "c").await;
        let unanswered = send_half(client, 1, "u").await;
        let checks = await_checks(&producer.inbox, &committed.uniq_key, 1).await;
        let check = &checks[0];
        // As Apache fills it: the half topic, a new copy's offsets, the UNIQ_KEY as ids.
        assert_eq!(check.header.topic.as_deref(), Some(HALF_TOPIC));
        assert_eq!(
            check.header.transaction_id.as_deref(),
            Some(committed.uniq_key.as_str())
        );
        assert!(check.header.tran_state_table_offset > committed.queue_offset);
        assert_ne!(check.header.commit_log_offset, committed.commit_log_offset);
        let offset_id = OffsetMsgId::parse(check.header.offset_msg_id.as_deref().unwrap()).unwrap();
        assert_eq!(offset_id.commit_log_offset, check.header.commit_log_offset);
        // The body: the message in its real topic and queue, checked once.
        assert_eq!(
            (check.message.topic(), check.message.queue_id()),
            (TOPIC, 0)
        );
        assert_eq!(check.message.property("TRANSACTION_CHECK_TIMES"), Some("1"));
        assert_eq!(check.message.property("seq"), Some("c"));
        assert_eq!(check.message.body(), "c".as_bytes());
        decide(
            client,
            end(
                &committed,
                sys_flag::TRANSACTION_COMMIT,
                Some(&check.header),
            ),
        )
        .await;
        assert_eq!(delivered(client, 0).await, [committed.uniq_key.as_str()]);
        // The unanswered one is checked a second time; the committed one never again (both
        // would be in the same round).
        let second = await_checks(&producer.inbox, &unanswered.uniq_key, 2).await;
        assert_eq!(
            second[1].message.property("TRANSACTION_CHECK_TIMES"),
            Some("2")
        );
        assert_eq!(checks_of(&producer.inbox, &committed.uniq_key).len(), 1);
        // The original send's decision, arriving late, changes nothing.
        decide(client, end(&committed, sys_flag::TRANSACTION_COMMIT, None)).await;
        assert_eq!(delivered(client, 0).await.len(), 1);
    })
    .unwrap();
}

#[test]
fn a_half_checked_the_maximum_times_goes_to_trans_check_max_time_topic() {
    let (_conf, broker) = start(&[]);
    block_on(async {
        let producer = producer(&broker.broker_addr).await;
        let client = &producer.client;
        call(client, create_topic(TOPIC, 4)).await;
        let half = send_half(client, 3, "never").await;
        await_checks(&producer.inbox, &half.uniq_key, 2).await;
        // The round after the second check discards it; a half sent now is first checked
        // a timeout (two rounds) later, so once it is, the discard is done.
        let witness = send_half(client, 3, "witness").await;
        await_checks(&producer.inbox, &witness.uniq_key, 1).await;
        let discarded = queue(client, CHECK_MAX_TIME_TOPIC, 0, false).await;
        let keys: Vec<_> = discarded
            .iter()
            .map(|r| r.property("UNIQ_KEY").unwrap())
            .collect();
        assert_eq!(keys, [half.uniq_key.as_str()]);
        assert_eq!(discarded[0].property("REAL_TOPIC"), Some(TOPIC));
        assert_eq!(discarded[0].property("TRANSACTION_CHECK_TIMES"), Some("2"));
        // Resolved: a late commit changes nothing, and it is not checked again (the witness
        // checked once more shows a round went by).
        decide(client, end(&half, sys_flag::TRANSACTION_COMMIT, None)).await;
        assert!(delivered(client, 3).await.is_empty());
        await_checks(&producer.inbox, &witness.uniq_key, 2).await;
        assert_eq!(checks_of(&producer.inbox, &half.uniq_key).len(), 2);
    })
    .unwrap();
}

#[test]
fn across_a_kill_decisions_survive_once_and_undecided_halves_are_checked_back() {
    let (_conf, mut broker) = start(&["--flush-disk-type", "SYNC_FLUSH"]);
    let halves = block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        call(&client, create_topic(TOPIC, 4)).await;
        let mut halves = Vec::new();
        for (i, queue_id) in [0, 1, 2, 3].into_iter().enumerate() {
            halves.push(send_half(&client, queue_id, &format!("k{i}")).await);
        }
        // Decided before the kill: 0 committed, 1 rolled back; 2 and 3 undecided.
        decide(&client, end(&halves[0], sys_flag::TRANSACTION_COMMIT, None)).await;
        decide(
            &client,
            end(&halves[1], sys_flag::TRANSACTION_ROLLBACK, None),
        )
        .await;
        halves
    })
    .unwrap();
    broker.kill();
    broker.start_again();
    block_on(async {
        let producer = producer(&broker.broker_addr).await;
        let client = &producer.client;
        for half in &halves {
            assert!(
                half.queue_id == 0 || delivered(client, half.queue_id).await.is_empty(),
                "nothing undecided or rolled back is delivered after the restart"
            );
        }
        let check = await_checks(&producer.inbox, &halves[2].uniq_key, 1).await;
        decide(
            client,
            end(
                &halves[2],
                sys_flag::TRANSACTION_COMMIT,
                Some(&check[0].header),
            ),
        )
        .await;
        let check = await_checks(&producer.inbox, &halves[3].uniq_key, 1).await;
        decide(
            client,
            end(
                &halves[3],
                sys_flag::TRANSACTION_ROLLBACK,
                Some(&check[0].header),
            ),
        )
        .await;
        assert_eq!(delivered(client, 0).await, [halves[0].uniq_key.as_str()]);
        assert_eq!(delivered(client, 2).await, [halves[2].uniq_key.as_str()]);
        assert!(delivered(client, 1).await.is_empty());
        assert!(delivered(client, 3).await.is_empty());
        // The decisions made before the kill held: those halves are never checked.
        assert!(checks_of(&producer.inbox, &halves[0].uniq_key).is_empty());
        assert!(checks_of(&producer.inbox, &halves[1].uniq_key).is_empty());
    })
    .unwrap();
}
