//! RocketMQ's stored-message record: the exact bytes a CommitLog holds and a pull response
//! carries (REMOTING.md §6.1–6.3). Encoding builds one record from a producer's message plus
//! the fields the store assigns at append; [`RecordView`] validates one record and reads its
//! fields without copying (body, topic and properties are slices of the same `Bytes`).
//!
//! Layout (big-endian; sizes for IPv4 hosts, 20-byte hosts when the v6 sysFlag bits are set):
//! `TOTALSIZE i32 | MAGIC i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 | QUEUEOFFSET i64 |
//! PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST 8/20 | STORETIMESTAMP i64 |
//! STOREHOST 8/20 | RECONSUMETIMES i32 | PREPARED_TX_OFFSET i64 | BODYLEN i32 | BODY |
//! TOPICLEN i8 (v1) / i16 (v2) | TOPIC | PROPLEN i16 | PROPERTIES`.
//!
//! Java's decoder reads fields in order and never skips by TOTALSIZE, so a record carries no
//! padding: every length field must add up to TOTALSIZE exactly, and [`RecordView::parse`]
//! insists on that.

use bytes::Bytes;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Magic of a v1 record (1-byte topic length), `0xDAA320A7` as Java's signed int.
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of a v2 record (2-byte topic length), written only for topics longer than 127 bytes.
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
/// Magic of RocketMQ's end-of-segment blank filler; never part of a record sent to clients.
pub const MAGIC_BLANK: i32 = 0xCBD4_3194_u32 as i32;

/// Longest topic a v1 record can carry: its length is one *signed* byte.
pub const TOPIC_V1_BYTES_MAX: usize = 127;
/// Longest topic at all: a v2 record stores the length as an i16.
pub const TOPIC_BYTES_MAX: usize = i16::MAX as usize;
/// The properties length is a signed i16 in the record.
pub const PROPERTIES_BYTES_MAX: usize = i16::MAX as usize;
/// RocketMQ's default `maxMessageSize` (4 MiB); larger bodies are refused before they reach a
/// segment so a record always fits one group-commit buffer.
pub const BODY_BYTES_MAX: usize = 4 << 20;
/// Fixed part of a record with IPv4 hosts, up to and including BODYLEN.
pub const FIXED_BYTES_IPV4: usize = 88;
/// Extra bytes per IPv6 host (16-byte address instead of 4).
const HOST_V6_EXTRA_BYTES: usize = 12;
/// Largest record [`encode`] can produce (IPv6 hosts, largest body, topic and properties).
pub const RECORD_BYTES_MAX: usize = FIXED_BYTES_IPV4
    + 2 * HOST_V6_EXTRA_BYTES
    + BODY_BYTES_MAX
    + 2
    + TOPIC_BYTES_MAX
    + 2
    + PROPERTIES_BYTES_MAX;
/// Smallest well-formed record: IPv4 hosts, empty body, 1-byte empty topic, no properties.
pub const RECORD_BYTES_MIN: usize = FIXED_BYTES_IPV4 + 1 + 2;

/// Separator between a property's name and value (`MessageDecoder.NAME_VALUE_SEPARATOR`).
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Separator after each name/value pair (`MessageDecoder.PROPERTY_SEPARATOR`).
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Well-known property names the store reads (`MessageConst`).
pub mod property {
    /// Message tag; its Java hash code is the ConsumeQueue tag code.
    pub const TAGS: &str = "TAGS";
    /// Space-separated business keys, each indexed.
    pub const KEYS: &str = "KEYS";
    /// Client-generated unique id (the user-visible msgId), indexed.
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
}

/// `MessageSysFlag` bits (REMOTING.md §6.2).
pub mod sys_flag {
    /// The body is compressed (the store never decompresses it).
    pub const COMPRESSED: i32 = 0x1;
    /// The topic uses the MULTI_TAG filter type.
    pub const MULTI_TAGS: i32 = 0x2;
    /// Mask of the two transaction-type bits.
    pub const TRANSACTION_MASK: i32 = 0xC;
    /// Not a transactional message.
    pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
    /// Transactional half message.
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    /// Committed transactional message.
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    /// Rolled-back transactional message.
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    /// The born host is 16 + 4 bytes.
    pub const BORNHOST_V6: i32 = 0x10;
    /// The store host is 16 + 4 bytes.
    pub const STOREHOST_V6: i32 = 0x20;
    /// Inner-batch message the consumer must unwrap.
    pub const NEED_UNWRAP: i32 = 0x40;
    /// Inner-batch message.
    pub const INNER_BATCH: i32 = 0x80;
    /// Mask of the compression-type bits.
    pub const COMPRESSION_MASK: i32 = 0x700;
    /// Shift of the compression-type bits.
    pub const COMPRESSION_SHIFT: u32 = 8;
}

/// Transaction type carried in sysFlag bits 2–3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionType {
    NotType,
    Prepared,
    Commit,
    Rollback,
}

impl TransactionType {
    /// Reads the transaction type from a sysFlag.
    pub fn of(sys_flag: i32) -> Self {
        match sys_flag & sys_flag::TRANSACTION_MASK {
            sys_flag::TRANSACTION_PREPARED => Self::Prepared,
            sys_flag::TRANSACTION_COMMIT => Self::Commit,
            sys_flag::TRANSACTION_ROLLBACK => Self::Rollback,
            _ => Self::NotType,
        }
    }

    /// Returns `sys_flag` with its transaction bits replaced by this type.
    pub fn apply(self, sys_flag: i32) -> i32 {
        let bits = match self {
            Self::NotType => sys_flag::TRANSACTION_NOT_TYPE,
            Self::Prepared => sys_flag::TRANSACTION_PREPARED,
            Self::Commit => sys_flag::TRANSACTION_COMMIT,
            Self::Rollback => sys_flag::TRANSACTION_ROLLBACK,
        };
        (sys_flag & !sys_flag::TRANSACTION_MASK) | bits
    }
}

/// Compression algorithm of a compressed body (sysFlag bits 8–10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompressionType {
    Lz4,
    Zstd,
    /// Also what type 0 means: old clients set only the COMPRESSED bit and use zlib.
    Zlib,
}

impl CompressionType {
    /// The compression type of a body whose sysFlag has the COMPRESSED bit, `None` otherwise
    /// or for an unknown type value.
    pub fn of(sys_flag: i32) -> Option<Self> {
        if sys_flag & sys_flag::COMPRESSED == 0 {
            return None;
        }
        match (sys_flag & sys_flag::COMPRESSION_MASK) >> sys_flag::COMPRESSION_SHIFT {
            1 => Some(Self::Lz4),
            2 => Some(Self::Zstd),
            0 | 3 => Some(Self::Zlib),
            _ => None,
        }
    }
}

/// Why a record could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record truncated: need {needed} bytes, have {available}")]
    Truncated { needed: usize, available: usize },
    #[error("bad record magic {0:#010x}")]
    BadMagic(u32),
    #[error("record TOTALSIZE {declared} does not match its {actual} bytes")]
    TotalSizeMismatch { declared: i64, actual: usize },
    #[error("record field {field} has invalid length {len}")]
    BadFieldLength { field: &'static str, len: i64 },
    #[error("{field} is {len} bytes, more than the limit of {max}")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("record field {0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
}

/// What a producer supplies for one message; the store fills [`StoreFields`] at append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub topic: String,
    pub queue_id: i32,
    /// The producer's user flag.
    pub flag: i32,
    /// Producer sysFlag; the host v6 bits are recomputed from the addresses at encode.
    pub sys_flag: i32,
    pub born_timestamp_ms: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    /// Commit-log offset of the half message for committed transactions, else 0.
    pub prepared_transaction_offset: i64,
    /// Stored as received (still compressed if the COMPRESSED bit is set).
    pub body: Bytes,
    /// The encoded properties string (see [`format_properties`]).
    pub properties: Bytes,
}

#[cfg(test)]
impl Message {
    /// A message of the unit tests: queue 0, no flags, born at a fixed time on loopback.
    pub(crate) fn for_test(topic: &str, body: Bytes, properties: String) -> Self {
        Self {
            topic: topic.into(),
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp_ms: 1_700_000_000_000,
            born_host: "127.0.0.1:50000".parse().expect("an address"),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            properties: Bytes::from(properties),
        }
    }
}

/// Fields the store assigns when it appends a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreFields {
    pub queue_offset: i64,
    /// The physical offset clients see (shard id in the high bits).
    pub physical_offset: i64,
    pub store_timestamp_ms: i64,
    pub store_host: SocketAddr,
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 8 + HOST_V6_EXTRA_BYTES,
    }
}

fn check_len(field: &'static str, len: usize, max: usize) -> Result<(), RecordError> {
    if len > max {
        return Err(RecordError::TooLong { field, len, max });
    }
    Ok(())
}

/// Exact encoded length of `message` with `store_host`, after checking every limit.
pub fn encoded_len(message: &Message, store_host: &SocketAddr) -> Result<usize, RecordError> {
    check_len("body", message.body.len(), BODY_BYTES_MAX)?;
    check_len("topic", message.topic.len(), TOPIC_BYTES_MAX)?;
    check_len("properties", message.properties.len(), PROPERTIES_BYTES_MAX)?;
    let topic_len_size = if message.topic.len() > TOPIC_V1_BYTES_MAX {
        2
    } else {
        1
    };
    Ok(FIXED_BYTES_IPV4 - 16
        + host_len(&message.born_host)
        + host_len(store_host)
        + message.body.len()
        + topic_len_size
        + message.topic.len()
        + 2
        + message.properties.len())
}

/// Big-endian writer over a slice whose exact size was computed beforehand.
struct SliceWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
}

impl SliceWriter<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }

    fn put_host(&mut self, addr: &SocketAddr) {
        match addr.ip() {
            IpAddr::V4(ip) => self.put(&ip.octets()),
            IpAddr::V6(ip) => self.put(&ip.octets()),
        }
        self.put(&i32::from(addr.port()).to_be_bytes());
    }
}

/// The sysFlag as stored: the producer's bits with the v6 bits set from the address families.
pub fn stored_sys_flag(sys_flag: i32, born_host: &SocketAddr, store_host: &SocketAddr) -> i32 {
    let mut flag = sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    flag
}

/// Encodes one record into `out`, which must be exactly [`encoded_len`] bytes long (the store
/// writes straight into its aligned tail buffer). Returns the record length.
pub fn encode_into(
    message: &Message,
    store: &StoreFields,
    out: &mut [u8],
) -> Result<usize, RecordError> {
    let total = encoded_len(message, &store.store_host)?;
    if out.len() != total {
        return Err(RecordError::Truncated {
            needed: total,
            available: out.len(),
        });
    }
    let long_topic = message.topic.len() > TOPIC_V1_BYTES_MAX;
    let mut w = SliceWriter { out, pos: 0 };
    w.put(&(total as i32).to_be_bytes());
    w.put(&(if long_topic { MAGIC_V2 } else { MAGIC_V1 }).to_be_bytes());
    w.put(&body_crc(&message.body).to_be_bytes());
    w.put(&message.queue_id.to_be_bytes());
    w.put(&message.flag.to_be_bytes());
    w.put(&store.queue_offset.to_be_bytes());
    w.put(&store.physical_offset.to_be_bytes());
    let flag = stored_sys_flag(message.sys_flag, &message.born_host, &store.store_host);
    w.put(&flag.to_be_bytes());
    w.put(&message.born_timestamp_ms.to_be_bytes());
    w.put_host(&message.born_host);
    w.put(&store.store_timestamp_ms.to_be_bytes());
    w.put_host(&store.store_host);
    w.put(&message.reconsume_times.to_be_bytes());
    w.put(&message.prepared_transaction_offset.to_be_bytes());
    w.put(&(message.body.len() as i32).to_be_bytes());
    w.put(&message.body);
    if long_topic {
        w.put(&(message.topic.len() as i16).to_be_bytes());
    } else {
        w.put(&[message.topic.len() as u8]);
    }
    w.put(message.topic.as_bytes());
    w.put(&(message.properties.len() as i16).to_be_bytes());
    w.put(&message.properties);
    debug_assert_eq!(w.pos, total);
    Ok(total)
}

/// Encodes one record into a new buffer.
pub fn encode(message: &Message, store: &StoreFields) -> Result<Bytes, RecordError> {
    let mut out = vec![0u8; encoded_len(message, &store.store_host)?];
    encode_into(message, store, &mut out)?;
    Ok(Bytes::from(out))
}

/// RocketMQ's BODYCRC: zlib CRC-32 of the body as stored, sign bit cleared (`UtilAll.crc32`).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// Java's `String.hashCode()`: `h = 31*h + c` over UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The ConsumeQueue tag code of a message (`tagsString2tagsCode`): 0 without TAGS, else the
/// Java hash of the TAGS value sign-extended to i64.
pub fn tag_hash_code(tags: Option<&str>) -> i64 {
    tags.map_or(0, |t| i64::from(java_string_hash(t)))
}

/// Iterates the (name, value) pairs of a properties string as Java's parser keeps them: split
/// on 0x02, split at the first 0x01, drop pairs with an empty name or value. (Java also skips
/// segments shorter than 3 chars; a pair with a name and a value is never one, so no count of
/// chars is needed: it was 1 % of the broker's CPU on sends.) The separators are ASCII, so
/// they are found among the bytes: `str::split` on a char ran a memchr and a memcmp call per
/// separator, 4–7 % of the broker's CPU on sends, a dozen scans per message.
pub fn properties_iter(props: &str) -> impl Iterator<Item = (&str, &str)> + Clone {
    const PAIR_END: u8 = PROPERTY_SEPARATOR as u8;
    const NAME_END: u8 = NAME_VALUE_SEPARATOR as u8;
    let bytes = props.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < bytes.len() {
            let segment = &bytes[start..];
            let len = segment
                .iter()
                .position(|&b| b == PAIR_END)
                .unwrap_or(segment.len());
            let pair_start = start;
            start += len + 1;
            let Some(split) = segment[..len].iter().position(|&b| b == NAME_END) else {
                continue;
            };
            // Both ends lie next to an ASCII separator (or the string's ends): char boundaries.
            let name = &props[pair_start..pair_start + split];
            let value = &props[pair_start + split + 1..pair_start + len];
            if !name.is_empty() && !value.is_empty() {
                return Some((name, value));
            }
        }
        None
    })
}

/// Looks up one property without allocating. Java keeps properties in a HashMap, so when a
/// name repeats the last value wins.
pub fn find_property<'a>(props: &'a str, name: &str) -> Option<&'a str> {
    let [value] = find_properties(props, [name]);
    value
}

/// Looks up several properties in one pass (the last value of a repeated name wins, as in
/// [`find_property`]): what a send reads of a message's properties, a scan each, was a dozen
/// scans per message.
pub fn find_properties<'a, const N: usize>(
    props: &'a str,
    names: [&str; N],
) -> [Option<&'a str>; N] {
    let mut found = [None; N];
    for (name, value) in properties_iter(props) {
        if let Some(i) = names.iter().position(|n| *n == name) {
            found[i] = Some(value);
        }
    }
    found
}

/// Parses a properties string into owned pairs, one per name (last value wins, first
/// position kept).
pub fn parse_properties(props: &str) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in properties_iter(props) {
        match pairs.iter_mut().find(|(n, _)| n == name) {
            Some(pair) => pair.1 = value.to_owned(),
            None => pairs.push((name.to_owned(), value.to_owned())),
        }
    }
    pairs
}

/// Formats pairs as Java's writer does: `name 0x01 value 0x02` each, trailing 0x02 included.
/// The pairs are walked twice, to make the string at its final size in one allocation (and
/// so a `Bytes` of it needs none).
pub fn format_properties<'a, I>(pairs: I) -> String
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
    I::IntoIter: Clone,
{
    let pairs = pairs.into_iter();
    let len = pairs.clone().map(|(n, v)| n.len() + v.len() + 2).sum();
    let mut out = String::with_capacity(len);
    for (name, value) in pairs {
        out.push_str(name);
        out.push(NAME_VALUE_SEPARATOR);
        out.push_str(value);
        out.push(PROPERTY_SEPARATOR);
    }
    out
}

/// Reads a born/store host: 4- or 16-byte address, then the port as i32.
pub fn decode_host(bytes: &[u8], v6: bool) -> Result<SocketAddr, RecordError> {
    let addr_len = if v6 { 16 } else { 4 };
    if bytes.len() < addr_len + 4 {
        return Err(RecordError::Truncated {
            needed: addr_len + 4,
            available: bytes.len(),
        });
    }
    let ip = if v6 {
        let octets: [u8; 16] = bytes[..16].try_into().expect("length checked");
        IpAddr::V6(Ipv6Addr::from(octets))
    } else {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    };
    let port = i32::from_be_bytes(bytes[addr_len..addr_len + 4].try_into().expect("checked"));
    let port = u16::try_from(port).map_err(|_| RecordError::BadFieldLength {
        field: "host port",
        len: i64::from(port),
    })?;
    Ok(SocketAddr::new(ip, port))
}

/// Byte positions of the variable-placed fields of one record.
#[derive(Clone, Copy, Debug)]
struct Layout {
    store_timestamp: usize,
    reconsume_times: usize,
    body: usize,
    body_len: usize,
    topic: usize,
    topic_len: usize,
    properties: usize,
    properties_len: usize,
}

/// Reads the TOTALSIZE and magic at the start of `buf` without validating the rest; the
/// commit-log scanner uses it to step from record to record.
pub fn peek_header(buf: &[u8]) -> Option<(i32, i32)> {
    let size = i32::from_be_bytes(buf.get(0..4)?.try_into().ok()?);
    let magic = i32::from_be_bytes(buf.get(4..8)?.try_into().ok()?);
    Some((size, magic))
}

/// One validated record over shared bytes; accessors read fields in place.
#[derive(Clone, Debug)]
pub struct RecordView {
    bytes: Bytes,
    layout: Layout,
    born_host: SocketAddr,
    store_host: SocketAddr,
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(
        buf[at..at + 4]
            .try_into()
            .expect("bounds validated at parse"),
    )
}

fn read_i64(buf: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(
        buf[at..at + 8]
            .try_into()
            .expect("bounds validated at parse"),
    )
}

/// Reads a length field at `at` and checks that `len` more bytes follow it within `buf`.
fn section(
    buf: &[u8],
    at: usize,
    len: i64,
    field: &'static str,
) -> Result<(usize, usize), RecordError> {
    let len = usize::try_from(len).map_err(|_| RecordError::BadFieldLength { field, len })?;
    if at + len > buf.len() {
        return Err(RecordError::BadFieldLength {
            field,
            len: len as i64,
        });
    }
    Ok((at, len))
}

impl RecordView {
    /// Validates that `bytes` is exactly one well-formed record (magic, TOTALSIZE and every
    /// length field consistent). It does not check BODYCRC; see [`RecordView::body_crc_ok`].
    pub fn parse(bytes: Bytes) -> Result<Self, RecordError> {
        let buf = &bytes[..];
        if buf.len() < RECORD_BYTES_MIN {
            return Err(RecordError::Truncated {
                needed: RECORD_BYTES_MIN,
                available: buf.len(),
            });
        }
        let (total, magic) = peek_header(buf).expect("length checked");
        if total as i64 != buf.len() as i64 {
            return Err(RecordError::TotalSizeMismatch {
                declared: total.into(),
                actual: buf.len(),
            });
        }
        let v2 = match magic {
            MAGIC_V1 => false,
            MAGIC_V2 => true,
            other => return Err(RecordError::BadMagic(other as u32)),
        };
        let flag = read_i32(buf, 36);
        let born_host = 48;
        let born_host_len = if flag & sys_flag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        };
        let store_timestamp = born_host + born_host_len;
        let store_host = store_timestamp + 8;
        let store_host_len = if flag & sys_flag::STOREHOST_V6 != 0 {
            20
        } else {
            8
        };
        let reconsume_times = store_host + store_host_len;
        let body_len_at = reconsume_times + 4 + 8;
        // The v6 hosts add 24 bytes to the fixed part; the minimum length check covered IPv4.
        if body_len_at + 4 > buf.len() {
            return Err(RecordError::Truncated {
                needed: body_len_at + 4,
                available: buf.len(),
            });
        }
        let body_len = i64::from(read_i32(buf, body_len_at));
        let (body, body_len) = section(buf, body_len_at + 4, body_len, "body")?;
        let topic_len_at = body + body_len;
        let topic_len_size = if v2 { 2 } else { 1 };
        if topic_len_at + topic_len_size > buf.len() {
            return Err(RecordError::Truncated {
                needed: topic_len_at + topic_len_size,
                available: buf.len(),
            });
        }
        let topic_len = if v2 {
            i64::from(i16::from_be_bytes([
                buf[topic_len_at],
                buf[topic_len_at + 1],
            ]))
        } else {
            i64::from(buf[topic_len_at] as i8)
        };
        let (topic, topic_len) = section(buf, topic_len_at + topic_len_size, topic_len, "topic")?;
        let props_len_at = topic + topic_len;
        if props_len_at + 2 > buf.len() {
            return Err(RecordError::Truncated {
                needed: props_len_at + 2,
                available: buf.len(),
            });
        }
        let props_len = i64::from(i16::from_be_bytes([
            buf[props_len_at],
            buf[props_len_at + 1],
        ]));
        let (properties, properties_len) = section(buf, props_len_at + 2, props_len, "properties")?;
        if properties + properties_len != buf.len() {
            return Err(RecordError::TotalSizeMismatch {
                declared: total.into(),
                actual: properties + properties_len,
            });
        }
        std::str::from_utf8(&buf[topic..topic + topic_len])
            .map_err(|_| RecordError::InvalidUtf8("topic"))?;
        std::str::from_utf8(&buf[properties..properties + properties_len])
            .map_err(|_| RecordError::InvalidUtf8("properties"))?;
        let layout = Layout {
            store_timestamp,
            reconsume_times,
            body,
            body_len,
            topic,
            topic_len,
            properties,
            properties_len,
        };
        let born_host = decode_host(&buf[born_host..], flag & sys_flag::BORNHOST_V6 != 0)?;
        let store_host = decode_host(&buf[store_host..], flag & sys_flag::STOREHOST_V6 != 0)?;
        Ok(Self {
            bytes,
            layout,
            born_host,
            store_host,
        })
    }

    /// The whole record, exactly as stored and as sent to consumers.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Gives back the record bytes.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    pub fn total_size(&self) -> i32 {
        read_i32(&self.bytes, 0)
    }

    pub fn magic(&self) -> i32 {
        read_i32(&self.bytes, 4)
    }

    pub fn body_crc(&self) -> i32 {
        read_i32(&self.bytes, 8)
    }

    /// Whether the stored BODYCRC matches the body.
    pub fn body_crc_ok(&self) -> bool {
        body_crc(self.body_slice()) == self.body_crc()
    }

    pub fn queue_id(&self) -> i32 {
        read_i32(&self.bytes, 12)
    }

    pub fn flag(&self) -> i32 {
        read_i32(&self.bytes, 16)
    }

    pub fn queue_offset(&self) -> i64 {
        read_i64(&self.bytes, 20)
    }

    pub fn physical_offset(&self) -> i64 {
        read_i64(&self.bytes, 28)
    }

    pub fn sys_flag(&self) -> i32 {
        read_i32(&self.bytes, 36)
    }

    pub fn born_timestamp_ms(&self) -> i64 {
        read_i64(&self.bytes, 40)
    }

    pub fn born_host(&self) -> SocketAddr {
        self.born_host
    }

    pub fn store_timestamp_ms(&self) -> i64 {
        read_i64(&self.bytes, self.layout.store_timestamp)
    }

    pub fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    pub fn reconsume_times(&self) -> i32 {
        read_i32(&self.bytes, self.layout.reconsume_times)
    }

    pub fn prepared_transaction_offset(&self) -> i64 {
        read_i64(&self.bytes, self.layout.reconsume_times + 4)
    }

    fn body_slice(&self) -> &[u8] {
        &self.bytes[self.layout.body..self.layout.body + self.layout.body_len]
    }

    /// The body as stored, sharing the record's buffer.
    pub fn body(&self) -> Bytes {
        self.bytes
            .slice(self.layout.body..self.layout.body + self.layout.body_len)
    }

    pub fn topic(&self) -> &str {
        let range = self.layout.topic..self.layout.topic + self.layout.topic_len;
        std::str::from_utf8(&self.bytes[range]).expect("validated at parse")
    }

    /// The raw properties string.
    pub fn properties(&self) -> &str {
        let range = self.layout.properties..self.layout.properties + self.layout.properties_len;
        std::str::from_utf8(&self.bytes[range]).expect("validated at parse")
    }

    /// One property, e.g. [`property::TAGS`].
    pub fn property(&self, name: &str) -> Option<&str> {
        find_property(self.properties(), name)
    }

    /// The ConsumeQueue tag code of this record.
    pub fn tag_hash_code(&self) -> i64 {
        tag_hash_code(self.property(property::TAGS))
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
