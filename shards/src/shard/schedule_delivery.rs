//! Delivery of scheduled messages: each shard delivers the schedule records it stores (they
//! were stored on the shard owning their real queue, so delivery re-stores locally, no hop).
//! The same delivery moves 5.x timer records through their stages (`crate::timer`): a stage,
//! like a level, is a queue whose records fall due in store order, and a due timer record is
//! stored again, in its next stage or, when its time has come, in its real queue.
//!
//! Here, generic over the disk and the clock, rather than in the broker: the simulation tests
//! drive the very delivery code with `SimClock` and `SimDisk` (crash, reopen), and the
//! broker only spawns [`Shard::run_delay_level`] per level.
//!
//! Per level one task. A turn ([`Shard::deliver_due`]) looks at the head of the level's
//! queue: records of one level are due in store order (same delay), so when the head is not
//! due nothing behind it is, and the task sleeps until the head's due time; when the queue is
//! drained it waits on the queue's append event. Nothing is polled per message or on a timer.
//! A turn delivers at most [`DELIVERY_BATCH_MAX`] records in one batch append, so one busy
//! level yields to the rest of the shard between turns.
//!
//! Progress (per level, the next offset to deliver; Apache's `delayOffset.json`) is persisted
//! with the shard's other metadata, after the log is flushed past the deliveries it counts:
//! after a crash a delivery may repeat (at least once, as Apache), never go missing.
//!
//! Cost per delivered message: one 24-byte consume-queue entry looked at in memory, one read
//! of its record (from the hot tail if recent, else part of a DMA read spanning its batch's
//! neighbouring records), one parse of its properties and one re-encode (each byte copied
//! once more), 1/64 of a batch append and its group commit. An idle level costs one parked
//! task and one waiter on its queue's event; a waiting one, one timer. Per shard and second
//! with progress moved: one log flush and one 4 KiB metadata file written and synced.

use super::Shard;
use crate::commit_log::TRAILER_BYTES;
use crate::consume_queue::{CqEntry, QueueMap};
use crate::error::{Result, StoreError};
use crate::io::{Clock, Disk};
use crate::meta_file::{read_meta, write_meta, MetaReader, MetaWriter};
use crate::record::{encoded_len, Message, RecordView};
use crate::schedule::{restore, DELAY_LEVELS_MAX, SCHEDULE_TOPIC};
use crate::timer::{TIMER_STAGES_MAX, TIMER_TOPIC};
use bytes::Bytes;
use std::cell::RefCell;
use std::path::Path;
use std::time::Duration;

/// The shard's file of the delay levels' delivery progress.
const PROGRESS_FILE: &str = "schedule_progress";
/// The shard's file of the timer stages' delivery progress.
const TIMER_PROGRESS_FILE: &str = "timer_progress";
/// Most records one turn of a level delivers: one batch append, small enough that a level
/// with a backlog yields to the shard's other work often.
pub const DELIVERY_BATCH_MAX: usize = 64;
/// Most bytes one turn delivers: one group commit's worth (`GROUP_COMMIT_BYTES_MAX_DEFAULT`).
pub const DELIVERY_BATCH_BYTES_MAX: usize = 1 << 20;
/// How long a level waits after a failed turn (a full disk) before it tries again; Apache
/// waits `DELAY_FOR_A_PERIOD`, 10 s, likewise.
pub const DELIVERY_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// What one turn of a level found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryTurn {
    /// Delivered (or, if undeliverable, skipped) this many due records; more may be due.
    Delivered(usize),
    /// The head record is due at this time (ms since the epoch); none is due before.
    DueAt(i64),
    /// Every stored record is delivered; the next will be at this offset of the queue.
    Drained(i64),
}

/// A queue whose records fall due in store order, which one task per shard delivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduled {
    /// A delay level (1-based): `SCHEDULE_TOPIC_XXXX` queue `level - 1`.
    Level(usize),
    /// A timer stage: `rmq_sys_wheel_timer` queue `stage`.
    TimerStage(usize),
}

impl Scheduled {
    fn queue(self) -> (&'static str, i32) {
        match self {
            Scheduled::Level(level) => (SCHEDULE_TOPIC, level as i32 - 1),
            Scheduled::TimerStage(stage) => (TIMER_TOPIC, stage as i32),
        }
    }
}

/// The files of delivery progress: one per kind of scheduled queue.
pub(super) struct ProgressFile {
    name: &'static str,
    topic: &'static str,
    /// Most queues the file may count (more is a corrupt file).
    queues_max: usize,
}

pub(super) const LEVELS_PROGRESS: ProgressFile = ProgressFile {
    name: PROGRESS_FILE,
    topic: SCHEDULE_TOPIC,
    queues_max: DELAY_LEVELS_MAX,
};
pub(super) const TIMER_PROGRESS: ProgressFile = ProgressFile {
    name: TIMER_PROGRESS_FILE,
    topic: TIMER_TOPIC,
    queues_max: TIMER_STAGES_MAX,
};

/// Per scheduled queue, the next offset to deliver. Owned by the shard.
#[derive(Default)]
pub(super) struct ScheduleProgress {
    /// Index the queue id (a level's is `level - 1`).
    next: Vec<i64>,
    /// Sequence number of the last persisted copy.
    seq: u64,
    /// Bumped by every advance.
    changes: u64,
    /// `changes` as of the last successful persist.
    changes_persisted: u64,
}

impl ScheduleProgress {
    /// Loads the persisted progress, corrected into each queue's recovered range (as
    /// Apache's `correctDelayOffset`). Levels the table no longer has keep their progress,
    /// so shrinking the table and growing it back does not deliver twice.
    pub(super) async fn load<D: Disk>(
        disk: &D,
        dir: &Path,
        file: &ProgressFile,
        count: usize,
        queues: &QueueMap,
    ) -> Result<Self> {
        let (seq, mut next) = match read_meta(disk, &dir.join(file.name)).await? {
            Some((seq, payload)) => (seq, Self::decode(&payload, file)?),
            None => (0, Vec::new()),
        };
        if next.len() < count {
            next.resize(count.min(file.queues_max), 0);
        }
        for (queue_id, offset) in next.iter_mut().enumerate() {
            let end = queues
                .get(file.topic, queue_id as i32)
                .map_or(0, |q| q.end() as i64);
            *offset = (*offset).clamp(0, end);
        }
        Ok(Self {
            next,
            seq,
            ..Self::default()
        })
    }

    fn decode(payload: &[u8], file: &ProgressFile) -> Result<Vec<i64>> {
        let mut r = MetaReader::new(payload, file.name);
        let count = r.u32()? as usize;
        if count > file.queues_max {
            return Err(StoreError::Corrupt {
                file: file.name.into(),
                reason: format!("{count} queues"),
            });
        }
        let next = (0..count)
            .map(|_| r.u64().map(|o| o as i64))
            .collect::<Result<_>>()?;
        r.finish()?;
        Ok(next)
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = MetaWriter::default();
        w.u32(self.next.len() as u32);
        for offset in &self.next {
            w.u64(*offset as u64);
        }
        w.0
    }
}

/// When a record with tagsCode `deliver_at_ms` is due. A time further ahead than the level's
/// whole delay means the clock went back since it was stored: it is due now (Apache's
/// `correctDeliverTimestamp`).
fn due_at(now_ms: i64, deliver_at_ms: i64, delay_ms: u64) -> i64 {
    if deliver_at_ms > now_ms.saturating_add(delay_ms as i64) {
        now_ms
    } else {
        deliver_at_ms
    }
}

impl<D: Disk, C: Clock> Shard<D, C> {
    /// The next offset of `level`'s schedule queue to deliver.
    pub fn schedule_offset(&self, level: usize) -> i64 {
        let progress = self.schedule.borrow();
        level
            .checked_sub(1)
            .and_then(|i| progress.next.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// How many timer stages this shard delivers (a task each, [`Shard::run_scheduled`]).
    pub fn timer_stages(&self) -> usize {
        self.timer.borrow().next.len()
    }

    /// The next offset of timer stage `stage` to deliver.
    pub fn timer_offset(&self, stage: usize) -> i64 {
        self.timer.borrow().next.get(stage).copied().unwrap_or(0)
    }

    /// The progress of `scheduled` and its index there.
    fn progress_of(&self, scheduled: Scheduled) -> (&RefCell<ScheduleProgress>, usize) {
        match scheduled {
            Scheduled::Level(level) => (&self.schedule, level - 1),
            Scheduled::TimerStage(stage) => (&self.timer, stage),
        }
    }

    /// One turn of `scheduled` (a level, 1-based, or a timer stage): delivers the due records
    /// at the head of its queue, at most [`DELIVERY_BATCH_MAX`], or says when the head is due.
    /// Only one caller per queue at a time ([`Shard::run_scheduled`]).
    pub async fn deliver_due(&self, scheduled: Scheduled) -> Result<DeliveryTurn> {
        let delay_ms = match scheduled {
            Scheduled::Level(level) => self.config.delay_levels.delay_ms(level),
            Scheduled::TimerStage(stage) => self.config.timers.stage_delay_ms(stage),
        }
        .ok_or_else(|| StoreError::Config(format!("no {scheduled:?}")))?;
        let (topic, queue_id) = scheduled.queue();
        let (progress_cell, index) = self.progress_of(scheduled);
        // What retention removed before it was delivered is skipped (and was reported then).
        let offset = progress_cell.borrow().next.get(index).copied().unwrap_or(0);
        let offset = offset.max(self.min_offset(topic, queue_id));
        let end = self.max_offset(topic, queue_id);
        if offset >= end {
            return Ok(DeliveryTurn::Drained(offset));
        }
        let now = self.clock.now_ms();
        let budget = DELIVERY_BATCH_BYTES_MAX.min(self.config.entry_bytes_max());
        let until = (end as u64).min(offset as u64 + DELIVERY_BATCH_MAX as u64);
        let entries = (self.queue_store())
            .entries(topic, queue_id, offset as u64, until)
            .await?;
        let Some(&head) = entries.first() else {
            // Trimmed past `offset` meanwhile: the next turn starts at the new min.
            return Ok(DeliveryTurn::Delivered(0));
        };
        // Read no more than one batch's bytes (the first record in any case).
        let mut read_bytes = 0;
        let due: Vec<CqEntry> = entries
            .iter()
            .take_while(|e| due_at(now, e.tag_hash, delay_ms) <= now)
            .take_while(|e| {
                let first = read_bytes == 0;
                read_bytes += e.size as usize;
                first || read_bytes <= budget
            })
            .copied()
            .collect();
        if due.is_empty() {
            return Ok(DeliveryTurn::DueAt(due_at(now, head.tag_hash, delay_ms)));
        }
        let chosen: Vec<(u64, usize)> = due.iter().map(|e| (e.local, e.size as usize)).collect();
        let records = self.log.read_records(&chosen).await?;
        let (mut messages, mut bytes, mut taken) = (Vec::new(), 0, 0);
        for (i, record) in records.into_iter().enumerate() {
            match self.delivery_of(scheduled, record, now) {
                Ok((message, len)) => {
                    if !messages.is_empty() && bytes + len > budget {
                        break;
                    }
                    bytes += len;
                    messages.push(message);
                }
                Err(reason) => tracing::warn!(
                    shard = self.config.shard_id,
                    ?scheduled,
                    offset = offset + i as i64,
                    %reason,
                    "scheduled message skipped: it cannot be delivered"
                ),
            }
            taken += 1;
        }
        if !messages.is_empty() {
            self.append_batch(&messages).await?;
        }
        let mut progress = progress_cell.borrow_mut();
        if progress.next.len() <= index {
            progress.next.resize(index + 1, 0);
        }
        progress.next[index] = offset + taken as i64;
        progress.changes += 1;
        Ok(DeliveryTurn::Delivered(taken))
    }

    /// The message a due record delivers (a schedule record's restored message, a timer
    /// record's next hop) and its size in the log, or why it cannot be delivered (kept from
    /// blocking its queue forever: Apache retries such a record endlessly).
    fn delivery_of(
        &self,
        scheduled: Scheduled,
        record: Bytes,
        now_ms: i64,
    ) -> std::result::Result<(Message, usize), String> {
        let view = RecordView::parse(record).map_err(|e| e.to_string())?;
        let message = match scheduled {
            Scheduled::Level(_) => restore(&view).map_err(|e| e.to_string())?,
            Scheduled::TimerStage(_) => self
                .config
                .timers
                .next_hop(&view, now_ms)
                .map_err(|e| e.to_string())?,
        };
        let len = encoded_len(&message, &self.config.store_host).map_err(|e| e.to_string())?;
        let len = len + TRAILER_BYTES;
        if len > self.config.entry_bytes_max() {
            return Err(format!("{len} bytes exceed the largest entry"));
        }
        Ok((message, len))
    }

    /// Delivers `scheduled`'s records as they fall due, forever: sleeps until the head is
    /// due, waits on the queue's append event when it is drained. Spawn one per level and
    /// timer stage.
    pub async fn run_scheduled(&self, scheduled: Scheduled) {
        let (topic, queue_id) = scheduled.queue();
        loop {
            let waited = match self.deliver_due(scheduled).await {
                Ok(DeliveryTurn::Delivered(_)) => {
                    futures_lite::future::yield_now().await;
                    Ok(())
                }
                Ok(DeliveryTurn::DueAt(at_ms)) => {
                    let wait_ms = (at_ms - self.clock.now_ms()).max(0) as u64;
                    self.clock.sleep(Duration::from_millis(wait_ms)).await;
                    Ok(())
                }
                Ok(DeliveryTurn::Drained(next)) => {
                    self.wait_for_offset(topic, queue_id, next).await
                }
                Err(err) => Err(err),
            };
            if let Err(err) = waited {
                tracing::warn!(shard = self.config.shard_id, ?scheduled, %err, "scheduled delivery failed; retrying");
                self.clock.sleep(DELIVERY_RETRY_INTERVAL).await;
            }
        }
    }

    /// Persists the delivery progress of the levels and the timer stages if it moved, after
    /// making durable every delivery it counts (all were appended before this flush).
    pub(super) async fn persist_schedule_progress(&self) -> Result<()> {
        for (cell, file) in [
            (&self.schedule, &LEVELS_PROGRESS),
            (&self.timer, &TIMER_PROGRESS),
        ] {
            let pending = {
                let progress = cell.borrow();
                (progress.changes != progress.changes_persisted)
                    .then(|| (progress.seq + 1, progress.changes, progress.encode()))
            };
            let Some((seq, changes, payload)) = pending else {
                continue;
            };
            self.flush().await?;
            write_meta(&self.disk, &self.path(file.name), seq, &payload).await?;
            let mut progress = cell.borrow_mut();
            progress.seq = seq;
            progress.changes_persisted = changes;
        }
        Ok(())
    }
}
