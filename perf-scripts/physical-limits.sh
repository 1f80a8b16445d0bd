#!/usr/bin/env bash
# What this host can do at most, for ringmq's numbers to be read against: fio O_DIRECT
# sequential write bandwidth, 4 KiB write + fdatasync latency percentiles, iperf3 loopback TCP
# bandwidth and memcpy bandwidth. Prints one JSON document (host facts from `ringmq-bench host`
# plus the results), the shape of a ringmq-bench result.
#
#   perf-scripts/physical-limits.sh [--dir DIR] [--seconds N] [--out FILE]
#
# Needs fio, iperf3 (apt-get install -y fio iperf3), gcc and python3. Writes up to
# 1 GiB under DIR (default: target/physical-limits), removed afterwards.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

DIR=$ROOT/target/physical-limits
PHASE_SECONDS=5
OUT=
while [ $# -gt 0 ]; do
    case $1 in
    --dir) DIR=$2; shift 2 ;;
    --seconds) PHASE_SECONDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ $PHASE_SECONDS =~ ^[0-9]+$ && $PHASE_SECONDS -ge 1 && $PHASE_SECONDS -le 120 ]] || die "--seconds must be 1..120"
for tool in fio iperf3 gcc python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done
mkdir -p "$DIR"
WORK=$(mktemp -d "$DIR/run.XXXXXX")
cleanup() { stop_started; rm -rf "$WORK"; }
trap cleanup EXIT

log "fio: O_DIRECT sequential write, 1 MiB blocks, io_uring, depth 8"
fio --name=seqwrite --filename="$WORK/fio-seq" --rw=write --bs=1M --size=1G --direct=1 \
    --ioengine=io_uring --iodepth=8 --time_based --runtime="$PHASE_SECONDS" \
    --output-format=json >"$WORK/fio-seq.json"

log "fio: 4 KiB writes, each followed by fdatasync"
fio --name=fdatasync --filename="$WORK/fio-sync" --rw=write --bs=4k --size=256M \
    --ioengine=sync --fdatasync=1 --time_based --runtime="$PHASE_SECONDS" \
    --output-format=json >"$WORK/fio-sync.json"

log "iperf3: TCP over loopback"
PORT=${IPERF_PORT:-25201}
iperf3 -s -B 127.0.0.1 -p "$PORT" -1 --forceflush >"$WORK/iperf-server.txt" 2>&1 &
STARTED_PIDS+=($!)
wait_for_line "$WORK/iperf-server.txt" 'Server listening' 10 "${STARTED_PIDS[-1]}"
iperf3 -c 127.0.0.1 -p "$PORT" -t "$PHASE_SECONDS" -J >"$WORK/iperf.json"

log "memcpy: 64 MiB buffers, best of 20 copies"
cat >"$WORK/memcpy.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* Copies a 64 MiB buffer 20 times and prints the best GiB/s: larger than any cache, so it is
   the memory bandwidth one core gets. */
int main(void) {
    const size_t bytes = 64u << 20;
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) return 1;
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double best = 0;
    for (int i = 0; i < 20; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        memcpy(dst, src, bytes);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
        double rate = bytes / s / (1u << 30);
        if (rate > best) best = rate;
        src[i] = dst[bytes - 1 - i]; /* keeps the copies from being optimised away */
    }
    printf("%.2f\n", best);
    return 0;
}
EOF
gcc -O2 -o "$WORK/memcpy" "$WORK/memcpy.c"
"$WORK/memcpy" >"$WORK/memcpy.txt"

if [ -x "$BENCH_BIN" ]; then
    "$BENCH_BIN" host --data-path "$DIR" >"$WORK/host.json"
else
    echo null >"$WORK/host.json"
fi

python3 - "$WORK" "$PHASE_SECONDS" >"${OUT:-/dev/stdout}" <<'EOF'
import json, pathlib, sys, time
work, seconds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
load = lambda name: json.loads((work / name).read_text())
seq = load("fio-seq.json")["jobs"][0]["write"]
sync = load("fio-sync.json")["jobs"][0]
sync_pct = sync["sync"]["lat_ns"].get("percentile", {})
pct = lambda p: round(sync_pct.get(p, 0) / 1000)
iperf = load("iperf.json")["end"]["sum_received"]
print(json.dumps({
    "tool": "physical-limits",
    "format_version": 1,
    "started_at_unix_ms": int(time.time() * 1000),
    "seconds_per_phase": seconds,
    "host": load("host.json"),
    "results": {
        "disk_seq_write_mib_per_s": round(seq["bw_bytes"] / 2**20),
        "disk_write_clat_us": {"p50": round(sync["write"]["clat_ns"]["percentile"]["50.000000"] / 1000),
                                "p99": round(sync["write"]["clat_ns"]["percentile"]["99.000000"] / 1000)},
        "fdatasync_latency_us": {"p50": pct("50.000000"), "p99": pct("99.000000"),
                                  "p999": pct("99.900000"), "max": round(sync["sync"]["lat_ns"]["max"] / 1000)},
        "fdatasync_per_s": round(sync["write"]["iops"]),
        "loopback_tcp_gbit_per_s": round(iperf["bits_per_second"] / 1e9, 2),
        "memcpy_gib_per_s": float((work / "memcpy.txt").read_text()),
    },
}, indent=2))
EOF
