#!/usr/bin/env bash
# The compat scenarios (RingmqCompat, src/compat) against Apache RocketMQ itself: the official
# 4.9.8 client against Apache's 4.9.7 NameServer and broker (the newest 4.x server release on
# Maven Central), or with APACHE=5.3.3 against Apache's 5.3.3, which the 5.x-only scenarios
# (timer-restart: rocketmq-client 5.3.3 running src-5.x/) need; both started by
# tests/apache-servers/start.sh, as `tests/matrix/matrix.py --against` starts them.
# CLIENT=5.3.3 runs every scenario with the 5.3.3 client. Every scenario passing here is
# evidence that it checks RocketMQ behaviour, not a ringmq quirk; the Rust test
# tests/compat_java_client.rs runs the same scenarios against `ringmq standalone`.
#
# Usage: tests/java-client/compat-against-apache.sh [SCENARIO]... with SCENARIO one of
# produce-consume, produce-consume-vip, restart, restart-crash, rebalance, retry, dlq,
# delay-level, delay-restart, orderly, orderly-rebalance, orderly-suspend, lite-pull,
# broadcast, retention, and with APACHE=5.3.3 timer-restart (default: all of them).
# (Transactions and timers at the default precision are matrix scenarios, run against Apache
# by tests/matrix/matrix.py --against.) Needs Java 17+ and the jars in ~/.m2
# (scripts/fetch-deps.sh fetches them); runs offline. Exits non-zero if any scenario fails.
# Leaves nothing running and removes its temporary directory (KEEP_WORK=1 keeps it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] ||
    scenarios=(produce-consume produce-consume-vip restart restart-crash rebalance retry dlq
        delay-level delay-restart orderly orderly-rebalance orderly-suspend lite-pull broadcast
        retention)
apache="${APACHE:-4.9.7}"
case "$apache" in
4.9.7 | 5.3.3) ;;
*) echo "APACHE must be 4.9.7 or 5.3.3" >&2; exit 2 ;;
esac
[ "$#" -gt 0 ] || [ "$apache" != 5.3.3 ] || scenarios+=(timer-restart)

# Bound on Apache's NameServer or broker printing "boot success".
BOOT_WAIT_SECS=60
# Bound on one scenario run (the Java program also halts itself past its own limit).
SCENARIO_WAIT_SECS=300
# Commit-log segment of the retention scenario, as tests/compat_java_client.rs gives ringmq.
RETENTION_SEGMENT_BYTES=131072

work="$(mktemp -d /tmp/ringmq-compat-apache.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP_WORK:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

start_server="$here/../apache-servers/start.sh"
for client in 4.9.8 5.3.3; do
    "$here/build.sh" --offline "$client" "$work/client-$client" >&2
done

# A free port p such that p-2 (Apache's VIP channel) and p+1 (its HA port) are free too.
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        if ! (ss -ltnH | awk '{print $4}' | grep -qE ":($((p - 2))|$p|$((p + 1)))\$"); then
            echo "$p"
            return
        fi
    done
    echo "no free port" >&2
    return 1
}

# start_server ROLE LOG CONFIG: Apache's ROLE (namesrv or broker) in the background; waits
# (bounded) for its "boot success" line; tail stops following when the JVM dies, so a failed
# start ends the wait.
start_server() {
    local name="$1" log="$2"
    : >"$log" # exists before tail opens it
    "$start_server" "$apache" "$name" "$work" "$3" >"$log" 2>&1 &
    last_pid=$!
    pids+=("$last_pid")
    if timeout "$BOOT_WAIT_SECS" grep -q -m1 "boot success" \
        <(tail -n +1 -f --pid="$last_pid" "$log"); then
        echo "$name up (pid $last_pid)"
    else
        cat "$log"
        echo "$name did not boot" >&2
        return 1
    fi
}

namesrv_port="$(free_port)"
echo "listenPort=$namesrv_port" >"$work/namesrv.properties"
start_server namesrv "$work/namesrv.out" "$work/namesrv.properties"
namesrv="127.0.0.1:$namesrv_port"
broker_port="$(free_port)"

# start_broker STORE FLUSH [LINES...]: Apache's broker on $broker_port with its store in STORE;
# each further argument is one or more broker.conf lines that override the defaults (the last
# of a key wins in Java's Properties).
start_broker() {
    cat >"$work/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$broker_port
namesrvAddr=$namesrv
storePathRootDir=$1
storePathCommitLog=$1/commitlog
autoCreateTopicEnable=true
flushDiskType=$2
mappedFileSizeCommitLog=16777216
mappedFileSizeConsumeQueue=60000
CONF
    printf '%s\n' "${@:3}" >>"$work/broker.conf"
    start_server broker "$work/broker.out" "$work/broker.conf"
    broker_pid=$last_pid
}

# run_java SCENARIO TOPIC GROUP [ARGS...]: one scenario of RingmqCompat with the 4.9.8 client,
# or of RingmqCompat5 with the 5.3.3 client (the timer ones, and every one with CLIENT=5.3.3);
# fails on a mismatch.
run_java() {
    local scenario="$1" topic="$2" group="$3" build="$work/client-4.9.8" main=RingmqCompat
    shift 3
    if [ "${CLIENT:-4.9.8}" = 5.3.3 ] || [[ "$scenario" == timer* ]]; then
        build="$work/client-5.3.3" main=RingmqCompat5
    fi
    timeout "$SCENARIO_WAIT_SECS" java -Drocketmq.client.rebalance.waitInterval=1000 \
        -Drocketmq.client.logRoot="$work/client-logs" \
        -cp "$build/classes:$(cat "$build/classpath")" "$main" "$scenario" --namesrv "$namesrv" --topic "$topic" --group "$group" "$@"
}

# around_a_kill PHASE1 PHASE2 CONF [PHASE2 ARGS...]: phase 1, SIGKILL of the SYNC_FLUSH broker
# (broker.conf lines CONF added), the broker again on the same store, phase 2 (they share a
# state file).
around_a_kill() {
    local first="$1" second="$2" conf="$3"
    shift 3
    start_broker "$store" SYNC_FLUSH "$conf"
    run_java "$first" "$topic" "$group" --state "$work/state-$run" || return 1
    kill -s KILL "$broker_pid"
    wait "$broker_pid" 2>/dev/null || true
    start_broker "$store" SYNC_FLUSH "$conf"
    run_java "$second" "$topic" "$group" --state "$work/state-$run" "$@"
}

failed=0
for scenario in "${scenarios[@]}"; do
    run="$(date +%s%N)"
    topic="CompatTopic_$run" group="CompatGroup_$run" store="$work/store-$run"
    echo "== $scenario against Apache RocketMQ =="
    case "$scenario" in
    produce-consume | rebalance | retry | dlq | delay-level | orderly | orderly-rebalance | \
        orderly-suspend | lite-pull | broadcast)
        start_broker "$store" ASYNC_FLUSH
        run_java "$scenario" "$topic" "$group" || failed=1
        ;;
    timer-restart)
        if [ "$apache" != 5.3.3 ]; then
            echo "$scenario needs APACHE=5.3.3 (4.x brokers have no timer messages)" >&2
            failed=1
            continue
        fi
        # Apache re-delivers timers pending at a kill -9: repeats allowed (--crash)
        around_a_kill timer-restart-phase1 timer-restart-phase2 "" --crash || failed=1
        ;;
    produce-consume-vip)
        start_broker "$store" ASYNC_FLUSH
        run_java produce-consume "$topic" "$group" --vip || failed=1
        ;;
    retention)
        # Every sealed segment expired (fileReservedTime=0) and Apache's deletion hour always
        # now, checked every second: Apache then removes what ringmq removes as it expires.
        start_broker "$store" ASYNC_FLUSH mappedFileSizeCommitLog=$RETENTION_SEGMENT_BYTES \
            fileReservedTime=0 "deleteWhen=$(seq -s ';' -f '%02g' 0 23)" cleanResourceInterval=1000
        run_java retention "$topic" "$group" --segment-bytes "$RETENTION_SEGMENT_BYTES" || failed=1
        ;;
    delay-restart)
        start_broker "$store" ASYNC_FLUSH
        if run_java delay-restart-phase1 "$topic" "$group" --state "$work/state-$run"; then
            kill -s TERM "$broker_pid"
            wait "$broker_pid" 2>/dev/null || true
            start_broker "$store" ASYNC_FLUSH
            run_java delay-restart-phase2 "$topic" "$group" --state "$work/state-$run" ||
                failed=1
        else
            failed=1
        fi
        ;;
    restart | restart-crash)
        flush=ASYNC_FLUSH signal=TERM crash=()
        if [ "$scenario" = restart-crash ]; then flush=SYNC_FLUSH signal=KILL crash=(--crash); fi
        start_broker "$store" "$flush"
        if run_java restart-phase1 "$topic" "$group" --state "$work/state-$run"; then
            kill -s "$signal" "$broker_pid"
            wait "$broker_pid" 2>/dev/null || true
            start_broker "$store" "$flush"
            run_java restart-phase2 "$topic" "$group" --state "$work/state-$run" "${crash[@]}" \
                || failed=1
        else
            failed=1
        fi
        ;;
    *)
        echo "unknown scenario $scenario" >&2
        exit 2
        ;;
    esac
    kill -9 "$broker_pid" 2>/dev/null || true
    wait "$broker_pid" 2>/dev/null || true
done
if [ "$failed" = 0 ]; then
    echo "all scenarios passed against Apache RocketMQ"
else
    echo "SOME SCENARIOS FAILED"
fi
exit "$failed"
