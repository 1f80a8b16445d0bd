#!/usr/bin/env bash
# Builds the driver against the pinned crates.io rocketmq-client-rust (Cargo.lock, --locked).
# The client's tree is large (~360 crates): the first build takes several minutes, later
# ones are incremental no-ops. Not part of ringmq's workspace (own [workspace] table).
set -euo pipefail
cd "$(dirname "$0")"
nice -n 10 cargo build --release --locked --quiet
