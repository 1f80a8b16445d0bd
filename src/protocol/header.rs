//! Typed request and response headers, carried in a command's `extFields` (REMOTING.md §1.9).

use super::command::ExtFields;

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
