//! GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus and clusterList, rocketmq-dashboard): the key
//! set Apache 5.3.3's broker answers (`AdminBrokerProcessor.prepareRuntimeInfo` over
//! `DefaultMessageStore.getRuntimeInfo`, timer wheel off, no delayed messages), in its formats.
//!
//! Real values: msgPutTotalTodayNow, msgGetTotalTodayNow, putMessageTimesTotal,
//! putMessageSizeTotal, putMessageAverageSize, commitLogMinOffset (bytes retention removed,
//! all shards), commitLogMaxOffset (bytes appended, all shards), remainHowManyDataToFlush,
//! earliestMessageTimeStamp, bootTimestamp, runtime, brokerVersion, brokerVersionDesc,
//! brokerActive, commitLogDirCapacity, commitLogDiskRatio (and one `commitLogDiskRatio_<dir>`
//! per shard's directory), consumeQueueDiskRatio, and remainTransientStoreBufferNumbs /
//! startAcceptSendRequestTimeStamp (what Java answers with no transient pool and no delayed
//! start, as here), and, as Apache 4.9 and 5.x add them once a delay level's queue exists,
//! `scheduleMessageOffset_<level>` = "delivered offset,max offset" (summed over the shards'
//! own schedule queues, so their difference is what is still pending). Every other key ([`UNMEASURED`]) is Java's zero: ringmq does not measure
//! it yet, or has no such thing (thread-pool queues, the timer wheel).

use crate::broker::error::BrokerResult;
use crate::broker::shard::Shard;
use crate::broker::work::{RuntimePart, Work};
use crate::protocol::body::{self, KvTable};
use crate::protocol::codes::response;
use crate::protocol::command::{RemotingCommand, CURRENT_VERSION};
use crate::protocol::message::record::RecordView;
use crate::server::Response;
use ringmq_shards::real_io::disk_space;
use ringmq_shards::schedule::SCHEDULE_TOPIC;
use ringmq_shards::PhysicalOffset;
use std::collections::BTreeMap;
use std::path::Path;

/// Keys summed over the shards.
const PUT: &str = "msgPutTotalTodayNow";
const GOT: &str = "msgGetTotalTodayNow";
const PUT_TIMES: &str = "putMessageTimesTotal";
const PUT_BYTES: &str = "putMessageSizeTotal";
const LOG_END: &str = "commitLogMaxOffset";
const UNFLUSHED: &str = "remainHowManyDataToFlush";
/// Store time of the broker's first message, -1 when it has none.
const EARLIEST: &str = "earliestMessageTimeStamp";
/// Prefix of the one key per commit-log directory (`RunningStats.commitLogDiskRatio_<path>`).
const DISK_RATIO_PREFIX: &str = "commitLogDiskRatio_";
/// Prefix of the one key per delay level in use (`RunningStats.scheduleMessageOffset_<level>`),
/// valued "delivered offset,max offset".
const SCHEDULE_OFFSET_PREFIX: &str = "scheduleMessageOffset_";

/// Java's values for what ringmq does not measure (yet) or does not have: TPS windows (need a
/// per-second sampler of the counters), latencies, yesterday's and this morning's totals (need
/// the counters recorded at midnight), thread-pool queues (none here), the timer wheel (off).
const UNMEASURED: [(&str, &str); 41] = [
    ("EndTransactionQueueSize", "0"),
    ("EndTransactionThreadPoolQueueCapacity", "0"),
    ("ackThreadPoolQueueCapacity", "0"),
    ("ackThreadPoolQueueHeadWaitTimeMills", "0"),
    ("ackThreadPoolQueueSize", "0"),
    ("dispatchBehindBytes", "0"),
    ("dispatchMaxBuffer", "0"),
    ("getFoundTps", "0.0 0.0 0.0"),
    ("getMessageEntireTimeMax", "0"),
    ("getMissTps", "0.0 0.0 0.0"),
    ("getTotalTps", "0.0 0.0 0.0"),
    ("getTransferredTps", "0.0 0.0 0.0"),
    // Apache 4.9's spelling of the same, which 4.9 mqadmin's clusterList reads (it throws a
    // NullPointerException without it); Apache 5.x brokers answer only the new one.
    ("getTransferedTps", "0.0 0.0 0.0"),
    ("litePullThreadPoolQueueCapacity", "0"),
    ("litePullThreadPoolQueueHeadWaitTimeMills", "0"),
    ("litePullThreadPoolQueueSize", "0"),
    ("msgGetTotalTodayMorning", "0"),
    ("msgGetTotalYesterdayMorning", "0"),
    ("msgPutTotalTodayMorning", "0"),
    ("msgPutTotalYesterdayMorning", "0"),
    ("pageCacheLockTimeMills", "0"),
    ("pullThreadPoolQueueCapacity", "0"),
    ("pullThreadPoolQueueHeadWaitTimeMills", "0"),
    ("pullThreadPoolQueueSize", "0"),
    ("putLatency99", "0.00"),
    ("putLatency999", "0.00"),
    // Java's own value while no put has been timed into its distribution.
    ("putMessageDistributeTime", "null"),
    ("putMessageEntireTimeMax", "0"),
    ("putMessageFailedTimes", "0"),
    ("putTps", "0.0 0.0 0.0"),
    ("queryThreadPoolQueueCapacity", "0"),
    ("queryThreadPoolQueueHeadWaitTimeMills", "0"),
    ("queryThreadPoolQueueSize", "0"),
    ("sendThreadPoolQueueCapacity", "0"),
    ("sendThreadPoolQueueHeadWaitTimeMills", "0"),
    ("sendThreadPoolQueueSize", "0"),
    ("timerCongestNum", "0"),
    ("timerDequeueTps", "0.0"),
    ("timerEnqueueTps", "0.0"),
    ("timerOffsetBehind", "0"),
    ("timerReadBehind", "0"),
];

/// What Java answers when the transient store pool is off (`Integer.MAX_VALUE`).
const TRANSIENT_BUFFERS_NONE: &str = "2147483647";

/// GET_BROKER_RUNTIME_INFO: every shard's part, merged.
pub async fn serve(shard: &Shard, command: &RemotingCommand) -> BrokerResult<Response> {
    let parts = shard
        .on_every_shard(|reply| Work::RuntimeInfo { reply })
        .await?;
    let table = merge(shard, &parts, crate::broker::now_ms());
    Ok(
        RemotingCommand::response_to(command, response::SUCCESS, None)
            .with_body(body::encode(&table)?)
            .into(),
    )
}

/// Owner half: this shard's numbers and its directory's disk ratio.
pub async fn part(shard: &Shard) -> BrokerResult<RuntimePart> {
    let counters = shard.counters();
    let store = shard.store();
    // The oldest segment starts with a record (fillers only end segments); informative only:
    // none yet, one being removed or one that does not parse reads as unknown.
    let first = PhysicalOffset::new(store.config().shard_id, store.log_min()).to_wire();
    let earliest_ms = match store.read_at(first).await {
        Ok(record) => RecordView::parse(record)
            .ok()
            .map(|record| record.store_timestamp_ms()),
        Err(_) => None,
    };
    let schedule = (1..=store.config().delay_levels.count())
        .filter_map(|level| {
            let max = store.max_offset(SCHEDULE_TOPIC, level as i32 - 1);
            (max > 0).then(|| (level, store.schedule_offset(level), max))
        })
        .collect();
    let dir = store.config().dir.clone();
    let ratio = disk_used_ratio(&dir);
    Ok(RuntimePart {
        messages_put: counters.messages_put,
        bytes_put: counters.bytes_put,
        messages_got: counters.messages_got,
        log_end: store.log_end(),
        log_min: store.log_min(),
        unflushed: store.log_end() - store.log_durable_end(),
        earliest_ms,
        schedule,
        disk: (dir, ratio),
    })
}

/// Joins the shards' parts: counters summed, the earliest message the least known time, the
/// per-directory disk ratios kept, and the broker-wide keys added.
fn merge(shard: &Shard, parts: &[RuntimePart], now_ms: i64) -> KvTable {
    let mut table = BTreeMap::new();
    let mut put = |key: &str, value: String| {
        table.insert(key.to_owned(), value);
    };
    let sum = |of: fn(&RuntimePart) -> u64| parts.iter().map(of).sum::<u64>();
    let put_bytes = sum(|p| p.bytes_put);
    let put_times = sum(|p| p.messages_put);
    put(PUT, put_times.to_string());
    put(GOT, sum(|p| p.messages_got).to_string());
    put(PUT_TIMES, put_times.to_string());
    put(PUT_BYTES, put_bytes.to_string());
    put(LOG_END, sum(|p| p.log_end).to_string());
    put(UNFLUSHED, human_bytes(sum(|p| p.unflushed)));
    let earliest = parts.iter().filter_map(|p| p.earliest_ms).min();
    put(EARLIEST, earliest.unwrap_or(-1).to_string());
    let mut schedule: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
    for &(level, delivered, max) in parts.iter().flat_map(|p| &p.schedule) {
        let sum = schedule.entry(level).or_default();
        sum.0 += delivered;
        sum.1 += max;
    }
    for (level, (delivered, max)) in schedule {
        put(
            &format!("{SCHEDULE_OFFSET_PREFIX}{level}"),
            format!("{delivered},{max}"),
        );
    }
    for (dir, ratio) in parts.iter().map(|p| &p.disk) {
        put(
            &format!("{DISK_RATIO_PREFIX}{}", dir.display()),
            java_double(*ratio),
        );
    }
    // Java divides by one when nothing was put yet.
    let average = put_bytes as f64 / put_times.max(1) as f64;
    put("putMessageAverageSize", java_double(average));
    put("commitLogMinOffset", sum(|p| p.log_min).to_string());
    let root = &shard.config().store_path_root_dir;
    let ratio = java_double(disk_used_ratio(root));
    put("commitLogDiskRatio", ratio.clone());
    put("consumeQueueDiskRatio", ratio);
    if let Ok(space) = disk_space(root) {
        put(
            "commitLogDirCapacity",
            format!(
                "Total : {}, Free : {}.",
                human_bytes(space.total),
                human_bytes(space.free)
            ),
        );
    }
    let boot = shard.boot_timestamp_ms();
    put("bootTimestamp", boot.to_string());
    put("runtime", format_runtime(now_ms - boot));
    put(
        "brokerVersionDesc",
        format!("ringmq {}", env!("CARGO_PKG_VERSION")),
    );
    put("brokerVersion", CURRENT_VERSION.to_string());
    // A master serves reads and writes ("special services" in Java's terms).
    put("brokerActive", "true".to_owned());
    put(
        "remainTransientStoreBufferNumbs",
        TRANSIENT_BUFFERS_NONE.to_owned(),
    );
    put("startAcceptSendRequestTimeStamp", "0".to_owned());
    for (key, value) in UNMEASURED {
        put(key, value.to_owned());
    }
    KvTable { table }
}

/// `UtilAll.getDiskPartitionSpaceUsedPercent`: the used fraction, rounded up to a hundredth;
/// -1 when the path cannot be measured.
fn disk_used_ratio(path: &Path) -> f64 {
    disk_space(path).map_or(-1.0, |space| space.used_ratio())
}

/// A double as Java's `String.valueOf` writes it in the ranges used here (`1.0`, `0.62`).
fn java_double(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 {
        format!("{value:.1}")
    } else {
        value.to_string()
    }
}

/// `MixAll.humanReadableByteCount(bytes, false)`: `512 B`, `1.5 KiB`, `252.0 GiB`.
fn human_bytes(bytes: u64) -> String {
    const UNIT: u64 = 1024;
    if bytes < UNIT {
        return format!("{bytes} B");
    }
    let mut exp = 0;
    let mut scaled = bytes;
    while scaled >= UNIT && exp < 6 {
        scaled /= UNIT;
        exp += 1;
    }
    let prefix = "KMGTPE".as_bytes()[exp - 1] as char;
    format!(
        "{:.1} {prefix}iB",
        bytes as f64 / (UNIT as f64).powi(exp as i32)
    )
}

/// `StoreStatsService.getFormatRuntime`.
fn format_runtime(elapsed_ms: i64) -> String {
    const SECOND: i64 = 1000;
    const MINUTE: i64 = 60 * SECOND;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    let t = elapsed_ms.max(0);
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        t / DAY,
        t % DAY / HOUR,
        t % HOUR / MINUTE,
        t % MINUTE / SECOND
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringmq_shards::io::DiskSpace;

    #[test]
    fn formats_as_java_does() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(252 << 30), "252.0 GiB");
        assert_eq!(java_double(1.0), "1.0");
        assert_eq!(java_double(0.62), "0.62");
        assert_eq!(java_double(245.28571428571428), "245.28571428571428");
        assert_eq!(java_double(-1.0), "-1.0");
        assert_eq!(
            format_runtime(49_999),
            "[ 0 days, 0 hours, 0 minutes, 49 seconds ]"
        );
        assert_eq!(
            format_runtime(((2 * 24 + 3) * 60 + 4) * 60_000 + 5_000),
            "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"
        );
    }

    #[test]
    fn disk_ratio_rounds_up_to_a_hundredth_of_the_writable_space() {
        // 100 blocks, 40 free of which 30 usable: used 60 of 90 writable -> 0.67.
        let space = DiskSpace {
            total: 100,
            free: 40,
            usable: 30,
        };
        assert_eq!(space.used_ratio(), 0.67);
        let exact = DiskSpace {
            total: 100,
            free: 50,
            usable: 50,
        };
        assert_eq!(exact.used_ratio(), 0.5);
        assert_eq!(disk_used_ratio(Path::new("/no/such/dir")), -1.0);
        assert!((0.0..=1.0).contains(&disk_used_ratio(Path::new("/"))));
    }
}
