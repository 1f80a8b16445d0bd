#!/usr/bin/env bash
# The project's one test command (README: "Test"). Builds everything, then runs every unit,
# property, simulation, crash and integration test of the workspace, the shard bus's loom
# model check, and the compatibility
# tests that drive the official Java and Go clients and Apache's own NameServer and mqadmin
# (run scripts/fetch-deps.sh once first: they resolve their jars and modules offline), and at
# the end the compatibility matrix (scripts/compat-matrix.sh: every client row; a FAIL cell
# fails this script).
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -l unlimited 2>/dev/null || true

cargo build --workspace --all-targets --locked
cargo test --workspace --locked -- --test-threads=2
# The shard bus's wake-up protocol, model-checked (bus/README.md): its own target directory,
# since --cfg loom builds the crate without glommio.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ringmq-bus --release --lib --locked
cargo test -p ringmq --locked \
    --test namesrv_java_client --test namesrv_go_client --test admin_apache_namesrv \
    --test admin_apache_broker --test admin_ringmq_broker --test compat_java_client \
    -- --ignored --test-threads=1
scripts/compat-matrix.sh
