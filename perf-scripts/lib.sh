# Shared helpers of the perf scripts (sourced, not run): starting and stopping the brokers under
# test, waiting for their readiness lines, and reading a process's CPU time and memory.
# Every process a script starts is recorded in STARTED_PIDS and ended by its own PID on exit.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STARTED_PIDS=()

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# stop_pid PID: SIGTERM (a clean stop for both brokers), SIGKILL after 20 s.
stop_pid() {
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    timeout 20 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# stop_started: every process this script started, newest first (a broker before its NameServer).
stop_started() {
    local i
    for ((i = ${#STARTED_PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${STARTED_PIDS[i]}"; done
    STARTED_PIDS=()
}
trap stop_started EXIT

# wait_for_line FILE PATTERN SECONDS PID: blocks until FILE has a line matching PATTERN (tail -F
# follows the file as it grows), fails if it takes longer or PID exits first.
wait_for_line() {
    local file=$1 pattern=$2 seconds=$3 pid=$4
    if ! timeout "$seconds" bash -c "tail --pid=$pid -n +1 -F '$file' 2>/dev/null | grep -q -m1 -E '$pattern'"; then
        kill -0 "$pid" 2>/dev/null || die "process $pid exited before '$pattern'; see $file"
        die "no line matching '$pattern' in $file within ${seconds}s"
    fi
}

# cpu_seconds PID: user + system CPU time the process has used.
cpu_seconds() {
    local ticks
    ticks=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", t / hz }'
}

# rss_kib PID [VmRSS|VmHWM]: resident memory now, or its peak.
rss_kib() { awk -v k="${2:-VmRSS}:" '$1 == k { print $2 }' "/proc/$1/status"; }

# ---- Apache RocketMQ -------------------------------------------------------------------------

APACHE_HOME=${APACHE_HOME:-$ROOT/target/apache-rocketmq}
# JVM settings: Apache's own bin/runbroker.sh and bin/runserver.sh flags, with the heap scaled
# from their 8 GiB / 4 GiB defaults to this 24 GiB, 2-core machine.
APACHE_BROKER_JAVA_OPTS=${APACHE_BROKER_JAVA_OPTS:-"-server -Xms2g -Xmx2g -XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=2g -XX:-UseLargePages"}
APACHE_NAMESRV_JAVA_OPTS=${APACHE_NAMESRV_JAVA_OPTS:-"-server -Xms512m -Xmx512m -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow"}

# fetch_apache: Apache RocketMQ's NameServer, broker and their jars from Maven Central, once.
fetch_apache() {
    if ! compgen -G "$APACHE_HOME/lib/rocketmq-broker-*.jar" >/dev/null; then
        log "fetching Apache RocketMQ into $APACHE_HOME/lib (mvn dependency:copy-dependencies)"
        mvn -q -B -f "$ROOT/perf-scripts/apache/pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$APACHE_HOME/lib" >&2 || die "mvn could not fetch Apache RocketMQ"
    fi
}

# start_apache DIR FLUSH NAMESRV_PORT BROKER_PORT: NameServer + one master broker on loopback,
# data in DIR; sets BROKER_PID, NAMESRV_ADDR.
start_apache() {
    local dir=$1 flush=$2 ns_port=$3 broker_port=$4
    fetch_apache
    mkdir -p "$dir"
    cat >"$dir/namesrv.conf" <<EOF
listenPort=$ns_port
bindAddress=127.0.0.1
EOF
    # Defaults except: loopback, our ports, fresh store, and the flush type under test.
    cat >"$dir/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
bindAddress=127.0.0.1
listenPort=$broker_port
namesrvAddr=127.0.0.1:$ns_port
storePathRootDir=$dir/store
storePathCommitLog=$dir/store/commitlog
flushDiskType=$flush
autoCreateTopicEnable=true
EOF
    local cp="$APACHE_HOME/lib/*" common="-Drocketmq.home.dir=$APACHE_HOME -Duser.home=$dir"
    # shellcheck disable=SC2086
    java $APACHE_NAMESRV_JAVA_OPTS $common -cp "$cp" org.apache.rocketmq.namesrv.NamesrvStartup \
        -c "$dir/namesrv.conf" >"$dir/namesrv.out" 2>&1 &
    STARTED_PIDS+=($!)
    local ns_pid=$!
    wait_for_line "$dir/namesrv.out" 'The Name Server boot success' 60 "$ns_pid"
    # shellcheck disable=SC2086
    java $APACHE_BROKER_JAVA_OPTS $common -cp "$cp" org.apache.rocketmq.broker.BrokerStartup \
        -c "$dir/broker.conf" >"$dir/broker.out" 2>&1 &
    BROKER_PID=$!
    STARTED_PIDS+=("$BROKER_PID")
    wait_for_line "$dir/broker.out" 'boot success' 120 "$BROKER_PID"
    # "boot success" comes before the first registration; clients find the broker only after it.
    wait_for_line "$dir/logs/rocketmqlogs/broker.log" 'Registering current broker to name server completed' 60 "$BROKER_PID"
    NAMESRV_ADDR=127.0.0.1:$ns_port
}

# ---- ringmq ----------------------------------------------------------------------------------

RINGMQ_BIN=${RINGMQ_BIN:-$ROOT/target/release/ringmq}
BENCH_BIN=${BENCH_BIN:-$ROOT/target/release/ringmq-bench}
SHARDS=${SHARDS:-2}
# The broker kind `ringmq-base`: a second ringmq binary (say, a release build of main) started
# exactly as `ringmq` is, so that one run compares two builds under the same load.
RINGMQ_BASE_BIN=${RINGMQ_BASE_BIN:-$ROOT/target/baseline/ringmq}

# need_ringmq_base: dies unless the ringmq-base binary is there.
need_ringmq_base() {
    [ -x "$RINGMQ_BASE_BIN" ] ||
        die "broker kind ringmq-base needs a ringmq binary: none at '$RINGMQ_BASE_BIN' (RINGMQ_BASE_BIN=/path/to/ringmq, or side-by-side's --base-bin)"
}

# start_ringmq DIR FLUSH NAMESRV_PORT BROKER_PORT [BIN]: `ringmq standalone` (BIN, by default
# RINGMQ_BIN) on loopback; sets BROKER_PID, NAMESRV_ADDR.
start_ringmq() {
    local dir=$1 flush=$2 ns_port=$3 broker_port=$4 bin=${5:-$RINGMQ_BIN}
    [ -x "$bin" ] || die "no ringmq binary at $bin"
    mkdir -p "$dir"
    ulimit -l unlimited 2>/dev/null || true
    "$bin" standalone --listen "127.0.0.1:$broker_port" --namesrv-listen "127.0.0.1:$ns_port" \
        --shards "$SHARDS" --data "$dir/data" --flush-disk-type "$flush" --broker-ip 127.0.0.1 \
        >"$dir/ringmq.out" 2>&1 &
    BROKER_PID=$!
    STARTED_PIDS+=("$BROKER_PID")
    wait_for_line "$dir/ringmq.out" 'ringmq broker listening on' 60 "$BROKER_PID"
    NAMESRV_ADDR=127.0.0.1:$ns_port
}

# BROKER_KINDS_KNOWN: what start_broker can start.
BROKER_KINDS_KNOWN="apache ringmq ringmq-base"

# start_broker KIND DIR FLUSH: any broker kind on this script's ports (each kind its own, so a
# start never meets the previous kind's sockets).
start_broker() {
    case $1 in
    apache) start_apache "$2" "$3" "${APACHE_NAMESRV_PORT:-29876}" "${APACHE_BROKER_PORT:-20911}" ;;
    ringmq) start_ringmq "$2" "$3" "${RINGMQ_NAMESRV_PORT:-39876}" "${RINGMQ_BROKER_PORT:-30911}" ;;
    ringmq-base)
        need_ringmq_base
        start_ringmq "$2" "$3" "${RINGMQ_BASE_NAMESRV_PORT:-49876}" "${RINGMQ_BASE_BROKER_PORT:-40911}" "$RINGMQ_BASE_BIN"
        ;;
    *) die "unknown broker kind $1 (known: $BROKER_KINDS_KNOWN)" ;;
    esac
}
