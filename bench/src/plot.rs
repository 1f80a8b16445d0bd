//! A self-contained HTML page of a run: throughput and latency percentiles over time as inline
//! SVG (no scripts, no fetched assets), so it opens anywhere and can be committed beside the
//! JSON it was drawn from.

use crate::recorder::{Point, Summary};
use crate::report::RunReport;
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 240.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_RIGHT: f64 = 110.0;
const MARGIN_Y: f64 = 24.0;

/// Series colours, one per percentile line.
const COLOURS: [&str; 4] = ["#1f77b4", "#ff7f0e", "#d62728", "#7f7f7f"];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page for `report`.
pub fn render_html(report: &RunReport) -> String {
    let mut page = String::new();
    let title = format!("ringmq-bench {}", escape(&report.command));
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 10px;text-align:right}}\
         code{{font-size:90%}}</style></head><body>\n<h1>{title}</h1>\n<p><code>{}</code></p>\n",
        escape(&report.argv.join(" "))
    );
    let host = &report.host;
    let _ = writeln!(
        page,
        "<p>Host: {} · {} cores · kernel {} · load {} at start · brokers {}</p>",
        escape(host.cpu_model.as_deref().unwrap_or("unknown CPU")),
        host.cores,
        escape(host.kernel.as_deref().unwrap_or("?")),
        host.load_average_1m
            .map_or("?".into(), |l| format!("{l:.2}")),
        escape(&report.brokers.join(", "))
    );
    for (name, summary) in [("produce", &report.produce), ("consume", &report.consume)] {
        if let Some(summary) = summary {
            page.push_str(&section(name, summary));
        }
    }
    page.push_str("</body></html>\n");
    page
}

fn section(name: &str, s: &Summary) -> String {
    let l = &s.latency_us;
    let mut out = format!(
        "<h2>{name}</h2>\n<table><tr><th>messages</th><th>msg/s</th><th>MiB/s</th><th>p50 µs</th>\
         <th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th><th>errors</th></tr>\
         <tr><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td>{}</td><td>{}</td><td>{}</td></tr></table>\n",
        s.messages,
        s.msg_per_s,
        s.mib_per_s,
        l.p50,
        l.p90,
        l.p99,
        l.p999,
        l.p9999,
        l.max,
        s.error_count
    );
    out.push_str(&chart(
        &format!("{name}: throughput (msg/s)"),
        &s.timeline,
        &[("msg/s", |p: &Point| p.msg_per_s)],
        Scale::Linear,
    ));
    out.push_str(&chart(
        &format!("{name}: latency (µs, log scale)"),
        &s.timeline,
        &[
            ("p50", |p: &Point| p.latency_us.p50 as f64),
            ("p99", |p: &Point| p.latency_us.p99 as f64),
            ("p99.9", |p: &Point| p.latency_us.p999 as f64),
            ("max", |p: &Point| p.latency_us.max as f64),
        ],
        Scale::Log,
    ));
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    Log,
}

type Series<'a> = (&'a str, fn(&Point) -> f64);

/// One SVG line chart of `series` over the timeline; points without a value (zero on a log
/// scale, i.e. a second without samples) are left out.
fn chart(title: &str, points: &[Point], series: &[Series], scale: Scale) -> String {
    let usable = |v: f64| v.is_finite() && (scale == Scale::Linear || v > 0.0);
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, f)| points.iter().map(f))
        .filter(|v| usable(*v))
        .collect();
    let t_max = points.last().map_or(1, |p| p.t_s).max(1) as f64;
    let (lo, hi) = match scale {
        Scale::Linear => (0.0, values.iter().cloned().fold(1.0, f64::max) * 1.1),
        Scale::Log => {
            let min = values
                .iter()
                .cloned()
                .fold(f64::INFINITY, f64::min)
                .max(1.0);
            let max = values.iter().cloned().fold(1.0, f64::max);
            (
                min.log10().floor(),
                (max.log10().ceil()).max(min.log10().floor() + 1.0),
            )
        }
    };
    let plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let plot_h = HEIGHT - 2.0 * MARGIN_Y;
    let x = |t: f64| MARGIN_LEFT + t / t_max * plot_w;
    let y = |v: f64| {
        let v = if scale == Scale::Log { v.log10() } else { v };
        MARGIN_Y + plot_h - (v - lo) / (hi - lo) * plot_h
    };
    let mut svg = format!(
        "<h3>{}</h3>\n<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         role=\"img\" aria-label=\"{}\">\n<rect x=\"{MARGIN_LEFT}\" y=\"{MARGIN_Y}\" width=\"{plot_w}\" \
         height=\"{plot_h}\" fill=\"none\" stroke=\"#999\"/>\n",
        escape(title),
        escape(title)
    );
    // Y ticks: five on a linear scale, one per decade on a log scale.
    let ticks: Vec<f64> = match scale {
        Scale::Linear => (0..=4)
            .map(|i| lo + (hi - lo) * f64::from(i) / 4.0)
            .collect(),
        Scale::Log => (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect(),
    };
    for tick in ticks {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            MARGIN_LEFT - 6.0,
            y(tick) + 4.0,
            tick_label(tick)
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{t_max} s</text>",
        MARGIN_LEFT + plot_w,
        HEIGHT - 6.0
    );
    for (i, (label, f)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let coords: Vec<String> = points
            .iter()
            .filter(|p| usable(f(p)))
            .map(|p| format!("{:.1},{:.1}", x(p.t_s as f64), y(f(p))))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{colour}\">{}</text>",
            coords.join(" "),
            MARGIN_LEFT + plot_w + 10.0,
            MARGIN_Y + 14.0 + 16.0 * i as f64,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn tick_label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{LatencyKind, Recorder};
    use std::time::{Duration, Instant};

    /// The `points` attribute of the first polyline.
    fn first_points(svg: &str) -> &str {
        let after = svg.split("points=\"").nth(1).expect("a polyline");
        after.split('"').next().expect("a closing quote")
    }

    fn summary() -> Summary {
        let start = Instant::now();
        let mut r = Recorder::new(start, LatencyKind::Send);
        for second in 0..5u64 {
            let at = start + Duration::from_millis(second * 1000 + 500);
            r.count(at, 1000 * (second + 1), 1024);
            r.latency(at, Duration::from_micros(100 * (second + 1)));
        }
        r.summary(Duration::from_secs(5))
    }

    #[test]
    fn a_chart_has_one_line_per_series_with_a_point_per_second() {
        let s = summary();
        let svg = chart(
            "t",
            &s.timeline,
            &[
                ("a", |p: &Point| p.msg_per_s),
                ("b", |p: &Point| p.msg_per_s / 2.0),
            ],
            Scale::Linear,
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        let first = first_points(&svg);
        assert_eq!(first.split(' ').count(), 5);
        // Higher throughput is drawn higher: y of the last point is above the first.
        let ys: Vec<f64> = first
            .split(' ')
            .map(|xy| xy.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert!(ys[4] < ys[0], "{ys:?}");
    }

    #[test]
    fn log_scale_skips_seconds_without_samples() {
        let mut s = summary();
        s.timeline[2].latency_us.p50 = 0;
        let svg = chart(
            "t",
            &s.timeline,
            &[("p50", |p: &Point| p.latency_us.p50 as f64)],
            Scale::Log,
        );
        let points = first_points(&svg);
        assert_eq!(points.split(' ').count(), 4);
        assert!(
            svg.contains(">100</text>") && svg.contains(">1.0k</text>"),
            "{svg}"
        );
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
