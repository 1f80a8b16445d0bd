#!/usr/bin/env bash
# The compatibility matrix (tests/matrix/README.md): every client row against a freshly
# started `ringmq standalone --shards 2`; prints the tables, writes target/matrix/table.md and
# results.json, exits 1 if any cell fails. Run scripts/fetch-deps.sh once first (it installs
# each row's client). Arguments go to tests/matrix/matrix.py (--clients, --scenarios, --ringmq);
# without --ringmq it builds and tests target/release/ringmq.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -l unlimited 2>/dev/null || true

if ! command -v python3 >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3
fi

build=1
for arg in "$@"; do
    case "$arg" in --ringmq|--ringmq=*) build=0 ;; esac
done
if [ "$build" = 1 ]; then
    cargo build --release --bin ringmq --locked
fi
# The orchestrator's own checks first: a broken orchestrator must not print a green table.
python3 -m unittest discover -s tests/matrix -p 'test_*.py'
exec python3 tests/matrix/matrix.py "$@"
