//! Configuration of one shard's storage, grouped by the part that reads it.

use crate::error::StoreError;
use crate::io::BLOCK_BYTES;
use crate::offset::SHARD_ID_MAX;
use crate::record::RECORD_BYTES_MAX;
use crate::schedule::DelayLevels;
use crate::timer::TimerConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// RocketMQ's default CommitLog segment size (1 GiB).
pub const SEGMENT_BYTES_DEFAULT: u64 = 1 << 30;
/// Default cap on one group-commit I/O: 1 MiB keeps a write well inside one io_uring
/// request's sweet spot while amortising fdatasync over hundreds of 1 KiB records.
pub const GROUP_COMMIT_BYTES_MAX_DEFAULT: usize = 1 << 20;
/// Default hot-tail budget: 64 MiB of recent records served from memory per shard.
pub const HOT_TAIL_BYTES_MAX_DEFAULT: usize = 64 << 20;
/// Default zero-ahead window: 1 MiB keeps a few groups' worth of blocks ready while each
/// top-up write stays a fraction of a millisecond.
pub const ZERO_AHEAD_BYTES_DEFAULT: u64 = 1 << 20;
/// Default cap on open segment files per shard (file descriptors for cold reads).
pub const SEGMENTS_OPEN_MAX_DEFAULT: usize = 16;
/// Default cap on appends waiting for durability at once (SYNC_FLUSH senders in flight).
pub const FLUSH_WAITERS_MAX_DEFAULT: usize = 16 * 1024;
/// Default cap on long-poll waiters per queue.
pub const QUEUE_WAITERS_MAX_DEFAULT: usize = 4 * 1024;
/// Default cap on index entries held per shard (RocketMQ's IndexFile holds 20 M).
pub const INDEX_ENTRIES_MAX_DEFAULT: usize = 20_000_000;
/// Default bound on the consume queues' page cache per shard: 16 MiB holds ~680 pages of
/// 1024 entries, the pages of hundreds of consumers catching up at once, while memory stays
/// flat however many messages and queues are stored (a memory budget will set it).
pub const CQ_PAGE_CACHE_BYTES_DEFAULT: usize = 16 << 20;
/// RocketMQ's default flush interval for ASYNC_FLUSH (`flushIntervalCommitLog`, 500 ms).
pub const FLUSH_INTERVAL_DEFAULT: Duration = Duration::from_millis(500);
/// Apache's `fileReservedTime` default (72 h): a sealed segment whose newest record is older
/// is removed.
pub const FILE_RESERVED_DEFAULT: Duration = Duration::from_secs(72 * 3600);
/// Apache's `cleanResourceInterval` (10 s): how often retention looks for a segment to remove.
pub const RETENTION_CHECK_INTERVAL_DEFAULT: Duration = Duration::from_secs(10);
/// Apache's `deleteCommitLogFilesInterval` (100 ms): the least time between two segment
/// removals, so catching up on many expired segments is spread out (at most 10 a second).
pub const SEGMENT_REMOVAL_INTERVAL_DEFAULT: Duration = Duration::from_millis(100);
/// Bytes of our integrity trailer after each record plus an end-of-segment filler; a
/// segment must hold at least one largest record and both.
const SEGMENT_OVERHEAD_BYTES: u64 = 16;

/// When an append is acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushMode {
    /// Acknowledge once the record's bytes are durable (group commit).
    SyncFlush,
    /// Acknowledge on append; the flusher follows within the flush interval.
    AsyncFlush,
}

/// Commit-log settings.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// Segment size; a multiple of the block size, large enough for the largest record.
    pub segment_bytes: u64,
    pub flush_mode: FlushMode,
    /// ASYNC_FLUSH: how long appended bytes may stay non-durable.
    pub flush_interval: Duration,
    pub group_commit_bytes_max: usize,
    /// Memory for recent records (flushed ones are evicted oldest first beyond it; unflushed
    /// ones make appends wait for a flush).
    pub hot_tail_bytes_max: usize,
    pub segments_open_max: usize,
    pub flush_waiters_max: usize,
    /// How far ahead of the log the active segment is kept written with zeros (0: off);
    /// see `CommitLog::zero_ahead`.
    pub zero_ahead_bytes: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            flush_mode: FlushMode::AsyncFlush,
            flush_interval: FLUSH_INTERVAL_DEFAULT,
            group_commit_bytes_max: GROUP_COMMIT_BYTES_MAX_DEFAULT,
            hot_tail_bytes_max: HOT_TAIL_BYTES_MAX_DEFAULT,
            segments_open_max: SEGMENTS_OPEN_MAX_DEFAULT,
            flush_waiters_max: FLUSH_WAITERS_MAX_DEFAULT,
            zero_ahead_bytes: ZERO_AHEAD_BYTES_DEFAULT,
        }
    }
}

/// When whole commit-log segments are removed (docs/STORAGE.md, "Retention"): the keys of
/// Apache's `CleanCommitLogService`, ratios as fractions (the broker clamps them as Apache does).
#[derive(Clone, Debug)]
pub struct RetentionConfig {
    /// `fileReservedTime`: a sealed segment whose newest record was stored this long ago is
    /// expired and removed (continuously: no `deleteWhen` hour is waited for).
    pub file_reserved: Duration,
    /// `cleanFileForciblyEnable`: above the forcible ratio the oldest sealed segments go
    /// whatever their age.
    pub clean_forcibly_enable: bool,
    /// `diskSpaceCleanForciblyRatio`, as a fraction of the partition.
    pub clean_forcibly_ratio: f64,
    /// `diskSpaceWarningLevelRatio`: cleaning is forcible above it too, and appends are
    /// refused (disk full) until the partition is below it again.
    pub warning_ratio: f64,
    /// `cleanResourceInterval`.
    pub check_interval: Duration,
    /// `deleteCommitLogFilesInterval`: the least time between two removals.
    pub removal_interval: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            file_reserved: FILE_RESERVED_DEFAULT,
            clean_forcibly_enable: true,
            clean_forcibly_ratio: 0.85,
            warning_ratio: 0.90,
            check_interval: RETENTION_CHECK_INTERVAL_DEFAULT,
            removal_interval: SEGMENT_REMOVAL_INTERVAL_DEFAULT,
        }
    }
}

/// Everything a shard's storage needs.
#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// The shard's own directory (commitlog/, consumequeue/, index, offsets, checkpoint).
    pub dir: PathBuf,
    /// Goes into the high bits of physical offsets.
    pub shard_id: u16,
    /// The broker's advertised address, written as STOREHOST.
    pub store_host: SocketAddr,
    pub log: LogConfig,
    pub queue_waiters_max: usize,
    pub index_entries_max: usize,
    /// Bytes of consume-queue pages cached (see `consume_queue::pages`).
    pub cq_page_cache_bytes: usize,
    /// `messageDelayLevel`: what the schedule topic's tagsCodes and delivery are computed
    /// from.
    pub delay_levels: DelayLevels,
    pub retention: RetentionConfig,
    /// `timerPrecisionMs`, `timerMaxDelaySec`, `timerWheelEnable`: what the timer topic's
    /// tagsCodes and stages are computed from.
    pub timers: TimerConfig,
}

impl ShardConfig {
    /// Defaults for a shard in `dir`.
    pub fn new(dir: impl Into<PathBuf>, shard_id: u16, store_host: SocketAddr) -> Self {
        Self {
            dir: dir.into(),
            shard_id,
            store_host,
            log: LogConfig::default(),
            queue_waiters_max: QUEUE_WAITERS_MAX_DEFAULT,
            index_entries_max: INDEX_ENTRIES_MAX_DEFAULT,
            cq_page_cache_bytes: CQ_PAGE_CACHE_BYTES_DEFAULT,
            delay_levels: DelayLevels::default(),
            retention: RetentionConfig::default(),
            timers: TimerConfig::default(),
        }
    }

    /// Checks the settings that would otherwise break invariants later.
    pub fn validate(&self) -> Result<(), StoreError> {
        let bad = |why: String| Err(StoreError::Config(why));
        if self.shard_id > SHARD_ID_MAX {
            return bad(format!("shard id {} above {SHARD_ID_MAX}", self.shard_id));
        }
        let seg = self.log.segment_bytes;
        if !seg.is_multiple_of(BLOCK_BYTES as u64) || seg < BLOCK_BYTES as u64 {
            return bad(format!(
                "segment size {seg} is not a multiple of {BLOCK_BYTES}"
            ));
        }
        if self.log.group_commit_bytes_max < BLOCK_BYTES {
            return bad("group commit limit below one block".into());
        }
        if self.log.hot_tail_bytes_max < 2 * BLOCK_BYTES {
            return bad("hot tail budget below two blocks".into());
        }
        if self.log.segments_open_max < 2 || self.log.flush_waiters_max == 0 {
            return bad("need at least 2 open segments and 1 flush waiter".into());
        }
        let retention = &self.retention;
        if retention.check_interval.is_zero() {
            return bad("retention check interval of zero".into());
        }
        if !(0.0..=1.0).contains(&retention.clean_forcibly_ratio)
            || !(0.0..=1.0).contains(&retention.warning_ratio)
        {
            return bad("disk ratios must be fractions".into());
        }
        Ok(())
    }

    /// Largest record (with trailer) this configuration accepts.
    pub fn entry_bytes_max(&self) -> usize {
        let by_segment = self
            .log
            .segment_bytes
            .saturating_sub(SEGMENT_OVERHEAD_BYTES) as usize;
        by_segment
            .min(RECORD_BYTES_MAX + 4)
            .min(self.log.hot_tail_bytes_max / 2)
    }
}
