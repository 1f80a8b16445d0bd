#!/usr/bin/env bash
# The Java rows' scenarios against Apache RocketMQ itself, to show each assertion is
# RocketMQ's behaviour and not ringmq's: tests/matrix/matrix.py --against, which starts
# Apache's NameServer and broker 4.9.7 (default) or, with APACHE=5.3.3, 5.3.3 from ~/.m2 in
# place of ringmq (same environment, phases, restarts and broker.conf check settings).
# Usage: against-apache.sh ROW [SCENARIO...] (ROW java-4.9.8 or java-5.3.3; default every
# scenario). Needs the row built (its setup.sh) and a ringmq binary for `ringmq admin` (RINGMQ,
# default target/release/ringmq); runs offline, leaves nothing running; tables and logs in
# target/matrix-apache-<version>/.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
row="$1"
shift
args=(--against "apache-${APACHE:-4.9.7}" --ringmq "${RINGMQ:-$repo/target/release/ringmq}" --clients "$row")
if [ "$#" -gt 0 ]; then
    args+=(--scenarios "$(IFS=,; echo "$*")")
fi
exec python3 "$repo/tests/matrix/matrix.py" "${args[@]}"
