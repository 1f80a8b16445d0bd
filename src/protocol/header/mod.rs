//! Typed request and response headers, carried in a command's `extFields` (REMOTING.md §1.9).
//!
//! Each header is declared once with the `header!` macro: Rust field, Java field name (the
//! extFields key), value type, and whether the Java class requires it. Values are parsed as the
//! Java broker parses them, a little more leniently where real clients need it: booleans may be
//! `"0"`/`"1"` (C++ client), case does not matter for `true`/`false`.

mod admin;
mod consume;
mod namesrv;
mod send;
mod transaction;

pub use admin::*;
pub use consume::*;
pub use namesrv::*;
pub use send::*;
pub use transaction::*;

use super::command::{ExtFields, Text};

/// A header that is read from and written to `extFields`.
pub trait CommandHeader: Sized {
    fn decode(ext: &ExtFields) -> Result<Self, HeaderError>;
    fn encode(&self, ext: &mut ExtFields);
}

/// Why `extFields` could not be turned into a typed header. The request is answered with
/// SYSTEM_ERROR and this text as remark; the connection stays open.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeaderError {
    /// Worded as the Java broker words it, since tools show the remark to people.
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    #[error("the custom field <{field}> has an invalid value: {value:?}")]
    Invalid { field: &'static str, value: String },
}

/// A type a header field can hold, with its extFields text form.
pub trait HeaderValue: Sized {
    /// `None` when the text is not a value of this type.
    fn parse(text: &str) -> Option<Self>;
    fn format(&self) -> Text;
}

impl HeaderValue for String {
    fn parse(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn format(&self) -> Text {
        self.clone().into()
    }
}

/// Decimal integers exactly as Java's `Integer.parseInt`/`Long.parseLong` take them: an
/// optional sign, digits, no whitespace.
macro_rules! decimal_header_value {
    ($($t:ty),*) => {$(
        impl HeaderValue for $t {
            fn parse(text: &str) -> Option<Self> {
                text.parse().ok()
            }
            fn format(&self) -> Text {
                Text::display(self)
            }
        }
    )*};
}
decimal_header_value!(i32, i64);

impl HeaderValue for bool {
    fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("true") || text == "1" {
            Some(true)
        } else if text.eq_ignore_ascii_case("false") || text == "0" {
            Some(false)
        } else {
            None
        }
    }
    fn format(&self) -> Text {
        Text::from(if *self { "true" } else { "false" })
    }
}

/// Reading and writing one field; the `header!` macro calls these by the field's kind.
pub mod field {
    use super::{ExtFields, HeaderError, HeaderValue};

    fn parse<T: HeaderValue>(key: &'static str, text: &str) -> Result<T, HeaderError> {
        T::parse(text).ok_or_else(|| HeaderError::Invalid {
            field: key,
            value: text.to_owned(),
        })
    }

    /// A `@CFNotNull` field: absent is an error.
    pub fn req<T: HeaderValue>(ext: &ExtFields, key: &'static str) -> Result<T, HeaderError> {
        let text = ext.get(key).ok_or(HeaderError::Missing(key))?;
        parse(key, text)
    }

    /// A nullable field.
    pub fn opt<T: HeaderValue>(
        ext: &ExtFields,
        key: &'static str,
    ) -> Result<Option<T>, HeaderError> {
        ext.get(key).map(|text| parse(key, text)).transpose()
    }

    /// A primitive (or defaulted) Java field: always sent by Java, absent means its default.
    pub fn def<T: HeaderValue + Default>(
        ext: &ExtFields,
        key: &'static str,
    ) -> Result<T, HeaderError> {
        Ok(opt(ext, key)?.unwrap_or_default())
    }

    /// Writes a `req` or `def` field.
    pub fn put<T: HeaderValue>(ext: &mut ExtFields, key: &'static str, value: &T) {
        ext.insert(key, value.format());
    }

    pub fn put_opt<T: HeaderValue>(ext: &mut ExtFields, key: &'static str, value: &Option<T>) {
        if let Some(value) = value {
            put(ext, key, value);
        }
    }
}

/// Declares a header struct and its `CommandHeader` impl from one list of fields:
/// `kind rust_name: Type = "javaName"`, kind being `req` (required: absent is an error), `opt`
/// (nullable: the field is an `Option`) or `def` (absent means the default, which is
/// `Default::default()` or the value after `or`, as for Java's `boolean committed = true`).
/// With `pub struct Long / Short { … }` and `= "javaName" / "k"` per field it also declares
/// `Short(pub Long)`, the same header under the one-letter keys of the V2 send headers.
macro_rules! header {
    (@ty opt $t:ty) => { Option<$t> };
    (@ty $kind:ident $t:ty) => { $t };

    (@get def, $ext:ident, $key:expr, $default:expr) => {
        $crate::protocol::header::field::opt($ext, $key)?.unwrap_or($default)
    };
    (@get $kind:ident, $ext:ident, $key:expr) => {
        $crate::protocol::header::field::$kind($ext, $key)?
    };

    (@put opt, $ext:ident, $key:expr, $value:expr) => {
        $crate::protocol::header::field::put_opt($ext, $key, $value)
    };
    (@put $kind:ident, $ext:ident, $key:expr, $value:expr) => {
        $crate::protocol::header::field::put($ext, $key, $value)
    };

    (@default $default:expr) => { $default };
    (@default) => { Default::default() };

    ($(#[$m:meta])* pub struct $name:ident {
        $($(#[$fm:meta])* $kind:ident $field:ident : $t:ty = $key:literal $(or $default:expr)?),*
        $(,)?
    }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $($(#[$fm])* pub $field: header!(@ty $kind $t),)*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $($field: header!(@default $($default)?),)* }
            }
        }

        impl $crate::protocol::header::CommandHeader for $name {
            #[allow(unused_variables)]
            fn decode(
                ext: &$crate::protocol::command::ExtFields,
            ) -> Result<Self, $crate::protocol::header::HeaderError> {
                Ok(Self { $($field: header!(@get $kind, ext, $key $(, $default)?),)* })
            }

            #[allow(unused_variables)]
            fn encode(&self, ext: &mut $crate::protocol::command::ExtFields) {
                $(header!(@put $kind, ext, $key, &self.$field);)*
            }
        }
    };

    ($(#[$m:meta])* pub struct $name:ident / $(#[$vm:meta])* $short_name:ident {
        $($(#[$fm:meta])* $kind:ident $field:ident : $t:ty = $key:literal / $short:literal),*
        $(,)?
    }) => {
        header! { $(#[$m])* pub struct $name { $($(#[$fm])* $kind $field : $t = $key),* } }

        $(#[$vm])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $short_name(pub $name);

        impl $crate::protocol::header::CommandHeader for $short_name {
            fn decode(
                ext: &$crate::protocol::command::ExtFields,
            ) -> Result<Self, $crate::protocol::header::HeaderError> {
                Ok(Self($name { $($field: header!(@get $kind, ext, $short),)* }))
            }

            fn encode(&self, ext: &mut $crate::protocol::command::ExtFields) {
                $(header!(@put $kind, ext, $short, &self.0.$field);)*
            }
        }
    };
}
pub(crate) use header;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::command::ext_fields as ext;

    fn register(pairs: &[(&str, &str)]) -> Result<RegisterBrokerRequestHeader, HeaderError> {
        let mut all = ext(&[
            ("brokerName", "broker-a"),
            ("brokerAddr", "127.0.0.1:10911"),
            ("clusterName", "DefaultCluster"),
            ("haServerAddr", "127.0.0.1:10912"),
            ("brokerId", "0"),
            ("bname", "ignored: unknown keys are tolerated"),
        ]);
        all.extend(ext(pairs));
        RegisterBrokerRequestHeader::decode(&all)
    }

    #[test]
    fn required_optional_and_defaulted_fields() {
        let header = register(&[]).unwrap();
        assert_eq!(header.broker_name, "broker-a");
        assert_eq!(header.broker_id, 0);
        assert_eq!(header.heartbeat_timeout_millis, None);
        assert!(!header.compressed);
        assert_eq!(header.body_crc32, 0);

        let header = register(&[("enableActingMaster", "false"), ("bodyCrc32", "-5")]).unwrap();
        assert_eq!(header.enable_acting_master, Some(false));
        assert_eq!(header.body_crc32, -5);
    }

    #[test]
    fn missing_required_field_is_reported_in_java_words() {
        let err = GetRouteInfoRequestHeader::decode(&ext(&[])).unwrap_err();
        assert_eq!(err, HeaderError::Missing("topic"));
        assert_eq!(err.to_string(), "the custom field <topic> is null");
    }

    #[test]
    fn booleans_accept_java_and_cpp_spellings() {
        for (text, value) in [
            ("true", true),
            ("TRUE", true),
            ("1", true),
            ("false", false),
            ("0", false),
        ] {
            let header = register(&[("compressed", text)]).unwrap();
            assert_eq!(header.compressed, value, "{text}");
        }
        let err = register(&[("compressed", "yes")]).unwrap_err();
        assert_eq!(
            err,
            HeaderError::Invalid {
                field: "compressed",
                value: "yes".into()
            }
        );
    }

    #[test]
    fn numbers_are_plain_decimal() {
        for bad in [" 1", "1 ", "1.0", "0x1", "", "9223372036854775808"] {
            let err = register(&[("brokerId", bad)]).unwrap_err();
            assert!(
                matches!(
                    err,
                    HeaderError::Invalid {
                        field: "brokerId",
                        ..
                    }
                ),
                "{bad:?}"
            );
        }
        assert_eq!(register(&[("brokerId", "-1")]).unwrap().broker_id, -1);
        assert_eq!(register(&[("brokerId", "+2")]).unwrap().broker_id, 2);
    }

    #[test]
    fn encode_writes_java_names_and_skips_absent_optionals() {
        let header = register(&[("heartbeatTimeoutMillis", "5000")]).unwrap();
        let mut out = ExtFields::new();
        header.encode(&mut out);
        assert_eq!(out.get("heartbeatTimeoutMillis"), Some("5000"));
        assert_eq!(out.get("compressed"), Some("false"));
        assert_eq!(out.get("bodyCrc32"), Some("0"));
        assert!(!out.contains_key("enableActingMaster"));
        assert_eq!(RegisterBrokerRequestHeader::decode(&out).unwrap(), header);
    }
}
