//! Text mqadmin prints that needs Java's rules: local date-times (`UtilAll`), truncated
//! columns (`frontStringAtLeast`), and client version names (`MQVersion.getVersionDesc`).

/// A local date-time, as Java's default time zone (the TZ environment, else /etc/localtime)
/// and libc's agree.
struct LocalTime {
    year: i32,
    month: i32,
    day: i32,
    hour: i32,
    minute: i32,
    second: i32,
    millis: i64,
}

fn local_time(epoch_ms: i64) -> Option<LocalTime> {
    let secs = libc::time_t::try_from(epoch_ms.div_euclid(1000)).ok()?;
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let filled = unsafe { libc::localtime_r(&secs, &mut tm) };
    if filled.is_null() {
        return None;
    }
    Some(LocalTime {
        year: tm.tm_year + 1900,
        month: tm.tm_mon + 1,
        day: tm.tm_mday,
        hour: tm.tm_hour,
        minute: tm.tm_min,
        second: tm.tm_sec,
        millis: epoch_ms.rem_euclid(1000),
    })
}

/// `UtilAll.timeMillisToHumanString2`: `2024-01-31 12:00:00,123`.
pub fn human_millis(epoch_ms: i64) -> String {
    match local_time(epoch_ms) {
        Some(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
            t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
        ),
        None => epoch_ms.to_string(),
    }
}

/// `UtilAll.formatDate(date, "yyyy-MM-dd HH:mm:ss")`.
pub fn date_time(epoch_ms: i64) -> String {
    match local_time(epoch_ms) {
        Some(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        ),
        None => epoch_ms.to_string(),
    }
}

/// `UtilAll.frontStringAtLeast`: at most the first `size` characters.
pub fn front(text: &str, size: usize) -> &str {
    match text.char_indices().nth(size) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// The `MQVersion.Version` names before the regular `Vx_y_z_SNAPSHOT, Vx_y_z` pairs start.
const EARLY_VERSIONS: [&str; 16] = [
    "V3_0_0_SNAPSHOT",
    "V3_0_0_ALPHA1",
    "V3_0_0_BETA1",
    "V3_0_0_BETA2",
    "V3_0_0_BETA3",
    "V3_0_0_BETA4",
    "V3_0_0_BETA5",
    "V3_0_0_BETA6_SNAPSHOT",
    "V3_0_0_BETA6",
    "V3_0_0_BETA7_SNAPSHOT",
    "V3_0_0_BETA7",
    "V3_0_0_BETA8_SNAPSHOT",
    "V3_0_0_BETA8",
    "V3_0_0_BETA9_SNAPSHOT",
    "V3_0_0_BETA9",
    "V3_0_0_FINAL",
];

/// After [`EARLY_VERSIONS`], the enum lists a snapshot and a release for each patch of each
/// (major, minor); these are the patch ranges, in enum order (RocketMQ 5.3.3's `MQVersion`);
/// after 5.9.9 comes only HIGHER_VERSION.
const VERSION_RUNS: [(
    u32,
    std::ops::RangeInclusive<u32>,
    std::ops::RangeInclusive<u32>,
); 5] = [
    (3, 0..=0, 1..=15),
    (3, 1..=2, 0..=9),
    (3, 3..=9, 1..=9),
    (4, 0..=9, 0..=9),
    (5, 0..=9, 0..=9),
];

/// `MQVersion.getVersionDesc`: the enum name of a version ordinal; past the end,
/// `HIGHER_VERSION`.
pub fn version_desc(ordinal: i32) -> String {
    let Ok(mut left) = usize::try_from(ordinal) else {
        return format!("UNKNOWN({ordinal})");
    };
    if let Some(name) = EARLY_VERSIONS.get(left) {
        return (*name).to_owned();
    }
    left -= EARLY_VERSIONS.len();
    for (major, minors, patches) in VERSION_RUNS {
        for minor in minors {
            for patch in patches.clone() {
                match left {
                    0 => return format!("V{major}_{minor}_{patch}_SNAPSHOT"),
                    1 => return format!("V{major}_{minor}_{patch}"),
                    _ => left -= 2,
                }
            }
        }
    }
    "HIGHER_VERSION".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_match_java_ordinals() {
        // Ordinals from RocketMQ 5.3.3's MQVersion.Version.
        for (ordinal, name) in [
            (0, "V3_0_0_SNAPSHOT"),
            (15, "V3_0_0_FINAL"),
            (16, "V3_0_1_SNAPSHOT"),
            (86, "V3_3_1_SNAPSHOT"),
            (212, "V4_0_0_SNAPSHOT"),
            (401, "V4_9_4"),
            (479, "V5_3_3"),
            (611, "V5_9_9"),
            (612, "HIGHER_VERSION"),
            (5000, "HIGHER_VERSION"),
        ] {
            assert_eq!(version_desc(ordinal), name, "{ordinal}");
        }
        assert_eq!(version_desc(-1), "UNKNOWN(-1)");
    }

    #[test]
    fn front_keeps_at_most_n_characters() {
        assert_eq!(front("broker-a", 32), "broker-a");
        assert_eq!(front("abcdef", 3), "abc");
        assert_eq!(front("ééé", 2), "éé");
    }

    #[test]
    fn times_have_java_layouts() {
        let text = human_millis(1_700_000_000_123);
        assert_eq!(text.len(), "2023-11-14 22:13:20,123".len(), "{text}");
        assert!(text.ends_with(",123"), "{text}");
        assert!(text.starts_with("2023-11-1"), "{text}");
        assert_eq!(date_time(1_700_000_000_123), text[..19]);
    }
}
