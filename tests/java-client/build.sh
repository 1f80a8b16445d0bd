#!/usr/bin/env bash
# Builds the official Java client's scenarios (src/, and src-5.x/ for a 5.x client) against one
# client version: resolves client-<VERSION>/pom.xml from Maven into ~/.m2, writes the
# classpath to OUT/classpath and compiles into OUT/classes, so a run is a plain
# `java -cp OUT/classes:$(cat OUT/classpath) MAIN` (MAIN: RingmqCompat, RingmqCompat5 with
# 5.x, or MatrixDriver). The one build of this tree: the matrix's Java rows (matrix-row/
# setup.sh), tests/compat_java_client.rs and compat-against-apache.sh all use it.
#
# Usage: build.sh [--offline] VERSION OUT (VERSION 4.9.8 or 5.3.3). --offline: resolve from
# ~/.m2 only (the tests; scripts/fetch-deps.sh fetches online first). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
maven=(mvn -B -q)
if [ "${1:-}" = --offline ]; then
    maven+=(-o)
    shift
fi
if [ "$#" -ne 2 ] || [ ! -f "$here/client-$1/pom.xml" ]; then
    echo "usage: build.sh [--offline] VERSION OUT, VERSION one of:" \
        "$(cd "$here" && ls -d client-* | sed 's/client-//' | tr '\n' ' ')" >&2
    exit 2
fi
version="$1"
out="$2"
sources=("$here"/src/*/*.java)
# the 5.x client's API (timer messages) is only in 5.x: that source is compiled with it alone
case "$version" in 5.*) sources+=("$here"/src-5.x/*/*.java) ;; esac
mkdir -p "$out"
# Maven's output only when it fails (it prints terminal escapes even when quiet).
if ! log="$("${maven[@]}" -f "$here/client-$version/pom.xml" dependency:build-classpath \
    -Dmdep.outputFile="$out/classpath" 2>&1)"; then
    echo "$log" >&2
    exit 1
fi
rm -rf "$out/classes.new"
javac --release 17 -nowarn -XDsuppressNotes -d "$out/classes.new" -cp "$(cat "$out/classpath")" \
    "${sources[@]}"
rm -rf "$out/classes"
mv "$out/classes.new" "$out/classes"
