//! Retention's broker.conf keys, Apache's `MessageStoreConfig` names and defaults, kept as
//! given (GET_BROKER_CONFIG shows them so) and clamped as Apache clamps them when the store
//! reads them. What each does in ringmq, and where that differs from Apache, is in
//! docs/STORAGE.md ("Retention").

use super::{ConfigError, Origin};
use ringmq_shards::RetentionConfig;
use std::time::Duration;

/// Apache's `fileReservedTime` (72 h).
pub const FILE_RESERVED_HOURS_DEFAULT: u64 = 72;
/// Apache's `deleteWhen` ("04": Apache deletes expired files at 4 in the morning).
pub const DELETE_WHEN_DEFAULT: &str = "04";

/// The keys (units last, as in the file: hours, percent, milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionKeys {
    /// `fileReservedTime`, hours; 0 makes every sealed segment expired.
    pub file_reserved_hours: u64,
    /// `deleteWhen`: hours of the day, `;`-separated. Validated; not waited for (ringmq
    /// removes each expired segment when it expires).
    pub delete_when: String,
    /// `diskMaxUsedSpaceRatio`, percent: above it Apache removes expired files outside
    /// `deleteWhen`; ringmq always does, so it changes nothing here.
    pub disk_max_used_space_ratio_percent: u32,
    /// `diskSpaceWarningLevelRatio`, percent.
    pub disk_space_warning_level_ratio_percent: u32,
    /// `diskSpaceCleanForciblyRatio`, percent.
    pub disk_space_clean_forcibly_ratio_percent: u32,
    /// `cleanFileForciblyEnable`.
    pub clean_file_forcibly_enable: bool,
    /// `destroyMapedFileIntervalForcibly` (Apache's spelling): how long Apache lets readers
    /// hold a file it deletes. A removed segment's readers keep their descriptor, so the
    /// removal never waits for them; accepted, no effect.
    pub destroy_maped_file_interval_forcibly: Duration,
    /// `cleanResourceInterval`: how often retention looks.
    pub clean_resource_interval: Duration,
    /// `deleteCommitLogFilesInterval`: the least time between two segment removals.
    pub delete_commit_log_files_interval: Duration,
}

impl Default for RetentionKeys {
    fn default() -> Self {
        Self {
            file_reserved_hours: FILE_RESERVED_HOURS_DEFAULT,
            delete_when: DELETE_WHEN_DEFAULT.to_owned(),
            disk_max_used_space_ratio_percent: 75,
            disk_space_warning_level_ratio_percent: 90,
            disk_space_clean_forcibly_ratio_percent: 85,
            clean_file_forcibly_enable: true,
            destroy_maped_file_interval_forcibly: Duration::from_secs(120),
            clean_resource_interval: Duration::from_secs(10),
            delete_commit_log_files_interval: Duration::from_millis(100),
        }
    }
}

impl RetentionKeys {
    /// Sets the field behind `key` if it is one of these keys; `None` if it is not.
    pub(super) fn apply(&mut self, key: &str, at: &Origin<'_>) -> Option<Result<(), ConfigError>> {
        let ms = |key| {
            at.number(key, 0..=u32::MAX as u64)
                .map(Duration::from_millis)
        };
        let percent = |key| at.number(key, 0..=100u32);
        let applied = match key {
            "fileReservedTime" => at
                .number("fileReservedTime", 0..=u32::MAX as u64)
                .map(|h| self.file_reserved_hours = h),
            "deleteWhen" => parse_delete_when(at.value)
                .map(|()| self.delete_when = at.value.to_owned())
                .map_err(|reason| at.bad("deleteWhen", reason)),
            "diskMaxUsedSpaceRatio" => {
                percent("diskMaxUsedSpaceRatio").map(|p| self.disk_max_used_space_ratio_percent = p)
            }
            "diskSpaceWarningLevelRatio" => percent("diskSpaceWarningLevelRatio")
                .map(|p| self.disk_space_warning_level_ratio_percent = p),
            "diskSpaceCleanForciblyRatio" => percent("diskSpaceCleanForciblyRatio")
                .map(|p| self.disk_space_clean_forcibly_ratio_percent = p),
            "cleanFileForciblyEnable" => at
                .boolean("cleanFileForciblyEnable")
                .map(|b| self.clean_file_forcibly_enable = b),
            "destroyMapedFileIntervalForcibly" => ms("destroyMapedFileIntervalForcibly")
                .map(|d| self.destroy_maped_file_interval_forcibly = d),
            "cleanResourceInterval" => at
                .number("cleanResourceInterval", 1..=u32::MAX as u64)
                .map(|ms| self.clean_resource_interval = Duration::from_millis(ms)),
            "deleteCommitLogFilesInterval" => ms("deleteCommitLogFilesInterval")
                .map(|d| self.delete_commit_log_files_interval = d),
            _ => return None,
        };
        Some(applied)
    }

    /// What the storage engine is given: ratios clamped as Apache's `CleanCommitLogService`
    /// clamps them (warning level to 35–90 %, clean-forcibly to 30–85 %).
    pub fn store_config(&self) -> RetentionConfig {
        let clamp = |percent: u32, low: u32, high: u32| f64::from(percent.clamp(low, high)) / 100.0;
        RetentionConfig {
            file_reserved: Duration::from_secs(self.file_reserved_hours * 3600),
            clean_forcibly_enable: self.clean_file_forcibly_enable,
            clean_forcibly_ratio: clamp(self.disk_space_clean_forcibly_ratio_percent, 30, 85),
            warning_ratio: clamp(self.disk_space_warning_level_ratio_percent, 35, 90),
            check_interval: self.clean_resource_interval,
            removal_interval: self.delete_commit_log_files_interval,
        }
    }

    /// The keys as GET_BROKER_CONFIG lists them.
    pub fn conf_lines(&self) -> [(&'static str, String); 9] {
        let ms = |d: Duration| d.as_millis().to_string();
        [
            ("fileReservedTime", self.file_reserved_hours.to_string()),
            ("deleteWhen", self.delete_when.clone()),
            (
                "diskMaxUsedSpaceRatio",
                self.disk_max_used_space_ratio_percent.to_string(),
            ),
            (
                "diskSpaceWarningLevelRatio",
                self.disk_space_warning_level_ratio_percent.to_string(),
            ),
            (
                "diskSpaceCleanForciblyRatio",
                self.disk_space_clean_forcibly_ratio_percent.to_string(),
            ),
            (
                "cleanFileForciblyEnable",
                self.clean_file_forcibly_enable.to_string(),
            ),
            (
                "destroyMapedFileIntervalForcibly",
                ms(self.destroy_maped_file_interval_forcibly),
            ),
            ("cleanResourceInterval", ms(self.clean_resource_interval)),
            (
                "deleteCommitLogFilesInterval",
                ms(self.delete_commit_log_files_interval),
            ),
        ]
    }
}

/// Apache's `UtilAll.isItTimeToDo` reads each `;`-separated part as an hour of the day (and
/// fails at its first deletion check on anything else): refused here at start instead.
fn parse_delete_when(value: &str) -> Result<(), String> {
    for part in value.split(';') {
        match part.trim().parse::<u32>() {
            Ok(hour) if hour < 24 => {}
            _ => return Err(format!("{part:?} is not an hour of the day (0-23)")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(key: &str, value: &str) -> Result<RetentionKeys, ConfigError> {
        let mut keys = RetentionKeys::default();
        let at = Origin {
            origin: "broker.conf",
            value,
        };
        keys.apply(key, &at).expect("a retention key")?;
        Ok(keys)
    }

    #[test]
    fn apaches_defaults_and_clamps_reach_the_store() {
        let store = RetentionKeys::default().store_config();
        assert_eq!(store.file_reserved, Duration::from_secs(72 * 3600));
        assert_eq!(
            (store.clean_forcibly_ratio, store.warning_ratio),
            (0.85, 0.90)
        );
        assert!(store.clean_forcibly_enable);
        assert_eq!(store.check_interval, Duration::from_secs(10));
        assert_eq!(store.removal_interval, Duration::from_millis(100));
        let low = apply("diskSpaceCleanForciblyRatio", "5")
            .unwrap()
            .store_config();
        assert_eq!(low.clean_forcibly_ratio, 0.30);
        let high = apply("diskSpaceWarningLevelRatio", "99")
            .unwrap()
            .store_config();
        assert_eq!(high.warning_ratio, 0.90);
        let zero = apply("fileReservedTime", "0").unwrap().store_config();
        assert_eq!(zero.file_reserved, Duration::ZERO);
        assert!(RetentionKeys::default()
            .apply(
                "brokerRole",
                &Origin {
                    origin: "f",
                    value: "x"
                }
            )
            .is_none());
    }

    #[test]
    fn bad_values_name_their_key() {
        for (key, value) in [
            ("deleteWhen", "4am"),
            ("deleteWhen", "04;24"),
            ("deleteWhen", ""),
            ("diskMaxUsedSpaceRatio", "101"),
            ("cleanFileForciblyEnable", "yes"),
            ("cleanResourceInterval", "0"),
            ("fileReservedTime", "-1"),
        ] {
            match apply(key, value) {
                Err(ConfigError::BadValue { key: named, .. }) => assert_eq!(named, key),
                other => panic!("{key}={value}: {other:?}"),
            }
        }
        assert_eq!(
            apply("deleteWhen", "01;02;23").unwrap().delete_when,
            "01;02;23"
        );
    }
}
