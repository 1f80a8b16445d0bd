//! One broker shard: what it owns (its storage engine, its connections, its copy of the
//! control-plane snapshot, its end of the router) and how it answers a request: serve it
//! here when this shard owns what it touches, else hand it to the owner through the router.

use super::config::BrokerConfig;
use super::control_plane::{ControlOp, ControlPlane, ControlReply, ControlSnapshot};
use super::error::{BrokerError, BrokerResult};
use super::placement::{owner_of, owner_of_offset};
use super::processor::{is_control, is_queue_request, is_send, is_stats};
use super::router::Router;
use super::work::{Origin, Reply, Work};
use crate::protocol::body::heartbeat::SubscriptionData;
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::TopicConfig;
use crate::protocol::codes::request as code;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::QueueRequestHeader;
use crate::protocol::header::SendMessageRequestHeader;
use crate::protocol::header::ViewMessageRequestHeader;
use crate::protocol::message::{MessageLimits, UniqKeyGenerator};
use crate::server::connection::Connection;
use crate::server::{ConnectionId, RequestError, RequestHandler, Response};
use ringmq_shards::{RealClock, RealDisk, Shard};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;

/// What a shard has served, for GET_BROKER_RUNTIME_INFO (summed over shards there).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub messages_put: u64,
    pub bytes_put: u64,
    pub messages_got: u64,
}

/// The storage engine as the broker runs it.
pub type Store = Shard<RealDisk, RealClock>;

/// One shard of the broker, owned by its executor.
pub struct BrokerShard {
    id: usize,
    config: Arc<BrokerConfig>,
    store: Store,
    limits: MessageLimits,
    store_host: SocketAddr,
    router: OnceCell<Rc<Router>>,
    snapshot: RefCell<Arc<ControlSnapshot>>,
    /// Shard 0 only: the control plane's single writer.
    control: Option<ControlPlane>,
    connections: RefCell<HashMap<ConnectionId, Weak<Connection>>>,
    uniq_keys: RefCell<UniqKeyGenerator>,
    queue_cursor: Cell<u32>,
    counters: Cell<Counters>,
    boot_timestamp_ms: i64,
    /// Set at a clean stop: sends are refused so nothing is acknowledged after the flush.
    stopping: Cell<bool>,
    /// The accept loops; dropping them closes the listening sockets.
    listeners: RefCell<Vec<glommio::Task<()>>>,
    /// The delay-level delivery tasks, cancelled when the stop begins (before the final flush
    /// and persist), so no delivery is stored after its progress was last persisted.
    deliveries: RefCell<Vec<glommio::Task<()>>>,
    /// This shard itself, for tasks that outlive the call that spawns them.
    me: Weak<BrokerShard>,
}

impl BrokerShard {
    pub fn new(
        id: usize,
        config: Arc<BrokerConfig>,
        store: Store,
        snapshot: Arc<ControlSnapshot>,
        control: Option<ControlPlane>,
    ) -> Rc<Self> {
        let store_host = config.advertised_addr();
        let limits = MessageLimits {
            body_bytes_max: config.message_bytes_max,
        };
        let uniq_keys = UniqKeyGenerator::new(store_host.ip(), std::process::id(), id as i32);
        Rc::new_cyclic(|me| Self {
            me: me.clone(),
            id,
            config,
            store,
            limits,
            store_host,
            router: OnceCell::new(),
            snapshot: RefCell::new(snapshot),
            control,
            connections: RefCell::new(HashMap::new()),
            uniq_keys: RefCell::new(uniq_keys),
            queue_cursor: Cell::new(id as u32),
            counters: Cell::new(Counters::default()),
            stopping: Cell::new(false),
            listeners: RefCell::new(Vec::new()),
            deliveries: RefCell::new(Vec::new()),
            boot_timestamp_ms: super::now_ms(),
        })
    }

    /// This shard as an `Rc`, for spawned tasks.
    pub fn rc(&self) -> Option<Rc<Self>> {
        self.me.upgrade()
    }

    /// Keeps an accept loop running until the stop.
    pub fn add_listener(&self, accept_loop: glommio::Task<()>) {
        self.listeners.borrow_mut().push(accept_loop);
    }

    /// Keeps a delay level's delivery task running until the stop.
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

    pub fn boot_timestamp_ms(&self) -> i64 {
        self.boot_timestamp_ms
    }

    pub fn set_router(&self, router: Rc<Router>) {
        let _ = self.router.set(router);
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

    pub fn shards(&self) -> usize {
        self.router.get().map_or(1, |r| r.shards())
    }

    pub fn control(&self) -> Option<&ControlPlane> {
        self.control.as_ref()
    }

    pub fn owner_of(&self, topic: &str, queue_id: i32) -> usize {
        owner_of(topic, queue_id, self.shards())
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

    /// A producer-chosen queue id was negative: spread such sends over the writable queues.
    pub fn pick_queue(&self, write_queue_nums: i32) -> i32 {
        let next = self.queue_cursor.get().wrapping_add(1);
        self.queue_cursor.set(next);
        (next % write_queue_nums.max(1) as u32) as i32
    }

    pub fn next_uniq_key(&self) -> String {
        self.uniq_keys
            .borrow_mut()
            .next(super::now_ms())
            .to_string()
    }

    /// Has shard 0 apply a control-plane change (directly when this is shard 0).
    pub async fn control_call(&self, op: ControlOp) -> BrokerResult<ControlReply> {
        if let Some(control) = &self.control {
            return control.apply(self, op).await;
        }
        match self.call_shard(0, Work::Control(op)).await? {
            Reply::Control(reply) => Ok(reply),
            _ => Err(BrokerError::Internal(
                "unexpected reply to a control request".into(),
            )),
        }
    }

    pub async fn create_topic_for_send(
        &self,
        header: &SendMessageRequestHeader,
    ) -> BrokerResult<Option<TopicConfig>> {
        let op = ControlOp::CreateTopicForSend {
            topic: header.topic.clone(),
            default_topic: header.default_topic.clone(),
            queue_nums: header.default_topic_queue_nums,
        };
        match self.control_call(op).await? {
            ControlReply::Topic(topic) => Ok(topic),
            _ => Err(BrokerError::Internal("unexpected control reply".into())),
        }
    }

    /// The group's config, created on first use when the broker allows it (as Java does on
    /// a pull from an unknown group).
    pub async fn subscription_group_for_pull(
        &self,
        group: &str,
    ) -> BrokerResult<SubscriptionGroupConfig> {
        if let Some(config) = self.snapshot.borrow().groups.get(group) {
            return Ok(config.clone());
        }
        match self
            .control_call(ControlOp::FindOrCreateGroup(group.to_owned()))
            .await?
        {
            ControlReply::Group(Some(config)) => Ok(config),
            ControlReply::Group(None) => Err(BrokerError::SubscriptionGroupNotExist(group.into())),
            _ => Err(BrokerError::Internal("unexpected control reply".into())),
        }
    }

    pub async fn call_shard(&self, to: usize, work: Work) -> BrokerResult<Reply> {
        let router = self
            .router
            .get()
            .ok_or_else(|| BrokerError::Internal("router not joined".into()))?;
        router.call(to, work).await
    }

    /// Has every other shard do `work`, one after the other, and returns when all have.
    pub async fn broadcast(&self, make: impl Fn() -> Work) -> BrokerResult<()> {
        for shard in (0..self.shards()).filter(|&s| s != self.id) {
            self.call_shard(shard, make()).await?;
        }
        Ok(())
    }

    /// Writes a oneway request to one of this shard's connections, if it is still open.
    pub fn notify_connection(&self, connection: ConnectionId, request: RemotingCommand) {
        let conn = self
            .connections
            .borrow()
            .get(&connection)
            .and_then(Weak::upgrade);
        if let Some(conn) = conn {
            if let Err(err) = conn.oneway(request) {
                tracing::debug!(%err, "could not notify a client");
            }
        }
    }

    /// Serves work another shard sent here.
    pub async fn serve_work(&self, work: Work) -> BrokerResult<Reply> {
        match work {
            Work::Client { origin, request } => {
                let response = match self.serve(origin, &request).await {
                    Ok(response) => response,
                    Err(err) => err.response_to(&request),
                };
                Ok(Reply::Command(response))
            }
            Work::Control(op) => match &self.control {
                Some(control) => control.apply(self, op).await.map(Reply::Control),
                None => Err(BrokerError::Internal(
                    "control request sent to a shard other than 0".into(),
                )),
            },
            Work::Snapshot(snapshot) => {
                self.install_snapshot(snapshot);
                Ok(Reply::Done)
            }
            Work::Store(message) => self.store_resent(message).await,
            Work::Notify {
                connection,
                request,
            } => {
                self.notify_connection(connection, request);
                Ok(Reply::Done)
            }
        }
    }

    /// Runs `request` on `shard` (here, or through the router).
    pub(crate) async fn at(
        &self,
        shard: usize,
        origin: Origin,
        request: RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        if shard == self.id {
            return self.serve(origin, &request).await;
        }
        match self
            .call_shard(shard, Work::Client { origin, request })
            .await?
        {
            Reply::Command(response) => Ok(response),
            _ => Err(BrokerError::Internal(
                "unexpected reply to a routed request".into(),
            )),
        }
    }

    /// Answers a client request on the connection's shard: routes it to where it is served.
    async fn dispatch(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        match request.code {
            c if is_send(c) => {
                let (owner, header) = self.route_send(request).await?;
                if owner == self.id {
                    return self.store_send(origin, request, &header).await;
                }
                let forwarded = Self::forwarded_send(request, &header);
                self.at(owner, origin, forwarded).await
            }
            c if is_queue_request(c) => {
                // Every one of these headers names the queue as `topic` + `queueId`.
                let queue: QueueRequestHeader = request.decode_header()?;
                let owner = self.owner_of(&queue.topic, queue.queue_id);
                self.at(owner, origin, request.clone()).await
            }
            code::VIEW_MESSAGE_BY_ID => {
                let header: ViewMessageRequestHeader = request.decode_header()?;
                let owner = owner_of_offset(header.offset, self.shards()).ok_or_else(|| {
                    BrokerError::Illegal(format!(
                        "can not find message by the offset, {}",
                        header.offset
                    ))
                })?;
                self.at(owner, origin, request.clone()).await
            }
            code::QUERY_MESSAGE => {
                let parts = self.on_every_shard(origin, request).await?;
                super::processor::query::merge_query_parts(request, parts)
            }
            c if is_stats(c) => {
                let parts = self.on_every_shard(origin, request).await?;
                super::processor::admin::merge_stats_parts(self, request, parts)
            }
            c if is_control(c) => self.at(0, origin, request.clone()).await,
            code::CONSUMER_SEND_MSG_BACK => self.send_back(origin, request).await,
            _ => self.serve(origin, request).await,
        }
    }

    /// Runs `request` on every shard (this one included), one after the other, and collects
    /// their answers.
    async fn on_every_shard(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<Vec<RemotingCommand>> {
        let mut parts = Vec::with_capacity(self.shards());
        for shard in 0..self.shards() {
            parts.push(self.at(shard, origin, request.clone()).await?);
        }
        Ok(parts)
    }

    /// Serves a request whose data this shard owns (or that any shard can answer).
    async fn serve(
        &self,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        match request.code {
            c if is_send(c) => self.serve_send(origin, request).await,
            code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => self.serve_pull(origin, request).await,
            c if is_queue_request(c) => self.serve_offsets(request).await,
            code::VIEW_MESSAGE_BY_ID => self.serve_view_message(request).await,
            code::QUERY_MESSAGE => self.serve_query_message_part(request).await,
            c if is_stats(c) => self.serve_stats_part(request).await,
            c if is_control(c) => match &self.control {
                Some(control) => control.serve_request(self, origin, request).await,
                None => Err(BrokerError::Internal(
                    "control request on a shard other than 0".into(),
                )),
            },
            _ => self.serve_admin_read(request),
        }
    }
}

impl RequestHandler for BrokerShard {
    async fn handle(
        self: Rc<Self>,
        connection: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        self.connections
            .borrow_mut()
            .entry(connection.id())
            .or_insert_with(|| Rc::downgrade(&connection));
        let origin = Origin {
            shard: self.id,
            connection: connection.id(),
            peer: connection.peer_addr(),
        };
        Ok(match self.dispatch(origin, &request).await {
            Ok(response) => response,
            Err(err) => {
                tracing::debug!(code = request.code, %err, "request failed");
                err.response_to(&request)
            }
        }
        .into())
    }

    fn connection_closed(&self, connection: ConnectionId) {
        self.connections.borrow_mut().remove(&connection);
        // Shard 0 drops the client's memberships and locks. Fire and forget: the connection is
        // gone, and a membership missed here expires after 120 s anyway.
        if let Some(this) = self.me.upgrade() {
            glommio::spawn_local(async move {
                if let Err(err) = this
                    .control_call(ControlOp::ConnectionClosed(connection))
                    .await
                {
                    tracing::debug!(%err, "could not report a closed connection");
                }
            })
            .detach();
        }
    }
}
