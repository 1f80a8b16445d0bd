//! The consume queues' files and the shard's page cache: persisted entries are read on demand
//! a page ([`PAGE_ENTRIES`]) at a time and kept in a cache bounded in bytes
//! (`ShardConfig::cq_page_cache_bytes`), evicting the least recently used page.
//!
//! Why a page is never stale: the files only grow by appends at `persisted` (a persist
//! rewrites nothing below it); a page read is cut at `persisted` and a read past a cached
//! page's end reads it again; a persist extends the cached page it writes into (so consumers
//! at the tail hit the cache); pages are keyed by the queue's id, which a deleted and made
//! again queue does not share; and no read goes below a queue's min offset.
//!
//! Reads open their own handle of the file, so a cold read never waits for (or on) the
//! [`AppendFile`] a persist has taken out. Persists keep the append handles of the queues
//! they wrote last, at most [`QUEUE_FILES_OPEN_MAX`] (each holds a descriptor and up to one
//! block of the file's tail), so 100 000 queues do not hold 100 000 descriptors.
//!
//! Costs: a cache hit copies the entries out (24 bytes each); a miss is one open and one
//! 20 KiB aligned read; a persist of a queue is one write + one fdatasync per file touched.

use super::lru::Lru;
use super::{
    decode_entries, file_path, file_pos, queue_dir, CqEntry, QueueMap, CQ_ENTRY_BYTES,
    FILE_ENTRIES, PAGE_ENTRIES,
};
use crate::append_file::AppendFile;
use crate::error::{Result, StoreError};
use crate::io::{Disk, DiskFile};
use crate::offset::parse_segment_file_name;
use std::cell::RefCell;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::pin::Pin;
use std::task::Poll;

/// Queue files a shard keeps open for persists: enough for the queues written every second
/// on a busy shard; beyond it a persist reopens the file (one open and one block read).
pub const QUEUE_FILES_OPEN_MAX: usize = 256;
/// Queue persists in flight at once: their fdatasyncs overlap (the file system commits them
/// together), so a persist of 100 000 queues is not 100 000 syncs one after the other.
pub const PERSISTS_IN_FLIGHT_MAX: usize = 64;
/// Bytes of queue-file writes in flight at once: the room a persist's write has in the
/// shard's registered I/O arena (`APPEND_WRITE_BYTES_MAX`); past the arena the kernel would
/// copy every byte. A larger write still goes, alone.
pub const PERSIST_BYTES_IN_FLIGHT_MAX: usize = crate::append_file::APPEND_WRITE_BYTES_MAX;
/// Memory of one cached page: its entries' allocation, what the cache's bound counts.
pub const PAGE_BYTES: usize = PAGE_ENTRIES as usize * std::mem::size_of::<CqEntry>();

/// The page cache and the open files. Owned by the shard; never sent across shards.
pub(crate) struct QueueFiles<F> {
    /// (queue id, page number) → the page's persisted entries, from its first on.
    pages: Lru<(u64, u64), Vec<CqEntry>>,
    /// Queue id → (file number, its append handle).
    open: Lru<u64, (u64, AppendFile<F>)>,
    /// Pages read from the disk (cache misses).
    reads: u64,
}

/// What the page cache holds and has done, for operators and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCacheStats {
    pub bytes: usize,
    pub pages: usize,
    /// Pages read from the disk.
    pub reads: u64,
    pub evictions: u64,
}

impl<F> QueueFiles<F> {
    pub(crate) fn new(cache_bytes_max: usize) -> Self {
        Self {
            pages: Lru::new(cache_bytes_max),
            open: Lru::new(QUEUE_FILES_OPEN_MAX),
            reads: 0,
        }
    }

    pub(crate) fn stats(&self) -> PageCacheStats {
        PageCacheStats {
            bytes: self.pages.weight(),
            pages: self.pages.len(),
            reads: self.reads,
            evictions: self.pages.evictions(),
        }
    }

    /// Keeps a page read from the disk, unless a longer copy is held already.
    fn keep_read(&mut self, key: (u64, u64), entries: Vec<CqEntry>) {
        if self
            .pages
            .get(&key)
            .is_some_and(|held| held.len() >= entries.len())
        {
            return;
        }
        self.pages.insert(key, entries, PAGE_BYTES);
    }

    /// Entries `from..` of queue `id` were just persisted: extends the cached pages they
    /// continue, and caches the pages they begin.
    fn keep_written(&mut self, id: u64, from: u64, mut entries: &[CqEntry]) {
        let mut at = from;
        while !entries.is_empty() {
            let (page, in_page) = (at / PAGE_ENTRIES, (at % PAGE_ENTRIES) as usize);
            let n = (PAGE_ENTRIES as usize - in_page).min(entries.len());
            let (piece, rest) = entries.split_at(n);
            match self.pages.get(&(id, page)) {
                Some(held) if held.len() == in_page => held.extend_from_slice(piece),
                Some(_) => {}
                None if in_page == 0 => {
                    let mut held = Vec::with_capacity(PAGE_ENTRIES as usize);
                    held.extend_from_slice(piece);
                    self.pages.insert((id, page), held, PAGE_BYTES);
                }
                None => {}
            }
            at += n as u64;
            entries = rest;
        }
    }
}

/// Reads `count` entries at byte `pos` of the queue file at `path`.
pub(crate) async fn read_file_entries<D: Disk>(
    disk: &D,
    path: &Path,
    pos: u64,
    count: usize,
    shard_id: u16,
) -> Result<Vec<CqEntry>> {
    let what = path.display().to_string();
    let file = disk.open(path, false).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::Corrupt {
            file: what.clone(),
            reason: "missing, though the checkpoint names its entries".into(),
        },
        _ => e.into(),
    })?;
    let bytes = file.read_at(pos, count * CQ_ENTRY_BYTES).await?;
    decode_entries(&bytes, count, shard_id, &what)
}

/// What one retention trim of a queue did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trimmed {
    pub old: u64,
    pub new: u64,
    /// The queue's id, and the numbers of its files now wholly below its min offset.
    pub id: u64,
    pub files: Range<u64>,
}

/// What reads and writes of queue files need, borrowed from the shard for one call.
pub(crate) struct QueueStore<'a, D: Disk> {
    pub disk: &'a D,
    pub dir: &'a Path,
    pub shard_id: u16,
    pub queues: &'a RefCell<QueueMap>,
    pub files: &'a RefCell<QueueFiles<D::File>>,
}

/// What a read of entries needs next.
enum Step {
    Done,
    /// Copied a cached page's part: look again.
    Copied,
    Read(PageRead),
}

/// A page to read from the disk, and the part of it the read wants.
struct PageRead {
    id: u64,
    page: u64,
    /// Entries persisted in it.
    count: usize,
    want: Range<usize>,
}

impl<D: Disk> QueueStore<'_, D> {
    /// Entries of offsets `from..to` of a queue, from its tail in memory, the page cache or
    /// its files: all of them (clamped to the queue's end), or fewer if the queue was trimmed
    /// past them or deleted meanwhile. None below the queue's min offset.
    pub(crate) async fn entries(
        &self,
        topic: &str,
        queue_id: i32,
        from: u64,
        to: u64,
    ) -> Result<Vec<CqEntry>> {
        let mut out = Vec::with_capacity(to.saturating_sub(from).min(PAGE_ENTRIES) as usize);
        loop {
            let at = from + out.len() as u64;
            let read = match self.copy_held(topic, queue_id, at, to, &mut out) {
                Step::Done => return Ok(out),
                Step::Copied => continue,
                Step::Read(read) => read,
            };
            let first = read.page * PAGE_ENTRIES;
            let path = file_path(self.dir, topic, queue_id, first / FILE_ENTRIES);
            let entries =
                read_file_entries(self.disk, &path, file_pos(first), read.count, self.shard_id)
                    .await?;
            out.extend_from_slice(&entries[read.want]);
            let mut files = self.files.borrow_mut();
            files.reads += 1;
            files.keep_read((read.id, read.page), entries);
        }
    }

    /// Copies what memory holds from `at` on into `out`; says which page to read if more is
    /// wanted.
    fn copy_held(
        &self,
        topic: &str,
        queue_id: i32,
        at: u64,
        to: u64,
        out: &mut Vec<CqEntry>,
    ) -> Step {
        let queues = self.queues.borrow();
        let Some(queue) = queues.get(topic, queue_id) else {
            return Step::Done;
        };
        let to = to.min(queue.end());
        if at < queue.base || at >= to {
            return Step::Done;
        }
        if at >= queue.tail_from {
            out.extend(queue.tail_range(at, to));
            return Step::Done;
        }
        debug_assert!(at < queue.persisted, "entries below the tail are in files");
        let (page, in_page) = (at / PAGE_ENTRIES, (at % PAGE_ENTRIES) as usize);
        let page_first = page * PAGE_ENTRIES;
        // Within the page, below the tail (which `to` may lie in) and the wanted end.
        let want_end = (to.min(queue.tail_from) - page_first).min(PAGE_ENTRIES) as usize;
        let mut files = self.files.borrow_mut();
        match files.pages.get(&(queue.id, page)) {
            Some(held) if in_page < held.len() => {
                out.extend_from_slice(&held[in_page..held.len().min(want_end)]);
                Step::Copied
            }
            _ => {
                let count = (queue.persisted - page_first).min(PAGE_ENTRIES) as usize;
                Step::Read(PageRead {
                    id: queue.id,
                    page,
                    count,
                    want: in_page..want_end.min(count),
                })
            }
        }
    }

    /// The entry at `offset` of a queue, if it holds one.
    pub(crate) async fn entry_at(
        &self,
        topic: &str,
        queue_id: i32,
        offset: u64,
    ) -> Result<Option<CqEntry>> {
        let entries = self.entries(topic, queue_id, offset, offset + 1).await?;
        Ok(entries.first().copied())
    }

    /// Persists every queue of `keys` (see [`Self::persist`]), several at once within
    /// [`PERSISTS_IN_FLIGHT_MAX`] and [`PERSIST_BYTES_IN_FLIGHT_MAX`]; on an error the others
    /// in flight finish, no further one starts, and the first error is returned.
    pub(crate) async fn persist_all(&self, keys: &[(String, i32)], boundary: u64) -> Result<()> {
        type Persist<'a> = Pin<Box<dyn Future<Output = Result<()>> + 'a>>;
        let mut next = keys.iter();
        let mut in_flight: Vec<(usize, Persist<'_>)> = Vec::new();
        let (mut bytes, mut failed) = (0, None);
        std::future::poll_fn(|cx| loop {
            while failed.is_none() && in_flight.len() < PERSISTS_IN_FLIGHT_MAX {
                let Some((topic, queue_id)) = next.as_slice().first() else {
                    break;
                };
                let cost = self.unpersisted_bytes(topic, *queue_id, boundary);
                if cost > 0 && !in_flight.is_empty() && bytes + cost > PERSIST_BYTES_IN_FLIGHT_MAX {
                    break;
                }
                next.next();
                if cost > 0 {
                    bytes += cost;
                    in_flight.push((cost, Box::pin(self.persist(topic, *queue_id, boundary))));
                }
            }
            let before = in_flight.len();
            in_flight.retain_mut(|(cost, persist)| match persist.as_mut().poll(cx) {
                Poll::Pending => true,
                Poll::Ready(result) => {
                    bytes -= *cost;
                    if let Err(e) = result {
                        failed.get_or_insert(e);
                    }
                    false
                }
            });
            let done = failed.is_some() || next.as_slice().is_empty();
            if in_flight.is_empty() && done {
                return Poll::Ready(failed.take().map_or(Ok(()), Err));
            }
            if in_flight.len() == before {
                return Poll::Pending;
            }
        })
        .await
    }

    /// What a persist of the queue would write: its entries below `boundary` not yet in its
    /// files, and the partial block it rewrites.
    fn unpersisted_bytes(&self, topic: &str, queue_id: i32, boundary: u64) -> usize {
        let queues = self.queues.borrow();
        let Some(queue) = queues.get(topic, queue_id) else {
            return 0;
        };
        match queue.visible_end(boundary).saturating_sub(queue.persisted) as usize {
            0 => 0,
            n => n * CQ_ENTRY_BYTES + crate::io::BLOCK_BYTES,
        }
    }

    /// Writes a queue's entries below the log's durable `boundary` into its files (one append
    /// per file touched), then drops them from memory. The caller holds the persist lock.
    pub(crate) async fn persist(&self, topic: &str, queue_id: i32, boundary: u64) -> Result<()> {
        const HELD: &str = "queues are removed only under the persist lock";
        let (id, from, entries) = {
            let queues = self.queues.borrow();
            let queue = queues.get(topic, queue_id).expect(HELD);
            let end = queue.visible_end(boundary);
            if end <= queue.persisted {
                return Ok(());
            }
            let entries: Vec<CqEntry> = queue.tail_range(queue.persisted, end).copied().collect();
            assert_eq!(
                entries.len() as u64,
                end - queue.persisted,
                "unpersisted entries are held"
            );
            (queue.id, queue.persisted, entries)
        };
        let mut at = from;
        let mut rest = &entries[..];
        while !rest.is_empty() {
            let n = ((FILE_ENTRIES - at % FILE_ENTRIES) as usize).min(rest.len());
            let (piece, more) = rest.split_at(n);
            self.append_to_file(topic, queue_id, (id, at), piece)
                .await?;
            let mut queues = self.queues.borrow_mut();
            queues.get_mut(topic, queue_id).expect(HELD).persisted = at + n as u64;
            self.files.borrow_mut().keep_written(id, at, piece);
            (at, rest) = (at + n as u64, more);
        }
        let mut queues = self.queues.borrow_mut();
        queues
            .get_mut(topic, queue_id)
            .expect(HELD)
            .drop_persisted();
        Ok(())
    }

    /// Appends `piece` (entries from `at`, all in one file) to queue `id`'s file.
    async fn append_to_file(
        &self,
        topic: &str,
        queue_id: i32,
        (id, at): (u64, u64),
        piece: &[CqEntry],
    ) -> Result<()> {
        let (file_no, pos) = (at / FILE_ENTRIES, file_pos(at));
        let held = self.files.borrow_mut().open.remove(&id);
        let mut file = match held {
            Some((no, file)) if no == file_no && file.len() == pos => file,
            _ => {
                let path = file_path(self.dir, topic, queue_id, file_no);
                AppendFile::open(self.disk, &path, pos).await?
            }
        };
        let data: Vec<u8> = piece.iter().flat_map(|e| e.encode(self.shard_id)).collect();
        let result = file.append(&data).await;
        // Kept on failure too: a failed append changes nothing, and the retry rewrites it.
        self.files.borrow_mut().open.insert(id, (file_no, file), 1);
        result
    }

    /// Moves a queue's min offset past its entries whose record starts below `local` (their
    /// segment is going), by binary search over its entries; `None` if it has none there.
    /// The caller holds the persist lock.
    pub(crate) async fn trim_below(
        &self,
        topic: &str,
        queue_id: i32,
        local: u64,
    ) -> Result<Option<Trimmed>> {
        let (base, stop) = {
            let queues = self.queues.borrow();
            let Some(queue) = queues.get(topic, queue_id) else {
                return Ok(None);
            };
            if queue.first_local.is_none_or(|first| first >= local) {
                return Ok(None);
            }
            (queue.base, queue.end())
        };
        let vanished = || StoreError::Corrupt {
            file: queue_dir(self.dir, topic, queue_id).display().to_string(),
            reason: "an entry below the queue's end is missing".into(),
        };
        let (mut lo, mut hi) = (base + 1, stop);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let entry = self.entry_at(topic, queue_id, mid).await?;
            if entry.ok_or_else(vanished)?.local < local {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut first_local = self.entry_at(topic, queue_id, lo).await?.map(|e| e.local);
        let mut queues = self.queues.borrow_mut();
        let queue = queues.get_mut(topic, queue_id).ok_or_else(vanished)?;
        // Appended while the search read: its entry is the new first.
        first_local = first_local.or_else(|| queue.tail_get(lo).map(|e| e.local));
        let (old, new) = queue.trim_to(lo, first_local);
        Ok(Some(Trimmed {
            old,
            new,
            id: queue.id,
            files: old / FILE_ENTRIES..new / FILE_ENTRIES,
        }))
    }

    /// Removes the files of queue `id` numbered below `below` (all of them for `None`),
    /// however many a crash left behind, and forgets its open handle if it is one of them.
    pub(crate) async fn remove_files(
        &self,
        (topic, queue_id): (&str, i32),
        id: u64,
        below: Option<u64>,
    ) -> Result<()> {
        let dir = queue_dir(self.dir, topic, queue_id);
        let names = match self.disk.list_dir(&dir).await {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let file_bytes = FILE_ENTRIES * CQ_ENTRY_BYTES as u64;
        let doomed = |file_no: u64| below.is_none_or(|below| file_no < below);
        {
            let mut files = self.files.borrow_mut();
            if files.open.get(&id).is_some_and(|(no, _)| doomed(*no)) {
                files.open.remove(&id);
            }
        }
        let mut removed = false;
        for name in names {
            let Some(first_byte) = parse_segment_file_name(&name) else {
                continue;
            };
            if doomed(first_byte / file_bytes) {
                removed |= crate::shard::remove_if_there(self.disk, &dir.join(&name)).await?;
            }
        }
        if removed {
            self.disk.sync_dir(&dir).await?;
        }
        Ok(())
    }
}

/// Entries `from..to` of a queue read straight from its files (no cache): a resident queue's
/// persisted entries at start.
pub(crate) async fn read_span<D: Disk>(
    disk: &D,
    dir: &Path,
    (topic, queue_id): (&str, i32),
    span: Range<u64>,
    shard_id: u16,
) -> Result<Vec<CqEntry>> {
    let mut out = Vec::with_capacity((span.end - span.start) as usize);
    let mut at = span.start;
    while at < span.end {
        let n = (FILE_ENTRIES - at % FILE_ENTRIES).min(span.end - at);
        let path = file_path(dir, topic, queue_id, at / FILE_ENTRIES);
        out.extend(read_file_entries(disk, &path, file_pos(at), n as usize, shard_id).await?);
        at += n;
    }
    Ok(out)
}
