//! The commit log: one per shard, append-only, group-committed with O_DIRECT writes.
//!
//! On-disk layout. Segment files `commitlog/<20-digit local start offset>` are preallocated to
//! `segment_bytes`. Each entry is a RocketMQ record followed by a 4-byte trailer of our own:
//! `crc32c(previous trailer, record bytes)`, a chain through the whole log. The record bytes
//! stay exactly RocketMQ's, so reads hand out `record` slices and skip the trailer. The chain
//! catches what BODYCRC cannot: a torn header, a record whose length field is corrupt, and a
//! stale but self-consistent record left behind after a truncation (its chain value was
//! computed from a different predecessor). When an entry does not fit the rest of a segment
//! (keeping room for a filler), a 12-byte filler `[i32 bytes to segment end][MAGIC_BLANK]
//! [chain u32]` closes the segment and the log continues at the next segment's start.
//!
//! Write path. An append encodes its record once, in place, into a block shared with its
//! neighbours (copy 1; one allocation per ~1000 records), which joins the in-memory tail
//! (`chunks`) and is served to readers from there. Group commit has two stages with at most
//! one operation each in flight: a writer gathers every pending byte from the start of the
//! partial last block into one aligned buffer (copy 2) and writes it with one DMA write; a
//! syncer makes what is written durable with one fdatasync, then wakes every waiter it
//! covered. The write of group N+1 overlaps the fdatasync of group N, and appends arriving
//! meanwhile join the next group. At 1 KiB records and the 1 MiB group cap, a write carries
//! ~1000 records.
//!
//! Ownership: owned by one shard and only touched from its executor; no borrow of `state`
//! is held across an await.

use crate::config::{FlushMode, LogConfig};
use crate::error::{Result, StoreError};
use crate::event::Event;
use crate::io::{align_down, align_up, Clock, Disk, DiskFile};
use crate::offset::segment_file_name;
use crate::read_cache::ReadCache;
use crate::record::{RecordError, MAGIC_BLANK};
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;

/// Bytes of the integrity trailer after each record.
pub const TRAILER_BYTES: usize = 4;
/// A cold read reads the aligned span of this many bytes that holds its record (more when the
/// record crosses the span's end) and keeps it in the [`ReadCache`]: a catch-up read of a
/// queue interleaved with others costs one 256 KiB I/O for the records of every queue in it,
/// instead of one I/O per record or one per queue.
pub const COLD_READ_SPAN_BYTES_MAX: usize = 256 << 10;
/// Size of the blocks appended records are cut from; a block is freed when its last record
/// leaves the hot tail.
const ARENA_BYTES: usize = 1 << 20;
/// Bytes of the end-of-segment filler; every segment keeps room for one.
pub const FILLER_BYTES: usize = 12;

/// A point in the log with the chain value of everything before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogPosition {
    pub local: u64,
    pub chain: u32,
}

/// Whether an entry of `len` bytes may start at `pos` in a segment ending at `segment_end`.
pub(crate) fn entry_fits(pos: u64, len: usize, segment_end: u64) -> bool {
    pos + (len + FILLER_BYTES) as u64 <= segment_end
}

/// The trailer value of `record` following a chain at `chain`.
pub(crate) fn chain_next(chain: u32, record: &[u8]) -> u32 {
    crc32c::crc32c_append(chain, record)
}

/// Runs a closure when dropped: keeps counters and flags right when a future is cancelled.
pub(crate) struct OnDrop<F: FnOnce()>(pub(crate) Option<F>);

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// A contiguous piece of the in-memory tail: an entry, a filler, or (after recovery) the
/// durable bytes of the partial last block.
struct Chunk {
    local: u64,
    bytes: Bytes,
}

impl Chunk {
    fn end(&self) -> u64 {
        self.local + self.bytes.len() as u64
    }
}

struct State<F> {
    /// End of appended entries (local offset).
    write_pos: u64,
    chain: u32,
    /// Everything below is durable.
    flushed: u64,
    /// Last entry boundary at or below `flushed`: where a checkpoint may point.
    durable_boundary: LogPosition,
    /// Entry ends above `flushed`, with the chain after them.
    boundaries: VecDeque<LogPosition>,
    chunks: VecDeque<Chunk>,
    hot_bytes: usize,
    /// Open segment files by start offset, with their last-use tick.
    files: BTreeMap<u64, (Rc<F>, u64)>,
    /// Start offsets of the segments on disk, the active one last; retention removes the
    /// first, so the log's min offset is the first one.
    segments: BTreeSet<u64>,
    use_tick: u64,
    /// Everything below is written to its segment (durable once synced).
    written: u64,
    /// Blocks below are written (log data or zeros) in the segment holding `written`.
    zeroed: u64,
    /// Bumped by a failed sync; a write that began before it does not count.
    write_epoch: u64,
    /// Segments written since the last sync, by start offset.
    dirty: Vec<(u64, Rc<F>)>,
    writing: bool,
    syncing: bool,
    rolling: bool,
    flush_waiters: usize,
    /// Events to notify once the log is durable up to their offset (ascending).
    durable_waiters: VecDeque<(u64, Rc<Event>)>,
    flush_count: u64,
    flush_bytes: u64,
    /// Cold reads that went to the disk (one span each).
    cold_span_reads: u64,
}

/// Counters for benchmarks and operators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    pub flush_count: u64,
    pub flush_bytes: u64,
    pub hot_bytes: usize,
    /// Cold reads served by a disk read of their span, and by a span read before.
    pub cold_span_reads: u64,
    pub cold_cache_hits: u64,
    /// Bytes of the cold spans cached now.
    pub cold_cache_bytes: usize,
}

/// One shard's commit log.
pub struct CommitLog<D: Disk> {
    disk: D,
    dir: PathBuf,
    config: LogConfig,
    entry_bytes_max: usize,
    state: RefCell<State<D::File>>,
    /// Cold spans read lately (owned here; see `read_cache`).
    cold: RefCell<ReadCache>,
    arena: RefCell<BytesMut>,
    /// Notified when a flush or a segment roll ends (successful or not).
    progress: Event,
    /// Notified when pending bytes appear or reach a whole group (wakes the flusher).
    appended: Event,
}

impl<D: Disk> CommitLog<D> {
    /// Opens the log whose valid data ends at `end` (found by recovery): drops segments past
    /// it, makes sure the active segment exists, and makes the recovered bytes durable.
    pub(crate) async fn open(
        disk: D,
        dir: PathBuf,
        config: LogConfig,
        entry_bytes_max: usize,
        end: LogPosition,
    ) -> Result<Self> {
        disk.create_dir_all(&dir).await?;
        let segment_bytes = config.segment_bytes;
        let active = end.local - end.local % segment_bytes;
        let mut segments = BTreeSet::new();
        let mut beyond = Vec::new();
        for name in disk.list_dir(&dir).await? {
            match crate::offset::parse_segment_file_name(&name) {
                Some(start) if start % segment_bytes != 0 => {
                    return Err(StoreError::Config(format!(
                        "segment {name} does not match segment size {segment_bytes}"
                    )))
                }
                Some(start) if start > active => beyond.push(name),
                Some(start) => {
                    segments.insert(start);
                }
                None => {}
            }
        }
        if !segments.contains(&active) && !beyond.is_empty() {
            // The recovered end lies in a segment that is gone while later ones exist: the
            // log did not end there, so truncating the later ones would lose data.
            return Err(StoreError::Corrupt {
                file: segment_file_name(active),
                reason: "missing below later segments".into(),
            });
        }
        let removed = !beyond.is_empty();
        for name in beyond {
            disk.remove(&dir.join(&name)).await?;
        }
        segments.insert(active);
        if removed {
            disk.sync_dir(&dir).await?;
        }
        let log = Self {
            disk,
            dir,
            config,
            entry_bytes_max,
            cold: RefCell::default(),
            state: RefCell::new(State {
                write_pos: end.local,
                chain: end.chain,
                flushed: end.local,
                durable_boundary: end,
                boundaries: VecDeque::new(),
                chunks: VecDeque::new(),
                hot_bytes: 0,
                files: BTreeMap::new(),
                segments,
                use_tick: 0,
                written: end.local,
                zeroed: align_up(end.local),
                write_epoch: 0,
                dirty: Vec::new(),
                writing: false,
                syncing: false,
                rolling: false,
                flush_waiters: 0,
                durable_waiters: VecDeque::new(),
                flush_count: 0,
                flush_bytes: 0,
                cold_span_reads: 0,
            }),
            arena: RefCell::new(BytesMut::new()),
            progress: Event::default(),
            appended: Event::default(),
        };
        let file = log.create_segment(active).await?;
        let block = align_down(end.local);
        if block < end.local {
            // The next group commit rewrites this partial block, so keep its durable bytes.
            let bytes = file
                .read_at(block - active, (end.local - block) as usize)
                .await?;
            if bytes.len() as u64 != end.local - block {
                return Err(StoreError::Corrupt {
                    file: segment_file_name(active),
                    reason: "recovered tail shorter than scanned".into(),
                });
            }
            let mut st = log.state.borrow_mut();
            st.hot_bytes += bytes.len();
            st.chunks.push_back(Chunk {
                local: block,
                bytes,
            });
        }
        // Recovered bytes may sit in a device cache: make them durable before serving them.
        file.sync().await?;
        Ok(log)
    }

    fn segment_start(&self, local: u64) -> u64 {
        local - local % self.config.segment_bytes
    }

    /// Opens (creating and preallocating if missing) the segment at `start`, durably named.
    async fn create_segment(&self, start: u64) -> Result<Rc<D::File>> {
        let path = self.dir.join(segment_file_name(start));
        let existed = self.disk.exists(&path).await?;
        let file = self.disk.open(&path, true).await?;
        let prepared = async {
            file.allocate(self.config.segment_bytes).await?;
            file.sync().await?;
            self.disk.sync_dir(&self.dir).await
        }
        .await;
        if let Err(e) = prepared {
            if !existed {
                // Store nothing half-way: a segment we could not fully reserve goes away.
                let _ = self.disk.remove(&path).await;
            }
            return Err(e.into());
        }
        let file = Rc::new(file);
        self.cache_file(start, file.clone());
        Ok(file)
    }

    fn cache_file(&self, start: u64, file: Rc<D::File>) {
        let mut st = self.state.borrow_mut();
        st.use_tick += 1;
        let tick = st.use_tick;
        st.files.insert(start, (file, tick));
        let active = self.segment_start(st.write_pos);
        while st.files.len() > self.config.segments_open_max {
            let lru = st
                .files
                .iter()
                .filter(|(s, _)| **s != active && **s != start)
                .min_by_key(|(_, (_, t))| *t)
                .map(|(s, _)| *s);
            match lru {
                Some(s) => st.files.remove(&s),
                None => break,
            };
        }
    }

    /// The open file of the segment starting at `start`, reopening it if it was closed.
    async fn file(&self, start: u64) -> Result<Rc<D::File>> {
        {
            let mut st = self.state.borrow_mut();
            st.use_tick += 1;
            let tick = st.use_tick;
            if let Some((file, used)) = st.files.get_mut(&start) {
                *used = tick;
                return Ok(file.clone());
            }
        }
        let path = self.dir.join(segment_file_name(start));
        let file = Rc::new(self.disk.open(&path, false).await?);
        self.cache_file(start, file.clone());
        Ok(file)
    }

    /// Waits until an entry of `len` bytes can be pushed at the write position: no segment
    /// roll in progress, room in the segment (rolling if needed) and in the hot-tail budget
    /// (flushing if needed). The caller must [`CommitLog::push`] without awaiting in between.
    pub(crate) async fn reserve(&self, len: usize) -> Result<()> {
        if len > self.entry_bytes_max {
            return Err(StoreError::RecordTooLarge {
                len,
                segment_bytes: self.config.segment_bytes,
            });
        }
        loop {
            let seen = self.progress.version();
            let (rolling, write_pos, flushed) = {
                let st = self.state.borrow();
                (st.rolling, st.write_pos, st.flushed)
            };
            let budget = self.config.hot_tail_bytes_max as u64;
            if rolling {
                self.progress.changed(seen).await;
            } else if write_pos - flushed + len as u64 > budget {
                // Flush only what makes room, not the whole tail: the appender waits for
                // one group, not for tens of MiB (which stalled ASYNC appends ~80 ms).
                self.flush_to(write_pos + len as u64 - budget).await?;
            } else if !entry_fits(
                write_pos,
                len,
                self.segment_start(write_pos) + self.config.segment_bytes,
            ) {
                self.roll().await?;
            } else {
                return Ok(());
            }
        }
    }

    /// Appends one record of `len` bytes at the write position reserved by
    /// [`CommitLog::reserve`], letting `encode` write it in place; returns its local offset.
    /// Records are cut from shared [`ARENA_BYTES`] blocks: one allocation per ~1000 records.
    pub(crate) fn push_with(
        &self,
        len: usize,
        encode: impl FnOnce(&mut [u8]) -> std::result::Result<usize, RecordError>,
    ) -> Result<u64> {
        let entry_len = len + TRAILER_BYTES;
        let (local, chain) = {
            let st = self.state.borrow();
            (st.write_pos, st.chain)
        };
        let segment_end = self.segment_start(local) + self.config.segment_bytes;
        assert!(
            entry_fits(local, entry_len, segment_end),
            "push without reserve"
        );
        let (record, chain) = {
            let mut arena = self.arena.borrow_mut();
            if arena.capacity() < entry_len {
                *arena = BytesMut::with_capacity(ARENA_BYTES.max(entry_len));
            }
            arena.resize(entry_len, 0);
            if let Err(e) = encode(&mut arena[..len]) {
                arena.clear();
                return Err(e.into());
            }
            let chain = chain_next(chain, &arena[..len]);
            arena[len..].copy_from_slice(&chain.to_be_bytes());
            (arena.split().freeze(), chain)
        };
        let mut st = self.state.borrow_mut();
        st.chain = chain;
        st.write_pos += entry_len as u64;
        let end = LogPosition {
            local: st.write_pos,
            chain,
        };
        st.boundaries.push_back(end);
        st.hot_bytes += entry_len;
        st.chunks.push_back(Chunk {
            local,
            bytes: record,
        });
        let pending_after = (st.write_pos - st.flushed) as usize;
        drop(st);
        // Wake the flusher when work appears and when a whole group is ready, not per record.
        let group = self.config.group_commit_bytes_max;
        let pending_before = pending_after - (end.local - local) as usize;
        if pending_before == 0 || (pending_before < group && pending_after >= group) {
            self.appended.notify();
        }
        Ok(local)
    }

    /// Closes the active segment with a filler and continues in a new, preallocated one.
    /// On failure (e.g. ENOSPC) nothing changes and the next append tries again.
    async fn roll(&self) -> Result<()> {
        let (write_pos, next) = {
            let mut st = self.state.borrow_mut();
            st.rolling = true;
            let next = self.segment_start(st.write_pos) + self.config.segment_bytes;
            (st.write_pos, next)
        };
        let created = self.create_segment(next).await;
        {
            let mut st = self.state.borrow_mut();
            st.rolling = false;
            if created.is_ok() {
                st.segments.insert(next);
                let mut filler = Vec::with_capacity(FILLER_BYTES);
                filler.extend_from_slice(&((next - write_pos) as i32).to_be_bytes());
                filler.extend_from_slice(&MAGIC_BLANK.to_be_bytes());
                let chain = chain_next(st.chain, &filler);
                filler.extend_from_slice(&chain.to_be_bytes());
                st.chain = chain;
                st.write_pos = next;
                st.boundaries.push_back(LogPosition { local: next, chain });
                st.hot_bytes += filler.len();
                st.chunks.push_back(Chunk {
                    local: write_pos,
                    bytes: Bytes::from(filler),
                });
            }
        }
        self.progress.notify();
        created.map(|_| ())
    }

    /// Returns once every byte below `target` is durable. Group commit in two stages, each
    /// with at most one operation in flight: a waiter whose bytes are not written yet
    /// becomes the writer (one write of everything pending, up to the group limit) and a
    /// waiter whose bytes are written becomes the syncer. So the write of group N+1 overlaps
    /// the fdatasync of group N, and everyone arriving meanwhile joins the next group.
    pub async fn flush_to(&self, target: u64) -> Result<()> {
        enum Role {
            Write,
            Sync,
            Wait,
        }
        loop {
            let seen = self.progress.version();
            let role = {
                let mut st = self.state.borrow_mut();
                if st.flushed >= target {
                    return Ok(());
                }
                if st.written < target {
                    if st.writing {
                        Role::Wait
                    } else {
                        st.writing = true;
                        Role::Write
                    }
                } else if st.syncing {
                    Role::Wait
                } else {
                    st.syncing = true;
                    Role::Sync
                }
            };
            let result = match role {
                Role::Wait => {
                    self.progress.changed(seen).await;
                    continue;
                }
                Role::Write => {
                    // If this writer is dropped mid-write, the next waiter takes over.
                    let _stage = OnDrop(Some(|| {
                        self.state.borrow_mut().writing = false;
                        self.progress.notify();
                    }));
                    self.write_once().await
                }
                Role::Sync => {
                    let _stage = OnDrop(Some(|| {
                        self.state.borrow_mut().syncing = false;
                        self.progress.notify();
                    }));
                    self.sync_written().await
                }
            };
            result?;
        }
    }

    /// Like [`CommitLog::flush_to`] for an acknowledged-on-durability append, counting it
    /// against the flush-waiter limit.
    pub(crate) async fn wait_durable(&self, target: u64) -> Result<()> {
        {
            let mut st = self.state.borrow_mut();
            if st.flushed >= target {
                return Ok(());
            }
            if st.flush_waiters >= self.config.flush_waiters_max {
                return Err(StoreError::LimitReached("flush waiters"));
            }
            st.flush_waiters += 1;
        }
        // Counted down even if the waiting append is dropped half-way.
        let _waiter = OnDrop(Some(|| self.state.borrow_mut().flush_waiters -= 1));
        self.flush_to(target).await
    }

    /// Writes every pending byte of one segment (up to the group limit) from the start of
    /// the partial last block, in one write.
    async fn write_once(&self) -> Result<()> {
        let (from, write_pos, epoch) = {
            let st = self.state.borrow();
            (st.written, st.write_pos, st.write_epoch)
        };
        let segment = self.segment_start(from);
        let block = align_down(from);
        let to = write_pos
            .min(segment + self.config.segment_bytes)
            .min(block + self.config.group_commit_bytes_max as u64);
        if to <= from {
            return Ok(());
        }
        let file = self.file(segment).await?;
        let buf = {
            let st = self.state.borrow();
            let first = st.chunks.partition_point(|c| c.end() <= block);
            let data_end = st
                .chunks
                .range(first..)
                .take_while(|c| c.local < to)
                .last()
                .map_or(to, |c| c.end().min(to));
            let mut buf = file.alloc_buffer(align_up(data_end - block) as usize);
            let out = buf.as_mut();
            let mut covered = block;
            for chunk in st.chunks.range(first..).take_while(|c| c.local < data_end) {
                assert!(
                    chunk.local <= covered,
                    "hole in the commit-log tail at {covered}"
                );
                let start = (covered - chunk.local) as usize;
                let end = (data_end.min(chunk.end()) - chunk.local) as usize;
                let at = (covered - block) as usize;
                out[at..at + end - start].copy_from_slice(&chunk.bytes[start..end]);
                covered = chunk.local + end as u64;
            }
            assert_eq!(
                covered, data_end,
                "commit-log tail does not cover the write"
            );
            buf
        };
        let len = buf.as_ref().len();
        let zeroed = {
            let zero = self.zero_ahead(segment, (block, block + len as u64), &*file);
            let data = file.write_at(block - segment, buf);
            match zero {
                Some((end, zeros)) => {
                    let (data, zeros) = futures_lite::future::zip(data, zeros).await;
                    data?;
                    zeros?;
                    Some(end)
                }
                None => data.await.map(|_| None)?,
            }
        };
        let mut st = self.state.borrow_mut();
        if let Some(end) = zeroed {
            st.zeroed = st.zeroed.max(end);
        }
        // A failed sync since this write began means its region is rewritten from scratch.
        if st.write_epoch == epoch {
            st.written = to;
            if !st.dirty.iter().any(|(start, _)| *start == segment) {
                st.dirty.push((segment, file));
            }
        }
        st.flush_bytes += len as u64;
        Ok(())
    }

    /// Blocks of a preallocated segment that were never written are "unwritten extents": a
    /// write that covers both such blocks and the rewritten partial last block costs ext4 a
    /// metadata update that makes the next fdatasync several times slower (measured: 3.2 ms
    /// against 0.2 ms p50 on this host). So each write keeps the region ahead of the log
    /// written with zeros, at most `zero_ahead_bytes` ahead, with a second write issued
    /// alongside the data write (disjoint blocks). Large groups (ASYNC_FLUSH under load)
    /// pay the slow case once per half window or more of data, so they skip it rather than
    /// double their write volume. Returns the new zeroed end and that write.
    fn zero_ahead<'a>(
        &self,
        segment: u64,
        data: (u64, u64),
        file: &'a D::File,
    ) -> Option<(
        u64,
        impl std::future::Future<Output = std::io::Result<()>> + 'a,
    )> {
        let ahead = self.config.zero_ahead_bytes;
        let (data_start, data_end) = data;
        if ahead == 0 || data_end - data_start >= ahead / 2 {
            return None;
        }
        let start = self.state.borrow().zeroed.max(data_end).max(segment);
        let end = (data_end + ahead).min(segment + self.config.segment_bytes);
        // Top up in steps of a quarter window, not per block.
        if end <= start || end - start < ahead / 4 {
            return None;
        }
        let mut zeros = file.alloc_buffer((end - start) as usize);
        zeros.as_mut().fill(0);
        Some((end, file.write_at(start - segment, zeros)))
    }

    /// Makes everything written so far durable: one fdatasync per segment written to.
    async fn sync_written(&self) -> Result<()> {
        let (written, files) = {
            let mut st = self.state.borrow_mut();
            (st.written, std::mem::take(&mut st.dirty))
        };
        for (_, file) in &files {
            if let Err(e) = file.sync().await {
                // Whether the failed sync kept anything is unknown: rewrite it all.
                let mut st = self.state.borrow_mut();
                st.written = st.flushed;
                st.write_epoch += 1;
                st.dirty.clear();
                return Err(e.into());
            }
        }
        let mut st = self.state.borrow_mut();
        st.flushed = st.flushed.max(written);
        st.flush_count += 1;
        while st.boundaries.front().is_some_and(|b| b.local <= written) {
            st.durable_boundary = st.boundaries.pop_front().expect("checked");
        }
        let mut woken = Vec::new();
        while st
            .durable_waiters
            .front()
            .is_some_and(|(end, _)| *end <= written)
        {
            woken.push(st.durable_waiters.pop_front().expect("checked").1);
        }
        // Keep the partial last durable block: a failed sync rewrites from there.
        let keep_from = align_down(st.flushed);
        while st.hot_bytes > self.config.hot_tail_bytes_max
            && st.chunks.front().is_some_and(|c| c.end() <= keep_from)
        {
            let chunk = st.chunks.pop_front().expect("checked");
            st.hot_bytes -= chunk.bytes.len();
        }
        drop(st);
        for event in woken {
            event.notify();
        }
        Ok(())
    }

    /// Notifies `event` once the log is durable up to `end` (at once if it already is).
    pub(crate) fn notify_when_durable(&self, end: u64, event: Rc<Event>) {
        let mut st = self.state.borrow_mut();
        if st.flushed >= end {
            drop(st);
            event.notify();
        } else {
            st.durable_waiters.push_back((end, event));
        }
    }

    /// The record at `local` from the hot tail, as a slice of its appended buffer.
    fn read_hot(&self, local: u64, len: usize) -> Option<Bytes> {
        let st = self.state.borrow();
        let i = st.chunks.partition_point(|c| c.local < local);
        let chunk = st.chunks.get(i)?;
        (chunk.local == local && chunk.bytes.len() >= len).then(|| chunk.bytes.slice(..len))
    }

    /// Reads the record at `local` of `len` bytes: from the hot tail when it is there (no
    /// copy), else with a read from its segment.
    pub async fn read(&self, local: u64, len: usize) -> Result<Bytes> {
        Ok(self.read_records(&[(local, len)]).await?.remove(0))
    }

    /// Reads records given as ascending `(local offset, length)`: hot ones from memory, cold
    /// ones from a cached span or with one read of their span (records of other queues in it
    /// are kept for their own pulls: cheaper than one I/O per record or per queue).
    pub async fn read_records(&self, items: &[(u64, usize)]) -> Result<Vec<Bytes>> {
        let mut out = Vec::with_capacity(items.len());
        for &(start, len) in items {
            if let Some(bytes) = self.read_hot(start, len) {
                out.push(bytes);
                continue;
            }
            let cached = self.cold.borrow_mut().get(start, len);
            let bytes = match cached {
                Some(bytes) => bytes,
                None => self.read_span(start, len).await?,
            };
            out.push(bytes);
        }
        Ok(out)
    }

    /// Reads the aligned span holding the `len` bytes at `start` (up to the written end and
    /// the segment's end), keeps it in the cache and returns those bytes.
    async fn read_span(&self, start: u64, len: usize) -> Result<Bytes> {
        let end = start + len as u64;
        let segment = self.segment_start(start);
        let written = self.state.borrow().written;
        if end > written || end > segment + self.config.segment_bytes {
            return Err(StoreError::NoSuchRecord(start as i64));
        }
        let span_bytes = COLD_READ_SPAN_BYTES_MAX as u64;
        let span_start = start - (start - segment) % span_bytes;
        let span_end = (span_start + span_bytes)
            .max(end)
            .min(segment + self.config.segment_bytes)
            .min(written);
        let file = self.file(segment).await?;
        let span = file
            .read_at(span_start - segment, (span_end - span_start) as usize)
            .await?;
        if (span.len() as u64) < end - span_start {
            return Err(StoreError::NoSuchRecord(start as i64));
        }
        let at = (start - span_start) as usize;
        let bytes = span.slice(at..at + len);
        self.state.borrow_mut().cold_span_reads += 1;
        self.cold.borrow_mut().insert(span_start, span);
        Ok(bytes)
    }

    /// ASYNC_FLUSH's flusher, a loop rather than a per-message timer: once bytes are
    /// pending it flushes when a whole group has gathered or the flush interval has passed,
    /// whichever comes first. Runs until dropped; a failed flush is retried next round.
    pub async fn run_flusher(&self, clock: &impl Clock) {
        loop {
            let seen = self.appended.version();
            let target = self.state.borrow().write_pos;
            if target == self.flushed() {
                self.appended.changed(seen).await;
                continue;
            }
            if self.pending_bytes() < self.config.group_commit_bytes_max {
                let interval = clock.sleep(self.config.flush_interval);
                futures_lite::future::or(interval, self.appended.changed(seen)).await;
            }
            let target = self.state.borrow().write_pos;
            let _ = self.flush_to(target).await;
        }
    }

    fn pending_bytes(&self) -> usize {
        let st = self.state.borrow();
        (st.write_pos - st.flushed) as usize
    }

    pub fn write_pos(&self) -> u64 {
        self.state.borrow().write_pos
    }

    pub fn segment_bytes(&self) -> u64 {
        self.config.segment_bytes
    }

    /// Start of the segment holding `local`.
    pub fn segment_start_of(&self, local: u64) -> u64 {
        self.segment_start(local)
    }

    /// Start of the segment appends go to.
    pub fn active_segment(&self) -> u64 {
        self.segment_start(self.state.borrow().write_pos)
    }

    /// Start of the oldest segment on disk: the log's min offset.
    pub fn first_segment(&self) -> u64 {
        let st = self.state.borrow();
        *st.segments
            .first()
            .expect("the active segment always exists")
    }

    /// Starts of the segments on disk, oldest first.
    pub fn segments(&self) -> Vec<u64> {
        self.state.borrow().segments.iter().copied().collect()
    }

    /// Removes the oldest segment, which must not be the active one: its cached handle is
    /// dropped (reads in flight keep theirs; the kernel frees the space when the last one
    /// closes), the file is unlinked through the disk seam (the executor's side ring on the
    /// real disk, so nothing blocks the executor) and the removal made durable. The caller
    /// has made sure nothing refers to it any more. On failure the segment counts as present
    /// again and a later removal retries.
    pub(crate) async fn remove_first_segment(&self, start: u64) -> Result<()> {
        {
            let mut st = self.state.borrow_mut();
            let active = self.segment_start(st.write_pos);
            assert!(
                st.segments.first() == Some(&start) && start != active,
                "only the oldest sealed segment is removed"
            );
            st.segments.remove(&start);
            st.files.remove(&start);
        }
        // Its cached spans go with it (readers stopped below its end before the removal).
        self.cold
            .borrow_mut()
            .drop_below(start + self.config.segment_bytes);
        let path = self.dir.join(segment_file_name(start));
        let removed = match self.disk.remove(&path).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => self.disk.sync_dir(&self.dir).await,
        };
        if let Err(e) = removed {
            self.state.borrow_mut().segments.insert(start);
            return Err(e.into());
        }
        Ok(())
    }

    /// Whether the record at `local` is still in the in-memory tail (served without a read):
    /// ringmq's "in memory", as Apache's page-cache check of `checkInMemByConsumeOffset`.
    pub fn in_memory(&self, local: u64) -> bool {
        let st = self.state.borrow();
        local < st.write_pos && st.chunks.front().is_some_and(|c| c.local <= local)
    }

    pub fn flushed(&self) -> u64 {
        self.state.borrow().flushed
    }

    /// The last entry boundary known durable, with its chain: a safe checkpoint.
    pub fn durable_boundary(&self) -> LogPosition {
        self.state.borrow().durable_boundary
    }

    /// Where readers may read up to: durable bytes under SYNC_FLUSH (a reader never sees a
    /// record a crash could take back), everything appended under ASYNC_FLUSH.
    pub fn visible_end(&self) -> u64 {
        let st = self.state.borrow();
        match self.config.flush_mode {
            FlushMode::SyncFlush => st.flushed,
            FlushMode::AsyncFlush => st.write_pos,
        }
    }

    pub fn flush_mode(&self) -> FlushMode {
        self.config.flush_mode
    }

    pub fn stats(&self) -> LogStats {
        let st = self.state.borrow();
        LogStats {
            flush_count: st.flush_count,
            flush_bytes: st.flush_bytes,
            hot_bytes: st.hot_bytes,
            cold_span_reads: st.cold_span_reads,
            cold_cache_hits: self.cold.borrow().hits(),
            cold_cache_bytes: self.cold.borrow().bytes(),
        }
    }
}
