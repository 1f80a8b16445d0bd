#!/usr/bin/env bash
# Builds a Java row of the compatibility matrix (tests/matrix/README.md): resolves the row's
# pinned official client (its pom.xml) from Maven Central into ~/.m2, writes the classpath to
# <row>/.build/classpath and compiles the shared driver (java-common/src) against it into
# <row>/.build/classes, so each phase is a plain `java -cp` with no Maven at run time.
# Each row's setup.sh is a link to this file; run as tests/matrix/clients/<row>/setup.sh.
# Idempotent. Needs Java 17+ and Maven (on PATH in this environment and in .ci's image).
set -euo pipefail
row="$(cd "$(dirname "$0")" && pwd)"
src="$row/../java-common/src"
build="$row/.build"
if [ ! -f "$row/pom.xml" ]; then
    echo "run this as tests/matrix/clients/<row>/setup.sh (a link to it): $row has no pom.xml" >&2
    exit 2
fi
mkdir -p "$build"
mvn -B -q -f "$row/pom.xml" dependency:build-classpath -Dmdep.outputFile="$build/classpath"
rm -rf "$build/classes.new"
javac --release 17 -nowarn -XDsuppressNotes -d "$build/classes.new" -cp "$(cat "$build/classpath")" \
    "$src"/*.java
rm -rf "$build/classes"
mv "$build/classes.new" "$build/classes"
echo "built $(basename "$row") driver in $build"
