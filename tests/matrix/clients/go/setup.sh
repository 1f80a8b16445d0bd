#!/usr/bin/env bash
# Installs the Go row's pinned client (github.com/apache/rocketmq-client-go/v2, go.mod) from
# the Go module proxy into the module cache and builds the driver binary beside this file.
# Idempotent; the build itself then runs offline.
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go build -o driver-bin .
