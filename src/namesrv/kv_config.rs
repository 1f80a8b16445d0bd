//! The NameServer's KV configuration (Java's `KVConfigManager`): namespaced string pairs that
//! admin tools set and brokers read (e.g. `ORDER_TOPIC_CONFIG`). Persisted, as Apache's
//! NameServer does, in `kvConfig.json` (`{"configTable":{namespace:{key:value}}}`), so a file
//! written by either NameServer is read by the other; [`KvFile`] writes it on the NameServer's
//! executor, through the storage crate's crash-safe [`replace_file`].

use crate::protocol::body::{self, KvTable};
use crate::protocol::fastjson::FastjsonError;
use ringmq_shards::event::Event;
use ringmq_shards::{replace_file, RealDisk};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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

    /// Replaces `path` crash-safely with the config as it is now, through [`replace_file`]
    /// (io_uring I/O awaited on the caller's executor). The config is encoded at the call and
    /// the future borrows nothing, so a caller holding the config in a `RefCell` lets go of it
    /// before awaiting. Two saves of one path must not overlap: [`KvFile`] makes them take turns.
    pub fn save(&self, path: &Path) -> impl Future<Output = Result<(), KvFileError>> + 'static {
        let path = path.to_owned();
        let file = KvConfigFile {
            config_table: self.namespaces.clone(),
        };
        let encoded = body::encode(&file);
        async move {
            let shown = || path.display().to_string();
            let bytes = encoded.map_err(|source| KvFileError::Format {
                path: shown(),
                source,
            })?;
            replace_file(&RealDisk::default(), &path, &bytes)
                .await
                .map_err(|source| KvFileError::Io {
                    path: shown(),
                    source,
                })
        }
    }

    /// GET_KVLIST_BY_NAMESPACE: `None` when the namespace is empty.
    pub fn namespace(&self, namespace: &str) -> Option<KvTable> {
        self.namespaces.get(namespace).map(|table| KvTable {
            table: table.clone(),
        })
    }
}

/// The KV config's file and the one task that writes it: the NameServer changes the config,
/// then awaits [`KvFile::persist`]. One write at a time (two would share the `.tmp` copy), and
/// each carries every change made before it began, so the changes made during a write share
/// the next one (group commit, as the commit log's flusher).
pub struct KvFile {
    path: PathBuf,
    /// Changes made so far; the file holds the first `saved` of them.
    changes: Cell<u64>,
    saved: Cell<u64>,
    /// Changes the last write carried, and why it failed if it did (`saved` is then less).
    attempted: Cell<u64>,
    failure: RefCell<String>,
    /// Notified on a change (wakes the writer) and when a write ends (wakes the waiters).
    changed: Event,
    written: Event,
    writer_started: Cell<bool>,
}

impl KvFile {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            changes: Cell::new(0),
            saved: Cell::new(0),
            attempted: Cell::new(0),
            failure: RefCell::new(String::new()),
            changed: Event::default(),
            written: Event::default(),
            writer_started: Cell::new(false),
        }
    }

    /// After a change of `config`: waits until the file holds it, or answers why the write
    /// that carried it failed (the change stays in memory, as in Apache's NameServer, and the
    /// next write carries it again). Starts the writer task on first use.
    pub async fn persist(self: &Rc<Self>, config: &Rc<RefCell<KvConfig>>) -> Result<(), String> {
        let change = self.changes.get() + 1;
        self.changes.set(change);
        if !self.writer_started.replace(true) {
            glommio::spawn_local(write_forever(self.clone(), config.clone())).detach();
        }
        self.changed.notify();
        loop {
            let seen = self.written.version();
            if self.saved.get() >= change {
                return Ok(());
            }
            if self.attempted.get() >= change {
                return Err(self.failure.borrow().clone());
            }
            self.written.changed(seen).await;
        }
    }
}

/// The writer task of [`KvFile`]: writes whenever changes are not yet carried by a write.
async fn write_forever(file: Rc<KvFile>, config: Rc<RefCell<KvConfig>>) {
    loop {
        let seen = file.changed.version();
        let changes = file.changes.get();
        if changes == file.attempted.get() {
            file.changed.changed(seen).await;
            continue;
        }
        let save = config.borrow().save(&file.path);
        let saved = save.await;
        file.attempted.set(changes);
        match saved {
            Ok(()) => file.saved.set(changes),
            Err(err) => {
                tracing::error!(%err, "kv config not persisted");
                *file.failure.borrow_mut() = err.to_string();
            }
        }
        file.written.notify();
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
        crate::persist::run_local(kv.save(&path)).unwrap();
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

    #[test]
    fn kv_file_writes_take_turns_and_carry_every_change() {
        let dir = crate::persist::test_dir("kv-file");
        let path = dir.join("namesrv").join("kvConfig.json");
        crate::persist::run_local(async {
            let config = Rc::new(RefCell::new(KvConfig::default()));
            let file = Rc::new(KvFile::new(path.clone()));
            // Changes made while a write is in flight return once a later write carried them.
            let changes: Vec<_> = (0..4)
                .map(|i| {
                    let (config, file) = (config.clone(), file.clone());
                    glommio::spawn_local(async move {
                        config.borrow_mut().put("ns", &i.to_string(), "v").unwrap();
                        file.persist(&config).await
                    })
                })
                .collect();
            for change in changes {
                change.await.unwrap();
            }
            let loaded = KvConfig::load(&path).unwrap();
            assert!((0..4).all(|i| loaded.get("ns", &i.to_string()) == Some("v")));
            // A failed write answers why; the change stays, and the next write carries it.
            std::fs::remove_dir_all(&dir).unwrap();
            std::fs::write(&dir, b"a file where the directory should be").unwrap();
            config.borrow_mut().put("ns", "late", "v").unwrap();
            assert!(file.persist(&config).await.is_err());
            std::fs::remove_file(&dir).unwrap();
            config.borrow_mut().delete("ns", "0");
            file.persist(&config).await.unwrap();
        });
        let loaded = KvConfig::load(&path).unwrap();
        assert_eq!(loaded.get("ns", "late"), Some("v"));
        assert_eq!(loaded.get("ns", "0"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
