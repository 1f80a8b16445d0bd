//! The result of a run: a JSON document (what was run, where, and what it measured) and the
//! same in a few lines of text.

use crate::args::Workload;
use crate::host::HostFacts;
use crate::recorder::{LatencyKind, Summary};
use serde::Serialize;
use std::fmt::Write;

/// Bump when a key of the JSON result changes meaning or goes away.
pub const RESULT_FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub tool: &'static str,
    pub tool_version: &'static str,
    pub format_version: u32,
    /// `produce`, `consume` or `e2e`.
    pub command: String,
    /// The command line, for rerunning.
    pub argv: Vec<String>,
    pub started_at_unix_ms: u64,
    pub host: HostFacts,
    /// The broker addresses the run loaded.
    pub brokers: Vec<String>,
    pub workload: Workload,
    pub produce: Option<Summary>,
    pub consume: Option<Summary>,
}

impl RunReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The result in a few lines for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, summary) in [("produce", &self.produce), ("consume", &self.consume)] {
            if let Some(s) = summary {
                out.push_str(&summary_text(name, s));
            }
        }
        out
    }
}

fn latency_label(kind: LatencyKind) -> &'static str {
    match kind {
        LatencyKind::Send => "send latency",
        LatencyKind::Pull => "pull latency",
        LatencyKind::EndToEnd => "end-to-end latency",
    }
}

fn summary_text(name: &str, s: &Summary) -> String {
    let mut out = String::new();
    let l = &s.latency_us;
    let _ = writeln!(
        out,
        "{name}: {} messages in {:.2} s = {:.0} msg/s, {:.1} MiB/s",
        s.messages, s.seconds, s.msg_per_s, s.mib_per_s
    );
    let _ = writeln!(
        out,
        "  {} µs ({} samples): p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}",
        latency_label(s.latency_kind),
        l.count,
        l.p50,
        l.p90,
        l.p99,
        l.p999,
        l.p9999,
        l.max
    );
    let errors = if s.errors.is_empty() {
        "none".to_owned()
    } else {
        s.errors
            .iter()
            .map(|(kind, n)| format!("{kind} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "  errors: {errors}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Discovery, HeaderEncoding, Produce, Target};
    use crate::recorder::Recorder;
    use std::time::{Duration, Instant};

    fn report() -> RunReport {
        let start = Instant::now();
        let mut recorder = Recorder::new(start, LatencyKind::Send);
        recorder.count(start, 100, 102_400);
        recorder.latency(start, Duration::from_micros(250));
        recorder.error("SYSTEM_BUSY(2)".into());
        RunReport {
            tool: "ringmq-bench",
            tool_version: "0.1.0",
            format_version: RESULT_FORMAT_VERSION,
            command: "produce".into(),
            argv: vec!["ringmq-bench".into(), "produce".into()],
            started_at_unix_ms: 1,
            host: HostFacts::default(),
            brokers: vec!["127.0.0.1:10911".into()],
            workload: Workload {
                target: Target {
                    discovery: Discovery::Brokers(vec!["127.0.0.1:10911".into()]),
                    topic: "t".into(),
                    queues: 4,
                    create_topic: true,
                    connections: 1,
                    threads: 1,
                    duration: Duration::from_secs(2),
                    messages: 100,
                    timeout: Duration::from_secs(3),
                    header: HeaderEncoding::Json,
                },
                produce: Some(Produce {
                    producers: 1,
                    size: 1024,
                    batch: 1,
                    in_flight: 1,
                    keys: None,
                    rate: Some(50),
                }),
                consume: None,
            },
            produce: Some(recorder.summary(Duration::from_secs(2))),
            consume: None,
        }
    }

    #[test]
    fn json_result_round_trips_with_the_documented_shape() {
        let json: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(json["tool"], "ringmq-bench");
        assert_eq!(json["format_version"], RESULT_FORMAT_VERSION);
        assert_eq!(json["workload"]["target"]["duration"], 2.0);
        assert_eq!(json["workload"]["produce"]["rate"], 50);
        assert_eq!(json["produce"]["messages"], 100);
        assert_eq!(json["produce"]["msg_per_s"], 50.0);
        assert_eq!(json["produce"]["errors"]["SYSTEM_BUSY(2)"], 1);
        assert_eq!(json["produce"]["latency_us"]["p99"], 250);
        assert!(json["consume"].is_null());
        assert!(json["host"].get("cores").is_some());
    }

    #[test]
    fn text_result_names_rates_percentiles_and_errors() {
        let text = report().to_text();
        assert!(
            text.starts_with("produce: 100 messages in 2.00 s = 50 msg/s, 0.0 MiB/s\n"),
            "{text}"
        );
        assert!(
            text.contains("send latency µs (1 samples): p50 250"),
            "{text}"
        );
        assert!(text.contains("errors: SYSTEM_BUSY(2) ×1"), "{text}");
    }
}
