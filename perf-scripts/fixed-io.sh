#!/usr/bin/env bash
# Whether ringmq's disk I/O uses io_uring registered buffers: the kernel's own record of the
# requests the broker's threads submit (tracepoints io_uring:io_uring_submit_req, with the
# opcode, and io_uring:io_uring_file_get, with the descriptor), while ringmq-bench loads it.
# WRITE_FIXED / READ_FIXED are writes and reads from the registered arena; WRITE / READ from
# memory glommio could not take from it (the arena full, or never registered because
# RLIMIT_MEMLOCK was too low): glommio falls back silently, so only the kernel can say.
# Requests are split by what their descriptor names: a store file, or no descriptor looked up
# (a registered file: glommio's eventfd, written for every cross-shard wake-up). Sockets do not
# go through these opcodes (glommio uses syscalls for them). tests/broker_fixed_io.rs asserts
# the same on every test run.
#
#   perf-scripts/fixed-io.sh [--seconds N] [--flush ASYNC_FLUSH|SYNC_FLUSH] [--bin PATH]
#                            [--bench-bin PATH] [--out FILE]
#
# Workloads, each --seconds long on a fresh `ringmq standalone --shards 2`: async-1k (16
# producers, 4 in flight, 1 KiB), then catch-up (consuming that backlog: cold reads). Prints
# and writes (--out) one JSON document: per workload the counts and the plain share of the
# store's writes and reads. Needs root (tracefs) and perf (apt-get install -y linux-perf).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SECONDS_PER=10
FLUSH=ASYNC_FLUSH
OUT=
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) SECONDS_PER=$2; shift 2 ;;
    --flush) FLUSH=$2; shift 2 ;;
    --bin) RINGMQ_BIN=$2; shift 2 ;;
    --bench-bin) BENCH_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ $SECONDS_PER =~ ^[0-9]+$ && $SECONDS_PER -ge 1 && $SECONDS_PER -le 300 ]] || die "--seconds must be 1..300"
command -v perf >/dev/null || die "perf is missing (apt-get install -y linux-perf)"
[ -x "$RINGMQ_BIN" ] && [ -x "$BENCH_BIN" ] || die "build first: cargo build --release -p ringmq -p ringmq-bench"

WORK=$(mktemp -d /tmp/ringmq-fixed-io.XXXXXX)
cleanup() { stop_started; rm -rf "$WORK"; }
trap cleanup EXIT

# count WORKLOAD BENCH-ARGS...: the broker's read and write requests while the bench runs, by
# opcode and by what their descriptor is (a file of the store, or none looked up: a registered
# file, as glommio's eventfd for cross-shard wake-ups is).
count() {
    local workload=$1
    shift
    perf record -q -o "$WORK/$workload.data" -e io_uring:io_uring_submit_req \
        -e io_uring:io_uring_file_get -p "$BROKER_PID" -- sleep $((SECONDS_PER + 2)) 2>/dev/null &
    local perf_pid=$!
    sleep 1
    "$BENCH_BIN" "$@" -n "$NAMESRV_ADDR" -d "$SECONDS_PER" --quiet --data-path "$WORK" \
        >"$WORK/$workload.txt" 2>&1 || log "$workload: ringmq-bench failed, see $WORK/$workload.txt"
    ls -l "/proc/$BROKER_PID/fd" | awk 'NF > 10 { print $9, $11 }' >"$WORK/$workload.fds"
    wait "$perf_pid"
    perf script -i "$WORK/$workload.data" 2>/dev/null >"$WORK/$workload.trace"
    python3 - "$workload" "$WORK/$workload.trace" "$WORK/$workload.fds" "$WORK/broker/data" <<'PY'
import collections, json, re, sys
workload, trace, fd_list, data = sys.argv[1:]
fds = dict(line.split(None, 1) for line in open(fd_list) if line.strip())
def target(fd):
    if fd is None:
        return "registered file (no descriptor looked up)"
    path = fds.get(fd, "").strip()
    return "store file" if path.startswith(data) else "other or closed descriptor"
submit = re.compile(r"io_uring_submit_req: .*req (\S+), .*opcode (\w+),")
file_get = re.compile(r"io_uring_file_get: .*req (\S+), .*fd (-?\d+)")
reqs, by_req = [], {}
for line in open(trace):
    m = submit.search(line)
    if m:
        by_req[m.group(1)] = len(reqs)
        reqs.append([m.group(2), None])
        continue
    m = file_get.search(line)
    if m and m.group(1) in by_req:
        reqs[by_req[m.group(1)]][1] = m.group(2)
counts = collections.Counter(f"{op} to {target(fd)}" for op, fd in reqs
                             if op in ("READ", "WRITE", "READ_FIXED", "WRITE_FIXED"))
store = lambda op: counts.get(f"{op} to store file", 0)
share = lambda plain, fixed: round(plain / (plain + fixed), 4) if plain + fixed else None
print(json.dumps({"workload": workload, "counts": dict(sorted(counts.items())),
                  "store_plain_write_share": share(store("WRITE"), store("WRITE_FIXED")),
                  "store_plain_read_share": share(store("READ"), store("READ_FIXED"))}))
PY
}

start_ringmq "$WORK/broker" "$FLUSH" "$RINGMQ_NAMESRV_PORT" "$RINGMQ_BROKER_PORT"
log "async-1k: ${SECONDS_PER}s"
produce=$(count async-1k produce -q 8 -c 4 -t fixed-io -p 16 --in-flight 4 -s 1024)
log "catch-up: ${SECONDS_PER}s"
consume=$(count catch-up consume -q 8 -c 4 -t fixed-io --mode catch-up --pull-batch 32)
result=$(printf '{"flush": "%s", "seconds": %s, "shards": %s, "shard_io_memory": "%s", "results": [%s, %s]}' \
    "$FLUSH" "$SECONDS_PER" "$SHARDS" "see src/broker/runtime.rs SHARD_IO_MEMORY_BYTES" "$produce" "$consume")
echo "$result"
[ -z "$OUT" ] || echo "$result" >"$OUT"
