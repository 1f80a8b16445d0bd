//! Body of HEART_BEAT (code 34): `HeartbeatData` and the `ConsumerData`, `ProducerData` and
//! `SubscriptionData` inside it (REMOTING.md §4.3, §5.2), and the tag-expression parsing of
//! Java's `FilterAPI`.
//!
//! Decoding accepts what every client sends: Java 4.9.x/5.x (enum names, numbers), Go v2
//! (`codeSet` entries as strings, `subVersion` in nanoseconds, no `unitMode`/fingerprint), the
//! C++ 1.x client (enums as ordinals, `subVersion` as a string, no `expressionType`). Missing
//! fields take Java's defaults, unknown fields are ignored. Encoding writes what Java 5.x writes.

use crate::protocol::fastjson::lenient;
use ringmq_shards::record::tag_hash_code;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `SubscriptionData.SUB_ALL`: the expression meaning "every tag".
pub const SUB_ALL: &str = "*";
/// `ExpressionType.TAG`: tags separated by `||`.
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
/// `ExpressionType.SQL92`: a property filter, carried but not evaluated yet.
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";

/// Defines a Java enum as clients send it: written by name; read from the name (any case, as
/// Go writes `Clustering` upper-cased but older builds did not), the ordinal or a numeric
/// string. A value no variant matches reads as absent, as fastjson reads an unknown name.
macro_rules! java_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every variant in Java's declaration (ordinal) order, with its name.
            const ALL: &'static [($name, &'static str)] = &[$(($name::$variant, $text)),+];

            /// The Java enum name.
            pub fn name(self) -> &'static str {
                Self::ALL[self as usize].1
            }

            fn from_json(value: &Value) -> Option<Self> {
                let ordinal = match value {
                    Value::String(text) => match text.trim().parse::<u64>() {
                        Ok(n) => n,
                        Err(_) => {
                            return Self::ALL
                                .iter()
                                .find(|(_, name)| name.eq_ignore_ascii_case(text.trim()))
                                .map(|(variant, _)| *variant)
                        }
                    },
                    Value::Number(n) => n.as_u64()?,
                    _ => return None,
                };
                Self::ALL.get(usize::try_from(ordinal).ok()?).map(|(variant, _)| *variant)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                Self::from_json(&value).ok_or_else(|| {
                    serde::de::Error::custom(format!(concat!("unknown ", stringify!($name), " {}"), value))
                })
            }
        }
    };
}

java_enum!(
    /// How a consumer gets messages (`ConsumeType`).
    ConsumeType {
        ConsumeActively = "CONSUME_ACTIVELY",
        ConsumePassively = "CONSUME_PASSIVELY",
        ConsumePop = "CONSUME_POP",
    }
);

java_enum!(
    /// Whether each group member gets a share of the queues or every message (`MessageModel`).
    MessageModel {
        Broadcasting = "BROADCASTING",
        Clustering = "CLUSTERING",
    }
);

java_enum!(
    /// Where a group with no committed offset starts (`ConsumeFromWhere`).
    ConsumeFromWhere {
        ConsumeFromLastOffset = "CONSUME_FROM_LAST_OFFSET",
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        ConsumeFromMinOffset = "CONSUME_FROM_MIN_OFFSET",
        ConsumeFromMaxOffset = "CONSUME_FROM_MAX_OFFSET",
        ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        ConsumeFromTimestamp = "CONSUME_FROM_TIMESTAMP",
    }
);

/// `deserialize_with` for an optional Java enum: null, a missing field or a value no variant
/// matches (Go writes `consumeFromWhere: "UNKNOWN"` for a value outside its three) all read
/// as `None`.
pub(crate) fn optional_enum<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).ok())
}

/// A JSON array read as a set's items; `{}` (what Go's set marshals to when the encoder cannot
/// take its address) and null read as empty.
fn items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Value>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::Array(items) => items,
        _ => Vec::new(),
    })
}

/// `tagsSet`: strings (numbers are taken as their text).
fn tag_items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(items(deserializer)?
        .into_iter()
        .filter_map(|item| match item {
            Value::String(tag) => Some(tag),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
        .collect())
}

/// `codeSet`: 32-bit hash codes as numbers (Java, C++) or numeric strings (Go).
fn code_items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i32>, D::Error> {
    items(deserializer)?
        .into_iter()
        .map(|item| lenient::int(item).map_err(serde::de::Error::custom))
        .collect()
}

fn expression_type_default() -> String {
    EXPRESSION_TYPE_TAG.to_string()
}

/// Why a subscription expression was refused (the broker answers SUBSCRIPTION_PARSE_FAILED).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// Java's `FilterAPI` refuses an expression made only of `||` separators.
    #[error("subString split error: {0:?}")]
    NoTags(String),
    /// A non-TAG expression (SQL92) must not be empty.
    #[error("Expression can't be null! {0}")]
    EmptyExpression(String),
}

/// One topic a consumer group subscribes to, and which messages of it it wants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    #[serde(deserialize_with = "lenient::boolean")]
    pub class_filter_mode: bool,
    /// Java `String.hashCode` of each tag, the values a ConsumeQueue entry's tag code is
    /// compared with.
    #[serde(deserialize_with = "code_items")]
    pub code_set: Vec<i32>,
    /// `TAG` or `SQL92`; absent (C++ client) means `TAG`.
    #[serde(deserialize_with = "expression_type")]
    pub expression_type: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub sub_string: String,
    /// Version stamp chosen by the client (ms in Java, ns in Go); a heartbeat replaces the
    /// stored subscription of a topic only with a newer one.
    #[serde(deserialize_with = "lenient::int")]
    pub sub_version: i64,
    #[serde(deserialize_with = "tag_items")]
    pub tags_set: Vec<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic: String,
    /// Legacy class-filter source; read if sent, never written (`@JSONField(serialize=false)`).
    #[serde(skip_serializing, deserialize_with = "lenient::or_default")]
    pub filter_class_source: Option<String>,
}

/// `expressionType`: null or empty reads as `TAG`, as Java's `ExpressionType.isTagType` does.
fn expression_type<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?
        .filter(|text| !text.is_empty())
        .unwrap_or_else(expression_type_default))
}

impl Default for SubscriptionData {
    fn default() -> Self {
        Self {
            class_filter_mode: false,
            code_set: Vec::new(),
            expression_type: expression_type_default(),
            sub_string: String::new(),
            sub_version: 0,
            tags_set: Vec::new(),
            topic: String::new(),
            filter_class_source: None,
        }
    }
}

/// Java's `String.trim`: strips every char up to U+0020, not Unicode whitespace.
fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// The 32-bit tag code Java puts in `codeSet` (`tag.hashCode()`).
fn tag_code(tag: &str) -> i32 {
    // tag_hash_code sign-extends the i32 hash; truncating gives it back exactly.
    tag_hash_code(Some(tag)) as i32
}

impl SubscriptionData {
    /// Builds a subscription as Java's `FilterAPI.build` does. For TAG (`expression_type`
    /// None, empty or `TAG`): `*` or empty means every tag; otherwise the expression is split
    /// on `||`, each piece trimmed, empty pieces dropped, `tags_set` = the tags and
    /// `code_set` = their hash codes. Any other type (SQL92) keeps the text as it is.
    /// `sub_version` is left 0 for the caller to set.
    pub fn from_expression(
        topic: &str,
        expression: &str,
        expression_type: Option<&str>,
    ) -> Result<Self, FilterError> {
        let mut data = Self {
            topic: topic.to_string(),
            sub_string: expression.to_string(),
            ..Self::default()
        };
        match expression_type {
            Some(kind) if !kind.is_empty() && kind != EXPRESSION_TYPE_TAG => {
                if expression.is_empty() {
                    return Err(FilterError::EmptyExpression(kind.to_string()));
                }
                data.expression_type = kind.to_string();
                return Ok(data);
            }
            _ => {}
        }
        if expression.is_empty() || expression == SUB_ALL {
            data.sub_string = SUB_ALL.to_string();
            return Ok(data);
        }
        // Java's split drops trailing empty pieces; if nothing is left it throws.
        if expression.split("||").all(str::is_empty) {
            return Err(FilterError::NoTags(expression.to_string()));
        }
        for tag in expression.split("||").map(java_trim) {
            if !tag.is_empty() && !data.tags_set.iter().any(|t| t == tag) {
                data.tags_set.push(tag.to_string());
            }
        }
        data.code_set = data.codes_from_tags();
        Ok(data)
    }

    /// The hash codes of `tags_set`, without repeats.
    fn codes_from_tags(&self) -> Vec<i32> {
        let mut codes: Vec<i32> = Vec::with_capacity(self.tags_set.len());
        for code in self.tags_set.iter().map(|tag| tag_code(tag)) {
            if !codes.contains(&code) {
                codes.push(code);
            }
        }
        codes
    }

    /// Recomputes `code_set` from `tags_set` for a TAG subscription. The C++ 1.x client sends
    /// `atoi(tag)` (usually 0) as codes; the tags are what every client gets right, and for
    /// Java and Go clients the result is the codes they sent.
    pub fn normalize_codes(&mut self) {
        if self.is_tag_type() && self.sub_string != SUB_ALL {
            self.code_set = self.codes_from_tags();
        }
    }

    /// Whether the expression is a tag list (`TAG`, or no type), as Java's
    /// `ExpressionType.isTagType`.
    pub fn is_tag_type(&self) -> bool {
        self.expression_type.is_empty() || self.expression_type == EXPRESSION_TYPE_TAG
    }

    /// The tag codes a ConsumeQueue entry must have to be delivered, or `None` when every
    /// entry passes: `*`, class-filter mode, or a non-TAG (SQL92) expression, which the
    /// ConsumeQueue cannot decide (as in Java's `ExpressionMessageFilter`).
    pub fn code_filter(&self) -> Option<&[i32]> {
        if self.class_filter_mode || !self.is_tag_type() || self.sub_string == SUB_ALL {
            return None;
        }
        Some(&self.code_set)
    }

    /// Whether a ConsumeQueue entry with this tag code is delivered. The code is the stored
    /// i64; Java compares its low 32 bits (`tagsCode.intValue()`).
    pub fn matches_tag_code(&self, tags_code: i64) -> bool {
        self.code_filter()
            .is_none_or(|codes| codes.contains(&(tags_code as i32)))
    }
}

/// One consumer group a client belongs to, as its heartbeat describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub consume_from_where: Option<ConsumeFromWhere>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub consume_type: Option<ConsumeType>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub group_name: String,
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_enum"
    )]
    pub message_model: Option<MessageModel>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub unit_mode: bool,
}

/// One producer group a client belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    #[serde(deserialize_with = "lenient::or_default")]
    pub group_name: String,
}

/// Heartbeat V2 (client option `useHeartbeatV2`, Java 5.1+): the client sends a fingerprint of
/// its subscriptions and, while the broker has acknowledged that fingerprint, omits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatV2 {
    pub fingerprint: i32,
    /// The body leaves the subscriptions out: keep the stored ones.
    pub without_sub: bool,
}

/// Body of HEART_BEAT: every producer and consumer group of one client instance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HeartbeatData {
    #[serde(rename = "clientID", deserialize_with = "lenient::or_default")]
    pub client_id: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub consumer_data_set: Vec<ConsumerData>,
    /// 0 = a V1 heartbeat (all clients before 5.1, and 5.x without `useHeartbeatV2`).
    #[serde(deserialize_with = "lenient::int")]
    pub heartbeat_fingerprint: i32,
    #[serde(deserialize_with = "lenient::or_default")]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub without_sub: bool,
}

impl HeartbeatData {
    /// The V2 fields, or `None` for a V1 heartbeat (fingerprint 0, as Java's broker decides).
    pub fn v2(&self) -> Option<HeartbeatV2> {
        (self.heartbeat_fingerprint != 0).then_some(HeartbeatV2 {
            fingerprint: self.heartbeat_fingerprint,
            without_sub: self.without_sub,
        })
    }
}

#[cfg(test)]
#[path = "heartbeat_tests.rs"]
mod tests;
