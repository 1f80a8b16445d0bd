//! Small configuration files replaced crash-safely, and the versioned tables kept in them
//! (the broker's topics.json and subscriptionGroup.json; the NameServer's kvConfig.json is
//! replaced the same way).
//!
//! Every write is the storage crate's [`replace_file`], through its disk seam: on the real disk
//! io_uring I/O awaited on the owner's executor (shard 0, the NameServer's), so a table change
//! waits for its fsyncs without stalling the other connections of that core. It writes a new
//! copy beside the file, syncs it, renames it over the old one and syncs the directory, so a
//! crash leaves the old file or the new one, never a torn one; a torn `.tmp` copy left behind
//! is never read. Reading stays blocking `std::fs`: tables are opened on the main thread
//! before any executor runs. The files keep Apache's JSON shapes so either
//! implementation reads the other's, which leaves no room for a checksum; the shape's own
//! `dataVersion` counter is the sequence number. Apache's broker replaces its files
//! differently (old content copied to `.bak`, file deleted, `.tmp` renamed), so a directory
//! Apache crashed in may hold only the `.bak`: [`read`] falls back to it, as Apache's
//! `ConfigManager.load` does.

use crate::protocol::body::DataVersion;
use crate::protocol::fastjson::FastjsonError;
use ringmq_shards::{replace_file, Disk, RealDisk};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a persisted table could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Format { path: String, source: FastjsonError },
    #[error("{path}: holds {entries} entries, more than the {entries_max} allowed")]
    TooManyEntries {
        path: String,
        entries: usize,
        entries_max: usize,
    },
}

/// What [`read`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Stored {
    /// Neither the file nor Apache's backup exists, or both are empty: a first start.
    Absent,
    /// The bytes to decode, and the file they came from (the file itself or its `.bak`).
    Found { bytes: Vec<u8>, from: PathBuf },
}

/// Reads `path`, or Apache's `path.bak` when `path` is missing or empty.
pub fn read(path: &Path) -> std::io::Result<Stored> {
    for candidate in [path.to_path_buf(), sibling(path, ".bak")] {
        match std::fs::read(&candidate) {
            Ok(bytes) if !bytes.is_empty() => {
                return Ok(Stored::Found {
                    bytes,
                    from: candidate,
                })
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
    }
    Ok(Stored::Absent)
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Java's `DataVersion.nextVersion()`: the counter moves on, the timestamp is now, the state
/// version resets to 0.
pub fn next_version(version: DataVersion, now_ms: i64) -> DataVersion {
    DataVersion {
        counter: version.counter + 1,
        state_version: 0,
        timestamp: now_ms,
    }
}

/// A table's entries by name.
pub type Entries<V> = BTreeMap<String, V>;
/// A table's entries and version: what its file holds.
pub type Contents<V> = (Entries<V>, DataVersion);

/// How a table's file is written and read: its JSON shape, given the entries and version.
#[derive(Clone)]
pub struct FileShape<V> {
    pub encode: fn(&Entries<V>, &DataVersion) -> Result<Vec<u8>, FastjsonError>,
    pub decode: fn(&[u8]) -> Result<Contents<V>, FastjsonError>,
}

/// A read-only copy of a table for the other shards: plain data, cheap to clone (the entries
/// are shared). Of two snapshots, the one with the higher counter is the newer.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<V> {
    pub data_version: DataVersion,
    pub entries: Arc<Entries<V>>,
}

impl<V> Snapshot<V> {
    pub fn get(&self, name: &str) -> Option<&V> {
        self.entries.get(name)
    }
}

/// A named-entry table with a data version, written through to its file on every change.
/// A change that cannot be persisted is undone, so memory never runs ahead of the disk.
/// Owned by one task of one executor (the control plane's owner, shard 0): a change holds
/// `&mut self` while its write is awaited, so two writes of the file never overlap.
///
/// Generic over the disk so that simulation tests can run a table on the fault-injecting
/// [`ringmq_shards::SimDisk`]; the broker's tables use the default, the real disk.
#[derive(Clone)]
pub struct PersistedTable<V, D: Disk = RealDisk> {
    disk: D,
    path: PathBuf,
    shape: FileShape<V>,
    entries: BTreeMap<String, V>,
    entries_max: usize,
    data_version: DataVersion,
}

impl<V: Clone> PersistedTable<V> {
    /// Starts from `defaults` and lays the file's entries and version over them, as Apache's
    /// managers do (their constructors put the system entries, `load` then `putAll`s the
    /// file). A missing file leaves the defaults with version 0. Reads with blocking
    /// `std::fs`: call it before the executors start.
    pub fn open(
        path: PathBuf,
        shape: FileShape<V>,
        defaults: BTreeMap<String, V>,
        entries_max: usize,
    ) -> Result<Self, PersistError> {
        let stored = read(&path).map_err(|source| io_error(&path, source))?;
        Self::from_stored(
            RealDisk::default(),
            path,
            shape,
            defaults,
            entries_max,
            stored,
        )
    }
}

impl<V: Clone, D: Disk> PersistedTable<V, D> {
    /// As [`PersistedTable::open`], from what was read of the file (`stored`), writing
    /// through `disk`.
    pub fn from_stored(
        disk: D,
        path: PathBuf,
        shape: FileShape<V>,
        defaults: BTreeMap<String, V>,
        entries_max: usize,
        stored: Stored,
    ) -> Result<Self, PersistError> {
        let mut table = Self {
            disk,
            path,
            shape,
            entries: defaults,
            entries_max,
            data_version: DataVersion::default(),
        };
        if let Stored::Found { bytes, from } = stored {
            let (entries, data_version) =
                (table.shape.decode)(&bytes).map_err(|source| PersistError::Format {
                    path: from.display().to_string(),
                    source,
                })?;
            table.entries.extend(entries);
            table.data_version = data_version;
        }
        if table.entries.len() > entries_max {
            return Err(PersistError::TooManyEntries {
                path: table.path.display().to_string(),
                entries: table.entries.len(),
                entries_max,
            });
        }
        Ok(table)
    }

    pub fn get(&self, name: &str) -> Option<&V> {
        self.entries.get(name)
    }

    pub fn entries(&self) -> &BTreeMap<String, V> {
        &self.entries
    }

    pub fn data_version(&self) -> DataVersion {
        self.data_version
    }

    pub fn snapshot(&self) -> Snapshot<V> {
        Snapshot {
            data_version: self.data_version,
            entries: Arc::new(self.entries.clone()),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Inserts or replaces `name`, returning once the file holds it; `Ok(false)` when the
    /// table is full and `name` is new.
    pub async fn put(&mut self, name: &str, value: V, now_ms: i64) -> Result<bool, PersistError> {
        if !self.entries.contains_key(name) && self.entries.len() >= self.entries_max {
            return Ok(false);
        }
        let old = self.entries.insert(name.to_owned(), value);
        self.commit(name, old, now_ms).await?;
        Ok(true)
    }

    /// Removes `name`, returning once the file no longer holds it; `Ok(None)` (and no new
    /// version) when it was not there.
    pub async fn remove(&mut self, name: &str, now_ms: i64) -> Result<Option<V>, PersistError> {
        let Some(old) = self.entries.remove(name) else {
            return Ok(None);
        };
        self.commit(name, Some(old.clone()), now_ms).await?;
        Ok(Some(old))
    }

    /// Moves the version on and writes the file; on failure puts `old` back under `name`
    /// and keeps the previous version.
    async fn commit(
        &mut self,
        name: &str,
        old: Option<V>,
        now_ms: i64,
    ) -> Result<(), PersistError> {
        let previous = self.data_version;
        self.data_version = next_version(previous, now_ms);
        if let Err(err) = self.write().await {
            match old {
                Some(value) => self.entries.insert(name.to_owned(), value),
                None => self.entries.remove(name),
            };
            self.data_version = previous;
            return Err(err);
        }
        Ok(())
    }

    async fn write(&self) -> Result<(), PersistError> {
        let bytes = (self.shape.encode)(&self.entries, &self.data_version).map_err(|source| {
            PersistError::Format {
                path: self.path.display().to_string(),
                source,
            }
        })?;
        replace_file(&self.disk, &self.path, &bytes)
            .await
            .map_err(|source| io_error(&self.path, source))
    }
}

fn io_error(path: &Path, source: std::io::Error) -> PersistError {
    PersistError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A fresh directory path for one test, named for it and this process; a copy left by an
/// earlier run is removed first.
#[cfg(test)]
pub(crate) fn test_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringmq-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// [`test_dir`] holding `text` at `file` (a path relative to it), as Apache or an earlier run
/// wrote it, and beside it the torn `.tmp` copy a crash mid-write leaves: the first half.
#[cfg(test)]
pub(crate) fn test_dir_with_file(name: &str, file: &str, text: &str) -> PathBuf {
    let dir = test_dir(name);
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().expect("file is under the directory")).unwrap();
    std::fs::write(&path, text).unwrap();
    let torn = &text.as_bytes()[..text.len() / 2];
    std::fs::write(ringmq_shards::tmp_path(&path), torn).unwrap();
    dir
}

/// io_uring registered memory of a test's executor: tests run in parallel under the 8 MiB
/// `ulimit -l` of the sandbox and CI machines.
#[cfg(test)]
const TEST_IO_MEMORY_BYTES: usize = 256 << 10;

/// Runs `future` on a small glommio executor of this thread: the real disk's writes need one.
#[cfg(test)]
pub(crate) fn run_local<T>(future: impl std::future::Future<Output = T>) -> T {
    glommio::LocalExecutorBuilder::default()
        .io_memory(TEST_IO_MEMORY_BYTES)
        .make()
        .expect("a test executor")
        .run(future)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{decode, encode};
    use ringmq_shards::{DiskFile, SimDisk, SimRng};
    use serde::{Deserialize, Serialize};

    #[derive(Default, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct File {
        data_version: DataVersion,
        table: BTreeMap<String, i32>,
    }

    fn shape() -> FileShape<i32> {
        FileShape {
            encode: |table, version| {
                encode(&File {
                    data_version: *version,
                    table: table.clone(),
                })
            },
            decode: |bytes| decode::<File>(bytes).map(|f| (f.table, f.data_version)),
        }
    }

    fn defaults() -> BTreeMap<String, i32> {
        BTreeMap::from([("system".to_owned(), 1)])
    }

    #[test]
    fn persists_every_change_and_reloads_over_the_defaults() {
        let dir = test_dir("persist-roundtrip");
        let path = dir.join("config").join("t.json");
        let mut table = PersistedTable::open(path.clone(), shape(), defaults(), 10).unwrap();
        assert_eq!(table.data_version(), DataVersion::default());
        run_local(async {
            assert!(table.put("a", 5, 100).await.unwrap());
            assert!(table.put("system", 2, 200).await.unwrap());
            assert_eq!(table.remove("missing", 300).await.unwrap(), None);
        });
        assert_eq!(table.data_version().counter, 2);
        assert_eq!(table.data_version().timestamp, 200);
        let reloaded = PersistedTable::open(path.clone(), shape(), defaults(), 10).unwrap();
        assert_eq!(reloaded.entries(), table.entries());
        assert_eq!(reloaded.data_version(), table.data_version());
        assert!(!ringmq_shards::tmp_path(&path).exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ignores_a_torn_tmp_and_falls_back_to_apaches_bak() {
        // A crash mid-write leaves half a tmp copy beside the intact file.
        let file = r#"{"dataVersion":{"counter":4},"table":{"a":1}}"#;
        let dir = test_dir_with_file("persist-torn", "t.json", file);
        let path = dir.join("t.json");
        let table = PersistedTable::open(path.clone(), shape(), defaults(), 10).unwrap();
        assert_eq!(table.get("a"), Some(&1));
        assert_eq!(table.data_version().counter, 4);
        // Apache deletes the file before renaming its tmp over it: only the .bak is left.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(sibling(&path, ".bak"), br#"{"table":{"b":2}}"#).unwrap();
        let table = PersistedTable::open(path.clone(), shape(), defaults(), 10).unwrap();
        assert_eq!((table.get("a"), table.get("b")), (None, Some(&2)));
        std::fs::write(&path, b"{broken").unwrap();
        assert!(matches!(
            PersistedTable::open(path, shape(), defaults(), 10),
            Err(PersistError::Format { .. })
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bounds_the_entries_and_undoes_a_change_that_cannot_be_written() {
        let dir = test_dir("persist-bounds");
        let path = dir.join("t.json");
        let mut table = PersistedTable::open(path.clone(), shape(), defaults(), 2).unwrap();
        run_local(async {
            assert!(table.put("a", 1, 1).await.unwrap());
            assert!(!table.put("b", 1, 2).await.unwrap());
            assert!(table.put("a", 3, 3).await.unwrap());
        });
        assert!(matches!(
            PersistedTable::open(path.clone(), shape(), defaults(), 1),
            Err(PersistError::TooManyEntries { entries: 2, .. })
        ));
        // A directory where the file should be makes the rename fail.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir_all(path.join("blocker")).unwrap();
        let version = table.data_version();
        let removed = run_local(table.remove("a", 4));
        assert!(matches!(removed, Err(PersistError::Io { .. })));
        assert_eq!(table.get("a"), Some(&3));
        assert_eq!(table.data_version(), version);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_change_awaits_its_write_instead_of_blocking_the_executor() {
        let dir = test_dir("persist-awaits");
        let mut table = PersistedTable::open(dir.join("t.json"), shape(), defaults(), 10).unwrap();
        run_local(async {
            let mut put = std::pin::pin!(table.put("a", 1, 1));
            // A blocking write would be done within its first poll; this one has handed its
            // I/O to io_uring and yields the executor to other tasks until it completes.
            let first = futures_lite::future::poll_once(&mut put).await;
            assert!(first.is_none(), "the write must await its I/O");
            assert!(put.await.unwrap());
        });
        assert!(std::fs::read_to_string(dir.join("t.json"))
            .unwrap()
            .contains(r#""a":1"#));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Seeds of the simulated-crash test, and the changes each makes.
    const SIM_SEEDS: u64 = 60;
    const SIM_CHANGES_PER_SEED: i32 = 10;

    /// The table as the simulated disk holds it now (a restart reading its file).
    async fn reopen(disk: &SimDisk, path: &Path) -> PersistedTable<i32, SimDisk> {
        let stored = if disk.exists(path).await.unwrap() {
            let file = disk.open(path, false).await.unwrap();
            let len = file.len().await.unwrap() as usize;
            let bytes = file.read_at(0, len).await.unwrap().to_vec();
            Stored::Found {
                bytes,
                from: path.to_owned(),
            }
        } else {
            Stored::Absent
        };
        PersistedTable::from_stored(
            disk.clone(),
            path.to_owned(),
            shape(),
            defaults(),
            100,
            stored,
        )
        .expect("a crash never leaves a torn file")
    }

    #[test]
    fn a_crash_at_any_step_of_a_write_leaves_the_old_table_or_the_new_one() {
        use futures_lite::future::block_on;
        // Not a path of this machine: every byte goes through the simulated disk.
        let path = Path::new("/ringmq-sim/config/t.json");
        let (mut interrupted, mut kept_new) = (0, 0);
        for seed in 0..SIM_SEEDS {
            let disk = SimDisk::new(seed, 1 << 20);
            let mut rng = SimRng::new(seed);
            let mut table = block_on(reopen(&disk, path));
            for round in 0..SIM_CHANGES_PER_SEED {
                let old = (table.entries().clone(), table.data_version().counter);
                let mut new = old.clone();
                new.0.insert(format!("k{}", round % 4), round);
                new.1 += 1;
                let crashes = disk.crashes();
                disk.set_crash_after_ops(Some(rng.below(9)));
                let put = block_on(table.put(&format!("k{}", round % 4), round, 1));
                disk.set_crash_after_ops(None);
                let now = (table.entries().clone(), table.data_version().counter);
                match put {
                    Ok(_) => {
                        assert_eq!(now, new, "seed {seed}");
                        disk.crash();
                    }
                    Err(_) => {
                        assert_eq!(now, old, "seed {seed}: memory ran ahead of the disk");
                        assert!(disk.crashes() > crashes, "seed {seed}: only crashes fail");
                        interrupted += 1;
                    }
                }
                table = block_on(reopen(&disk, path));
                let found = (table.entries().clone(), table.data_version().counter);
                if put.is_ok() {
                    assert_eq!(found, new, "seed {seed}: a completed put is durable");
                } else if found == new {
                    kept_new += 1;
                } else {
                    assert_eq!(found, old, "seed {seed}: neither the old table nor the new");
                }
            }
        }
        assert!(
            interrupted > SIM_SEEDS && kept_new > 0,
            "the crashes must strike mid-write"
        );
        assert!(!Path::new("/ringmq-sim").exists());
    }
}
