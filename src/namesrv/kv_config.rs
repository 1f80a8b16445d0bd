//! The NameServer's KV configuration (Java's `KVConfigManager`): namespaced string pairs that
//! admin tools set and brokers read (e.g. `ORDER_TOPIC_CONFIG`). Persisted, as Apache's
//! NameServer does, in `kvConfig.json` (`{"configTable":{namespace:{key:value}}}`), so a file
//! written by either NameServer is read by the other.

use crate::persist;
use crate::protocol::body::{self, KvTable};
use crate::protocol::fastjson::FastjsonError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Entries across all namespaces. KV config holds a few settings per topic at most; the bound
/// keeps an admin script gone wrong from growing the NameServer without end.
pub const KV_ENTRIES_MAX: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the KV config already holds {KV_ENTRIES_MAX} entries")]
pub struct KvConfigFull;

/// Why the KV config file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KvFileError {
    #[error("kv config file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("kv config file {path}: {source}")]
    Format { path: String, source: FastjsonError },
    #[error("kv config file {path}: {source}")]
    Full { path: String, source: KvConfigFull },
}

/// The file's shape, Apache's `KVConfigSerializeWrapper`.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KvConfigFile {
    #[serde(default)]
    config_table: BTreeMap<String, BTreeMap<String, String>>,
}

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

    /// Reads `path`; a missing file is an empty config (the first start).
    pub fn load(path: &Path) -> Result<Self, KvFileError> {
        let shown = || path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(KvFileError::Io {
                    path: shown(),
                    source,
                })
            }
        };
        let file: KvConfigFile = body::decode(&bytes).map_err(|source| KvFileError::Format {
            path: shown(),
            source,
        })?;
        let mut config = Self::default();
        for (namespace, table) in &file.config_table {
            for (key, value) in table {
                config
                    .put(namespace, key, value)
                    .map_err(|source| KvFileError::Full {
                        path: shown(),
                        source,
                    })?;
            }
        }
        Ok(config)
    }

    /// Replaces `path` crash-safely ([`crate::persist::replace`]). Blocking I/O on the
    /// NameServer's executor is acceptable here: the file is small and only admin commands
    /// change it.
    pub fn save(&self, path: &Path) -> Result<(), KvFileError> {
        let file = KvConfigFile {
            config_table: self.namespaces.clone(),
        };
        let bytes = body::encode(&file).map_err(|source| KvFileError::Format {
            path: path.display().to_string(),
            source,
        })?;
        persist::replace(path, &bytes).map_err(|source| KvFileError::Io {
            path: path.display().to_string(),
            source,
        })
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
    fn saves_and_loads_apaches_file_shape() {
        let dir = std::env::temp_dir().join(format!("ringmq-kv-{}", std::process::id()));
        let path = dir.join("namesrv").join("kvConfig.json");
        assert!(KvConfig::load(&path).unwrap().get("ns", "k").is_none());
        let mut kv = KvConfig::default();
        kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4").unwrap();
        kv.put("ns", "k", "v").unwrap();
        kv.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}"#),
            "{text}"
        );
        let loaded = KvConfig::load(&path).unwrap();
        assert_eq!(loaded.get("ORDER_TOPIC_CONFIG", "T"), Some("broker-a:4"));
        assert_eq!(loaded.get("ns", "k"), Some("v"));
        // A file as Apache's NameServer writes it (fastjson, unquoted keys allowed) reads too.
        std::fs::write(&path, r#"{configTable:{"ns":{"a":"1"}}}"#).unwrap();
        assert_eq!(KvConfig::load(&path).unwrap().get("ns", "a"), Some("1"));
        std::fs::write(&path, b"{not json").unwrap();
        assert!(matches!(
            KvConfig::load(&path),
            Err(KvFileError::Format { .. })
        ));
        std::fs::remove_dir_all(dir).unwrap();
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
