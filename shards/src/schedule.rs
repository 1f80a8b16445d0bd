//! Delay levels (scheduled messages), the pure part: the level table (`messageDelayLevel`),
//! turning a message that asks for `DELAY=n` into its schedule record, and turning a due
//! schedule record back into the message for its real queue. The delivery that moves records
//! from one to the other when due is `Shard`'s (`shard/schedule_delivery.rs`).
//!
//! As Apache RocketMQ 4.9 (`CommitLog.asyncPutMessage`, `ScheduleMessageService`): a message
//! with DELAY=n>0 is stored in `SCHEDULE_TOPIC_XXXX` queue `min(n, levels) - 1`, with DELAY
//! clamped to the last level and REAL_TOPIC / REAL_QID holding where it goes; its consume
//! queue tagsCode is its delivery time (store time + the level's delay). When due, it is
//! stored again in the real queue with DELAY removed and tagsCode from its TAGS; REAL_TOPIC and
//! REAL_QID stay, as Apache's `messageTimeup` leaves them.

use crate::record::{
    find_property, format_properties, parse_properties, Message, RecordView, TransactionType,
};
use std::fmt;

/// The system topic holding scheduled messages, one queue per delay level.
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// The topic of prepared transaction messages; Apache refuses to deliver a scheduled message
/// there (it would be a half message no check ever resolves).
pub use crate::transaction::TRANS_HALF_TOPIC;
/// Apache's default `messageDelayLevel`.
pub const DELAY_LEVELS_DEFAULT: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";
/// Most delay levels. Each level is one schedule queue and one delivery task per shard, so a
/// mistaken value (a pasted list) must not become thousands of tasks; 64 is over three times
/// Apache's 18.
pub const DELAY_LEVELS_MAX: usize = 64;
/// Longest delay of a level (10 years): store time + delay must stay far inside the i64
/// millisecond timestamp that tagsCode holds.
pub const DELAY_MS_MAX: u64 = 3650 * 24 * 3600 * 1000;
/// Delay used for a schedule record of a queue with no level (the table shrank between
/// runs): Apache's `computeDeliverTimestamp` falls back to one second.
const DELAY_MS_UNKNOWN_LEVEL: u64 = 1000;

/// Property names of scheduling (`MessageConst`).
pub mod property_name {
    /// `PROPERTY_DELAY_TIME_LEVEL`: the delay level a producer asks for.
    pub const DELAY: &str = "DELAY";
    /// `PROPERTY_REAL_TOPIC`: where a scheduled message goes when due.
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    /// `PROPERTY_REAL_QUEUE_ID`.
    pub const REAL_QID: &str = "REAL_QID";
}
use property_name::{DELAY, REAL_QID, REAL_TOPIC};

/// Why `messageDelayLevel` does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelayLevelError {
    #[error("no delay level given")]
    Empty,
    #[error("{count} delay levels, more than {DELAY_LEVELS_MAX}")]
    TooMany { count: usize },
    #[error("level {level} ({value:?}): {reason}")]
    BadLevel {
        level: usize,
        value: String,
        reason: &'static str,
    },
}

/// Why a message cannot be scheduled or delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("property DELAY={0:?} is not an integer")]
    BadDelay(String),
    #[error("scheduled message has no valid {0} property")]
    MissingRealQueue(&'static str),
    #[error("scheduled message for {TRANS_HALF_TOPIC} is not delivered")]
    HalfTopic,
}

/// The delay of each level (level n is index n-1), parsed from `messageDelayLevel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelayLevels {
    /// As configured, for reporting the configuration back.
    text: String,
    delays_ms: Vec<u64>,
}

impl Default for DelayLevels {
    fn default() -> Self {
        Self::parse(DELAY_LEVELS_DEFAULT).expect("Apache's default parses")
    }
}

impl fmt::Display for DelayLevels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for DelayLevels {
    type Err = DelayLevelError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl DelayLevels {
    /// Parses Apache's format: levels separated by blanks, each a whole number and a unit
    /// `s`, `m`, `h` or `d` ("1s 5s 10s 30s 1m ...").
    pub fn parse(text: &str) -> Result<Self, DelayLevelError> {
        let values: Vec<&str> = text.split_whitespace().collect();
        if values.is_empty() {
            return Err(DelayLevelError::Empty);
        }
        if values.len() > DELAY_LEVELS_MAX {
            return Err(DelayLevelError::TooMany {
                count: values.len(),
            });
        }
        let delays_ms = values
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let bad = |reason| DelayLevelError::BadLevel {
                    level: i + 1,
                    value: (*value).to_owned(),
                    reason,
                };
                // The unit is the last character (a multi-byte one is no unit, not a panic).
                let unit_at = value.char_indices().last().map_or(0, |(i, _)| i);
                let (number, unit_ms) = match value.split_at(unit_at) {
                    (n, "s") => (n, 1000),
                    (n, "m") => (n, 60 * 1000),
                    (n, "h") => (n, 3600 * 1000),
                    (n, "d") => (n, 24 * 3600 * 1000),
                    _ => return Err(bad("the unit must be s, m, h or d")),
                };
                let number: u64 = number
                    .parse()
                    .map_err(|_| bad("not a whole number before the unit"))?;
                number
                    .checked_mul(unit_ms)
                    .filter(|ms| *ms <= DELAY_MS_MAX)
                    .ok_or_else(|| bad("longer than 10 years"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: text.to_owned(),
            delays_ms,
        })
    }

    /// The highest level (levels are 1..=count).
    pub fn count(&self) -> usize {
        self.delays_ms.len()
    }

    /// The delay of `level` (1-based), if there is such a level.
    pub fn delay_ms(&self, level: usize) -> Option<u64> {
        level
            .checked_sub(1)
            .and_then(|i| self.delays_ms.get(i))
            .copied()
    }

    /// A record's consume-queue tagsCode: in the schedule topic its delivery time, elsewhere
    /// the hash of its tags (`tags_hash`).
    pub fn tags_code(
        &self,
        topic: &str,
        queue_id: i32,
        store_timestamp_ms: i64,
        tags_hash: i64,
    ) -> i64 {
        if topic == SCHEDULE_TOPIC {
            self.deliver_at_ms(queue_id, store_timestamp_ms)
        } else {
            tags_hash
        }
    }

    /// When a schedule record of queue `queue_id` stored at `store_timestamp_ms` is due.
    pub fn deliver_at_ms(&self, queue_id: i32, store_timestamp_ms: i64) -> i64 {
        let delay = usize::try_from(queue_id)
            .ok()
            .and_then(|q| self.delay_ms(q + 1))
            .unwrap_or(DELAY_MS_UNKNOWN_LEVEL);
        store_timestamp_ms.saturating_add(delay as i64)
    }

    /// Rewrites `message` into its schedule record if it asks for DELAY=n>0 and is neither a
    /// prepared nor a rolled-back transaction message (as Apache). Returns the level it was
    /// scheduled at, clamped to the highest.
    pub fn schedule(&self, message: &mut Message) -> Result<Option<usize>, ScheduleError> {
        if !matches!(
            TransactionType::of(message.sys_flag),
            TransactionType::NotType | TransactionType::Commit
        ) {
            return Ok(None);
        }
        let properties = std::str::from_utf8(&message.properties).unwrap_or("");
        let Some(asked) = asked_delay(properties)? else {
            return Ok(None);
        };
        let level = (asked as usize).min(self.count());
        let (level_text, queue_text) = (level.to_string(), message.queue_id.to_string());
        let mut pairs = parse_properties(properties);
        set_property(&mut pairs, DELAY, &level_text);
        set_property(&mut pairs, REAL_TOPIC, &message.topic);
        set_property(&mut pairs, REAL_QID, &queue_text);
        message.properties = format_properties(pairs.iter().map(|(n, v)| (&**n, &**v))).into();
        message.topic = SCHEDULE_TOPIC.to_owned();
        message.queue_id = level as i32 - 1;
        Ok(Some(level))
    }
}

/// The delay level a message's `properties` ask for: `Some(n)` for DELAY=n>0, `None` for no
/// DELAY or n≤0 (not delayed, as Apache), an error for a DELAY that is not an integer.
pub fn asked_delay(properties: &str) -> Result<Option<i32>, ScheduleError> {
    let Some(delay) = find_property(properties, DELAY) else {
        return Ok(None);
    };
    let asked: i32 = delay
        .parse()
        .map_err(|_| ScheduleError::BadDelay(delay.to_owned()))?;
    Ok((asked > 0).then_some(asked))
}

pub(crate) fn set_property(pairs: &mut Vec<(String, String)>, name: &str, value: &str) {
    match pairs.iter_mut().find(|(n, _)| n == name) {
        Some(pair) => pair.1 = value.to_owned(),
        None => pairs.push((name.to_owned(), value.to_owned())),
    }
}

/// The message a due schedule record delivers (Apache's `messageTimeup`): same body, flag,
/// sysFlag, born time and host, reconsume times and properties, DELAY removed, in the queue
/// REAL_TOPIC / REAL_QID name. Its tagsCode follows from TAGS when it is stored.
pub fn restore(record: &RecordView) -> Result<Message, ScheduleError> {
    let (topic, queue_id) = real_queue(record)?;
    let properties = format_properties(
        parse_properties(record.properties())
            .iter()
            .filter(|(name, _)| name != DELAY)
            .map(|(n, v)| (&**n, &**v)),
    );
    Ok(stored_again(record, topic, queue_id, properties.into()))
}

/// Where a held record (a schedule or a timer record) goes when due: REAL_TOPIC / REAL_QID,
/// never the half topic.
pub(crate) fn real_queue(record: &RecordView) -> Result<(String, i32), ScheduleError> {
    let topic = record
        .property(REAL_TOPIC)
        .ok_or(ScheduleError::MissingRealQueue(REAL_TOPIC))?;
    let queue_id: i32 = record
        .property(REAL_QID)
        .and_then(|q| q.parse().ok())
        .filter(|q| *q >= 0)
        .ok_or(ScheduleError::MissingRealQueue(REAL_QID))?;
    if topic == TRANS_HALF_TOPIC {
        return Err(ScheduleError::HalfTopic);
    }
    Ok((topic.to_owned(), queue_id))
}

/// The message a held record becomes in `topic` / `queue_id` with `properties`: the same body,
/// flag, sysFlag, born time and host, and reconsume times.
pub(crate) fn stored_again(
    record: &RecordView,
    topic: String,
    queue_id: i32,
    properties: bytes::Bytes,
) -> Message {
    Message {
        topic,
        queue_id,
        flag: record.flag(),
        sys_flag: record.sys_flag(),
        born_timestamp_ms: record.born_timestamp_ms(),
        born_host: record.born_host(),
        reconsume_times: record.reconsume_times(),
        prepared_transaction_offset: 0,
        body: record.body(),
        properties,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apaches_default_has_18_levels_up_to_2h() {
        let levels = DelayLevels::default();
        assert_eq!(levels.count(), 18);
        assert_eq!(levels.delay_ms(1), Some(1000));
        assert_eq!(levels.delay_ms(5), Some(60_000));
        assert_eq!(levels.delay_ms(18), Some(2 * 3600 * 1000));
        assert_eq!(levels.delay_ms(0), None);
        assert_eq!(levels.delay_ms(19), None);
        assert_eq!(levels.to_string(), DELAY_LEVELS_DEFAULT);
        assert_eq!(levels.deliver_at_ms(1, 100), 5100);
        assert_eq!(levels.deliver_at_ms(40, 100), 1100, "unknown level: 1 s");
    }

    #[test]
    fn units_and_errors() {
        let levels = DelayLevels::parse(" 2d  3h\t0s 7m ").unwrap();
        let ms: Vec<_> = (1..=4).map(|l| levels.delay_ms(l).unwrap()).collect();
        assert_eq!(ms, [2 * 86_400_000, 3 * 3_600_000, 0, 420_000]);
        assert_eq!(DelayLevels::parse("  "), Err(DelayLevelError::Empty));
        let many = vec!["1s"; DELAY_LEVELS_MAX + 1].join(" ");
        assert!(matches!(
            DelayLevels::parse(&many),
            Err(DelayLevelError::TooMany { count: 65 })
        ));
        for (text, level) in [("1s 5x", 2), ("s", 1), ("1s -1s", 2), ("99999999d", 1)] {
            match DelayLevels::parse(text) {
                Err(DelayLevelError::BadLevel { level: l, .. }) => assert_eq!(l, level, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(
            DelayLevels::parse("1é").is_err(),
            "a multi-byte unit is no unit"
        );
    }
}
