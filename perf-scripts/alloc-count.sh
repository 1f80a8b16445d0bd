#!/usr/bin/env bash
# Heap allocation calls per message on the broker's request path, counted by heaptrack.
#
#   perf-scripts/alloc-count.sh [--bin RINGMQ] [--bench-bin BENCH] [--messages N] [--out DIR]
#                               [--shards S] [-- WORKLOAD ARGS...]
#
# Starts `ringmq standalone --shards S` (default 2; --bin, default target/release/ringmq; nothing
# is built here) under heaptrack, sends N messages (default 50 000) with ringmq-bench (default workload:
# side-by-side's async-1k, `produce -q 8 -c 4 -p 16 --in-flight 4 -s 1024`), then drains them
# with a catch-up consume, and stops the broker. The same start and stop with no load is
# counted too and subtracted, so what is printed is what messages cost: allocation calls per
# message for the produce run and for produce + consume, by the innermost ringmq function
# (alloc_count.py). Counts, not times: the figures do not depend on what else the host runs.
# With 2 shards a send to a queue the other shard owns adds the bus hop's allocations, so the
# figure moves with which shard each connection landed on; with --shards 1 no send crosses.
# Needs heaptrack (apt-get install -y heaptrack) and ulimit -l ≥ 8 MiB for the broker.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/ringmq
BENCH=$ROOT/target/release/ringmq-bench
MESSAGES=50000
SHARDS=2
OUT=$ROOT/target/alloc-count/$(date -u +%Y%m%dT%H%M%S)
WORKLOAD=()
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift 2 ;;
    --bench-bin) BENCH=$2; shift 2 ;;
    --messages) MESSAGES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --shards) SHARDS=$2; shift 2 ;;
    --) shift; WORKLOAD=("$@"); break ;;
    *) echo "alloc-count.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#WORKLOAD[@]} -gt 0 ] || WORKLOAD=(produce -q 8 -c 4 -p 16 --in-flight 4 -s 1024)
command -v heaptrack >/dev/null || { echo "alloc-count.sh: needs heaptrack (apt-get install -y heaptrack)" >&2; exit 2; }
mkdir -p "$OUT"
ulimit -l unlimited 2>/dev/null || true
NS=127.0.0.1:38876
BROKER=127.0.0.1:38911

# broker NAME LOAD: one broker start under heaptrack, LOAD (a function) run against it, then
# a clean stop; collapsed allocation stacks into OUT/NAME.stacks.
broker() {
    local name=$1 load=$2 dir=$OUT/$1
    mkdir -p "$dir"
    heaptrack -o "$dir/heaptrack" "$BIN" standalone --listen "$BROKER" --namesrv-listen "$NS" \
        --shards "$SHARDS" --data "$dir/data" --flush-disk-type ASYNC_FLUSH --broker-ip 127.0.0.1 \
        >"$dir/broker.out" 2>&1 &
    local pid=$!
    for _ in $(seq 1 300); do
        grep -qs 'ringmq broker listening on' "$dir/broker.out" && break
        kill -0 $pid 2>/dev/null || { cat "$dir/broker.out" >&2; exit 1; }
        sleep 0.1
    done
    "$load" "$dir"
    # heaptrack runs the broker as its child: stop that one, then let heaptrack write its file.
    pkill -INT -P $pid -f "$BIN standalone" 2>/dev/null || pkill -INT -f "$BIN standalone --listen $BROKER"
    wait $pid || true
    heaptrack_print -f "$dir"/heaptrack.*zst --print-peaks 0 --print-temporary 0 --print-leaks 0 \
        --print-allocators 0 --flamegraph-cost-type allocations -F "$OUT/$name.stacks" >/dev/null
    rm -rf "$dir/data"
}

idle() { :; }
produce() {
    "$BENCH" "${WORKLOAD[@]}" -b "$BROKER" -t alloc -m "$MESSAGES" -d 120 --quiet \
        --data-path "$1" --json "$1/produce.json" >"$1/produce.txt" 2>&1
}
produce_consume() {
    produce "$1"
    "$BENCH" consume -b "$BROKER" -q 8 -c 4 -t alloc --no-create-topic --mode catch-up --pull-batch 32 \
        -m "$MESSAGES" -d 120 --quiet --data-path "$1" --json "$1/consume.json" >"$1/consume.txt" 2>&1
}
sent() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["produce"]["messages"])' "$1"; }

broker idle idle
broker produce produce
broker produce-consume produce_consume
n=$(sent "$OUT/produce/produce.json")
m=$(sent "$OUT/produce-consume/produce.json")
{
    echo "## produce (${WORKLOAD[*]}), $n messages"
    python3 "$ROOT/perf-scripts/alloc_count.py" "$OUT/produce.stacks" "$n" "$OUT/idle.stacks"
    echo
    echo "## produce + catch-up consume, $m messages (each sent and pulled once)"
    python3 "$ROOT/perf-scripts/alloc_count.py" "$OUT/produce-consume.stacks" "$m" "$OUT/idle.stacks"
} | tee "$OUT/alloc-count.md"
echo "alloc-count.sh: $OUT/alloc-count.md"
