//! One shard's storage engine: the API the broker calls. It joins the commit log, the
//! consume queues, the key index, consumer offsets and the checkpoint, and recovers them all
//! at [`Shard::open`].
//!
//! Owned by one glommio executor; everything is `Rc`/`RefCell`, and no borrow is held across
//! an await. Directory layout: `commitlog/`, `consumequeue/<topic>/<queueId>/`, `index/keys`,
//! `checkpoint`, `consumer_offsets`.

use crate::append_file::AppendFile;
use crate::commit_log::{CommitLog, LogPosition, LogStats, OnDrop, TRAILER_BYTES};
use crate::config::{FlushMode, ShardConfig};
use crate::consume_queue::{
    decode_entries, topic_dir_name, ConsumeQueue, CqEntry, QueueMap, CQ_ENTRY_BYTES,
};
use crate::consumer_offsets::ConsumerOffsets;
use crate::error::{Result, StoreError};
use crate::event::Event;
use crate::io::{Clock, Disk};
use crate::key_index::{KeyHit, KeyIndex, KeyQuery};
use crate::meta_file::{read_meta, write_meta, MetaReader, MetaWriter};
use crate::offset::{segment_file_name, PhysicalOffset};
use crate::record::{
    encode_into, encoded_len, find_property, peek_header, property, tag_hash_code, Message,
    RecordError, RecordView, StoreFields, RECORD_BYTES_MAX, RECORD_BYTES_MIN,
};
use crate::recovery::scan_log;
use crate::timer::{TIMER_STAGES_MAX, TIMER_TOPIC};
use crate::transaction;
use bytes::Bytes;
use schedule_delivery::{ScheduleProgress, LEVELS_PROGRESS, TIMER_PROGRESS};
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

mod schedule_delivery;
pub use schedule_delivery::{DeliveryTurn, Scheduled};

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
}

/// How far the consume queues and the index are persisted.
#[derive(Default)]
struct Checkpoint {
    log: LogPosition,
    index_bytes: u64,
    queues: Vec<(String, i32, u64)>,
}

impl Checkpoint {
    fn encode(&self) -> Vec<u8> {
        let mut w = MetaWriter::default();
        w.u64(self.log.local)
            .u32(self.log.chain)
            .u64(self.index_bytes);
        w.u32(self.queues.len() as u32);
        for (topic, queue_id, count) in &self.queues {
            w.str(topic).u32(*queue_id as u32).u64(*count);
        }
        w.0
    }

    fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = MetaReader::new(payload, "checkpoint");
        let log = LogPosition {
            local: r.u64()?,
            chain: r.u32()?,
        };
        let index_bytes = r.u64()?;
        let count = r.u32()?;
        let mut queues = Vec::new();
        for _ in 0..count {
            queues.push((r.str()?, r.u32()? as i32, r.u64()?));
        }
        r.finish()?;
        Ok(Self {
            log,
            index_bytes,
            queues,
        })
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
fn timer_stages_to_deliver<F>(config: &ShardConfig, queues: &QueueMap<F>) -> usize {
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
    queues: RefCell<QueueMap<D::File>>,
    index: RefCell<KeyIndex<D::File>>,
    offsets: RefCell<ConsumerOffsets>,
    /// Delivery progress of the delay levels (next offset of each schedule queue).
    schedule: RefCell<ScheduleProgress>,
    /// Delivery progress of the timer stages (next offset of each stage queue).
    timer: RefCell<ScheduleProgress>,
    checkpoint_seq: Cell<u64>,
    persisting: Cell<bool>,
    persisted: Event,
}

impl<D: Disk, C: Clock> Shard<D, C> {
    fn path(&self, name: &str) -> PathBuf {
        self.config.dir.join(name)
    }

    fn queue_path(config: &ShardConfig, topic: &str, queue_id: i32) -> PathBuf {
        config
            .dir
            .join("consumequeue")
            .join(topic_dir_name(topic))
            .join(queue_id.to_string())
            .join(segment_file_name(0))
    }

    /// Opens (or creates) the shard in `config.dir` and recovers it: loads the checkpointed
    /// consume queues and index, validates the log from the checkpoint on, truncates it at the
    /// first invalid entry and rebuilds the queues and index past the checkpoint.
    pub async fn open(config: ShardConfig, disk: D, clock: C) -> Result<Self> {
        config.validate()?;
        let dir = &config.dir;
        for sub in ["commitlog", "consumequeue", "index"] {
            disk.create_dir_all(&dir.join(sub)).await?;
        }
        check_identity(&disk, &config).await?;
        let (checkpoint_seq, checkpoint) = match read_meta(&disk, &dir.join("checkpoint")).await? {
            Some((seq, payload)) => (seq, Checkpoint::decode(&payload)?),
            None => (0, Checkpoint::default()),
        };
        let shard_id = config.shard_id;
        let mut queues: QueueMap<D::File> = QueueMap::default();
        for (topic, queue_id, count) in &checkpoint.queues {
            let path = Self::queue_path(&config, topic, *queue_id);
            let len = count * CQ_ENTRY_BYTES as u64;
            let file = AppendFile::open(&disk, &path, len).await?;
            let bytes = file.read_prefix(len).await?;
            let what = path.display().to_string();
            let entries = decode_entries(&bytes, *count as usize, shard_id, &what)?;
            if entries
                .last()
                .is_some_and(|e| e.local >= checkpoint.log.local)
            {
                return Err(StoreError::Corrupt {
                    file: what,
                    reason: "entry past the checkpoint".into(),
                });
            }
            let queue = ConsumeQueue {
                persisted: entries.len(),
                entries,
                file: Some(file),
                event: Rc::default(),
            };
            queues.insert(topic, *queue_id, queue);
        }
        let mut index = KeyIndex::new(config.index_entries_max);
        let index_file =
            AppendFile::open(&disk, &dir.join("index/keys"), checkpoint.index_bytes).await?;
        index.load(&index_file.read_prefix(checkpoint.index_bytes).await?)?;
        index.file = Some(index_file);

        let end = scan_log(
            &disk,
            &dir.join("commitlog"),
            config.log.segment_bytes,
            checkpoint.log,
            |view, local| {
                let physical = PhysicalOffset::new(shard_id, local).to_wire();
                let tag_hash = transaction::tags_code(
                    view.topic(),
                    view.queue_offset(),
                    view.properties(),
                    &view.body(),
                )
                .or_else(|| {
                    config.timers.tags_code(
                        view.topic(),
                        view.queue_id(),
                        view.store_timestamp_ms(),
                        view.properties(),
                    )
                })
                .unwrap_or_else(|| {
                    config.delay_levels.tags_code(
                        view.topic(),
                        view.queue_id(),
                        view.store_timestamp_ms(),
                        view.tag_hash_code(),
                    )
                });
                let queue = queues.get_or_create(view.topic(), view.queue_id());
                if view.queue_offset() != queue.entries.len() as i64
                    || view.physical_offset() != physical
                {
                    return false;
                }
                queue.entries.push(CqEntry {
                    local,
                    size: view.total_size() as u32,
                    tag_hash,
                });
                let hit = KeyHit {
                    local,
                    store_timestamp_ms: view.store_timestamp_ms(),
                };
                index.add(view.topic(), view.properties(), hit);
                true
            },
        )
        .await?;
        let entry_bytes_max = config.entry_bytes_max();
        let log = CommitLog::open(
            disk.clone(),
            dir.join("commitlog"),
            config.log.clone(),
            entry_bytes_max,
            end,
        )
        .await?;
        let offsets = match read_meta(&disk, &dir.join("consumer_offsets")).await? {
            Some((seq, payload)) => ConsumerOffsets::decode(seq, &payload)?,
            None => ConsumerOffsets::default(),
        };
        let levels = config.delay_levels.count();
        let schedule =
            ScheduleProgress::load(&disk, dir, &LEVELS_PROGRESS, levels, &queues).await?;
        let stages = timer_stages_to_deliver(&config, &queues);
        let timer = ScheduleProgress::load(&disk, dir, &TIMER_PROGRESS, stages, &queues).await?;
        Ok(Self {
            config,
            disk,
            clock,
            log,
            queues: RefCell::new(queues),
            index: RefCell::new(index),
            offsets: RefCell::new(offsets),
            schedule: RefCell::new(schedule),
            timer: RefCell::new(timer),
            checkpoint_seq: Cell::new(checkpoint_seq),
            persisting: Cell::new(false),
            persisted: Event::default(),
        })
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
        // Check every limit before anything is stored.
        let mut encoded = Vec::with_capacity(messages.len());
        let mut entry_bytes = 0;
        for message in messages {
            let len = encoded_len(message, &self.config.store_host)?;
            let properties = std::str::from_utf8(&message.properties)
                .map_err(|_| RecordError::InvalidUtf8("properties"))?;
            let tag_hash = tag_hash_code(find_property(properties, property::TAGS));
            entry_bytes += len + TRAILER_BYTES;
            encoded.push((len, tag_hash, properties));
        }
        self.log.reserve(entry_bytes).await?;
        // From here to the last push nothing awaits: positions and queue offsets are assigned
        // in the same order, with no other append in between.
        let now = self.clock.now_ms();
        let mut results = Vec::with_capacity(messages.len());
        let mut events = Vec::new();
        {
            let mut queues = self.queues.borrow_mut();
            let mut index = self.index.borrow_mut();
            for (message, (size, tag_hash, properties)) in messages.iter().zip(encoded) {
                let local = self.log.write_pos();
                let physical = PhysicalOffset::new(self.config.shard_id, local).to_wire();
                let queue = queues.get_or_create(&message.topic, message.queue_id);
                let queue_offset = queue.entries.len() as i64;
                let tag_hash =
                    transaction::tags_code(&message.topic, queue_offset, properties, &message.body)
                        .or_else(|| {
                            self.config.timers.tags_code(
                                &message.topic,
                                message.queue_id,
                                now,
                                properties,
                            )
                        })
                        .unwrap_or_else(|| {
                            self.config.delay_levels.tags_code(
                                &message.topic,
                                message.queue_id,
                                now,
                                tag_hash,
                            )
                        });
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
                queue.entries.push(CqEntry {
                    local,
                    size: size as u32,
                    tag_hash,
                });
                let hit = KeyHit {
                    local,
                    store_timestamp_ms: now,
                };
                index.add(&message.topic, properties, hit);
                events.push(queue.event.clone());
                results.push(AppendResult {
                    physical_offset: physical,
                    queue_offset,
                    store_timestamp_ms: now,
                    wrote_bytes: size,
                });
            }
        }
        let end = self.log.write_pos();
        match self.log.flush_mode() {
            FlushMode::AsyncFlush => events.iter().for_each(|e| e.notify()),
            FlushMode::SyncFlush => {
                for event in events {
                    self.log.notify_when_durable(end, event);
                }
                self.log.wait_durable(end).await?;
            }
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

    fn visible_entries(&self, topic: &str, queue_id: i32) -> (usize, Option<Rc<Event>>) {
        let visible_end = self.log.visible_end();
        let queues = self.queues.borrow();
        match queues.get(topic, queue_id) {
            Some(q) => (q.visible_count(visible_end), Some(q.event.clone())),
            None => (0, None),
        }
    }

    /// Entries of a queue from `from` on, at most `max`, in log order: every appended entry,
    /// durable yet or not, so that a follower sees an append as soon as it is made (what it
    /// learns is rebuilt from the log after a crash anyway). No record is read.
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
        let start = usize::try_from(from).unwrap_or(0).min(queue.entries.len());
        let end = start.saturating_add(max).min(queue.entries.len());
        queue.entries[start..end]
            .iter()
            .enumerate()
            .map(|(i, e)| QueueEntry {
                queue_offset: (start + i) as i64,
                physical_offset: PhysicalOffset::new(self.config.shard_id, e.local).to_wire(),
                tags_code: e.tag_hash,
            })
            .collect()
    }

    /// Smallest offset of a queue (0: nothing is deleted yet).
    pub fn min_offset(&self, _topic: &str, _queue_id: i32) -> i64 {
        0
    }

    /// One past the last readable entry of a queue.
    pub fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.visible_entries(topic, queue_id).0 as i64
    }

    /// Reads records of one queue from an offset, up to a count and a byte budget (at least
    /// one record if any matches), optionally keeping only some tag hash codes.
    pub async fn read_queue(&self, request: QueueReadRequest<'_>) -> Result<QueueRead> {
        let max = self.max_offset(request.topic, request.queue_id);
        let mut read = QueueRead {
            records: Vec::new(),
            next_offset: request.offset,
            min_offset: 0,
            max_offset: max,
        };
        if request.offset < 0 || request.offset >= max {
            return Ok(read);
        }
        let max_count = request.max_count.min(READ_COUNT_MAX);
        let scan = if request.tag_filter.is_some() {
            FILTER_SCAN_ENTRIES_MAX
        } else {
            max_count
        };
        let start = request.offset as usize;
        let entries: Vec<CqEntry> = {
            let queues = self.queues.borrow();
            let queue = queues
                .get(request.topic, request.queue_id)
                .expect("a queue with entries exists");
            let end = (max as usize).min(start + scan);
            queue.entries[start..end].to_vec()
        };
        // Choose the records first (count, byte budget, filter), then read them together.
        let mut chosen: Vec<(u64, usize)> = Vec::new();
        let mut bytes = 0;
        for entry in entries {
            if chosen.len() >= max_count {
                break;
            }
            let wanted = request
                .tag_filter
                .is_none_or(|codes| codes.contains(&(entry.tag_hash as i32)));
            if wanted {
                if !chosen.is_empty() && bytes + entry.size as usize > request.max_bytes {
                    break;
                }
                bytes += entry.size as usize;
                chosen.push((entry.local, entry.size as usize));
            }
            read.next_offset += 1;
        }
        read.records = self.log.read_records(&chosen).await?;
        Ok(read)
    }

    /// Reads one record by its client-visible physical offset.
    pub async fn read_at(&self, physical_offset: i64) -> Result<Bytes> {
        let missing = || StoreError::NoSuchRecord(physical_offset);
        let physical = PhysicalOffset::from_wire(physical_offset).ok_or_else(missing)?;
        let local = physical.local();
        if physical.shard_id() != self.config.shard_id || local >= self.log.visible_end() {
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
        let bytes = self.log.read(local, size).await?;
        // A forged offset may land inside a record: only a whole record at that very offset
        // is an answer.
        match RecordView::parse(bytes) {
            Ok(view) if view.physical_offset() == physical_offset => Ok(view.into_bytes()),
            _ => Err(missing()),
        }
    }

    async fn store_timestamp_of(&self, entry: &CqEntry) -> Result<i64> {
        let bytes = self.log.read(entry.local, entry.size as usize).await?;
        Ok(RecordView::parse(bytes)?.store_timestamp_ms())
    }

    /// The first offset of a queue whose record was stored at or after `timestamp_ms` (the
    /// max offset if none), by binary search over the queue.
    pub async fn search_offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
    ) -> Result<i64> {
        let (count, _) = self.visible_entries(topic, queue_id);
        let (mut lo, mut hi) = (0usize, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let entry = {
                let queues = self.queues.borrow();
                queues.get(topic, queue_id).expect("has entries").entries[mid]
            };
            if self.store_timestamp_of(&entry).await? < timestamp_ms {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo as i64)
    }

    /// The most recent records matching `query` (at most [`QUERY_RESULTS_MAX`]), in log order.
    pub async fn query_by_key(&self, query: KeyQuery<'_>) -> Result<Vec<Bytes>> {
        let visible_end = self.log.visible_end();
        let capped = KeyQuery {
            max: query.max.min(QUERY_RESULTS_MAX),
            ..query
        };
        let locals = self.index.borrow().query(&capped);
        let mut records = Vec::new();
        for local in locals.into_iter().filter(|l| *l < visible_end) {
            let physical = PhysicalOffset::new(self.config.shard_id, local).to_wire();
            records.push(self.read_at(physical).await?);
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
                if queue.visible_count(self.log.visible_end()) as i64 > offset {
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
        loop {
            let seen = self.persisted.version();
            if !self.persisting.get() {
                break;
            }
            self.persisted.changed(seen).await;
        }
        self.persisting.set(true);
        // Released even if this persist is dropped half-way, so the next one can run.
        let _running = OnDrop(Some(|| {
            self.persisting.set(false);
            self.persisted.notify();
        }));
        self.persist_once().await
    }

    async fn persist_once(&self) -> Result<()> {
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
        let keys: Vec<(String, i32)> = {
            let queues = self.queues.borrow();
            queues.iter().map(|(t, id, _)| (t.to_owned(), id)).collect()
        };
        for key in keys {
            let (file, data, persisted, count) = {
                let mut queues = self.queues.borrow_mut();
                let queue = queues
                    .get_mut(&key.0, key.1)
                    .expect("queues are never removed");
                let count = queue.visible_count(boundary.local);
                if count <= queue.persisted {
                    continue;
                }
                let data: Vec<u8> = queue.entries[queue.persisted..count]
                    .iter()
                    .flat_map(|e| e.encode(self.config.shard_id))
                    .collect();
                (queue.file.take(), data, queue.persisted, count)
            };
            let mut file = match file {
                Some(file) => file,
                None => {
                    let path = Self::queue_path(&self.config, &key.0, key.1);
                    AppendFile::open(&self.disk, &path, (persisted * CQ_ENTRY_BYTES) as u64).await?
                }
            };
            let result = file.append(&data).await;
            let mut queues = self.queues.borrow_mut();
            let queue = queues
                .get_mut(&key.0, key.1)
                .expect("queues are never removed");
            queue.file = Some(file);
            result?;
            queue.persisted = count;
        }
        let (file, (data, count)) = {
            let mut index = self.index.borrow_mut();
            (index.file.take(), index.encode_pending(boundary.local))
        };
        let mut file = match file {
            Some(file) => file,
            None => {
                let len = self.index.borrow().persisted_bytes;
                AppendFile::open(&self.disk, &self.path("index/keys"), len).await?
            }
        };
        let result = file.append(&data).await;
        {
            let mut index = self.index.borrow_mut();
            index.persisted_bytes = file.len();
            index.file = Some(file);
            if result.is_ok() {
                index.persisted(count);
            }
        }
        result?;
        let checkpoint = {
            let queues = self.queues.borrow();
            Checkpoint {
                log: boundary,
                index_bytes: self.index.borrow().persisted_bytes,
                queues: queues
                    .iter()
                    .filter(|(_, _, q)| q.persisted > 0)
                    .map(|(topic, id, q)| (topic.to_owned(), id, q.persisted as u64))
                    .collect(),
            }
        };
        let seq = self.checkpoint_seq.get() + 1;
        write_meta(
            &self.disk,
            &self.path("checkpoint"),
            seq,
            &checkpoint.encode(),
        )
        .await?;
        self.checkpoint_seq.set(seq);
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
}
