//! The broker's configuration: flags and RocketMQ's broker.conf keys.
//!
//! A setting comes from the flag if given, else from the file (`-c`, Java properties format,
//! Apache's key names, so an Apache broker.conf works unchanged), else from Apache's default.
//! Keys ringmq does not use (`brokerRole`, ...) are kept in
//! [`BrokerConfig::unknown_keys`] and logged once; a value that does not parse is a
//! [`ConfigError`] naming the key and the file.

use crate::broker::names::{has_illegal_chars, QUEUE_NUMS_MAX};
use crate::broker::transaction::{
    TransactionConfig, TRANSACTION_CHECK_INTERVAL_MIN, TRANSACTION_DURATION_MAX,
};
use crate::protocol::body::{PERM_INHERIT, PERM_READ, PERM_WRITE};
use ringmq_shards::config::FlushMode;
use ringmq_shards::offset::SHARD_ID_MAX;
use ringmq_shards::record::BODY_BYTES_MAX;
use ringmq_shards::timer::{TimerConfig, TIMER_MAX_DELAY_SEC_MAX};
use ringmq_shards::DelayLevels;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod properties;
mod retention;

pub use retention::RetentionKeys;

/// Apache's broker port (`listenPort` 10911).
pub const LISTEN_DEFAULT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 10911);
/// Apache's NameServer port, where a standalone's own NameServer listens.
pub const NAMESRV_LISTEN_DEFAULT: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 9876);
/// A standalone keeps its data beside where it was started, for a first run.
pub const STANDALONE_DATA_DEFAULT: &str = "./data";
/// Apache's `storePathRootDir` default, under the home directory.
pub const BROKER_DATA_IN_HOME: &str = "store";
/// ringmq's `brokerName` default (Apache uses the host name, which differs per machine and
/// so breaks a master/slave pair configured without it).
pub const BROKER_NAME_DEFAULT: &str = "broker-a";
pub const BROKER_CLUSTER_NAME_DEFAULT: &str = "DefaultCluster";
/// Apache's `defaultTopicQueueNums`: queues of a topic auto-created from TBW102.
pub const DEFAULT_TOPIC_QUEUE_NUMS_DEFAULT: i32 = 8;
/// Apache's `mappedFileSizeCommitLog` (1 GiB).
pub const COMMIT_LOG_SEGMENT_BYTES_DEFAULT: u64 = 1 << 30;
/// Apache's `maxMessageSize` (4 MiB), also the most our stored-record codec accepts.
pub const MESSAGE_BYTES_MAX_DEFAULT: usize = 4 << 20;
/// Apache's `registerNameServerPeriod` (30 s).
pub const REGISTER_PERIOD_DEFAULT: Duration = Duration::from_secs(30);
/// A broker.conf is a few dozen lines; the bound keeps a wrong `-c` (a log file, a device)
/// from being read into memory whole.
pub const CONFIG_FILE_BYTES_MAX: u64 = 1 << 20;
/// Shards per broker: shard ids live in the high bits of physical offsets.
pub const SHARDS_MAX: usize = SHARD_ID_MAX as usize + 1;
/// Interfaces looked at when guessing the host's address; hosts have a handful.
const INTERFACES_MAX: usize = 1024;

/// Why the configuration could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path} is larger than {CONFIG_FILE_BYTES_MAX} bytes")]
    TooLarge { path: String },
    #[error("config file {path}, line {line}: {reason}")]
    Syntax {
        path: String,
        line: usize,
        reason: &'static str,
    },
    #[error("{origin}: {key}={value:?}: {reason}")]
    BadValue {
        /// The file the value came from, or `flags`.
        origin: String,
        key: &'static str,
        value: String,
        reason: String,
    },
}

/// `ringmq broker` flags. Every one is optional so that an unset flag lets the file speak.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BrokerArgs {
    /// Address to serve clients on [default: 0.0.0.0:10911, or the file's listenPort].
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<SocketAddr>,
    /// NameServers to register with, `;`-separated (broker.conf `namesrvAddr`).
    #[arg(long, value_name = "ADDR;ADDR")]
    pub namesrv: Option<String>,
    /// Shards, one executor pinned per core [default: available cores]; fixed when the data
    /// directory is created.
    #[arg(long)]
    pub shards: Option<usize>,
    /// Data directory (broker.conf `storePathRootDir`) [default: ~/store].
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// When a send is acknowledged [default: ASYNC_FLUSH].
    #[arg(long, value_name = "SYNC_FLUSH|ASYNC_FLUSH", value_parser = parse_flush_disk_type)]
    pub flush_disk_type: Option<FlushMode>,
    /// Address advertised to NameServers and clients (broker.conf `brokerIP1`).
    #[arg(long, value_name = "IP")]
    pub broker_ip: Option<IpAddr>,
    /// Cluster name (broker.conf `brokerClusterName`) [default: DefaultCluster].
    #[arg(long)]
    pub cluster: Option<String>,
    /// Broker name (broker.conf `brokerName`) [default: broker-a].
    #[arg(long)]
    pub broker_name: Option<String>,
    /// A broker.conf in Apache's format.
    #[arg(short = 'c', long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// `ringmq standalone` flags: a broker's, plus where its own NameServer listens.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StandaloneArgs {
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Address of the embedded NameServer [default: 0.0.0.0:9876].
    #[arg(long, value_name = "HOST:PORT")]
    pub namesrv_listen: Option<SocketAddr>,
}

/// The resolved configuration, named after Apache's keys (units last).
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfig {
    /// `brokerClusterName`.
    pub broker_cluster_name: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerId`: 0 is the master.
    pub broker_id: i64,
    /// Where clients connect; its port is `listenPort`.
    pub listen: SocketAddr,
    /// `namesrvAddr`, split at `;`.
    pub namesrv_addrs: Vec<String>,
    /// `storePathRootDir`.
    pub store_path_root_dir: PathBuf,
    /// `flushDiskType`.
    pub flush_mode: FlushMode,
    /// `autoCreateTopicEnable`: topics are created from TBW102 on first send.
    pub auto_create_topic_enable: bool,
    /// `defaultTopicQueueNums`.
    pub default_topic_queue_nums: i32,
    /// `autoCreateSubscriptionGroup`.
    pub auto_create_subscription_group: bool,
    /// `enablePropertyFilter`: SQL92 subscriptions are served (else refused, as Apache
    /// refuses them, with SYSTEM_ERROR). Off by default, as in Apache.
    pub enable_property_filter: bool,
    /// `brokerIP1`: the address registered with NameServers.
    pub broker_ip1: IpAddr,
    /// `mappedFileSizeCommitLog` (4.x: `mapedFileSizeCommitLog`).
    pub commit_log_segment_bytes: u64,
    /// `maxMessageSize`: the largest message body accepted.
    pub message_bytes_max: usize,
    /// `registerNameServerPeriod`.
    pub register_period: Duration,
    /// `brokerPermission`: PermName bits the broker grants all its topics.
    pub broker_permission: i32,
    /// `messageDelayLevel`: the delay of each level of scheduled messages.
    pub message_delay_level: DelayLevels,
    /// Retention: `fileReservedTime`, `deleteWhen`, the disk ratios and intervals.
    pub retention: RetentionKeys,
    /// `timerWheelEnable`, `timerPrecisionMs`, `timerMaxDelaySec`: 5.x timer messages.
    pub timers: TimerConfig,
    /// `transactionTimeOut`, `transactionCheckInterval`, `transactionCheckMax`,
    /// `rejectTransactionMessage`.
    pub transaction: TransactionConfig,
    /// `storeReplyMessageEnable`: a request-reply's reply is also stored in its reply topic.
    pub store_reply_message_enable: bool,
    /// Shards (ringmq's own key `shards`).
    pub shards: usize,
    /// Keys of the file that ringmq does not use, with their values.
    pub unknown_keys: BTreeMap<String, String>,
}

impl BrokerConfig {
    /// `ringmq broker`: file, then flags.
    pub fn resolve_broker(args: &BrokerArgs) -> Result<Self, ConfigError> {
        let data_default = std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(BROKER_DATA_IN_HOME))
            .unwrap_or_else(|| PathBuf::from(BROKER_DATA_IN_HOME));
        Self::resolve(args, data_default)
    }

    /// `ringmq standalone`: as a broker, data in ./data by default, registered with its own
    /// NameServer (first) and any others it is given. Returns the NameServer's listen address.
    /// With port 0 there, the caller puts the bound port into `namesrv_addrs[0]`.
    pub fn resolve_standalone(args: &StandaloneArgs) -> Result<(Self, SocketAddr), ConfigError> {
        let namesrv_listen = args.namesrv_listen.unwrap_or(NAMESRV_LISTEN_DEFAULT);
        let mut config = Self::resolve(&args.broker, PathBuf::from(STANDALONE_DATA_DEFAULT))?;
        let own_ip = match namesrv_listen.ip() {
            ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            ip => ip,
        };
        let own = SocketAddr::new(own_ip, namesrv_listen.port()).to_string();
        config.namesrv_addrs.retain(|addr| *addr != own);
        config.namesrv_addrs.insert(0, own);
        Ok((config, namesrv_listen))
    }

    /// Where clients and NameServers are told to reach this broker: brokerIP1:listenPort.
    pub fn advertised_addr(&self) -> SocketAddr {
        SocketAddr::new(self.broker_ip1, self.listen.port())
    }

    fn resolve(args: &BrokerArgs, data_default: PathBuf) -> Result<Self, ConfigError> {
        let mut config = Self::defaults(data_default);
        let mut broker_ip1 = None;
        if let Some(path) = &args.config {
            let file = read_properties(path)?;
            let origin = path.display().to_string();
            for (key, value) in file {
                config.apply_key(&origin, key, value, &mut broker_ip1)?;
            }
            if !config.unknown_keys.is_empty() {
                tracing::info!(
                    file = %origin,
                    keys = ?config.unknown_keys.keys().collect::<Vec<_>>(),
                    "broker.conf keys ringmq does not use are ignored"
                );
            }
        }
        config.apply_flags(args, &mut broker_ip1)?;
        config.broker_ip1 = broker_ip1.unwrap_or_else(|| match config.listen.ip() {
            ip if ip.is_unspecified() => {
                first_non_loopback_ipv4().map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V4)
            }
            ip => ip,
        });
        Ok(config)
    }

    fn defaults(store_path_root_dir: PathBuf) -> Self {
        Self {
            broker_cluster_name: BROKER_CLUSTER_NAME_DEFAULT.to_owned(),
            broker_name: BROKER_NAME_DEFAULT.to_owned(),
            broker_id: 0,
            listen: LISTEN_DEFAULT,
            namesrv_addrs: Vec::new(),
            store_path_root_dir,
            flush_mode: FlushMode::AsyncFlush,
            auto_create_topic_enable: true,
            default_topic_queue_nums: DEFAULT_TOPIC_QUEUE_NUMS_DEFAULT,
            auto_create_subscription_group: true,
            enable_property_filter: false,
            broker_ip1: IpAddr::V4(Ipv4Addr::LOCALHOST),
            commit_log_segment_bytes: COMMIT_LOG_SEGMENT_BYTES_DEFAULT,
            message_bytes_max: MESSAGE_BYTES_MAX_DEFAULT,
            register_period: REGISTER_PERIOD_DEFAULT,
            broker_permission: PERM_READ | PERM_WRITE,
            message_delay_level: DelayLevels::default(),
            retention: RetentionKeys::default(),
            timers: TimerConfig::default(),
            transaction: TransactionConfig::default(),
            store_reply_message_enable: true,
            shards: std::thread::available_parallelism().map_or(1, |n| n.get()),
            unknown_keys: BTreeMap::new(),
        }
    }

    /// Sets the field behind one broker.conf key. brokerIP1 is held aside because its
    /// default depends on the listen address, which a flag may still change.
    fn apply_key(
        &mut self,
        origin: &str,
        key: String,
        value: String,
        broker_ip1: &mut Option<IpAddr>,
    ) -> Result<(), ConfigError> {
        let at = Origin {
            origin,
            value: &value,
        };
        if let Some(applied) = self.retention.apply(&key, &at) {
            return applied;
        }
        match key.as_str() {
            "brokerClusterName" => self.broker_cluster_name = at.name("brokerClusterName")?,
            "brokerName" => self.broker_name = at.name("brokerName")?,
            "brokerId" => self.broker_id = at.number("brokerId", 0..=i64::MAX)?,
            "listenPort" => self.listen.set_port(at.number("listenPort", 0..=u16::MAX)?),
            "namesrvAddr" => self.namesrv_addrs = at.namesrv_addrs("namesrvAddr")?,
            "storePathRootDir" if value.is_empty() => {
                return Err(at.bad("storePathRootDir", "must not be empty"))
            }
            "storePathRootDir" => self.store_path_root_dir = PathBuf::from(&value),
            "flushDiskType" => {
                self.flush_mode =
                    parse_flush_disk_type(&value).map_err(|r| at.bad("flushDiskType", r))?
            }
            "autoCreateTopicEnable" => {
                self.auto_create_topic_enable = at.boolean("autoCreateTopicEnable")?
            }
            "defaultTopicQueueNums" => {
                self.default_topic_queue_nums =
                    at.number("defaultTopicQueueNums", 1..=QUEUE_NUMS_MAX)?
            }
            "autoCreateSubscriptionGroup" => {
                self.auto_create_subscription_group = at.boolean("autoCreateSubscriptionGroup")?
            }
            "brokerIP1" => *broker_ip1 = Some(value.parse().map_err(|e| at.bad("brokerIP1", e))?),
            "enablePropertyFilter" => {
                self.enable_property_filter = at.boolean("enablePropertyFilter")?
            }
            "mappedFileSizeCommitLog" | "mapedFileSizeCommitLog" => {
                self.commit_log_segment_bytes =
                    at.number("mappedFileSizeCommitLog", 1..=i32::MAX as u64)?
            }
            "maxMessageSize" => {
                self.message_bytes_max = at.number("maxMessageSize", 1..=BODY_BYTES_MAX)?
            }
            "registerNameServerPeriod" => {
                let ms = at.number("registerNameServerPeriod", 1..=u32::MAX as u64)?;
                self.register_period = Duration::from_millis(ms);
            }
            "brokerPermission" => {
                self.broker_permission = at.number(
                    "brokerPermission",
                    0..=PERM_READ | PERM_WRITE | PERM_INHERIT,
                )?
            }
            "messageDelayLevel" => {
                self.message_delay_level =
                    DelayLevels::parse(&value).map_err(|e| at.bad("messageDelayLevel", e))?
            }
            "timerWheelEnable" => self.timers.enabled = at.boolean("timerWheelEnable")?,
            "timerPrecisionMs" => {
                let asked = at.number("timerPrecisionMs", 1..=u32::MAX as u64)?;
                self.timers.set_precision_ms(asked);
            }
            "timerMaxDelaySec" => {
                self.timers.max_delay_sec =
                    at.number("timerMaxDelaySec", 1..=TIMER_MAX_DELAY_SEC_MAX)?
            }
            "transactionTimeOut" => {
                self.transaction.timeout = at.millis("transactionTimeOut", Duration::ZERO)?
            }
            "transactionCheckInterval" => {
                self.transaction.check_interval =
                    at.millis("transactionCheckInterval", TRANSACTION_CHECK_INTERVAL_MIN)?
            }
            "transactionCheckMax" => {
                self.transaction.check_max = at.number("transactionCheckMax", 0..=i32::MAX)?
            }
            "rejectTransactionMessage" => {
                self.transaction.reject_transaction_message =
                    at.boolean("rejectTransactionMessage")?
            }
            "storeReplyMessageEnable" => {
                self.store_reply_message_enable = at.boolean("storeReplyMessageEnable")?
            }
            "shards" => self.shards = at.number("shards", 1..=SHARDS_MAX)?,
            _ => {
                self.unknown_keys.insert(key, value);
            }
        }
        Ok(())
    }

    fn apply_flags(
        &mut self,
        args: &BrokerArgs,
        broker_ip1: &mut Option<IpAddr>,
    ) -> Result<(), ConfigError> {
        fn flag(value: &str) -> Origin<'_> {
            Origin {
                origin: "flags",
                value,
            }
        }
        if let Some(listen) = args.listen {
            self.listen = listen;
        }
        if let Some(namesrv) = &args.namesrv {
            self.namesrv_addrs = flag(namesrv).namesrv_addrs("--namesrv")?;
        }
        if let Some(shards) = args.shards {
            self.shards = flag(&shards.to_string()).number("--shards", 1..=SHARDS_MAX)?;
        }
        if let Some(data) = &args.data {
            self.store_path_root_dir = data.clone();
        }
        if let Some(mode) = args.flush_disk_type {
            self.flush_mode = mode;
        }
        if let Some(ip) = args.broker_ip {
            *broker_ip1 = Some(ip);
        }
        if let Some(cluster) = &args.cluster {
            self.broker_cluster_name = flag(cluster).name("--cluster")?;
        }
        if let Some(name) = &args.broker_name {
            self.broker_name = flag(name).name("--broker-name")?;
        }
        Ok(())
    }
}

#[cfg(test)]
impl BrokerConfig {
    /// Apache's defaults with brokerIP1 fixed, for tests of the parts that read the config.
    pub(crate) fn for_tests() -> Self {
        Self {
            broker_ip1: IpAddr::V4(Ipv4Addr::LOCALHOST),
            ..Self::defaults(PathBuf::from(STANDALONE_DATA_DEFAULT))
        }
    }
}

/// A value and where it came from, for parsing it into a field or naming it in an error.
struct Origin<'a> {
    origin: &'a str,
    value: &'a str,
}

impl Origin<'_> {
    fn bad(&self, key: &'static str, reason: impl ToString) -> ConfigError {
        ConfigError::BadValue {
            origin: self.origin.to_owned(),
            key,
            value: self.value.to_owned(),
            reason: reason.to_string(),
        }
    }

    fn number<T>(
        &self,
        key: &'static str,
        range: std::ops::RangeInclusive<T>,
    ) -> Result<T, ConfigError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display,
        T::Err: std::fmt::Display,
    {
        let n: T = self.value.parse().map_err(|e| self.bad(key, e))?;
        if !range.contains(&n) {
            let reason = format!("must be in {}..={}", range.start(), range.end());
            return Err(self.bad(key, reason));
        }
        Ok(n)
    }

    /// A duration in milliseconds, from `min` to [`TRANSACTION_DURATION_MAX`].
    fn millis(&self, key: &'static str, min: Duration) -> Result<Duration, ConfigError> {
        let range = min.as_millis() as u64..=TRANSACTION_DURATION_MAX.as_millis() as u64;
        Ok(Duration::from_millis(self.number(key, range)?))
    }

    /// Java's `Boolean.parseBoolean` reads anything but "true" as false; a typo then turns a
    /// feature off silently, so only true and false are accepted.
    fn boolean(&self, key: &'static str) -> Result<bool, ConfigError> {
        match self.value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.bad(key, "must be true or false")),
        }
    }

    /// Cluster and broker names travel in topic routes and name system topics.
    fn name(&self, key: &'static str) -> Result<String, ConfigError> {
        if self.value.is_empty() {
            return Err(self.bad(key, "must not be empty"));
        }
        if has_illegal_chars(self.value) {
            return Err(self.bad(key, "may hold only letters, digits, %, |, - and _"));
        }
        Ok(self.value.to_owned())
    }

    fn namesrv_addrs(&self, key: &'static str) -> Result<Vec<String>, ConfigError> {
        let mut addrs = Vec::new();
        for addr in self
            .value
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            let port = addr
                .rsplit_once(':')
                .map(|(host, port)| (host, port.parse::<u16>()));
            match port {
                Some((host, Ok(_))) if !host.is_empty() => addrs.push(addr.to_owned()),
                _ => return Err(self.bad(key, format!("{addr} is not HOST:PORT"))),
            }
        }
        Ok(addrs)
    }
}

fn parse_flush_disk_type(value: &str) -> Result<FlushMode, String> {
    match value {
        "SYNC_FLUSH" => Ok(FlushMode::SyncFlush),
        "ASYNC_FLUSH" => Ok(FlushMode::AsyncFlush),
        _ => Err("must be SYNC_FLUSH or ASYNC_FLUSH".to_owned()),
    }
}

fn read_properties(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    use std::io::Read;
    let shown = || path.display().to_string();
    let read_error = |source| ConfigError::Read {
        path: shown(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut text = String::new();
    file.take(CONFIG_FILE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(read_error)?;
    if text.len() as u64 > CONFIG_FILE_BYTES_MAX {
        return Err(ConfigError::TooLarge { path: shown() });
    }
    properties::parse(&text).map_err(|(line, reason)| ConfigError::Syntax {
        path: shown(),
        line,
        reason,
    })
}

/// The host's first IPv4 address that is not loopback, as Apache's `NetworkUtil` guesses
/// `brokerIP1` when it is not set.
fn first_non_loopback_ipv4() -> Option<Ipv4Addr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: on success getifaddrs points `head` at a list we own until freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cursor = head;
    for _ in 0..INTERFACES_MAX {
        if cursor.is_null() {
            break;
        }
        // SAFETY: `cursor` is a non-null node of the list getifaddrs returned.
        let ifa = unsafe { &*cursor };
        // SAFETY: a non-null ifa_addr points at a sockaddr whose family says its real type.
        let family = (!ifa.ifa_addr.is_null()).then(|| unsafe { (*ifa.ifa_addr).sa_family });
        if family == Some(libc::AF_INET as libc::sa_family_t) {
            // SAFETY: AF_INET addresses are sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            if !ip.is_loopback() {
                found = Some(ip);
                break;
            }
        }
        cursor = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    found
}

#[cfg(test)]
mod tests;
