//! Command-line arguments and their validation: every workload is checked here, before any
//! connection is made, and turned into a [`Workload`] whose numbers are known to be in range.

use crate::limits::*;
use ringmq::protocol::command::SerializeType;
use ringmq::server::connection::PENDING_REQUESTS_MAX;
use std::path::PathBuf;
use std::time::Duration;

/// Where the brokers are and what to call the run; shared by every workload.
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// NameServer `host:port`: every master broker it lists is loaded.
    #[arg(short = 'n', long)]
    pub namesrv: Option<String>,
    /// Broker `host:port[,host:port…]`, instead of asking a NameServer.
    #[arg(short = 'b', long, conflicts_with = "namesrv")]
    pub broker: Option<String>,
    /// Only the brokers of this cluster (with --namesrv).
    #[arg(long)]
    pub cluster: Option<String>,
    #[arg(short = 't', long, default_value = "ringmq-bench")]
    pub topic: String,
    /// Queues of the topic on each broker (the topic is created or updated with this many).
    #[arg(short = 'q', long, default_value_t = 8)]
    pub queues: u32,
    /// Do not send UPDATE_AND_CREATE_TOPIC; the topic must already have --queues queues.
    #[arg(long)]
    pub no_create_topic: bool,
    /// Client connections to each broker (each is one RocketMQ client instance).
    #[arg(short = 'c', long, default_value_t = 1)]
    pub connections: u32,
    /// Load-generating threads (one glommio executor each); must divide --connections.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Stop after this many seconds.
    #[arg(short = 'd', long, default_value_t = 10.0)]
    pub duration: f64,
    /// Stop after this many messages (produced, or consumed for `consume`).
    #[arg(short = 'm', long, default_value_t = MESSAGES_DEFAULT)]
    pub messages: u64,
    /// Timeout of one request.
    #[arg(long, default_value_t = 3000)]
    pub timeout_ms: u64,
    /// Write the result as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML plot (percentiles and throughput over time) to this file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// A path on the broker's disk, for the disk and file-system facts in the result.
    #[arg(long, default_value = ".")]
    pub data_path: PathBuf,
    /// How the load's requests write their headers: JSON (the Java client's default) or the
    /// binary ROCKETMQ form (what Apache's own tools select).
    #[arg(long, value_enum, default_value_t = HeaderEncoding::Json)]
    pub header: HeaderEncoding,
}

/// A request header encoding (REMOTING.md §1.4, §1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderEncoding {
    Json,
    Rocketmq,
}

impl From<HeaderEncoding> for SerializeType {
    fn from(encoding: HeaderEncoding) -> Self {
        match encoding {
            HeaderEncoding::Json => SerializeType::Json,
            HeaderEncoding::Rocketmq => SerializeType::RocketMq,
        }
    }
}

/// What producers send and how.
#[derive(Debug, Clone, clap::Args)]
pub struct ProduceArgs {
    /// Concurrent producers, spread over the connections.
    #[arg(short = 'p', long, default_value_t = 1)]
    pub producers: u32,
    /// Body bytes of one message.
    #[arg(short = 's', long, default_value_t = 1024)]
    pub size: usize,
    /// Messages per send (more than 1: SEND_BATCH_MESSAGE).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Sends each producer keeps in flight: 1 is a synchronous producer, more pipelines.
    #[arg(long, default_value_t = 1)]
    pub in_flight: u32,
    /// Keyed (ordered) sends over this many keys, each key always to the same queue; without
    /// it queues are taken round robin.
    #[arg(long)]
    pub keys: Option<u32>,
    /// Open loop at this many messages/s in total (latency counted from the intended send
    /// time); without it, closed loop as fast as the window allows.
    #[arg(short = 'r', long)]
    pub rate: Option<u64>,
}

/// How consumers read.
#[derive(Debug, Clone, clap::Args)]
pub struct ConsumeArgs {
    #[arg(short = 'g', long, default_value = "ringmq-bench-consumer")]
    pub group: String,
    /// Messages asked for per pull.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: u32,
    /// How long the broker may hold a pull that finds nothing (long polling).
    #[arg(long, default_value_t = 1000)]
    pub suspend_ms: u64,
    /// Pull with this SQL92 subscription (`MessageSelector.bySql`), filtered by the broker,
    /// instead of `*` (the broker must allow it: `enablePropertyFilter=true`).
    #[arg(long, value_name = "EXPR")]
    pub sql92: Option<String>,
}

/// Which offsets consumers start and stop at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsumeMode {
    /// Read the backlog from the queues' min offsets to their max offsets at the start.
    CatchUp,
    /// Long-poll from the queues' max offsets at the start, for messages produced meanwhile.
    Follow,
}

/// A bad command line; reported before anything is sent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArgsError {
    #[error("give a NameServer (--namesrv) or broker addresses (--broker)")]
    NoTarget,
    #[error("--sql92 needs an expression")]
    EmptySql92,
    #[error("--{name} must be between {min} and {max}, not {value}")]
    OutOfRange {
        name: &'static str,
        value: String,
        min: String,
        max: String,
    },
    #[error("--connections ({connections}) must be a multiple of --threads ({threads})")]
    ConnectionsNotDivisible { connections: u32, threads: u32 },
    #[error("--connections ({connections}) exceeds --producers ({producers}): a connection would carry no producer")]
    IdleConnections { connections: u32, producers: u32 },
    #[error("--batch {batch} × --size {size} = {bytes} bytes exceeds the {max}-byte body limit")]
    BatchTooLarge {
        batch: u32,
        size: usize,
        bytes: usize,
        max: usize,
    },
    #[error("{per_connection} sends in flight per connection exceed the client's {max}")]
    WindowTooLarge { per_connection: u64, max: usize },
}

fn check<T: PartialOrd + ToString>(
    name: &'static str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ArgsError> {
    if value < min || value > max {
        return Err(ArgsError::OutOfRange {
            name,
            value: value.to_string(),
            min: min.to_string(),
            max: max.to_string(),
        });
    }
    Ok(())
}

/// How to reach the brokers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Discovery {
    Namesrv {
        addr: String,
        cluster: Option<String>,
    },
    Brokers(Vec<String>),
}

/// The validated settings shared by every workload.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Target {
    pub discovery: Discovery,
    pub topic: String,
    pub queues: u32,
    pub create_topic: bool,
    pub connections: u32,
    pub threads: u32,
    #[serde(serialize_with = "seconds")]
    pub duration: Duration,
    pub messages: u64,
    #[serde(serialize_with = "seconds")]
    pub timeout: Duration,
    pub header: HeaderEncoding,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Validated producer settings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Produce {
    pub producers: u32,
    pub size: usize,
    pub batch: u32,
    pub in_flight: u32,
    pub keys: Option<u32>,
    pub rate: Option<u64>,
}

/// Validated consumer settings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Consume {
    pub group: String,
    pub mode: ConsumeMode,
    pub pull_batch: u32,
    /// The SQL92 expression pulls carry; `None` pulls `*` (TAG).
    pub sql92: Option<String>,
    #[serde(serialize_with = "seconds")]
    pub suspend: Duration,
}

/// One run, validated.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Workload {
    pub target: Target,
    pub produce: Option<Produce>,
    pub consume: Option<Consume>,
}

impl TargetArgs {
    pub fn validate(&self) -> Result<Target, ArgsError> {
        let discovery = match (&self.namesrv, &self.broker) {
            (Some(addr), None) => Discovery::Namesrv {
                addr: addr.clone(),
                cluster: self.cluster.clone(),
            },
            (None, Some(list)) => {
                let brokers: Vec<String> = list
                    .split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect();
                if brokers.is_empty() {
                    return Err(ArgsError::NoTarget);
                }
                Discovery::Brokers(brokers)
            }
            _ => return Err(ArgsError::NoTarget),
        };
        check("queues", self.queues, 1, QUEUES_MAX)?;
        check("connections", self.connections, 1, CONNECTIONS_MAX)?;
        check("threads", self.threads, 1, THREADS_MAX)?;
        if !self.connections.is_multiple_of(self.threads) {
            return Err(ArgsError::ConnectionsNotDivisible {
                connections: self.connections,
                threads: self.threads,
            });
        }
        check("duration", self.duration, 0.001, DURATION_MAX.as_secs_f64())?;
        check("messages", self.messages, 1, MESSAGES_MAX)?;
        check(
            "timeout-ms",
            self.timeout_ms,
            1,
            TIMEOUT_MAX.as_millis() as u64,
        )?;
        Ok(Target {
            discovery,
            topic: self.topic.clone(),
            queues: self.queues,
            create_topic: !self.no_create_topic,
            connections: self.connections,
            threads: self.threads,
            duration: Duration::from_secs_f64(self.duration),
            messages: self.messages,
            timeout: Duration::from_millis(self.timeout_ms),
            header: self.header,
        })
    }
}

impl ProduceArgs {
    pub fn validate(&self, target: &Target) -> Result<Produce, ArgsError> {
        check("producers", self.producers, 1, PRODUCERS_MAX)?;
        if target.connections > self.producers {
            return Err(ArgsError::IdleConnections {
                connections: target.connections,
                producers: self.producers,
            });
        }
        check("size", self.size, BODY_STAMP_BYTES, BODY_BYTES_MAX)?;
        check("batch", self.batch, 1, BATCH_MAX)?;
        let bytes = self.batch as usize * self.size;
        if bytes > BODY_BYTES_MAX {
            return Err(ArgsError::BatchTooLarge {
                batch: self.batch,
                size: self.size,
                bytes,
                max: BODY_BYTES_MAX,
            });
        }
        check("in-flight", self.in_flight, 1, PENDING_REQUESTS_MAX as u32)?;
        let producers_per_connection = self.producers.div_ceil(target.connections) as u64;
        let per_connection = producers_per_connection * self.in_flight as u64;
        if per_connection > WINDOW_PER_CONNECTION_MAX as u64 {
            return Err(ArgsError::WindowTooLarge {
                per_connection,
                max: WINDOW_PER_CONNECTION_MAX,
            });
        }
        if let Some(keys) = self.keys {
            check("keys", keys, 1, KEYS_MAX)?;
        }
        if let Some(rate) = self.rate {
            check("rate", rate, 1, RATE_MAX)?;
        }
        Ok(Produce {
            producers: self.producers,
            size: self.size,
            batch: self.batch,
            in_flight: self.in_flight,
            keys: self.keys,
            rate: self.rate,
        })
    }
}

impl ConsumeArgs {
    pub fn validate(&self, mode: ConsumeMode) -> Result<Consume, ArgsError> {
        check("pull-batch", self.pull_batch, 1, PULL_BATCH_MAX)?;
        check(
            "suspend-ms",
            self.suspend_ms,
            0,
            SUSPEND_MAX.as_millis() as u64,
        )?;
        if self.sql92.as_deref().is_some_and(|e| e.trim().is_empty()) {
            return Err(ArgsError::EmptySql92);
        }
        Ok(Consume {
            group: self.group.clone(),
            mode,
            pull_batch: self.pull_batch,
            sql92: self.sql92.clone(),
            suspend: Duration::from_millis(self.suspend_ms),
        })
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
