#!/usr/bin/env bash
# Produce latency while retention removes segments, against the same load without removals.
# Each run: a fresh `ringmq standalone` with small segments (--segment bytes) and retention
# checked every second; "keep" runs with fileReservedTime=72 (nothing expires), "remove" with
# fileReservedTime=0 (every sealed segment is removed at the next check, so removals go on for
# the whole run); ringmq-bench sends at a fixed open-loop rate (latency counted from the
# intended send time, so a stall shows). The kinds alternate, REPS runs each. Prints one line
# per run (p50/p99/p99.9 µs, segments removed) and the medians of p99 per kind.
#
#   perf-scripts/retention-p99.sh [--seconds 40] [--rate 5000] [--size 1024]
#       [--segment 16777216] [--reps 3] [--bin target/release/ringmq]
#       [--bench-bin target/release/ringmq-bench]
# Bounded: every run is --seconds long (the bench stops itself), every start waited <= 60 s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

seconds=40
rate=5000
body=1024
segment=$((16 << 20))
reps=3
SHARDS=2
bin=$ROOT/target/release/ringmq
bench=$ROOT/target/release/ringmq-bench
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --size) body=$2; shift 2 ;;
    --segment) segment=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --bench-bin) bench=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[ -x "$bin" ] && [ -x "$bench" ] || die "build first: cargo build --release -p ringmq -p ringmq-bench"
work=$(mktemp -d /tmp/ringmq-retention-p99.XXXXXX)
trap 'stop_started; rm -rf "$work"' EXIT
NS_PORT=${RETENTION_NAMESRV_PORT:-27876}
BROKER_PORT=${RETENTION_BROKER_PORT:-27911}

run() { # KIND REP
    local kind=$1 rep=$2 dir="$work/$1-$2" reserved
    [ "$kind" = remove ] && reserved=0 || reserved=72
    mkdir -p "$dir"
    printf 'mappedFileSizeCommitLog=%s\nfileReservedTime=%s\ncleanResourceInterval=1000\n' \
        "$segment" "$reserved" >"$dir/broker.conf"
    ulimit -l unlimited 2>/dev/null || true
    "$bin" standalone --listen "127.0.0.1:$BROKER_PORT" --namesrv-listen "127.0.0.1:$NS_PORT" \
        --shards "$SHARDS" --data "$dir/data" --broker-ip 127.0.0.1 -c "$dir/broker.conf" \
        >"$dir/ringmq.out" 2>&1 &
    BROKER_PID=$!
    STARTED_PIDS+=("$BROKER_PID")
    wait_for_line "$dir/ringmq.out" 'ringmq broker listening on' 60 "$BROKER_PID"
    "$bench" produce -b "127.0.0.1:$BROKER_PORT" -t retention -q 8 -c 2 -p 4 --in-flight 16 \
        -s "$body" -r "$rate" -d "$seconds" -m 1000000000 --quiet --json "$dir/result.json" >/dev/null
    stop_pid "$BROKER_PID"
    local removed
    removed=$(grep -c 'retention removed a commit-log segment' "$dir/ringmq.out" || true)
    python3 - "$dir/result.json" "$kind" "$rep" "$removed" <<'PY' | tee -a "$work/lines"
import json, sys
r = json.load(open(sys.argv[1]))["produce"]
l = r["latency_us"]
print(f"{sys.argv[2]} {sys.argv[3]} p50 {l['p50']} p99 {l['p99']} p99.9 {l['p999']} "
      f"messages {r['messages']} errors {r['error_count']} removed {sys.argv[4]}")
PY
}

for rep in $(seq 1 "$reps"); do
    if [ $((rep % 2)) = 1 ]; then run keep "$rep"; run remove "$rep"
    else run remove "$rep"; run keep "$rep"; fi
done
for kind in keep remove; do
    awk -v k="$kind" '$1 == k { print $6 }' "$work/lines" | sort -n |
        awk -v k="$kind" '{ v[NR] = $1 } END { printf "%s: median p99 %s µs over %d runs\n", k, v[int((NR + 1) / 2)], NR }'
done
