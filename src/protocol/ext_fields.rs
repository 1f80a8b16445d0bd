//! A command's "custom header" fields (REMOTING.md §1.9), kept as what they were read from.
//!
//! Every request carries a dozen of these (a send header: producer group, topic, queue id,
//! properties…), and a `HashMap<String, String>` cost each of them two allocations and two
//! SipHashes per request, the largest item of the broker's profile. Here a key or a value is
//! a [`Text`]: a `&'static str` (the keys a typed header writes), a slice of the frame it was
//! read from (keys and values off the wire, sharing the frame's buffer), or an owned string
//! (a JSON value with escapes, a number the C++ client sent unquoted). The fields are a short
//! vector searched linearly: headers have at most a few dozen fields, and comparing short keys
//! costs less than hashing them. Short texts a header writes (every number: a queue id, an
//! offset) are held inline, so a response's header costs no allocation per field either.

use bytes::Bytes;
use smallvec::SmallVec;
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

/// UTF-8 text: static, shared with a frame, or owned.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    /// Valid UTF-8, checked when made ([`Text::from_frame`], [`Text::borrowed_from`]).
    Shared(Bytes),
    Owned(String),
    /// `bytes[..len]`, valid UTF-8 (written by [`Text::display`]).
    Inline {
        len: u8,
        bytes: [u8; INLINE_BYTES_MAX],
    },
}

/// Longest text held inline: an i64 in decimal with its sign is 20 bytes, an IPv4
/// offsetMsgId or UNIQ_KEY 32; 38 keeps a `Text` at the size of a `Bytes` plus its tag.
const INLINE_BYTES_MAX: usize = 38;
const _: () = assert!(
    std::mem::size_of::<Text>() == 40,
    "a Text is a Bytes and a tag"
);

impl Text {
    /// `frame[range]` as text: copied inline when short, else a slice sharing `frame`; text with
    /// invalid sequences replaced when it is not UTF-8, as Java's `new String(bytes, UTF_8)`
    /// reads it.
    pub fn from_frame(frame: &Bytes, range: std::ops::Range<usize>) -> Self {
        match std::str::from_utf8(&frame[range.clone()]) {
            Ok(text) => Self::borrowed_from(frame, text),
            Err(_) => Self(Repr::Owned(
                String::from_utf8_lossy(&frame[range]).into_owned(),
            )),
        }
    }

    /// `text`, which a parser borrowed from `frame`: copied inline when short (every header
    /// key, most values), else a slice of `frame` (no copy, no second UTF-8 check); copied if
    /// it does not lie inside `frame`. A slice costs an atomic increment of the frame's count
    /// and a decrement at its drop, often on another shard's core: two dozen per send request
    /// were 4 % of the broker's CPU, more than copying the short ones.
    pub fn borrowed_from(frame: &Bytes, text: &str) -> Self {
        if let Some(inline) = Self::inline(text) {
            return inline;
        }
        let inside = frame.as_ptr_range();
        let range = text.as_bytes().as_ptr_range();
        if inside.start <= range.start && range.end <= inside.end {
            return Self(Repr::Shared(frame.slice_ref(text.as_bytes())));
        }
        Self(Repr::Owned(text.to_owned()))
    }

    /// `text` copied inline, when it fits.
    fn inline(text: &str) -> Option<Self> {
        let mut bytes = [0; INLINE_BYTES_MAX];
        bytes
            .get_mut(..text.len())?
            .copy_from_slice(text.as_bytes());
        Some(Self(Repr::Inline {
            len: text.len() as u8,
            bytes,
        }))
    }

    /// The text `value` displays as: inline (no allocation) when it is short, as numbers are.
    pub fn display(value: impl fmt::Display) -> Self {
        let mut inline = InlineWriter {
            bytes: [0; INLINE_BYTES_MAX],
            len: 0,
        };
        if fmt::write(&mut inline, format_args!("{value}")).is_ok() {
            return Self(Repr::Inline {
                len: inline.len as u8,
                bytes: inline.bytes,
            });
        }
        Self(Repr::Owned(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            // SAFETY: only made from bytes `shared` checked to be UTF-8; `Bytes` never changes.
            Repr::Shared(bytes) => unsafe { std::str::from_utf8_unchecked(bytes) },
            Repr::Owned(text) => text,
            // SAFETY: `display` wrote whole `str`s into `bytes[..len]`.
            Repr::Inline { len, bytes } => unsafe {
                std::str::from_utf8_unchecked(&bytes[..usize::from(*len)])
            },
        }
    }

    /// The text as an owned `String` (a copy unless it was owned already).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(text) => text,
            _ => self.as_str().to_owned(),
        }
    }
}

/// Fills an inline buffer; fails (and `display` falls back to a `String`) when it is full.
struct InlineWriter {
    bytes: [u8; INLINE_BYTES_MAX],
    len: usize,
}

impl fmt::Write for InlineWriter {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let end = self.len + text.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Default for Text {
    fn default() -> Self {
        Self(Repr::Static(""))
    }
}

impl From<&'static str> for Text {
    fn from(text: &'static str) -> Self {
        Self(Repr::Static(text))
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Self(Repr::Owned(text))
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Fields a decoder makes room for at once: a send's header has 13 or 14.
pub const EXT_FIELDS_TYPICAL: usize = 16;

/// Fields [`ExtFields::sorted`] sorts without allocating: more than any response header the
/// broker writes (a send response has eight), for 512 bytes of stack.
pub const SORTED_ON_STACK_MAX: usize = 16;

/// Field name → value. A key inserted again replaces its value (a repeated key on the wire
/// keeps the last one, as Java's map does). Order is arrival order; equality ignores it.
#[derive(Clone, Default)]
pub struct ExtFields {
    fields: Vec<(Text, Text)>,
}

impl ExtFields {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(fields: usize) -> Self {
        Self {
            fields: Vec::with_capacity(fields),
        }
    }

    /// Makes room for `more` fields.
    pub fn reserve(&mut self, more: usize) {
        self.fields.reserve(more);
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.get_text(key).map(Text::as_str)
    }

    /// The value as it is held: cloning it shares the frame it was read from.
    pub fn get_text(&self, key: &str) -> Option<&Text> {
        self.position(key).map(|i| &self.fields[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Sets `key` to `value`; returns the value it replaced.
    pub fn insert(&mut self, key: impl Into<Text>, value: impl Into<Text>) -> Option<Text> {
        let (key, value) = (key.into(), value.into());
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.fields[i].1, value)),
            None => {
                self.fields.push((key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Text> {
        self.position(key).map(|i| self.fields.remove(i).1)
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// (key, value) pairs in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// (key, value) pairs sorted by key: the order the encoders write, so output is
    /// deterministic. On the stack up to [`SORTED_ON_STACK_MAX`] fields.
    pub fn sorted(&self) -> SmallVec<[(&str, &str); SORTED_ON_STACK_MAX]> {
        let mut entries: SmallVec<[(&str, &str); SORTED_ON_STACK_MAX]> = self.iter().collect();
        entries.sort_unstable();
        entries
    }

    /// The keys' first bytes are compared before the whole keys: a V2 send header's keys are
    /// single letters (`a`..`n`), so every `str` comparison of two of them was a call to
    /// `memcmp` for one byte (4.8 % of the broker's CPU under the Java client), a dozen per
    /// field looked up or decoded.
    fn position(&self, key: &str) -> Option<usize> {
        let first = key.as_bytes().first();
        self.fields.iter().position(|(k, _)| {
            let k = k.as_bytes();
            k.len() == key.len() && k.first() == first && k == key.as_bytes()
        })
    }
}

impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.sorted()).finish()
    }
}

impl<K: Into<Text>, V: Into<Text>> Extend<(K, V)> for ExtFields {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, pairs: I) {
        for (key, value) in pairs {
            self.insert(key, value);
        }
    }
}

impl<'a> IntoIterator for &'a ExtFields {
    type Item = (&'a str, &'a str);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a str)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl IntoIterator for ExtFields {
    type Item = (Text, Text);
    type IntoIter = std::vec::IntoIter<(Text, Text)>;
    fn into_iter(self) -> Self::IntoIter {
        self.fields.into_iter()
    }
}

impl<K: Into<Text>, V: Into<Text>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(pairs: I) -> Self {
        let mut fields = Self::new();
        fields.extend(pairs);
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_set_again_keeps_its_last_value_and_equality_ignores_order() {
        let mut a = ExtFields::new();
        assert_eq!(a.insert("topic", "T".to_owned()), None);
        a.insert("queueId", Text::from_frame(&Bytes::from_static(b"3"), 0..1));
        let old = a.insert("topic", "U".to_owned());
        assert_eq!(old.as_deref(), Some("T"));
        assert_eq!(
            (a.get("topic"), a.get("queueId"), a.len()),
            (Some("U"), Some("3"), 2)
        );
        let b: ExtFields = [("queueId", "3".to_owned()), ("topic", "U".to_owned())]
            .into_iter()
            .collect();
        assert_eq!(a, b);
        assert_eq!(a.sorted()[..], [("queueId", "3"), ("topic", "U")]);
        assert_eq!(a.remove("queueId").as_deref(), Some("3"));
        assert_ne!(a, b);
    }

    #[test]
    fn short_displayed_text_is_inline_and_long_text_is_owned() {
        assert_eq!(&*Text::display(i64::MIN), "-9223372036854775808");
        assert!(matches!(Text::display(42).0, Repr::Inline { len: 2, .. }));
        let long = "x".repeat(INLINE_BYTES_MAX + 1);
        let text = Text::display(&long);
        assert!(matches!(text.0, Repr::Owned(_)));
        assert_eq!(&*text, long);
        let exactly = "y".repeat(INLINE_BYTES_MAX);
        assert!(matches!(Text::display(&exactly).0, Repr::Inline { .. }));
    }

    #[test]
    fn frame_text_is_inline_when_short_else_shared_and_bad_utf8_is_replaced() {
        let frame = Bytes::from_static(b"xxTopicTestxx");
        let short = Text::from_frame(&frame, 2..11);
        assert_eq!(&*short, "TopicTest");
        assert!(matches!(short.0, Repr::Inline { len: 9, .. }));
        let long = Bytes::from(format!("xx{}", "p".repeat(INLINE_BYTES_MAX + 1)));
        let text = Text::from_frame(&long, 2..long.len());
        assert_eq!(text.len(), INLINE_BYTES_MAX + 1);
        assert_eq!(text.as_ptr(), long[2..].as_ptr(), "no copy");
        let bad = Text::from_frame(&Bytes::from_static(b"a\xffb"), 0..3);
        assert_eq!(&*bad, "a\u{fffd}b");
        let elsewhere = "q".repeat(INLINE_BYTES_MAX + 1);
        assert!(matches!(
            Text::borrowed_from(&frame, &elsewhere).0,
            Repr::Owned(_)
        ));
    }
}
