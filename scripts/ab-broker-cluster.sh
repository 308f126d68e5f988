#!/usr/bin/env bash
# Interleaved A/B of two builds of the CLI jar on the broker and cluster races of docs/benchmarks.md: three rounds;
# in each, kafka-producer-perf-test against `sluice broker` (CHANNEL, the broker's ASYNC default; acks=1, then
# kafka-consumer-perf-test reading those records back, and acks=all)
# and a stock producer against a three-broker cluster (scripts/cluster-steady.sh, the brokers from the jar under test,
# the load from this checkout), each on both builds back to back, the order alternating between rounds.
# Usage: scripts/ab-broker-cluster.sh OLD-sluice-cli.jar NEW-sluice-cli.jar [broker records] [cluster records] > ab.log
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
old=$1
new=$2
broker_records=${3:-3000000}
cluster_records=${4:-800000}
for run in 1 2 3; do
  if [ $((run % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for acks in 1 all; do
    for build in $order; do
      jar=$old; [ "$build" = new ] && jar=$new
      echo "== run $run broker acks=$acks $build"
      # After the acks=1 produce the records are read back (kafka-consumer-perf-test): the fetch path's figures.
      CONSUME=$([ "$acks" = 1 ] && echo 1 || echo 0) CLI_JAR=$jar "$here/scripts/broker-write-path.sh" channel "$acks" 1024 \
        "$broker_records"
    done
  done
  for build in $order; do
    jar=$old; [ "$build" = new ] && jar=$new
    echo "== run $run cluster $build"
    BROKER_CP=$jar "$here/scripts/cluster-steady.sh" "$cluster_records" | grep -E "records/s|broker CPU|elections"
  done
done
