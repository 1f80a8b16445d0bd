#!/usr/bin/env bash
# Builds another revision of ringmq (default: origin/main, else main) in a temporary git
# worktree and copies its release `ringmq` and `ringmq-bench` to target/baseline/ with a COMMIT
# file, for side-by-side.sh's ringmq-base kind and for cost-breakdown.sh --bin:
#   perf-scripts/build-baseline.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-$(git rev-parse --verify -q origin/main || git rev-parse main)}
commit=$(git rev-parse "$rev")
tree=$(mktemp -d /tmp/ringmq-baseline.XXXXXX)
cleanup() { git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT
git worktree add -q --detach "$tree" "$commit"
(cd "$tree" && cargo build --release -q --locked -p ringmq -p ringmq-bench)
mkdir -p target/baseline
cp "$tree/target/release/ringmq" "$tree/target/release/ringmq-bench" target/baseline/
echo "$commit" > target/baseline/COMMIT
echo "target/baseline: ringmq and ringmq-bench of $commit"
