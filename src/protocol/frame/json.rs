//! The JSON header (REMOTING.md §1.4), decoded as leniently as the Java broker's fastjson does,
//! because real clients differ: the Go client sends no `serializeTypeCurrentRPC` and an empty
//! remark; the C++ client sends extFields values as JSON numbers; keys come in any order.
//! Encoded as fastjson writes it: keys in alphabetical order, null fields omitted.

use std::io::Write;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use super::FrameError;
use crate::protocol::command::{ExtFields, LanguageCode, RemotingCommand, SerializeType};

pub(super) fn decode(header: &[u8], body: Bytes) -> Result<RemotingCommand, FrameError> {
    let Value::Object(mut fields) = serde_json::from_slice(header)? else {
        return Err(FrameError::JsonNotObject);
    };
    Ok(RemotingCommand {
        code: int_field(&fields, "code")?,
        language: language_field(&fields)?,
        version: int_field(&fields, "version")?,
        opaque: int_field(&fields, "opaque")?,
        flag: int_field(&fields, "flag")?,
        remark: match fields.get("remark") {
            None | Some(Value::Null) => None,
            Some(value) => Some(scalar_text(value).ok_or(FrameError::JsonField("remark"))?),
        },
        ext_fields: ext_fields(fields.remove("extFields"))?,
        serialize_type: SerializeType::Json,
        body,
    })
}

/// An int field: a JSON integer or a string holding one (fastjson converts both); missing or
/// null is 0, as for a Java `int`.
fn int_field(fields: &Map<String, Value>, name: &'static str) -> Result<i32, FrameError> {
    let parsed = match fields.get(name) {
        None | Some(Value::Null) => return Ok(0),
        Some(Value::Number(n)) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    parsed.ok_or(FrameError::JsonField(name))
}

/// `language` as an enum name (or its ordinal, which fastjson also accepts). Missing means JAVA,
/// the Java field's default; an unknown name is OTHER.
fn language_field(fields: &Map<String, Value>) -> Result<LanguageCode, FrameError> {
    match fields.get("language") {
        None | Some(Value::Null) => Ok(LanguageCode::Java),
        Some(Value::String(name)) => Ok(LanguageCode::from_name(name)),
        Some(Value::Number(n)) => Ok(n
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code)),
        Some(_) => Err(FrameError::JsonField("language")),
    }
}

/// `extFields` as a map of strings. Numbers and booleans become their JSON text (the C++ client
/// sends `"queueId":1`); nested values their JSON text; null values are dropped, as the Java
/// decoder treats a null field as absent.
fn ext_fields(value: Option<Value>) -> Result<ExtFields, FrameError> {
    let fields = match value {
        None | Some(Value::Null) => return Ok(ExtFields::new()),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(FrameError::JsonField("extFields")),
    };
    Ok(fields
        .into_iter()
        .filter_map(|(key, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((key, text)),
            other => Some((key, other.to_string())),
        })
        .collect())
}

/// The text of a scalar: strings as they are, numbers and booleans as their JSON text.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Writes the header as fastjson does: alphabetical keys, `extFields` and `remark` only when
/// present. extFields keys are sorted too (Java writes HashMap order, which no reader relies
/// on), so output is deterministic. Strings are escaped by serde_json, which writes control
/// characters as `\u00XX` (or `\n`-style) exactly like fastjson.
pub(super) fn encode(cmd: &RemotingCommand, out: &mut BytesMut) {
    write_header(cmd, &mut out.writer()).expect("writing into a BytesMut cannot fail");
}

fn write_header(cmd: &RemotingCommand, w: &mut impl Write) -> std::io::Result<()> {
    write!(w, "{{\"code\":{}", cmd.code)?;
    if !cmd.ext_fields.is_empty() {
        let mut entries: Vec<(&String, &String)> = cmd.ext_fields.iter().collect();
        entries.sort_unstable();
        w.write_all(b",\"extFields\":{")?;
        for (i, (key, value)) in entries.into_iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut *w, key)?;
            w.write_all(b":")?;
            serde_json::to_writer(&mut *w, value)?;
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
        serde_json::to_writer(&mut *w, remark)?;
    }
    write!(
        w,
        ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":{}}}",
        cmd.version
    )
}
