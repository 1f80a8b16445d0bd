#!/usr/bin/env bash
# Apache RocketMQ and ringmq under the same ringmq-bench workloads, one after the other, in one
# run on this host, and a table of ratios (ringmq / Apache, and ringmq / ringmq-base when a
# second ringmq binary runs too). See docs/BENCHMARKS.md.
#
#   perf-scripts/side-by-side.sh [--seconds N] [--reps R] [--brokers "apache ringmq"] [--out DIR]
#                                [--bench-bin PATH] [--base-bin PATH] [--alternate] [--skip-build]
#                                [--no-limits] [--phases "async e2e sync java"]
#
# Broker kinds (--brokers, run in the order given, each repetition):
#   apache       Apache RocketMQ 5.3.3 (APACHE_VERSION; fetched by perf-scripts/apache/pom.xml)
#   apache-V     Apache RocketMQ release V, e.g. apache-5.5.1 (the newest on Maven Central; it
#                serves only part of 5.5.1, the rest comes from 5.5.0: lib.sh APACHE_FILL_VERSIONS)
#   ringmq       `ringmq standalone` from RINGMQ_BIN (default target/release/ringmq, built here)
#   ringmq-base  the same start of another ringmq binary: --base-bin or RINGMQ_BASE_BIN
#                (default target/baseline/ringmq, made by build-baseline.sh), e.g. today's main beside a change
# Every broker is driven by the one bench binary: --bench-bin or BENCH_BIN (default
# target/release/ringmq-bench, built here); give a prebuilt one to compare two ringmq builds
# under the very same client. --skip-build builds nothing. --alternate runs the kinds in the
# reverse order in every second repetition, so that going first or second (a fresh page cache,
# the previous broker's files just removed) does not favour one kind in every repetition.
#
# Per repetition, per broker (each started fresh, data in OUT, removed after):
#   ASYNC_FLUSH broker: async-1k (1 KiB, 16 producers, 4 sends in flight each), size-16k,
#                       batch-1k (batches of 32), catch-up (consume async-1k's backlog)
#   ASYNC_FLUSH broker: e2e at half the slower broker's async-1k rate (open loop, 16 producers)
#   SYNC_FLUSH broker:  sync-1k (1 KiB, 64 synchronous producers)
#   ASYNC_FLUSH broker, once per header encoding (json, rocketmq), the official Java client
#                       (perf-scripts/java/JavaBench.java, rocketmq-client 5.3.3):
#                       java-produce-ENC (JAVA_THREADS=64 threads of synchronous 1 KiB sends
#                       after a JAVA_WARMUP_SECONDS=5 warm-up, --seconds long, at most
#                       JAVA_MAX_MESSAGES=2000000), then java-consume-ENC (a push consumer
#                       draining that backlog, at most JAVA_CONSUME_SECONDS=120)
#   ASYNC_FLUSH broker, phase `features` (not in the default --phases), the official Java
#                       client with JSON headers: java-txn-produce (transactional sends),
#                       java-filter-consume-all / -sql92 (a backlog drained unfiltered and by
#                       an SQL92 selector matching half), java-timer (TIMER_COUNT=100000 timer
#                       messages pending at once, due over TIMER_SPREAD_SECONDS=5: delivery
#                       rate and lateness percentiles)
# plus the broker's CPU seconds per million messages and its RSS idle and at peak, and first
# the host's physical limits (physical-limits.sh) for the table to compare against. --phases
# runs only some of those broker starts (e2e needs async: its rate comes from async-1k).
# The Java workloads also report the load generator's CPU per million messages and which
# process bound the run (JavaBench reads both processes' /proc/PID/stat at its window's edges).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUN_SECONDS=10
# Load before the measured workloads of every broker start: the JVM compiles its hot paths
# in the first seconds, and both brokers' page caches and files warm up.
WARMUP_SECONDS=${WARMUP_SECONDS:-5}
REPS=1
BROKER_KINDS="apache ringmq"
OUT=$ROOT/target/side-by-side/$(date -u +%Y%m%dT%H%M%SZ)
BUILD=1
LIMITS=1
ALTERNATE=0
PHASES="async e2e sync java"
JAVA_THREADS=${JAVA_THREADS:-64}
JAVA_WARMUP_SECONDS=${JAVA_WARMUP_SECONDS:-5}
JAVA_MAX_MESSAGES=${JAVA_MAX_MESSAGES:-2000000}
JAVA_CONSUME_SECONDS=${JAVA_CONSUME_SECONDS:-120}
# The features phase's timer workload: 100 k timers pending at once (the sends end within the
# lead), due over 5 s.
TIMER_COUNT=${TIMER_COUNT:-100000}
TIMER_LEAD_SECONDS=${TIMER_LEAD_SECONDS:-40}
TIMER_SPREAD_SECONDS=${TIMER_SPREAD_SECONDS:-5}
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) RUN_SECONDS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --brokers) BROKER_KINDS=$2; shift 2 ;;
    --bench-bin) BENCH_BIN=$2; shift 2 ;;
    --base-bin) RINGMQ_BASE_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    --no-limits) LIMITS=0; shift ;;
    --alternate) ALTERNATE=1; shift ;;
    --phases) PHASES=$2; shift 2 ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
    esac
done
# Bounds: a run is at most 10 minutes of load per workload, at most 10 repetitions.
[[ $RUN_SECONDS =~ ^[0-9]+$ && $RUN_SECONDS -ge 1 && $RUN_SECONDS -le 600 ]] || die "--seconds must be 1..600"
[[ $REPS =~ ^[0-9]+$ && $REPS -ge 1 && $REPS -le 10 ]] || die "--reps must be 1..10"
# Every kind is checked before anything starts, so a typo does not surface an hour in.
has_kind() { [[ " $BROKER_KINDS " == *" $1 "* ]]; }
for kind in $BROKER_KINDS; do
    known_kind "$kind" || die "unknown broker kind $kind (known: $BROKER_KINDS_KNOWN)"
done
APACHE_KINDS=$(for kind in $BROKER_KINDS; do ! is_apache_kind "$kind" || echo "$kind"; done | tr '\n' ' ')
[ -n "${BROKER_KINDS// /}" ] || die "--brokers names no broker"
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
for phase in $PHASES; do
    [[ " async e2e sync java features " == *" $phase "* ]] || die "unknown phase $phase (known: async e2e sync java features)"
done
! has_phase e2e || has_phase async || die "phase e2e needs phase async (its rate is half async-1k's)"
! has_kind ringmq-base || need_ringmq_base

if [ "$BUILD" = 1 ]; then
    # Only what this run uses from target/release: a bench binary given from elsewhere is used
    # as it is, and ringmq is built only for the kind `ringmq`.
    if [ "$BENCH_BIN" = "$ROOT/target/release/ringmq-bench" ]; then
        log "building ringmq-bench (release)"
        (cd "$ROOT" && cargo build --release -q -p ringmq-bench)
    fi
    if has_kind ringmq && [ "$RINGMQ_BIN" = "$ROOT/target/release/ringmq" ]; then
        log "building ringmq (release)"
        (cd "$ROOT" && cargo build --release -q -p ringmq)
    fi
fi
[ -x "$BENCH_BIN" ] || die "no ringmq-bench at $BENCH_BIN"
! has_kind ringmq || [ -x "$RINGMQ_BIN" ] || die "no ringmq binary at $RINGMQ_BIN"
mkdir -p "$OUT"
# Every Apache release is fetched before anything starts (and a missing one fails here).
for kind in $APACHE_KINDS; do fetch_apache "$(apache_version "$kind")"; done
! has_phase java && ! has_phase features || prepare_java_bench "$OUT/java"
{
    for kind in $APACHE_KINDS; do
        echo "$kind: Apache RocketMQ $(apache_version "$kind"), jars $(cat "$(apache_home "$(apache_version "$kind")")/JARS")"
    done
    if [ -n "$APACHE_KINDS" ]; then
        echo "Apache broker JVM: $APACHE_BROKER_JAVA_OPTS"
        echo "Apache NameServer JVM: $APACHE_NAMESRV_JAVA_OPTS"
        echo "Apache broker.conf: defaults + brokerIP1/bindAddress=127.0.0.1, enablePropertyFilter=true, flushDiskType per phase"
    fi
    echo "ringmq: standalone --shards $SHARDS --flush-disk-type per phase, broker.conf enablePropertyFilter=true"
    echo "brokers, in run order: $BROKER_KINDS$([ "$ALTERNATE" = 0 ] || echo ', reversed in even repetitions')"
    describe_bin() { printf '%s (sha256 %s)' "$1" "$(sha256sum "$1" | cut -c1-16)"; }
    echo "bench binary: $(describe_bin "$BENCH_BIN")"
    ! has_kind ringmq || echo "ringmq binary: $(describe_bin "$RINGMQ_BIN")"
    if has_kind ringmq-base; then
        echo "ringmq-base binary: $(describe_bin "$RINGMQ_BASE_BIN")"
        # A COMMIT file beside the binary (as build-baseline.sh writes) says what it was built from.
        [ ! -f "$(dirname "$RINGMQ_BASE_BIN")/COMMIT" ] ||
            echo "ringmq-base commit: $(cat "$(dirname "$RINGMQ_BASE_BIN")/COMMIT")"
    fi
    [ -z "$APACHE_KINDS" ] && ! has_phase java || echo "java: $(java -version 2>&1 | head -1)"
    echo "phases: $PHASES"
    if has_phase java; then
        echo "Java load generator: perf-scripts/java/JavaBench.java, $(grep -o 'rocketmq-client-[0-9.]*[0-9]' "$OUT/java/classpath.txt" | head -1)"
        echo "Java load generator JVM: $JAVA_BENCH_OPTS"
        echo "Java workloads: $JAVA_THREADS sync-send threads, 1 KiB, ${JAVA_WARMUP_SECONDS}s client warm-up, $RUN_SECONDS s or $JAVA_MAX_MESSAGES messages; push consumer (20 threads) draining it, at most $JAVA_CONSUME_SECONDS s"
    fi
    echo "seconds per workload: $RUN_SECONDS; warm-up per broker start: ${WARMUP_SECONDS}s; repetitions: $REPS"
} >"$OUT/settings.txt"
"$BENCH_BIN" host --data-path "$OUT" >"$OUT/host.json"
if [ "$LIMITS" = 1 ]; then
    log "physical limits of this host (perf-scripts/physical-limits.sh)"
    "$ROOT/perf-scripts/physical-limits.sh" --seconds 5 --dir "$OUT/limits" \
        --out "$OUT/physical-limits.json" || log "physical limits failed; the table goes without them"
fi

# bench REP KIND NAME ARGS...: one ringmq-bench run against the broker now up, with the broker's
# CPU time and memory around it, into OUT/REP/KIND-NAME.{json,proc}.
bench() {
    local rep=$1 kind=$2 name=$3
    shift 3
    local dir=$OUT/$rep
    mkdir -p "$dir"
    local cpu0 cpu1
    cpu0=$(cpu_seconds "$BROKER_PID")
    log "rep $rep $kind $name: ringmq-bench $*"
    "$BENCH_BIN" "$@" -n "$NAMESRV_ADDR" -d "$RUN_SECONDS" --quiet --data-path "$dir" \
        --json "$dir/$kind-$name.json" --plot "$dir/$kind-$name.html" >"$dir/$kind-$name.txt" 2>&1 ||
        log "rep $rep $kind $name: ringmq-bench failed, see $dir/$kind-$name.txt"
    cpu1=$(cpu_seconds "$BROKER_PID")
    printf '{"cpu_s": %s, "rss_kib": %s, "rss_peak_kib": %s, "rss_idle_kib": %s}\n' \
        "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.3f", b - a }')" \
        "$(rss_kib "$BROKER_PID")" "$(rss_kib "$BROKER_PID" VmHWM)" "$RSS_IDLE" >"$dir/$kind-$name.proc"
}

# with_broker KIND FLUSH REP FUNCTION: FUNCTION runs against a fresh broker, stopped afterwards.
with_broker() {
    local kind=$1 flush=$2 rep=$3 fn=$4
    # One directory per start: the readiness lines are waited for in its logs, so a second
    # start must not find the first one's.
    local dir=$OUT/$rep/$kind-$fn
    start_broker "$kind" "$dir" "$flush"
    RSS_IDLE=$(rss_kib "$BROKER_PID")
    log "rep $rep $kind: ${WARMUP_SECONDS}s warm-up"
    "$BENCH_BIN" produce -n "$NAMESRV_ADDR" -q 8 -c 4 -t sbs-warmup -p 16 --in-flight 4 -s 1024 \
        -d "$WARMUP_SECONDS" --quiet --data-path "$dir" >"$dir/warmup.txt" 2>&1 || true
    "$fn" "$rep" "$kind"
    stop_started
    rm -rf "$dir/store" "$dir/data"
}

P="produce -q 8 -c 4"
async_phase() {
    local rep=$1 kind=$2
    bench "$rep" "$kind" async-1k $P -t sbs-async -p 16 --in-flight 4 -s 1024
    bench "$rep" "$kind" size-16k $P -t sbs-16k -p 16 --in-flight 4 -s 16384
    bench "$rep" "$kind" batch-1k $P -t sbs-batch -p 16 --in-flight 1 -s 1024 --batch 32
    bench "$rep" "$kind" catch-up consume -q 8 -c 4 -t sbs-async --mode catch-up --pull-batch 32
}
sync_phase() {
    bench "$1" "$2" sync-1k $P -t sbs-sync -p 64 --in-flight 1 -s 1024
}
e2e_phase() {
    bench "$1" "$2" e2e e2e -q 8 -c 4 -t sbs-e2e -p 16 --in-flight 4 -s 1024 -r "$E2E_RATE"
}

# java_workloads REP KIND ENCODING: java-produce-ENC, then java-consume-ENC of its backlog, into
# OUT/REP/KIND-java-{produce,consume}-enc.{json,txt,proc}; the .proc's cpu_s is the broker's
# CPU in JavaBench's window (not around the JVM's start), so CPU per message means the same
# as the other workloads'.
java_workloads() {
    local rep=$1 kind=$2 encoding=$3 enc dir=$OUT/$1
    enc=$(echo "$encoding" | tr '[:upper:]' '[:lower:]')
    local topic=sbs-java-$enc produced
    local p=$dir/$kind-java-produce-$enc c=$dir/$kind-java-consume-$enc
    mkdir -p "$dir"
    log "rep $rep $kind java-produce-$enc: $JAVA_THREADS threads of sync sends, ${RUN_SECONDS}s or $JAVA_MAX_MESSAGES messages"
    java_bench "$encoding" "$dir/$kind-java-$enc" produce --namesrv "$NAMESRV_ADDR" --topic "$topic" \
        --threads "$JAVA_THREADS" --size 1024 --seconds "$RUN_SECONDS" --warmup-seconds "$JAVA_WARMUP_SECONDS" \
        --max-messages "$JAVA_MAX_MESSAGES" --broker-pid "$BROKER_PID" --json "$p.json" >"$p.txt" 2>&1 ||
        log "rep $rep $kind java-produce-$enc: JavaBench failed, see $p.txt"
    java_proc "$p"
    produced=$(json_field "$p.json" produce messages)
    if [ "$produced" -gt 0 ]; then
        log "rep $rep $kind java-consume-$enc: push consumer draining $produced messages"
        java_bench "$encoding" "$dir/$kind-java-$enc" consume --namesrv "$NAMESRV_ADDR" --topic "$topic" \
            --group "sbs-java-$enc-$rep" --expect "$produced" --seconds "$JAVA_CONSUME_SECONDS" \
            --broker-pid "$BROKER_PID" --json "$c.json" >"$c.txt" 2>&1 ||
            log "rep $rep $kind java-consume-$enc: JavaBench failed, see $c.txt"
        java_proc "$c"
    else
        log "rep $rep $kind java-produce-$enc: nothing produced, java-consume-$enc skipped"
    fi
}
java_proc() {
    python3 - "$1.json" "$(rss_kib "$BROKER_PID")" "$(rss_kib "$BROKER_PID" VmHWM)" "$RSS_IDLE" >"$1.proc" <<'PY' || rm -f "$1.proc"
import json, sys
cpu = json.load(open(sys.argv[1]))["cpu"]
print(json.dumps({"cpu_s": cpu["broker_s"], "rss_kib": int(sys.argv[2]), "rss_peak_kib": int(sys.argv[3]),
                  "rss_idle_kib": int(sys.argv[4]), "window": "JavaBench"}))
PY
}
# features_phase REP KIND: the official Java client (JSON headers, its default) on what
# RocketMQ does beyond plain sends: java-txn-produce (every send a transaction that commits at
# once), java-filter-produce (bench_n = seq mod 100) drained twice, by a `*` consumer
# (java-filter-consume-all) and by an SQL92 one selecting half (java-filter-consume-sql92), and
# java-timer (TIMER_COUNT timer messages due over TIMER_SPREAD_SECONDS, all pending at once).
features_phase() {
    local rep=$1 kind=$2 dir=$OUT/$1 produced half
    local t=$dir/$kind-java-txn-produce f=$dir/$kind-java-filter-produce
    mkdir -p "$dir"
    log "rep $rep $kind java-txn-produce: $JAVA_THREADS threads of transactional sends, ${RUN_SECONDS}s"
    java_bench JSON "$dir/$kind-java-features" produce --namesrv "$NAMESRV_ADDR" --topic sbs-txn \
        --threads "$JAVA_THREADS" --size 1024 --seconds "$RUN_SECONDS" --warmup-seconds "$JAVA_WARMUP_SECONDS" \
        --max-messages "$JAVA_MAX_MESSAGES" --transactional 1 --broker-pid "$BROKER_PID" --json "$t.json" >"$t.txt" 2>&1 ||
        log "rep $rep $kind java-txn-produce: JavaBench failed, see $t.txt"
    java_proc "$t"
    log "rep $rep $kind java-filter-produce: ${RUN_SECONDS}s of sends with bench_n"
    java_bench JSON "$dir/$kind-java-features" produce --namesrv "$NAMESRV_ADDR" --topic sbs-filter \
        --threads "$JAVA_THREADS" --size 1024 --seconds "$RUN_SECONDS" --warmup-seconds 0 \
        --max-messages "$JAVA_MAX_MESSAGES" --filter-props 1 --broker-pid "$BROKER_PID" --json "$f.json" >"$f.txt" 2>&1 ||
        log "rep $rep $kind java-filter-produce: JavaBench failed, see $f.txt"
    java_proc "$f"
    produced=$(json_field "$f.json" produce messages)
    half=$(json_field "$f.json" produce bench_n_below_half)
    if [ "$produced" -gt 0 ]; then
        java_drain "$rep" "$kind" java-filter-consume-all "$produced"
        java_drain "$rep" "$kind" java-filter-consume-sql92 "$half" --sql92 "bench_n < 50" --check-below 50
    fi
    local m=$dir/$kind-java-timer
    log "rep $rep $kind java-timer: $TIMER_COUNT timer messages due over ${TIMER_SPREAD_SECONDS}s from ${TIMER_LEAD_SECONDS}s on"
    java_bench JSON "$dir/$kind-java-features" timer --namesrv "$NAMESRV_ADDR" --topic sbs-timer \
        --group "sbs-timer-$rep" --count "$TIMER_COUNT" --lead-seconds "$TIMER_LEAD_SECONDS" \
        --spread-seconds "$TIMER_SPREAD_SECONDS" --threads "$JAVA_THREADS" \
        --broker-pid "$BROKER_PID" --json "$m.json" >"$m.txt" 2>&1 ||
        log "rep $rep $kind java-timer: JavaBench failed, see $m.txt"
    java_proc "$m"
}
# java_drain REP KIND WORKLOAD EXPECT [ARGS...]: a push consumer of sbs-filter, a group of its
# own, until EXPECT deliveries (or JAVA_CONSUME_SECONDS).
java_drain() {
    local rep=$1 kind=$2 workload=$3 expect=$4 c=$OUT/$1/$2-$3
    shift 4
    log "rep $rep $kind $workload: $expect deliveries expected $*"
    java_bench JSON "$OUT/$rep/$kind-java-features" consume --namesrv "$NAMESRV_ADDR" --topic sbs-filter \
        --group "sbs-$workload-$rep" --expect "$expect" --seconds "$JAVA_CONSUME_SECONDS" "$@" \
        --broker-pid "$BROKER_PID" --json "$c.json" >"$c.txt" 2>&1 ||
        log "rep $rep $kind $workload: JavaBench failed, see $c.txt"
    java_proc "$c"
}
json_field() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' "$@" 2>/dev/null || echo 0
}
java_json_phase() { java_workloads "$1" "$2" JSON; }
java_rocketmq_phase() { java_workloads "$1" "$2" ROCKETMQ; }

msg_rate() { python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["produce"]["msg_per_s"]))' "$1" 2>/dev/null || echo 0; }

KINDS_FORWARD=$BROKER_KINDS
KINDS_REVERSED=$(echo "$BROKER_KINDS" | tr ' ' '\n' | grep . | tac | tr '\n' ' ')
for rep in $(seq 1 "$REPS"); do
    BROKER_KINDS=$KINDS_FORWARD
    if [ "$ALTERNATE" = 1 ] && [ $((rep % 2)) = 0 ]; then BROKER_KINDS=$KINDS_REVERSED; fi
    if has_phase async; then
        for kind in $BROKER_KINDS; do with_broker "$kind" ASYNC_FLUSH "$rep" async_phase; done
    fi
    if has_phase e2e; then
        E2E_RATE=
        for kind in $BROKER_KINDS; do
            rate=$(msg_rate "$OUT/$rep/$kind-async-1k.json")
            if [ -z "$E2E_RATE" ] || [ "$rate" -lt "$E2E_RATE" ]; then E2E_RATE=$rate; fi
        done
        E2E_RATE=$((E2E_RATE / 2))
        if [ "$E2E_RATE" -gt 0 ]; then
            for kind in $BROKER_KINDS; do with_broker "$kind" ASYNC_FLUSH "$rep" e2e_phase; done
        else
            log "rep $rep: no async-1k rate, e2e skipped"
        fi
    fi
    if has_phase sync; then
        for kind in $BROKER_KINDS; do with_broker "$kind" SYNC_FLUSH "$rep" sync_phase; done
    fi
    if has_phase features; then
        for kind in $BROKER_KINDS; do with_broker "$kind" ASYNC_FLUSH "$rep" features_phase; done
    fi
    if has_phase java; then
        # The kinds alternate within an encoding, as every phase does; JSON first.
        for kind in $BROKER_KINDS; do with_broker "$kind" ASYNC_FLUSH "$rep" java_json_phase; done
        for kind in $BROKER_KINDS; do with_broker "$kind" ASYNC_FLUSH "$rep" java_rocketmq_phase; done
    fi
done

python3 "$ROOT/perf-scripts/side_by_side_table.py" "$OUT" | tee "$OUT/summary.md"
log "results in $OUT"
