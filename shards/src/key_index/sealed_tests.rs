use super::*;
use crate::key_index::parse_sealed_name;
use crate::sim_io::SimDisk;
use futures_lite::future::block_on;
use std::path::Path;

fn entry(hash: u64, local: u64) -> SealedEntry {
    SealedEntry {
        hash,
        local,
        store_timestamp_ms: local as i64 * 10,
    }
}

fn seal(disk: &SimDisk, entries: &mut [SealedEntry]) -> SealedIndex<<SimDisk as Disk>::File> {
    block_on(disk.create_dir_all(Path::new("/s/index"))).unwrap();
    block_on(write_sealed(disk, Path::new("/s"), 4096, entries)).unwrap()
}

#[test]
fn lookups_find_every_hit_of_a_hash_in_log_order_across_pages_and_runs() {
    let disk = SimDisk::new(1, 1 << 30);
    // More entries than one sort run and many pages; hash 7 has a run of hits longer than a
    // page, straddling page boundaries; the input is not sorted.
    let n = SORT_STEP as u64 + 3 * PAGE_ENTRIES as u64;
    let mut entries: Vec<SealedEntry> = (0..n)
        .rev()
        .map(|i| {
            entry(
                if i % 50 == 0 {
                    7
                } else {
                    i * 1_000_003 % 97 + 100
                },
                i,
            )
        })
        .collect();
    let sealed = seal(&disk, &mut entries);
    assert_eq!(sealed.entries(), n);
    let sevens: Vec<u64> = (0..n).filter(|i| i % 50 == 0).collect();
    assert!(sevens.len() > PAGE_ENTRIES, "the run spans pages");
    let found = block_on(sealed.lookup(7, usize::MAX, |_| true)).unwrap();
    assert_eq!(found.iter().map(|e| e.local).collect::<Vec<_>>(), sevens);
    let newest = block_on(sealed.lookup(7, 3, |_| true)).unwrap();
    assert_eq!(
        newest.iter().map(|e| e.local).collect::<Vec<_>>(),
        sevens[sevens.len() - 3..]
    );
    let late = block_on(sealed.lookup(7, usize::MAX, |e| e.local >= 1000)).unwrap();
    assert!(late.iter().all(|e| e.local >= 1000) && !late.is_empty());
    for absent in [0, 6, 8, 99, u64::MAX] {
        assert!(block_on(sealed.lookup(absent, 10, |_| true))
            .unwrap()
            .is_empty());
    }
    let reopened = block_on(SealedIndex::open(
        &disk,
        &sealed_path(Path::new("/s"), 4096),
        4096,
    ))
    .unwrap();
    assert_eq!(
        block_on(reopened.lookup(7, usize::MAX, |_| true)).unwrap(),
        found
    );
}

#[test]
fn an_empty_segment_seals_to_an_index_that_finds_nothing() {
    let disk = SimDisk::new(2, 1 << 20);
    let sealed = seal(&disk, &mut []);
    assert_eq!(sealed.entries(), 0);
    assert!(block_on(sealed.lookup(1, 10, |_| true)).unwrap().is_empty());
}

#[test]
fn damaged_files_are_corruption_errors_not_wrong_answers() {
    let disk = SimDisk::new(3, 1 << 20);
    let mut entries: Vec<SealedEntry> = (0..500).map(|i| entry(i % 5, i)).collect();
    drop(seal(&disk, &mut entries));
    let path = sealed_path(Path::new("/s"), 4096);
    let file = block_on(disk.open(&path, false)).unwrap();
    // A flipped byte in the second page (after the one-block header).
    let at = (2 * PAGE_BYTES + 100) as u64;
    let mut block = file.alloc_buffer(PAGE_BYTES);
    let old = block_on(file.read_at(at - 100, PAGE_BYTES)).unwrap();
    let bytes: &mut [u8] = block.as_mut();
    bytes.copy_from_slice(&old);
    bytes[100] ^= 0xff;
    block_on(file.write_at(at - 100, block)).unwrap();
    let sealed = block_on(SealedIndex::open(&disk, &path, 4096)).unwrap();
    let results: Vec<bool> = (0..5)
        .map(|h| block_on(sealed.lookup(h, usize::MAX, |_| true)).is_err())
        .collect();
    assert!(results.contains(&true), "the damaged page is reported");
    assert!(
        matches!(
            block_on(SealedIndex::open(&disk, &path, 8192)),
            Err(StoreError::Corrupt { .. })
        ),
        "another segment's start is refused"
    );
    block_on(file.truncate(100)).unwrap();
    assert!(matches!(
        block_on(SealedIndex::open(&disk, &path, 4096)),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn names_and_hashes_are_stable() {
    assert_eq!(parse_sealed_name("00000000000000004096.sealed"), Some(4096));
    assert_eq!(parse_sealed_name("00000000000000004096"), None);
    assert_eq!(parse_sealed_name("00000000000000004096.sealed.tmp"), None);
    // FNV-1a 64 of "T#k" (as computed by an independent implementation), fixed: the files
    // outlive the binary.
    assert_eq!(key_hash("T", "k"), 0x6bff_cf19_e141_f5b1);
    assert_ne!(key_hash("T", "k"), key_hash("T#", "k"));
}
