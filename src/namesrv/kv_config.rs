//! The NameServer's KV configuration (Java's `KVConfigManager`): namespaced string pairs that
//! admin tools set and brokers read (e.g. `ORDER_TOPIC_CONFIG`). Kept in memory only.

use crate::protocol::body::KvTable;
use std::collections::BTreeMap;

/// Entries across all namespaces. KV config holds a few settings per topic at most; the bound
/// keeps an admin script gone wrong from growing the NameServer without end.
pub const KV_ENTRIES_MAX: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the KV config already holds {KV_ENTRIES_MAX} entries")]
pub struct KvConfigFull;

#[derive(Debug, Default)]
pub struct KvConfig {
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
    entries: usize,
}

impl KvConfig {
    pub fn put(&mut self, namespace: &str, key: &str, value: &str) -> Result<(), KvConfigFull> {
        let table = self.namespaces.entry(namespace.to_owned()).or_default();
        if !table.contains_key(key) {
            if self.entries >= KV_ENTRIES_MAX {
                if table.is_empty() {
                    self.namespaces.remove(namespace);
                }
                return Err(KvConfigFull);
            }
            self.entries += 1;
        }
        table.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.namespaces.get(namespace)?.get(key).map(String::as_str)
    }

    pub fn delete(&mut self, namespace: &str, key: &str) {
        let Some(table) = self.namespaces.get_mut(namespace) else {
            return;
        };
        if table.remove(key).is_some() {
            self.entries -= 1;
        }
        if table.is_empty() {
            self.namespaces.remove(namespace);
        }
    }

    /// GET_KVLIST_BY_NAMESPACE: `None` when the namespace is empty.
    pub fn namespace(&self, namespace: &str) -> Option<KvTable> {
        self.namespaces.get(namespace).map(|table| KvTable {
            table: table.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_and_list() {
        let mut kv = KvConfig::default();
        kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4").unwrap();
        kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:8").unwrap();
        assert_eq!(kv.get("ORDER_TOPIC_CONFIG", "T"), Some("broker-a:8"));
        assert_eq!(kv.namespace("ORDER_TOPIC_CONFIG").unwrap().table.len(), 1);
        kv.delete("ORDER_TOPIC_CONFIG", "T");
        assert_eq!(kv.get("ORDER_TOPIC_CONFIG", "T"), None);
        assert!(kv.namespace("ORDER_TOPIC_CONFIG").is_none());
        kv.delete("missing", "x");
    }

    #[test]
    fn refuses_new_entries_beyond_the_bound_but_allows_updates() {
        let mut kv = KvConfig::default();
        for i in 0..KV_ENTRIES_MAX {
            kv.put("ns", &i.to_string(), "v").unwrap();
        }
        assert_eq!(kv.put("ns", "new", "v"), Err(KvConfigFull));
        assert_eq!(kv.put("other", "new", "v"), Err(KvConfigFull));
        assert!(kv.namespace("other").is_none());
        kv.put("ns", "0", "updated").unwrap();
        kv.delete("ns", "1");
        kv.put("other", "new", "v").unwrap();
    }
}
