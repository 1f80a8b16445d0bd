#!/usr/bin/env bash
# The project's one test command (README: "Test"). Builds everything, then runs every
# unit, simulation, crash and integration test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -l unlimited 2>/dev/null || true
cargo build --workspace --all-targets --locked
cargo test --workspace --locked -- --test-threads=2
