#!/usr/bin/env python3
"""Prints the side-by-side table (Markdown) from a side-by-side.sh output directory.

Reads OUT/<rep>/<kind>-<workload>.json (ringmq-bench results) and .proc (broker CPU and
memory around that run). Each cell is the median over repetitions with the range beside it;
the ratio is ringmq / Apache of the medians (higher is better for rates, lower for the rest).

When the run has the kind `ringmq-base` too (a second ringmq binary, side-by-side.sh
--brokers "apache ringmq-base ringmq"), the table has a column per kind that ran, the ratios
ringmq / Apache and ringmq / ringmq-base (each only when both ran), a "better" column, and
broker CPU per million messages and RSS for every workload and broker start. Without
ringmq-base it is the two-broker table as before.
"""
import json
import pathlib
import statistics
import sys

KINDS = ("apache", "ringmq")
# Columns of the table with ringmq-base, in this order, and their headings.
ALL_KINDS = (("apache", "Apache RocketMQ"), ("ringmq-base", "ringmq-base"), ("ringmq", "ringmq"))
# The ratios of that table: (numerator, denominator), headed "ringmq / Apache" and so on.
SHORT = {"apache": "Apache"}
RATIOS = (("ringmq", "apache"), ("ringmq", "ringmq-base"))
# The workloads of one broker start (side-by-side.sh's phases); VmHWM only grows within a
# start, so the phase's peak is the largest of its workloads' readings.
ASYNC_PHASE = ("async-1k", "size-16k", "batch-1k", "catch-up")


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


# (workload, measure, unit, extractor, better[, workloads whose largest value counts])
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
    ("async-1k", "broker RSS peak (whole phase)", "MiB", rss_mib("rss_peak_kib"), "lower", ASYNC_PHASE),
]

# Added to the table when ringmq-base ran: what a change costs per message in every workload,
# and the memory of every broker start (sync-1k and e2e are starts of their own).
EXTRA_ROWS = [
    ("size-16k", "produce", "msg/s", produce("msg_per_s"), "higher"),
    ("sync-1k", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("size-16k", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("batch-1k", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("catch-up", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("e2e", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("sync-1k", "broker RSS idle", "MiB", rss_mib("rss_idle_kib"), "lower"),
    ("sync-1k", "broker RSS peak", "MiB", rss_mib("rss_peak_kib"), "lower"),
    ("e2e", "broker RSS idle", "MiB", rss_mib("rss_idle_kib"), "lower"),
    ("e2e", "broker RSS peak", "MiB", rss_mib("rss_peak_kib"), "lower"),
]


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def rep_dirs(out):
    return sorted(p for p in out.iterdir() if p.is_dir() and p.name.isdigit())


def values(out, kind, workload, extract, sources=None):
    """One value per repetition: of `workload`, or the largest of the `sources` workloads."""
    found = []
    for rep in rep_dirs(out):
        per_workload = []
        for name in sources or (workload,):
            result = load(rep / f"{kind}-{name}.json")
            proc = load(rep / f"{kind}-{name}.proc")
            if result is None:
                continue
            value = extract(result, proc)
            if value is not None:
                per_workload.append(float(value))
        if per_workload:
            found.append(max(per_workload))
    return found


def ran(out, kind):
    """Whether any repetition has a result of this kind (by exact workload names, since
    ringmq-base-*.json would match a glob for ringmq-*)."""
    workloads = {row[0] for row in ROWS + EXTRA_ROWS}
    return any((rep / f"{kind}-{w}.json").exists() for rep in rep_dirs(out) for w in workloads)


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


def row_values(out, kinds, row):
    workload, _measure, _unit, extract, _better, *sources = row
    return {k: cell(values(out, k, workload, extract, sources[0] if sources else None)) for k in kinds}


def two_broker_table(out, reps):
    print(f"Side by side, {reps} repetition(s); median (min–max); ratio = ringmq / Apache.\n")
    print("| workload | measure | unit | Apache RocketMQ | ringmq | ratio |")
    print("|---|---|---|---|---|---|")
    for row in ROWS:
        workload, measure, unit, _extract, better = row[:5]
        cells = row_values(out, KINDS, row)
        a, r = cells["apache"][1], cells["ringmq"][1]
        ratio = f"{r / a:.2f}×" if a and r is not None else "–"
        if better != "same" and ratio != "–":
            ratio += f" ({better} is better)"
        print(f"| {workload} | {measure} | {unit} | {cells['apache'][0]} | {cells['ringmq'][0]} | {ratio} |")
    return KINDS


def with_base_table(out, reps):
    kinds = [k for k, _ in ALL_KINDS if ran(out, k)]
    heads = [h for k, h in ALL_KINDS if k in kinds]
    ratios = [(n, d) for n, d in RATIOS if n in kinds and d in kinds]
    ratio_heads = [f"{n} / {SHORT.get(d, d)}" for n, d in ratios]
    said = ", ".join(ratio_heads) if ratio_heads else "none (ringmq did not run beside another kind)"
    print(f"Side by side, {reps} repetition(s); median (min–max); ratios of the medians: {said}.\n")
    print("| " + " | ".join(["workload", "measure", "unit", *heads, *ratio_heads, "better"]) + " |")
    print("|" + "---|" * (4 + len(heads) + len(ratio_heads)))
    for row in ROWS + EXTRA_ROWS:
        workload, measure, unit, _extract, better = row[:5]
        cells = row_values(out, kinds, row)
        shown = []
        for n, d in ratios:
            num, den = cells[n][1], cells[d][1]
            shown.append(f"{num / den:.2f}×" if den and num is not None else "–")
        better_said = "–" if better == "same" else better
        print("| " + " | ".join([workload, measure, unit, *(cells[k][0] for k in kinds), *shown, better_said]) + " |")
    return kinds


def main():
    out = pathlib.Path(sys.argv[1])
    reps = len(rep_dirs(out))
    kinds = with_base_table(out, reps) if ran(out, "ringmq-base") else two_broker_table(out, reps)
    limits = load(out / "physical-limits.json")
    if limits:
        r = limits["results"]
        disk = r["disk_seq_write_mib_per_s"]
        print(f"\nPhysical limits in this run: disk O_DIRECT sequential write {disk} MiB/s, "
              f"fdatasync p50/p99 {r['fdatasync_latency_us']['p50']}/{r['fdatasync_latency_us']['p99']} µs, "
              f"loopback TCP {r['loopback_tcp_gbit_per_s']} Gbit/s, memcpy {r['memcpy_gib_per_s']} GiB/s.")
        for workload in ("async-1k", "size-16k"):
            for kind in kinds:
                vals = values(out, kind, workload, produce("mib_per_s"))
                if vals and disk:
                    print(f"- {kind} {workload}: {statistics.median(vals) / disk:.1%} of the disk's sequential write bandwidth")
    errs = errors(out)
    if errs:
        print("\nFailed requests (counted, not in the rates):")
        print("\n".join(errs))


if __name__ == "__main__":
    main()
