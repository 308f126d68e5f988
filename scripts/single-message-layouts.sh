#!/usr/bin/env bash
# One force for many partitions, measured at the broker: the broker race's single-message scenario (ListenerLoadMain
# singles: that many producers, a connection each, one 1 KiB record at a time, acks=all) against `sluice broker
# --flush sync --write-path mmap` (the race's durable Sluice) with its topic in the BATCHES layout (a log per
# partition, each forced on its own: the default) and in the SHARED layout (one commit log for every partition, one
# force for all), interleaved, ROUNDS rounds (default 3). Each broker starts fresh and takes an unmeasured run of 64
# producers first; then each producer count (default 64 and 256) runs 20 s while `perf stat` counts the broker's
# fdatasync, fsync and msync calls. Prints one line per run: layout, producers, records/s, forces, records per force,
# broker CPU s per M records.
# Needs the build: ./mvnw -B -o install -DskipTests
# usage: [ROUNDS=n] [PARTITIONS=n] scripts/single-message-layouts.sh [producers...]
set -euo pipefail
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(64 256)
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
cli="$here/sluice-cli/target/sluice-cli.jar"
partitions=${PARTITIONS:-8}
: > "$scratch/plaintext.properties"
source "$here/scripts/singles-measure.sh"
run_layout() { # <layout: batches|shared>
  local layout=$1 dir="$scratch/broker-$1"
  rm -rf "$dir"; mkdir -p "$dir"
  if [ "$layout" = shared ]; then echo "topic.layout=shared" > "$dir.properties"; else : > "$dir.properties"; fi
  java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -jar "$cli" broker \
    --dir "$dir" --flush sync --write-path mmap --listen "127.0.0.1:$port" --config "$dir.properties" \
    > "$dir.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 300); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
  singles_warm_up "127.0.0.1:$port" "$partitions"
  for producers in "${counts[@]}"; do
    singles_measure "$layout" "$broker_pid" "127.0.0.1:$port" "$producers" "$partitions"
  done
  kill -TERM "$broker_pid"; wait "$broker_pid" || true
  broker_pid=""
  rm -rf "$dir"
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  echo "round $round"
  if [ $((round % 2)) = 1 ]; then run_layout batches; run_layout shared; else run_layout shared; run_layout batches; fi
done
