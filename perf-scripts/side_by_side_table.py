#!/usr/bin/env python3
"""Prints the side-by-side table (Markdown) from a side-by-side.sh output directory.

Reads OUT/<rep>/<kind>-<workload>.json (ringmq-bench results) and .proc (broker CPU and
memory around that run). Each cell is the median over repetitions with the range beside it;
the ratio is ringmq / Apache of the medians (higher is better for rates, lower for the rest).
"""
import json
import pathlib
import statistics
import sys

KINDS = ("apache", "ringmq")


def produce(key):
    return lambda r, p: (r.get("produce") or {}).get(key)


def consume(key):
    return lambda r, p: (r.get("consume") or {}).get(key)


def latency(direction, q):
    return lambda r, p: ((r.get(direction) or {}).get("latency_us") or {}).get(q)


def cpu_per_million(r, p):
    moved = sum((r.get(d) or {}).get("messages", 0) for d in ("produce", "consume"))
    return p["cpu_s"] / moved * 1e6 if moved and p else None


def rss_mib(key):
    return lambda r, p: p[key] / 1024 if p and p.get(key) else None


# (workload, measure, unit, extractor, better)
ROWS = [
    ("async-1k", "produce", "msg/s", produce("msg_per_s"), "higher"),
    ("async-1k", "send p99", "µs", latency("produce", "p99"), "lower"),
    ("async-1k", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("sync-1k", "produce", "msg/s", produce("msg_per_s"), "higher"),
    ("sync-1k", "send p99", "µs", latency("produce", "p99"), "lower"),
    ("size-16k", "produce", "MiB/s", produce("mib_per_s"), "higher"),
    ("batch-1k", "produce", "msg/s", produce("msg_per_s"), "higher"),
    ("catch-up", "consume", "msg/s", consume("msg_per_s"), "higher"),
    ("e2e", "rate", "msg/s", produce("msg_per_s"), "same"),
    ("e2e", "end-to-end p50", "µs", latency("consume", "p50"), "lower"),
    ("e2e", "end-to-end p99", "µs", latency("consume", "p99"), "lower"),
    ("e2e", "end-to-end p99.9", "µs", latency("consume", "p999"), "lower"),
    ("async-1k", "broker RSS idle", "MiB", rss_mib("rss_idle_kib"), "lower"),
    ("async-1k", "broker RSS peak (whole phase)", "MiB", rss_mib("rss_peak_kib"), "lower"),
]


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def values(out, kind, workload, extract):
    found = []
    for rep in sorted(p for p in out.iterdir() if p.is_dir() and p.name.isdigit()):
        result = load(rep / f"{kind}-{workload}.json")
        proc = load(rep / f"{kind}-{workload}.proc")
        if result is None:
            continue
        value = extract(result, proc)
        if value is not None:
            found.append(float(value))
    return found


def cell(vals):
    if not vals:
        return "–", None
    med = statistics.median(vals)
    fmt = (lambda v: f"{v:.0f}") if med >= 100 else (lambda v: f"{v:.2f}")
    if len(vals) == 1:
        return fmt(med), med
    return f"{fmt(med)} ({fmt(min(vals))}–{fmt(max(vals))})", med


def errors(out):
    lines = []
    for path in sorted(out.glob("*/*.json")):
        result = load(path)
        for direction in ("produce", "consume"):
            summary = (result or {}).get(direction) or {}
            if summary.get("error_count"):
                lines.append(f"- {path.parent.name}/{path.stem} {direction}: {summary['errors']}")
    return lines


def main():
    out = pathlib.Path(sys.argv[1])
    reps = len([p for p in out.iterdir() if p.is_dir() and p.name.isdigit()])
    print(f"Side by side, {reps} repetition(s); median (min–max); ratio = ringmq / Apache.\n")
    print("| workload | measure | unit | Apache RocketMQ | ringmq | ratio |")
    print("|---|---|---|---|---|---|")
    for workload, measure, unit, extract, better in ROWS:
        cells = {k: cell(values(out, k, workload, extract)) for k in KINDS}
        a, r = cells["apache"][1], cells["ringmq"][1]
        ratio = f"{r / a:.2f}×" if a and r is not None else "–"
        if better != "same" and ratio != "–":
            ratio += f" ({better} is better)"
        print(f"| {workload} | {measure} | {unit} | {cells['apache'][0]} | {cells['ringmq'][0]} | {ratio} |")
    errs = errors(out)
    if errs:
        print("\nFailed requests (counted, not in the rates):")
        print("\n".join(errs))


if __name__ == "__main__":
    main()
