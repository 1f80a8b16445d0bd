//! A shard's compiled selectors, one per (group, topic), replaced when the expression
//! changes: a pull evaluates the selector its group's subscription names without compiling
//! it again. Failures are kept too, so a hostile invalid expression is not re-parsed on every
//! pull (Apache's `SelectorParser` caches its exceptions the same way).

use super::{CompileError, Selector};
use crate::protocol::body::heartbeat::EXPRESSION_TYPE_SQL92;
use std::collections::HashMap;
use std::rc::Rc;

/// Most (group, topic) pairs cached per shard; past it the cache starts over (any number of
/// groups may pull with a subscription of their own: the memory must stay bounded).
pub const SELECTOR_CACHE_MAX: usize = 4096;

type Compiled = Result<Rc<Selector>, CompileError>;

#[derive(Default)]
pub struct SelectorCache {
    entries: HashMap<(String, String), (String, Compiled)>,
}

impl SelectorCache {
    /// The selector of `expression` for `group` on `topic`, compiled on first use.
    pub fn get(
        &mut self,
        group: &str,
        topic: &str,
        expression_type: &str,
        expression: &str,
    ) -> Compiled {
        if expression_type != EXPRESSION_TYPE_SQL92 {
            return Err(CompileError::UnsupportedType(expression_type.to_owned()));
        }
        let key = (group.to_owned(), topic.to_owned());
        if let Some((cached, compiled)) = self.entries.get(&key) {
            if cached == expression {
                return compiled.clone();
            }
        }
        if self.entries.len() >= SELECTOR_CACHE_MAX {
            self.entries.clear();
        }
        let compiled = Selector::compile(expression).map(Rc::new);
        self.entries
            .insert(key, (expression.to_owned(), compiled.clone()));
        compiled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_per_expression_and_again_when_it_changes() {
        let mut cache = SelectorCache::default();
        let first = cache.get("G", "T", "SQL92", "a > 1").unwrap();
        let again = cache.get("G", "T", "SQL92", "a > 1").unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        let changed = cache.get("G", "T", "SQL92", "a > 2").unwrap();
        assert!(!Rc::ptr_eq(&first, &changed));
        assert!(cache.get("G", "T", "SQL92", "a >").is_err());
        assert_eq!(
            cache.get("G", "T", "CLASS", "x").unwrap_err(),
            CompileError::UnsupportedType("CLASS".into())
        );
    }

    #[test]
    fn stays_bounded() {
        let mut cache = SelectorCache::default();
        for i in 0..SELECTOR_CACHE_MAX + 10 {
            cache.get(&format!("G{i}"), "T", "SQL92", "a > 1").unwrap();
        }
        assert!(cache.entries.len() <= SELECTOR_CACHE_MAX);
    }
}
