#!/usr/bin/env bash
# Starts and stops `ringmq standalone --shards 2` many times at once on a host kept busy,
# and counts the brokers that never became ready or never stopped on SIGTERM. It found
# glommio's lost cross-executor wake-ups: about one start in 30 hung ("shards did not start
# in time") and a stop could hang with both shards spinning. They were first bounded by a
# 10 ms timer per shard; since the shards talk through ringmq-bus (bus/README.md) and the
# stop signal rings its doorbell, no glommio cross-executor wake-up is left and no timer
# either: docs/BENCHMARKS.md has the result (0 problems in 504 starts beside 12 CPU hogs).
# Bounded: ROUNDS x BROKERS starts, each waited <= 20 s.
#   perf-scripts/start-stop-stress.sh [RINGMQ] [ROUNDS] [BROKERS] [HOGS]
set -euo pipefail
ringmq=${1:-target/release/ringmq}
rounds=${2:-10}
brokers=${3:-12}
hogs=${4:-12}
work=$(mktemp -d /tmp/ringmq-stress.XXXXXX)
# Small segments: every broker preallocates one per shard.
printf 'mappedFileSizeCommitLog=67108864\n' > "$work/broker.conf"
hog_pids=()
cleanup() { kill "${hog_pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 "$hogs"); do timeout 900 sh -c 'while :; do :; done' & hog_pids+=($!); done

one() { # round broker
    # Below the kernel's ephemeral range (32768-60999 by default): another broker's outgoing
    # connection can hold a port in that range, and the start then fails, rightly, with
    # "Address already in use" (seen at 45070), which is no wake-up problem.
    local log="$work/log-$1-$2" base=$((20000 + $2 * 10)) pid t
    : >"$log" # made before the start, so the readiness wait never greps a missing file
    "$ringmq" standalone --shards 2 -c "$work/broker.conf" --listen "127.0.0.1:$base" \
        --namesrv-listen "127.0.0.1:$((base + 5))" --data "$work/d-$1-$2" > "$log" 2>&1 &
    pid=$!
    for t in $(seq 1 80); do grep -q "ringmq broker listening" "$log" && break; sleep 0.25; done
    if ! grep -q "ringmq broker listening" "$log"; then
        if kill -0 "$pid" 2>/dev/null; then echo "NOT READY round $1 broker $2"
        else echo "EXITED round $1 broker $2: $(tail -n 1 "$log")"; fi
    fi
    kill -TERM "$pid"
    for t in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then echo "NO STOP round $1 broker $2"; kill -9 "$pid"; fi
    wait "$pid" 2>/dev/null || true
    rm -rf "$work/d-$1-$2"
}
for r in $(seq 1 "$rounds"); do
    for b in $(seq 1 "$brokers"); do one "$r" "$b" & done
    wait $(jobs -p | grep -v -F -x -f <(printf '%s\n' "${hog_pids[@]}")) 2>/dev/null || true
done | tee "$work/problems"
bad=$(grep -c . "$work/problems" || true)
echo "$((rounds * brokers)) starts, $bad problems"
[ "$bad" = 0 ]
