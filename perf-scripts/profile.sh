#!/usr/bin/env bash
# A CPU profile of the ringmq broker under a ringmq-bench workload: `perf record` of the broker
# process while the workload runs, then a flame graph (SVG) and the top functions (text).
#
#   perf-scripts/profile.sh [--flush ASYNC_FLUSH|SYNC_FLUSH] [--seconds N] [--out DIR]
#                           [--skip-build] [--java JSON|ROCKETMQ] [-- WORKLOAD ARGS...]
#
# WORKLOAD ARGS are ringmq-bench's (without -n and -d), by default the side-by-side async-1k
# workload: produce -q 8 -c 4 -t profile -p 16 --in-flight 4 -s 1024. --java ENC profiles
# side-by-side's java-produce-ENC instead (the official Java client, perf-scripts/java: 64
# threads of synchronous 1 KiB sends); the recording starts after its 5 s warm-up.
# Needs perf (apt-get install -y linux-perf); the flame graph needs inferno
# (cargo install inferno), without it only the text report is written.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FLUSH=ASYNC_FLUSH
RUN_SECONDS=10
OUT=$ROOT/target/profile/$(date -u +%Y%m%dT%H%M%SZ)
BUILD=1
WORKLOAD=(produce -q 8 -c 4 -t profile -p 16 --in-flight 4 -s 1024)
JAVA_ENCODING=
while [ $# -gt 0 ]; do
    case $1 in
    --flush) FLUSH=$2; shift 2 ;;
    --seconds) RUN_SECONDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    --java) JAVA_ENCODING=$2; shift 2 ;;
    --) shift; WORKLOAD=("$@"); break ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ $RUN_SECONDS =~ ^[0-9]+$ && $RUN_SECONDS -ge 1 && $RUN_SECONDS -le 120 ]] || die "--seconds must be 1..120"
command -v perf >/dev/null || die "perf is missing (apt-get install -y linux-perf)"
if [ "$BUILD" = 1 ]; then
    log "building release binaries (with debug line info: [profile.release] debug = 1)"
    (cd "$ROOT" && cargo build --release -q -p ringmq -p ringmq-bench)
fi
[[ -z $JAVA_ENCODING || $JAVA_ENCODING == JSON || $JAVA_ENCODING == ROCKETMQ ]] || die "--java is JSON or ROCKETMQ"
mkdir -p "$OUT"
[ -z "$JAVA_ENCODING" ] || prepare_java_bench "$OUT/java"

start_ringmq "$OUT/broker" "$FLUSH" "$RINGMQ_NAMESRV_PORT" "$RINGMQ_BROKER_PORT"
# record_broker: perf record of the broker for RUN_SECONDS, in the background (PERF_PID).
record_broker() {
    # DWARF unwinding: release builds have no frame pointers. 16 KiB of stack per sample.
    perf record -F 499 -g --call-graph dwarf,16384 -p "$BROKER_PID" -o "$OUT/perf.data" \
        -- sleep "$RUN_SECONDS" 2>"$OUT/perf-record.log" &
    PERF_PID=$!
    STARTED_PIDS+=("$PERF_PID")
}
if [ -n "$JAVA_ENCODING" ]; then
    WORKLOAD=("java-produce ($JAVA_ENCODING headers; JavaBench: 64 threads of sync 1 KiB sends)")
    java_warmup=5
    java_bench "$JAVA_ENCODING" "$OUT/java" produce --namesrv "$NAMESRV_ADDR" --topic profile-java \
        --threads 64 --size 1024 --seconds "$RUN_SECONDS" --warmup-seconds "$java_warmup" \
        --broker-pid "$BROKER_PID" --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1 &
    JAVA_PID=$!
    STARTED_PIDS+=("$JAVA_PID")
    # The JVM's start (about a second) and the warm-up pass before the recording starts.
    sleep $((java_warmup + 1))
    log "recording broker $BROKER_PID for ${RUN_SECONDS}s under: ${WORKLOAD[*]}"
    record_broker
    wait "$JAVA_PID" || log "the workload failed, see $OUT/bench.txt"
else
    log "warm-up, 2 s"
    "$BENCH_BIN" "${WORKLOAD[@]}" -n "$NAMESRV_ADDR" -d 2 --quiet >/dev/null 2>&1 || true
    log "recording broker $BROKER_PID for ${RUN_SECONDS}s under: ringmq-bench ${WORKLOAD[*]}"
    record_broker
    "$BENCH_BIN" "${WORKLOAD[@]}" -n "$NAMESRV_ADDR" -d "$RUN_SECONDS" --quiet \
        --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1 || log "the workload failed, see $OUT/bench.txt"
fi
wait "$PERF_PID" || die "perf record failed, see $OUT/perf-record.log"
stop_started
# The broker's preallocated commit-log segments are GiBs the profile does not need.
rm -rf "$OUT/broker/data"

perf report -i "$OUT/perf.data" --no-children --percent-limit 0.5 --stdio -g none \
    --sort symbol >"$OUT/top.txt" 2>/dev/null
if command -v inferno-collapse-perf >/dev/null && command -v inferno-flamegraph >/dev/null; then
    perf script -i "$OUT/perf.data" 2>/dev/null | inferno-collapse-perf |
        inferno-flamegraph --title "ringmq $FLUSH: ${WORKLOAD[*]}" >"$OUT/flamegraph.svg"
    log "flame graph: $OUT/flamegraph.svg"
else
    log "no inferno (cargo install inferno): text report only"
fi
log "top functions: $OUT/top.txt; workload result: $OUT/bench.txt"
