//! The storage layer's one error type; the broker maps it to response codes in one place.

use crate::record::RecordError;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid message: {0}")]
    Record(#[from] RecordError),
    /// The disk is full: nothing of the operation was stored; retry when space returns.
    #[error("disk full: {0}")]
    DiskFull(std::io::Error),
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// A bounded resource is exhausted; the caller should back off.
    #[error("limit reached: {0}")]
    LimitReached(&'static str),
    #[error("record of {len} bytes does not fit a {segment_bytes}-byte segment")]
    RecordTooLarge { len: usize, segment_bytes: u64 },
    #[error("offset {0} is not a record of this shard")]
    NoSuchRecord(i64),
    #[error("corrupt store file {file}: {reason}")]
    Corrupt { file: String, reason: String },
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            StoreError::DiskFull(e)
        } else {
            StoreError::Io(e)
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;
