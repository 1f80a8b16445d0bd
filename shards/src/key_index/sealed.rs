//! A sealed segment's key index: once the log has left a segment and every entry of it is
//! durable, its hits are written once, sorted by key hash, to `index/<segment start>.sealed`
//! and leave memory. Start-up reads only each file's header (the page fence); a lookup reads
//! the one or two 4 KiB pages its hash falls in. So neither memory nor start-up time grows
//! with the number of sealed segments' messages (Apache's IndexFile is likewise a hash file
//! per period, read through mmap).
//!
//! Layout (integers big-endian), every part a whole number of [`PAGE_BYTES`] blocks:
//! - header: `magic u64 | version u32 | pages u32 | entries u64 | segment start u64 |
//!   fence (first hash of each page) pages × u64 | crc32c u32` of all before it, padded;
//! - pages: `count u32 | count × (hash u64, local u64, store timestamp i64) | padding |
//!   crc32c u32` over the page's first `PAGE_BYTES - 4` bytes.
//!
//! Entries are sorted by (hash, local), so one key's hits are contiguous and in log order.
//! A lookup matches on the 64-bit hash alone: two keys of one topic colliding would return
//! each other's records, which RocketMQ allows (Apache matches 32-bit hashes and its clients
//! filter the records by key).

use super::{sealed_path, KeyHit};
use crate::error::{Result, StoreError};
use crate::file_replace::tmp_path;
use crate::io::{Disk, DiskFile};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

/// Unit of the file and of a lookup's read: the O_DIRECT block.
pub const PAGE_BYTES: usize = crate::io::BLOCK_BYTES;
/// An entry, in a page as in an append file: `hash u64 | local u64 | store ms i64`.
pub const ENTRY_BYTES: usize = 24;
/// Entries per page: what fits between the count and the checksum.
pub const PAGE_ENTRIES: usize = (PAGE_BYTES - 8) / ENTRY_BYTES;
const MAGIC: u64 = u64::from_be_bytes(*b"RMQKIDX1");
const VERSION: u32 = 1;
const HEADER_FIXED_BYTES: usize = 8 + 4 + 4 + 8 + 8;
/// Entries sorted in one go before the executor is yielded: sealing a segment of millions of
/// hits must not hold a shard's appends for the whole sort (2^16 entries sort in ~2 ms).
const SORT_STEP: usize = 1 << 16;
/// Pages gathered into one write (256 KiB): few I/Os, and a buffer that fits the shard's
/// registered arena beside a group commit in flight (see the broker's SHARD_IO_MEMORY_BYTES).
const WRITE_PAGES: usize = 64;
/// A key's hits in one segment are read at most this many pages at a time, so a hot key
/// (millions of hits of one KEYS token) costs bounded memory per read.
const READ_PAGES_MAX: usize = 64;
/// The largest header accepted at start: a fence for [`crate::config::INDEX_ENTRIES_MAX_DEFAULT`]
/// entries twice over; a larger one is corruption, not something to allocate for.
const HEADER_BYTES_MAX: usize = 8 << 20;

/// One hit as persisted: the key's hash, the record, its store time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SealedEntry {
    pub hash: u64,
    pub local: u64,
    pub store_timestamp_ms: i64,
}

impl SealedEntry {
    pub fn of(hash: u64, hit: KeyHit) -> Self {
        Self {
            hash,
            local: hit.local,
            store_timestamp_ms: hit.store_timestamp_ms,
        }
    }

    pub fn hit(&self) -> KeyHit {
        KeyHit {
            local: self.local,
            store_timestamp_ms: self.store_timestamp_ms,
        }
    }

    pub fn encode(&self) -> [u8; ENTRY_BYTES] {
        let mut out = [0u8; ENTRY_BYTES];
        out[..8].copy_from_slice(&self.hash.to_be_bytes());
        out[8..16].copy_from_slice(&self.local.to_be_bytes());
        out[16..].copy_from_slice(&self.store_timestamp_ms.to_be_bytes());
        out
    }

    /// From the first [`ENTRY_BYTES`] of `raw` (the caller checked its length).
    pub fn decode(raw: &[u8]) -> Self {
        Self {
            hash: be_u64(raw, 0),
            local: be_u64(raw, 8),
            store_timestamp_ms: be_u64(raw, 16) as i64,
        }
    }
}

/// FNV-1a, 64 bits, of `topic#key`: stable across builds and platforms (the files outlive
/// the binary), and cheap for the short keys indexed.
pub fn key_hash(topic: &str, key: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    [topic.as_bytes(), b"#", key.as_bytes()]
        .into_iter()
        .flatten()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// A sealed index on disk, with its fence in memory (8 bytes per page: about 0.05 bytes per
/// hit).
pub struct SealedIndex<F> {
    file: F,
    entries: u64,
    fence: Vec<u64>,
    header_bytes: u64,
}

impl<F> SealedIndex<F> {
    pub fn entries(&self) -> u64 {
        self.entries
    }
}

impl<F: DiskFile> SealedIndex<F> {
    /// Opens a sealed file, reading and checking its header only.
    pub async fn open<D: Disk<File = F>>(disk: &D, path: &Path, start: u64) -> Result<Self> {
        let corrupt = |reason: &str| StoreError::Corrupt {
            file: path.display().to_string(),
            reason: reason.into(),
        };
        let file = disk.open(path, false).await?;
        let first = file.read_at(0, PAGE_BYTES).await?;
        if first.len() < HEADER_FIXED_BYTES || be_u64(&first, 0) != MAGIC {
            return Err(corrupt("not a sealed index"));
        }
        if be_u32(&first, 8) != VERSION || be_u64(&first, 24) != start {
            return Err(corrupt("another version or segment"));
        }
        let pages = be_u32(&first, 12) as usize;
        let header_len = HEADER_FIXED_BYTES + pages * 8 + 4;
        if header_len > HEADER_BYTES_MAX {
            return Err(corrupt("header larger than any index"));
        }
        let header = if header_len <= first.len() {
            first
        } else {
            file.read_at(0, header_len).await?
        };
        if header.len() < header_len
            || be_u32(&header, header_len - 4) != crc32c::crc32c(&header[..header_len - 4])
        {
            return Err(corrupt("header truncated or its checksum differs"));
        }
        let header_bytes = round_up(header_len) as u64;
        if file.len().await? < header_bytes + (pages * PAGE_BYTES) as u64 {
            return Err(corrupt("shorter than its pages"));
        }
        let fence = (0..pages)
            .map(|i| be_u64(&header, HEADER_FIXED_BYTES + i * 8))
            .collect();
        Ok(Self {
            file,
            entries: be_u64(&header, 16),
            fence,
            header_bytes,
        })
    }

    /// The newest `max` hits of `hash` for which `keep` holds, in log order.
    pub async fn lookup(
        &self,
        hash: u64,
        max: usize,
        keep: impl Fn(&SealedEntry) -> bool,
    ) -> Result<Vec<SealedEntry>> {
        // Pages whose range may hold `hash`: from the last one starting below it (its run
        // may begin there) to the last one starting at it.
        let first = self.fence.partition_point(|&h| h < hash).saturating_sub(1);
        let end = self.fence.partition_point(|&h| h <= hash);
        let mut found = Vec::new();
        let mut page = first;
        while page < end {
            let n = (end - page).min(READ_PAGES_MAX);
            let pos = self.header_bytes + (page * PAGE_BYTES) as u64;
            let bytes = self.file.read_at(pos, n * PAGE_BYTES).await?;
            for i in 0..n {
                let raw = bytes.get(i * PAGE_BYTES..(i + 1) * PAGE_BYTES);
                let entries = raw.and_then(page_entries).ok_or(StoreError::Corrupt {
                    file: "sealed index".into(),
                    reason: format!("page {} truncated or its checksum differs", page + i),
                })?;
                found.extend(entries.filter(|e| e.hash == hash && keep(e)));
            }
            page += n;
        }
        let skip = found.len().saturating_sub(max);
        found.drain(..skip);
        Ok(found)
    }
}

/// Writes `entries` (any order; sorted here, in steps) as the sealed index of the segment at
/// `start`: a new copy beside the final name, synced, then renamed and the directory synced,
/// so a crash leaves the whole file or none. Returns it opened.
pub async fn write_sealed<D: Disk>(
    disk: &D,
    dir: &Path,
    start: u64,
    entries: &mut [SealedEntry],
) -> Result<SealedIndex<D::File>> {
    let path = sealed_path(dir, start);
    let tmp = tmp_path(&path);
    let runs = sort_in_steps(entries).await;
    let pages = entries.len().div_ceil(PAGE_ENTRIES);
    let file = disk.open(&tmp, true).await?;
    // Pages first, after room for the header, which needs their fence.
    let header_bytes = round_up(HEADER_FIXED_BYTES + pages * 8 + 4);
    let mut pos = header_bytes as u64;
    let mut merged = Merge::new(entries, &runs);
    let mut fence = Vec::with_capacity(pages);
    let mut left = pages;
    while left > 0 {
        let n = left.min(WRITE_PAGES);
        let mut buf = file.alloc_buffer(n * PAGE_BYTES);
        for page in buf.as_mut().chunks_exact_mut(PAGE_BYTES) {
            fence.push(encode_page(page, &mut merged));
        }
        file.write_at(pos, buf).await?;
        pos += (n * PAGE_BYTES) as u64;
        left -= n;
        futures_lite::future::yield_now().await;
    }
    let header = encode_header(start, entries.len(), &fence);
    debug_assert_eq!(header.len(), header_bytes);
    let mut buf = file.alloc_buffer(header.len());
    buf.as_mut().copy_from_slice(&header);
    file.write_at(0, buf).await?;
    file.truncate(pos).await?;
    file.sync().await?;
    drop(file);
    disk.rename(&tmp, &path).await?;
    disk.sync_dir(&dir.join("index")).await?;
    SealedIndex::open(disk, &path, start).await
}

/// Sorts `entries` in runs of [`SORT_STEP`], yielding between runs; returns the runs' ends.
async fn sort_in_steps(entries: &mut [SealedEntry]) -> Vec<usize> {
    let mut ends = Vec::with_capacity(entries.len().div_ceil(SORT_STEP));
    for (i, run) in entries.chunks_mut(SORT_STEP).enumerate() {
        run.sort_unstable();
        ends.push(i * SORT_STEP + run.len());
        futures_lite::future::yield_now().await;
    }
    ends
}

/// The sorted runs merged, smallest first.
struct Merge<'a> {
    entries: &'a [SealedEntry],
    /// (next entry of a run, its index, the run's end).
    heads: BinaryHeap<Reverse<(SealedEntry, usize, usize)>>,
}

impl<'a> Merge<'a> {
    fn new(entries: &'a [SealedEntry], ends: &[usize]) -> Self {
        let mut heads = BinaryHeap::with_capacity(ends.len());
        let mut begin = 0;
        for &end in ends {
            if begin < end {
                heads.push(Reverse((entries[begin], begin, end)));
            }
            begin = end;
        }
        Self { entries, heads }
    }
}

impl Iterator for Merge<'_> {
    type Item = SealedEntry;

    fn next(&mut self) -> Option<SealedEntry> {
        let Reverse((entry, at, end)) = self.heads.pop()?;
        if at + 1 < end {
            self.heads
                .push(Reverse((self.entries[at + 1], at + 1, end)));
        }
        Some(entry)
    }
}

fn encode_header(start: u64, entries: usize, fence: &[u64]) -> Vec<u8> {
    let len = HEADER_FIXED_BYTES + fence.len() * 8 + 4;
    let mut h = Vec::with_capacity(round_up(len));
    h.extend_from_slice(&MAGIC.to_be_bytes());
    h.extend_from_slice(&VERSION.to_be_bytes());
    h.extend_from_slice(&(fence.len() as u32).to_be_bytes());
    h.extend_from_slice(&(entries as u64).to_be_bytes());
    h.extend_from_slice(&start.to_be_bytes());
    for first in fence {
        h.extend_from_slice(&first.to_be_bytes());
    }
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_be_bytes());
    h.resize(round_up(len), 0);
    h
}

/// Fills `page` with up to [`PAGE_ENTRIES`] entries taken from `entries`; returns the first
/// one's hash (the page's fence value). Called only while entries remain.
fn encode_page(page: &mut [u8], entries: &mut impl Iterator<Item = SealedEntry>) -> u64 {
    page.fill(0);
    let mut count = 0;
    let mut first = None;
    for entry in entries.take(PAGE_ENTRIES) {
        first.get_or_insert(entry.hash);
        let at = 4 + count * ENTRY_BYTES;
        page[at..at + ENTRY_BYTES].copy_from_slice(&entry.encode());
        count += 1;
    }
    page[..4].copy_from_slice(&(count as u32).to_be_bytes());
    let crc = crc32c::crc32c(&page[..PAGE_BYTES - 4]);
    page[PAGE_BYTES - 4..].copy_from_slice(&crc.to_be_bytes());
    first.expect("a page is written only while entries remain")
}

/// A page's entries, or None when it is short, its checksum differs or its count is too large.
fn page_entries(page: &[u8]) -> Option<impl Iterator<Item = SealedEntry> + '_> {
    let count = be_u32(page, 0) as usize;
    let valid = page.len() == PAGE_BYTES
        && count <= PAGE_ENTRIES
        && be_u32(page, PAGE_BYTES - 4) == crc32c::crc32c(&page[..PAGE_BYTES - 4]);
    valid.then(|| (0..count).map(move |i| SealedEntry::decode(&page[4 + i * ENTRY_BYTES..])))
}

fn round_up(len: usize) -> usize {
    len.div_ceil(PAGE_BYTES) * PAGE_BYTES
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[cfg(test)]
#[path = "sealed_tests.rs"]
mod tests;
