//! Starting and stopping a broker: the data directory and its fixed shard count, one glommio
//! executor pinned per core for each shard, the shard bus joining them, the listeners
//! (SO_REUSEPORT: every shard accepts on the same ports), the per-shard background tasks,
//! and the clean stop on SIGTERM/SIGINT (flush, persist offsets, unregister).

use super::config::BrokerConfig;
use super::control::plane::ControlPlane;
use super::control::snapshot::ControlSnapshot;
use super::control::subscription_groups::SubscriptionGroupTable;
use super::control::topics::TopicTable;
use super::registration::NamesrvLinks;
use super::shard::{Shard, Store};
use super::transaction::check_service;
use super::work::Work;
use super::{control_pump, inbox};
use crate::server;
use glommio::net::TcpListener;
use glommio::{LocalExecutorBuilder, Placement};
use ringmq_bus::{Bell, Endpoint};
use ringmq_shards::real_io::Durability;
use ringmq_shards::{FlushMode, RealClock, RealDisk, Scheduled, ShardConfig};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Memory each shard registers with io_uring for its DMA buffers. What one shard can have in
/// flight at once: a group-commit write (`group_commit_bytes_max`, 1 MiB, plus a block), the
/// zeroing ahead of it (up to `zero_ahead_bytes`, 1 MiB, only beside a write under half of
/// it), a cold read (a 256 KiB span), and a persist's write (an index seal's 256 KiB chunk,
/// a consume-queue append, the checkpoint): under 3 MiB. Past the arena glommio silently
/// takes plain memory and the kernel copies every byte (`tests/broker_fixed_io.rs` fails
/// then; at 2 MiB it saw such writes). The default container memlock limit is 8 MiB (see
/// kernel-config.md; root is not limited): two shards and the embedded NameServer fit.
pub const SHARD_IO_MEMORY_BYTES: usize = 3 << 20;
/// How long consume queues, the index and consumer offsets may lag the log on disk
/// (RocketMQ flushes consume queues every second and persists offsets every 5 s).
pub const PERSIST_INTERVAL: Duration = Duration::from_secs(1);
/// How long the shards may take to open their stores and start listening.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// Ports below the VIP offset have no VIP port.
const VIP_PORT_OFFSET: u16 = 2;
const META_FILE: &str = "broker.meta";

/// Why a broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("data directory {dir}: {reason}")]
    DataDir { dir: PathBuf, reason: String },
    #[error("shard {shard}: {reason}")]
    Shard { shard: usize, reason: String },
    #[error("{0}")]
    Other(String),
}

/// Runs a broker until SIGTERM or SIGINT. `on_ready` runs once every shard listens.
pub fn run(mut config: BrokerConfig, on_ready: impl FnOnce(SocketAddr)) -> Result<(), StartError> {
    config.listen = server::claim_port(config.listen)
        .map_err(|e| StartError::Other(format!("cannot listen on {}: {e}", config.listen)))?;
    // The VIP port (listen port - 2) is a courtesy to clients with vipChannelEnabled: when
    // another process holds it, the broker runs without it.
    let vip = vip_addr(config.listen).and_then(|vip| match server::claim_port(vip) {
        Ok(vip) => Some(vip),
        Err(err) => {
            tracing::warn!(%vip, %err, "VIP port not served");
            None
        }
    });
    let shards = config.shards;
    check_shard_count(&config.store_path_root_dir, shards)?;
    tracing::info!(
        file_reserved_hours = config.retention.file_reserved_hours,
        delete_when = %config.retention.delete_when,
        "retention: each expired segment is removed when it expires, not at deleteWhen"
    );
    let config_dir = config.store_path_root_dir.join("config");
    let topics = TopicTable::open(&config_dir, &config).map_err(|e| data_err(&config_dir, e))?;
    let groups =
        SubscriptionGroupTable::open(&config_dir, &config).map_err(|e| data_err(&config_dir, e))?;
    let snapshot = Arc::new(ControlSnapshot::of(1, &topics, &groups, Default::default()));
    let config = Arc::new(config);

    let signals = block_stop_signals();
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut stops = Vec::new();
    let mut handles = Vec::new();
    let mut plane = Some(ControlPlane::new(topics, groups));
    let endpoints = ringmq_bus::mesh::<Work>(shards);
    for ((id, cpu), endpoint) in shard_cpus(shards).into_iter().enumerate().zip(endpoints) {
        let (stop, stop_heard) = ringmq_bus::doorbell();
        stops.push(stop);
        let plane = if id == 0 { plane.take() } else { None };
        let (config, snapshot, ready) = (config.clone(), snapshot.clone(), ready_tx.clone());
        let handle = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("shard-{id}"))
            .io_memory(SHARD_IO_MEMORY_BYTES)
            .spawn(move || async move {
                let joined = Joined {
                    id,
                    endpoint,
                    plane,
                };
                match start_shard(joined, config, snapshot, vip).await {
                    Ok((shard, bound)) => {
                        let _ = ready.send(Ok(bound));
                        stop_heard.wait().await;
                        stop_shard(&shard).await;
                    }
                    Err(err) => {
                        let _ = ready.send(Err(err));
                    }
                }
            })
            .map_err(|e| StartError::Shard {
                shard: id,
                reason: e.to_string(),
            })?;
        handles.push(handle);
    }
    drop(ready_tx);
    let mut bound = None;
    for _ in 0..shards {
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(addr)) => bound = Some(addr),
            Ok(Err(err)) => return Err(err),
            Err(_) => return Err(StartError::Other("shards did not start in time".into())),
        }
    }
    on_ready(bound.expect("at least one shard"));
    stop_on_signal(stops, &signals);
    for handle in handles {
        let _ = handle.join();
    }
    Ok(())
}

fn data_err(dir: &Path, err: impl std::fmt::Display) -> StartError {
    StartError::DataDir {
        dir: dir.to_owned(),
        reason: err.to_string(),
    }
}

/// The shard count is fixed when the data directory is created: queues live on the shard
/// `placement::owner_of` names, so reopening with another count would lose them.
fn check_shard_count(dir: &Path, shards: usize) -> Result<(), StartError> {
    std::fs::create_dir_all(dir).map_err(|e| data_err(dir, e))?;
    let path = dir.join(META_FILE);
    let expected = format!("shards={shards}\n");
    match std::fs::read_to_string(&path) {
        Ok(found) if found == expected => Ok(()),
        Ok(found) => Err(data_err(
            dir,
            format!(
                "it was created with {}; start with that --shards",
                found.trim()
            ),
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // Through the one crash-safe replace, on a short-lived executor of this thread:
            // no shard runs yet.
            let disk = RealDisk::default();
            let write = ringmq_shards::replace_file(&disk, &path, expected.as_bytes());
            crate::client::block_on(write)
                .and_then(|written| written)
                .map_err(|e| data_err(dir, e))
        }
        Err(err) => Err(data_err(dir, err)),
    }
}

/// One CPU per shard from the CPUs this process may run on, in order (wrapping when there
/// are more shards than CPUs).
fn shard_cpus(shards: usize) -> Vec<usize> {
    let allowed = allowed_cpus();
    (0..shards).map(|i| allowed[i % allowed.len()]).collect()
}

fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| ok && unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

/// What a shard starts from besides the configuration: its id, its end of the bus and, on
/// shard 0, the control plane.
struct Joined {
    id: usize,
    endpoint: Endpoint<Work>,
    plane: Option<ControlPlane>,
}

async fn start_shard(
    joined: Joined,
    config: Arc<BrokerConfig>,
    snapshot: Arc<ControlSnapshot>,
    vip: Option<SocketAddr>,
) -> Result<(Rc<Shard>, SocketAddr), StartError> {
    let id = joined.id;
    let fail = |reason: String| StartError::Shard { shard: id, reason };
    let store = open_store(id, &config)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let shard = Rc::new(Shard::new(id, config.clone(), store, snapshot));
    let control = joined
        .plane
        .map(|plane| control_pump::start(shard.clone(), plane));
    let serving = shard.clone();
    let bus = joined
        .endpoint
        .start(move |_from, work| inbox::serve(serving.clone(), work, control.clone()));
    shard.set_bus(bus);
    recover_transactions(&shard);

    spawn_background(&shard);
    let bound = listen(&shard, config.listen).map_err(fail)?;
    if let Some(vip) = vip {
        listen(&shard, vip).map_err(fail)?;
    }
    Ok((shard, bound))
}

async fn open_store(id: usize, config: &BrokerConfig) -> ringmq_shards::error::Result<Store> {
    let dir = config.store_path_root_dir.join(format!("shard-{id}"));
    std::fs::create_dir_all(&dir)?;
    let dir = std::fs::canonicalize(&dir)?;
    let mut shard_config = ShardConfig::new(dir, id as u16, config.advertised_addr());
    shard_config.log.flush_mode = config.flush_mode;
    shard_config.log.segment_bytes = config.commit_log_segment_bytes;
    shard_config.delay_levels = config.message_delay_level.clone();
    shard_config.retention = config.retention.store_config();
    shard_config.timers = config.timers.clone();
    // SYNC_FLUSH acknowledges after the write is durable: O_DSYNC writes measured fastest
    // for that (docs/STORAGE.md); ASYNC_FLUSH keeps write + fdatasync behind the acks.
    let durability = match config.flush_mode {
        FlushMode::SyncFlush => Durability::WriteThrough,
        FlushMode::AsyncFlush => Durability::Fdatasync,
    };
    Store::open(shard_config, RealDisk { durability }, RealClock).await
}

/// Rebuilds the shard's book of undecided transactions from its half and op queues (which
/// the store recovered from the log) before any request is served.
fn recover_transactions(shard: &Shard) {
    let folded = shard.follow_transactions();
    let undecided = shard.with_transactions(|book| book.len());
    if folded > 0 {
        tracing::info!(
            shard = shard.id(),
            folded,
            undecided,
            "transactions recovered from the half and op queues"
        );
    }
}

fn spawn_background(shard: &Rc<Shard>) {
    let s = shard.clone();
    glommio::spawn_local(async move { s.store().run_flusher().await }).detach();
    let s = shard.clone();
    glommio::spawn_local(async move { s.store().run_persister(PERSIST_INTERVAL).await }).detach();
    // Removes expired segments as they expire, at most one per deleteCommitLogFilesInterval
    // (docs/STORAGE.md "Retention").
    let s = shard.clone();
    glommio::spawn_local(async move { s.store().run_retention().await }).detach();
    // Each shard checks back the undecided transactions it holds.
    shard.add_delivery(glommio::spawn_local(check_service::run(shard.clone())));
    // Each shard delivers the scheduled messages it stores, one task per delay level and
    // timer stage.
    let levels = (1..=shard.store().config().delay_levels.count()).map(Scheduled::Level);
    let stages = (0..shard.store().timer_stages()).map(Scheduled::TimerStage);
    for scheduled in levels.chain(stages) {
        let s = shard.clone();
        shard.add_delivery(glommio::spawn_local(async move {
            s.store().run_scheduled(scheduled).await
        }));
    }
}

fn listen(shard: &Rc<Shard>, addr: SocketAddr) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    shard.add_listener(glommio::spawn_local(server::serve(listener, shard.clone())));
    Ok(bound)
}

fn vip_addr(bound: SocketAddr) -> Option<SocketAddr> {
    let port = bound
        .port()
        .checked_sub(VIP_PORT_OFFSET)
        .filter(|&p| p > 0)?;
    Some(SocketAddr::new(bound.ip(), port))
}

/// A clean stop: new sends are refused, the log is flushed, queues and offsets persisted,
/// and shard 0 unregisters from the NameServers.
async fn stop_shard(shard: &Shard) {
    shard.begin_stop();
    if let Err(err) = shard.store().flush().await {
        tracing::error!(shard = shard.id(), %err, "flush at stop failed");
    }
    if let Err(err) = shard.store().persist().await {
        tracing::error!(shard = shard.id(), %err, "persist at stop failed");
    }
    if shard.id() == 0 {
        NamesrvLinks::default().unregister_all(shard.config()).await;
    }
}

/// Waits for SIGTERM/SIGINT, then rings every shard's stop bell (a wake-up that cannot be
/// lost, from this plain thread).
fn stop_on_signal(stops: Vec<Bell>, signals: &libc::sigset_t) {
    let signal = wait_for_signal(signals);
    tracing::info!(
        signal,
        "stopping: flushing, persisting offsets, unregistering"
    );
    for stop in &stops {
        stop.ring();
    }
}

/// Blocks SIGTERM and SIGINT in this thread (and the threads it starts after), so they
/// are taken by `wait_for_signal` instead of killing the process mid-write.
pub fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: plain libc signal-set calls on a zeroed, owned set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn wait_for_signal(set: &libc::sigset_t) -> i32 {
    let mut signal = 0;
    // SAFETY: `set` is a valid signal set; sigwait writes the signal number.
    unsafe {
        libc::sigwait(set, &mut signal);
    }
    signal
}
