#!/usr/bin/env bash
# Installs the pinned npm ali-ons (package-lock.json) into this row's node_modules.
# Idempotent: npm ci runs again only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || apt-get install -y -qq nodejs npm >/dev/null
stamp=node_modules/.matrix-installed-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
fi
node -e "require('ali-ons')"
