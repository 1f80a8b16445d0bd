//! SQL92 message selectors (`MessageSelector.bySql`), compiled and evaluated as Apache
//! RocketMQ's `filter` module does: its grammar (`parser`), its value conversions and
//! comparisons (`value`), its three-valued evaluation (`expr`). A selector is compiled once
//! per subscription and evaluated over each candidate record's properties at pull.
//!
//! A message matches only if the selector evaluates to true: unknown (a missing property
//! met a comparison) and any evaluation error (a property that does not parse as the number
//! it is compared with) mean "no match", as in Apache, which logs the error and skips the
//! message.

pub mod cache;
mod expr;
mod lexer;
mod parser;
mod value;

#[cfg(test)]
mod tests;

use expr::{Expr, Properties};
use ringmq_shards::record::properties_iter;
use smallvec::SmallVec;
use value::Value;

/// Longest expression compiled, in bytes. Apache sets none; this bounds compile time and the
/// memory a hostile subscription takes on every shard (real selectors are a few hundred bytes).
pub const EXPRESSION_BYTES_MAX: usize = 16 * 1024;
/// Deepest expression tree: evaluating (and dropping) a tree recurses once per level, on the
/// shard's executor stack. A chain of 200 ANDs is still fine.
pub const EXPRESSION_DEPTH_MAX: usize = 256;
/// Deepest nesting of parentheses and unary operators: the parser recurses a handful of
/// frames per level.
pub const NESTING_DEPTH_MAX: usize = 64;
/// Most strings in one IN list.
pub const IN_LIST_MAX: usize = 1024;

/// Why an expression does not compile; Apache's `MQFilterException` ("Invalid
/// MessageSelector.") for each of them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("the expression is {bytes} bytes long, longer than {max}")]
    TooLong { bytes: usize, max: usize },
    #[error("the expression nests deeper than {max} levels")]
    TooDeep { max: usize },
    #[error("an IN list holds more than {max} strings")]
    InListTooLong { max: usize },
    #[error("lexical error at byte {at}: {what}")]
    Lexical { at: usize, what: &'static str },
    #[error("syntax error at byte {at}: found {found}, expected {expected}")]
    Syntax {
        at: usize,
        found: String,
        expected: &'static str,
    },
    #[error("number literal {0} is out of range")]
    NumberOutOfRange(String),
    #[error("expression will not result in a boolean value")]
    NotACondition,
    #[error("a string, boolean, null or condition cannot be compared by >, >=, <, <= or BETWEEN")]
    NotOrderable,
    #[error("NULL cannot be compared with =; use IS NULL")]
    NullComparison,
    #[error("a boolean literal can only be compared with a boolean literal")]
    BooleanComparison,
    #[error("illegal values of BETWEEN: null, or the low bound above the high one")]
    BetweenBounds,
    #[error("IN needs a property on its left")]
    InNeedsProperty,
    #[error("expression type {0} is not supported (TAG and SQL92 are)")]
    UnsupportedType(String),
}

/// A compiled selector.
#[derive(Debug)]
pub struct Selector {
    tree: Expr,
}

impl Selector {
    pub fn compile(expression: &str) -> Result<Self, CompileError> {
        if expression.len() > EXPRESSION_BYTES_MAX {
            return Err(CompileError::TooLong {
                bytes: expression.len(),
                max: EXPRESSION_BYTES_MAX,
            });
        }
        Ok(Self {
            tree: parser::parse(expression)?,
        })
    }

    /// Whether a message with these properties (the record's raw properties string, `TAGS`
    /// and the user's own alike) is delivered.
    pub fn matches(&self, properties: &str) -> bool {
        self.matches_with(&RecordProperties::parse(properties))
    }

    fn matches_with(&self, properties: &dyn Properties) -> bool {
        self.tree.evaluate(properties) == Ok(Value::Bool(true))
    }
}

/// Properties a record's split keeps inline (a Java producer sets 3-6; more spill to the heap).
const PROPERTIES_INLINE: usize = 16;

/// One record's properties, split once for every lookup the selector makes.
struct RecordProperties<'a> {
    pairs: SmallVec<[(&'a str, &'a str); PROPERTIES_INLINE]>,
}

impl<'a> RecordProperties<'a> {
    fn parse(raw: &'a str) -> Self {
        Self {
            pairs: properties_iter(raw).collect(),
        }
    }
}

impl Properties for RecordProperties<'_> {
    /// As Java's property map: when a name repeats, the last value counts.
    fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}
