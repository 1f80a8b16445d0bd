#!/usr/bin/env bash
# The hostile row needs only Python 3's standard library: nothing to install.
set -euo pipefail
python3 --version
