//! rocketmq-client-rust plumbing shared by the scenarios: environment, the client runtime,
//! producers, a recording push consumer, the contract's messages and their checks.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rocketmq_client_rust::{
    ClientConfig, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeOrderlyContext, ConsumeOrderlyStatus, DefaultMQProducer,
    DefaultMQPushConsumer, MQPushConsumer, MessageListenerConcurrently, MessageListenerOrderly,
    MessageQueueListener, MessageSelector, SendResult, SendStatus,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_queue::MessageQueue;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;
use rocketmq_model::common::sys_flag::message_sys_flag::MessageSysFlag;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};
use tokio::sync::Notify;

/// Consume deadline of the contract (tests/matrix/README.md): no wait runs longer.
pub const CONSUME_DEADLINE: Duration = Duration::from_secs(60);
/// Route polling and heartbeats default to 30 s; the client's minimum (10 s) so a new
/// consumer is known quickly.
const CLIENT_INTERVAL_MS: u32 = 10_000;
/// Send timeout: generous for the 1 MiB body on a loaded 2-core host.
pub const SEND_TIMEOUT_MS: u64 = 10_000;

/// A failed check. (Every scenario of the contract is driven: this row has no NA cell.)
#[derive(Debug)]
pub enum Outcome {
    Fail(String),
}

pub type Res<T> = Result<T, Outcome>;

pub fn fail<T>(what: impl Into<String>) -> Res<T> {
    Err(Outcome::Fail(what.into()))
}

pub fn must(cond: bool, what: impl FnOnce() -> String) -> Res<()> {
    if cond {
        Ok(())
    } else {
        fail(what())
    }
}

/// Turns a client error into a FAIL naming what was being done.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> Res<T>;
}

/// Longest error text kept in a RESULT line: the client's Debug form names the failing
/// setting or request, but can run to pages.
const ERROR_TEXT_MAX: usize = 600;

impl<T, E: std::fmt::Debug> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Res<T> {
        self.map_err(|e| {
            let mut text = format!("{e:?}");
            if let Some((cut, _)) = text.char_indices().nth(ERROR_TEXT_MAX) {
                text.truncate(cut);
            }
            Outcome::Fail(format!("{what}: {text}"))
        })
    }
}

/// The MATRIX_* environment of the driver contract.
pub struct Env {
    pub namesrv: String,
    pub broker_name: String,
    pub cluster: String,
    pub topic: String,
    /// A second topic of the scenario (one nobody consumes, in request-reply).
    pub topic2: String,
    pub group: String,
    pub state: String,
    pub count: usize,
    pub peer: String,
}

impl Env {
    pub fn load() -> Res<Env> {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        let env = Env {
            namesrv: var("MATRIX_NAMESRV"),
            broker_name: std::env::var("MATRIX_BROKER_NAME").unwrap_or_else(|_| "broker-a".into()),
            cluster: var("MATRIX_CLUSTER"),
            topic: var("MATRIX_TOPIC"),
            topic2: var("MATRIX_TOPIC2"),
            group: var("MATRIX_GROUP"),
            state: var("MATRIX_STATE"),
            count: var("MATRIX_COUNT").parse().unwrap_or(16),
            peer: var("MATRIX_PEER"),
        };
        must(!env.namesrv.is_empty(), || {
            "MATRIX_NAMESRV is not set".into()
        })?;
        Ok(env)
    }
}

/// The client runtime every producer and consumer of one process runs on.
pub struct Runtime {
    owner: RuntimeOwner,
    pub client: Arc<ClientRuntime>,
    telemetry: rocketmq_observability::TelemetryRuntimeGuard,
    next_instance: std::sync::atomic::AtomicU32,
}

impl Runtime {
    pub fn new() -> Res<Runtime> {
        let owner = RuntimeOwner::plan(RuntimeConfig {
            thread_name: "matrix-rust".into(),
            ..Default::default()
        })
        .ctx("plan runtime")?
        .build()
        .ctx("build runtime")?;
        let telemetry = rocketmq_observability::install_global(
            &rocketmq_observability::TelemetryBootstrapConfig::default(),
        )
        .ctx("telemetry")?;
        let client = ClientRuntime::try_new(
            owner.root_context().component("client"),
            ClientRuntimeConfig::default(),
            telemetry.handle(),
        )
        .ctx("client runtime")?;
        Ok(Runtime {
            owner,
            client,
            telemetry,
            next_instance: Default::default(),
        })
    }

    /// A client config with its own instance name: clients sharing one would share one
    /// client instance (and so one client id), which rebalance and broadcast must not.
    pub fn config(&self, env: &Env) -> ClientConfig {
        let n = self
            .next_instance
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut c = ClientConfig::new();
        c.set_namesrv_addr(env.namesrv.clone().into());
        c.set_instance_name(format!("matrix-{}-{n}", std::process::id()).into());
        c.set_poll_name_server_interval(CLIENT_INTERVAL_MS);
        c.set_heartbeat_broker_interval(CLIENT_INTERVAL_MS);
        c
    }

    /// A started producer of the scenario's group; `compress_over` bytes and up are compressed.
    pub async fn producer(&self, env: &Env, compress_over: u32) -> Res<DefaultMQProducer> {
        self.producer_of(env, &format!("producer-{compress_over}"), compress_over)
            .await
    }

    /// A started producer of group `<MATRIX_GROUP>-<role>`.
    pub async fn producer_of(
        &self,
        env: &Env,
        role: &str,
        compress_over: u32,
    ) -> Res<DefaultMQProducer> {
        let mut p = DefaultMQProducer::builder(self.client.clone())
            .client_config(self.config(env))
            .producer_group(format!("{}-{role}", env.group))
            .name_server_addr(env.namesrv.clone())
            .send_msg_timeout(SEND_TIMEOUT_MS as u32)
            .compress_msg_body_over_howmuch(compress_over)
            .max_message_size(4 * 1024 * 1024)
            .build();
        p.start().await.ctx("start producer")?;
        Ok(p)
    }

    pub async fn shutdown(self) {
        let _ = self.client.shutdown().await;
        let _ = self.owner.shutdown_tasks().await;
        let _ = self.owner.shutdown_background();
        let _ = self.telemetry.shutdown();
    }
}

/// What a message was sent as, to compare with what arrives.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Want {
    pub body: Vec<u8>,
    pub tag: String,
    pub keys: String,
    pub props: Vec<(String, String)>,
    pub msg_id: String,
    pub offset_msg_id: String,
    pub queue_id: i32,
    /// Whether the client compressed the body (the stored message's sys flag says so).
    #[serde(default)]
    pub compressed: bool,
}

/// A message as received, copied out of the listener.
#[derive(Clone, Debug)]
pub struct Got {
    pub body: Vec<u8>,
    pub tag: String,
    pub keys: String,
    pub props: HashMap<String, String>,
    pub msg_id: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub compressed: bool,
}

const PROPERTY_UNIQ_KEY: &str = "UNIQ_KEY";

impl Got {
    pub fn of(m: &MessageExt) -> Got {
        let props: HashMap<String, String> = m
            .properties()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Got {
            body: m.body().map(|b| b.to_vec()).unwrap_or_default(),
            tag: m.get_tags().map(|t| t.to_string()).unwrap_or_default(),
            keys: props.get("KEYS").cloned().unwrap_or_default(),
            // The id a send returns is the client-made UNIQ_KEY when set, else the offset id.
            msg_id: props
                .get(PROPERTY_UNIQ_KEY)
                .cloned()
                .unwrap_or_else(|| m.msg_id().to_string()),
            props,
            queue_id: m.queue_id(),
            queue_offset: m.queue_offset(),
            compressed: m.sys_flag() & MessageSysFlag::COMPRESSED_FLAG != 0,
        }
    }
}

/// Builds a message; `keys` are joined by the client with a space.
pub fn message(
    topic: &str,
    tag: &str,
    body: Vec<u8>,
    keys: &[String],
    props: &[(String, String)],
) -> Res<Message> {
    let mut m = Message::builder()
        .topic(topic)
        .tags(tag)
        .body(body)
        .keys(keys.to_vec())
        .build()
        .ctx("build message")?;
    for (k, v) in props {
        m.put_user_property(k.clone().into(), v.clone().into())
            .ctx("user property")?;
    }
    Ok(m)
}

/// The contract's message i of a scenario: body matrix-<scenario>-<i>, key key-<i>, property matrix-index=<i>.
pub fn contract(topic: &str, scenario: &str, i: usize, tag: &str) -> Res<Message> {
    message(
        topic,
        tag,
        format!("matrix-{scenario}-{i}").into_bytes(),
        &[format!("key-{i}")],
        &[("matrix-index".into(), i.to_string())],
    )
}

/// The expectation for a message about to be sent.
pub fn want_of(m: &Message) -> Want {
    let mut props: Vec<(String, String)> = m
        .get_properties()
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "KEYS" | "TAGS" | "WAIT" | PROPERTY_UNIQ_KEY))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    props.sort();
    Want {
        body: m.get_body().map(|b| b.to_vec()).unwrap_or_default(),
        tag: m.tags().map(|t| t.to_string()).unwrap_or_default(),
        keys: m.get_keys().map(|t| t.to_string()).unwrap_or_default(),
        props,
        msg_id: String::new(),
        offset_msg_id: String::new(),
        queue_id: -1,
        compressed: false,
    }
}

/// Checks a send result (SEND_OK with msgId and queue) and records it in the expectation.
pub fn sent(mut want: Want, r: Option<&SendResult>) -> Res<Want> {
    let Some(r) = r else {
        return fail("send returned no result");
    };
    must(r.send_status == SendStatus::SendOk, || {
        format!("send status {:?}", r.send_status)
    })?;
    let (Some(id), Some(q)) = (&r.msg_id, &r.message_queue) else {
        return fail(format!("send result without msgId or queue: {r:?}"));
    };
    want.msg_id = id.to_string();
    want.offset_msg_id = r.offset_msg_id.clone().unwrap_or_default();
    want.queue_id = q.queue_id();
    Ok(want)
}

/// Sync-sends one message and returns what it should arrive as.
pub async fn send(p: &DefaultMQProducer, m: Message) -> Res<Want> {
    let want = want_of(&m);
    let r = p.send_with_timeout(m, SEND_TIMEOUT_MS).await.ctx("send")?;
    sent(want, r.as_ref())
}

/// Messages in `topic`'s queues: the sum of their max offsets, as the broker answers them.
pub async fn held_in(p: &mut DefaultMQProducer, topic: &str) -> Res<i64> {
    let queues = p.fetch_publish_message_queues(topic).await.ctx("route")?;
    let mut held = 0;
    for q in &queues {
        held += p.max_offset(q).await.ctx("max offset")?;
    }
    Ok(held)
}

/// Sync-sends the contract's messages from..from+n.
pub async fn send_n(
    p: &DefaultMQProducer,
    topic: &str,
    scenario: &str,
    from: usize,
    n: usize,
) -> Res<Vec<Want>> {
    let mut wants = Vec::with_capacity(n);
    for i in from..from + n {
        wants.push(send(p, contract(topic, scenario, i, "TagA")?).await?);
    }
    Ok(wants)
}

/// What differs between a received message and its expectation ('' when intact).
pub fn diff(w: &Want, g: &Got) -> String {
    let mut bad = Vec::new();
    if g.body != w.body {
        bad.push(format!("body ({} bytes vs {})", g.body.len(), w.body.len()));
    }
    if g.tag != w.tag {
        bad.push(format!("tag {} != {}", g.tag, w.tag));
    }
    if g.keys != w.keys {
        bad.push(format!("keys {:?} != {:?}", g.keys, w.keys));
    }
    for (k, v) in &w.props {
        if g.props.get(k) != Some(v) {
            bad.push(format!("property {k}={:?} != {v}", g.props.get(k)));
        }
    }
    if g.compressed != w.compressed {
        bad.push(format!(
            "stored compressed={} expected {}",
            g.compressed, w.compressed
        ));
    }
    if !w.msg_id.is_empty() && g.msg_id != w.msg_id {
        bad.push(format!("msgId {} != {}", g.msg_id, w.msg_id));
    }
    bad.join(", ")
}

/// Each expected message arrived exactly once, intact, and nothing else arrived.
pub fn check_exactly(wants: &[Want], got: &[Got]) -> Res<()> {
    let mut problems = Vec::new();
    for w in wants {
        let hits: Vec<&Got> = got.iter().filter(|g| g.body == w.body).collect();
        let name = String::from_utf8_lossy(&w.body[..w.body.len().min(40)]).to_string();
        if hits.len() != 1 {
            problems.push(format!("{name} received {} times", hits.len()));
            continue;
        }
        let d = diff(w, hits[0]);
        if !d.is_empty() {
            problems.push(format!("{name}: {d}"));
        }
    }
    if got.len() != wants.len() {
        problems.push(format!(
            "received {} messages, expected {}",
            got.len(),
            wants.len()
        ));
    }
    problems.truncate(5);
    must(problems.is_empty(), || problems.join("; "))
}

/// Wakes every wait of this process when any consumer receives messages or queues.
static CHANGED: Notify = Notify::const_new();

/// Wakes the waits of this process: something they look at (not a consumer's) changed.
pub fn notify_all() {
    CHANGED.notify_waiters();
}

/// Waits until `pred` holds, at most the consume deadline; woken by every consumer event.
pub async fn wait_until(what: &str, pred: impl Fn() -> bool) -> Res<()> {
    let wait = async {
        loop {
            let notified = CHANGED.notified();
            if pred() {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(CONSUME_DEADLINE, wait)
        .await
        .map_err(|_| Outcome::Fail(format!("timed out waiting for {what}")))
}

/// Messages a listener has copied out, and the queues rebalance gave its consumer.
#[derive(Default)]
pub struct Inbox {
    got: Mutex<Vec<Got>>,
    /// Where each received message also goes whole, for a scenario that answers them.
    tap: Option<tokio::sync::mpsc::UnboundedSender<Message>>,
    /// Each message's body and when (ms since the epoch) the listener got it.
    arrived: Mutex<Vec<(Vec<u8>, u64)>>,
    assigned: Mutex<BTreeSet<i32>>,
}

impl Inbox {
    /// An inbox that also hands every received message to `tap`.
    pub fn tapped(tap: tokio::sync::mpsc::UnboundedSender<Message>) -> Inbox {
        Inbox {
            tap: Some(tap),
            ..Inbox::default()
        }
    }

    fn push(&self, msgs: &[&MessageExt]) {
        if let Some(tap) = &self.tap {
            for m in msgs {
                // The receiver is gone only once its scenario is over.
                let _ = tap.send(m.message.clone());
            }
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.arrived.lock().expect("inbox lock").extend(
            msgs.iter()
                .map(|m| (m.body().map(|b| b.to_vec()).unwrap_or_default(), now)),
        );
        self.got
            .lock()
            .expect("inbox lock")
            .extend(msgs.iter().map(|m| Got::of(m)));
        CHANGED.notify_waiters();
    }

    /// (body, arrival ms since the epoch) of every message received, in arrival order.
    pub fn arrivals(&self) -> Vec<(Vec<u8>, u64)> {
        self.arrived.lock().expect("inbox lock").clone()
    }

    pub fn snapshot(&self) -> Vec<Got> {
        self.got.lock().expect("inbox lock").clone()
    }

    pub fn len(&self) -> usize {
        self.got.lock().expect("inbox lock").len()
    }

    /// Queue ids of the subscribed topic this consumer owns now.
    pub fn assigned(&self) -> BTreeSet<i32> {
        self.assigned.lock().expect("inbox lock").clone()
    }

    /// Waits until at least `n` messages arrived, at most the consume deadline.
    pub async fn until(&self, n: usize, what: &str) -> Res<()> {
        wait_until(&format!("{what} (have {} of {n})", self.len()), || {
            self.len() >= n
        })
        .await
    }
}

/// Records the queues each rebalance assigns (of the subscribed topic, not the retry topic).
struct Assignments(Arc<Inbox>, String);

impl MessageQueueListener for Assignments {
    fn message_queue_changed(
        &self,
        topic: &str,
        _: &HashSet<MessageQueue>,
        mine: &HashSet<MessageQueue>,
    ) {
        if topic == self.1 {
            *self.0.assigned.lock().expect("inbox lock") =
                mine.iter().map(|q| q.queue_id()).collect();
            CHANGED.notify_waiters();
        }
    }
}

struct Concurrently(Arc<Inbox>);

impl MessageListenerConcurrently for Concurrently {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _: &ConsumeConcurrentlyContext,
    ) -> rocketmq_client_rust::ClientResult<ConsumeConcurrentlyStatus> {
        self.0.push(msgs);
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

struct Orderly(Arc<Inbox>);

impl MessageListenerOrderly for Orderly {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _: &mut ConsumeOrderlyContext,
    ) -> rocketmq_client_rust::ClientResult<ConsumeOrderlyStatus> {
        self.0.push(msgs);
        Ok(ConsumeOrderlyStatus::Success)
    }
}

/// How a push consumer is set up.
pub struct ConsumerSpec<'a> {
    pub group: &'a str,
    /// A tag expression, unless `sql92` is set.
    pub sub: &'a str,
    /// An SQL92 expression (`MessageSelector::by_sql`) instead of `sub`.
    pub sql92: Option<&'a str>,
    pub from: ConsumeFromWhere,
    pub timestamp: Option<String>,
    pub broadcast: bool,
    pub orderly: bool,
}

impl<'a> ConsumerSpec<'a> {
    pub fn new(group: &'a str) -> Self {
        ConsumerSpec {
            group,
            sub: "*",
            sql92: None,
            from: ConsumeFromWhere::ConsumeFromFirstOffset,
            timestamp: None,
            broadcast: false,
            orderly: false,
        }
    }
}

/// A started push consumer and what it has received.
pub struct Recorder {
    pub consumer: DefaultMQPushConsumer,
    pub inbox: Arc<Inbox>,
}

impl Runtime {
    pub async fn consumer(&self, env: &Env, topic: &str, spec: ConsumerSpec<'_>) -> Res<Recorder> {
        self.consumer_into(env, topic, spec, Arc::default()).await
    }

    /// A consumer as [`Runtime::consumer`] recording into `inbox`.
    pub async fn consumer_into(
        &self,
        env: &Env,
        topic: &str,
        spec: ConsumerSpec<'_>,
        inbox: Arc<Inbox>,
    ) -> Res<Recorder> {
        let mut b = DefaultMQPushConsumer::builder(self.client.clone())
            .client_config(self.config(env))
            .name_server_addr(env.namesrv.clone())
            .consumer_group(spec.group.to_string())
            .consume_from_where(spec.from)
            .message_model(if spec.broadcast {
                MessageModel::Broadcasting
            } else {
                MessageModel::Clustering
            })
            .message_queue_listener(Some(Arc::new(Assignments(
                inbox.clone(),
                topic.to_string(),
            ))));
        if let Some(ts) = spec.timestamp {
            b = b.consume_timestamp(ts);
        }
        let mut consumer = b.build();
        match spec.sql92 {
            Some(sql) => consumer
                .subscribe_with_selector(topic, Some(MessageSelector::by_sql(sql)))
                .await
                .ctx("subscribe")?,
            None => consumer
                .subscribe(topic.to_string(), spec.sub.to_string())
                .await
                .ctx("subscribe")?,
        }
        if spec.orderly {
            consumer.register_message_listener_orderly(Orderly(inbox.clone()));
        } else {
            consumer.register_message_listener_concurrently(Concurrently(inbox.clone()));
        }
        consumer.start().await.ctx("start consumer")?;
        Ok(Recorder { consumer, inbox })
    }
}

/// A fresh consumer reads until it holds `wants`; each must arrive once, intact.
pub async fn consume_exactly(
    rt: &Runtime,
    env: &Env,
    topic: &str,
    spec: ConsumerSpec<'_>,
    wants: &[Want],
) -> Res<Recorder> {
    let mut r = rt.consumer(env, topic, spec).await?;
    let waited = r
        .inbox
        .until(wants.len(), &format!("{} messages", wants.len()))
        .await;
    if waited.is_err() {
        r.consumer.shutdown().await;
    }
    waited?;
    check_exactly(wants, &r.inbox.snapshot())?;
    Ok(r)
}

/// Bytes that compress poorly and are only equal when intact.
pub fn pattern(n: usize) -> Vec<u8> {
    let mut x: u32 = 2_463_534_242;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

pub fn save<T: serde::Serialize>(env: &Env, name: &str, v: &T) -> Res<()> {
    let s = serde_json::to_string(v).ctx("encode state")?;
    std::fs::write(format!("{}/{name}", env.state), s).ctx("write state")
}

pub fn load<T: serde::de::DeserializeOwned>(env: &Env, name: &str) -> Res<T> {
    let s = std::fs::read_to_string(format!("{}/{name}", env.state)).ctx("read state")?;
    serde_json::from_str(&s).ctx("decode state")
}
