#!/usr/bin/env bash
# The Java rows' scenarios against Apache RocketMQ itself, to show each assertion is
# RocketMQ's behaviour and not ringmq's: NameServer and broker 4.9.7
# (tests/compat/java/apache/pom.xml) or, with APACHE=5.3.3, 5.3.3 (tests/apache_support/pom.xml),
# run from ~/.m2 with `java -cp`. Same environment and phases as the matrix; the broker
# is restarted (SIGTERM) between offsets-broker-restart's phases; topics are made with
# `ringmq admin updateTopic`. Usage: against-apache.sh ROW [SCENARIO...] (ROW java-4.9.8 or
# java-5.3.3, or another row with a driver, e.g. go; default every scenario). Needs the row
# built (its setup.sh), runs offline, leaves nothing running; logs in $WORK (default a temp
# dir, kept and printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
row="$1"
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(route send-sync send-async send-oneway send-batch
    message-props push-tag sql92 broadcast consume-from offsets-consumer-restart
    offsets-broker-restart rebalance orderly lite-pull query cross
    request-reply)
ringmq="${RINGMQ:-/work/bin/ringmq}" # only its `admin updateTopic` is used
# Bound on Apache's NameServer or broker printing "boot success".
BOOT_WAIT_SECS=60
# Bound on one phase, as the orchestrator's.
PHASE_WAIT_SECS=180

work="${WORK:-$(mktemp -d /tmp/matrix-java-apache.XXXXXX)}"
mkdir -p "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "logs in $work (store removed)"
    rm -rf "$work/store"
}
trap cleanup EXIT

case "${APACHE:-4.9.7}" in
4.9.7) server_pom="$repo/tests/compat/java/apache/pom.xml" ;;
5.3.3) server_pom="$repo/tests/apache_support/pom.xml" ;;
*) echo "APACHE must be 4.9.7 or 5.3.3" >&2; exit 2 ;;
esac
mvn -o -q -f "$server_pom" dependency:build-classpath \
    -Dmdep.outputFile="$work/server-cp.txt" >&2
home="$work/home"
mkdir -p "$home/conf"
# 4.9's startup classes insist on these logback files; 5.x logs under user.home.
for name in broker namesrv; do
    cat >"$home/conf/logback_$name.xml" <<XML
<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>$home/$name.log</file>
    <encoder><pattern>%d %p %c{1} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="F"/></root>
</configuration>
XML
done
jvm=(-Xmx512m -XX:MaxDirectMemorySize=512m -Duser.home="$home"
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED)

# start_java LOG MAIN ARGS...: a JVM in the background, waited for (bounded) to boot.
start_java() {
    local log="$1"
    shift
    : >"$log"
    ROCKETMQ_HOME="$home" java "${jvm[@]}" -cp "$(cat "$work/server-cp.txt")" "$@" >"$log" 2>&1 &
    last_pid=$!
    pids+=("$last_pid")
    timeout "$BOOT_WAIT_SECS" grep -q -m1 "boot success" <(tail -n +1 -f --pid="$last_pid" "$log") ||
        { cat "$log"; echo "$log: did not boot" >&2; return 1; }
}

# Fixed ports in this row's range; the broker also takes port-2 (VIP) and port+1 (HA).
namesrv_port=37150 broker_port=37160
echo "listenPort=$namesrv_port" >"$work/namesrv.properties"
start_java "$work/namesrv.out" org.apache.rocketmq.namesrv.NamesrvStartup -c "$work/namesrv.properties"
cat >"$work/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$broker_port
namesrvAddr=127.0.0.1:$namesrv_port
storePathRootDir=$work/store
storePathCommitLog=$work/store/commitlog
autoCreateTopicEnable=false
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=60000
timerWheelEnable=false
enablePropertyFilter=true
CONF
# start_broker: boots the broker and waits (bounded) until the NameServer lists it: a 5.x
# broker's first registration can come 10 s after "boot success", and nothing announces it.
start_broker() {
    start_java "$work/broker.out" org.apache.rocketmq.broker.BrokerStartup -c "$work/broker.conf"
    broker_pid=$last_pid
    for _ in $(seq "$BOOT_WAIT_SECS"); do
        "$ringmq" admin clusterList -n "127.0.0.1:$namesrv_port" 2>/dev/null | grep -q broker-a &&
            return 0
        sleep 1
    done
    echo "broker did not register within $BOOT_WAIT_SECS s" >&2
    return 1
}
start_broker

export MATRIX_NAMESRV="127.0.0.1:$namesrv_port" MATRIX_BROKER_ADDR="127.0.0.1:$broker_port"
export MATRIX_CLUSTER=DefaultCluster MATRIX_BROKER_NAME=broker-a MATRIX_COUNT=16
run=0
# phase SCENARIO PHASE: runs one phase of the row with the scenario's environment.
phase() {
    local out="$work/$1-$2.log"
    local start=$SECONDS
    (cd "$here/../$row" && timeout "$PHASE_WAIT_SECS" ./driver "$2") >"$out" 2>&1 || true
    echo "$row $2 ($((SECONDS - start)) s): $(grep -aE '^RESULT (PASS|FAIL|NA)' "$out" | tail -1 ||
        echo 'no RESULT')"
}
fresh() { # new topics, groups and state for scenario $1
    run=$((run + 1))
    local id="${1//[^a-z]/}_$$_$run"
    export MATRIX_TOPIC="MxA_$id" MATRIX_TOPIC2="MxA2_$id" MATRIX_GROUP="GA_$id" MATRIX_GROUP2="GA2_$id"
    export MATRIX_STATE="$work/state-$id"
    mkdir -p "$MATRIX_STATE"
    for t in "$MATRIX_TOPIC" "$MATRIX_TOPIC2"; do
        "$ringmq" admin updateTopic -n "$MATRIX_NAMESRV" -c DefaultCluster -t "$t" -r 4 -w 4 >/dev/null
    done
}
for s in "${scenarios[@]}"; do
    fresh "$s"
    case "$s" in
    offsets-broker-restart)
        phase "$s" "$s.1"
        kill -TERM "$broker_pid"
        wait "$broker_pid" 2>/dev/null || true
        start_broker
        phase "$s" "$s.2"
        ;;
    cross)
        phase "$s" cross-produce
        MATRIX_PEER="$row" phase "$s" cross-consume
        ;;
    *) phase "$s" "$s" ;;
    esac
done
