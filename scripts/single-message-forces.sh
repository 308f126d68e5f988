#!/usr/bin/env bash
# How many records each force carries in the broker race's single-message scenario: starts <broker> as the race's
# durable scenarios start it (LabBrokerMain --durable: Sluice SYNC, Kafka with log.flush.interval.messages=1), then for
# each producer count (default 64 and 256) runs the scenario for 20 s (ListenerLoadMain singles: that many producers,
# a connection each, one 1 KiB record at a time, acks=all, over 8 partitions) while `perf stat` counts the broker's
# fdatasync, fsync and msync calls, and prints the acknowledgements per second, the forces per second, the records
# per force and the broker's CPU per million records. An unmeasured run of 64 producers comes first (the compilers'
# warm-up). PARTITIONS sets the topic's partitions (default 8, the race's).
# Needs the build: ./mvnw -B -o -pl sluice-bench -am package -DskipTests
# usage: [PARTITIONS=n] scripts/single-message-forces.sh <sluice|kafka> [producers...]
set -euo pipefail
broker=$1; shift
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(64 256)
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
java -Xmx256m -cp "$lab" io.sluice.bench.broker.LabBrokerMain "$broker" "$scratch/broker" --durable \
  > "$scratch/lab.out" 2>&1 &
broker_pid=$!
for _ in $(seq 1 900); do grep -q "^bootstrap " "$scratch/lab.out" 2>/dev/null && break; sleep 0.2; done
read -r _ address _ pid < <(grep "^bootstrap " "$scratch/lab.out") || { cat "$scratch/lab.out" >&2; exit 1; }
: > "$scratch/plaintext.properties"
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
partitions=${PARTITIONS:-8}
java -Xmx2g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain singles "$address" "$scratch/plaintext.properties" \
  warm-up 64 "$partitions" > /dev/null 2>&1
for producers in "${counts[@]}"; do
  cpu0=$(ticks)
  perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync -p "$pid" \
    -o "$scratch/perf-$producers.csv" &
  counter=$!
  out=$(java -Xmx2g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain singles "$address" \
    "$scratch/plaintext.properties" "singles-$producers" "$producers" "$partitions" 2>/dev/null | tail -2)
  kill -INT $counter; wait $counter || true
  cpu1=$(ticks)
  records=$(echo "$out" | tail -1 | awk '{print $1}')
  rate=$(echo "$out" | tail -1 | awk '{print $(NF-1)}')
  forces=$(awk -F, '/syscalls/ {n += $1} END {print n}' "$scratch/perf-$producers.csv")
  echo "$broker $producers producers, $partitions partitions: $rate records/s ($(echo "$out" | head -1))," \
    "$forces forces" \
    "(fdatasync+fsync+msync, the producers' connecting included), $(echo "scale=1; $records / $forces" | bc)" \
    "records per force, broker CPU per M records $(echo "scale=2; ($cpu1 - $cpu0) / 100 / ($records / 1000000)" | bc) s"
done
