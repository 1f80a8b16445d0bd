//! The simulated disk and clock: in memory, deterministic from a seed, and hostile.
//!
//! Faults it injects: at [`SimDisk::crash`] every write not yet made durable by `sync` is
//! independently kept, dropped or torn (an arbitrary prefix lands), every such length change
//! (`truncate`) kept or dropped, and un-synced namespace changes are kept up to a random point
//! of their order; `sync` fails with EIO at a chosen rate (the changes then stay
//! non-durable); writes beyond allocated space fail with ENOSPC when the configured capacity
//! is used up. A crash can also be armed to strike at the n-th seam call from now
//! ([`SimDisk::set_crash_after_ops`]), to crash a protocol at each of its steps. File handles
//! opened before a crash fail with EIO afterwards, as a dead process's would.
//!
//! Simplification: `sync_dir` makes every pending namespace change durable, not only those of
//! that directory (the engine syncs the directory after each change it depends on anyway).

use crate::io::{Clock, Disk, DiskFile, DiskSpace, BLOCK_BYTES};
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// splitmix64: tiny, seedable, and good enough to drive fault injection and workloads.
#[derive(Clone, Debug)]
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < u64::from(per_mille)
    }
}

#[derive(Default)]
struct Inode {
    /// What reads see now.
    data: Vec<u8>,
    /// What survives a crash for sure.
    durable: Vec<u8>,
    /// Changes since the last successful sync, in order.
    pending: Vec<Change>,
    allocated: u64,
}

/// A change to a file's contents that is not durable until a sync.
enum Change {
    Write { pos: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Change {
    fn apply(&self, image: &mut Vec<u8>) {
        match self {
            Change::Write { pos, data } => apply(image, *pos, data),
            Change::SetLen(len) => image.resize(*len as usize, 0),
        }
    }
}

fn apply(image: &mut Vec<u8>, pos: u64, data: &[u8]) {
    let end = pos as usize + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[pos as usize..end].copy_from_slice(data);
}

#[derive(Clone)]
enum NamespaceOp {
    Link(PathBuf, u64),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
}

struct SimState {
    rng: SimRng,
    inodes: HashMap<u64, Inode>,
    inode_next: u64,
    names: BTreeMap<PathBuf, u64>,
    names_durable: BTreeMap<PathBuf, u64>,
    namespace_pending: Vec<NamespaceOp>,
    dirs: BTreeSet<PathBuf>,
    capacity_bytes: u64,
    fsync_fail_per_mille: u32,
    /// Bumped at each crash; handles from an older generation are dead.
    generation: u64,
    /// Seam calls left before an armed crash strikes (see [`SimDisk::set_crash_after_ops`]).
    crash_after_ops: Option<u64>,
}

impl SimState {
    fn used_bytes(&self) -> u64 {
        let live: BTreeSet<u64> = self.names.values().copied().collect();
        live.iter()
            .filter_map(|i| self.inodes.get(i))
            .map(|n| (n.data.len() as u64).max(n.allocated))
            .sum()
    }

    /// Checks that growing `inode` to `len` bytes fits the capacity.
    fn reserve(&self, inode: u64, len: u64) -> io::Result<()> {
        let node = &self.inodes[&inode];
        let have = (node.data.len() as u64).max(node.allocated);
        if len > have && self.used_bytes() + (len - have) > self.capacity_bytes {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        Ok(())
    }

    fn apply_namespace(names: &mut BTreeMap<PathBuf, u64>, op: &NamespaceOp) {
        match op {
            NamespaceOp::Link(path, inode) => {
                names.insert(path.clone(), *inode);
            }
            NamespaceOp::Rename(from, to) => {
                if let Some(inode) = names.remove(from) {
                    names.insert(to.clone(), inode);
                }
            }
            NamespaceOp::Remove(path) => {
                names.remove(path);
            }
        }
    }

    fn change_namespace(&mut self, op: NamespaceOp) {
        Self::apply_namespace(&mut self.names, &op);
        self.namespace_pending.push(op);
    }

    /// Counts one seam call towards an armed crash: the call it falls on crashes the disk
    /// before taking effect, and fails.
    fn step(&mut self) -> io::Result<()> {
        match self.crash_after_ops {
            None => Ok(()),
            Some(0) => {
                self.crash_after_ops = None;
                self.crash();
                Err(io::Error::other("simulated crash"))
            }
            Some(n) => {
                self.crash_after_ops = Some(n - 1);
                Ok(())
            }
        }
    }

    /// See [`SimDisk::crash`].
    fn crash(&mut self) {
        self.generation += 1;
        let keep = self.rng.below(self.namespace_pending.len() as u64 + 1) as usize;
        let mut names = self.names_durable.clone();
        for op in &self.namespace_pending[..keep] {
            SimState::apply_namespace(&mut names, op);
        }
        self.names = names.clone();
        self.names_durable = names;
        self.namespace_pending.clear();
        let mut ids: Vec<u64> = self.inodes.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let node = self.inodes.get_mut(&id).expect("listed");
            let mut image = std::mem::take(&mut node.durable);
            for change in std::mem::take(&mut node.pending) {
                match change {
                    Change::Write { pos, data } => match self.rng.below(10) {
                        0..=3 => apply(&mut image, pos, &data),
                        4..=5 => {
                            let torn = self.rng.below(data.len() as u64 + 1) as usize;
                            apply(&mut image, pos, &data[..torn]);
                        }
                        _ => {}
                    },
                    Change::SetLen(len) => {
                        if self.rng.chance(500) {
                            image.resize(len as usize, 0);
                        }
                    }
                }
            }
            node.data = image.clone();
            node.durable = image;
        }
    }
}

/// Handle to the simulated disk; clones share it.
#[derive(Clone)]
pub struct SimDisk {
    state: Rc<RefCell<SimState>>,
}

impl SimDisk {
    /// A disk of `capacity_bytes`, its faults drawn from `seed`.
    pub fn new(seed: u64, capacity_bytes: u64) -> Self {
        let state = SimState {
            rng: SimRng::new(seed),
            inodes: HashMap::new(),
            inode_next: 1,
            names: BTreeMap::new(),
            names_durable: BTreeMap::new(),
            namespace_pending: Vec::new(),
            dirs: BTreeSet::new(),
            capacity_bytes,
            fsync_fail_per_mille: 0,
            generation: 0,
            crash_after_ops: None,
        };
        Self {
            state: Rc::new(RefCell::new(state)),
        }
    }

    /// Changes the capacity (to fill the disk, or to free space again).
    pub fn set_capacity(&self, capacity_bytes: u64) {
        self.state.borrow_mut().capacity_bytes = capacity_bytes;
    }

    /// Bytes used by live files (their length or allocation, whichever is larger).
    pub fn used_bytes(&self) -> u64 {
        self.state.borrow().used_bytes()
    }

    /// Makes `sync` fail with EIO with this probability (per mille).
    pub fn set_fsync_fail_per_mille(&self, per_mille: u32) {
        self.state.borrow_mut().fsync_fail_per_mille = per_mille;
    }

    /// Simulates power loss: non-durable writes are kept, dropped or torn at random, length
    /// changes kept or dropped, un-synced namespace changes survive up to a random point,
    /// open handles die.
    pub fn crash(&self) {
        self.state.borrow_mut().crash();
    }

    /// Arms a crash to strike at the seam call `ops` calls from now (0: the next one), before
    /// that call takes effect (it then fails); `None` disarms.
    pub fn set_crash_after_ops(&self, ops: Option<u64>) {
        self.state.borrow_mut().crash_after_ops = ops;
    }

    /// Crashes so far, by [`SimDisk::crash`] or an armed one.
    pub fn crashes(&self) -> u64 {
        self.state.borrow().generation
    }
}

fn dead_handle() -> io::Error {
    io::Error::other("simulated disk crashed since open")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}", path.display()))
}

/// An open file of the simulated disk.
pub struct SimFile {
    state: Rc<RefCell<SimState>>,
    inode: u64,
    generation: u64,
}

impl SimFile {
    /// Counts the call ([`SimState::step`]) and checks that the handle survived any crash.
    fn live<'a>(&self, state: &'a mut SimState) -> io::Result<&'a mut SimState> {
        state.step()?;
        if state.generation != self.generation || !state.inodes.contains_key(&self.inode) {
            return Err(dead_handle());
        }
        Ok(state)
    }
}

impl DiskFile for SimFile {
    type Buffer = Vec<u8>;

    /// Filled with a marker byte, so a writer that forgets to fill its padding is caught.
    fn alloc_buffer(&self, len: usize) -> Vec<u8> {
        vec![0xA5; len]
    }

    async fn write_at(&self, pos: u64, data: Vec<u8>) -> io::Result<()> {
        // I/O takes time: let other tasks run (and join a group commit) meanwhile.
        futures_lite::future::yield_now().await;
        if !pos.is_multiple_of(BLOCK_BYTES as u64) || !data.len().is_multiple_of(BLOCK_BYTES) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        state.reserve(self.inode, pos + data.len() as u64)?;
        let node = state.inodes.get_mut(&self.inode).expect("live");
        apply(&mut node.data, pos, &data);
        node.pending.push(Change::Write { pos, data });
        Ok(())
    }

    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Bytes> {
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        let data = &state.inodes[&self.inode].data;
        let start = (pos as usize).min(data.len());
        let end = (start + len).min(data.len());
        Ok(Bytes::copy_from_slice(&data[start..end]))
    }

    async fn sync(&self) -> io::Result<()> {
        futures_lite::future::yield_now().await;
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        let fail = state.fsync_fail_per_mille;
        if state.rng.chance(fail) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let node = state.inodes.get_mut(&self.inode).expect("live");
        for change in std::mem::take(&mut node.pending) {
            change.apply(&mut node.durable);
        }
        Ok(())
    }

    async fn allocate(&self, len: u64) -> io::Result<()> {
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        state.reserve(self.inode, len)?;
        let node = state.inodes.get_mut(&self.inode).expect("live");
        node.allocated = node.allocated.max(len);
        Ok(())
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        state.reserve(self.inode, len)?;
        let node = state.inodes.get_mut(&self.inode).expect("live");
        let change = Change::SetLen(len);
        change.apply(&mut node.data);
        // Cutting a file frees its space beyond the new end, reserved or not.
        node.allocated = node.allocated.min(len);
        node.pending.push(change);
        Ok(())
    }

    async fn len(&self) -> io::Result<u64> {
        let mut guard = self.state.borrow_mut();
        let state = self.live(&mut guard)?;
        Ok(state.inodes[&self.inode].data.len() as u64)
    }
}

impl Disk for SimDisk {
    type File = SimFile;

    async fn open(&self, path: &Path, create: bool) -> io::Result<SimFile> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        let inode = match state.names.get(path) {
            Some(inode) => *inode,
            None if create => {
                let parent = path.parent().unwrap_or(Path::new(""));
                if !state.dirs.contains(parent) {
                    return Err(not_found(parent));
                }
                let inode = state.inode_next;
                state.inode_next += 1;
                state.inodes.insert(inode, Inode::default());
                state.change_namespace(NamespaceOp::Link(path.to_path_buf(), inode));
                inode
            }
            None => return Err(not_found(path)),
        };
        Ok(SimFile {
            state: self.state.clone(),
            inode,
            generation: state.generation,
        })
    }

    async fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        for ancestor in path.ancestors() {
            state.dirs.insert(ancestor.to_path_buf());
        }
        Ok(())
    }

    async fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        if !state.dirs.contains(path) {
            return Err(not_found(path));
        }
        let files = state.names.keys().map(PathBuf::as_path);
        let dirs = state.dirs.iter().map(PathBuf::as_path);
        Ok(files
            .chain(dirs)
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect())
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        if !state.names.contains_key(from) {
            return Err(not_found(from));
        }
        state.change_namespace(NamespaceOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    async fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        if !state.names.contains_key(path) {
            return Err(not_found(path));
        }
        state.change_namespace(NamespaceOp::Remove(path.to_path_buf()));
        Ok(())
    }

    async fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        state.names_durable = state.names.clone();
        state.namespace_pending.clear();
        Ok(())
    }

    async fn exists(&self, path: &Path) -> io::Result<bool> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        Ok(state.names.contains_key(path) || state.dirs.contains(path))
    }

    /// The capacity is the partition's size; what live files use is taken from it.
    async fn space(&self, _path: &Path) -> io::Result<DiskSpace> {
        let mut state = self.state.borrow_mut();
        state.step()?;
        let free = state.capacity_bytes.saturating_sub(state.used_bytes());
        Ok(DiskSpace {
            total: state.capacity_bytes,
            free,
            usable: free,
        })
    }
}

/// A clock that moves only when told (or when something sleeps on it).
#[derive(Clone)]
pub struct SimClock {
    now_ms: Rc<Cell<i64>>,
}

impl SimClock {
    pub fn new(start_ms: i64) -> Self {
        Self {
            now_ms: Rc::new(Cell::new(start_ms)),
        }
    }

    pub fn advance(&self, ms: i64) {
        self.now_ms.set(self.now_ms.get() + ms);
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.get()
    }

    /// Virtual time: sleeping moves the clock forward and returns at once.
    async fn sleep(&self, duration: Duration) {
        self.advance(duration.as_millis() as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::block_on;

    #[test]
    fn crash_keeps_synced_and_may_lose_the_rest() {
        block_on(async {
            let disk = SimDisk::new(7, 1 << 20);
            let dir = Path::new("/d");
            disk.create_dir_all(dir).await.unwrap();
            let f = disk.open(&dir.join("f"), true).await.unwrap();
            f.write_at(0, vec![1; BLOCK_BYTES]).await.unwrap();
            f.sync().await.unwrap();
            disk.sync_dir(dir).await.unwrap();
            f.write_at(0, vec![2; BLOCK_BYTES]).await.unwrap();
            disk.crash();
            assert!(f.read_at(0, 1).await.is_err(), "old handle must be dead");
            let f = disk.open(&dir.join("f"), false).await.unwrap();
            let block = f.read_at(0, BLOCK_BYTES).await.unwrap();
            // Whatever happened to the second write, a prefix of 2s then 1s remains.
            let twos = block.iter().take_while(|b| **b == 2).count();
            assert!(block[twos..].iter().all(|b| *b == 1));
        });
    }

    #[test]
    fn enospc_and_unsynced_create_lost() {
        block_on(async {
            let disk = SimDisk::new(1, 2 * BLOCK_BYTES as u64);
            let dir = Path::new("/d");
            disk.create_dir_all(dir).await.unwrap();
            let f = disk.open(&dir.join("f"), true).await.unwrap();
            f.allocate(2 * BLOCK_BYTES as u64).await.unwrap();
            let err = f.allocate(3 * BLOCK_BYTES as u64).await.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
            disk.set_capacity(1 << 20);
            f.allocate(3 * BLOCK_BYTES as u64).await.unwrap();
            disk.sync_dir(dir).await.unwrap();
            disk.crash();
            assert!(disk.exists(&dir.join("f")).await.unwrap());
            assert_eq!(disk.used_bytes(), 3 * BLOCK_BYTES as u64);
        });
    }
}
