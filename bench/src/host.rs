//! Facts about the host a run was measured on, read from /proc and /sys, so a result says what
//! it is a result of. A fact that cannot be read is left out, never guessed.

use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HostFacts {
    pub hostname: Option<String>,
    pub cpu_model: Option<String>,
    /// CPUs this process may run on.
    pub cores: usize,
    pub kernel: Option<String>,
    pub memory_mib: Option<u64>,
    /// 1-minute load average when the run started: other work on a shared host shows here.
    pub load_average_1m: Option<f64>,
    /// The block device and file system holding `--data-path`.
    pub disk: Option<DiskFacts>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiskFacts {
    pub path: String,
    pub mount_point: String,
    pub device: String,
    pub fs: String,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

impl HostFacts {
    /// Reads the facts of this host, with `data_path` naming the disk of interest.
    pub fn collect(data_path: &Path) -> Self {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let meminfo = read("/proc/meminfo").unwrap_or_default();
        let mountinfo = read("/proc/self/mountinfo").unwrap_or_default();
        let path = std::fs::canonicalize(data_path).unwrap_or_else(|_| data_path.to_owned());
        Self {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model: cpu_model(&cpuinfo),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: read("/proc/sys/kernel/osrelease"),
            memory_mib: memory_mib(&meminfo),
            load_average_1m: read("/proc/loadavg")
                .and_then(|l| l.split_whitespace().next()?.parse().ok()),
            disk: disk(&mountinfo, &path.to_string_lossy()),
        }
    }
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

fn memory_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// The mount holding `path`: the longest mount point that is a prefix of it
/// (`/proc/self/mountinfo`: field 5 is the mount point; after ` - ` come fs type and source).
fn disk(mountinfo: &str, path: &str) -> Option<DiskFacts> {
    let (mount_point, fs, device) = mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mount_point = left.split_whitespace().nth(4)?;
            let mut right = right.split_whitespace();
            let fs = right.next()?;
            let device = right.next()?;
            let inside = path == mount_point
                || mount_point == "/"
                || path.starts_with(&format!("{mount_point}/"));
            inside.then_some((mount_point, fs, device))
        })
        .max_by_key(|(mount_point, ..)| mount_point.len())?;
    let block = device.strip_prefix("/dev/").map(block_device_name);
    let queue = |file: &str| {
        block
            .as_ref()
            .and_then(|b| read(format!("/sys/block/{b}/queue/{file}")))
    };
    Some(DiskFacts {
        path: path.to_owned(),
        mount_point: mount_point.to_owned(),
        device: device.to_owned(),
        fs: fs.to_owned(),
        rotational: queue("rotational").map(|r| r == "1"),
        scheduler: queue("scheduler"),
    })
}

/// The whole disk of a partition name: `vda1` → `vda`, `nvme0n1p2` → `nvme0n1`.
fn block_device_name(partition: &str) -> String {
    if partition.starts_with("nvme") || partition.starts_with("mmcblk") {
        match partition.rfind('p') {
            Some(i) if i > 0 && partition[i + 1..].chars().all(|c| c.is_ascii_digit()) => {
                partition[..i].to_owned()
            }
            _ => partition.to_owned(),
        }
    } else {
        partition
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:26 / /work rw,relatime shared:2 - overlay overlay rw
31 22 0:27 / /tmp rw shared:3 - tmpfs tmpfs rw
32 30 259:2 / /work/data rw shared:4 - xfs /dev/nvme0n1p2 rw";

    #[test]
    fn the_longest_enclosing_mount_wins() {
        let d = disk(MOUNTINFO, "/work/data/store").unwrap();
        assert_eq!(
            (d.mount_point.as_str(), d.fs.as_str()),
            ("/work/data", "xfs")
        );
        assert_eq!(d.device, "/dev/nvme0n1p2");
        let d = disk(MOUNTINFO, "/work/database").unwrap();
        assert_eq!(d.mount_point, "/work");
        let d = disk(MOUNTINFO, "/home").unwrap();
        assert_eq!((d.mount_point.as_str(), d.fs.as_str()), ("/", "ext4"));
    }

    #[test]
    fn partitions_map_to_their_disks() {
        assert_eq!(block_device_name("vda1"), "vda");
        assert_eq!(block_device_name("sda"), "sda");
        assert_eq!(block_device_name("nvme0n1p2"), "nvme0n1");
        assert_eq!(block_device_name("nvme0n1"), "nvme0n1");
    }

    #[test]
    fn cpu_and_memory_lines_are_read() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: fpu\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(memory_mib("MemTotal:       24576000 kB\n"), Some(24000));
        assert_eq!(memory_mib("nothing"), None);
    }
}
