//! The binary "ROCKETMQ" header (REMOTING.md §1.5):
//! `code:i16 language:u8 version:i16 opaque:i32 flag:i32 remarkLen:i32 remark extLen:i32 ext`,
//! ext = repeated `keyLen:i16 key valLen:i32 value`. Decoded as Java's
//! `RocketMQSerializable.rocketMQProtocolDecode` does: a length of 0 means null (so an empty
//! remark, key or value does not survive), a non-positive remark or map length means absent,
//! duplicate keys keep the last value, bytes after the map are ignored.

use bytes::{BufMut, Bytes, BytesMut};

use super::FrameError;
use crate::protocol::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType, Text};
use crate::protocol::ext_fields::EXT_FIELDS_TYPICAL;

/// Bytes of the fixed fields: code, language, version, opaque, flag, remark and map lengths.
const FIXED_BYTES: usize = 21;

/// Whether `cmd` can be written in this form: code, version and each key length travel in
/// 16 bits.
pub(super) fn fits(cmd: &RemotingCommand) -> bool {
    let short = |n: usize| n <= i16::MAX as usize;
    i16::try_from(cmd.code).is_ok()
        && i16::try_from(cmd.version).is_ok()
        && cmd.ext_fields.iter().all(|(k, _)| short(k.len()))
}

pub(super) fn decode(header: Bytes, body: Bytes) -> Result<RemotingCommand, FrameError> {
    let limit = header.len();
    let mut r = Reader {
        header: &header,
        at: 0,
        end: limit,
    };
    let code = r.take::<2>("code").map(i16::from_be_bytes)? as i32;
    let language = LanguageCode::from_code(r.take::<1>("language")?[0]);
    let version = r.take::<2>("version").map(i16::from_be_bytes)? as i32;
    let opaque = r.take::<4>("opaque").map(i32::from_be_bytes)?;
    let flag = r.take::<4>("flag").map(i32::from_be_bytes)?;
    let remark_len = r.take::<4>("remarkLen").map(i32::from_be_bytes)?;
    let remark = match remark_len {
        len if len <= 0 => None,
        len => Some(r.text("remark", len as i64, limit)?.into_string()),
    };
    let ext_len = r.take::<4>("extLen").map(i32::from_be_bytes)?;
    let mut ext_fields = ExtFields::new();
    if ext_len > 0 {
        ext_fields.reserve(EXT_FIELDS_TYPICAL);
        let ext_len = checked_len("extLen", ext_len as i64, limit)?;
        let (start, _) = r.span("ext", ext_len)?;
        let mut m = Reader {
            header: &header,
            at: start,
            end: start + ext_len,
        };
        while m.at < m.end {
            let key_len = m.take::<2>("keyLen").map(i16::from_be_bytes)?;
            let key = m.text("key", key_len as i64, limit)?;
            let value_len = m.take::<4>("valLen").map(i32::from_be_bytes)?;
            let value = m.text("value", value_len as i64, limit)?;
            if !key.is_empty() && !value.is_empty() {
                ext_fields.insert(key, value);
            }
        }
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        serialize_type: SerializeType::RocketMq,
        body,
    })
}

fn checked_len(field: &'static str, len: i64, limit: usize) -> Result<usize, FrameError> {
    if len < 0 || len as u64 > limit as u64 {
        return Err(FrameError::BinaryLength { field, len, limit });
    }
    Ok(len as usize)
}

/// A cursor over `header[at..end]` whose every read is bounds-checked; texts are slices of
/// the header, not copies.
struct Reader<'a> {
    header: &'a Bytes,
    at: usize,
    end: usize,
}

impl Reader<'_> {
    /// The next `n` bytes as a range of the header.
    fn span(&mut self, field: &'static str, n: usize) -> Result<(usize, usize), FrameError> {
        if self.end - self.at < n {
            return Err(FrameError::BinaryTruncated(field));
        }
        let start = self.at;
        self.at += n;
        Ok((start, self.at))
    }

    fn take<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], FrameError> {
        let (start, end) = self.span(field, N)?;
        Ok(self.header[start..end].try_into().expect("N bytes"))
    }

    /// A length-prefixed string; invalid UTF-8 is replaced, as Java's `new String(bytes, UTF_8)`.
    fn text(&mut self, field: &'static str, len: i64, limit: usize) -> Result<Text, FrameError> {
        let len = checked_len(field, len, limit)?;
        let (start, end) = self.span(field, len)?;
        Ok(Text::from_frame(self.header, start..end))
    }
}

/// Writes the header; extFields sorted by key so output is deterministic. Empty remark, keys
/// and values are left out, since the reader would turn them into null anyway.
pub(super) fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    debug_assert!(fits(cmd));
    out.reserve(FIXED_BYTES);
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.code());
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    let remark = cmd.remark.as_deref().unwrap_or("");
    out.put_i32(remark.len() as i32);
    out.put_slice(remark.as_bytes());

    let entries = cmd.ext_fields.sorted();
    let entries = entries
        .into_iter()
        .filter(|(k, v)| !k.is_empty() && !v.is_empty());
    let ext_len_at = out.len();
    out.put_i32(0); // patched below
    for (key, value) in entries {
        out.put_i16(key.len() as i16);
        out.put_slice(key.as_bytes());
        out.put_i32(value.len() as i32);
        out.put_slice(value.as_bytes());
    }
    let ext_len = (out.len() - ext_len_at - 4) as i32;
    out[ext_len_at..ext_len_at + 4].copy_from_slice(&ext_len.to_be_bytes());
}
