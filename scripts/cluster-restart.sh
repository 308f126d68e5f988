#!/usr/bin/env bash
# How long a cluster broker takes from its process's start to serving after a SIGKILL (io.sluice.bench.tools.RestartTimes):
# three `sluice broker --cluster` processes under a steady stock producer; each round kills broker 2 and starts it
# as the round's variant, the variants taking turns. Usage:
#   scripts/cluster-restart.sh ROUNDS NAME=CLI_JAR[,JVM_OPTION...] [NAME=CLI_JAR[,JVM_OPTION...] ...]
# e.g. an A/B of two builds' sluice-cli.jar, the second also with the launcher's class-data archive:
#   scripts/cluster-restart.sh 5 before=/tmp/old.jar after=sluice-cli/target/sluice-cli.jar \
#     after-cds=sluice-cli/target/sluice-cli.jar,-XX:SharedArchiveFile=/tmp/r.jsa,-XX:+AutoCreateSharedArchive
# (an archive is written by a run that ends cleanly: start and stop one broker with it first). Used for "Restart" in
# docs/benchmarks.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
rounds="$1"
shift
dir="$(mktemp -d)"
echo "logs in $dir"
java -cp "$here/sluice-bench/target/sluice-bench.jar" io.sluice.bench.tools.RestartTimes "$dir" "$rounds" "$@"
