#!/usr/bin/env bash
# Consume-queue memory per stored message, as counts: a fresh `ringmq standalone --shards 2` is
# sent MESSAGES small messages by ringmq-bench (8 queues, batches of 32), stopped cleanly and
# started again; each shard's "shard recovered" line says how many consume-queue entries it
# loaded into memory (24 bytes each in memory), and the RSS after the start and after a
# catch-up read of everything is printed. Run it with two binaries for a before/after.
#
#   perf-scripts/cq-memory.sh [--bin target/release/ringmq] [--bench-bin target/release/ringmq-bench]
#       [--messages 1000000]
# Bounded: the fill and the read stop at MESSAGES or 600 s; each start is waited <= 120 s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

bin=$ROOT/target/release/ringmq
bench=$ROOT/target/release/ringmq-bench
messages=1000000
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --bench-bin) bench=$2; shift 2 ;;
    --messages) messages=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[ -x "$bin" ] && [ -x "$bench" ] || die "build first: cargo build --release -p ringmq -p ringmq-bench"
dir=$(mktemp -d /tmp/ringmq-cq-memory.XXXXXX)
trap 'stop_started; rm -rf "$dir"' EXIT
NS_PORT=${CQ_MEMORY_NAMESRV_PORT:-27876}
BROKER_PORT=${CQ_MEMORY_BROKER_PORT:-27911}
SECONDS_MAX=600

start() { # OUT: starts the broker on the store, waits for readiness; sets PID
    ulimit -l unlimited 2>/dev/null || true
    "$bin" standalone --listen "127.0.0.1:$BROKER_PORT" --namesrv-listen "127.0.0.1:$NS_PORT" \
        --shards 2 --data "$dir/data" --broker-ip 127.0.0.1 >"$1" 2>&1 &
    PID=$!
    STARTED_PIDS+=("$PID")
    wait_for_line "$1" 'ringmq broker listening on' 120 "$PID"
}

start "$dir/fill.out"
"$bench" produce -b "127.0.0.1:$BROKER_PORT" -t cqmem -q 8 -c 2 -p 4 --in-flight 16 --batch 32 \
    -s 64 -m "$messages" -d "$SECONDS_MAX" --quiet
log "sent $messages messages; RSS $(( $(rss_kib "$PID") / 1024 )) MiB"
stop_started
start "$dir/start.out"
loaded=$(grep -o 'queue_entries_loaded=[0-9]*' "$dir/start.out" | awk -F= '{ s += $2 } END { print s + 0 }')
log "after a clean restart: $loaded consume-queue entries loaded into memory" \
    "($(( loaded * 24 / 1048576 )) MiB at 24 B), RSS $(( $(rss_kib "$PID") / 1024 )) MiB"
"$bench" consume -b "127.0.0.1:$BROKER_PORT" -t cqmem -q 8 -m "$messages" -d "$SECONDS_MAX" \
    --quiet >/dev/null 2>&1 || log "(the catch-up read ended early)"
log "after reading everything back: RSS $(( $(rss_kib "$PID") / 1024 )) MiB"
