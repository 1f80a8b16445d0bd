#!/usr/bin/env bash
# Builds a Java row of the compatibility matrix (tests/matrix/README.md): the row's directory
# name says its client (java-<VERSION>); ../build.sh resolves that official client from Maven
# Central into ~/.m2 and compiles the shared tree (tests/java-client/src, whose MatrixDriver
# runs the matrix's scenarios) against it into <row>/.build, so each phase is a plain
# `java -cp` with no Maven at run time. Each Java row's setup.sh is a link to this file; run
# as tests/matrix/clients/<row>/setup.sh. Idempotent. Needs Java 17+ and Maven.
set -euo pipefail
row="$(cd "$(dirname "$0")" && pwd)"
name="$(basename "$row")"
case "$name" in
java-*) ;;
*)
    echo "run this as tests/matrix/clients/java-<VERSION>/setup.sh (a link to it), not from $row" >&2
    exit 2
    ;;
esac
bash "$(readlink -f "$0" | xargs dirname)/../build.sh" "${name#java-}" "$row/.build"
echo "built $name driver in $row/.build"
