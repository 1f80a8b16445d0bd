//! Framing (REMOTING.md §1.2): `[length: i32][serType: u8, headerLen: u24][header][body]`, all
//! big-endian, `length` counting everything after itself. The header is JSON (`json.rs`) or
//! RocketMQ's binary form (`rocketmq.rs`), chosen per frame by the type byte, so both are
//! decoded on every frame.
//!
//! Cost per frame: decoding parses the header into [`ExtFields`](super::ext_fields::ExtFields)
//! whose keys and values are slices of the frame (a JSON send header, ~250 bytes, costs one
//! vector and its unescaped properties string; a binary one just the vector);
//! [`split_frame`] leaves the header and body in the read buffer, while [`decode_frame`]
//! copies the frame once. Encoding writes the header into the caller's buffer;
//! [`encode_frame`] copies the body after it, while a caller of [`encode_frame_head`] sends the
//! body from where it is (the connection writer gathers a pull's records that way).

mod json;
mod rocketmq;

use bytes::{BufMut, Bytes, BytesMut};

use super::command::{RemotingCommand, SerializeType};

/// A whole frame, length prefix included, may not exceed 16 MiB: the Java decoder
/// (`NettyDecoder`, `frameMaxLength`) closes the connection on a larger one, so no peer sends it.
pub const FRAME_BYTES_MAX: usize = 16 << 20;

/// A header may not exceed 1 MiB. The largest legitimate header is a send header whose
/// properties string (≤ 32767 UTF-16 units) is JSON-escaped at ≤ 6 bytes per unit (~192 KiB);
/// anything much larger is garbage and would only cost memory and parse time.
pub const HEADER_BYTES_MAX: usize = 1 << 20;

/// Bytes before the header: the length prefix and the serialize-type/header-length word.
pub const FRAME_PREFIX_BYTES: usize = 8;

/// Why bytes cannot be a frame. Any of these closes the connection: after it, frame
/// boundaries on the stream are unknown.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {0} is below the 4 bytes of the header-length word")]
    LengthTooSmall(i32),
    #[error("frame of {bytes} bytes exceeds the {FRAME_BYTES_MAX}-byte limit")]
    TooLarge { bytes: usize },
    #[error("unknown header serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("header length {header} exceeds the frame's {available} bytes after the length word")]
    HeaderLengthExceedsFrame { header: usize, available: usize },
    #[error("header of {0} bytes exceeds the {HEADER_BYTES_MAX}-byte limit")]
    HeaderTooLarge(usize),
    #[error("JSON header does not parse: {0}")]
    JsonSyntax(#[from] serde_json::Error),
    #[error("JSON header is not an object")]
    JsonNotObject,
    #[error("JSON header field `{0}` has a type or value no RemotingCommand can hold")]
    JsonField(&'static str),
    #[error("binary header ends inside field `{0}`")]
    BinaryTruncated(&'static str),
    #[error("binary header field `{field}` has length {len}, outside 0..={limit}")]
    BinaryLength {
        field: &'static str,
        len: i64,
        limit: usize,
    },
}

/// Decodes the first frame of `buf`.
///
/// Ok(None) = need more bytes; Ok(Some((cmd, consumed))) = one frame; Err = close the connection.
/// An oversized frame is refused as soon as its length prefix is read, before its bytes arrive.
/// The frame is copied out of `buf`; [`split_frame`] shares it instead.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(RemotingCommand, usize)>, FrameError> {
    let Some(frame_bytes) = frame_len(buf)? else {
        return Ok(None);
    };
    let command = decode_complete(Bytes::copy_from_slice(&buf[..frame_bytes]))?;
    Ok(Some((command, frame_bytes)))
}

/// Like [`decode_frame`], but takes the frame off the front of `buf` and shares its bytes: the
/// body and the header's keys and values (those needing no unescaping) are slices of the read
/// buffer, so a message body reaches the store without a copy.
pub fn split_frame(buf: &mut BytesMut) -> Result<Option<RemotingCommand>, FrameError> {
    let Some(frame_bytes) = frame_len(buf)? else {
        return Ok(None);
    };
    decode_complete(buf.split_to(frame_bytes).freeze()).map(Some)
}

/// The size of the frame at the start of `buf`, length prefix included, as soon as that prefix
/// is there (before the rest of the frame arrives), checked against the limits. Ok(None) = fewer
/// than 4 bytes. A reader uses it to make room for a large frame at once.
pub fn frame_bytes(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes(prefix.try_into().expect("4 bytes"));
    if length < 4 {
        return Err(FrameError::LengthTooSmall(length));
    }
    let frame_bytes = length as usize + 4;
    if frame_bytes > FRAME_BYTES_MAX {
        return Err(FrameError::TooLarge { bytes: frame_bytes });
    }
    Ok(Some(frame_bytes))
}

/// The length of the frame at the start of `buf` once all of it is there.
fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    Ok(frame_bytes(buf)?.filter(|&frame_bytes| buf.len() >= frame_bytes))
}

/// Decodes one whole frame; the command's texts and body share its bytes.
fn decode_complete(frame: Bytes) -> Result<RemotingCommand, FrameError> {
    let type_byte = frame[4];
    let header_bytes = u32::from_be_bytes([0, frame[5], frame[6], frame[7]]) as usize;
    let serialize_type =
        SerializeType::from_byte(type_byte).ok_or(FrameError::UnknownSerializeType(type_byte))?;
    if header_bytes > HEADER_BYTES_MAX {
        return Err(FrameError::HeaderTooLarge(header_bytes));
    }
    let available = frame.len() - FRAME_PREFIX_BYTES;
    if header_bytes > available {
        return Err(FrameError::HeaderLengthExceedsFrame {
            header: header_bytes,
            available,
        });
    }
    let header_end = FRAME_PREFIX_BYTES + header_bytes;
    let header = frame.slice(FRAME_PREFIX_BYTES..header_end);
    let body = frame.slice(header_end..);
    match serialize_type {
        SerializeType::Json => json::decode(header, body),
        SerializeType::RocketMq => rocketmq::decode(header, body),
    }
}

/// Appends `cmd` as one frame to `out`, its body copied after the header.
pub fn encode_frame(cmd: &RemotingCommand, out: &mut BytesMut) {
    encode_frame_head(cmd, cmd.body.len(), out);
    out.extend_from_slice(&cmd.body);
}

/// Appends the length prefix and header of a frame whose body is `body_len` bytes to `out`;
/// the caller sends the body right after (`cmd.body` is not looked at: it may be one of several
/// parts). The frame then matches what [`encode_frame`] writes for that body.
///
/// A command whose code or version does not fit the binary header's 16 bits is written as JSON
/// even when it asks for RocketMQ: Java would truncate the value and the peer would misread it,
/// while every peer decodes JSON. The caller keeps the frame within `FRAME_BYTES_MAX` (a pull
/// response gathers records only up to that size); a larger one would be refused by the peer.
pub fn encode_frame_head(cmd: &RemotingCommand, body_len: usize, out: &mut BytesMut) {
    let start = out.len();
    out.put_u64(0); // length and header-length word, patched once the header is written
    let serialize_type = match cmd.serialize_type {
        SerializeType::RocketMq if rocketmq::fits(cmd) => {
            rocketmq::encode(cmd, out);
            SerializeType::RocketMq
        }
        _ => {
            json::encode(cmd, out);
            SerializeType::Json
        }
    };
    let header_bytes = out.len() - start - FRAME_PREFIX_BYTES;
    assert!(
        header_bytes < 1 << 24,
        "a header is limited to 24 bits of length"
    );
    let frame_bytes = FRAME_PREFIX_BYTES + header_bytes + body_len;
    debug_assert!(
        frame_bytes <= FRAME_BYTES_MAX,
        "a frame of {frame_bytes} bytes exceeds the {FRAME_BYTES_MAX}-byte limit"
    );
    let length = (frame_bytes - 4) as u32;
    let word = (serialize_type as u32) << 24 | header_bytes as u32;
    out[start..start + 4].copy_from_slice(&length.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
}

#[cfg(test)]
mod tests;
