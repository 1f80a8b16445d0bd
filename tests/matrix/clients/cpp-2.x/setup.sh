#!/usr/bin/env bash
# Installs the cpp-2.x row's client: the ctypes binding PyPI `rocketmq-client-python` 2.0.0 into
# .venv here, and the librocketmq.so (official C++ client 2.x) that PyPI `rocketmq-python-cvs`
# 2.1.0.3 ships inside its sdist, extracted to lib/ (the driver loads it via LD_LIBRARY_PATH).
# The cvs package is not installed: it would replace the binding's `rocketmq` module.
# Idempotent: does nothing when both pinned pieces are already in place.
set -euo pipefail
cd "$(dirname "$0")"
source ../cpp-common/venv.sh
ensure_venv
if ! .venv/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("rocketmq-client-python") != "2.0.0")' 2>/dev/null; then
    .venv/bin/pip install -q --disable-pip-version-check rocketmq-client-python==2.0.0
fi
CVS=rocketmq-python-cvs-2.1.0.3
if [ ! -f lib/librocketmq.so ] || [ "$(cat lib/VERSION 2>/dev/null)" != "$CVS" ]; then
    rm -rf dl lib && mkdir -p dl lib
    .venv/bin/pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
        -d dl rocketmq-python-cvs==2.1.0.3
    tar -xzf "dl/$CVS.tar.gz" -C dl "$CVS/rocketmq/librocketmq.so"
    mv "dl/$CVS/rocketmq/librocketmq.so" lib/
    echo "$CVS" > lib/VERSION
    rm -rf dl
fi
LD_LIBRARY_PATH="$PWD/lib" .venv/bin/python -c 'import rocketmq.client'
