//! What the check-back does with one undecided transaction when it is due, as Apache's
//! `TransactionalMessageServiceImpl.check` decides it for a half message: discard it once it
//! was checked `transactionCheckMax` times (`needDiscard`) or is older than the commit log is
//! kept (`needSkip`), wait while it is younger than its immunity (`transactionTimeOut` or its
//! `CHECK_IMMUNITY_TIME_IN_SECONDS`), else check it once more. A pure function of the newest
//! copy's properties, its birth and the clock.

use super::message::{check_immunity_ms, check_times};

/// The rules a decision follows, from the broker's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckRules {
    /// `transactionTimeOut`.
    pub timeout_ms: i64,
    /// `transactionCheckMax`.
    pub check_max: i32,
    /// `fileReservedTime`: a half older than this has outlived the log that holds it.
    pub file_reserved_ms: i64,
}

/// Why a half is discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardReason {
    /// Checked `transactionCheckMax` times without an answer that decides.
    CheckedTooOften,
    /// Born longer ago than `fileReservedTime`.
    OutlivedTheLog,
}

/// What to do with a due transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckDecision {
    /// Not before this wall-clock time (ms): it is still immune.
    NotBefore(i64),
    /// Store a copy with `TRANSACTION_CHECK_TIMES` = `times` and ask its producer.
    Check { times: i32 },
    /// Move it to `TRANS_CHECK_MAX_TIME_TOPIC`; it is resolved.
    Discard(DiscardReason),
}

/// The decision for the newest copy of a transaction (`properties`, `born_ms`) at `now_ms`.
pub fn decide(properties: &str, born_ms: i64, now_ms: i64, rules: &CheckRules) -> CheckDecision {
    let times = check_times(properties);
    // Apache counts the first check as 1 and discards instead of the check that would exceed
    // the maximum; a count that does not parse counts as none.
    if times.is_some_and(|n| n >= rules.check_max) {
        return CheckDecision::Discard(DiscardReason::CheckedTooOften);
    }
    let age_ms = now_ms.saturating_sub(born_ms);
    if age_ms > rules.file_reserved_ms {
        return CheckDecision::Discard(DiscardReason::OutlivedTheLog);
    }
    let immunity_ms = check_immunity_ms(properties, rules.timeout_ms);
    // A birth in the future (a producer's clock ahead) is checked now, as Apache does.
    if (0..=immunity_ms).contains(&age_ms) {
        return CheckDecision::NotBefore(born_ms.saturating_add(immunity_ms).saturating_add(1));
    }
    CheckDecision::Check {
        times: times.map_or(1, |n| n.saturating_add(1).max(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::transaction::message::property_name::{
        CHECK_IMMUNITY_TIME_IN_SECONDS, TRANSACTION_CHECK_TIMES,
    };
    use crate::protocol::message::record::format_properties;

    const RULES: CheckRules = CheckRules {
        timeout_ms: 6_000,
        check_max: 3,
        file_reserved_ms: 72 * 3_600_000,
    };

    fn checked(times: &str) -> String {
        format_properties([(TRANSACTION_CHECK_TIMES, times)])
    }

    #[test]
    fn a_half_is_first_checked_after_the_timeout_as_check_one() {
        let born = 100_000;
        assert_eq!(
            decide("", born, born + 6_000, &RULES),
            CheckDecision::NotBefore(born + 6_001)
        );
        assert_eq!(
            decide("", born, born + 6_001, &RULES),
            CheckDecision::Check { times: 1 }
        );
    }

    #[test]
    fn checks_count_up_to_the_maximum_then_the_half_is_discarded() {
        let (born, now) = (0, 60_000);
        assert_eq!(
            decide(&checked("1"), born, now, &RULES),
            CheckDecision::Check { times: 2 }
        );
        assert_eq!(
            decide(&checked("2"), born, now, &RULES),
            CheckDecision::Check { times: 3 }
        );
        assert_eq!(
            decide(&checked("3"), born, now, &RULES),
            CheckDecision::Discard(DiscardReason::CheckedTooOften)
        );
        assert_eq!(
            decide(&checked("x"), born, now, &RULES),
            CheckDecision::Check { times: 1 }
        );
    }

    #[test]
    fn the_immunity_property_moves_the_first_check() {
        let born = 0;
        let later = format_properties([(CHECK_IMMUNITY_TIME_IN_SECONDS, "20")]);
        assert_eq!(
            decide(&later, born, 10_000, &RULES),
            CheckDecision::NotBefore(20_001)
        );
        assert_eq!(
            decide(&later, born, 20_001, &RULES),
            CheckDecision::Check { times: 1 }
        );
        let sooner = format_properties([(CHECK_IMMUNITY_TIME_IN_SECONDS, "1")]);
        assert_eq!(
            decide(&sooner, born, 1_001, &RULES),
            CheckDecision::Check { times: 1 }
        );
    }

    #[test]
    fn a_half_from_the_future_is_checked_and_one_older_than_the_log_discarded() {
        assert_eq!(
            decide("", 50_000, 10_000, &RULES),
            CheckDecision::Check { times: 1 }
        );
        assert_eq!(
            decide("", 0, RULES.file_reserved_ms + 1, &RULES),
            CheckDecision::Discard(DiscardReason::OutlivedTheLog)
        );
    }
}
