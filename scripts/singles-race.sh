#!/usr/bin/env bash
# The single-message scenario raced over partition counts: for each of ROUNDS rounds (default 3), for each partition
# count given, Sluice then Kafka, each started afresh by single-message-forces.sh (64 producers, 20 s measured after a
# warm-up). Prints one line per run, prefixed with its round; take the medians per broker and partition count.
# Needs the build: ./mvnw -B -o -pl sluice-bench -am package -DskipTests
# usage: [ROUNDS=n] scripts/singles-race.sh <partitions> [partitions...]
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: [ROUNDS=n] $0 <partitions> [partitions...]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for round in $(seq 1 "${ROUNDS:-3}"); do
  for partitions in "$@"; do
    for broker in sluice kafka; do
      echo "round $round $(PARTITIONS=$partitions "$here/scripts/single-message-forces.sh" "$broker" 64 2>&1 | tail -1)"
    done
  done
done
