//! One shard's storage engine: the API the broker calls. It joins the commit log, the
//! consume queues, the key index, consumer offsets and the checkpoint, and recovers them all
//! at [`Shard::open`].
//!
//! Owned by one glommio executor; everything is `Rc`/`RefCell`, and no borrow is held across
//! an await. Directory layout: `commitlog/`, `consumequeue/<topic>/<queueId>/`, `index/keys`,
//! `checkpoint`, `consumer_offsets`.

use crate::checkpoint::{Checkpoint, IndexFiles};
use crate::commit_log::{CommitLog, LogStats, OnDrop, TRAILER_BYTES};
use crate::config::{FlushMode, ShardConfig};
use crate::consume_queue::journal::{self, RangeJournal};
use crate::consume_queue::load::load_queues;
use crate::consume_queue::pages::{PageCacheStats, QueueFiles, QueueStore};
use crate::consume_queue::{CqEntry, QueueMap};
use crate::consumer_offsets::ConsumerOffsets;
use crate::error::{DiskFull, Result, StoreError};
use crate::event::Event;
use crate::io::{Clock, Disk};
use crate::key_index::{
    parse_index_file_name, persist_index, seal_segments, KeyHit, KeyIndex, KeyQuery, RecordKeys,
};
use crate::meta_file::{read_meta, write_meta, MetaReader, MetaWriter};
use crate::offset::PhysicalOffset;
use crate::record::{
    encode_into, encoded_len, find_properties, peek_header, property, tag_hash_code, Message,
    RecordError, RecordView, StoreFields, RECORD_BYTES_MAX, RECORD_BYTES_MIN,
};
use crate::recovery::scan_log;
use crate::timer::{TIMER_STAGES_MAX, TIMER_TOPIC};
use crate::transaction;
use bytes::Bytes;
use retention::{SegmentTimes, TopicTombstones};
use schedule_delivery::{ScheduleProgress, LEVELS_PROGRESS, TIMER_PROGRESS};
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::time::Duration;

mod delete_topic;
mod index_files;
mod retention;
mod schedule_delivery;
pub use retention::{Lag, Removal, RemovalReason, RetentionStats};
pub use schedule_delivery::{DeliveryTurn, Scheduled};

/// What a record's consume-queue tagsCode is made from, at append and again at recovery.
struct TagsCodeOf<'a> {
    topic: &'a str,
    queue_id: i32,
    queue_offset: i64,
    /// The record's store time (the append's clock, or the stored record's).
    stored_ms: i64,
    properties: &'a str,
    body: &'a [u8],
    /// The hash of its TAGS.
    tag_hash: i64,
}

/// A message's properties as text (the record format stores them as UTF-8).
fn properties_text(message: &Message) -> std::result::Result<&str, RecordError> {
    std::str::from_utf8(&message.properties).map_err(|_| RecordError::InvalidUtf8("properties"))
}

/// A transaction queue's origin, a timer's or a delayed message's due time, else the TAGS
/// hash: one rule, so recovery rebuilds exactly the entries the appends made.
fn stored_tags_code(config: &ShardConfig, r: &TagsCodeOf<'_>) -> i64 {
    transaction::tags_code(r.topic, r.queue_offset, r.properties, r.body)
        .or_else(|| {
            config
                .timers
                .tags_code(r.topic, r.queue_id, r.stored_ms, r.properties)
        })
        .unwrap_or_else(|| {
            config
                .delay_levels
                .tags_code(r.topic, r.queue_id, r.stored_ms, r.tag_hash)
        })
}

/// Most entries one queue read looks at when filtering by tag (RocketMQ's
/// `maxFilterMessageCount` is 16 000), so a selective filter cannot scan a queue unbounded.
pub const FILTER_SCAN_ENTRIES_MAX: usize = 16_000;
/// Most records one queue read returns (RocketMQ pulls 32 by default; clients cap at 1024).
pub const READ_COUNT_MAX: usize = 1024;
/// Most records one key query returns (RocketMQ's `maxMsgsNumBatch` is 64).
pub const QUERY_RESULTS_MAX: usize = 64;
/// Most messages in one batch append; RocketMQ's producers keep batches under 4 MiB anyway.
pub const BATCH_MESSAGES_MAX: usize = 4096;

/// What an append reports for each message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendResult {
    /// Client-visible physical offset (shard id in the high bits).
    pub physical_offset: i64,
    pub queue_offset: i64,
    pub store_timestamp_ms: i64,
    /// Record bytes (without our trailer).
    pub wrote_bytes: usize,
}

/// The result of reading one queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueRead {
    /// Stored records, byte-identical to the log, ready to be written to a socket.
    pub records: Vec<Bytes>,
    /// Offset to continue from (past filtered-out entries too).
    pub next_offset: i64,
    pub min_offset: i64,
    /// One past the last readable entry.
    pub max_offset: i64,
}

/// One consume-queue entry as the broker's followers of system queues read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEntry {
    pub queue_offset: i64,
    /// Client-visible physical offset (shard id in the high bits): entries of one shard's
    /// queues compare in log order by it.
    pub physical_offset: i64,
    /// The consume queue's tagsCode (see `transaction::tags_code`, `DelayLevels::tags_code`).
    pub tags_code: i64,
}

/// What a read of one queue asks for.
#[derive(Clone, Copy, Debug)]
pub struct QueueReadRequest<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub offset: i64,
    pub max_count: usize,
    pub max_bytes: usize,
    /// Tag hash codes to keep (the subscription's codeSet); `None` keeps everything.
    pub tag_filter: Option<&'a [i32]>,
    /// A test of each record read (the broker's SQL92 selector over its properties), after
    /// the tag filter; records it refuses are skipped like filtered entries, and count
    /// against neither `max_count` nor `max_bytes`.
    pub record_filter: Option<RecordFilter<'a>>,
}

/// See [`QueueReadRequest::record_filter`].
#[derive(Clone, Copy)]
pub struct RecordFilter<'a>(pub &'a dyn Fn(&Bytes) -> bool);

impl std::fmt::Debug for RecordFilter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordFilter")
    }
}

/// Makes sure `config` describes the data in its directory: recovery under another shard id
/// or segment size would read valid records as invalid and truncate them away. The first
/// open records both in `shard.meta`.
async fn check_identity<D: Disk>(disk: &D, config: &ShardConfig) -> Result<()> {
    let path = config.dir.join("shard.meta");
    let expected = {
        let mut w = MetaWriter::default();
        w.u32(u32::from(config.shard_id))
            .u64(config.log.segment_bytes);
        w.0
    };
    match read_meta(disk, &path).await? {
        None => write_meta(disk, &path, 1, &expected).await,
        Some((_, found)) if found == expected => Ok(()),
        Some((_, found)) => {
            let mut r = MetaReader::new(&found, "shard.meta");
            let (shard_id, segment_bytes) = (r.u32()?, r.u64()?);
            Err(StoreError::Config(format!(
                "{} holds shard {shard_id} with {segment_bytes}-byte segments; configured: shard {} with {}-byte segments",
                config.dir.display(),
                config.shard_id,
                config.log.segment_bytes
            )))
        }
    }
}

/// The timer stages a shard delivers: those its configuration places records in, and any
/// further one holding records from a run with a longer `timerMaxDelaySec` or finer precision.
fn timer_stages_to_deliver(config: &ShardConfig, queues: &QueueMap) -> usize {
    let stored = queues
        .iter()
        .filter(|(topic, _, _)| *topic == TIMER_TOPIC)
        .map(|(_, queue_id, _)| queue_id as usize + 1)
        .max()
        .unwrap_or(0);
    config
        .timers
        .stages_used()
        .max(stored)
        .min(TIMER_STAGES_MAX)
}

/// One shard's storage engine.
pub struct Shard<D: Disk, C: Clock> {
    config: ShardConfig,
    disk: D,
    clock: C,
    log: CommitLog<D>,
    queues: RefCell<QueueMap>,
    /// The queues' page cache and open files.
    queue_files: RefCell<QueueFiles<D::File>>,
    /// Where the checkpoint's queue ranges are written.
    range_journal: RefCell<RangeJournal<D::File>>,
    index: RefCell<KeyIndex<D::File>>,
    offsets: RefCell<ConsumerOffsets>,
    /// Delivery progress of the delay levels (next offset of each schedule queue).
    schedule: RefCell<ScheduleProgress>,
    /// The newest store time of each segment: when it expires.
    segment_times: RefCell<SegmentTimes>,
    /// Topics deleted while records of theirs are still in the log.
    deleted_topics: RefCell<TopicTombstones>,
    /// Local offset below which nothing is served: the end of the segment retention is
    /// removing or removed.
    served_from: Cell<u64>,
    retention: RefCell<RetentionStats>,
    /// Set while one retention step runs (one at a time).
    retaining: Cell<bool>,
    /// The partition's used ratio while it is above `diskSpaceWarningLevelRatio`: appends
    /// are refused meanwhile (set and cleared by [`Shard::check_disk_usage`]).
    disk_full: Cell<Option<f64>>,
    /// Index files of keys (a store made before hashed entries) whose entries are pending:
    /// removed once a persist has rewritten them.
    keyed_index_files: RefCell<Vec<PathBuf>>,
    /// Delivery progress of the timer stages (next offset of each stage queue).
    timer: RefCell<ScheduleProgress>,
    checkpoint_seq: Cell<u64>,
    /// The checkpoint payload last written (or found at start): a persist that would write
    /// the same bytes again skips it, so an idle shard does not rewrite and fsync its
    /// checkpoint every second.
    checkpoint_written: RefCell<Vec<u8>>,
    persisting: Cell<bool>,
    persisted: Event,
}

/// Unlinks `path`; one already gone is fine (a removal repeated after a crash or a failure,
/// a file never written). Returns whether it was there.
pub(crate) async fn remove_if_there<D: Disk>(disk: &D, path: &std::path::Path) -> Result<bool> {
    match disk.remove(path).await {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

impl<D: Disk, C: Clock> Shard<D, C> {
    fn path(&self, name: &str) -> PathBuf {
        self.config.dir.join(name)
    }

    /// Opens (or creates) the shard in `config.dir` and recovers it: loads the checkpointed
    /// consume queues and index, validates the log from the checkpoint on, truncates it at the
    /// first invalid entry and rebuilds the queues and index past the checkpoint (skipping
    /// records of deleted topics).
    pub async fn open(config: ShardConfig, disk: D, clock: C) -> Result<Self> {
        config.validate()?;
        // Wall time of each recovery stage, for the log line below only (the simulated clock
        // does not move during an open, so the clock seam would say nothing).
        let started = std::time::Instant::now();
        let dir = &config.dir;
        for sub in ["commitlog", "consumequeue", "index"] {
            disk.create_dir_all(&dir.join(sub)).await?;
        }
        check_identity(&disk, &config).await?;
        let (checkpoint_seq, checkpoint_written) = read_meta(&disk, &dir.join("checkpoint"))
            .await?
            .unwrap_or_default();
        let mut checkpoint = if checkpoint_written.is_empty() {
            Checkpoint::default()
        } else {
            Checkpoint::decode(&checkpoint_written)?
        };
        if !checkpoint.single_queue_files {
            checkpoint.queues = journal::load(&disk, dir, checkpoint.queue_journal).await?;
        }
        journal::remove_stale(&disk, dir, checkpoint.queue_journal.generation).await?;
        let shard_id = config.shard_id;
        let mut queues = load_queues(&disk, dir, config.shard_id, &checkpoint).await?;
        let queues_loaded = started.elapsed();
        let segment_bytes = config.log.segment_bytes;
        let mut index = KeyIndex::new(config.index_entries_max, segment_bytes);
        let keyed_index_files =
            index_files::load(&disk, dir, &mut index, &checkpoint.index).await?;
        let index_loaded = started.elapsed();
        let (queue_entries_loaded, index_hits_loaded, index_hits_sealed) = (
            queues.iter().map(|(_, _, q)| q.tail.len()).sum::<usize>(),
            index.hits(),
            index.sealed_hits(),
        );
        let deleted = TopicTombstones::from(checkpoint.deleted_topics.clone());
        let mut segment_times = SegmentTimes::from(checkpoint.segments.clone());

        let end = scan_log(
            &disk,
            &dir.join("commitlog"),
            segment_bytes,
            checkpoint.log,
            |view, local| {
                if deleted.covers(view.topic(), local) {
                    return true;
                }
                let physical = PhysicalOffset::new(shard_id, local).to_wire();
                let tag_hash = stored_tags_code(
                    &config,
                    &TagsCodeOf {
                        topic: view.topic(),
                        queue_id: view.queue_id(),
                        queue_offset: view.queue_offset(),
                        stored_ms: view.store_timestamp_ms(),
                        properties: view.properties(),
                        body: &view.body(),
                        tag_hash: view.tag_hash_code(),
                    },
                );
                let queue = queues.get_or_create(view.topic(), view.queue_id());
                if view.queue_offset() != queue.end() as i64 || view.physical_offset() != physical {
                    return false;
                }
                queue.push(CqEntry {
                    local,
                    size: view.total_size() as u32,
                    tag_hash,
                });
                let hit = KeyHit {
                    local,
                    store_timestamp_ms: view.store_timestamp_ms(),
                };
                index.add(view.topic(), RecordKeys::of(view.properties()), hit);
                segment_times.note(local - local % segment_bytes, hit.store_timestamp_ms);
                true
            },
        )
        .await?;
        let scanned = started.elapsed();
        let entry_bytes_max = config.entry_bytes_max();
        let log = CommitLog::open(
            disk.clone(),
            dir.join("commitlog"),
            config.log.clone(),
            entry_bytes_max,
            end,
        )
        .await?;
        let first = log.first_segment();
        // Segments the checkpoint does not time (a store from before retention) count from now.
        segment_times.keep_only(&log.segments(), clock.now_ms());
        let mut deleted = deleted;
        deleted.forget_below(first);
        // Persisted before any append, or a second crash would take new records for old.
        let tombstones_moved = deleted.clamp_to(end.local);
        let offsets = match read_meta(&disk, &dir.join("consumer_offsets")).await? {
            Some((seq, payload)) => ConsumerOffsets::decode(seq, &payload)?,
            None => ConsumerOffsets::default(),
        };
        let levels = config.delay_levels.count();
        let schedule =
            ScheduleProgress::load(&disk, dir, &LEVELS_PROGRESS, levels, &queues).await?;
        let stages = timer_stages_to_deliver(&config, &queues);
        let timer = ScheduleProgress::load(&disk, dir, &TIMER_PROGRESS, stages, &queues).await?;
        let queue_files = QueueFiles::new(config.cq_page_cache_bytes);
        let range_journal = RangeJournal::new(checkpoint.queue_journal, checkpoint.queues.len());
        let shard = Self {
            config,
            disk,
            clock,
            log,
            queues: RefCell::new(queues),
            queue_files: RefCell::new(queue_files),
            range_journal: RefCell::new(range_journal),
            index: RefCell::new(index),
            offsets: RefCell::new(offsets),
            schedule: RefCell::new(schedule),
            segment_times: RefCell::new(segment_times),
            deleted_topics: RefCell::new(deleted),
            served_from: Cell::new(first),
            retention: RefCell::new(RetentionStats::default()),
            retaining: Cell::new(false),
            disk_full: Cell::new(None),
            keyed_index_files: RefCell::new(keyed_index_files),
            timer: RefCell::new(timer),
            checkpoint_seq: Cell::new(checkpoint_seq),
            checkpoint_written: RefCell::new(checkpoint_written),
            persisting: Cell::new(false),
            persisted: Event::default(),
        };
        shard.remove_orphan_index_files().await?;
        // The paged files a single-file store was split into are named by a new checkpoint.
        if tombstones_moved || checkpoint.single_queue_files && !checkpoint.queues.is_empty() {
            shard.persist().await?;
        }
        // What recovery cost and where: the checkpointed consume queues' offsets and the key
        // index are loaded, the log is scanned from the checkpoint only.
        tracing::info!(
            shard = shard.config.shard_id,
            queue_entries_loaded,
            index_hits_loaded,
            index_hits_sealed,
            scanned_bytes = end.local - checkpoint.log.local,
            queues_ms = queues_loaded.as_millis() as u64,
            index_ms = (index_loaded - queues_loaded).as_millis() as u64,
            scan_ms = (scanned - index_loaded).as_millis() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "shard recovered"
        );
        Ok(shard)
    }

    /// Appends one message; resolves per the flush mode (after its bytes are durable under
    /// SYNC_FLUSH, at once under ASYNC_FLUSH).
    pub async fn append(&self, message: &Message) -> Result<AppendResult> {
        let results = self.append_batch(std::slice::from_ref(message)).await?;
        Ok(results[0])
    }

    /// Appends messages as one unit in one segment with consecutive log positions (and
    /// consecutive queue offsets for messages of the same queue).
    pub async fn append_batch(&self, messages: &[Message]) -> Result<Vec<AppendResult>> {
        if messages.is_empty() || messages.len() > BATCH_MESSAGES_MAX {
            return Err(StoreError::LimitReached("messages per batch"));
        }
        // Check every limit before anything is stored. The loop below works each length out
        // again rather than keep them: a vector of them was an allocation per append.
        let mut entry_bytes = 0;
        for message in messages {
            entry_bytes += encoded_len(message, &self.config.store_host)? + TRAILER_BYTES;
            properties_text(message)?;
        }
        if let Some(used_ratio) = self.disk_full.get() {
            return Err(StoreError::DiskFull(DiskFull::AboveWarningLevel {
                used_ratio,
                warning_ratio: self.config.retention.warning_ratio,
            }));
        }
        self.log.reserve(entry_bytes).await?;
        // From here to the last push nothing awaits: positions and queue offsets are assigned
        // in the same order, with no other append in between.
        let now = self.clock.now_ms();
        let mut results = Vec::with_capacity(messages.len());
        // Under ASYNC_FLUSH a queue's readers are woken as its record is pushed (they run once
        // this append has returned); under SYNC_FLUSH once the batch is durable.
        let sync_flush = self.log.flush_mode() == FlushMode::SyncFlush;
        let mut durable_waits = Vec::new();
        {
            let mut queues = self.queues.borrow_mut();
            let mut index = self.index.borrow_mut();
            let mut segment_times = self.segment_times.borrow_mut();
            for message in messages {
                let checked = "checked before the reservation";
                let size = encoded_len(message, &self.config.store_host).expect(checked);
                let properties = properties_text(message).expect(checked);
                // One scan of the properties for what the consume queue and the key index read.
                let [tags, uniq, keys] = find_properties(
                    properties,
                    [property::TAGS, property::UNIQ_KEY, property::KEYS],
                );
                let local = self.log.write_pos();
                let physical = PhysicalOffset::new(self.config.shard_id, local).to_wire();
                let queue = queues.get_or_create(&message.topic, message.queue_id);
                let queue_offset = queue.end() as i64;
                let tag_hash = stored_tags_code(
                    &self.config,
                    &TagsCodeOf {
                        topic: &message.topic,
                        queue_id: message.queue_id,
                        queue_offset,
                        stored_ms: now,
                        properties,
                        body: &message.body,
                        tag_hash: tag_hash_code(tags),
                    },
                );
                let store = StoreFields {
                    queue_offset,
                    physical_offset: physical,
                    store_timestamp_ms: now,
                    store_host: self.config.store_host,
                };
                let pushed = self
                    .log
                    .push_with(size, |out| encode_into(message, &store, out))?;
                debug_assert_eq!(pushed, local);
                queue.push(CqEntry {
                    local,
                    size: size as u32,
                    tag_hash,
                });
                let hit = KeyHit {
                    local,
                    store_timestamp_ms: now,
                };
                index.add(&message.topic, RecordKeys { uniq, keys }, hit);
                segment_times.note(self.log.segment_start_of(local), now);
                if sync_flush {
                    durable_waits.push(queue.event.clone());
                } else {
                    queue.event.notify();
                }
                results.push(AppendResult {
                    physical_offset: physical,
                    queue_offset,
                    store_timestamp_ms: now,
                    wrote_bytes: size,
                });
            }
        }
        if sync_flush {
            let end = self.log.write_pos();
            for event in durable_waits {
                self.log.notify_when_durable(end, event);
            }
            self.log.wait_durable(end).await?;
        }
        Ok(results)
    }

    /// Persists consume queues, index, consumer offsets and the checkpoint every `interval`
    /// (RocketMQ flushes its consume queues every second); spawn it beside the flusher. A
    /// failed round is retried at the next one. Never returns.
    pub async fn run_persister(&self, interval: Duration) {
        loop {
            self.clock.sleep(interval).await;
            let _ = self.persist().await;
        }
    }

    /// Makes everything appended so far durable.
    pub async fn flush(&self) -> Result<()> {
        self.log.flush_to(self.log.write_pos()).await
    }

    /// ASYNC_FLUSH's background flusher; spawn it on the shard's executor. Never returns.
    pub async fn run_flusher(&self) {
        self.log.run_flusher(&self.clock).await
    }

    /// Smallest offset of a queue: where its first retained entry is (0 for a queue never
    /// trimmed or not there; the end for one whose every entry went with its segments).
    pub fn min_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let queues = self.queues.borrow();
        queues.get(topic, queue_id).map_or(0, |q| q.base as i64)
    }

    /// Entries of a resident queue (a transaction queue, held whole in memory) from `from` on
    /// (at least its min offset), at most `max`, in log order: every appended entry, durable
    /// yet or not, so that a follower sees an append as soon as it is made (what it learns is
    /// rebuilt from the log after a crash anyway). No record is read; of another queue only
    /// what memory holds is returned.
    pub fn queue_entries(
        &self,
        topic: &str,
        queue_id: i32,
        from: i64,
        max: usize,
    ) -> Vec<QueueEntry> {
        let queues = self.queues.borrow();
        let Some(queue) = queues.get(topic, queue_id) else {
            return Vec::new();
        };
        debug_assert!(queue.resident, "{topic} is not held whole");
        let from = u64::try_from(from).unwrap_or(0).max(queue.tail_from);
        let to = from.saturating_add(max as u64).min(queue.end());
        queue
            .tail_range(from, to)
            .zip(from..)
            .map(|(e, offset)| QueueEntry {
                queue_offset: offset as i64,
                physical_offset: PhysicalOffset::new(self.config.shard_id, e.local).to_wire(),
                tags_code: e.tag_hash,
            })
            .collect()
    }

    /// One past the last readable entry of a queue.
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let visible_end = self.log.visible_end();
        let queues = self.queues.borrow();
        queues
            .get(topic, queue_id)
            .map_or(0, |q| q.visible_end(visible_end) as i64)
    }

    /// Whether the record at `offset` of a queue is stored and still in memory (the hot
    /// tail): Apache's `checkInMemByConsumeOffset`, which decides whether a group with no
    /// offset starts at 0. Known for the queue's first entry and its tail in memory; false
    /// for an entry paged out (its record is older than the log's hot tail holds anyway).
    pub fn in_memory(&self, topic: &str, queue_id: i32, offset: i64) -> bool {
        let visible_end = self.log.visible_end();
        let local = {
            let queues = self.queues.borrow();
            let local = u64::try_from(offset).ok().and_then(|o| {
                let queue = queues.get(topic, queue_id)?;
                let first = queue.first_local.filter(|_| o == queue.base);
                first.or_else(|| queue.tail_get(o).map(|e| e.local))
            });
            match local {
                Some(local) if local < visible_end => local,
                _ => return false,
            }
        };
        self.log.in_memory(local)
    }

    /// Reads records of one queue from an offset, up to a count and a byte budget (at least
    /// one record if any matches), optionally keeping only some tag hash codes and records a
    /// filter accepts. Nothing below the queue's min offset is returned, even if retention
    /// trims it during the read.
    pub async fn read_queue(&self, request: QueueReadRequest<'_>) -> Result<QueueRead> {
        let min = self.min_offset(request.topic, request.queue_id);
        let max = self.max_offset(request.topic, request.queue_id);
        let mut read = QueueRead {
            records: Vec::new(),
            next_offset: request.offset,
            min_offset: min,
            max_offset: max,
        };
        if request.offset < min || request.offset >= max {
            return Ok(read);
        }
        let max_count = request.max_count.min(READ_COUNT_MAX);
        let filtered = request.tag_filter.is_some() || request.record_filter.is_some();
        let scan = if filtered {
            FILTER_SCAN_ENTRIES_MAX
        } else {
            max_count
        };
        let start = request.offset as u64;
        let end = (max as u64).min(start + scan as u64);
        let entries = (self.queue_store())
            .entries(request.topic, request.queue_id, start, end)
            .await?;
        let mut pending = entries.into_iter().peekable();
        let mut bytes = 0;
        // Rounds: choose what the count, the byte budget and the tag filter allow, read it
        // together, keep what the record filter accepts; without a record filter one round
        // is all.
        loop {
            let mut chosen: Vec<(u64, usize)> = Vec::new();
            let mut chosen_offsets: Vec<i64> = Vec::new();
            while let Some(entry) = pending.peek() {
                if read.records.len() + chosen.len() >= max_count {
                    break;
                }
                let wanted = request
                    .tag_filter
                    .is_none_or(|codes| codes.contains(&(entry.tag_hash as i32)));
                if wanted {
                    let first = read.records.is_empty() && chosen.is_empty();
                    if !first && bytes + entry.size as usize > request.max_bytes {
                        break;
                    }
                    bytes += entry.size as usize;
                    chosen.push((entry.local, entry.size as usize));
                    chosen_offsets.push(read.next_offset);
                }
                read.next_offset += 1;
                pending.next();
            }
            if chosen.is_empty() {
                return Ok(read);
            }
            let records = self.log.read_records(&chosen).await;
            // Retention may have trimmed the queue while the read waited (and removed the
            // segment it read from): what went is not served, whether the read failed or not.
            let min_now = self.min_offset(request.topic, request.queue_id);
            let trimmed = min_now > min;
            if trimmed {
                read.min_offset = min_now;
                read.next_offset = read.next_offset.max(min_now);
            }
            let records = match records {
                Ok(records) => records,
                Err(_) if trimmed => Vec::new(),
                Err(e) => return Err(e),
            };
            for ((record, offset), (_, size)) in records.into_iter().zip(chosen_offsets).zip(chosen)
            {
                if offset < min_now {
                    continue;
                }
                if request.record_filter.is_some_and(|f| !f.0(&record)) {
                    bytes -= size;
                    continue;
                }
                read.records.push(record);
            }
            if trimmed || request.record_filter.is_none() {
                return Ok(read);
            }
        }
    }

    /// Reads one record by its client-visible physical offset; nothing retention removed or
    /// of a deleted topic is found.
    pub async fn read_at(&self, physical_offset: i64) -> Result<Bytes> {
        let missing = || StoreError::NoSuchRecord(physical_offset);
        let physical = PhysicalOffset::from_wire(physical_offset).ok_or_else(missing)?;
        let local = physical.local();
        if physical.shard_id() != self.config.shard_id
            || local >= self.log.visible_end()
            || local < self.served_from.get()
        {
            return Err(missing());
        }
        let head = self.log.read(local, 8).await.map_err(|_| missing())?;
        let (size, _) = peek_header(&head).ok_or_else(missing)?;
        let size = usize::try_from(size).map_err(|_| missing())?;
        if !(RECORD_BYTES_MIN..=RECORD_BYTES_MAX).contains(&size)
            || local + size as u64 > self.log.visible_end()
        {
            return Err(missing());
        }
        let bytes = self.log.read(local, size).await.map_err(|_| missing())?;
        // A forged offset may land inside a record: only a whole record at that very offset
        // is an answer.
        match RecordView::parse(bytes) {
            Ok(view)
                if view.physical_offset() == physical_offset
                    && local >= self.served_from.get()
                    && !self.deleted_topics.borrow().covers(view.topic(), local) =>
            {
                Ok(view.into_bytes())
            }
            _ => Err(missing()),
        }
    }

    async fn store_timestamp_of(&self, entry: &CqEntry) -> Result<i64> {
        let bytes = self.log.read(entry.local, entry.size as usize).await?;
        Ok(RecordView::parse(bytes)?.store_timestamp_ms())
    }

    /// The first offset of a queue whose record was stored at or after `timestamp_ms`, by
    /// binary search over the retained entries: the min offset for a time before them all,
    /// the max offset for one after.
    pub async fn search_offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
    ) -> Result<i64> {
        let (mut lo, mut hi) = (
            self.min_offset(topic, queue_id) as u64,
            self.max_offset(topic, queue_id) as u64,
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let entry = self.queue_store().entry_at(topic, queue_id, mid).await?;
            let Some(entry) = entry else {
                let min = self.min_offset(topic, queue_id) as u64;
                if min <= mid {
                    // The queue was deleted meanwhile.
                    return Ok(lo as i64);
                }
                // Trimmed meanwhile: the answer lies at or above the new min.
                lo = min;
                hi = hi.max(lo);
                continue;
            };
            if self.store_timestamp_of(&entry).await? < timestamp_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo as i64)
    }

    /// The most recent records matching `query` (at most [`QUERY_RESULTS_MAX`]), in log order;
    /// none of a deleted topic's old incarnation nor below what retention removed.
    pub async fn query_by_key(&self, query: KeyQuery<'_>) -> Result<Vec<Bytes>> {
        let visible_end = self.log.visible_end();
        let capped = KeyQuery {
            max: query.max.min(QUERY_RESULTS_MAX),
            ..query
        };
        let served_from = self
            .served_from
            .get()
            .max(self.deleted_topics.borrow().end_of(query.topic));
        let locals = KeyIndex::query(&self.index, &capped, served_from).await?;
        let mut records = Vec::new();
        for local in locals.into_iter().filter(|l| *l < visible_end) {
            let physical = PhysicalOffset::new(self.config.shard_id, local).to_wire();
            match self.read_at(physical).await {
                Ok(record) => records.push(record),
                // Removed by retention since the lookup.
                Err(StoreError::NoSuchRecord(_)) if local < self.served_from.get() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(records)
    }

    /// Resolves once the queue has a readable entry at `offset` (or beyond): what a long
    /// poll waits on. Woken by the queue's own event, never by polling.
    pub async fn wait_for_offset(&self, topic: &str, queue_id: i32, offset: i64) -> Result<()> {
        loop {
            let (event, seen) = {
                let mut queues = self.queues.borrow_mut();
                let queue = queues.get_or_create(topic, queue_id);
                let seen = queue.event.version();
                if queue.visible_end(self.log.visible_end()) as i64 > offset {
                    return Ok(());
                }
                (queue.event.clone(), seen)
            };
            if event.waiter_count() >= self.config.queue_waiters_max {
                return Err(StoreError::LimitReached("queue waiters"));
            }
            event.changed(seen).await;
        }
    }

    pub fn consumer_offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.offsets.borrow().get(group, topic, queue_id)
    }

    /// The groups holding an offset of `topic` in this shard.
    pub fn groups_with_offsets(&self, topic: &str) -> Vec<String> {
        self.offsets.borrow().groups_of_topic(topic)
    }

    /// The topics `group` holds offsets of in this shard.
    pub fn topics_with_offsets(&self, group: &str) -> Vec<String> {
        self.offsets.borrow().topics_of_group(group)
    }

    pub fn set_consumer_offset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<()> {
        self.offsets
            .borrow_mut()
            .set(group, topic, queue_id, offset)
    }

    /// Persists consumer offsets (if changed), the consume queues and the index up to the
    /// durable part of the log, then the checkpoint that says so. Concurrent calls run one
    /// after the other.
    pub async fn persist(&self) -> Result<()> {
        let _exclusive = self.persist_lock().await;
        self.persist_once().await
    }

    /// Waits until no persist runs and keeps others out until the guard is dropped: held by
    /// a persist, and by whatever removes queues or index files (retention, topic deletion),
    /// so no persist has one of their files taken out meanwhile.
    async fn persist_lock(&self) -> OnDrop<impl FnOnce() + '_> {
        loop {
            let seen = self.persisted.version();
            if !self.persisting.get() {
                break;
            }
            self.persisted.changed(seen).await;
        }
        self.persisting.set(true);
        // Released even if the holder is dropped half-way, so the next one can run.
        OnDrop(Some(|| {
            self.persisting.set(false);
            self.persisted.notify();
        }))
    }

    /// One persist; the caller holds [`Shard::persist_lock`].
    async fn persist_once(&self) -> Result<()> {
        debug_assert!(self.persisting.get(), "persist without the lock");
        self.persist_schedule_progress().await?;
        let offsets = {
            let offsets = self.offsets.borrow();
            (offsets.changes != offsets.changes_persisted)
                .then(|| (offsets.seq + 1, offsets.changes, offsets.encode()))
        };
        if let Some((seq, changes, payload)) = offsets {
            write_meta(&self.disk, &self.path("consumer_offsets"), seq, &payload).await?;
            let mut offsets = self.offsets.borrow_mut();
            offsets.seq = seq;
            // Changes made while this copy was written stay due for the next persist.
            offsets.changes_persisted = changes;
        }
        let boundary = self.log.durable_boundary();
        let keys = self.queues.borrow().keys();
        (self.queue_store())
            .persist_all(&keys, boundary.local)
            .await?;
        persist_index(&self.index, &self.disk, &self.config.dir, boundary.local).await?;
        let sealable_below = boundary.local.min(self.log.active_segment());
        seal_segments(&self.index, &self.disk, &self.config.dir, sealable_below).await?;
        let (dir, journal) = (&self.config.dir, &self.range_journal);
        let ranges = journal::write_ranges(&self.disk, dir, journal, &self.queues).await?;
        let checkpoint = self.checkpoint_at(boundary).encode();
        if *self.checkpoint_written.borrow() != checkpoint {
            let seq = self.checkpoint_seq.get() + 1;
            write_meta(&self.disk, &self.path("checkpoint"), seq, &checkpoint).await?;
            self.checkpoint_seq.set(seq);
            *self.checkpoint_written.borrow_mut() = checkpoint;
        }
        if let Some(ranges) = ranges {
            journal::confirm_ranges(&self.disk, dir, journal, &self.queues, ranges).await?;
        }
        let keyed = std::mem::take(&mut *self.keyed_index_files.borrow_mut());
        if !keyed.is_empty() {
            // Their entries are in the `.hits` files the checkpoint names now.
            for path in &keyed {
                remove_if_there(&self.disk, path).await?;
            }
            self.disk.sync_dir(&self.path("index")).await?;
        }
        Ok(())
    }

    /// What the checkpoint at `boundary` holds (see `checkpoint.rs`).
    fn checkpoint_at(&self, boundary: crate::commit_log::LogPosition) -> Checkpoint {
        let index = self.index.borrow();
        let segments = self.segment_times.borrow().of(&self.log.segments());
        Checkpoint {
            log: boundary,
            queue_journal: self.range_journal.borrow().at(),
            queues: Vec::new(),
            segments,
            index: IndexFiles::PerSegment(
                index
                    .files
                    .iter()
                    .filter(|(_, f)| f.bytes > 0)
                    .map(|(start, f)| (*start, f.bytes))
                    .collect(),
            ),
            deleted_topics: self.deleted_topics.borrow().list(),
            single_queue_files: false,
        }
    }

    /// The queues with their files and page cache, for one read or write of them.
    fn queue_store(&self) -> QueueStore<'_, D> {
        QueueStore {
            disk: &self.disk,
            dir: &self.config.dir,
            shard_id: self.config.shard_id,
            queues: &self.queues,
            files: &self.queue_files,
        }
    }

    /// What the consume queues' page cache holds and has read.
    pub fn queue_page_cache(&self) -> PageCacheStats {
        self.queue_files.borrow().stats()
    }

    /// Where the checkpoint's queue ranges are: the journal's generation and valid bytes.
    pub fn queue_ranges_journal(&self) -> (u64, u64) {
        let at = self.range_journal.borrow().at();
        (at.generation, at.bytes)
    }

    /// Consume-queue entries held in memory (the queues' tails), beside the page cache.
    pub fn queue_entries_in_memory(&self) -> usize {
        self.queues
            .borrow()
            .iter()
            .map(|(_, _, q)| q.tail.len())
            .sum()
    }

    /// Index files of segments below the log's first one that a crash left behind (their
    /// removal follows the checkpoint that stopped naming them).
    async fn remove_orphan_index_files(&self) -> Result<()> {
        let dir = self.path("index");
        let first = self.log.first_segment();
        let mut removed = false;
        for name in self.disk.list_dir(&dir).await? {
            let start = parse_index_file_name(&name);
            let orphan = start.is_some_and(|start| {
                let index = self.index.borrow();
                start < first && !index.files.contains_key(&start) && !index.is_sealed(start)
            });
            if orphan {
                self.disk.remove(&dir.join(&name)).await?;
                removed = true;
            }
        }
        if removed {
            self.disk.sync_dir(&dir).await?;
        }
        Ok(())
    }

    pub fn log_stats(&self) -> LogStats {
        self.log.stats()
    }

    /// End of the appended log (local offset).
    pub fn log_end(&self) -> u64 {
        self.log.write_pos()
    }

    /// End of the durable log (local offset).
    pub fn log_durable_end(&self) -> u64 {
        self.log.flushed()
    }

    pub fn config(&self) -> &ShardConfig {
        &self.config
    }

    /// Start of the oldest commit-log segment still on disk (local offset): the log's min.
    pub fn log_min(&self) -> u64 {
        self.log.first_segment()
    }

    /// Starts of the commit-log segments on disk, oldest first.
    pub fn log_segments(&self) -> Vec<u64> {
        self.log.segments()
    }

    /// Key-index hits held in memory.
    pub fn index_hits(&self) -> usize {
        self.index.borrow().hits()
    }

    /// Key-index hits in sealed files (on disk, not in memory).
    pub fn index_hits_sealed(&self) -> u64 {
        self.index.borrow().sealed_hits()
    }
}
