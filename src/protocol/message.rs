//! Message formats around the stored record: the record itself is `ringmq_shards::record`
//! (re-exported here as [`record`], one codec for store and wire), plus what only the protocol
//! needs: pull bodies (records back to back), SEND_BATCH_MESSAGE bodies, offsetMsgId and
//! UNIQ_KEY ids (REMOTING.md §6).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{BufMut, Bytes, BytesMut};

use record::{Message, RecordError, RecordView, StoreFields};
pub use ringmq_shards::record;

/// Default limit on one message body: RocketMQ's `maxMessageSize` (4 MiB), which producers
/// also enforce. A broker may configure a lower one via [`MessageLimits`]; the store's record
/// format caps it at `record::BODY_BYTES_MAX`.
pub const MESSAGE_BODY_BYTES_MAX_DEFAULT: usize = record::BODY_BYTES_MAX;

/// Limits applied to messages a client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLimits {
    /// Largest body of one message, batched or not.
    pub body_bytes_max: usize,
}

impl Default for MessageLimits {
    fn default() -> Self {
        Self {
            body_bytes_max: MESSAGE_BODY_BYTES_MAX_DEFAULT,
        }
    }
}

impl MessageLimits {
    /// Refuses a body above the limit (the broker answers MESSAGE_ILLEGAL).
    pub fn check_body(&self, body_bytes: usize) -> Result<(), MessageError> {
        if body_bytes > self.body_bytes_max {
            return Err(MessageError::BodyTooLarge {
                bytes: body_bytes,
                max: self.body_bytes_max,
            });
        }
        Ok(())
    }
}

/// Why a message id or a batch body could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MessageError {
    #[error("message id {0:?} is not 32 (IPv4) or 56 (IPv6) hex digits")]
    BadIdLength(String),
    #[error("message id {0:?} is not hexadecimal")]
    BadIdHex(String),
    #[error("message id {id:?} has port {port}, outside 0..=65535")]
    BadIdPort { id: String, port: i32 },
    #[error("batch body ends inside field `{field}` of entry {entry}")]
    BatchTruncated { entry: usize, field: &'static str },
    #[error("batch entry {entry} has negative length {len} for `{field}`")]
    BatchNegativeLength {
        entry: usize,
        field: &'static str,
        len: i32,
    },
    #[error("message body of {bytes} bytes exceeds the limit of {max}")]
    BodyTooLarge { bytes: usize, max: usize },
    #[error("batch entry properties of {0} bytes exceed the i16 length field")]
    PropertiesTooLong(usize),
}

// ---- offsetMsgId -------------------------------------------------------------------------

/// The broker-made message id (`MessageDecoder.createMessageId`): upper-case hex of store
/// address ‖ port (i32) ‖ commit-log offset (i64) — 32 hex digits for IPv4, 56 for IPv6.
/// Clients take the broker address and the offset out of it for END_TRANSACTION,
/// VIEW_MESSAGE_BY_ID and CONSUMER_SEND_MSG_BACK, so the address must be client-reachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetMsgId {
    pub store_host: SocketAddr,
    pub commit_log_offset: i64,
}

impl OffsetMsgId {
    /// Reads an id; the IP family is decided by the length, as Java's `decodeMessageId` does.
    /// Lower-case hex is accepted (Java upper-cases before decoding).
    pub fn parse(id: &str) -> Result<Self, MessageError> {
        let ip_bytes = ip_bytes_for_hex_len(id, 4 + 8)?;
        let bytes = hex_decode(id)?;
        let (ip, rest) = bytes.split_at(ip_bytes);
        let port = i32::from_be_bytes(rest[..4].try_into().expect("length checked"));
        let port = u16::try_from(port).map_err(|_| MessageError::BadIdPort {
            id: id.to_owned(),
            port,
        })?;
        Ok(Self {
            store_host: SocketAddr::new(ip_from_bytes(ip), port),
            commit_log_offset: i64::from_be_bytes(rest[4..12].try_into().expect("checked")),
        })
    }
}

impl std::fmt::Display for OffsetMsgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        IdBytes::new(self.store_host.ip())
            .push(&i32::from(self.store_host.port()).to_be_bytes())
            .push(&self.commit_log_offset.to_be_bytes())
            .write_hex(f)
    }
}

// ---- UNIQ_KEY ------------------------------------------------------------------------------

/// The client-made message id in property `UNIQ_KEY` (`MessageClientIDSetter.createUniqID`):
/// upper-case hex of client IP ‖ pid (low 16 bits) ‖ class-loader hash (i32) ‖ ms since the
/// start of the month (i32) ‖ counter (u16). The broker treats it as opaque, but makes one
/// (with its own IP) for a message that arrives without it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UniqKey {
    pub ip: IpAddr,
    pub pid: u16,
    pub class_loader_hash: i32,
    pub ms_since_month_start: i32,
    pub counter: u16,
}

impl UniqKey {
    pub fn parse(id: &str) -> Result<Self, MessageError> {
        let ip_bytes = ip_bytes_for_hex_len(id, 2 + 4 + 4 + 2)?;
        let bytes = hex_decode(id)?;
        let (ip, rest) = bytes.split_at(ip_bytes);
        Ok(Self {
            ip: ip_from_bytes(ip),
            pid: u16::from_be_bytes([rest[0], rest[1]]),
            class_loader_hash: i32::from_be_bytes(rest[2..6].try_into().expect("checked")),
            ms_since_month_start: i32::from_be_bytes(rest[6..10].try_into().expect("checked")),
            counter: u16::from_be_bytes([rest[10], rest[11]]),
        })
    }
}

impl std::fmt::Display for UniqKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        IdBytes::new(self.ip)
            .push(&self.pid.to_be_bytes())
            .push(&self.class_loader_hash.to_be_bytes())
            .push(&self.ms_since_month_start.to_be_bytes())
            .push(&self.counter.to_be_bytes())
            .write_hex(f)
    }
}

/// Makes UNIQ_KEYs for messages that arrive without one, as a Java client would: a fixed
/// prefix (IP, pid, a per-process random stand-in for the class-loader hash), then the time
/// since the start of the current month (UTC here; Java uses local time, and nobody reads it
/// back but `mqadmin` for a time hint) and a wrapping counter. Owned by one shard, so ids from
/// different shards differ by `class_loader_hash` (give each shard its own).
#[derive(Clone, Debug)]
pub struct UniqKeyGenerator {
    ip: IpAddr,
    pid: u16,
    class_loader_hash: i32,
    counter: u16,
}

impl UniqKeyGenerator {
    pub fn new(ip: IpAddr, pid: u32, class_loader_hash: i32) -> Self {
        Self {
            ip,
            pid: pid as u16,
            class_loader_hash,
            counter: 0,
        }
    }

    /// The next id, for a message arriving at `now_ms` (ms since the Unix epoch).
    pub fn next(&mut self, now_ms: i64) -> UniqKey {
        let counter = self.counter;
        self.counter = self.counter.wrapping_add(1);
        UniqKey {
            ip: self.ip,
            pid: self.pid,
            class_loader_hash: self.class_loader_hash,
            ms_since_month_start: (now_ms - utc_month_start_ms(now_ms)) as i32,
            counter,
        }
    }
}

/// Milliseconds since the epoch of 00:00 UTC on the first day of `now_ms`'s month.
fn utc_month_start_ms(now_ms: i64) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    let days = now_ms.div_euclid(DAY_MS);
    // Day of month from the civil date of `days` (Howard Hinnant's days-to-civil algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day_of_month = doy - (153 * mp + 2) / 5 + 1;
    (days - (day_of_month - 1)) * DAY_MS
}

fn ip_bytes_for_hex_len(id: &str, rest_bytes: usize) -> Result<usize, MessageError> {
    match id.len() {
        n if n == 2 * (4 + rest_bytes) => Ok(4),
        n if n == 2 * (16 + rest_bytes) => Ok(16),
        _ => Err(MessageError::BadIdLength(id.to_owned())),
    }
}

fn ip_from_bytes(bytes: &[u8]) -> IpAddr {
    match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
        _ => IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(bytes).expect("4 or 16 bytes"),
        )),
    }
}

/// Most bytes of an id: an IPv6 address and 12 more (an offsetMsgId's port and offset, or a
/// UNIQ_KEY's pid, hash, time and counter).
const ID_BYTES_MAX: usize = 16 + 12;

/// The bytes of an id, on the stack: formatting one (every send answers an offsetMsgId)
/// costs no allocation.
struct IdBytes {
    bytes: [u8; ID_BYTES_MAX],
    len: usize,
}

impl IdBytes {
    fn new(ip: IpAddr) -> Self {
        let mut id = Self {
            bytes: [0; ID_BYTES_MAX],
            len: 0,
        };
        match ip {
            IpAddr::V4(ip) => id.push(&ip.octets()),
            IpAddr::V6(ip) => id.push(&ip.octets()),
        };
        id
    }

    fn push(&mut self, more: &[u8]) -> &mut Self {
        self.bytes[self.len..self.len + more.len()].copy_from_slice(more);
        self.len += more.len();
        self
    }

    /// Upper-case hex, as Java's `UtilAll.bytes2string`.
    fn write_hex(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        let mut hex = [0u8; 2 * ID_BYTES_MAX];
        for (i, b) in self.bytes[..self.len].iter().enumerate() {
            hex[2 * i] = DIGITS[usize::from(b >> 4)];
            hex[2 * i + 1] = DIGITS[usize::from(b & 15)];
        }
        f.write_str(std::str::from_utf8(&hex[..2 * self.len]).expect("hex digits are ASCII"))
    }
}

fn hex_decode(id: &str) -> Result<Vec<u8>, MessageError> {
    let digit = |c: u8| (c as char).to_digit(16);
    id.as_bytes()
        .chunks(2)
        .map(|pair| Some((digit(pair[0])? << 4 | digit(*pair.get(1)?)?) as u8))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| MessageError::BadIdHex(id.to_owned()))
}

// ---- pull bodies ---------------------------------------------------------------------------

/// The records of a pull, query or view body, each validated, sharing `body`'s buffer. Stops
/// after the first malformed record, as the Java client does.
pub fn split_records(body: Bytes) -> impl Iterator<Item = Result<RecordView, RecordError>> {
    let mut rest = body;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let declared = record::peek_header(&rest).map_or(-1, |(size, _)| i64::from(size));
        if declared < record::RECORD_BYTES_MIN as i64 || declared > rest.len() as i64 {
            let err = RecordError::TotalSizeMismatch {
                declared,
                actual: rest.len(),
            };
            rest = Bytes::new();
            return Some(Err(err));
        }
        let one = rest.split_to(declared as usize);
        let parsed = RecordView::parse(one);
        if parsed.is_err() {
            rest = Bytes::new();
        }
        Some(parsed)
    })
}

/// A stored record taken apart into what the producer sent and what the store assigned: the
/// start of re-storing it changed (consumption retry, transaction commit), and the inverse of
/// `record::encode` for a record whose CRC is right.
pub fn record_parts(view: &RecordView) -> (Message, StoreFields) {
    let message = Message {
        topic: view.topic().to_owned(),
        queue_id: view.queue_id(),
        flag: view.flag(),
        sys_flag: view.sys_flag(),
        born_timestamp_ms: view.born_timestamp_ms(),
        born_host: view.born_host(),
        reconsume_times: view.reconsume_times(),
        prepared_transaction_offset: view.prepared_transaction_offset(),
        body: view.body(),
        properties: view.as_bytes().slice_ref(view.properties().as_bytes()),
    };
    let store = StoreFields {
        queue_offset: view.queue_offset(),
        physical_offset: view.physical_offset(),
        store_timestamp_ms: view.store_timestamp_ms(),
        store_host: view.store_host(),
    };
    (message, store)
}

// ---- batch bodies --------------------------------------------------------------------------

/// One message of a SEND_BATCH_MESSAGE body (`MessageDecoder.encodeMessages`): topic, queue and
/// born fields come from the request header; each entry has its own flag, body and properties.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEntry {
    pub flag: i32,
    pub body: Bytes,
    /// The entry's properties string (its own UNIQ_KEY, WAIT, TAGS, KEYS…).
    pub properties: Bytes,
}

/// Bytes of an entry besides body and properties: TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLEN,
/// PROPLEN.
const BATCH_ENTRY_FIXED_BYTES: usize = 4 * 5 + 2;

/// Writes a batch body as the Java client does: per entry `TOTALSIZE i32 | MAGIC 0 | BODYCRC 0 |
/// FLAG | BODYLEN | BODY | PROPLEN i16 | PROPERTIES`.
pub fn encode_batch(entries: &[BatchEntry], out: &mut BytesMut) -> Result<(), MessageError> {
    for entry in entries {
        let props = entry.properties.len();
        let props_len = i16::try_from(props).map_err(|_| MessageError::PropertiesTooLong(props))?;
        let body_len = i32::try_from(entry.body.len()).map_err(|_| MessageError::BodyTooLarge {
            bytes: entry.body.len(),
            max: i32::MAX as usize,
        })?;
        out.reserve(BATCH_ENTRY_FIXED_BYTES + entry.body.len() + props);
        out.put_i32((BATCH_ENTRY_FIXED_BYTES + entry.body.len() + props) as i32);
        out.put_i32(0);
        out.put_i32(0);
        out.put_i32(entry.flag);
        out.put_i32(body_len);
        out.put_slice(&entry.body);
        out.put_i16(props_len);
        out.put_slice(&entry.properties);
    }
    Ok(())
}

/// Reads a batch body; bodies and properties share `body`'s buffer. Fields are read in order and
/// TOTALSIZE, MAGIC and BODYCRC are skipped, as the Java broker does (it recomputes the CRC).
pub fn decode_batch(body: Bytes, limits: &MessageLimits) -> Result<Vec<BatchEntry>, MessageError> {
    let mut rest = body;
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let entry = entries.len();
        let take = |rest: &mut Bytes, n: usize, field| {
            if rest.len() < n {
                return Err(MessageError::BatchTruncated { entry, field });
            }
            Ok(rest.split_to(n))
        };
        let int = |rest: &mut Bytes, field| {
            take(rest, 4, field).map(|b| i32::from_be_bytes(b[..].try_into().expect("4 bytes")))
        };
        int(&mut rest, "TOTALSIZE")?;
        int(&mut rest, "MAGICCODE")?;
        int(&mut rest, "BODYCRC")?;
        let flag = int(&mut rest, "FLAG")?;
        let body_len = int(&mut rest, "BODYLEN")?;
        let body_len =
            usize::try_from(body_len).map_err(|_| MessageError::BatchNegativeLength {
                entry,
                field: "BODYLEN",
                len: body_len,
            })?;
        limits.check_body(body_len)?;
        let body = take(&mut rest, body_len, "BODY")?;
        let props_len = take(&mut rest, 2, "PROPLEN").map(|b| i16::from_be_bytes([b[0], b[1]]))?;
        let props_len =
            usize::try_from(props_len).map_err(|_| MessageError::BatchNegativeLength {
                entry,
                field: "PROPLEN",
                len: props_len.into(),
            })?;
        let properties = take(&mut rest, props_len, "PROPERTIES")?;
        entries.push(BatchEntry {
            flag,
            body,
            properties,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_start_is_midnight_utc_of_the_first() {
        assert_eq!(utc_month_start_ms(1_700_000_000_000), 1_698_796_800_000);
        assert_eq!(utc_month_start_ms(1_709_251_200_000), 1_709_251_200_000);
        assert_eq!(utc_month_start_ms(1_709_251_199_999), 1_706_745_600_000); // leap February
        assert_eq!(utc_month_start_ms(-1_468_800_000), -2_678_400_000);
    }

    #[test]
    fn generator_counts_and_measures_from_the_month_start() {
        let mut generator = UniqKeyGenerator::new("10.0.0.1".parse().unwrap(), 0x1_2345, 7);
        let first = generator.next(1_698_796_800_000 + 5);
        let second = generator.next(1_698_796_800_000 + 6);
        assert_eq!((first.pid, first.class_loader_hash), (0x2345, 7));
        assert_eq!((first.ms_since_month_start, first.counter), (5, 0));
        assert_eq!((second.ms_since_month_start, second.counter), (6, 1));
        assert_ne!(first.to_string(), second.to_string());
        assert_eq!(UniqKey::parse(&first.to_string()).unwrap(), first);
    }
}
