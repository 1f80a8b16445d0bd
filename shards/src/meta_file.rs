//! Crash-safe small files (checkpoint, consumer offsets), replaced whole through
//! [`replace_file`]. The file carries a magic, a sequence number and a crc32c, so a torn or
//! foreign file is detected, never trusted.
//!
//! Layout: `magic u32 | seq u64 | payload_len u32 | crc32c(seq, payload_len, payload) u32 |
//! payload` (files written before the exact-length replace are padded with zeros to whole
//! blocks; the reader ignores what follows the payload).

use crate::error::{Result, StoreError};
use crate::file_replace::replace_file;
use crate::io::{Disk, DiskFile};
use std::path::Path;

/// "RMQM": identifies our metadata files.
const META_MAGIC: u32 = 0x524D_514D;
const HEADER_BYTES: usize = 20;
/// Metadata files stay small; a larger one is corrupt, not something to allocate for.
pub const META_PAYLOAD_BYTES_MAX: usize = 64 << 20;

fn corrupt(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        file: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Replaces the file at `path` with `payload` framed as above, atomically and durably.
pub async fn write_meta<D: Disk>(disk: &D, path: &Path, seq: u64, payload: &[u8]) -> Result<()> {
    if payload.len() > META_PAYLOAD_BYTES_MAX {
        return Err(StoreError::LimitReached("metadata file size"));
    }
    let mut file = Vec::with_capacity(HEADER_BYTES + payload.len());
    file.extend_from_slice(&META_MAGIC.to_be_bytes());
    file.extend_from_slice(&seq.to_be_bytes());
    file.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&file[4..16]), payload);
    file.extend_from_slice(&crc.to_be_bytes());
    file.extend_from_slice(payload);
    replace_file(disk, path, &file).await?;
    Ok(())
}

/// Reads the file at `path`: `None` if it does not exist, its (seq, payload) if valid.
pub async fn read_meta<D: Disk>(disk: &D, path: &Path) -> Result<Option<(u64, Vec<u8>)>> {
    if !disk.exists(path).await? {
        return Ok(None);
    }
    let file = disk.open(path, false).await?;
    let head = file.read_at(0, HEADER_BYTES).await?;
    if head.len() < HEADER_BYTES || head[0..4] != META_MAGIC.to_be_bytes() {
        return Err(corrupt(path, "bad header"));
    }
    let seq = u64::from_be_bytes(head[4..12].try_into().expect("sized"));
    let len = u32::from_be_bytes(head[12..16].try_into().expect("sized")) as usize;
    if len > META_PAYLOAD_BYTES_MAX {
        return Err(corrupt(path, "payload length out of bounds"));
    }
    let payload = file.read_at(HEADER_BYTES as u64, len).await?;
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head[4..16]), &payload);
    if payload.len() != len || head[16..20] != crc.to_be_bytes() {
        return Err(corrupt(path, "checksum mismatch"));
    }
    Ok(Some((seq, payload.to_vec())))
}

/// Builds a payload: big-endian integers and length-prefixed strings.
#[derive(Default)]
pub struct MetaWriter(pub Vec<u8>);

impl MetaWriter {
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A string of at most `u16::MAX` bytes (topics and groups are far shorter).
    pub fn str(&mut self, s: &str) -> &mut Self {
        let len = s.len().min(u16::MAX as usize);
        self.0.extend_from_slice(&(len as u16).to_be_bytes());
        self.0.extend_from_slice(&s.as_bytes()[..len]);
        self
    }
}

/// Reads a payload written by [`MetaWriter`]; running short is a typed error.
pub struct MetaReader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> MetaReader<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Self { buf, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(StoreError::Corrupt {
                file: self.what.into(),
                reason: "payload truncated".into(),
            });
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("sized")))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("sized")))
    }

    pub fn str(&mut self) -> Result<String> {
        let len = u16::from_be_bytes(self.take(2)?.try_into().expect("sized")) as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| StoreError::Corrupt {
            file: self.what.into(),
            reason: "string is not UTF-8".into(),
        })
    }

    /// Whether the whole payload was read.
    pub fn is_done(&self) -> bool {
        self.buf.is_empty()
    }

    /// Checks that the whole payload was read: trailing bytes mean a format mismatch.
    pub fn finish(&self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        Err(StoreError::Corrupt {
            file: self.what.into(),
            reason: "trailing bytes".into(),
        })
    }
}
