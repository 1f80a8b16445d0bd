#!/usr/bin/env python3
"""Prints the side-by-side table (Markdown) from a side-by-side.sh output directory.

Reads OUT/<rep>/<kind>-<workload>.json (ringmq-bench results) and .proc (broker CPU and
memory around that run). Each cell is the median over repetitions with the range beside it;
the ratio is ringmq / Apache of the medians (higher is better for rates, lower for the rest).

When the run has more than the kinds `apache` and `ringmq` (a second ringmq binary,
`ringmq-base`, or Apache releases `apache-V`), the table has a column per kind that ran, the
ratios ringmq / each Apache kind and ringmq / ringmq-base (each only when both ran) and a
"better" column; with ringmq-base also broker CPU per million messages and RSS for every
workload and broker start. With `apache` and `ringmq` alone it is the two-broker table as
before. Rows no kind has a value for (a phase that did not run) are left out.

The Java-client workloads (java-produce-ENC, java-consume-ENC: JavaBench.java's results) get
a table of their own: rates, send p99, broker and load-generator CPU per million messages,
the cores each used in the measured window, and which process bound the run. The features
phase's workloads (java-txn-produce, java-filter-consume-*, java-timer) get a third.
"""
import json
import pathlib
import statistics
import sys

KINDS = ("apache", "ringmq")
# A process using at least this many cores across a Java workload's window is taken as what
# bound the run ("about one core or more": the Java client's sender threads and ringmq's
# shards are each bound by one core; Apache's broker threads are many).
BOUND_CORES = 0.9
# The workloads of one broker start (side-by-side.sh's phases); VmHWM only grows within a
# start, so the phase's peak is the largest of its workloads' readings.
ASYNC_PHASE = ("async-1k", "size-16k", "batch-1k", "catch-up")


def produce(key):
    return lambda r, p: (r.get("produce") or {}).get(key)


def consume(key):
    return lambda r, p: (r.get("consume") or {}).get(key)


def latency(direction, q):
    return lambda r, p: ((r.get(direction) or {}).get("latency_us") or {}).get(q)


# The summaries a result may hold; each counts its messages for the CPU per message.
DIRECTIONS = ("produce", "consume", "timer")


def timer(key):
    return lambda r, p: (r.get("timer") or {}).get(key)


def lateness(q):
    return lambda r, p: ((r.get("timer") or {}).get("lateness_ms") or {}).get(q)


def loadgen_cpu_per_million(r, p):
    moved = sum((r.get(d) or {}).get("messages", 0) for d in DIRECTIONS)
    cpu = (r.get("cpu") or {}).get("loadgen_s")
    return cpu / moved * 1e6 if moved and cpu is not None else None


def cores(process):
    def extract(r, p):
        cpu = r.get("cpu") or {}
        return cpu[process] / cpu["wall_s"] if cpu.get(process) is not None and cpu.get("wall_s") else None
    return extract


def cpu_per_million(r, p):
    moved = sum((r.get(d) or {}).get("messages", 0) for d in DIRECTIONS)
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

# The Java-client table, per header encoding (side-by-side.sh's java phase).
JAVA_ENCODINGS = ("json", "rocketmq")


def java_rows(enc):
    p, c = f"java-produce-{enc}", f"java-consume-{enc}"
    return [
        (p, "produce", "msg/s", produce("msg_per_s"), "higher"),
        (p, "send p99", "µs", latency("produce", "p99"), "lower"),
        (p, "broker CPU per M msgs", "s", cpu_per_million, "lower"),
        (p, "load generator CPU per M msgs", "s", loadgen_cpu_per_million, "lower"),
        (p, "broker cores used", "cores", cores("broker_s"), "same"),
        (p, "load generator cores used", "cores", cores("loadgen_s"), "same"),
        (p, "host cores busy (every process)", "cores", cores("host_busy_s"), "same"),
        (c, "consume", "msg/s", consume("msg_per_s"), "higher"),
        (c, "broker CPU per M msgs", "s", cpu_per_million, "lower"),
        (c, "load generator CPU per M msgs", "s", loadgen_cpu_per_million, "lower"),
        (c, "broker cores used", "cores", cores("broker_s"), "same"),
        (c, "load generator cores used", "cores", cores("loadgen_s"), "same"),
        (c, "host cores busy (every process)", "cores", cores("host_busy_s"), "same"),
    ]


JAVA_ROWS = [row for enc in JAVA_ENCODINGS for row in java_rows(enc)]

# The features phase (side-by-side.sh --phases features): transactions, SQL92, timers.
FEATURE_ROWS = [
    ("java-txn-produce", "transactional produce", "msg/s", produce("msg_per_s"), "higher"),
    ("java-txn-produce", "send p99", "µs", latency("produce", "p99"), "lower"),
    ("java-txn-produce", "broker CPU per M msgs", "s", cpu_per_million, "lower"),
    ("java-txn-produce", "load generator CPU per M msgs", "s", loadgen_cpu_per_million, "lower"),
    ("java-txn-produce", "broker cores used", "cores", cores("broker_s"), "same"),
    ("java-txn-produce", "load generator cores used", "cores", cores("loadgen_s"), "same"),
    ("java-filter-consume-all", "consume, `*`", "msg/s", consume("msg_per_s"), "higher"),
    ("java-filter-consume-all", "backlog drained in", "s", consume("seconds"), "lower"),
    ("java-filter-consume-all", "broker CPU per M deliveries", "s", cpu_per_million, "lower"),
    ("java-filter-consume-sql92", "consume, SQL92 `bench_n < 50`", "msg/s", consume("msg_per_s"), "higher"),
    ("java-filter-consume-sql92", "backlog drained in", "s", consume("seconds"), "lower"),
    ("java-filter-consume-sql92", "broker CPU per M deliveries", "s", cpu_per_million, "lower"),
    ("java-timer", "timer delivery", "msg/s", timer("msg_per_s"), "higher"),
    ("java-timer", "lateness p50", "ms", lateness("p50"), "lower"),
    ("java-timer", "lateness p99", "ms", lateness("p99"), "lower"),
    ("java-timer", "lateness p99.9", "ms", lateness("p999"), "lower"),
    ("java-timer", "lateness max", "ms", lateness("max"), "lower"),
    ("java-timer", "delivered early", "msgs", timer("early"), "lower"),
    ("java-timer", "broker CPU per M deliveries", "s", cpu_per_million, "lower"),
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


WORKLOADS = {row[0] for row in ROWS + EXTRA_ROWS + JAVA_ROWS + FEATURE_ROWS}


def kinds_ran(out):
    """The kinds with a result in any repetition, in column order: Apache kinds (by release),
    ringmq-base, ringmq. A file is KIND-WORKLOAD.json for one of the known workloads (by exact
    names, since ringmq-base-*.json would match a glob for ringmq-*)."""
    found = set()
    for rep in rep_dirs(out):
        for path in rep.glob("*.json"):
            for w in WORKLOADS:
                if path.stem.endswith("-" + w):
                    found.add(path.stem[: -len(w) - 1])
    apache = sorted((k for k in found if k == "apache" or k.startswith("apache-")), key=release_key(out))
    return apache + [k for k in ("ringmq-base", "ringmq") if k in found]


def ran(out, kind, rows):
    """Whether any repetition has a result of this kind for one of these rows' workloads."""
    return any((rep / f"{kind}-{row[0]}.json").exists() for rep in rep_dirs(out) for row in rows)


def apache_releases(out):
    """KIND -> release, from settings.txt's 'KIND: Apache RocketMQ V, jars ...' lines."""
    releases = {}
    try:
        for line in (out / "settings.txt").read_text().splitlines():
            head, _, rest = line.partition(": Apache RocketMQ ")
            if rest and (head == "apache" or head.startswith("apache-")):
                releases[head] = rest.split(",")[0]
    except OSError:
        pass
    return releases


def release_key(out):
    releases = apache_releases(out)

    def key(kind):
        release = releases.get(kind, kind.partition("-")[2] or "0")
        return tuple(int(x) if x.isdigit() else 0 for x in release.split("."))
    return key


def heading(out, kind):
    if kind == "apache" or kind.startswith("apache-"):
        release = apache_releases(out).get(kind, kind.partition("-")[2])
        return f"Apache RocketMQ {release}".strip()
    return kind


def short(out, kind):
    return heading(out, kind).replace("Apache RocketMQ", "Apache")


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
        for direction in DIRECTIONS:
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
        if a is None and r is None:
            continue
        ratio = f"{r / a:.2f}×" if a and r is not None else "–"
        if better != "same" and ratio != "–":
            ratio += f" ({better} is better)"
        print(f"| {workload} | {measure} | {unit} | {cells['apache'][0]} | {cells['ringmq'][0]} | {ratio} |")


def columns_table(out, kinds, rows, intro):
    """A column per kind, then ringmq / each other kind; rows without any value left out."""
    heads = [heading(out, k) for k in kinds]
    ratios = [("ringmq", d) for d in kinds if d != "ringmq" and "ringmq" in kinds]
    ratio_heads = [f"{n} / {short(out, d)}" for n, d in ratios]
    said = ", ".join(ratio_heads) if ratio_heads else "none (ringmq did not run beside another kind)"
    print(f"{intro}; median (min–max); ratios of the medians: {said}.\n")
    print("| " + " | ".join(["workload", "measure", "unit", *heads, *ratio_heads, "better"]) + " |")
    print("|" + "---|" * (4 + len(heads) + len(ratio_heads)))
    for row in rows:
        workload, measure, unit, _extract, better = row[:5]
        cells = row_values(out, kinds, row)
        if all(c[1] is None for c in cells.values()):
            continue
        shown = []
        for n, d in ratios:
            num, den = cells[n][1], cells[d][1]
            shown.append(f"{num / den:.2f}×" if den and num is not None else "–")
        better_said = "–" if better == "same" else better
        print("| " + " | ".join([workload, measure, unit, *(cells[k][0] for k in kinds), *shown, better_said]) + " |")


def bound(broker_cores, loadgen_cores, host_cores, host_busy=None):
    """What bound a Java workload, from the median cores used in its window: each process at
    BOUND_CORES or more, and the host's CPU when it was busy to BOUND_CORES of every core
    (by every process when JavaBench read /proc/stat, else by these two), with what other
    processes took of it."""
    if broker_cores is None or loadgen_cores is None:
        return "–"
    held = [name for name, c in (("broker", broker_cores), ("load generator", loadgen_cores)) if c >= BOUND_CORES]
    busy = broker_cores + loadgen_cores if host_busy is None else host_busy
    if host_cores and busy >= BOUND_CORES * host_cores:
        others = "" if host_busy is None else f", {max(0.0, busy - broker_cores - loadgen_cores):.2f} by other processes"
        held.append(f"host CPU ({busy:.2f} of {host_cores} cores busy{others})")
    return " and ".join(held) if held else "neither (< 0.9 cores each: waits)"


def java_table(out, kinds, reps):
    columns_table(out, kinds, JAVA_ROWS,
                  f"\nOfficial Java client (JavaBench.java), {reps} repetition(s); CPU in JavaBench's window")
    host = load(out / "host.json") or {}
    print(f"\nWhat bound each Java workload (a process at ≥ {BOUND_CORES} cores; the host's CPU when "
          f"≥ {BOUND_CORES:.0%} of its {host.get('cores', '?')} cores were busy), from the medians above:\n")
    print("| workload | " + " | ".join(heading(out, k) for k in kinds) + " |")
    print("|" + "---|" * (1 + len(kinds)))
    for enc in JAVA_ENCODINGS:
        for workload in (f"java-produce-{enc}", f"java-consume-{enc}"):
            said = []
            for k in kinds:
                b, g, h = (cell(values(out, k, workload, cores(p)))[1] for p in ("broker_s", "loadgen_s", "host_busy_s"))
                said.append(bound(b, g, host.get("cores"), h))
            if any(x != "–" for x in said):
                print(f"| {workload} | " + " | ".join(said) + " |")


def main():
    out = pathlib.Path(sys.argv[1])
    reps = len(rep_dirs(out))
    kinds = kinds_ran(out)
    if any(ran(out, k, ROWS + EXTRA_ROWS) for k in kinds):
        if sorted(kinds) == sorted(KINDS):
            two_broker_table(out, reps)
        else:
            rows = ROWS + EXTRA_ROWS if "ringmq-base" in kinds else ROWS
            columns_table(out, kinds, rows, f"Side by side, {reps} repetition(s)")
    if any(ran(out, k, JAVA_ROWS) for k in kinds):
        java_table(out, kinds, reps)
    if any(ran(out, k, FEATURE_ROWS) for k in kinds):
        columns_table(out, kinds, FEATURE_ROWS,
                      f"\nTransactions, SQL92 and timers, official Java client (JSON headers), {reps} repetition(s)")
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
