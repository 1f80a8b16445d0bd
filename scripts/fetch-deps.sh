#!/usr/bin/env bash
# Downloads everything the tests need from the package registries, so that the tests
# themselves run offline: the Rust crates, the Maven artifacts of the Java compatibility
# tests (official clients 5.3.3 and 4.9.8, Apache NameServer, broker and mqadmin) and the
# Go client's modules.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fetch --locked
# tests/java-client/client-*: the official clients the Java scenarios are built against;
# tests/apache-servers/server-*: Apache's servers tests/apache-servers/start.sh runs.
for pom in tests/*/pom.xml tests/java-client/client-*/pom.xml tests/apache-servers/server-*/pom.xml; do
    echo "maven: $pom"
    # build-classpath is what the tests run offline; running it online here also fetches the plugin.
    mvn -B -q -f "$pom" dependency:build-classpath -Dmdep.outputFile=/dev/null
done
for mod in tests/*/go.mod; do
    echo "go: $mod"
    (cd "$(dirname "$mod")" && go mod download)
done
# The compatibility matrix's clients (tests/matrix/README.md): each row installs its pinned
# client from its registry and builds its driver.
for setup in tests/matrix/clients/*/setup.sh; do
    [ -e "$setup" ] || continue
    case "$setup" in */*-common/setup.sh) continue ;; esac # shared by rows, not a row
    echo "matrix: $setup"
    bash "$setup"
done
