//! `ringmq admin`'s broker commands end to end without Java: a real `ringmq namesrv`, and a
//! scripted broker (registered with it) answering with bodies made by ringmq's own encoders
//! (`TopicStatsTable::encode`, `ConsumeStats::encode`, stored records). Checks what each
//! command sends and prints, and that a key query drops the index's hash collisions.

mod namesrv_support;

use namesrv_support::*;
use ringmq::client::block_on;
use ringmq::protocol::body::stats::{
    ConsumeStats, MessageQueue, OffsetWrapper, TopicOffset, TopicStatsTable,
};
use ringmq::protocol::body::{self, KvTable};
use ringmq::protocol::codes::{request, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{
    CreateTopicRequestHeader, QueryMessageRequestHeader, ViewMessageRequestHeader,
};
use ringmq::protocol::message::record::{self, format_properties, StoreFields};
use ringmq::protocol::message::OffsetMsgId;
use ringmq::server::connection::Connection;
use ringmq::server::{not_supported, serve, RequestError, RequestHandler, Response};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;

const TOPIC: &str = "T";
/// Commit-log offset of the message VIEW_MESSAGE_BY_ID serves.
const VIEW_OFFSET: i64 = 4096;

/// What the scripted broker saw, for the test to check.
enum Seen {
    CreateTopic(CreateTopicRequestHeader),
    Query(QueryMessageRequestHeader, Option<String>),
}

struct ScriptedBroker {
    addr: SocketAddr,
    seen: mpsc::Sender<Seen>,
}

impl ScriptedBroker {
    /// A stored message of `TOPIC` with `keys`, at commit-log offset `offset`.
    fn record(&self, keys: &str, uniq_key: &str, offset: i64, body: &'static [u8]) -> bytes::Bytes {
        let properties = format_properties([("KEYS", keys), ("UNIQ_KEY", uniq_key)]);
        let message = record::Message {
            topic: TOPIC.into(),
            queue_id: 1,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 1_700_000_000_000,
            born_host: "127.0.0.1:40000".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: bytes::Bytes::from_static(body),
            properties: properties.into_bytes().into(),
        };
        let store = StoreFields {
            queue_offset: offset / VIEW_OFFSET,
            physical_offset: offset,
            store_timestamp_ms: 1_700_000_000_001,
            store_host: self.addr,
        };
        record::encode(&message, &store).unwrap()
    }
}

fn topic_stats() -> TopicStatsTable {
    let offset = |max_offset| TopicOffset {
        min_offset: 0,
        max_offset,
        last_update_timestamp: 0,
    };
    TopicStatsTable {
        offset_table: BTreeMap::from([
            (MessageQueue::new(TOPIC, "broker-a", 1), offset(3)),
            (MessageQueue::new(TOPIC, "broker-a", 0), offset(4)),
        ]),
        topic_put_tps: 0.0,
    }
}

impl RequestHandler for ScriptedBroker {
    async fn handle(
        self: Rc<Self>,
        _: Rc<Connection>,
        req: RemotingCommand,
    ) -> Result<Response, RequestError> {
        self.answer(&req).map(Response::from)
    }
}

impl ScriptedBroker {
    fn answer(&self, req: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let ok = |body: Vec<u8>| {
            RemotingCommand::response_to(req, response::SUCCESS, None).with_body(body)
        };
        Ok(match req.code {
            request::UPDATE_AND_CREATE_TOPIC => {
                let _ = self.seen.send(Seen::CreateTopic(req.decode_header()?));
                ok(Vec::new())
            }
            request::GET_TOPIC_STATS_INFO => ok(topic_stats().encode()?),
            request::GET_CONSUME_STATS => {
                let wrapper = OffsetWrapper {
                    broker_offset: 4,
                    consumer_offset: 1,
                    pull_offset: 2,
                    last_timestamp: 0,
                };
                let stats = ConsumeStats {
                    consume_tps: 1.5,
                    offset_table: BTreeMap::from([(
                        MessageQueue::new(TOPIC, "broker-a", 0),
                        wrapper,
                    )]),
                };
                ok(stats.encode()?)
            }
            request::GET_BROKER_RUNTIME_INFO => {
                let table = KvTable {
                    table: BTreeMap::from([(
                        "brokerVersionDesc".to_string(),
                        "V5_3_3".to_string(),
                    )]),
                };
                ok(body::encode(&table)?)
            }
            request::QUERY_MESSAGE => {
                let header: QueryMessageRequestHeader = req.decode_header()?;
                let unique = req.ext("_UNIQUE_KEY_QUERY").map(str::to_owned);
                let _ = self.seen.send(Seen::Query(header, unique));
                // The index is a hash: the second record only collides with "k1".
                let mut body = self.record("k1 other", "UNIQ-A", 0, b"a").to_vec();
                body.extend_from_slice(&self.record("k10", "UNIQ-B", 2 * VIEW_OFFSET, b"b"));
                ok(body)
            }
            request::VIEW_MESSAGE_BY_ID => {
                let header: ViewMessageRequestHeader = req.decode_header()?;
                if header.offset != VIEW_OFFSET {
                    return Ok(RemotingCommand::response_to(
                        req,
                        response::SYSTEM_ERROR,
                        Some("no message".into()),
                    ));
                }
                ok(self
                    .record("k1", "UNIQ-V", VIEW_OFFSET, b"viewed body")
                    .to_vec())
            }
            _ => not_supported(req),
        })
    }
}

/// Starts the scripted broker on its own thread (the admin commands run as blocking
/// subprocesses on the test's thread) and returns its address and what it sees.
fn start_broker() -> (SocketAddr, mpsc::Receiver<Seen>) {
    let (addr_tx, addr_rx) = mpsc::channel();
    let (seen_tx, seen_rx) = mpsc::channel();
    std::thread::spawn(move || {
        block_on(async move {
            let listener = glommio::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            addr_tx.send(addr).unwrap();
            serve(
                listener,
                Rc::new(ScriptedBroker {
                    addr,
                    seen: seen_tx,
                }),
            )
            .await;
        })
        .unwrap();
    });
    let addr = addr_rx
        .recv_timeout(EVENT_DEADLINE)
        .expect("broker address");
    (addr, seen_rx)
}

fn admin(ns: &NameServerProcess, args: &[&str]) -> String {
    let (ok, out, err) = ns.admin(args);
    assert!(ok, "ringmq admin {args:?}: {err}");
    out
}

#[test]
fn broker_commands_send_mqadmins_requests_and_print_its_tables() {
    let ns = NameServerProcess::start(None);
    let (broker_addr, seen) = start_broker();
    let addr = broker_addr.to_string();
    let static_addr: &'static str = Box::leak(addr.clone().into_boxed_str());
    block_on(async {
        // The registering connection stays open while the admin commands run.
        let conn = connect(&ns).await;
        register(
            &conn,
            &Broker::master("broker-a", static_addr, &[(TOPIC, 2), ("TBW102", 8)]),
        )
        .await;

        let out = admin(&ns, &["updateTopic", "-t", "New", "-c", CLUSTER, "-w", "3"]);
        assert_eq!(
            out,
            format!(
                "create topic to {addr} success.\nTopicConfig [topicName=New, readQueueNums=8, \
                 writeQueueNums=3, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, \
                 order=false, attributes={{}}]\n"
            )
        );
        let Ok(Seen::CreateTopic(header)) = seen.recv_timeout(TIMEOUT) else {
            panic!("no UPDATE_AND_CREATE_TOPIC");
        };
        assert_eq!(
            (
                header.topic.as_str(),
                header.default_topic.as_str(),
                header.read_queue_nums,
                header.write_queue_nums,
                header.perm
            ),
            ("New", "TBW102", 8, 3, 6)
        );

        let out = admin(&ns, &["topicStatus", "-t", TOPIC]);
        let rows: Vec<Vec<&str>> = out
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .filter(|r: &Vec<&str>| !r.is_empty())
            .collect();
        assert_eq!(rows[0], ["broker-a", "0", "0", "4"]);
        assert_eq!(rows[1], ["broker-a", "1", "0", "3"]);
        assert!(out.ends_with("\nTopic Put TPS: 0.0\n"), "{out}");

        let out = admin(&ns, &["consumerProgress", "-t", TOPIC, "-g", "G"]);
        assert!(
            out.contains("Consume TPS: 1.50\nConsume Diff Total: 3\nConsume Inflight Total: 1\n"),
            "{out}"
        );

        let out = admin(&ns, &["brokerStatus", "-b", &addr]);
        assert_eq!(out, format!("{:<32}: V5_3_3\n", "brokerVersionDesc"));
        let out = admin(&ns, &["brokerStatus", "-c", CLUSTER]);
        assert_eq!(
            out,
            format!("{addr:<24} {:<32}: V5_3_3\n", "brokerVersionDesc")
        );

        // A key query keeps only records that carry the key, as mqadmin does.
        let out = admin(&ns, &["queryMsgByKey", "-t", TOPIC, "-k", "k1"]);
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(out.contains("UNIQ-A") && !out.contains("UNIQ-B"), "{out}");
        let Ok(Seen::Query(header, unique)) = seen.recv_timeout(TIMEOUT) else {
            panic!("no QUERY_MESSAGE");
        };
        assert_eq!(
            (header.max_num, header.begin_timestamp, header.end_timestamp),
            (64, 0, i64::MAX)
        );
        assert_eq!(unique.as_deref(), Some("false"));

        // By offsetMsgId: VIEW_MESSAGE_BY_ID at the broker the id names.
        let id = OffsetMsgId {
            store_host: broker_addr,
            commit_log_offset: VIEW_OFFSET,
        }
        .to_string();
        let out = admin(&ns, &["queryMsgById", "-i", &id]);
        assert!(out.contains("Message Body:        viewed body\n"), "{out}");
        assert!(
            out.contains(&format!("OffsetID:            {id}\n")),
            "{out}"
        );
        // By message id (UNIQ_KEY): a unique-key query, and only the record with that id.
        let out = admin(&ns, &["queryMsgById", "-t", TOPIC, "-i", "UNIQ-B"]);
        assert!(out.contains("Message Body:        b\n"), "{out}");
        let Ok(Seen::Query(header, unique)) = seen.recv_timeout(TIMEOUT) else {
            panic!("no QUERY_MESSAGE");
        };
        assert_eq!(
            (header.key.as_str(), header.max_num, unique.as_deref()),
            ("UNIQ-B", 32, Some("true"))
        );

        // An offsetMsgId of no registered broker is not sent anywhere; without -t it fails.
        let stranger = OffsetMsgId {
            store_host: "127.0.0.2:1".parse().unwrap(),
            commit_log_offset: 0,
        }
        .to_string();
        let (ok, _, err) = ns.admin(&["queryMsgById", "-i", &stranger]);
        assert!(!ok && err.contains("give -t topic"), "{err}");
        // A broker's refusal reaches the user with its code and remark.
        let missing = OffsetMsgId {
            store_host: broker_addr,
            commit_log_offset: 1,
        }
        .to_string();
        let (ok, _, err) = ns.admin(&["queryMsgById", "-i", &missing]);
        assert!(!ok && err.contains("SYSTEM_ERROR (1): no message"), "{err}");
    })
    .unwrap();
}
