//! Retention: whole commit-log segments are removed, oldest first, with the consume-queue
//! entries and key-index hits that point into them (Apache's `CleanCommitLogService` and
//! `CleanConsumeQueueService`, docs/STORAGE.md "Retention").
//!
//! A sealed segment goes when it is expired (its newest record was stored `fileReservedTime`
//! ago) or, with `cleanFileForciblyEnable`, whatever its age while the partition is fuller
//! than `diskSpaceCleanForciblyRatio` (or `diskSpaceWarningLevelRatio`). The active segment
//! never goes, nor one the last checkpoint does not lie past (recovery scans from it).
//!
//! Why appends never stall on it: one step removes at most one segment, and steps are at
//! least `deleteCommitLogFilesInterval` apart; a step's synchronous work is bounded (one
//! binary search and a front drain per queue, one pass over the shard's consumer offsets, and
//! the index hits in batches of [`INDEX_TRIM_BATCH`] with a yield between); its I/O (the
//! checkpoint, the unlink through the disk seam's io_uring side ring on the real disk, the
//! directory sync) is awaited like any other, never blocking the executor; it takes no lock
//! an append takes (only the persist lock, which appends never wait on).
//!
//! Order, for crash safety: stop serving below the segment's end → persist (so the queue
//! files hold every entry up to there) → trim (each queue's new min offset by a binary
//! search over its entries, through the page cache) → persist a checkpoint without the
//! segment → unlink the queue files wholly below their new min offsets → unlink the segment
//! → sync the directories. A crash before the
//! checkpoint leaves the segment referenced and present; after it, unreferenced and maybe
//! present, removed again by the next step.

use super::Shard;
use crate::consume_queue::pages::Trimmed;
use crate::error::Result;
use crate::io::{Clock, Disk};
use crate::key_index::{index_file_path, keyed_index_file_path, sealed_path};
use crate::schedule::SCHEDULE_TOPIC;
use std::collections::{BTreeMap, HashMap};

/// Index hits dropped per batch before yielding: a segment of 1 KiB records holds ~1 M
/// hits; at ~50 ns each a batch costs ~0.2 ms of the executor.
pub const INDEX_TRIM_BATCH: usize = 4096;
/// Lagging (group, queue) pairs one removal lists in full; the rest are only counted.
pub const LAGS_LISTED_MAX: usize = 64;
/// Topics deleted while their records are still in the log (one entry each until its last
/// record's segment goes); as many as the broker's topic table holds.
pub const DELETED_TOPICS_MAX: usize = 100_000;

/// Why a segment was removed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RemovalReason {
    /// Its newest record was stored at `newest_ms`, `fileReservedTime` or more ago.
    Expired { newest_ms: i64 },
    /// The partition was `used_ratio` full, above the forcible ratio.
    Forced { used_ratio: f64 },
}

/// A group (or the delay-level delivery) that had not consumed what was removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lag {
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    /// Its committed offset (or delivery progress).
    pub committed: i64,
    /// The queue's min offset after the removal.
    pub min_offset: i64,
}

/// What one retention step removed.
#[derive(Clone, Debug, PartialEq)]
pub struct Removal {
    /// Local start offset of the removed segment; everything below its end is gone.
    pub segment: u64,
    pub segment_end: u64,
    pub reason: RemovalReason,
    /// Queue entries trimmed with it.
    pub entries: u64,
    /// Up to [`LAGS_LISTED_MAX`] lagging (group, queue) pairs.
    pub lagging: Vec<Lag>,
    /// Messages removed that some group had not consumed yet (summed over groups).
    pub unconsumed: u64,
}

/// Totals since the shard opened, for operators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionStats {
    pub segments_removed: u64,
    /// Of those, removed by disk usage before they expired.
    pub segments_forced: u64,
    pub bytes_removed: u64,
    /// Removals that hit a group which had not consumed them, as (group, queue) pairs.
    pub lagging_queues: u64,
    /// Messages removed before some group consumed them (summed over groups).
    pub messages_unconsumed: u64,
}

/// The newest store time of each segment on disk (Apache looks at the file's mtime).
#[derive(Default)]
pub(super) struct SegmentTimes(BTreeMap<u64, i64>);

impl From<Vec<(u64, i64)>> for SegmentTimes {
    fn from(times: Vec<(u64, i64)>) -> Self {
        Self(times.into_iter().collect())
    }
}

impl SegmentTimes {
    /// A record stored at `ms` in the segment at `start` (per append: one map lookup).
    pub(super) fn note(&mut self, start: u64, ms: i64) {
        match self.0.last_entry() {
            Some(mut last) if *last.key() == start => *last.get_mut() = (*last.get()).max(ms),
            _ => {
                let newest = self.0.entry(start).or_insert(ms);
                *newest = (*newest).max(ms);
            }
        }
    }

    /// Keeps the times of `segments` only, timing one without a time at `now_ms` (a store
    /// from before retention: its segments expire `fileReservedTime` after the upgrade).
    pub(super) fn keep_only(&mut self, segments: &[u64], now_ms: i64) {
        self.0.retain(|start, _| segments.contains(start));
        for start in segments {
            self.0.entry(*start).or_insert(now_ms);
        }
    }

    pub(super) fn newest(&self, start: u64) -> Option<i64> {
        self.0.get(&start).copied()
    }

    pub(super) fn remove(&mut self, start: u64) {
        self.0.remove(&start);
    }

    /// The times of `segments`, for the checkpoint.
    pub(super) fn of(&self, segments: &[u64]) -> Vec<(u64, i64)> {
        segments
            .iter()
            .filter_map(|s| self.0.get(s).map(|t| (*s, *t)))
            .collect()
    }
}

/// Deleted topics whose records are still in the log: topic → log end at its deletion.
#[derive(Default)]
pub(super) struct TopicTombstones(HashMap<String, u64>);

impl From<Vec<(String, u64)>> for TopicTombstones {
    fn from(list: Vec<(String, u64)>) -> Self {
        Self(list.into_iter().collect())
    }
}

impl TopicTombstones {
    /// Whether the record at `local` of `topic` belongs to a deleted incarnation.
    pub(super) fn covers(&self, topic: &str, local: u64) -> bool {
        self.0.get(topic).is_some_and(|end| local < *end)
    }

    /// Where the topic's current incarnation begins (0 if it was never deleted).
    pub(super) fn end_of(&self, topic: &str) -> u64 {
        self.0.get(topic).copied().unwrap_or(0)
    }

    pub(super) fn insert(&mut self, topic: &str, end: u64) -> Result<()> {
        if !self.0.contains_key(topic) && self.0.len() >= DELETED_TOPICS_MAX {
            return Err(crate::error::StoreError::LimitReached("deleted topics"));
        }
        let held = self.0.entry(topic.to_owned()).or_insert(end);
        *held = (*held).max(end);
        Ok(())
    }

    /// Caps every deletion point at the recovered log end (a crash took back what lay past
    /// it); returns whether one moved. New records go from that end on, so they must not
    /// count as the deleted incarnation's.
    pub(super) fn clamp_to(&mut self, log_end: u64) -> bool {
        let mut moved = false;
        for end in self.0.values_mut() {
            if *end > log_end {
                *end = log_end;
                moved = true;
            }
        }
        moved
    }

    /// Forgets the topics none of whose old records lies at or above `log_min` any more.
    pub(super) fn forget_below(&mut self, log_min: u64) {
        self.0.retain(|_, end| *end > log_min);
    }

    pub(super) fn list(&self) -> Vec<(String, u64)> {
        let mut list: Vec<(String, u64)> = self.0.iter().map(|(t, e)| (t.clone(), *e)).collect();
        list.sort();
        list
    }
}

impl<D: Disk, C: Clock> Shard<D, C> {
    /// Removes the oldest segment if it is due (see the module doc); `None` when nothing is.
    /// One step at a time: a call while another runs returns `None`.
    pub async fn retention_step(&self) -> Result<Option<Removal>> {
        if self.retaining.replace(true) {
            return Ok(None);
        }
        let _running = crate::commit_log::OnDrop(Some(|| self.retaining.set(false)));
        let start = self.log.first_segment();
        let end = start + self.log.segment_bytes();
        // Recovery scans from the checkpoint, which lies at or below the durable boundary:
        // a segment it has not passed yet stays.
        if start == self.log.active_segment() || self.log.durable_boundary().local < end {
            return Ok(None);
        }
        let Some(reason) = self.removal_reason(start).await? else {
            return Ok(None);
        };
        // From here on nothing below `end` is served.
        self.served_from.set(self.served_from.get().max(end));
        while !self.index.borrow_mut().trim_below(end, INDEX_TRIM_BATCH) {
            futures_lite::future::yield_now().await;
        }
        let (entries, lags) = {
            let _exclusive = self.persist_lock().await;
            // Every entry below the durable boundary (so of the segment) into its files
            // first: the binary searches for the new min offsets read them there.
            self.persist_once().await?;
            let trimmed = self.trim_queues(end).await?;
            let entries = trimmed.values().map(|t| t.new - t.old).sum();
            let lags = self.lags(&trimmed);
            self.index.borrow_mut().forget_segment(start);
            self.deleted_topics.borrow_mut().forget_below(end);
            self.persist_once().await?;
            // The checkpoint no longer names entries of these files.
            for ((topic, queue_id), trim) in &trimmed {
                if !trim.files.is_empty() {
                    (self.queue_store())
                        .remove_files((topic, *queue_id), trim.id, Some(trim.files.end))
                        .await?;
                }
            }
            (entries, lags)
        };
        self.log.remove_first_segment(start).await?;
        let mut removed = false;
        for file in [
            index_file_path(&self.config.dir, start),
            keyed_index_file_path(&self.config.dir, start),
            sealed_path(&self.config.dir, start),
        ] {
            removed |= super::remove_if_there(&self.disk, &file).await?;
        }
        if removed {
            self.disk.sync_dir(&self.path("index")).await?;
        }
        self.segment_times.borrow_mut().remove(start);
        let unconsumed: u64 = lags
            .iter()
            .map(|(lag, old_min)| (lag.min_offset - lag.committed.max(*old_min)) as u64)
            .sum();
        let removal = Removal {
            segment: start,
            segment_end: end,
            reason,
            entries,
            unconsumed,
            lagging: lags
                .iter()
                .take(LAGS_LISTED_MAX)
                .map(|(lag, _)| lag.clone())
                .collect(),
        };
        self.account(&removal, lags.len());
        Ok(Some(removal))
    }

    /// Retention's loop; spawn it on the shard's executor beside the flusher. Never returns.
    /// A failed step (e.g. a full disk refusing the checkpoint) is retried at the next check.
    pub async fn run_retention(&self) {
        let config = self.config.retention.clone();
        loop {
            if let Err(err) = self.check_disk_usage().await {
                tracing::warn!(shard = self.config.shard_id, %err, "disk usage unknown");
            }
            let pause = match self.retention_step().await {
                Ok(Some(_)) => config.removal_interval,
                Ok(None) => config.check_interval,
                Err(err) => {
                    tracing::warn!(shard = self.config.shard_id, %err, "retention step failed");
                    config.check_interval
                }
            };
            self.clock.sleep(pause).await;
        }
    }

    /// Marks the disk full while the partition is fuller than `diskSpaceWarningLevelRatio`,
    /// so appends are refused, and clears the mark once it is not (Apache's
    /// `isSpaceToDelete`); logs each change. Returns the used ratio.
    pub async fn check_disk_usage(&self) -> Result<f64> {
        let used_ratio = self.disk.space(&self.config.dir).await?.used_ratio();
        let warning_ratio = self.config.retention.warning_ratio;
        let full = used_ratio > warning_ratio;
        let was_full = self.disk_full.replace(full.then_some(used_ratio)).is_some();
        let shard = self.config.shard_id;
        if full && !was_full {
            tracing::error!(
                shard,
                used_ratio,
                warning_ratio,
                "disk above diskSpaceWarningLevelRatio: marked full, appends refused"
            );
        } else if !full && was_full {
            tracing::info!(
                shard,
                used_ratio,
                "disk below diskSpaceWarningLevelRatio: appends resume"
            );
        }
        Ok(used_ratio)
    }

    pub fn retention_stats(&self) -> RetentionStats {
        *self.retention.borrow()
    }

    /// Why the segment at `start` is due, if it is.
    async fn removal_reason(&self, start: u64) -> Result<Option<RemovalReason>> {
        let config = &self.config.retention;
        let now = self.clock.now_ms();
        if let Some(newest_ms) = self.segment_times.borrow().newest(start) {
            let reserved = i64::try_from(config.file_reserved.as_millis()).unwrap_or(i64::MAX);
            if now >= newest_ms.saturating_add(reserved) {
                return Ok(Some(RemovalReason::Expired { newest_ms }));
            }
        }
        if !config.clean_forcibly_enable {
            return Ok(None);
        }
        let used_ratio = self.disk.space(&self.config.dir).await?.used_ratio();
        let forcible = config.clean_forcibly_ratio.min(config.warning_ratio);
        Ok((used_ratio > forcible).then_some(RemovalReason::Forced { used_ratio }))
    }

    /// Trims every queue below `end`; returns the queues that lost entries, with their old
    /// and new min offsets and the files now wholly below them. A queue none of whose
    /// entries lies below `end` costs one comparison (its first entry's log offset is held).
    async fn trim_queues(&self, end: u64) -> Result<HashMap<(String, i32), Trimmed>> {
        let below: Vec<(String, i32)> = (self.queues.borrow().iter())
            .filter(|(_, _, q)| q.first_local.is_some_and(|first| first < end))
            .map(|(topic, queue_id, _)| (topic.to_owned(), queue_id))
            .collect();
        let mut trimmed = HashMap::new();
        for (topic, queue_id) in below {
            let store = self.queue_store();
            if let Some(trim) = store.trim_below(&topic, queue_id, end).await? {
                trimmed.insert((topic, queue_id), trim);
            }
        }
        Ok(trimmed)
    }

    /// The groups (and delay-level deliveries) whose position lies below a trimmed queue's
    /// new min offset, each with the queue's old min.
    fn lags(&self, trimmed: &HashMap<(String, i32), Trimmed>) -> Vec<(Lag, i64)> {
        let mut lags = Vec::new();
        let mut behind = |group: &str, topic: &str, queue_id: i32, committed: i64| {
            let key = (topic.to_owned(), queue_id);
            if let Some(&Trimmed { old, new, .. }) = trimmed.get(&key) {
                if committed < new as i64 {
                    let lag = Lag {
                        group: group.to_owned(),
                        topic: key.0,
                        queue_id,
                        committed,
                        min_offset: new as i64,
                    };
                    lags.push((lag, old as i64));
                }
            }
        };
        for ((group, topic, queue_id), committed) in self.offsets.borrow().iter() {
            behind(group, topic, *queue_id, *committed);
        }
        for level in 1..=self.config.delay_levels.count() {
            let delivered = self.schedule_offset(level);
            behind(
                "(delay-level delivery)",
                SCHEDULE_TOPIC,
                level as i32 - 1,
                delivered,
            );
        }
        lags
    }

    /// Counts a removal and logs it, naming every group it outran.
    fn account(&self, removal: &Removal, lagging: usize) {
        let bytes = self.log.segment_bytes();
        {
            let mut stats = self.retention.borrow_mut();
            stats.segments_removed += 1;
            stats.segments_forced += matches!(removal.reason, RemovalReason::Forced { .. }) as u64;
            stats.bytes_removed += bytes;
            stats.lagging_queues += lagging as u64;
            stats.messages_unconsumed += removal.unconsumed;
        }
        let shard = self.config.shard_id;
        tracing::info!(
            shard,
            segment = removal.segment,
            reason = ?removal.reason,
            entries = removal.entries,
            "retention removed a commit-log segment"
        );
        for lag in &removal.lagging {
            tracing::warn!(
                shard,
                group = %lag.group,
                topic = %lag.topic,
                queue_id = lag.queue_id,
                committed = lag.committed,
                min_offset = lag.min_offset,
                "retention removed messages a group had not consumed yet"
            );
        }
        if lagging > removal.lagging.len() {
            tracing::warn!(
                shard,
                more = lagging - removal.lagging.len(),
                "retention outran further (group, queue) pairs"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_times_keep_the_newest_record_of_each_segment() {
        let mut times = SegmentTimes::default();
        times.note(0, 100);
        times.note(0, 90);
        times.note(4096, 200);
        times.note(0, 150);
        assert_eq!(
            (times.newest(0), times.newest(4096)),
            (Some(150), Some(200))
        );
        times.keep_only(&[4096, 8192], 999);
        assert_eq!(times.of(&[0, 4096, 8192]), [(4096, 200), (8192, 999)]);
    }

    #[test]
    fn tombstones_cover_the_old_incarnation_until_its_records_are_gone() {
        let mut dead = TopicTombstones::default();
        dead.insert("T", 500).unwrap();
        assert!(dead.covers("T", 499) && !dead.covers("T", 500) && !dead.covers("U", 1));
        dead.insert("T", 300).unwrap();
        assert_eq!(dead.end_of("T"), 500, "a later deletion covers more");
        dead.forget_below(400);
        assert_eq!(dead.list(), [("T".to_owned(), 500)]);
        dead.forget_below(500);
        assert!(dead.list().is_empty());
    }
}
