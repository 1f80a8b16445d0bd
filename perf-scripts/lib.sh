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

# Broker kinds: `apache` is release APACHE_VERSION (5.3.3, the peer of every result before
# 2026-12-02), `apache-V` is release V (apache-5.5.1, apache-5.5.0, ...). Each release's jars
# are fetched once into APACHE_ROOT/V/lib by apache/pom.xml.
APACHE_VERSION=${APACHE_VERSION:-5.3.3}
APACHE_ROOT=${APACHE_ROOT:-$ROOT/target/apache-rocketmq}
# Releases Maven Central serves only in part, as RELEASE=FILL pairs: when the whole of RELEASE
# does not resolve, the modules it lacks are taken from FILL (apache/pom.xml's
# rocketmq.fill.version) and the mix is recorded in APACHE_ROOT/V/JARS and in settings.txt.
# 5.5.1: Central has broker, store, remoting, common, controller and tiered-store at 5.5.1 but
# namesrv, client, srvutil, filter, auth and tools only up to 5.5.0 (checked 2026-12-02).
APACHE_FILL_VERSIONS=${APACHE_FILL_VERSIONS:-"5.5.1=5.5.0"}
# JVM settings: Apache's own bin/runbroker.sh and bin/runserver.sh flags, with the heap scaled
# from their 8 GiB / 4 GiB defaults to this 24 GiB, 2-core machine.
APACHE_BROKER_JAVA_OPTS=${APACHE_BROKER_JAVA_OPTS:-"-server -Xms2g -Xmx2g -XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=2g -XX:-UseLargePages"}
APACHE_NAMESRV_JAVA_OPTS=${APACHE_NAMESRV_JAVA_OPTS:-"-server -Xms512m -Xmx512m -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow"}

# is_apache_kind KIND: whether KIND is `apache` or `apache-<release>`.
is_apache_kind() { [[ $1 == apache || $1 =~ ^apache-[0-9]+\.[0-9]+\.[0-9]+$ ]]; }

# apache_version KIND: the release an Apache kind runs.
apache_version() { if [ "$1" = apache ]; then echo "$APACHE_VERSION"; else echo "${1#apache-}"; fi; }

# apache_home VERSION: where that release's jars are (lib/) and the list of them (JARS).
apache_home() { echo "$APACHE_ROOT/$1"; }

# fetch_apache VERSION: the release's NameServer, broker and their jars from Maven Central,
# once (the JARS file marks a complete fetch; remove the directory to fetch again).
fetch_apache() {
    local version=$1 home fill="" pair
    home=$(apache_home "$version")
    [ -f "$home/JARS" ] && return 0
    rm -rf "$home/lib"
    mkdir -p "$home"
    log "fetching Apache RocketMQ $version into $home/lib (mvn dependency:copy-dependencies)"
    if ! mvn -q -B -f "$ROOT/perf-scripts/apache/pom.xml" dependency:copy-dependencies \
        -Drocketmq.version="$version" -DoutputDirectory="$home/lib" >"$home/mvn.log" 2>&1; then
        for pair in $APACHE_FILL_VERSIONS; do [ "${pair%%=*}" != "$version" ] || fill=${pair#*=}; done
        [ -n "$fill" ] || die "mvn could not fetch Apache RocketMQ $version; see $home/mvn.log"
        log "Maven Central lacks part of Apache RocketMQ $version ($(grep -o 'rocketmq-[a-z-]*:jar:[0-9.]*' "$home/mvn.log" | sort -u | tr '\n' ' ')); those modules from $fill"
        rm -rf "$home/lib"
        mvn -q -B -f "$ROOT/perf-scripts/apache/pom.xml" dependency:copy-dependencies \
            -Drocketmq.version="$version" -Drocketmq.fill.version="$fill" \
            -DoutputDirectory="$home/lib" >"$home/mvn.log" 2>&1 ||
            die "mvn could not fetch Apache RocketMQ $version with $fill; see $home/mvn.log"
    fi
    compgen -G "$home/lib/rocketmq-broker-$version.jar" >/dev/null ||
        die "no rocketmq-broker-$version.jar in $home/lib"
    # The RocketMQ jars of this kind, one line: what settings.txt records.
    (cd "$home/lib" && ls rocketmq-*.jar | sed 's/\.jar$//' | tr '\n' ' ') >"$home/JARS"
}

# apache_ports KIND: "NAMESRV_PORT BROKER_PORT" of an Apache kind. `apache` keeps 29876/20911
# (APACHE_NAMESRV_PORT, APACHE_BROKER_PORT); apache-V gets ports from its release number
# (5.5.1: 29356/21431), so that two releases in one run do not meet each other's sockets (the
# broker also listens on BROKER_PORT-2 and +1).
apache_ports() {
    if [ "$1" = apache ]; then
        echo "${APACHE_NAMESRV_PORT:-29876} ${APACHE_BROKER_PORT:-20911}"
        return
    fi
    local v major minor patch slot
    v=$(apache_version "$1")
    IFS=. read -r major minor patch <<<"$v"
    slot=$(((major * 100 + minor * 10 + patch) % 100 + 1)) # 1..100, never 0 (`apache`'s)
    echo "$((29876 - 10 * slot)) $((20911 + 10 * slot))"
}

# start_apache DIR FLUSH NAMESRV_PORT BROKER_PORT [VERSION]: NameServer + one master broker of
# release VERSION (default APACHE_VERSION) on loopback, data in DIR; sets BROKER_PID, NAMESRV_ADDR.
start_apache() {
    local dir=$1 flush=$2 ns_port=$3 broker_port=$4 version=${5:-$APACHE_VERSION} home
    fetch_apache "$version"
    home=$(apache_home "$version")
    mkdir -p "$dir"
    cat >"$dir/namesrv.conf" <<EOF
listenPort=$ns_port
bindAddress=127.0.0.1
EOF
    # Defaults except: loopback, our ports, fresh store, the flush type under test, and SQL92
    # subscriptions accepted (enablePropertyFilter: only the features phase's SQL92 consumer
    # uses it; it adds no work to other messages).
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
enablePropertyFilter=true
EOF
    local cp="$home/lib/*" common="-Drocketmq.home.dir=$home -Duser.home=$dir"
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
# Listening ports of the ringmq kinds: below the ephemeral range (32768-60999 here), where an
# outgoing connection of any process on the host can hold a port for a while (a start of a
# side-by-side run failed on 39876 so, 2026-12-02); clear of Apache's (20909-21912, 28876-29876).
RINGMQ_NAMESRV_PORT=${RINGMQ_NAMESRV_PORT:-24876}
RINGMQ_BROKER_PORT=${RINGMQ_BROKER_PORT:-25911}
RINGMQ_BASE_NAMESRV_PORT=${RINGMQ_BASE_NAMESRV_PORT:-22876}
RINGMQ_BASE_BROKER_PORT=${RINGMQ_BASE_BROKER_PORT:-23911}
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
    # As Apache's broker.conf here: SQL92 subscriptions accepted (off by default in both).
    echo "enablePropertyFilter=true" >"$dir/broker.conf"
    "$bin" standalone --listen "127.0.0.1:$broker_port" --namesrv-listen "127.0.0.1:$ns_port" \
        --shards "$SHARDS" --data "$dir/data" --flush-disk-type "$flush" --broker-ip 127.0.0.1 \
        --config "$dir/broker.conf" >"$dir/ringmq.out" 2>&1 &
    BROKER_PID=$!
    STARTED_PIDS+=("$BROKER_PID")
    wait_for_line "$dir/ringmq.out" 'ringmq broker listening on' 60 "$BROKER_PID"
    NAMESRV_ADDR=127.0.0.1:$ns_port
}

# BROKER_KINDS_KNOWN: what start_broker can start (known_kind checks one).
BROKER_KINDS_KNOWN="apache apache-<release> ringmq ringmq-base"
known_kind() { is_apache_kind "$1" || [ "$1" = ringmq ] || [ "$1" = ringmq-base ]; }

# start_broker KIND DIR FLUSH: any broker kind on this script's ports (each kind its own, so a
# start never meets the previous kind's sockets).
start_broker() {
    case $1 in
    apache | apache-*)
        is_apache_kind "$1" || die "unknown broker kind $1 (known: $BROKER_KINDS_KNOWN)"
        local ports
        read -r -a ports <<<"$(apache_ports "$1")"
        start_apache "$2" "$3" "${ports[0]}" "${ports[1]}" "$(apache_version "$1")"
        ;;
    ringmq) start_ringmq "$2" "$3" "$RINGMQ_NAMESRV_PORT" "$RINGMQ_BROKER_PORT" ;;
    ringmq-base)
        need_ringmq_base
        start_ringmq "$2" "$3" "$RINGMQ_BASE_NAMESRV_PORT" "$RINGMQ_BASE_BROKER_PORT" "$RINGMQ_BASE_BIN"
        ;;
    *) die "unknown broker kind $1 (known: $BROKER_KINDS_KNOWN)" ;;
    esac
}

# ---- the official Java client as load generator (perf-scripts/java) --------------------------

# JVM flags of the Java load generator: Apache's distribution/benchmark/runclass.sh (1 GiB heap,
# 256 MiB young generation, no large pages, no shared perf memory) with G1 in place of CMS,
# which Java 14 removed.
JAVA_BENCH_OPTS=${JAVA_BENCH_OPTS:-"-server -Xms1g -Xmx1g -Xmn256m -XX:+UseG1GC -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages -XX:+PerfDisableSharedMem"}

# prepare_java_bench DIR: compiles perf-scripts/java/JavaBench.java into DIR/classes against the
# client of perf-scripts/java/pom.xml (from ~/.m2; mvn fetches it if missing) and sets
# JAVA_BENCH_CP.
prepare_java_bench() {
    local dir
    # Absolute: mvn resolves a relative output file against the pom's directory.
    dir=$(mkdir -p "$1/classes" && cd "$1" && pwd)
    mvn -q -B -f "$ROOT/perf-scripts/java/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$dir/classpath.txt" >"$dir/mvn.log" 2>&1 ||
        die "mvn could not resolve the Java client of perf-scripts/java/pom.xml; see $dir/mvn.log"
    javac -d "$dir/classes" -cp "$(cat "$dir/classpath.txt")" "$ROOT/perf-scripts/java/JavaBench.java" ||
        die "JavaBench.java does not compile"
    JAVA_BENCH_CP="$dir/classes:$(cat "$dir/classpath.txt")"
}

# java_bench ENCODING DIR ARGS...: one JavaBench run (perf-scripts/java/JavaBench.java) with
# header encoding ENCODING (JSON or ROCKETMQ, set explicitly so no ROCKETMQ_SERIALIZE_TYPE from
# the environment decides), the client's logs in DIR.
java_bench() {
    local encoding=$1 dir=$2
    shift 2
    # shellcheck disable=SC2086
    java $JAVA_BENCH_OPTS -Drocketmq.serialize.type="$encoding" -Duser.home="$dir" \
        -cp "$JAVA_BENCH_CP" JavaBench "$@" --clk-tck "$(getconf CLK_TCK)"
}
