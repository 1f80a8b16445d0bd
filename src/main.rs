//! The `ringmq` binary: one executable, one clap subcommand per role.
use clap::{Parser, Subcommand};
use glommio::{LocalExecutorBuilder, Placement};
use ringmq::admin::{self, AdminCommand};
use ringmq::broker::config::{BrokerArgs, BrokerConfig, StandaloneArgs};
use ringmq::broker::runtime;
use ringmq::namesrv::route_table::BROKER_EXPIRY_MS_DEFAULT;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "ringmq",
    version,
    about = "A thread-per-core broker speaking Apache RocketMQ's remoting protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a NameServer.
    Namesrv {
        /// Address to listen on; port 0 picks a free port (the bound address is printed).
        #[arg(long, default_value = "0.0.0.0:9876")]
        listen: SocketAddr,
        /// Seconds without a registration after which a broker is dropped.
        #[arg(long, default_value_t = BROKER_EXPIRY_MS_DEFAULT / 1000)]
        expire_secs: u64,
        /// Pin the NameServer's executor to this CPU (default: let the OS place it).
        #[arg(long)]
        cpu: Option<usize>,
        /// The KV config file (Apache's `kvConfigPath`; default ~/namesrv/kvConfig.json).
        #[arg(long)]
        kv_config: Option<PathBuf>,
    },
    /// Run a broker (its NameServers given by --namesrv or namesrvAddr).
    Broker(BrokerArgs),
    /// Run a NameServer and one broker in one process: the first-run default.
    Standalone(StandaloneArgs),
    /// mqadmin-like commands against a NameServer (ours or Apache RocketMQ's).
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match Cli::parse().command {
        Command::Namesrv {
            listen,
            expire_secs,
            cpu,
            kv_config,
        } => kv_config
            .or_else(default_kv_config_path)
            .ok_or_else(|| "namesrv: no --kv-config and no HOME to put kvConfig.json in".into())
            .and_then(|kv| run_namesrv(listen, Duration::from_secs(expire_secs), cpu, kv)),
        Command::Broker(args) => BrokerConfig::resolve_broker(&args)
            .map_err(|err| err.to_string())
            .and_then(run_broker),
        Command::Standalone(args) => run_standalone(&args),
        Command::Admin { command } => admin::run(&command)
            .map(|output| print!("{output}"))
            .map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ringmq: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the NameServer on one glommio executor: one thread, one core.
fn run_namesrv(
    listen: SocketAddr,
    broker_timeout: Duration,
    cpu: Option<usize>,
    kv_config: PathBuf,
) -> Result<(), String> {
    let placement = cpu.map_or(Placement::Unbound, Placement::Fixed);
    let executor = LocalExecutorBuilder::new(placement)
        .name("namesrv")
        .make()
        .map_err(|err| format!("namesrv: no executor: {err}"))?;
    let served = executor.run(ringmq::namesrv::run(
        listen,
        broker_timeout,
        kv_config,
        |bound| {
            // On stdout, so scripts and tests that asked for port 0 learn the port.
            println!("ringmq namesrv listening on {bound}");
            tracing::info!(%bound, ?broker_timeout, ?cpu, "NameServer started");
        },
    ));
    served.map_err(|err| format!("namesrv: {err}"))
}

fn run_broker(config: BrokerConfig) -> Result<(), String> {
    tracing::info!(shards = config.shards, data = %config.store_path_root_dir.display(), "broker starting");
    runtime::run(config, |bound| {
        // On stdout: scripts and tests wait for this line.
        println!("ringmq broker listening on {bound}");
    })
    .map_err(|err| format!("broker: {err}"))
}

/// NameServer (its own executor, not pinned: the shards own the cores) plus one broker
/// registered with it.
fn run_standalone(args: &StandaloneArgs) -> Result<(), String> {
    let (mut config, namesrv_listen) =
        BrokerConfig::resolve_standalone(args).map_err(|err| err.to_string())?;
    // Before any thread starts, so every thread inherits the mask and a SIGTERM reaches the
    // broker's clean stop, not a thread that would die of it.
    runtime::block_stop_signals();
    let kv_config = config
        .store_path_root_dir
        .join("namesrv")
        .join("kvConfig.json");
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    LocalExecutorBuilder::new(Placement::Unbound)
        .name("namesrv")
        .io_memory(NAMESRV_IO_MEMORY_BYTES)
        .spawn(move || async move {
            let served = ringmq::namesrv::run(
                namesrv_listen,
                Duration::from_millis(BROKER_EXPIRY_MS_DEFAULT),
                kv_config,
                |bound| {
                    let _ = bound_tx.send(bound);
                },
            )
            .await;
            if let Err(err) = served {
                tracing::error!(%err, "NameServer stopped");
            }
        })
        .map_err(|err| format!("namesrv: no executor: {err}"))?;
    let bound = bound_rx
        .recv_timeout(Duration::from_secs(30))
        .map_err(|_| "namesrv: did not start".to_owned())?;
    println!("ringmq namesrv listening on {bound}");
    let reachable = if bound.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), bound.port())
    } else {
        bound
    };
    // resolve_standalone put the NameServer's configured address first; it may have been
    // port 0 or 0.0.0.0, so the bound, reachable one replaces it.
    config.namesrv_addrs[0] = reachable.to_string();
    run_broker(config)
}

/// The embedded NameServer's io_uring buffer memory: it does no DMA I/O, and the shards
/// need the container's small memlock budget (kernel-config.md).
const NAMESRV_IO_MEMORY_BYTES: usize = 512 << 10;

fn default_kv_config_path() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(ringmq::namesrv::KV_CONFIG_PATH_IN_HOME))
}
