#!/usr/bin/env bash
# Start-up time of `ringmq standalone` after kill -9, against the size of its commit log.
# For each size: a fresh store is filled by ringmq-bench (async, pipelined sends of SIZE-byte
# bodies) until the log holds that many GiB; the broker is killed (SIGKILL) while a second
# producer is still sending, so the crash lands mid-load as a real one does; then it is
# started again REPS times on the same data (each later restart after a SIGKILL of the idle,
# just-recovered broker) and the time from exec to its "ringmq broker listening on" line is
# measured, with the RSS it has then. Prints one line per start and a table
# (`| log GiB | messages | start-up s (each) | RSS MiB |`) for docs/BENCHMARKS.md.
# With --perf, the first restart of each size runs under `perf record -g` and its top
# functions are printed beside the table.
#
#   perf-scripts/recovery-time.sh [--sizes "1 5"] [--reps 3] [--shards 2] [--size 1024]
#       [--bin target/release/ringmq] [--bench-bin target/release/ringmq-bench]
#       [--dir DIR] [--perf]
# Bounded: each GiB of a fill stops at its message count (or 600 s, the bench's longest run),
# each start is waited <= 600 s.
# Needs the disk space of the largest size plus a segment per shard; removes its store after
# each size (its directory with --dir is kept, the stores in it are not).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

sizes="1 5"
reps=3
SHARDS=2
body=1024
bin=$ROOT/target/release/ringmq
bench=$ROOT/target/release/ringmq-bench
dir=""
use_perf=""
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --shards) SHARDS=$2; shift 2 ;;
    --size) body=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --bench-bin) bench=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --perf) use_perf=1; shift ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[ -x "$bin" ] && [ -x "$bench" ] || die "build first: cargo build --release -p ringmq -p ringmq-bench"
if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/ringmq-recovery.XXXXXX)
    trap 'stop_started; rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"

# Ports of their own, below the ephemeral range (another process's outgoing connection could
# hold a port in it).
NS_PORT=${RECOVERY_NAMESRV_PORT:-26876}
BROKER_PORT=${RECOVERY_BROKER_PORT:-26911}
# Bytes one stored message takes: the body, the stored record's fixed fields, topic and
# properties (~100 B with the bench's), our 8-byte trailer; a little more is harmless.
RECORD_OVERHEAD_BYTES=200
# Bound on one fill and on one start.
FILL_SECONDS_MAX=600
START_SECONDS_MAX=600
# How long the second producer sends before the kill, and how long it would send at most.
KILL_AFTER_SECONDS=2
LOAD_SECONDS_MAX=30

broker_cmd() { # DATA: the broker's command line, the same at every start
    echo "$bin" standalone --listen "127.0.0.1:$BROKER_PORT" --namesrv-listen "127.0.0.1:$NS_PORT" \
        --shards "$SHARDS" --data "$1" --broker-ip 127.0.0.1
}

# start_timed DATA OUT [perf.data]: starts the broker, waits for readiness; sets BROKER_PID,
# START_SECONDS and START_RSS_MIB.
start_timed() {
    local data=$1 out=$2 perf_data=${3:-} t0 t1
    : >"$out"
    ulimit -l unlimited 2>/dev/null || true
    t0=$(date +%s%N)
    if [ -n "$perf_data" ]; then
        perf record -q -g -o "$perf_data" -- $(broker_cmd "$data") >"$out" 2>&1 &
    else
        $(broker_cmd "$data") >"$out" 2>&1 &
    fi
    BROKER_PID=$!
    STARTED_PIDS+=("$BROKER_PID")
    wait_for_line "$out" 'ringmq broker listening on' "$START_SECONDS_MAX" "$BROKER_PID"
    t1=$(date +%s%N)
    START_SECONDS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    local pid=$BROKER_PID
    # Under perf the broker is perf's child.
    [ -n "$perf_data" ] && pid=$(pgrep -P "$BROKER_PID" -x ringmq || echo "$BROKER_PID")
    START_RSS_MIB=$(( $(rss_kib "$pid") / 1024 ))
    BROKER_REAL_PID=$pid
}

kill9() { # the broker, as a crash
    kill -KILL "$BROKER_REAL_PID" 2>/dev/null || true
    wait "$BROKER_PID" 2>/dev/null || true
    STARTED_PIDS=("${STARTED_PIDS[@]/$BROKER_PID}")
}

produce() { # MESSAGES SECONDS [--quiet]: closed-loop async sends to the broker
    "$bench" produce -b "127.0.0.1:$BROKER_PORT" -t recovery -q 8 -c 2 -p 4 --in-flight 64 \
        -s "$body" -m "$1" -d "$2" --quiet
}

table="| log GiB | messages | start-up after kill -9, s (each start) | RSS after start, MiB |
| --- | --- | --- | --- |"
for gib in $sizes; do
    data="$dir/store-$gib"
    rm -rf "$data"
    per_gib=$(( (1 << 30) / (body + RECORD_OVERHEAD_BYTES) ))
    messages=$(( gib * per_gib ))
    start_timed "$data" "$dir/fill-$gib.out"
    log "empty store: ${START_SECONDS} s to ready, RSS ${START_RSS_MIB} MiB"
    log "filling ${gib} GiB: $messages messages of $body B"
    for _ in $(seq 1 "$gib"); do produce "$per_gib" "$FILL_SECONDS_MAX"; done
    produce 100000000 "$LOAD_SECONDS_MAX" &
    load_pid=$!
    sleep "$KILL_AFTER_SECONDS"
    kill9
    wait "$load_pid" 2>/dev/null || true
    log_bytes=$(du -sb --apparent-size "$data"/*/commitlog 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
    log "killed mid-load; commit-log files: $((log_bytes >> 20)) MiB (segments preallocated)"
    times=() rss=""
    for rep in $(seq 1 "$reps"); do
        perf_data=""
        [ -n "$use_perf" ] && [ "$rep" = 1 ] && perf_data="$dir/perf-$gib.data"
        start_timed "$data" "$dir/start-$gib-$rep.out" "$perf_data"
        log "${gib} GiB, start $rep: ${START_SECONDS} s to ready, RSS ${START_RSS_MIB} MiB"
        times+=("$START_SECONDS") rss=$START_RSS_MIB
        if [ -n "$perf_data" ]; then
            # perf writes its file when the broker, its child, has ended.
            kill -TERM "$BROKER_REAL_PID" 2>/dev/null || true
            timeout 60 tail --pid="$BROKER_PID" -f /dev/null || true
            wait "$BROKER_PID" 2>/dev/null || true
            STARTED_PIDS=("${STARTED_PIDS[@]/$BROKER_PID}")
            perf report -i "$perf_data" --no-children --percent-limit 2 --stdio 2>/dev/null |
                grep -E '^ +[0-9.]+%' | head -15 >"$dir/perf-$gib.top" || true
            log "top functions of start 1 at ${gib} GiB (perf, whole run incl. the stop):"
            cat "$dir/perf-$gib.top" >&2
        else
            sleep 2 # the checkpoint of the recovered state is written within a second
            kill9
        fi
    done
    table+="
| $gib | $messages | $(printf '%s / ' "${times[@]}" | sed 's| / $||') | $rss |"
    rm -rf "$data"
done
echo "$table"
