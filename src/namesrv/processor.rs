//! The NameServer's request handler (Java's `DefaultRequestProcessor` and
//! `ClientRequestProcessor`): decodes each request, applies it to the route table or KV
//! config, and builds the response. Only a KV config change awaits (its file write), after
//! its borrow of the config has ended, so no `RefCell` borrow ever spans an `.await`.

use super::kv_config::{KvConfig, KvFile, KvFileError};
use super::route_table::{BrokerAddrKey, BrokerRegistration, RouteTable, WritePerm};
use crate::protocol::body::{self, DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper};
use crate::protocol::codes::{request, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::{self, JsonStyle};
use crate::protocol::header::*;
use crate::server::connection::Connection;
use crate::server::{not_supported, ConnectionId, RequestError, RequestHandler, Response};
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::timer::Timer;
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Clients from RocketMQ 4.9.4 (`MQVersion` ordinal 401) on get route bodies in standard JSON;
/// older ones get fastjson's default output with unquoted broker ids (REMOTING.md §4.1).
pub const STANDARD_JSON_ROUTE_SINCE_VERSION: i32 = 401;

/// Brokers older than 3.0.11 (ordinal 37) send the bare topic config wrapper, not a
/// `RegisterBrokerBody`.
const REGISTER_BODY_SINCE_VERSION: i32 = 37;

/// Extension field carrying a broker's zone (`MixAll.ZONE_NAME`).
const ZONE_NAME_KEY: &str = "__ZONE_NAME";

/// KV namespace whose table is returned to registering brokers (`NAMESPACE_ORDER_TOPIC_CONFIG`).
const ORDER_TOPIC_CONFIG_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";

/// The NameServer state and its handler; lives on one executor.
pub struct NameServer {
    routes: RefCell<RouteTable>,
    /// Shared with the KV file's writer task.
    kv: Rc<RefCell<KvConfig>>,
    /// Where the KV config is persisted after each change; `None` keeps it in memory (tests).
    kv_file: Option<Rc<KvFile>>,
    started: Instant,
    broker_timeout_ms: u64,
    /// When the expiry scan next runs (on the `now_ms` clock). A registration whose deadline
    /// comes sooner wakes the scan through `rescan_*`, so expiry is on time without polling.
    scan_at_ms: Cell<u64>,
    rescan_tx: LocalSender<()>,
    rescan_rx: LocalReceiver<()>,
}

impl NameServer {
    /// A NameServer whose KV config lives in memory only.
    pub fn new(broker_timeout_ms: u64) -> Self {
        Self::with_kv(broker_timeout_ms, KvConfig::default(), None)
    }

    /// A NameServer that loads its KV config from `kv_path` and rewrites it on every change.
    pub fn with_kv_file(broker_timeout_ms: u64, kv_path: PathBuf) -> Result<Self, KvFileError> {
        let kv = KvConfig::load(&kv_path)?;
        Ok(Self::with_kv(broker_timeout_ms, kv, Some(kv_path)))
    }

    fn with_kv(broker_timeout_ms: u64, kv: KvConfig, kv_path: Option<PathBuf>) -> Self {
        let (rescan_tx, rescan_rx) = local_channel::new_bounded(1);
        Self {
            routes: RefCell::new(RouteTable::with_broker_timeout_ms(broker_timeout_ms)),
            kv: Rc::new(RefCell::new(kv)),
            kv_file: kv_path.map(|path| Rc::new(KvFile::new(path))),
            started: Instant::now(),
            broker_timeout_ms,
            scan_at_ms: Cell::new(u64::MAX),
            rescan_tx,
            rescan_rx,
        }
    }

    /// Sleeps until the expiry scan is due: after `wait`, or sooner if a registration brings
    /// an earlier deadline.
    pub async fn sleep_until_expiry_scan(&self, wait: Duration) {
        let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        self.scan_at_ms.set(self.now_ms().saturating_add(wait_ms));
        let timer = async {
            Timer::new(wait).await;
        };
        let rescan = async {
            self.rescan_rx.recv().await;
        };
        futures_lite::future::or(timer, rescan).await;
    }

    /// Milliseconds since start: the route table's clock.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn routes(&self) -> &RefCell<RouteTable> {
        &self.routes
    }

    /// Serves one request that arrived on connection `conn`; the heart of [`RequestHandler::handle`].
    pub async fn process(
        &self,
        conn: ConnectionId,
        req: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let ok = || RemotingCommand::response_to(req, response::SUCCESS, None);
        let response = match req.code {
            request::REGISTER_BROKER => self.register_broker(conn, req)?,
            request::UNREGISTER_BROKER => {
                let header: UnregisterBrokerRequestHeader = req.decode_header()?;
                let key = addr_key(&header.cluster_name, &header.broker_addr);
                self.routes
                    .borrow_mut()
                    .unregister(&key, &header.broker_name);
                tracing::info!(broker = %header.broker_name, addr = %header.broker_addr, "broker unregistered");
                ok()
            }
            request::QUERY_DATA_VERSION => self.query_data_version(req)?,
            request::BROKER_HEARTBEAT => {
                let header: BrokerHeartbeatRequestHeader = req.decode_header()?;
                self.routes.borrow_mut().refresh(
                    &addr_key(&header.cluster_name, &header.broker_addr),
                    self.now_ms(),
                );
                ok()
            }
            request::GET_ROUTEINFO_BY_TOPIC => self.route_info(req)?,
            request::GET_BROKER_CLUSTER_INFO => {
                ok().with_body(body::encode(&self.routes.borrow().cluster_info())?)
            }
            request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => {
                ok().with_body(body::encode(&self.routes.borrow().topics())?)
            }
            request::GET_TOPICS_BY_CLUSTER => {
                let header: GetTopicsByClusterRequestHeader = req.decode_header()?;
                ok().with_body(body::encode(
                    &self.routes.borrow().topics_of_cluster(&header.cluster),
                )?)
            }
            request::GET_SYSTEM_TOPIC_LIST_FROM_NS => {
                ok().with_body(body::encode(&self.routes.borrow().system_topics())?)
            }
            request::DELETE_TOPIC_IN_NAMESRV => {
                let header: DeleteTopicFromNamesrvRequestHeader = req.decode_header()?;
                let cluster = header.cluster_name.as_deref().filter(|c| !c.is_empty());
                self.routes
                    .borrow_mut()
                    .delete_topic(&header.topic, cluster);
                ok()
            }
            request::WIPE_WRITE_PERM_OF_BROKER => {
                let header: WipeWritePermOfBrokerRequestHeader = req.decode_header()?;
                let count = self
                    .routes
                    .borrow_mut()
                    .set_write_perm(&header.broker_name, WritePerm::Wipe);
                ok().with_header(&WipeWritePermOfBrokerResponseHeader {
                    wipe_topic_count: count as i32,
                })
            }
            request::ADD_WRITE_PERM_OF_BROKER => {
                let header: AddWritePermOfBrokerRequestHeader = req.decode_header()?;
                let count = self
                    .routes
                    .borrow_mut()
                    .set_write_perm(&header.broker_name, WritePerm::Add);
                ok().with_header(&AddWritePermOfBrokerResponseHeader {
                    add_topic_count: count as i32,
                })
            }
            request::PUT_KV_CONFIG => {
                let header: PutKvConfigRequestHeader = req.decode_header()?;
                self.kv
                    .borrow_mut()
                    .put(&header.namespace, &header.key, &header.value)
                    .map_err(|e| RequestError::Refused(e.to_string()))?;
                self.persist_kv().await?;
                ok()
            }
            request::GET_KV_CONFIG => {
                let header: KvConfigKeyRequestHeader = req.decode_header()?;
                match self.kv.borrow().get(&header.namespace, &header.key) {
                    Some(value) => ok().with_header(&GetKvConfigResponseHeader {
                        value: Some(value.to_owned()),
                    }),
                    None => {
                        let remark = format!(
                            "No config item, Namespace: {} Key: {}",
                            header.namespace, header.key
                        );
                        RemotingCommand::response_to(req, response::QUERY_NOT_FOUND, Some(remark))
                    }
                }
            }
            request::DELETE_KV_CONFIG => {
                let header: KvConfigKeyRequestHeader = req.decode_header()?;
                self.kv.borrow_mut().delete(&header.namespace, &header.key);
                self.persist_kv().await?;
                ok()
            }
            request::GET_KVLIST_BY_NAMESPACE => {
                let header: GetKvListByNamespaceRequestHeader = req.decode_header()?;
                match self.kv.borrow().namespace(&header.namespace) {
                    Some(table) => ok().with_body(body::encode(&table)?),
                    None => {
                        let remark = format!("No config item, Namespace: {}", header.namespace);
                        RemotingCommand::response_to(req, response::QUERY_NOT_FOUND, Some(remark))
                    }
                }
            }
            _ => not_supported(req),
        };
        Ok(response)
    }

    /// Writes the KV config after a change. On failure the change stays in memory (as in
    /// Apache's NameServer) and the request is answered SYSTEM_ERROR so the admin learns it.
    async fn persist_kv(&self) -> Result<(), RequestError> {
        let Some(file) = &self.kv_file else {
            return Ok(());
        };
        file.persist(&self.kv).await.map_err(|err| {
            RequestError::Refused(format!(
                "kv config changed in memory but not persisted: {err}"
            ))
        })
    }

    fn register_broker(
        &self,
        conn: ConnectionId,
        req: &RemotingCommand,
    ) -> Result<RemotingCommand, RequestError> {
        let header: RegisterBrokerRequestHeader = req.decode_header()?;
        if header.body_crc32 != 0 && body_crc32(&req.body) != header.body_crc32 {
            tracing::warn!(connection = conn.0, broker = %header.broker_name, "register body crc32 mismatch");
            return Ok(RemotingCommand::response_to(
                req,
                response::SYSTEM_ERROR,
                Some("crc32 not match".into()),
            ));
        }
        let topics = register_topics(req, header.compressed)?;
        let registration = BrokerRegistration {
            cluster_name: header.cluster_name,
            broker_addr: header.broker_addr,
            broker_name: header.broker_name,
            broker_id: header.broker_id,
            ha_server_addr: header.ha_server_addr,
            zone_name: req.ext(ZONE_NAME_KEY).map(str::to_owned),
            heartbeat_timeout_ms: header
                .heartbeat_timeout_millis
                .and_then(|ms| u64::try_from(ms).ok()),
            enable_acting_master: header.enable_acting_master,
            topics,
            connection: Some(conn),
        };
        let (name, addr) = (
            registration.broker_name.clone(),
            registration.broker_addr.clone(),
        );
        let timeout_ms = registration.heartbeat_timeout_ms;
        let now_ms = self.now_ms();
        let outcome = match self.routes.borrow_mut().register(registration, now_ms) {
            Ok(outcome) => outcome,
            Err(err) => {
                tracing::warn!(broker = %name, %addr, %err, "registration refused");
                return Ok(RemotingCommand::response_to(
                    req,
                    response::SYSTEM_ERROR,
                    Some(err.to_string()),
                ));
            }
        };
        tracing::debug!(broker = %name, %addr, "broker registered");
        let deadline_ms = now_ms.saturating_add(timeout_ms.unwrap_or(self.broker_timeout_ms));
        if deadline_ms < self.scan_at_ms.get() {
            // Full means a wake-up is already pending.
            let _ = self.rescan_tx.try_send(());
        }
        let mut resp = RemotingCommand::response_to(req, response::SUCCESS, None).with_header(
            &RegisterBrokerResponseHeader {
                ha_server_addr: outcome.ha_server_addr,
                master_addr: outcome.master_addr,
            },
        );
        if let Some(table) = self.kv.borrow().namespace(ORDER_TOPIC_CONFIG_NAMESPACE) {
            resp = resp.with_body(body::encode(&table)?);
        }
        Ok(resp)
    }

    fn query_data_version(&self, req: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let header: QueryDataVersionRequestHeader = req.decode_header()?;
        let version: DataVersion = body::decode(&req.body)?;
        let key = addr_key(&header.cluster_name, &header.broker_addr);
        let mut routes = self.routes.borrow_mut();
        let stored = routes.data_version(&key);
        routes.refresh(&key, self.now_ms());
        let mut resp = RemotingCommand::response_to(req, response::SUCCESS, None).with_header(
            &QueryDataVersionResponseHeader {
                changed: stored != Some(version),
            },
        );
        if let Some(stored) = stored {
            resp = resp.with_body(body::encode(&stored)?);
        }
        Ok(resp)
    }

    fn route_info(&self, req: &RemotingCommand) -> Result<RemotingCommand, RequestError> {
        let header: GetRouteInfoRequestHeader = req.decode_header()?;
        let Some(route) = self.routes.borrow().route(&header.topic) else {
            let remark = format!(
                "No topic route info in name server for the topic: {}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
                header.topic
            );
            return Ok(RemotingCommand::response_to(
                req,
                response::TOPIC_NOT_EXIST,
                Some(remark),
            ));
        };
        let standard = req.version >= STANDARD_JSON_ROUTE_SINCE_VERSION
            || header.accept_standard_json_only == Some(true);
        let style = if standard {
            JsonStyle::Standard
        } else {
            JsonStyle::Legacy
        };
        Ok(RemotingCommand::response_to(req, response::SUCCESS, None)
            .with_body(fastjson::to_vec(&route, style)?))
    }
}

impl RequestHandler for NameServer {
    async fn handle(
        self: Rc<Self>,
        conn: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        self.process(conn.id(), &request).await.map(Response::from)
    }

    fn connection_closed(&self, connection: ConnectionId) {
        for key in self.routes.borrow_mut().connection_closed(connection) {
            tracing::info!(cluster = %key.cluster_name, addr = %key.broker_addr, "broker connection closed, broker removed");
        }
    }
}

fn addr_key(cluster_name: &str, broker_addr: &str) -> BrokerAddrKey {
    BrokerAddrKey {
        cluster_name: cluster_name.to_owned(),
        broker_addr: broker_addr.to_owned(),
    }
}

/// The body checksum as Java's `UtilAll.crc32` computes it: CRC32 masked to a positive int.
pub fn body_crc32(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// The topic table of a REGISTER_BROKER body; an empty body registers no topics with a zero
/// DataVersion, as in Java.
fn register_topics(
    req: &RemotingCommand,
    compressed: bool,
) -> Result<TopicConfigSerializeWrapper, RequestError> {
    if req.body.is_empty() {
        return Ok(TopicConfigSerializeWrapper::default());
    }
    if compressed {
        let body = body::decode_compressed(&req.body, req.version)
            .map_err(|err| RequestError::Refused(format!("malformed body: {err}")))?;
        return Ok(body.topic_config_serialize_wrapper);
    }
    if req.version < REGISTER_BODY_SINCE_VERSION {
        return Ok(body::decode(&req.body)?);
    }
    let body: RegisterBrokerBody = body::decode(&req.body)?;
    Ok(body.topic_config_serialize_wrapper)
}

#[cfg(test)]
#[path = "processor_tests.rs"]
mod tests;
