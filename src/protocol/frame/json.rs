//! The JSON header (REMOTING.md §1.4), decoded as leniently as the Java broker's fastjson does,
//! because real clients differ: the Go client sends no `serializeTypeCurrentRPC` and an empty
//! remark; the C++ client sends extFields values as JSON numbers; keys come in any order.
//! Encoded as fastjson writes it: keys in alphabetical order, null fields omitted.

use std::borrow::Cow;
use std::fmt;
use std::io::Write;

use bytes::{BufMut, Bytes, BytesMut};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::FrameError;
use crate::protocol::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType, Text};
use crate::protocol::ext_fields::EXT_FIELDS_TYPICAL;

/// Decodes the header in one pass over the text, straight into the command's fields: no
/// intermediate JSON tree (every send request goes through here). Values are taken as
/// [`Scalar`]s first and checked against their field afterwards, so a wrong type is reported
/// with the field's name. extFields keys and string values without escapes are slices of
/// `header` (no allocation); only escaped strings (a message's properties, whose separators
/// Java writes as `\u0001`) become owned strings, made at their size in one allocation.
pub(super) fn decode(header: Bytes, body: Bytes) -> Result<RemotingCommand, FrameError> {
    let first = header.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(FrameError::JsonNotObject);
    }
    let mut de = serde_json::Deserializer::from_slice(&header);
    let fields = de.deserialize_map(HeaderVisitor { header: &header })?;
    de.end()?;
    Ok(RemotingCommand {
        code: int_field(fields.code, "code")?,
        language: language_field(fields.language)?,
        version: int_field(fields.version, "version")?,
        opaque: int_field(fields.opaque, "opaque")?,
        flag: int_field(fields.flag, "flag")?,
        remark: match fields.remark {
            Scalar::Null => None,
            other => Some(other.into_text().ok_or(FrameError::JsonField("remark"))?),
        },
        ext_fields: match fields.ext_fields {
            ExtValue::Absent => ExtFields::new(),
            ExtValue::Object(ext) => ext,
            ExtValue::Invalid => return Err(FrameError::JsonField("extFields")),
        },
        serialize_type: SerializeType::Json,
        body,
    })
}

/// An int field: a JSON integer or a string holding one (fastjson converts both); missing or
/// null is 0, as for a Java `int`.
fn int_field(value: Scalar, name: &'static str) -> Result<i32, FrameError> {
    let parsed = match value {
        Scalar::Null => return Ok(0),
        Scalar::Int(n) => i32::try_from(n).ok(),
        Scalar::Text(s) => s.trim().parse().ok(),
        _ => None,
    };
    parsed.ok_or(FrameError::JsonField(name))
}

/// `language` as an enum name (or its ordinal, which fastjson also accepts). Missing means JAVA,
/// the Java field's default; an unknown name is OTHER.
fn language_field(value: Scalar) -> Result<LanguageCode, FrameError> {
    match value {
        Scalar::Null => Ok(LanguageCode::Java),
        Scalar::Text(name) => Ok(LanguageCode::from_name(&name)),
        Scalar::Int(n) => Ok(u8::try_from(n).map_or(LanguageCode::Other, LanguageCode::from_code)),
        _ => Err(FrameError::JsonField("language")),
    }
}

/// The header's fields as read; absent ones stay `Null`. Unknown keys (such as
/// `serializeTypeCurrentRPC`, which the type byte overrides) are skipped; a repeated key keeps
/// its last value, as fastjson does.
struct HeaderFields<'de> {
    code: Scalar<'de>,
    language: Scalar<'de>,
    version: Scalar<'de>,
    opaque: Scalar<'de>,
    flag: Scalar<'de>,
    remark: Scalar<'de>,
    ext_fields: ExtValue,
}

/// The header's `extFields` value.
enum ExtValue {
    /// Missing or null.
    Absent,
    Object(ExtFields),
    /// Not an object.
    Invalid,
}

struct HeaderVisitor<'h> {
    /// The header's bytes, which the texts of `extFields` are slices of.
    header: &'h Bytes,
}

impl<'de> Visitor<'de> for HeaderVisitor<'_> {
    type Value = HeaderFields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a RemotingCommand header object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HeaderFields<'de>, A::Error> {
        let mut fields = HeaderFields {
            code: Scalar::Null,
            language: Scalar::Null,
            version: Scalar::Null,
            opaque: Scalar::Null,
            flag: Scalar::Null,
            remark: Scalar::Null,
            ext_fields: ExtValue::Absent,
        };
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Code => &mut fields.code,
                Key::Language => &mut fields.language,
                Key::Version => &mut fields.version,
                Key::Opaque => &mut fields.opaque,
                Key::Flag => &mut fields.flag,
                Key::Remark => &mut fields.remark,
                Key::ExtFields => {
                    let seed = ExtFieldsSeed {
                        header: self.header,
                    };
                    fields.ext_fields = map.next_value_seed(seed)?;
                    continue;
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value()?;
        }
        Ok(fields)
    }
}

/// A header key, matched without allocating.
enum Key {
    Code,
    Language,
    Version,
    Opaque,
    Flag,
    Remark,
    ExtFields,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a header key")
    }
    fn visit_str<E>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "code" => Key::Code,
            "language" => Key::Language,
            "version" => Key::Version,
            "opaque" => Key::Opaque,
            "flag" => Key::Flag,
            "remark" => Key::Remark,
            "extFields" => Key::ExtFields,
            _ => Key::Other,
        })
    }
}

/// A header value before it is checked against its field: any JSON value is accepted here.
/// Objects are kept as `extFields` needs them, arrays are skipped.
/// A string is borrowed from the header when it has no escapes (`language` in every request).
enum Scalar<'de> {
    Null,
    Int(i64),
    /// A number that is not an i64 (fraction, exponent or beyond 64 bits).
    OtherNumber(String),
    Text(Cow<'de, str>),
    Bool(bool),
    /// An object or an array: no header field but `extFields` may hold one.
    Nested,
}

impl Scalar<'_> {
    /// The text of a scalar: strings as they are, numbers and booleans as their JSON text.
    fn into_text(self) -> Option<String> {
        match self {
            Scalar::Int(n) => Some(n.to_string()),
            Scalar::OtherNumber(text) => Some(text),
            Scalar::Text(text) => Some(text.into_owned()),
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Null | Scalar::Nested => None,
        }
    }
}

impl<'de> de::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Int(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Scalar<'de>, E> {
        Ok(i64::try_from(n).map_or_else(|_| Scalar::OtherNumber(n.to_string()), Scalar::Int))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::OtherNumber(Value::from(n).to_string()))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Owned(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar<'de>, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| Scalar::Nested)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Scalar<'de>, A::Error> {
        IgnoredAny.visit_map(map).map(|_| Scalar::Nested)
    }
}

/// Reads `extFields`: null, or an object whose keys and values become [`Text`]s.
struct ExtFieldsSeed<'h> {
    header: &'h Bytes,
}

impl<'de> DeserializeSeed<'de> for ExtFieldsSeed<'_> {
    type Value = ExtValue;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ExtValue, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExtFieldsSeed<'_> {
    type Value = ExtValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an extFields object")
    }
    fn visit_unit<E>(self) -> Result<ExtValue, E> {
        Ok(ExtValue::Absent)
    }
    fn visit_bool<E>(self, _: bool) -> Result<ExtValue, E> {
        Ok(ExtValue::Invalid)
    }
    fn visit_i64<E>(self, _: i64) -> Result<ExtValue, E> {
        Ok(ExtValue::Invalid)
    }
    fn visit_u64<E>(self, _: u64) -> Result<ExtValue, E> {
        Ok(ExtValue::Invalid)
    }
    fn visit_f64<E>(self, _: f64) -> Result<ExtValue, E> {
        Ok(ExtValue::Invalid)
    }
    fn visit_str<E>(self, _: &str) -> Result<ExtValue, E> {
        Ok(ExtValue::Invalid)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ExtValue, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| ExtValue::Invalid)
    }
    /// Values become strings: numbers and booleans their JSON text (the C++ client sends
    /// `"queueId":1`), nested values their JSON text; a null value is dropped, as the Java
    /// decoder treats a null field as absent.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtValue, A::Error> {
        let header = self.header;
        let mut ext = ExtFields::with_capacity(map.size_hint().unwrap_or(EXT_FIELDS_TYPICAL));
        while let Some(key) = map.next_key_seed(KeySeed { header })? {
            if let Some(value) = map.next_value_seed(ValueSeed { header })? {
                ext.insert(key, value);
            }
        }
        Ok(ExtValue::Object(ext))
    }
}

/// One extFields key as [`Text`]: a slice of the header when the parser could lend it (no
/// escapes), else owned. (JSON keys are strings.)
struct KeySeed<'h> {
    header: &'h Bytes,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Text;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an extFields key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text, E> {
        Ok(Text::borrowed_from(self.header, s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Text, E> {
        Ok(s.to_owned().into())
    }
}

/// One extFields value as [`Text`], from its raw JSON text: a string without escapes, an
/// integer or a boolean is a slice of `header`; an escaped string is resolved into one string
/// of its size (serde_json's own unescaping grows a scratch buffer from empty in every frame:
/// five allocations per send, whose properties Java escapes); another number or a nested
/// value becomes its compact JSON text; `None` for null.
struct ValueSeed<'h> {
    header: &'h Bytes,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Option<Text>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Text>, D::Error> {
        let raw = <&'de RawValue>::deserialize(deserializer)?.get();
        let borrowed = |text: &str| Ok(Some(Text::borrowed_from(self.header, text)));
        match raw.as_bytes()[0] {
            b'"' => {
                let inside = &raw[1..raw.len() - 1];
                if !inside.contains('\\') {
                    return borrowed(inside);
                }
                let text = unescape(inside).ok_or_else(|| de::Error::custom("a bad escape"))?;
                Ok(Some(text.into()))
            }
            b'n' => Ok(None),
            b't' | b'f' => borrowed(raw),
            _ if raw.parse::<i64>().is_ok() => borrowed(raw),
            _ => {
                let value: Value = serde_json::from_str(raw).map_err(de::Error::custom)?;
                Ok(Some(value.to_string().into()))
            }
        }
    }
}

/// The text of the inside of a JSON string, its escapes resolved; `None` for an escape JSON
/// does not have (serde_json has checked the syntax, so that is a lone surrogate).
fn unescape(inside: &str) -> Option<String> {
    let mut out = String::with_capacity(inside.len());
    let mut rest = inside;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = rest.as_bytes().get(at + 1)?;
        rest = &rest[at + 2..];
        let c = match escape {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = hex4(&mut rest)?;
                if (0xD800..0xDC00).contains(&unit) {
                    rest = rest.strip_prefix("\\u")?;
                    let low = hex4(&mut rest)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                } else {
                    char::from_u32(unit)?
                }
            }
            _ => return None,
        };
        out.push(c);
    }
    out.push_str(rest);
    Some(out)
}

/// The four hex digits at the start of `text`, which moves past them.
fn hex4(text: &mut &str) -> Option<u32> {
    let digits = text.get(..4)?;
    let unit = u32::from_str_radix(digits, 16).ok()?;
    *text = &text[4..];
    Some(unit)
}

/// Writes the header as fastjson does: alphabetical keys, `extFields` and `remark` only when
/// present. extFields keys are sorted too (Java writes HashMap order, which no reader relies
/// on), so output is deterministic. Strings are escaped as fastjson escapes them.
pub(super) fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    write_header(cmd, &mut out.writer()).expect("writing into a BytesMut cannot fail");
}

fn write_header(cmd: &RemotingCommand, w: &mut impl Write) -> std::io::Result<()> {
    write!(w, "{{\"code\":{}", cmd.code)?;
    if !cmd.ext_fields.is_empty() {
        w.write_all(b",\"extFields\":{")?;
        for (i, (key, value)) in cmd.ext_fields.sorted().into_iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write_string(w, key)?;
            w.write_all(b":")?;
            write_string(w, value)?;
        }
        w.write_all(b"}")?;
    }
    write!(
        w,
        ",\"flag\":{},\"language\":\"{}\",\"opaque\":{}",
        cmd.flag,
        cmd.language.name(),
        cmd.opaque
    )?;
    if let Some(remark) = &cmd.remark {
        w.write_all(b",\"remark\":")?;
        write_string(w, remark)?;
    }
    write!(
        w,
        ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":{}}}",
        cmd.version
    )
}

/// How [`write_string`] treats each byte: 0 = copy; `u` = `\u00XX`; [`LEAD_E2`] = first byte
/// of U+2028/U+2029 (escaped) or of another character (copied); anything else = a backslash and
/// that byte (`\"`, `\\`, `\n`…).
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0A] = b'n';
    table[0x0C] = b'f';
    table[0x0D] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[0x7F] = b'u';
    table[0xE2] = LEAD_E2;
    table
};
const LEAD_E2: u8 = 1;

/// `\uXXXX` with upper-case hex, as fastjson writes it.
fn unicode_escape(c: u32) -> [u8; 6] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let hex = |shift: u32| HEX[(c >> shift & 0xF) as usize];
    [b'\\', b'u', hex(12), hex(8), hex(4), hex(0)]
}

/// A JSON string literal as fastjson 1.2 writes it: `"` and `\` escaped, `\b \t \n \f \r`
/// short, other control characters, DEL, U+2028 and U+2029 as `\uXXXX` with upper-case hex,
/// everything else raw UTF-8. (serde_json would write lower-case hex and leave DEL, U+2028 and
/// U+2029 raw: equivalent JSON, but not the bytes a Java peer writes.) A byte table, since
/// every escaped character but the two separators is ASCII.
fn write_string(w: &mut impl Write, text: &str) -> std::io::Result<()> {
    let bytes = text.as_bytes();
    w.write_all(b"\"")?;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let (escaped, consumed) = match ESCAPES[usize::from(b)] {
            0 => continue,
            b'u' => (unicode_escape(u32::from(b)), 1),
            LEAD_E2 => match bytes.get(i + 1..i + 3) {
                // E2 80 A8 / E2 80 A9; the continuation bytes are never escaped themselves.
                Some(&[0x80, last @ (0xA8 | 0xA9)]) => {
                    (unicode_escape(0x2000 | u32::from(last - 0x80)), 3)
                }
                _ => continue,
            },
            short => ([b'\\', short, 0, 0, 0, 0], 1),
        };
        w.write_all(&bytes[start..i])?;
        let len = if escaped[1] == b'u' { 6 } else { 2 };
        w.write_all(&escaped[..len])?;
        start = i + consumed;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
