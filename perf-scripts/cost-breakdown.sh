#!/usr/bin/env bash
# Broker CPU per message, by stage: read/decode, route, append, flush, respond, other.
#
#   perf-scripts/cost-breakdown.sh [--bin RINGMQ] [--bench-bin BENCH] [--seconds N] [--out DIR]
#                                  [--flush ASYNC_FLUSH|SYNC_FLUSH] [--freq HZ]
#                                  [--stack-bytes B] [-- WORKLOAD ARGS...]
#
# Starts `ringmq standalone --shards 2` (--bin, default RINGMQ_BIN = target/release/ringmq;
# nothing is built here) as profile.sh does, warms it up for 2 s, then runs the workload (ringmq-
# bench's arguments without -n and -d; default side-by-side's async-1k: produce -q 8 -c 4 -t cb
# -p 16 --in-flight 4 -s 1024) for N seconds (default 10) under `perf record` of the broker
# process only, and reads around it the broker's CPU seconds (/proc) and, from the bench JSON,
# the messages moved. cost_breakdown.py then puts every sample in a stage by its stack (its
# docstring and `cost_breakdown.py --rules` give the rules, in order) and prints
#
#   | stage | share | µs per message |     µs = share × broker CPU s / messages
#
# with what each rule took, what 'other' holds, the broker's threads and the top functions; in
# OUT (default target/cost-breakdown/<time>/): breakdown.md, breakdown.json, bench.json,
# perf.data and its `perf script` text (re-read them: cost_breakdown.py --script
# OUT/perf-script.txt --pid PID --explain). Expect ~25 MB of perf.data per second.
#
# Sampling: cpu-clock at --freq (default 499 Hz) per broker thread, call graphs by DWARF
# unwinding of --stack-bytes of stack (default 65528, the most perf takes): the release build
# has no frame pointers (frame-pointer stacks name a ringmq function in ~10 % of samples),
# and 16 KiB reached the thread's root in ~70 % of samples against ~99 % at 64 KiB, which the
# rules need to see who called the allocator. Needs perf (apt-get install -y linux-perf) and
# kernel samples (root, or kernel.perf_event_paranoid ≤ 1); the broker needs ulimit -l ≥ 8 MiB.
# perf's ring buffer is 16 MiB per CPU (env PERF_MMAP, perf's -m; not root: it counts against
# kernel.perf_event_mlock_kb, so a smaller one may be needed, and then perf may lose samples,
# which the script reports). 16 KiB of stack (--stack-bytes 16384, a fifth of the data) gave
# shares within 2 points of 64 KiB's in a trial; the default stays the complete stack.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

FLUSH=ASYNC_FLUSH
RUN_SECONDS=10
FREQ=499
STACK_BYTES=65528
OUT=$ROOT/target/cost-breakdown/$(date -u +%Y%m%dT%H%M%SZ)
WORKLOAD=(produce -q 8 -c 4 -t cb -p 16 --in-flight 4 -s 1024)
while [ $# -gt 0 ]; do
    case $1 in
    --bin) RINGMQ_BIN=$2; shift 2 ;;
    --bench-bin) BENCH_BIN=$2; shift 2 ;;
    --seconds) RUN_SECONDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --flush) FLUSH=$2; shift 2 ;;
    --freq) FREQ=$2; shift 2 ;;
    --stack-bytes) STACK_BYTES=$2; shift 2 ;;
    --) shift; WORKLOAD=("$@"); break ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
[[ $RUN_SECONDS =~ ^[0-9]+$ && $RUN_SECONDS -ge 1 && $RUN_SECONDS -le 120 ]] || die "--seconds must be 1..120"
[[ $FREQ =~ ^[0-9]+$ && $FREQ -ge 10 && $FREQ -le 4999 ]] || die "--freq must be 10..4999"
[[ $STACK_BYTES =~ ^[0-9]+$ && $STACK_BYTES -ge 4096 && $STACK_BYTES -le 65528 ]] || die "--stack-bytes must be 4096..65528"
[[ $FLUSH == ASYNC_FLUSH || $FLUSH == SYNC_FLUSH ]] || die "--flush must be ASYNC_FLUSH or SYNC_FLUSH"
[ ${#WORKLOAD[@]} -gt 0 ] || die "an empty workload after --"
command -v perf >/dev/null || die "perf is missing (apt-get install -y linux-perf)"
[ -x "$RINGMQ_BIN" ] || die "no ringmq binary at $RINGMQ_BIN (--bin PATH; this script builds nothing)"
[ -x "$BENCH_BIN" ] || die "no ringmq-bench at $BENCH_BIN (--bench-bin PATH)"
python3 "$ROOT/perf-scripts/cost_breakdown.py" --self-test >/dev/null ||
    die "the stage rules fail their self-test (python3 perf-scripts/cost_breakdown.py --self-test)"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 1 ]; then
    log "warning: kernel.perf_event_paranoid > 1 and not root: no kernel samples, so the stages miss the kernel's share"
fi
mkdir -p "$OUT"
{
    echo "broker: $RINGMQ_BIN standalone --shards $SHARDS --flush-disk-type $FLUSH"
    echo "bench: $BENCH_BIN ${WORKLOAD[*]} -d $RUN_SECONDS"
    echo "perf: record -e cpu-clock -F $FREQ --call-graph dwarf,$STACK_BYTES -p <broker pid>"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/settings.txt"

start_ringmq "$OUT/broker" "$FLUSH" "$RINGMQ_NAMESRV_PORT" "$RINGMQ_BROKER_PORT" "$RINGMQ_BIN"
log "warm-up, 2 s"
"$BENCH_BIN" "${WORKLOAD[@]}" -n "$NAMESRV_ADDR" -d 2 --quiet >"$OUT/warmup.txt" 2>&1 || true

log "recording broker $BROKER_PID for ${RUN_SECONDS}s under: ringmq-bench ${WORKLOAD[*]}"
cpu0=$(cpu_seconds "$BROKER_PID")
# perf runs the bench as its workload, so the recording spans exactly the bench's run; with
# -p only the broker's threads are sampled (the bench is the timer, not a target). A larger
# ring buffer than perf's default: DWARF samples are large, and the default lost chunks here.
perf record -e cpu-clock -F "$FREQ" --call-graph "dwarf,$STACK_BYTES" -m "${PERF_MMAP:-16M}" \
    -p "$BROKER_PID" -o "$OUT/perf.data" -- \
    bash -c 'out=$1; shift; exec "$@" >"$out" 2>&1' _ "$OUT/bench.txt" \
    "$BENCH_BIN" "${WORKLOAD[@]}" -n "$NAMESRV_ADDR" -d "$RUN_SECONDS" --quiet --json "$OUT/bench.json" \
    2>"$OUT/perf-record.log" || log "perf record or the workload failed, see $OUT/perf-record.log and $OUT/bench.txt"
cpu1=$(cpu_seconds "$BROKER_PID")
pid=$BROKER_PID
stop_started
# The broker's preallocated commit-log segments are GiBs the breakdown does not need.
rm -rf "$OUT/broker/data"
[ -s "$OUT/bench.json" ] || die "the workload wrote no result; see $OUT/bench.txt and $OUT/perf-record.log"
grep -i 'lost' "$OUT/perf-record.log" >&2 && log "warning: perf lost samples (see $OUT/perf-record.log); the shares may be skewed"
cpu_s=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.3f", b - a }')

log "perf script (DWARF unwinding and inlined frames take a while)"
perf script -i "$OUT/perf.data" -F comm,pid,tid,period,ip,sym,dso --inline \
    >"$OUT/perf-script.txt" 2>"$OUT/perf-script.log" || die "perf script failed, see $OUT/perf-script.log"
python3 "$ROOT/perf-scripts/cost_breakdown.py" --script "$OUT/perf-script.txt" --pid "$pid" \
    --bench "$OUT/bench.json" --cpu-seconds "$cpu_s" --json "$OUT/breakdown.json" |
    tee "$OUT/breakdown.md"
log "results in $OUT (re-read: cost_breakdown.py --script $OUT/perf-script.txt --pid $pid --explain)"
