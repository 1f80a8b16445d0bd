#!/usr/bin/env bash
# Resolves Apache's rocketmq-tools (pom.xml) from Maven Central into ~/.m2 and writes the
# classpath the driver runs mqadmin with. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
mvn -B -q -f pom.xml dependency:build-classpath -Dmdep.outputFile=classpath.txt
