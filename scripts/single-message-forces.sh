#!/usr/bin/env bash
# How many records each force carries in the broker race's single-message scenario: starts <broker> as the race's
# durable scenarios start it (LabBrokerMain --durable: Sluice SYNC, Kafka with log.flush.interval.messages=1), then for
# each producer count (default 64 and 256) runs the scenario for 20 s (ListenerLoadMain singles: that many producers,
# a connection each, one 1 KiB record at a time, acks=all, over 8 partitions) while `perf stat` counts the broker's
# fdatasync, fsync, msync and syncfs calls, and prints the acknowledgements per second, the forces per second, the records
# per force and the broker's CPU per million records. An unmeasured run of 64 producers comes first (the compilers'
# warm-up). PARTITIONS sets the partitions (default 8, the race's): those of one topic, or over 2,000 those of several
# topics of at most 2,000 each; producer p sends its k-th record to partition (p + k * producers) modulo PARTITIONS,
# so that every partition is written when there are more of them than producers.
# Needs the build: ./mvnw -B -o -pl sluice-bench -am package -DskipTests
# usage: [PARTITIONS=n] scripts/single-message-forces.sh <sluice|kafka> [producers...]
set -euo pipefail
broker=$1; shift
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(64 256)
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
lab_broker "$broker" "$scratch/broker" --durable
address=$lab_bootstrap; pid=$lab_pid
: > "$scratch/plaintext.properties"
source "$here/scripts/singles-measure.sh"
partitions=${PARTITIONS:-8}
singles_warm_up "$address" "$partitions"
for producers in "${counts[@]}"; do
  singles_measure "$broker" "$pid" "$address" "$producers" "$partitions"
done
