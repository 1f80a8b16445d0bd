#!/usr/bin/env bash
# Runs one of Apache RocketMQ's own servers, NameServer or broker, from its Maven jars: the one
# way this repository starts Apache (tests/java-client/compat-against-apache.sh and
# tests/matrix/apache.py both call it). Resolves server-<VERSION>/pom.xml offline (from ~/.m2:
# scripts/fetch-deps.sh fetches it; the classpath is kept in WORK for the next start), lays
# out ROCKETMQ_HOME in WORK/home with the logback files 4.9's startup classes insist on (their
# logs go to WORK/home/<role>.log; 5.x logs under user.home, also WORK/home), and then is the
# JVM (exec), in the foreground, logging to stdout: the caller runs it in the background, waits
# for "boot success" there, and stops it by its pid.
#
# Usage: start.sh VERSION namesrv|broker WORK CONFIG (VERSION 4.9.7 or 5.3.3; CONFIG the
# server's properties file, given as -c). Needs Java 17+.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -ne 4 ] || [ ! -f "$here/server-$1/pom.xml" ]; then
    echo "usage: start.sh VERSION namesrv|broker WORK CONFIG, VERSION one of:" \
        "$(cd "$here" && ls -d server-* | sed 's/server-//' | tr '\n' ' ')" >&2
    exit 2
fi
version="$1" role="$2" work="$3" config="$4"
case "$role" in
namesrv) main=org.apache.rocketmq.namesrv.NamesrvStartup ;;
broker) main=org.apache.rocketmq.broker.BrokerStartup ;;
*)
    echo "start.sh: role must be namesrv or broker, not $role" >&2
    exit 2
    ;;
esac

home="$work/home"
classpath="$work/server-$version.classpath"
if [ ! -s "$classpath" ]; then
    mvn -o -q -f "$here/server-$version/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$classpath.new" >&2
    mv "$classpath.new" "$classpath"
fi
mkdir -p "$home/conf"
for name in broker namesrv; do
    cat >"$home/conf/logback_$name.xml" <<XML
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$home/$name.log</file>
    <encoder><pattern>%d %p %c{1} - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
XML
done
# Each JVM small (the defaults would take a quarter of the machine); the opens and exports
# are what Apache's own start scripts give Java 9+.
ROCKETMQ_HOME="$home" exec java -Xmx512m -XX:MaxDirectMemorySize=512m -Duser.home="$home" \
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.ref=ALL-UNNAMED \
    --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
    -cp "$(cat "$classpath")" "$main" -c "$config"
