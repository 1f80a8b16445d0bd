//! 5.x timer messages, the pure part: which messages are timers and when they are due (as
//! Apache RocketMQ 5's `HookUtils.transformTimerMessage`), and the stages that hold them until
//! then. The delivery that moves records from stage to stage is the delay levels' own
//! (`shard/schedule_delivery.rs`): a stage is a queue with one fixed delay, so its records fall
//! due in store order and its task only looks at its head, as a delay level's does.
//!
//! **Which messages.** One with `TIMER_DELAY_SEC`, else `TIMER_DELAY_MS`, else
//! `TIMER_DELIVER_MS` (what the 5.x client's `setDelayTimeSec`, `setDelayTimeMs`,
//! `setDeliverTimeMs` write) and no `DELAY` level (a level wins, its timer properties are
//! removed), not already a timer record (`TIMER_OUT_MS` set). Due in the past: stored as it
//! is. Further ahead than `timerMaxDelaySec`: refused. Otherwise, as Apache, `TIMER_OUT_MS` is
//! the start of the precision slot before the asked time (`deliverMs` rounded down to
//! `timerPrecisionMs`, one slot less when it is a multiple), and the message is delivered when
//! that slot ends: at `TIMER_OUT_MS + timerPrecisionMs`, never before the asked time and less
//! than one precision after it.
//!
//! **Stages** (Apache has one timer wheel of slots over a timer log; ringmq keeps the records
//! in the commit log and their consume queues and needs no second file). Each stage is a queue
//! of `rmq_sys_wheel_timer` with a fixed hop, counted in units of the precision `p`:
//! - *upper* stages hold `j·16^k·p` (k ≥ 1, j in 1..=15): a record waiting longer than `16p`
//!   goes to the largest that does not pass its due time, and when its hop is over it is
//!   placed again by what is left; each hop takes away one base-16 digit of the wait, so a
//!   record hops at most once per digit (3 days at 1 s: 5 hops; up to 16 s: one);
//! - *final* stages hold waits of at most `j·p` (j in 1..=16): their hop ends exactly at the
//!   due time (no later than store time + `j·p`), so one queue's records are due in store
//!   order to within one precision, which bounds how long a head due later holds the others.
//!
//! A hop's end is the record's consume-queue tagsCode, from its store time and stage (and, in a
//! final stage, its `TIMER_OUT_MS`): the same at append and at recovery. What is in memory per
//! pending timer is its consume-queue entry, as for every stored record.

use crate::record::{
    find_properties, find_property, format_properties, parse_properties, Message, RecordView,
};
use crate::schedule::property_name::{REAL_QID, REAL_TOPIC};
use crate::schedule::{asked_delay, real_queue, set_property, stored_again, ScheduleError};

/// Apache's `TimerMessageStore.TIMER_TOPIC`: where timer messages wait.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

/// Property names of timers (`MessageConst`).
pub mod property_name {
    /// `PROPERTY_TIMER_DELIVER_MS`: when to deliver, ms since the epoch.
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    /// `PROPERTY_TIMER_DELAY_SEC`: deliver this many seconds after the broker got it.
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    /// `PROPERTY_TIMER_DELAY_MS`.
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    /// `PROPERTY_TIMER_OUT_MS`: the precision slot the broker delivers it after.
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    /// `PROPERTY_TIMER_ENQUEUE_MS`: when the broker began holding it.
    pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
    /// `PROPERTY_TIMER_DEQUEUE_MS`: when the broker delivered it.
    pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
    /// `PROPERTY_TIMER_DEL_UNIQKEY`: a 5.x cancel of a pending timer (POP's); not built.
    pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
}
use property_name::*;

/// Apache's default `timerPrecisionMs`.
pub const TIMER_PRECISION_MS_DEFAULT: u64 = 1000;
/// The precisions Apache's `setTimerPrecisionMs` rounds a configured value down to.
pub const TIMER_PRECISIONS_MS: [u64; 4] = [100, 200, 500, 1000];
/// Apache's default `timerMaxDelaySec`: 3 days.
pub const TIMER_MAX_DELAY_SEC_DEFAULT: u64 = 3 * 24 * 3600;
/// Longest `timerMaxDelaySec` accepted (10 years, as the delay levels' `DELAY_MS_MAX`): due
/// times stay far inside the i64 milliseconds tagsCode holds, and the stages below cover it.
pub const TIMER_MAX_DELAY_SEC_MAX: u64 = 3650 * 24 * 3600;
/// Digits of a wait in units of the precision: each upper stage is one digit's value.
const STAGE_RADIX: u64 = 16;
/// Final stages: waits up to `16p`, one queue per whole precision.
const FINAL_STAGES: usize = STAGE_RADIX as usize;
/// Upper digits: 16^9 · 100 ms is more than `TIMER_MAX_DELAY_SEC_MAX`, so 8 digits above the
/// final stages hold any wait at any precision.
const UPPER_DIGITS_MAX: u32 = 8;
/// Upper stages per digit (values 1..=15).
const UPPER_PER_DIGIT: usize = STAGE_RADIX as usize - 1;
/// Every stage queue there may be: one delivery task per shard each.
pub const TIMER_STAGES_MAX: usize = FINAL_STAGES + UPPER_DIGITS_MAX as usize * UPPER_PER_DIGIT;

/// Why a message's timer is refused (each is Apache's `WHEEL_TIMER_*` status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimerError {
    /// `WHEEL_TIMER_MSG_ILLEGAL` (a property that is not a number, or too far ahead).
    #[error("timer message illegal, the delay time should not be bigger than the max delay {max_delay_ms}ms; or if set del msg, the delay time should be bigger than the current time")]
    Illegal { max_delay_ms: u64 },
    /// `WHEEL_TIMER_NOT_ENABLE`.
    #[error("accurate timer message is not enabled, timerWheelEnable is false")]
    NotEnabled,
}

/// The timer keys of broker.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerConfig {
    /// `timerWheelEnable`: a timer message is refused when off.
    pub enabled: bool,
    /// `timerPrecisionMs`, one of [`TIMER_PRECISIONS_MS`].
    precision_ms: u64,
    /// `timerMaxDelaySec`.
    pub max_delay_sec: u64,
}

impl Default for TimerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            precision_ms: TIMER_PRECISION_MS_DEFAULT,
            max_delay_sec: TIMER_MAX_DELAY_SEC_DEFAULT,
        }
    }
}

/// Where a placed timer record waits: its stage queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage(pub usize);

impl TimerConfig {
    /// Sets `timerPrecisionMs` as Apache's setter does: down to the next of 100, 200, 500,
    /// 1000 (100 below 200, 1000 from 1000 up).
    pub fn set_precision_ms(&mut self, asked: u64) {
        self.precision_ms = TIMER_PRECISIONS_MS
            .iter()
            .rev()
            .find(|p| asked >= **p)
            .copied()
            .unwrap_or(TIMER_PRECISIONS_MS[0]);
    }

    pub fn precision_ms(&self) -> u64 {
        self.precision_ms
    }

    fn max_delay_ms(&self) -> u64 {
        self.max_delay_sec.min(TIMER_MAX_DELAY_SEC_MAX) * 1000
    }

    /// How many stage queues waits up to `timerMaxDelaySec` use (a delivery task each).
    pub fn stages_used(&self) -> usize {
        let units = self.max_delay_ms() / self.precision_ms;
        let digits = (1..=UPPER_DIGITS_MAX)
            .take_while(|k| STAGE_RADIX.pow(*k) <= units)
            .count();
        FINAL_STAGES + digits * UPPER_PER_DIGIT
    }

    /// The hop of `stage`: its fixed delay (an upper stage) or the most a record waits in it
    /// (a final one). `None` for no such stage.
    pub fn stage_delay_ms(&self, stage: usize) -> Option<u64> {
        if stage < FINAL_STAGES {
            return Some((stage as u64 + 1) * self.precision_ms);
        }
        let upper = stage - FINAL_STAGES;
        let digit = upper / UPPER_PER_DIGIT + 1;
        if digit > UPPER_DIGITS_MAX as usize {
            return None;
        }
        let value = (upper % UPPER_PER_DIGIT) as u64 + 1;
        Some(value * STAGE_RADIX.pow(digit as u32) * self.precision_ms)
    }

    /// The stage for a record that is due `wait_ms` (> 0) from now.
    fn stage_for(&self, wait_ms: u64) -> Stage {
        let p = self.precision_ms;
        if wait_ms <= FINAL_STAGES as u64 * p {
            return Stage((wait_ms.div_ceil(p).max(1) - 1) as usize);
        }
        let units = wait_ms / p;
        let digit = units.ilog(STAGE_RADIX).min(UPPER_DIGITS_MAX);
        let value = (units / STAGE_RADIX.pow(digit)).min(STAGE_RADIX - 1);
        Stage(FINAL_STAGES + (digit as usize - 1) * UPPER_PER_DIGIT + value as usize - 1)
    }

    /// When a record whose `TIMER_OUT_MS` is `out_ms` is due: at the end of that slot.
    fn due_ms(&self, out_ms: i64) -> i64 {
        out_ms.saturating_add(self.precision_ms as i64)
    }

    /// A record's consume-queue tagsCode in the timer topic: when its hop ends. `None` for
    /// other topics (their tags decide).
    pub fn tags_code(
        &self,
        topic: &str,
        queue_id: i32,
        store_timestamp_ms: i64,
        properties: &str,
    ) -> Option<i64> {
        if topic != TIMER_TOPIC {
            return None;
        }
        let stage = usize::try_from(queue_id).unwrap_or(0);
        let delay = self.stage_delay_ms(stage).unwrap_or(self.precision_ms) as i64;
        let hop_end = store_timestamp_ms.saturating_add(delay);
        if stage >= FINAL_STAGES {
            return Some(hop_end);
        }
        let due = find_property(properties, TIMER_OUT_MS)
            .and_then(|out| out.parse::<i64>().ok())
            .map_or(hop_end, |out| self.due_ms(out));
        Some(due.min(hop_end))
    }

    /// Rewrites `message` into its first timer record if it is a timer message due later than
    /// `now_ms` (the caller checked it is neither a prepared nor a rolled-back transaction
    /// message). Returns the stage it waits in, `None` when it is stored as it is.
    pub fn place(&self, message: &mut Message, now_ms: i64) -> Result<Option<Stage>, TimerError> {
        if message.topic == TIMER_TOPIC {
            return Ok(None);
        }
        let properties = std::str::from_utf8(&message.properties).unwrap_or("");
        let timer_names = [TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS];
        // One scan for what every message is checked for (a plain send asks for no timer).
        let [deliver_at, delay_sec, delay_ms, out] = find_properties(
            properties,
            [
                TIMER_DELIVER_MS,
                TIMER_DELAY_SEC,
                TIMER_DELAY_MS,
                TIMER_OUT_MS,
            ],
        );
        if (deliver_at, delay_sec, delay_ms) == (None, None, None) || out.is_some() {
            return Ok(None);
        }
        let mut pairs = parse_properties(properties);
        if asked_delay(properties).is_ok_and(|level| level.is_some()) {
            // A delay level wins; Apache drops the timer properties.
            pairs.retain(|(name, _)| !timer_names.contains(&name.as_str()));
            message.properties = format_pairs(&pairs);
            return Ok(None);
        }
        if !self.enabled {
            return Err(TimerError::NotEnabled);
        }
        let illegal = TimerError::Illegal {
            max_delay_ms: self.max_delay_sec * 1000,
        };
        let number = |value: Option<&str>| value.map(|v| v.parse::<i64>());
        let deliver_ms = match (number(delay_sec), number(delay_ms), number(deliver_at)) {
            (Some(sec), _, _) => sec
                .ok()
                .map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
            (None, Some(ms), _) => ms.ok().map(|ms| now_ms.saturating_add(ms)),
            (None, None, Some(at)) => at.ok(),
            (None, None, None) => unreachable!("a timer property is there"),
        }
        .ok_or(illegal.clone())?;
        if deliver_ms <= now_ms {
            if find_property(properties, TIMER_DEL_UNIQKEY).is_some() {
                return Err(illegal);
            }
            return Ok(None);
        }
        if (deliver_ms - now_ms) as u64 > self.max_delay_sec * 1000 {
            return Err(illegal);
        }
        let p = self.precision_ms as i64;
        let out_ms = if deliver_ms % p == 0 {
            deliver_ms - p
        } else {
            deliver_ms / p * p
        };
        let (out, queue) = (out_ms.to_string(), message.queue_id.to_string());
        set_property(&mut pairs, TIMER_OUT_MS, &out);
        set_property(&mut pairs, REAL_TOPIC, &message.topic);
        set_property(&mut pairs, REAL_QID, &queue);
        message.properties = format_pairs(&pairs);
        message.topic = TIMER_TOPIC.to_owned();
        let stage = self.stage_for((self.due_ms(out_ms) - now_ms).max(1) as u64);
        message.queue_id = stage.0 as i32;
        Ok(Some(stage))
    }

    /// What a timer record whose hop ended at `now_ms` becomes: when due, the message for its
    /// real queue (Apache's `convertMessage`: REAL_TOPIC / REAL_QID removed, TIMER_DEQUEUE_MS
    /// set); otherwise the same record placed again by what is left of its wait. Both carry
    /// TIMER_ENQUEUE_MS, the store time of its first timer record.
    pub fn next_hop(&self, record: &RecordView, now_ms: i64) -> Result<Message, HopError> {
        let out_ms: i64 = record
            .property(TIMER_OUT_MS)
            .and_then(|out| out.parse().ok())
            .ok_or(HopError::Missing(TIMER_OUT_MS))?;
        let mut pairs = parse_properties(record.properties());
        if !pairs.iter().any(|(name, _)| name == TIMER_ENQUEUE_MS) {
            let first = record.store_timestamp_ms().to_string();
            pairs.push((TIMER_ENQUEUE_MS.to_owned(), first));
        }
        let wait_ms = self.due_ms(out_ms) - now_ms;
        let (topic, queue_id) = if wait_ms <= 0 {
            if record.property(TIMER_DEL_UNIQKEY).is_some() {
                // Apache's doPut never stores a cancel in the real queue either.
                return Err(HopError::Cancel);
            }
            let real = real_queue(record)?;
            pairs.retain(|(name, _)| name != REAL_TOPIC && name != REAL_QID);
            set_property(&mut pairs, TIMER_DEQUEUE_MS, &now_ms.to_string());
            real
        } else {
            let stage = self.stage_for(wait_ms as u64);
            (TIMER_TOPIC.to_owned(), stage.0 as i32)
        };
        Ok(stored_again(record, topic, queue_id, format_pairs(&pairs)))
    }
}

/// Why a timer record cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HopError {
    #[error("timer record has no valid {0} property")]
    Missing(&'static str),
    #[error(transparent)]
    Real(#[from] ScheduleError),
    #[error("a timer cancel (TIMER_DEL_UNIQKEY) is not delivered")]
    Cancel,
}

fn format_pairs(pairs: &[(String, String)]) -> bytes::Bytes {
    format_properties(pairs.iter().map(|(n, v)| (&**n, &**v))).into()
}

#[cfg(test)]
#[path = "timer_tests.rs"]
mod tests;
