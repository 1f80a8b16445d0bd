//! JSON the way RocketMQ's Java side (fastjson 1.2.x) reads and writes it.
//!
//! Reading: Java peers send bodies that are not standard JSON (REMOTING.md §5.1): map keys of
//! numeric type are written unquoted (`{0:"10.0.0.1:10911"}`), keys of bean type are written as
//! objects (`{{"brokerName":"b","queueId":0,"topic":"T"}:5}`), and fastjson itself accepts
//! single quotes. [`parse`] accepts all of that and yields a [`serde_json::Value`] whose keys
//! are strings: numeric keys as their digits, object keys as their compact standard JSON.
//! Other peers send numbers as strings, booleans as numbers, enums as ordinals; the
//! [`lenient`] field helpers accept those when a body is mapped onto a typed struct.
//!
//! Writing: [`to_vec`] emits either standard JSON or fastjson's legacy default form, where
//! integer-typed map keys are unquoted. Which one a peer needs is decided by the caller
//! (for routes: the request version, REMOTING.md §4.1 and VECTORS.md V9).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Number, Value};
use std::io;

/// Bodies nest a few levels (route → broker data → address map); fastjson has no limit, but a
/// recursive reader must have one so a hostile body cannot exhaust the stack.
pub const NESTING_DEPTH_MAX: usize = 64;

/// Why a body could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FastjsonError {
    #[error("malformed JSON at byte {offset}: expected {expected}")]
    Syntax {
        offset: usize,
        expected: &'static str,
    },
    #[error("JSON nested deeper than {NESTING_DEPTH_MAX} levels at byte {offset}")]
    TooDeep { offset: usize },
    #[error("JSON does not fit the expected shape: {0}")]
    Shape(#[from] serde_json::Error),
}

/// Parses fastjson-flavoured JSON text into a value (see the module doc for what is accepted).
pub fn parse(text: &[u8]) -> Result<Value, FastjsonError> {
    let mut reader = Reader { text, pos: 0 };
    let value = reader.value(0)?;
    reader.skip_whitespace();
    if reader.pos != text.len() {
        return Err(reader.syntax("end of input"));
    }
    Ok(value)
}

/// Parses fastjson-flavoured JSON text and maps it onto `T`.
pub fn from_slice<T: DeserializeOwned>(text: &[u8]) -> Result<T, FastjsonError> {
    Ok(serde_json::from_value(parse(text)?)?)
}

/// The two output forms a RocketMQ NameServer produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonStyle {
    /// Standard JSON: every map key quoted.
    Standard,
    /// fastjson's default output: map keys of integer type unquoted (`{0:"addr"}`); what
    /// clients older than 4.9.4 get from a Java NameServer.
    Legacy,
}

/// Serialises `value` compactly in the given style. Struct fields come out in declaration
/// order, so body structs declare them alphabetically, as fastjson writes them.
pub fn to_vec<T: Serialize>(value: &T, style: JsonStyle) -> Result<Vec<u8>, FastjsonError> {
    let mut out = Vec::with_capacity(256);
    let formatter = KeyFormatter {
        style,
        key: KeyState::Outside,
    };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    Ok(out)
}

/// Where the writer is relative to an object key; lets [`JsonStyle::Legacy`] drop the quotes
/// around integer keys. serde_json writes an integer key as `begin_string, write_i64,
/// end_string` and a string key as `begin_string, fragments, end_string`, so the opening quote
/// is held back until we know which of the two follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyState {
    Outside,
    InKey,
    QuotePending,
    IntegerKey,
}

struct KeyFormatter {
    style: JsonStyle,
    key: KeyState,
}

impl KeyFormatter {
    fn flush_quote<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.key == KeyState::QuotePending {
            self.key = KeyState::InKey;
            writer.write_all(b"\"")?;
        }
        Ok(())
    }

    fn integer_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.key == KeyState::QuotePending {
            self.key = KeyState::IntegerKey;
            return Ok(());
        }
        self.flush_quote(writer)
    }
}

macro_rules! integer_writers {
    ($($name:ident: $ty:ty),*) => {$(
        fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: $ty) -> io::Result<()> {
            self.integer_key(writer)?;
            write!(writer, "{value}")
        }
    )*};
}

impl serde_json::ser::Formatter for KeyFormatter {
    integer_writers!(write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64,
        write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64);

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.key = KeyState::InKey;
        if first {
            Ok(())
        } else {
            writer.write_all(b",")
        }
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.key = KeyState::Outside;
        Ok(())
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if self.key == KeyState::InKey && self.style == JsonStyle::Legacy {
            self.key = KeyState::QuotePending;
            return Ok(());
        }
        writer.write_all(b"\"")
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match self.key {
            KeyState::IntegerKey => {
                self.key = KeyState::InKey;
                Ok(())
            }
            // An empty string key: nothing was written between the quotes.
            KeyState::QuotePending => {
                self.key = KeyState::InKey;
                writer.write_all(b"\"\"")
            }
            KeyState::Outside | KeyState::InKey => writer.write_all(b"\""),
        }
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.flush_quote(writer)?;
        writer.write_all(fragment.as_bytes())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        self.flush_quote(writer)?;
        serde_json::ser::CompactFormatter.write_char_escape(writer, char_escape)
    }
}

struct Reader<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn syntax(&self, expected: &'static str) -> FastjsonError {
        FastjsonError::Syntax {
            offset: self.pos,
            expected,
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.text.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), FastjsonError> {
        if self.peek() != Some(byte) {
            return Err(self.syntax(expected));
        }
        self.pos += 1;
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Value, FastjsonError> {
        if depth > NESTING_DEPTH_MAX {
            return Err(FastjsonError::TooDeep { offset: self.pos });
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(quote @ (b'"' | b'\'')) => Ok(Value::String(self.string(quote)?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            _ => Err(self.syntax("a value")),
        }
    }

    fn literal(&mut self, word: &'static str, value: Value) -> Result<Value, FastjsonError> {
        if !self.text[self.pos..].starts_with(word.as_bytes()) {
            return Err(self.syntax(word));
        }
        self.pos += word.len();
        Ok(value)
    }

    fn object(&mut self, depth: usize) -> Result<Value, FastjsonError> {
        self.pos += 1;
        let mut map = Map::new();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            let key = self.key(depth)?;
            self.expect(b':', "':' after an object key")?;
            let value = self.value(depth + 1)?;
            // Last wins, as in fastjson's HashMap-backed parse.
            map.insert(key, value);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.syntax("',' or '}' in an object")),
            }
        }
    }

    /// A key: quoted string, bare word or number (`0`, `brokerName`), or a whole JSON value
    /// (fastjson's bean keys), which becomes its compact standard JSON text.
    fn key(&mut self, depth: usize) -> Result<String, FastjsonError> {
        match self.peek() {
            Some(quote @ (b'"' | b'\'')) => self.string(quote),
            Some(b'{' | b'[') => Ok(self.value(depth + 1)?.to_string()),
            Some(_) => {
                let start = self.pos;
                while let Some(byte) = self.text.get(self.pos) {
                    if !(byte.is_ascii_alphanumeric()
                        || matches!(byte, b'_' | b'$' | b'-' | b'+' | b'.'))
                    {
                        break;
                    }
                    self.pos += 1;
                }
                if start == self.pos {
                    return Err(self.syntax("an object key"));
                }
                // Only ASCII bytes were accepted above, so this cannot fail.
                Ok(String::from_utf8_lossy(&self.text[start..self.pos]).into_owned())
            }
            None => Err(self.syntax("an object key")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, FastjsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax("',' or ']' in an array")),
            }
        }
    }

    fn string(&mut self, quote: u8) -> Result<String, FastjsonError> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&byte) = self.text.get(self.pos) else {
                return Err(self.syntax("a closing quote"));
            };
            self.pos += 1;
            match byte {
                b if b == quote => break,
                b'\\' => self.escape(&mut out)?,
                other => out.push(other),
            }
        }
        String::from_utf8(out).map_err(|_| FastjsonError::Syntax {
            offset: self.pos,
            expected: "UTF-8 text",
        })
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), FastjsonError> {
        let Some(&byte) = self.text.get(self.pos) else {
            return Err(self.syntax("an escape character"));
        };
        self.pos += 1;
        let decoded = match byte {
            b'"' | b'\'' | b'\\' | b'/' => byte as char,
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(self.syntax("a valid escape")),
        };
        let mut utf8 = [0; 4];
        out.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, FastjsonError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("four hex digits"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.syntax("four hex digits"))?;
        let code = u32::from_str_radix(text, 16).map_err(|_| self.syntax("four hex digits"))?;
        self.pos += 4;
        Ok(code)
    }

    /// `\uXXXX`, joining a UTF-16 surrogate pair; a lone surrogate becomes U+FFFD as in Java's
    /// String-to-UTF-8 conversion.
    fn unicode_escape(&mut self) -> Result<char, FastjsonError> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) && self.text[self.pos..].starts_with(b"\\u") {
            let saved = self.pos;
            self.pos += 2;
            let second = self.hex4()?;
            if (0xDC00..0xE000).contains(&second) {
                let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Ok(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            self.pos = saved;
        }
        Ok(char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn number(&mut self) -> Result<Value, FastjsonError> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.text.get(self.pos) {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.text[start..self.pos])
            .map_err(|_| self.syntax("a number"))?;
        let number = if let Ok(int) = text.parse::<i64>() {
            Number::from(int)
        } else if let Ok(uint) = text.parse::<u64>() {
            Number::from(uint)
        } else {
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .ok_or(FastjsonError::Syntax {
                    offset: start,
                    expected: "a number",
                })?
        };
        Ok(Value::Number(number))
    }
}

/// `deserialize_with` helpers for body fields, accepting what non-Java peers send: numbers as
/// strings, booleans as strings or 0/1, `null` for "not set". Missing fields are handled by
/// `#[serde(default)]` on the struct.
pub mod lenient {
    use serde::de::{Deserialize, Deserializer, Error};
    use serde_json::Value;

    /// An integer field given as a number, a numeric string, or null (→ 0).
    pub fn int<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<i64> + Default,
    {
        let value = Value::deserialize(deserializer)?;
        let wide = match &value {
            Value::Null => return Ok(T::default()),
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        };
        wide.and_then(|w| T::try_from(w).ok())
            .ok_or_else(|| D::Error::custom(format!("expected an integer, got {value}")))
    }

    /// A boolean field given as `true`/`false`, `"true"`/`"false"`, a number, or null (→ false).
    pub fn boolean<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::Null => Ok(false),
            Value::Bool(b) => Ok(*b),
            Value::Number(n) => Ok(n.as_f64() != Some(0.0)),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") || s.is_empty() => Ok(false),
            _ => Err(D::Error::custom(format!("expected a boolean, got {value}"))),
        }
    }

    /// Any field where `null` means "the default" (collections, nested bodies).
    pub fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + Default,
    {
        Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[test]
    fn reads_unquoted_numeric_keys_as_strings() {
        let value = parse(br#"{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}"#).unwrap();
        assert_eq!(value["brokerAddrs"]["0"], "10.0.0.1:10911");
        assert_eq!(value["brokerAddrs"]["1"], "10.0.0.2:10911");
    }

    #[test]
    fn reads_object_keys_as_their_json_text() {
        let value = parse(
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5}}}"#,
        )
        .unwrap();
        let key = r#"{"brokerName":"b","queueId":0,"topic":"T"}"#;
        assert_eq!(value["offsetTable"][key]["brokerOffset"], 5);
    }

    #[test]
    fn reads_single_quotes_bare_words_and_escapes() {
        let value = parse(
            b"{name:'a\\'b', \"s\":\"\\u0001\\ud83d\\ude00\\n\", list:[1, -2.5e1, true, null]}",
        )
        .unwrap();
        assert_eq!(value["name"], "a'b");
        assert_eq!(value["s"], "\u{1}\u{1F600}\n");
        assert_eq!(value["list"], serde_json::json!([1, -25.0, true, null]));
    }

    #[test]
    fn rejects_malformed_text_with_a_typed_error() {
        for bad in [
            &b"{"[..],
            b"{\"a\" 1}",
            b"[1,,2]",
            b"\"open",
            b"{}x",
            b"",
            b"tru",
            b"{\"a\":\"\\q\"}",
        ] {
            assert!(
                matches!(parse(bad), Err(FastjsonError::Syntax { .. })),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn rejects_deep_nesting_without_overflowing_the_stack() {
        let deep = "[".repeat(100_000);
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(FastjsonError::TooDeep { .. })
        ));
    }

    #[derive(Serialize)]
    struct Addrs {
        #[serde(rename = "brokerAddrs")]
        broker_addrs: BTreeMap<i64, String>,
        names: BTreeMap<String, String>,
    }

    #[test]
    fn legacy_style_unquotes_only_integer_keys() {
        let addrs = Addrs {
            broker_addrs: BTreeMap::from([(0, "a:1".to_string()), (-1, "b\"".to_string())]),
            names: BTreeMap::from([
                ("7".to_string(), "x".to_string()),
                (String::new(), "e".to_string()),
            ]),
        };
        let legacy = String::from_utf8(to_vec(&addrs, JsonStyle::Legacy).unwrap()).unwrap();
        assert_eq!(
            legacy,
            r#"{"brokerAddrs":{-1:"b\"",0:"a:1"},"names":{"":"e","7":"x"}}"#
        );
        let standard = String::from_utf8(to_vec(&addrs, JsonStyle::Standard).unwrap()).unwrap();
        assert_eq!(
            standard,
            r#"{"brokerAddrs":{"-1":"b\"","0":"a:1"},"names":{"":"e","7":"x"}}"#
        );
        // Both forms read back to the same value.
        assert_eq!(
            parse(legacy.as_bytes()).unwrap(),
            parse(standard.as_bytes()).unwrap()
        );
    }

    #[derive(Deserialize, Debug, PartialEq, Default)]
    #[serde(default)]
    struct Lenient {
        #[serde(deserialize_with = "lenient::int")]
        count: i32,
        #[serde(deserialize_with = "lenient::int")]
        big: i64,
        #[serde(deserialize_with = "lenient::boolean")]
        flag: bool,
        #[serde(deserialize_with = "lenient::or_default")]
        list: Vec<String>,
    }

    #[test]
    fn lenient_fields_accept_strings_numbers_nulls_and_absence() {
        let got: Lenient =
            from_slice(br#"{"count":"16","big":1.7e12,"flag":"true","list":null}"#).unwrap();
        assert_eq!(
            got,
            Lenient {
                count: 16,
                big: 1_700_000_000_000,
                flag: true,
                list: vec![]
            }
        );
        let got: Lenient = from_slice(b"{flag:1}").unwrap();
        assert_eq!(
            got,
            Lenient {
                flag: true,
                ..Lenient::default()
            }
        );
        assert!(matches!(
            from_slice::<Lenient>(br#"{"count":"x"}"#),
            Err(FastjsonError::Shape(_))
        ));
        assert!(matches!(
            from_slice::<Lenient>(br#"{"count":4294967296}"#),
            Err(FastjsonError::Shape(_))
        ));
    }

    /// JSON values of bounded size and depth for the property tests.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| Value::Number(n.into())),
            "\\PC{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("\\PC{0,6}", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn what_the_writer_emits_reads_back(value in json_value()) {
            for style in [JsonStyle::Standard, JsonStyle::Legacy] {
                let text = to_vec(&value, style).unwrap();
                proptest::prop_assert_eq!(&parse(&text).unwrap(), &value);
            }
        }
    }
}
