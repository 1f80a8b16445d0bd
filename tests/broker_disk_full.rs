//! A full disk, for real: a broker whose data directory is on a 40 MiB tmpfs this test mounts
//! (as root; it skips, saying why, when it cannot mount). With forcible cleaning off, sends go
//! until the partition passes `diskSpaceWarningLevelRatio` or a new segment finds no space,
//! and are then refused with Apache's SERVICE_NOT_AVAILABLE and a remark naming the full disk;
//! meanwhile every acknowledged message is read back intact and consumer offsets are written
//! and read. When the operator frees space (a ballast file removed) sends resume by
//! themselves; filled again, and restarted with `cleanFileForciblyEnable=true`, the broker's
//! retention removes the oldest segments and sends resume, every retained message intact.

mod broker_support;

use broker_support::process_support::TempDir;
use broker_support::requests::{call, create_topic, pull, query_offset, send, update_offset};
use broker_support::Standalone;
use ringmq::client::{block_on, RemotingClient};
use ringmq::protocol::codes::{request as code, response};
use ringmq::protocol::command::RemotingCommand;
use ringmq::protocol::header::{OffsetResponseHeader, QueueRequestHeader};
use ringmq::protocol::message::record::RecordView;
use ringmq::protocol::message::split_records;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The file system: ten 4 MiB segments' worth.
const FS_BYTES: u64 = 40 << 20;
const SEGMENT_BYTES: u64 = 4 << 20;
/// What the operator frees in the first round: two segments.
const BALLAST_BYTES: usize = 8 << 20;
/// Bodies of 32 KiB: 127 a segment, so the disk fills in a few hundred sends.
const BODY_BYTES: usize = 32 << 10;
/// Bound on the sends of one fill: twice what the whole file system holds.
const FILL_SENDS_MAX: usize = 2 * (FS_BYTES as usize / BODY_BYTES);
const QUEUES: i32 = 4;
/// How long the broker may take to notice that space came back (it looks every 200 ms) and,
/// after the restart, to remove segments (one every 100 ms); generous for a loaded machine.
const RESUME_DEADLINE: Duration = Duration::from_secs(60);
/// The broker's remark on a full disk contains this (Apache's words).
const DISK_FULL_REMARK: &str = "disk is full";

/// A tmpfs mounted for the test, unmounted on drop (after the broker on it has stopped: drop
/// it last).
struct Tmpfs {
    dir: TempDir,
}

impl Tmpfs {
    /// `None`, with the reason printed, when this process may not mount (not root, or a
    /// container without CAP_SYS_ADMIN).
    fn mount(bytes: u64) -> Option<Self> {
        let dir = TempDir::new("disk-full-fs");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match output {
            Ok(out) if out.status.success() => Some(Tmpfs { dir }),
            Ok(out) => {
                eprintln!(
                    "SKIPPED: cannot mount a {bytes}-byte tmpfs (needs root / CAP_SYS_ADMIN): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(err) => {
                eprintln!("SKIPPED: cannot run mount: {err}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Writes a broker.conf with 4 MiB segments, retention checked every 200 ms, and forcible
/// cleaning as given (expiry never removes anything here: 72 h).
fn write_conf(path: &Path, clean_forcibly: bool) {
    std::fs::write(
        path,
        format!(
            "mappedFileSizeCommitLog={SEGMENT_BYTES}\ncleanFileForciblyEnable={clean_forcibly}\n\
             cleanResourceInterval=200\ndeleteCommitLogFilesInterval=100\n"
        ),
    )
    .unwrap();
}

fn body_of(queue_id: i32, seq: usize) -> Vec<u8> {
    let mut body = format!("q{queue_id}-m{seq}-").into_bytes();
    body.resize(BODY_BYTES, b'a' + (seq % 26) as u8);
    body
}

/// Acknowledged messages: (queue, queue offset) → body.
type Stored = BTreeMap<(i32, i64), Vec<u8>>;

/// Sends over the queues in turn until a send is refused; returns the refusal (code, remark).
async fn fill_until_refused(client: &RemotingClient, stored: &mut Stored) -> (i32, String) {
    for seq in 0..FILL_SENDS_MAX {
        let queue_id = seq as i32 % QUEUES;
        let body = body_of(queue_id, stored.len());
        let resp = call(client, send("D", queue_id, &body, &[])).await;
        if resp.code != response::SUCCESS {
            return (resp.code, resp.remark.unwrap_or_default());
        }
        let header: ringmq::protocol::header::SendMessageResponseHeader =
            resp.decode_header().unwrap();
        stored.insert((queue_id, header.queue_offset), body);
    }
    panic!("{FILL_SENDS_MAX} sends to a {FS_BYTES}-byte file system were all stored");
}

async fn offset_of(client: &RemotingClient, request: RemotingCommand) -> i64 {
    let resp = call(client, request).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
    resp.decode_header::<OffsetResponseHeader>().unwrap().offset
}

fn queue_request(request_code: i32, queue_id: i32) -> RemotingCommand {
    RemotingCommand::request(request_code).with_header(&QueueRequestHeader {
        topic: "D".into(),
        queue_id,
    })
}

/// Reads every queue from its min offset to its max and checks each record against what was
/// acknowledged there; returns how many were read.
async fn check_retained(client: &RemotingClient, stored: &Stored) -> usize {
    let mut read = 0;
    for queue_id in 0..QUEUES {
        let min = offset_of(client, queue_request(code::GET_MIN_OFFSET, queue_id)).await;
        let max = offset_of(client, queue_request(code::GET_MAX_OFFSET, queue_id)).await;
        let acknowledged = stored.range((queue_id, 0)..(queue_id + 1, 0)).count() as i64;
        assert_eq!(max, acknowledged, "queue {queue_id}: max offset");
        let mut offset = min;
        while offset < max {
            let resp = call(client, pull("G", "D", queue_id, offset, Some("*"), 0)).await;
            assert_eq!(resp.code, response::SUCCESS, "{offset}: {:?}", resp.remark);
            let records: Vec<RecordView> = split_records(resp.body.clone())
                .map(|r| r.unwrap())
                .collect();
            assert!(
                !records.is_empty(),
                "queue {queue_id} at {offset}: no record"
            );
            for record in records {
                assert_eq!(record.queue_offset(), offset);
                let want = &stored[&(queue_id, offset)];
                assert!(
                    record.body() == want.as_slice(),
                    "{queue_id}@{offset} differs"
                );
                offset += 1;
                read += 1;
            }
        }
    }
    read
}

/// Sends one message every 100 ms until one is stored (bounded by [`RESUME_DEADLINE`]).
async fn send_until_stored(client: &RemotingClient, stored: &mut Stored, what: &str) {
    let started = Instant::now();
    loop {
        let body = body_of(0, stored.len());
        let resp = call(client, send("D", 0, &body, &[])).await;
        if resp.code == response::SUCCESS {
            let header: ringmq::protocol::header::SendMessageResponseHeader =
                resp.decode_header().unwrap();
            stored.insert((0, header.queue_offset), body);
            return;
        }
        assert_eq!(
            resp.code,
            response::SERVICE_NOT_AVAILABLE,
            "{:?}",
            resp.remark
        );
        assert!(
            started.elapsed() < RESUME_DEADLINE,
            "sends still refused {RESUME_DEADLINE:?} after {what}: {:?}",
            resp.remark
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn assert_refused_as_disk_full((code, remark): &(i32, String)) {
    assert_eq!(*code, response::SERVICE_NOT_AVAILABLE, "{remark}");
    assert!(remark.contains(DISK_FULL_REMARK), "remark: {remark}");
}

#[test]
fn a_full_disk_refuses_sends_keeps_what_it_stored_and_takes_sends_again_when_space_returns() {
    let Some(fs) = Tmpfs::mount(FS_BYTES) else {
        return;
    };
    let conf = TempDir::new("disk-full-conf");
    let conf_path: PathBuf = conf.path().join("broker.conf");
    write_conf(&conf_path, false);
    let ballast = fs.path().join("ballast");
    std::fs::write(&ballast, vec![0u8; BALLAST_BYTES]).unwrap();
    let data = TempDir::new_in(fs.path(), "data");
    let mut broker = Standalone::start_in(1, data, &["-c", conf_path.to_str().unwrap()]);
    let mut stored = Stored::new();
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        let resp = call(&client, create_topic("D", QUEUES)).await;
        assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);

        let refused = fill_until_refused(&client, &mut stored).await;
        assert_refused_as_disk_full(&refused);
        eprintln!("full after {} messages: {}", stored.len(), refused.1);
        // It stays refused (for a message as large: a small one may still fit the active
        // segment's preallocated room when a new segment found no space), and what it
        // acknowledged is there, intact; offsets still work.
        let again = call(&client, send("D", 1, &body_of(1, stored.len()), &[])).await;
        assert_refused_as_disk_full(&(again.code, again.remark.unwrap_or_default()));
        assert_eq!(check_retained(&client, &stored).await, stored.len());
        let commit = call(&client, update_offset("G", "D", 2, 7)).await;
        assert_eq!(commit.code, response::SUCCESS, "{:?}", commit.remark);
        assert_eq!(offset_of(&client, query_offset("G", "D", 2)).await, 7);

        // The operator frees space: sends resume without a restart.
        std::fs::remove_file(&ballast).unwrap();
        send_until_stored(&client, &mut stored, "the ballast was removed").await;
        let refused = fill_until_refused(&client, &mut stored).await;
        assert_refused_as_disk_full(&refused);
    })
    .unwrap();

    // Full again: restarted with forcible cleaning, retention frees the oldest segments.
    let status = broker.stop();
    assert!(status.success(), "a clean stop on a full disk: {status}");
    write_conf(&conf_path, true);
    broker.start_again();
    block_on(async {
        let client = RemotingClient::connect(&broker.broker_addr).await.unwrap();
        send_until_stored(&client, &mut stored, "the restart with forcible cleaning").await;
        let min = offset_of(&client, queue_request(code::GET_MIN_OFFSET, 0)).await;
        assert!(min > 0, "retention removed the first segment");
        let read = check_retained(&client, &stored).await;
        assert!(
            read > 0 && read < stored.len(),
            "{read} of {}",
            stored.len()
        );
        assert_eq!(offset_of(&client, query_offset("G", "D", 2)).await, 7);
    })
    .unwrap();
    drop(broker);
    drop(fs);
}
