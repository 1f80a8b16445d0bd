//! The project's one crash-safe "replace this file with these bytes", through the disk seam
//! (so on the real disk it is io_uring I/O on the caller's executor, never a blocking call
//! that waits for the disk): write a new copy beside the file, give it its exact length, sync
//! it, rename it over the old one, sync the directory. A crash at any point leaves the old
//! file or the new one, never a torn one; a torn `.tmp` copy left behind is never read, and
//! the next replace overwrites it.
//!
//! Users: the framed metadata files of [`crate::meta_file`], and the broker's and NameServer's
//! JSON files, whose Apache shapes leave no room for a frame.
//!
//! Two replaces of the same path must not overlap (they share the `.tmp` copy): each user has
//! one writer per file.
//!
//! Cost per replace: one copy of the bytes into an aligned buffer, one write, a truncate, two
//! syncs (file, directory), a rename; the file is rewritten whole, so it is for small files
//! that change rarely, never per message.

use crate::io::{align_up, Disk, DiskFile};
use std::io;
use std::path::{Path, PathBuf};

/// A replaced file is built whole in memory and written in one I/O. The largest written today
/// are subscriptionGroup.json at its bound (100 k groups, ~40 MB) and a metadata file at
/// `META_PAYLOAD_BYTES_MAX` (64 MiB); a larger one is a bug, not something to allocate for.
pub const REPLACE_BYTES_MAX: usize = 128 << 20;

/// Where the new copy of `path` is written before it is renamed over `path`.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// The directory holding `path` ("." for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Replaces the file at `path` with exactly `bytes`, atomically and durably (see the module
/// doc), creating its directory if missing. On an error the file is the old one or, when
/// only the directory sync failed, possibly already the new one.
pub async fn replace_file<D: Disk>(disk: &D, path: &Path, bytes: &[u8]) -> io::Result<()> {
    if bytes.len() > REPLACE_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} bytes for {}", bytes.len(), path.display()),
        ));
    }
    let dir = parent_dir(path);
    if !disk.exists(dir).await? {
        disk.create_dir_all(dir).await?;
        // The new directory's own entry, so the file is not lost with it.
        disk.sync_dir(parent_dir(dir)).await?;
    }
    let tmp = tmp_path(path);
    let file = disk.open(&tmp, true).await?;
    if !bytes.is_empty() {
        let mut buf = file.alloc_buffer(align_up(bytes.len() as u64) as usize);
        let out = buf.as_mut();
        out[..bytes.len()].copy_from_slice(bytes);
        out[bytes.len()..].fill(0);
        file.write_at(0, buf).await?;
    }
    // O_DIRECT wrote whole blocks; this also cuts what a longer earlier copy left.
    file.truncate(bytes.len() as u64).await?;
    file.sync().await?;
    disk.rename(&tmp, path).await?;
    disk.sync_dir(dir).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::BLOCK_BYTES;
    use crate::sim_io::{SimDisk, SimRng};
    use futures_lite::future::block_on;

    /// Seeds of the crash test, and the replaces each makes on one disk.
    const SEEDS: u64 = 300;
    const REPLACES_PER_SEED: u64 = 12;
    /// Seam calls of one replace (exists, open, write, truncate, sync, rename, sync_dir; two
    /// more when it creates the directory): crash points are drawn a little past them, so
    /// some replaces complete before the crash.
    const CRASH_POINTS: u64 = 12;

    /// Prints the seed if the test panics while it is alive.
    struct SeedGuard(u64);

    impl Drop for SeedGuard {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("replace_file crash test failed for seed {}", self.0);
            }
        }
    }

    /// The whole file at `path` as the disk holds it now, `None` when there is none.
    async fn read_whole(disk: &SimDisk, path: &Path) -> Option<Vec<u8>> {
        if !disk.exists(path).await.unwrap() {
            return None;
        }
        let file = disk.open(path, false).await.unwrap();
        let len = file.len().await.unwrap();
        Some(file.read_at(0, len as usize).await.unwrap().to_vec())
    }

    /// Contents of a random length (empty, block-sized and odd lengths all occur), marked
    /// with their seed and round so that no two are alike.
    fn contents(rng: &mut SimRng, seed: u64, round: u64) -> Vec<u8> {
        let len = match rng.below(4) {
            0 => 0,
            1 => BLOCK_BYTES * (1 + rng.below(2) as usize),
            _ => rng.below(3 * BLOCK_BYTES as u64) as usize + 1,
        };
        let mark = format!("{seed}/{round};");
        (0..len)
            .map(|i| {
                mark.as_bytes()
                    .get(i)
                    .copied()
                    .unwrap_or(i as u8 ^ round as u8)
            })
            .collect()
    }

    #[test]
    fn a_crash_at_any_step_leaves_the_old_file_or_the_new_one() {
        let path = Path::new("/data/config/table.json");
        let (mut interrupted, mut kept_old, mut got_new_anyway, mut sync_failed) = (0, 0, 0, 0);
        for seed in 0..SEEDS {
            let _guard = SeedGuard(seed);
            let mut rng = SimRng::new(seed);
            let disk = SimDisk::new(seed, 1 << 20);
            disk.set_fsync_fail_per_mille(if seed % 3 == 0 { 150 } else { 0 });
            let mut current = None;
            for round in 0..REPLACES_PER_SEED {
                let new = contents(&mut rng, seed, round);
                let crashes = disk.crashes();
                disk.set_crash_after_ops(Some(rng.below(CRASH_POINTS)));
                let result = block_on(replace_file(&disk, path, &new));
                disk.set_crash_after_ops(None);
                let crashed_mid_write = disk.crashes() > crashes;
                match (&result, crashed_mid_write) {
                    (Ok(()), false) => {
                        disk.crash();
                        let found = block_on(read_whole(&disk, path));
                        assert_eq!(found.as_ref(), Some(&new), "a completed replace is durable");
                    }
                    (Ok(()), true) => unreachable!("a crashed replace cannot succeed"),
                    (Err(_), crashed) => {
                        if crashed {
                            interrupted += 1;
                        } else {
                            sync_failed += 1;
                            disk.crash();
                        }
                        let found = block_on(read_whole(&disk, path));
                        if found == current {
                            kept_old += 1;
                        } else {
                            assert_eq!(found.as_ref(), Some(&new), "neither old nor new");
                            got_new_anyway += 1;
                        }
                    }
                }
                current = block_on(read_whole(&disk, path));
            }
        }
        // The test proves it tested: crashes struck mid-write, and both outcomes occurred.
        assert!(interrupted > SEEDS && kept_old > 0 && got_new_anyway > 0 && sync_failed > 0);
        eprintln!(
            "{interrupted} crashed mid-replace ({kept_old} kept the old file, \
             {got_new_anyway} the new one), {sync_failed} failed syncs"
        );
    }

    #[test]
    fn writes_the_exact_length_over_a_longer_leftover_copy() {
        block_on(async {
            let disk = SimDisk::new(1, 1 << 20);
            let path = Path::new("/d/t.json");
            // A longer torn copy left by an earlier crash.
            disk.create_dir_all(Path::new("/d")).await.unwrap();
            let leftover = disk.open(&tmp_path(path), true).await.unwrap();
            leftover
                .write_at(0, vec![9; 2 * BLOCK_BYTES])
                .await
                .unwrap();
            replace_file(&disk, path, b"{\"a\":1}").await.unwrap();
            disk.crash();
            assert_eq!(read_whole(&disk, path).await.unwrap(), b"{\"a\":1}");
            replace_file(&disk, path, b"").await.unwrap();
            assert_eq!(read_whole(&disk, path).await.unwrap(), b"");
            let too_large = vec![0; REPLACE_BYTES_MAX + 1];
            let err = replace_file(&disk, path, &too_large).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        });
    }
}
