//! Recovery scan: walks the commit log from a checkpoint and stops at the first entry that is
//! not a valid continuation of the log: bad magic, a length out of bounds or past the
//! segment's room, a record whose fields do not add up, a wrong BODYCRC, or a trailer that
//! does not continue the crc32c chain (torn header, torn tail, stale record). Everything
//! before that point is kept; the caller truncates the rest.

use crate::commit_log::{chain_next, entry_fits, LogPosition, FILLER_BYTES, TRAILER_BYTES};
use crate::error::Result;
use crate::io::{Disk, DiskFile};
use crate::offset::segment_file_name;
use crate::record::{peek_header, RecordView, MAGIC_BLANK, RECORD_BYTES_MAX, RECORD_BYTES_MIN};
use bytes::Bytes;
use std::path::Path;

/// Bytes read per I/O while scanning: large sequential reads, bounded memory.
const SCAN_READ_BYTES: usize = 128 << 10;

/// A read-ahead window over one segment file.
struct Window<'a, F> {
    file: &'a F,
    start: u64,
    bytes: Bytes,
}

impl<F: DiskFile> Window<'_, F> {
    /// The `len` bytes at file position `pos`, or fewer if the file ends first.
    async fn get(&mut self, pos: u64, len: usize) -> Result<Bytes> {
        let have_end = self.start + self.bytes.len() as u64;
        if pos < self.start || pos + len as u64 > have_end {
            self.bytes = self.file.read_at(pos, len.max(SCAN_READ_BYTES)).await?;
            self.start = pos;
        }
        let from = (pos - self.start) as usize;
        let to = (from + len).min(self.bytes.len());
        Ok(self.bytes.slice(from.min(to)..to))
    }
}

/// Scans from `start` and calls `visit(record, local_offset)` for each valid record, in log
/// order; `visit` returning false (e.g. a queue offset out of sequence) ends the log there.
/// Returns the end of the valid log.
pub(crate) async fn scan_log<D: Disk>(
    disk: &D,
    dir: &Path,
    segment_bytes: u64,
    start: LogPosition,
    mut visit: impl FnMut(&RecordView, u64) -> bool,
) -> Result<LogPosition> {
    let mut pos = start;
    loop {
        let segment = pos.local - pos.local % segment_bytes;
        let segment_end = segment + segment_bytes;
        let path = dir.join(segment_file_name(segment));
        if !disk.exists(&path).await? {
            return Ok(pos);
        }
        let file = disk.open(&path, false).await?;
        let mut window = Window {
            file: &file,
            start: 0,
            bytes: Bytes::new(),
        };
        loop {
            let head = window.get(pos.local - segment, 8).await?;
            let Some((size, magic)) = peek_header(&head) else {
                return Ok(pos);
            };
            if magic == MAGIC_BLANK {
                let filler = window.get(pos.local - segment, FILLER_BYTES).await?;
                let chain = chain_next(pos.chain, &filler[..8.min(filler.len())]);
                let trailer_ok = filler.len() == FILLER_BYTES && filler[8..] == chain.to_be_bytes();
                if !trailer_ok || i64::from(size) != (segment_end - pos.local) as i64 {
                    return Ok(pos);
                }
                pos = LogPosition {
                    local: segment_end,
                    chain,
                };
                break;
            }
            let size = size as usize;
            if !(RECORD_BYTES_MIN..=RECORD_BYTES_MAX).contains(&size)
                || !entry_fits(pos.local, size + TRAILER_BYTES, segment_end)
            {
                return Ok(pos);
            }
            let entry = window
                .get(pos.local - segment, size + TRAILER_BYTES)
                .await?;
            if entry.len() != size + TRAILER_BYTES {
                return Ok(pos);
            }
            let chain = chain_next(pos.chain, &entry[..size]);
            if entry[size..] != chain.to_be_bytes() {
                return Ok(pos);
            }
            let Ok(view) = RecordView::parse(entry.slice(..size)) else {
                return Ok(pos);
            };
            if !view.body_crc_ok() || !visit(&view, pos.local) {
                return Ok(pos);
            }
            pos = LogPosition {
                local: pos.local + (size + TRAILER_BYTES) as u64,
                chain,
            };
        }
    }
}
