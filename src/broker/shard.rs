//! One broker shard's state, owned by its executor: its storage engine, its copy of the
//! control-plane snapshot, its connections, its end of the shard bus, its counters. Request
//! handlers (`broker::processor`) are free functions over it; it knows nothing of them.

use super::config::BrokerConfig;
use super::control::ops::ControlOp;
use super::control::snapshot::ControlSnapshot;
use super::control::topics::dlq_topic;
use super::error::{BrokerError, BrokerResult};
use super::filter::cache::SelectorCache;
use super::filter::{CompileError, Selector};
use super::placement::owner_of;
use super::transaction::book::{EntrySource, FollowedQueue, TransactionBook};
use super::work::{CheckRequest, Work};
use crate::protocol::body::heartbeat::SubscriptionData;
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::TopicConfig;
use crate::protocol::codes::request as code;
use crate::protocol::command::{RemotingCommand, Text};
use crate::protocol::header::ConsumerGroupRequestHeader;
use crate::protocol::message::{MessageLimits, UniqKeyGenerator};
use crate::server::connection::Connection;
use crate::server::ConnectionId;
use ringmq_bus::{Bus, ReplyTo};
use ringmq_shards::transaction::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use ringmq_shards::{QueueEntry, RealClock, RealDisk};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// The storage engine as the broker runs it.
pub type Store = ringmq_shards::Shard<RealDisk, RealClock>;

/// What a shard has served, for GET_BROKER_RUNTIME_INFO (summed over shards there).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub messages_put: u64,
    pub bytes_put: u64,
    pub messages_got: u64,
}

/// What a send reads of its topic's config, copied out of the snapshot (a clone of the whole
/// config cost an allocation per send, for its name).
#[derive(Clone, Copy, Debug)]
pub struct SendTopic {
    pub perm: i32,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
}

impl SendTopic {
    fn of(config: &TopicConfig) -> Self {
        Self {
            perm: config.perm,
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
        }
    }
}

/// One shard of the broker (see the module doc).
pub struct Shard {
    id: usize,
    config: Arc<BrokerConfig>,
    store: Store,
    limits: MessageLimits,
    store_host: SocketAddr,
    bus: OnceCell<Rc<Bus<Work>>>,
    snapshot: RefCell<Arc<ControlSnapshot>>,
    /// The connections accepted by this shard, for requests the broker sends to clients.
    connections: RefCell<HashMap<ConnectionId, Weak<Connection>>>,
    uniq_keys: RefCell<UniqKeyGenerator>,
    /// The SQL92 selectors this shard's pulls filter with.
    selectors: RefCell<SelectorCache>,
    /// This shard's undecided transactions, followed from its half and op queues.
    transactions: RefCell<TransactionBook>,
    queue_cursor: Cell<u32>,
    counters: Cell<Counters>,
    boot_timestamp_ms: i64,
    /// Set at a clean stop: sends are refused so nothing is acknowledged after the flush.
    stopping: Cell<bool>,
    /// The accept loops; dropping them closes the listening sockets.
    listeners: RefCell<Vec<glommio::Task<()>>>,
    /// The delay-level delivery tasks and the transaction check-back, cancelled when the stop
    /// begins (before the final flush and persist), so no delivery is stored after its
    /// progress was last persisted and no check is stored after the final flush.
    deliveries: RefCell<Vec<glommio::Task<()>>>,
}

impl Shard {
    pub fn new(
        id: usize,
        config: Arc<BrokerConfig>,
        store: Store,
        snapshot: Arc<ControlSnapshot>,
    ) -> Self {
        let store_host = config.advertised_addr();
        let limits = MessageLimits {
            body_bytes_max: config.message_bytes_max,
        };
        let uniq_keys = UniqKeyGenerator::new(store_host.ip(), std::process::id(), id as i32);
        Self {
            id,
            config,
            store,
            limits,
            store_host,
            bus: OnceCell::new(),
            snapshot: RefCell::new(snapshot),
            connections: RefCell::new(HashMap::new()),
            uniq_keys: RefCell::new(uniq_keys),
            selectors: RefCell::new(SelectorCache::default()),
            transactions: RefCell::new(TransactionBook::default()),
            queue_cursor: Cell::new(id as u32),
            counters: Cell::new(Counters::default()),
            stopping: Cell::new(false),
            listeners: RefCell::new(Vec::new()),
            deliveries: RefCell::new(Vec::new()),
            boot_timestamp_ms: super::now_ms(),
        }
    }

    pub fn id(&self) -> usize {
        self.id
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn limits(&self) -> &MessageLimits {
        &self.limits
    }

    /// The address clients reach this broker at; written into records and message ids.
    pub fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    pub fn boot_timestamp_ms(&self) -> i64 {
        self.boot_timestamp_ms
    }

    pub fn set_bus(&self, bus: Rc<Bus<Work>>) {
        assert!(self.bus.set(bus).is_ok(), "a shard joins the bus once");
    }

    pub fn bus(&self) -> &Bus<Work> {
        self.bus
            .get()
            .expect("the shard joined the bus before serving")
    }

    pub fn shards(&self) -> usize {
        self.bus().shards()
    }

    /// The shard owning queue `queue_id` of `topic`.
    pub fn owner_of(&self, topic: &str, queue_id: i32) -> usize {
        owner_of(topic, queue_id, self.shards())
    }

    /// Has shard `to` do the work `make` builds and returns its answer (this shard's own work
    /// goes through its own inbox, after the requests already queued there).
    pub async fn ask<T: Send + 'static>(
        &self,
        to: usize,
        make: impl FnOnce(ReplyTo<BrokerResult<T>>) -> Work,
    ) -> BrokerResult<T> {
        self.bus().call(to, make).await?
    }

    /// Has every shard (this one too) do the work `make` builds, one after the other, and
    /// returns their answers in shard order: the parts a statistics or query request merges.
    pub async fn on_every_shard<T: Send + 'static>(
        &self,
        make: impl Fn(ReplyTo<BrokerResult<T>>) -> Work,
    ) -> BrokerResult<Vec<T>> {
        let mut parts = Vec::with_capacity(self.shards());
        for shard in 0..self.shards() {
            parts.push(self.ask(shard, &make).await?);
        }
        Ok(parts)
    }

    /// Has shard 0's control plane apply the operation `make` builds.
    pub async fn control<T: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<BrokerResult<T>>) -> ControlOp,
    ) -> BrokerResult<T> {
        self.ask(0, |reply| Work::Control(Box::new(make(reply))))
            .await
    }

    pub fn snapshot(&self) -> Arc<ControlSnapshot> {
        self.snapshot.borrow().clone()
    }

    /// Installs a snapshot unless this shard already holds a newer one.
    pub fn install_snapshot(&self, snapshot: Arc<ControlSnapshot>) {
        let mut current = self.snapshot.borrow_mut();
        if snapshot.version > current.version {
            *current = snapshot;
        }
    }

    pub fn topic(&self, name: &str) -> Option<TopicConfig> {
        self.snapshot.borrow().topics.get(name).cloned()
    }

    pub fn group_subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.snapshot.borrow().subscription(group, topic).cloned()
    }

    /// The compiled selector of a group's non-TAG subscription (cached, see
    /// [`SelectorCache`]).
    pub fn selector(
        &self,
        group: &str,
        subscription: &SubscriptionData,
    ) -> Result<Rc<Selector>, CompileError> {
        self.selectors.borrow_mut().get(
            group,
            &subscription.topic,
            &subscription.expression_type,
            &subscription.sub_string,
        )
    }

    /// The group's config, created on first use when the broker allows it (as Java does on
    /// a pull or a send-back from an unknown group).
    pub async fn group_config(&self, group: &str) -> BrokerResult<SubscriptionGroupConfig> {
        if let Some(config) = self.snapshot.borrow().groups.get(group) {
            return Ok(config.clone());
        }
        let group = group.to_owned();
        let found = self
            .control(|reply| ControlOp::FindOrCreateGroup {
                group: group.clone(),
                reply,
            })
            .await?;
        found.ok_or(BrokerError::SubscriptionGroupNotExist(group))
    }

    /// `topic` as it is, or created for a send (from `default_topic`, or as a retry topic);
    /// `None` when it does not exist and may not be made.
    pub async fn topic_for_send(
        &self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
    ) -> BrokerResult<Option<SendTopic>> {
        let held = self.snapshot.borrow().topics.get(topic).map(SendTopic::of);
        if held.is_some() {
            return Ok(held);
        }
        let created = self
            .control(|reply| ControlOp::CreateTopicForSend {
                topic: topic.to_owned(),
                default_topic: default_topic.to_owned(),
                queue_nums,
                reply,
            })
            .await?;
        Ok(created.as_ref().map(SendTopic::of))
    }

    /// `%DLQ%group`, created if it does not exist yet.
    pub async fn dlq_topic(&self, group: &str) -> BrokerResult<String> {
        let topic = dlq_topic(group);
        if self.topic(&topic).is_none() {
            self.control(|reply| ControlOp::CreateDlqTopic {
                group: group.to_owned(),
                reply,
            })
            .await?;
        }
        Ok(topic)
    }

    /// A producer-chosen queue id was negative: spread such sends over the writable queues.
    pub fn pick_queue(&self, write_queue_nums: i32) -> i32 {
        let next = self.queue_cursor.get().wrapping_add(1);
        self.queue_cursor.set(next);
        (next % write_queue_nums.max(1) as u32) as i32
    }

    pub fn next_uniq_key(&self) -> Text {
        Text::display(self.uniq_keys.borrow_mut().next(super::now_ms()))
    }

    /// Runs `f` on this shard's transaction book (no borrow outlives the call, so none is
    /// held across an await).
    pub fn with_transactions<T>(&self, f: impl FnOnce(&mut TransactionBook) -> T) -> T {
        f(&mut self.transactions.borrow_mut())
    }

    /// Folds the half and op records appended since the last call into the transaction book
    /// (at start: all of them, which is the recovery). A transaction first seen now is first
    /// looked at by the check-back after `transactionTimeOut`. Returns the entries folded in.
    pub fn follow_transactions(&self) -> usize {
        let first_due_ms = super::now_ms() + self.config.transaction.timeout_ms();
        let source = StoreEntries(&self.store);
        self.transactions.borrow_mut().follow(&source, first_due_ms)
    }

    pub fn counters(&self) -> Counters {
        self.counters.get()
    }

    pub fn count_put(&self, messages: usize, bytes: usize) {
        let mut c = self.counters.get();
        c.messages_put += messages as u64;
        c.bytes_put += bytes as u64;
        self.counters.set(c);
    }

    pub fn count_got(&self, messages: usize) {
        let mut c = self.counters.get();
        c.messages_got += messages as u64;
        self.counters.set(c);
    }

    /// Remembers a connection of this shard, for requests the broker sends its client.
    pub fn track(&self, connection: &Rc<Connection>) {
        self.connections
            .borrow_mut()
            .entry(connection.id())
            .or_insert_with(|| Rc::downgrade(connection));
    }

    pub fn untrack(&self, connection: ConnectionId) {
        self.connections.borrow_mut().remove(&connection);
    }

    /// NOTIFY_CONSUMER_IDS_CHANGED (oneway) to one of this shard's connections, if still open.
    pub fn notify_ids_changed(&self, connection: ConnectionId, group: &str) {
        let header = ConsumerGroupRequestHeader {
            consumer_group: group.to_owned(),
        };
        let request =
            RemotingCommand::request(code::NOTIFY_CONSUMER_IDS_CHANGED).with_header(&header);
        self.oneway_to(connection, request, "consumer-ids notification");
    }

    /// CHECK_TRANSACTION_STATE (oneway, the half message as body) to one of this shard's
    /// connections, if still open.
    pub fn check_transaction_state(&self, connection: ConnectionId, check: &CheckRequest) {
        let request = RemotingCommand::request(code::CHECK_TRANSACTION_STATE)
            .with_header(&check.header)
            .with_body(check.body.clone());
        self.oneway_to(connection, request, "transaction check");
    }

    /// Sends `request` (oneway) to the client on one of this shard's connections; a connection
    /// closed meanwhile gets nothing (its client is gone).
    fn oneway_to(&self, connection: ConnectionId, request: RemotingCommand, what: &str) {
        let Some(open) = self.open_connection(connection) else {
            tracing::debug!(what, "connection closed: not sent");
            return;
        };
        if let Err(err) = open.oneway(request) {
            tracing::debug!(%err, what, "could not send to a client");
        }
    }

    /// One of this shard's client connections, if it is still open.
    pub fn open_connection(&self, connection: ConnectionId) -> Option<Rc<Connection>> {
        let open = self.connections.borrow().get(&connection)?.upgrade()?;
        (!open.is_closed()).then_some(open)
    }

    /// Keeps an accept loop running until the stop.
    pub fn add_listener(&self, accept_loop: glommio::Task<()>) {
        self.listeners.borrow_mut().push(accept_loop);
    }

    /// Keeps a delay level's delivery task (or the transaction check-back) running until the
    /// stop.
    pub fn add_delivery(&self, delivery: glommio::Task<()>) {
        self.deliveries.borrow_mut().push(delivery);
    }

    /// The clean stop begins: no new connections (the accept loops are cancelled, closing
    /// their sockets), no new sends and no more deliveries of delayed messages; requests on
    /// open connections are still answered.
    pub fn begin_stop(&self) {
        self.stopping.set(true);
        self.listeners.borrow_mut().clear();
        self.deliveries.borrow_mut().clear();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.get()
    }
}

/// The store's two transaction queues, as the book reads them.
struct StoreEntries<'a>(&'a Store);

impl EntrySource for StoreEntries<'_> {
    fn entries(&self, queue: FollowedQueue, from: i64, max: usize) -> Vec<QueueEntry> {
        let topic = match queue {
            FollowedQueue::Half => TRANS_HALF_TOPIC,
            FollowedQueue::Op => TRANS_OP_HALF_TOPIC,
        };
        self.0.queue_entries(topic, 0, from, max)
    }
}
