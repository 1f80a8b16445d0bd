//! Physical offsets: where a record lives, as the shard sees it and as clients see it.
//!
//! A shard's commit log has its own LOCAL offsets (byte positions in the shard's log; segment
//! files are named by their 20-digit local start offset). Clients see the PHYSICAL offset
//! `shard_id << 48 | local_offset` (in offsetMsgId, `MessageExt.commitLogOffset`,
//! CONSUMER_SEND_MSG_BACK), so a lookup by offset is routed to the owning shard by its high
//! bits. The shard id stays below 2^15 so the value is a positive Java `long`; 2^48 bytes
//! (256 TiB) per shard log is the local limit. Shard 0's physical offsets equal its local ones.

/// Bits of a physical offset that hold the local offset.
pub const LOCAL_OFFSET_BITS: u32 = 48;
/// Largest local offset: the bits below the shard id.
pub const LOCAL_OFFSET_MAX: u64 = (1 << LOCAL_OFFSET_BITS) - 1;
/// Shard ids stay below 2^15 so that `shard << 48` keeps Java's i64 positive.
pub const SHARD_ID_MAX: u16 = (1 << 15) - 1;

/// A client-visible physical offset: shard id in the high 16 bits, local offset below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PhysicalOffset(i64);

impl PhysicalOffset {
    /// Combines a shard id (≤ [`SHARD_ID_MAX`]) and a local offset (≤ [`LOCAL_OFFSET_MAX`]).
    pub fn new(shard_id: u16, local: u64) -> Self {
        assert!(shard_id <= SHARD_ID_MAX, "shard id {shard_id} too large");
        assert!(local <= LOCAL_OFFSET_MAX, "local offset {local} too large");
        Self(((shard_id as i64) << LOCAL_OFFSET_BITS) | local as i64)
    }

    /// Interprets a value received from a client; `None` if it is negative.
    pub fn from_wire(value: i64) -> Option<Self> {
        (value >= 0).then_some(Self(value))
    }

    /// The value written in records and sent to clients.
    pub fn to_wire(self) -> i64 {
        self.0
    }

    /// The shard that owns the record.
    pub fn shard_id(self) -> u16 {
        (self.0 >> LOCAL_OFFSET_BITS) as u16
    }

    /// The byte position in that shard's commit log.
    pub fn local(self) -> u64 {
        self.0 as u64 & LOCAL_OFFSET_MAX
    }
}

/// The 20-digit zero-padded file name of a segment starting at `local` (RocketMQ's
/// `UtilAll.offset2FileName`).
pub fn segment_file_name(local: u64) -> String {
    format!("{local:020}")
}

/// Parses a segment file name back into its local start offset.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_bits_round_trip_and_stay_positive() {
        let p = PhysicalOffset::new(SHARD_ID_MAX, LOCAL_OFFSET_MAX);
        assert!(p.to_wire() > 0);
        assert_eq!(p.shard_id(), SHARD_ID_MAX);
        assert_eq!(p.local(), LOCAL_OFFSET_MAX);
        assert_eq!(PhysicalOffset::new(0, 1234).to_wire(), 1234);
        assert_eq!(PhysicalOffset::new(3, 5).to_wire(), (3 << 48) | 5);
        assert_eq!(PhysicalOffset::from_wire(-1), None);
    }

    #[test]
    fn segment_names() {
        assert_eq!(segment_file_name(1 << 30), "00000000001073741824");
        assert_eq!(
            parse_segment_file_name("00000000001073741824"),
            Some(1 << 30)
        );
        assert_eq!(parse_segment_file_name("0000000000107374182x"), None);
        assert_eq!(parse_segment_file_name("checkpoint"), None);
    }
}
