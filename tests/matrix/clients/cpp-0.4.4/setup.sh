#!/usr/bin/env bash
# Installs the cpp-0.4.4 row's client: PyPI `rocketmq` 0.4.4, a manylinux1 wheel that bundles
# librocketmq (the official C++ client 1.x) behind a ctypes binding, into .venv here.
# Idempotent: does nothing when the pinned version is already installed.
set -euo pipefail
cd "$(dirname "$0")"
source ../cpp-common/venv.sh
ensure_venv
if ! .venv/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("rocketmq") != "0.4.4")' 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check rocketmq==0.4.4
fi
.venv/bin/python -c 'import rocketmq.client'
