//! What a run measured: latency in an HdrHistogram, messages and bytes, errors by response
//! code, and the same per second for the timeline. One recorder per thread and direction
//! (produce, consume), owned by that thread's executor; merged when the threads are done.

use crate::limits::{INTERVAL_LATENCY_DIGITS, LATENCY_DIGITS, LATENCY_US_MAX};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What the latency of a direction measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyKind {
    /// Send request to its response (from the time it was due, in an open-loop run).
    Send,
    /// Pull request to its response.
    Pull,
    /// The send time stamped in the body to the moment a consumer has the message.
    EndToEnd,
}

/// One second of the run.
struct Interval {
    messages: u64,
    bytes: u64,
    latency: Histogram<u64>,
}

pub struct Recorder {
    start: Instant,
    kind: LatencyKind,
    latency: Histogram<u64>,
    messages: u64,
    bytes: u64,
    errors: BTreeMap<String, u64>,
    intervals: Vec<Interval>,
    /// When the last message was counted: the end of the span throughput is measured over.
    last: Option<Instant>,
}

fn histogram(digits: u8) -> Histogram<u64> {
    Histogram::new_with_max(LATENCY_US_MAX, digits).expect("constant histogram bounds are valid")
}

fn latency_us(latency: Duration) -> u64 {
    (latency.as_micros() as u64).clamp(1, LATENCY_US_MAX)
}

impl Recorder {
    pub fn new(start: Instant, kind: LatencyKind) -> Self {
        Self {
            start,
            kind,
            latency: histogram(LATENCY_DIGITS),
            messages: 0,
            bytes: 0,
            errors: BTreeMap::new(),
            intervals: Vec::new(),
            last: None,
        }
    }

    fn interval(&mut self, at: Instant) -> &mut Interval {
        let second = at.saturating_duration_since(self.start).as_secs() as usize;
        while self.intervals.len() <= second {
            self.intervals.push(Interval {
                messages: 0,
                bytes: 0,
                latency: histogram(INTERVAL_LATENCY_DIGITS),
            });
        }
        &mut self.intervals[second]
    }

    /// `messages` messages of `bytes` body bytes done at `at`, without a latency sample.
    pub fn count(&mut self, at: Instant, messages: u64, bytes: u64) {
        self.messages += messages;
        self.bytes += bytes;
        self.last = self.last.max(Some(at));
        let interval = self.interval(at);
        interval.messages += messages;
        interval.bytes += bytes;
    }

    /// One latency sample, taken at `at`.
    pub fn latency(&mut self, at: Instant, latency: Duration) {
        let us = latency_us(latency);
        self.latency.saturating_record(us);
        self.interval(at).latency.saturating_record(us);
    }

    /// A request that failed: `kind` is the response code's name and number, or the
    /// transport's reason.
    pub fn error(&mut self, kind: String) {
        *self.errors.entry(kind).or_default() += 1;
    }

    /// When the last message was counted, `None` before the first.
    pub fn last(&self) -> Option<Instant> {
        self.last
    }

    /// Adds another thread's recorder of the same run and direction.
    pub fn merge(&mut self, other: &Recorder) {
        debug_assert_eq!(self.kind, other.kind);
        self.latency
            .add(&other.latency)
            .expect("histograms of one run have the same bounds");
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.last = self.last.max(other.last);
        for (kind, n) in &other.errors {
            *self.errors.entry(kind.clone()).or_default() += n;
        }
        for (second, theirs) in other.intervals.iter().enumerate() {
            let at = self.start + Duration::from_secs(second as u64);
            let ours = self.interval(at);
            ours.messages += theirs.messages;
            ours.bytes += theirs.bytes;
            ours.latency
                .add(&theirs.latency)
                .expect("histograms of one run have the same bounds");
        }
    }

    /// One point per second. The last second usually ran only in part: it is rated over the
    /// part that ran, and folded into the second before when that part is a sliver, whose
    /// rate would be noise.
    fn timeline(&self) -> Vec<Point> {
        let end_s = self.last.map_or(self.intervals.len() as f64, |last| {
            last.saturating_duration_since(self.start).as_secs_f64()
        });
        let mut spans: Vec<(usize, usize, f64)> = (0..self.intervals.len())
            .map(|second| (second, second, 1.0))
            .collect();
        if let Some(tail) = spans.pop() {
            let part = (end_s - tail.0 as f64).clamp(1e-3, 1.0);
            match spans.last_mut() {
                Some(before) if part < PARTIAL_SECOND_MIN_S => {
                    *before = (before.0, tail.1, before.2 + part);
                }
                _ => spans.push((tail.0, tail.1, part)),
            }
        }
        spans
            .into_iter()
            .map(|(first, last, span)| {
                let intervals = &self.intervals[first..=last];
                let mut latency = intervals[0].latency.clone();
                for interval in &intervals[1..] {
                    latency
                        .add(&interval.latency)
                        .expect("interval histograms have the same bounds");
                }
                let messages = intervals.iter().map(|i| i.messages).sum::<u64>();
                let bytes = intervals.iter().map(|i| i.bytes).sum::<u64>();
                Point {
                    t_s: first as u64 + 1,
                    messages,
                    msg_per_s: messages as f64 / span,
                    mib_per_s: mib(bytes) / span,
                    latency_us: Percentiles::of(&latency),
                }
            })
            .collect()
    }

    /// The totals over `elapsed` seconds of run.
    pub fn summary(&self, elapsed: Duration) -> Summary {
        let seconds = elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        Summary {
            timeline: self.timeline(),
            messages: self.messages,
            bytes: self.bytes,
            seconds,
            msg_per_s: self.messages as f64 / seconds,
            mib_per_s: mib(self.bytes) / seconds,
            latency_kind: self.kind,
            latency_us: Percentiles::of(&self.latency),
            errors: self.errors.clone(),
            error_count: self.errors.values().sum(),
        }
    }
}

/// A last second shorter than this is folded into the one before it in the timeline.
const PARTIAL_SECOND_MIN_S: f64 = 0.5;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Latency percentiles in µs; all zero without samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self {
                count: 0,
                mean: 0.0,
                p50: 0,
                p90: 0,
                p99: 0,
                p999: 0,
                p9999: 0,
                max: 0,
            };
        }
        Self {
            count: h.len(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
        }
    }
}

/// One second of the timeline; `t_s` is the end of the second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub t_s: u64,
    pub messages: u64,
    pub msg_per_s: f64,
    pub mib_per_s: f64,
    pub latency_us: Percentiles,
}

/// One direction's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msg_per_s: f64,
    pub mib_per_s: f64,
    pub latency_kind: LatencyKind,
    pub latency_us: Percentiles,
    /// Failed requests by response code (`NAME(code)`) or transport failure.
    pub errors: BTreeMap<String, u64>,
    pub error_count: u64,
    pub timeline: Vec<Point>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_samples() {
        let start = Instant::now();
        let mut r = Recorder::new(start, LatencyKind::Send);
        for us in 1..=1000u64 {
            r.latency(start, Duration::from_micros(us));
            r.count(start, 1, 1024);
        }
        let s = r.summary(Duration::from_secs(2));
        assert_eq!(s.messages, 1000);
        assert_eq!(s.latency_us.count, 1000);
        assert!(
            (499..=501).contains(&s.latency_us.p50),
            "{:?}",
            s.latency_us
        );
        assert!(
            (989..=991).contains(&s.latency_us.p99),
            "{:?}",
            s.latency_us
        );
        assert_eq!(s.latency_us.max, 1000);
        assert_eq!(s.msg_per_s, 500.0);
        assert!((s.mib_per_s - 1000.0 * 1024.0 / 1048576.0 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn latency_beyond_the_bound_is_clamped_not_lost() {
        let start = Instant::now();
        let mut r = Recorder::new(start, LatencyKind::Pull);
        r.latency(start, Duration::from_secs(3600));
        r.latency(start, Duration::ZERO);
        let s = r.summary(Duration::from_secs(1));
        assert_eq!(s.latency_us.count, 2);
        assert!(
            s.latency_us.max >= LATENCY_US_MAX && s.latency_us.max <= LATENCY_US_MAX * 1001 / 1000
        );
    }

    #[test]
    fn merge_adds_counts_errors_and_timelines() {
        let start = Instant::now();
        let mut a = Recorder::new(start, LatencyKind::Send);
        let mut b = Recorder::new(start, LatencyKind::Send);
        a.count(start, 10, 100);
        a.error("SYSTEM_BUSY(2)".into());
        b.count(start + Duration::from_millis(2500), 5, 50);
        b.latency(
            start + Duration::from_millis(2500),
            Duration::from_micros(70),
        );
        b.error("SYSTEM_BUSY(2)".into());
        b.error("timeout".into());
        a.merge(&b);
        let s = a.summary(Duration::from_millis(2500));
        assert_eq!((s.messages, s.bytes, s.error_count), (15, 150, 3));
        assert_eq!(s.errors["SYSTEM_BUSY(2)"], 2);
        assert_eq!(s.errors["timeout"], 1);
        let seconds: Vec<(u64, u64)> = s.timeline.iter().map(|p| (p.t_s, p.messages)).collect();
        assert_eq!(seconds, vec![(1, 10), (2, 0), (3, 5)]);
        // The third second ran for half a second: 5 messages in it are 10 msg/s.
        assert_eq!(s.timeline[2].msg_per_s, 10.0);
        assert_eq!(s.timeline[2].latency_us.count, 1);
    }

    #[test]
    fn a_sliver_of_a_last_second_is_folded_into_the_one_before() {
        let start = Instant::now();
        let mut r = Recorder::new(start, LatencyKind::Send);
        r.count(start + Duration::from_millis(500), 100, 100);
        r.latency(
            start + Duration::from_millis(500),
            Duration::from_micros(10),
        );
        r.count(start + Duration::from_millis(1010), 2, 2);
        r.latency(
            start + Duration::from_millis(1010),
            Duration::from_micros(20),
        );
        let s = r.summary(Duration::from_millis(1010));
        assert_eq!(s.timeline.len(), 1, "{:?}", s.timeline);
        let point = &s.timeline[0];
        assert_eq!(
            (point.t_s, point.messages, point.latency_us.count),
            (1, 102, 2)
        );
        assert!(
            (point.msg_per_s - 102.0 / 1.01).abs() < 1e-6,
            "{}",
            point.msg_per_s
        );
    }

    #[test]
    fn summary_serializes_to_the_documented_json_keys() {
        let start = Instant::now();
        let mut r = Recorder::new(start, LatencyKind::EndToEnd);
        r.count(start, 1, 16);
        r.latency(start, Duration::from_micros(5));
        let json = serde_json::to_value(r.summary(Duration::from_secs(1))).unwrap();
        assert_eq!(json["latency_kind"], "end_to_end");
        for key in ["p50", "p90", "p99", "p999", "p9999", "max", "mean", "count"] {
            assert!(json["latency_us"].get(key).is_some(), "missing {key}");
        }
        for key in [
            "msg_per_s",
            "mib_per_s",
            "errors",
            "error_count",
            "timeline",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["timeline"][0]["t_s"], 1);
    }
}
