//! Every bound of a run, with the reason for it. A run always ends: by its duration, by its
//! message count, or when every producer and consumer has stopped.

use ringmq::protocol::message::MESSAGE_BODY_BYTES_MAX_DEFAULT;
use ringmq::server::connection::PENDING_REQUESTS_MAX;
use std::time::Duration;

/// Longest run: a benchmark that needs more than ten minutes is a soak test, and the per-second
/// timeline (one histogram a second) stays small.
pub const DURATION_MAX: Duration = Duration::from_secs(600);

/// Default message bound: with the default 10 s duration, time ends a run first on these
/// machines; the bound keeps a fast broker from filling the disk (10 M × 1 KiB = 10 GiB).
pub const MESSAGES_DEFAULT: u64 = 10_000_000;

/// Largest message bound: 1 G messages of 16 bytes is still 16 GiB of commit log.
pub const MESSAGES_MAX: u64 = 1_000_000_000;

/// Largest request timeout: a broker that takes longer is down, not slow.
pub const TIMEOUT_MAX: Duration = Duration::from_secs(60);

/// Queues per broker: RocketMQ topics rarely have more than a few hundred.
pub const QUEUES_MAX: u32 = 1024;

/// Connections per broker; each costs a reader and a writer task and two descriptors.
pub const CONNECTIONS_MAX: u32 = 256;

/// Load threads: more than the host has cores only adds context switches.
pub const THREADS_MAX: u32 = 64;

/// Producers in one run.
pub const PRODUCERS_MAX: u32 = 4096;

/// Sends awaiting responses on one connection: the client's pending bound, less room for one
/// pull per queue that an e2e run's consumers keep on the same connection.
pub const WINDOW_PER_CONNECTION_MAX: usize = PENDING_REQUESTS_MAX - QUEUES_MAX as usize;

/// Largest body of one send (a batch's bodies together): RocketMQ's `maxMessageSize`.
pub const BODY_BYTES_MAX: usize = MESSAGE_BODY_BYTES_MAX_DEFAULT;

/// Messages in one SEND_BATCH_MESSAGE; the Java client has no bound but the body size.
pub const BATCH_MAX: u32 = 1024;

/// Distinct keys of keyed sends.
pub const KEYS_MAX: u32 = 1_000_000;

/// Open-loop rate: 10 M msg/s is beyond any broker on one host, so a larger value is a typo.
pub const RATE_MAX: u64 = 10_000_000;

/// Messages asked for per pull; brokers cap a pull at 32 by default (`maxMsgNums` is honoured
/// up to the broker's transfer limits).
pub const PULL_BATCH_MAX: u32 = 1024;

/// Longest long-poll hold; the request timeout is this plus the ordinary timeout.
pub const SUSPEND_MAX: Duration = Duration::from_secs(30);

/// Bytes at the start of every body: a marker and the send time in µs since the epoch, from
/// which end-to-end latency is measured. The body size may not be smaller.
pub const BODY_STAMP_BYTES: usize = 16;

/// Largest latency the histograms hold; longer ones are counted as this (a request times out
/// long before).
pub const LATENCY_US_MAX: u64 = 60_000_000;

/// Significant digits of the run's latency histograms (0.1 % resolution).
pub const LATENCY_DIGITS: u8 = 3;

/// Significant digits of the per-second histograms (1 % resolution: they are only plotted).
pub const INTERVAL_LATENCY_DIGITS: u8 = 2;
