#!/usr/bin/env bash
# Failovers of three local Sluice brokers under a steady stock producer, each broken down in time
# (io.sluice.bench.tools.FailoverTimeline): the kill, the first acknowledgement after it, and how slowly each surviving broker
# answered a new connection meanwhile; the brokers' logs (Raft role changes, timestamped) stay in the directory printed
# first. Usage: scripts/cluster-failover.sh [kills] (default 5). JAR= names another sluice-bench.jar, as for
# cluster-steady.sh; CLIENT_LOG=debug logs the producer's Metadata updates; BROKER_OPTS= adds JVM options to the
# brokers. Used for the failover breakdown and the election-timeout before/after in docs/benchmarks.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
kills="${1:-5}"
jar="${JAR:-$here/sluice-bench/target/sluice-bench.jar}"
dir="$(mktemp -d)"
echo "logs in $dir"
java -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
  ${CLIENT_LOG:+-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.Metadata=$CLIENT_LOG} \
  -cp "$jar" io.sluice.bench.tools.FailoverTimeline "$dir" "$jar" "$kills"
