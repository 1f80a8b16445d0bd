#!/usr/bin/env bash
# Installs the pinned npm ali-ons (package-lock.json) into this row's node_modules.
# Idempotent: npm ci runs again only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
stamp=node_modules/.matrix-installed-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
fi
node -e "require('ali-ons')"
