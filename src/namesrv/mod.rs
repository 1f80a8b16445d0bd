//! The NameServer: brokers register here, clients ask it where topics live. Runs on one glommio
//! executor; all state is owned by it.
//!
//! Behaviour follows Apache RocketMQ's `RouteInfoManager` and request processors; route bodies
//! are byte-identical to Apache 5.3.3's for both client generations
//! (tests/admin_apache_namesrv.rs).
//! Deliberate differences, where Apache's choice buys nothing or needs what we lack:
//! - GET_BROKER_CLUSTER_INFO and the topic lists are standard JSON (Apache writes broker ids
//!   unquoted); every fastjson and Go reader takes both, and strict JSON readers only this.
//! - Standard-style route bodies keep non-ASCII raw UTF-8 instead of `\uXXXX`; topic and broker
//!   names are ASCII in practice, and both forms are valid JSON.
//! - Filter servers (a removed RocketMQ feature) are not tracked: `filterServerTable` is `{}`.
//! - A broker dropped by expiry keeps its TCP connection open (Apache closes it).
//! - No slave-acting-master route rewriting (Apache's `supportActingMaster`, default off), no
//!   REGISTER_TOPIC_IN_NAMESRV, unit-topic lists or UPDATE/GET_NAMESRV_CONFIG: they answer
//!   REQUEST_CODE_NOT_SUPPORTED.

pub mod kv_config;
pub mod processor;
pub mod route_table;

use crate::server;
use glommio::net::TcpListener;
use processor::NameServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

/// How long, at the longest, the expiry scan sleeps (Java scans every 5 s). It runs sooner at
/// the earliest broker deadline, and a registration with a sooner deadline wakes it.
pub const EXPIRY_SCAN_PERIOD_MAX: Duration = Duration::from_secs(5);

/// Where Apache's NameServer keeps its KV config (`NamesrvConfig.kvConfigPath`), relative to
/// the user's home directory.
pub const KV_CONFIG_PATH_IN_HOME: &str = "namesrv/kvConfig.json";

/// Binds `listen` and serves until the process ends, keeping the KV config in `kv_path`.
/// `on_bound` learns the actual address (useful with port 0).
pub async fn run(
    listen: SocketAddr,
    broker_timeout: Duration,
    kv_path: PathBuf,
    on_bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let nameserver = NameServer::with_kv_file(timeout_ms(broker_timeout), kv_path)
        .map_err(std::io::Error::other)?;
    let nameserver = Rc::new(nameserver);
    let listen = server::claim_port(listen)?;
    let listener =
        TcpListener::bind(listen).map_err(|err| std::io::Error::other(err.to_string()))?;
    let bound = listener
        .local_addr()
        .map_err(|err| std::io::Error::other(err.to_string()))?;
    on_bound(bound);
    glommio::spawn_local(expire_brokers(nameserver.clone())).detach();
    server::serve(listener, nameserver).await;
    Ok(())
}

fn timeout_ms(timeout: Duration) -> u64 {
    u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)
}

/// Drops brokers that stopped registering, waking at the earliest deadline.
async fn expire_brokers(nameserver: Rc<NameServer>) {
    loop {
        let now_ms = nameserver.now_ms();
        let next = nameserver.routes().borrow().next_deadline_ms();
        // Expiry is strictly after the deadline, hence the extra millisecond.
        let wait = next.map_or(EXPIRY_SCAN_PERIOD_MAX, |deadline| {
            Duration::from_millis(deadline.saturating_sub(now_ms) + 1)
        });
        nameserver
            .sleep_until_expiry_scan(wait.min(EXPIRY_SCAN_PERIOD_MAX))
            .await;
        let expired = nameserver.routes().borrow_mut().expire(nameserver.now_ms());
        for key in expired {
            tracing::info!(cluster = %key.cluster_name, addr = %key.broker_addr, "broker expired, removed");
        }
    }
}
