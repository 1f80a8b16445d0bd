//! The storage layer's one error type; the broker maps it to response codes in one place.

use crate::record::RecordError;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid message: {0}")]
    Record(#[from] RecordError),
    /// The disk is full: nothing of the operation was stored; retry when space returns. The
    /// text names the disk full and its usage as Apache's "service not available" remark does.
    #[error("the broker's disk is full [{0}]")]
    DiskFull(DiskFull),
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

/// How the disk is full.
#[derive(Debug, thiserror::Error)]
pub enum DiskFull {
    /// A write or a preallocation found no space left (ENOSPC).
    #[error("{0}")]
    NoSpace(std::io::Error),
    /// The partition is fuller than `diskSpaceWarningLevelRatio`: appends are refused before
    /// the last bytes go, so the checkpoints and queue files that retention writes to free
    /// space still fit (Apache's "mark disk full").
    #[error("CL: {used_ratio:.2} used, above diskSpaceWarningLevelRatio {warning_ratio:.2}")]
    AboveWarningLevel { used_ratio: f64, warning_ratio: f64 },
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        // glommio passes a failed I/O on as a new error of the same kind, without the errno
        // (seen: a segment's preallocation on a full tmpfs), so the kind decides too.
        if e.raw_os_error() == Some(libc::ENOSPC) || e.kind() == std::io::ErrorKind::StorageFull {
            StoreError::DiskFull(DiskFull::NoSpace(e))
        } else {
            StoreError::Io(e)
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_space_is_a_full_disk_with_or_without_its_errno() {
        let errno = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let kind_only = std::io::Error::new(std::io::ErrorKind::StorageFull, "op: Pre-allocate");
        for e in [errno, kind_only] {
            assert!(matches!(
                StoreError::from(e),
                StoreError::DiskFull(DiskFull::NoSpace(_))
            ));
        }
        let other = std::io::Error::from_raw_os_error(libc::EIO);
        assert!(matches!(StoreError::from(other), StoreError::Io(_)));
    }
}
