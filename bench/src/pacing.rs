//! Open-loop pacing.
//!
//! An open-loop run fixes, before it starts, when every message is meant to be sent: message k
//! of a run at R msg/s is due at `start + k/R`. Producer p of P sends messages p, p+P, p+2P…
//! A send that starts late (every slot of its producer busy, or the executor behind) still has
//! its latency measured from the time it was due, so a broker stall shows up in the latency of
//! every message it delayed rather than vanishing (coordinated omission).

use std::time::{Duration, Instant};

/// When each message of one producer is due.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    start: Instant,
    /// Run-wide rate, messages per second.
    rate: u64,
    producer: u64,
    producers: u64,
}

impl Pacer {
    /// Producer `producer` of `producers`, in a run paced at `rate` messages/s from `start`.
    pub fn new(start: Instant, rate: u64, producer: u32, producers: u32) -> Self {
        assert!(rate > 0 && producer < producers);
        Self {
            start,
            rate,
            producer: u64::from(producer),
            producers: u64::from(producers),
        }
    }

    /// When this producer's `ticket`-th send is due. Integer arithmetic, so a long run does
    /// not drift.
    pub fn due(&self, ticket: u64) -> Instant {
        let message = u128::from(ticket) * u128::from(self.producers) + u128::from(self.producer);
        let nanos = message * 1_000_000_000 / u128::from(self.rate);
        self.start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_interleave_producers_at_the_run_rate() {
        let start = Instant::now();
        let rate = 1000; // one message per ms
        let a = Pacer::new(start, rate, 0, 4);
        let d = Pacer::new(start, rate, 3, 4);
        assert_eq!(a.due(0), start);
        assert_eq!(a.due(1) - start, Duration::from_millis(4));
        assert_eq!(d.due(0) - start, Duration::from_millis(3));
        assert_eq!(d.due(2) - start, Duration::from_millis(11));
    }

    #[test]
    fn due_times_do_not_drift_at_rates_that_do_not_divide_a_second() {
        let start = Instant::now();
        let pacer = Pacer::new(start, 3, 0, 1);
        // 3 msg/s: the 3 000 000th message is due at exactly 1 000 000 s.
        assert_eq!(pacer.due(3_000_000) - start, Duration::from_secs(1_000_000));
        assert_eq!(pacer.due(1) - start, Duration::from_nanos(333_333_333));
        assert_eq!(pacer.due(2) - start, Duration::from_nanos(666_666_666));
    }

    #[test]
    fn every_message_has_one_due_time_across_producers() {
        let start = Instant::now();
        let producers = 7;
        let mut all: Vec<Instant> = (0..producers)
            .flat_map(|p| {
                let pacer = Pacer::new(start, 700, p, producers);
                (0..100).map(move |t| pacer.due(t))
            })
            .collect();
        all.sort();
        for (k, due) in all.iter().enumerate() {
            let expected = Duration::from_nanos(k as u64 * 1_000_000_000 / 700);
            assert_eq!(*due - start, expected, "message {k}");
        }
    }
}
