#!/usr/bin/env bash
# Whether one consumer or the broker sets the rate of a read over TLS: starts <broker> as the TLS race starts it
# (LabBrokerMain --tls), produces <records> x 1 KiB (acks=1) over <listener> (default SSL) to a topic of one partition,
# reads it once unmeasured, then for each consumer count (default 1, 2 and 3) reads it with that many stock consumers
# at once (ListenerLoadMain consume, a JVM each, each the whole topic from its start), printing the records/s of all
# of them together (the records read over the wall time from the first start to the last end) and the broker's CPU per
# million records read.
# Needs the build: ./mvnw -B -o -pl sluice-bench -am package -DskipTests
# usage: scripts/tls-consumers.sh <sluice|kafka> [records] [listener] [consumer counts...]
set -euo pipefail
broker=$1; records=${2:-1000000}; listener=${3:-SSL}; shift $(( $# < 3 ? $# : 3 ))
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 3)
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
lab_broker "$broker" "$scratch/broker" --tls
pid=$lab_pid
read -r _ _ address config < <(grep "^listener $listener " "$scratch/lab.out")
load() { java -Xmx1g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain "$@" 2>/dev/null | tail -1; }
load produce "$address" "$config" reads "$records" > /dev/null
load consume "$address" "$config" reads "$records" > /dev/null
for n in "${counts[@]}"; do
  cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  start=$(date +%s.%N)
  for i in $(seq 1 "$n"); do load consume "$address" "$config" reads "$records" > "$scratch/read-$i" & done
  wait $(jobs -p | grep -v "^$broker_pid$") 2>/dev/null || true
  end=$(date +%s.%N)
  cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  for i in $(seq 1 "$n"); do
    got=$(awk '{print $1}' "$scratch/read-$i")
    [ "$got" = "$records" ] || { echo "consumer $i of $n read ${got:-nothing} of $records records" >&2; exit 1; }
  done
  total=$((n * records))
  echo "$broker $listener $n consumers: $(echo "scale=0; $total / ($end - $start)" | bc) records/s together" \
    "($total records read), broker CPU per M records $(echo "scale=2; ($cpu1 - $cpu0) * 10000 / $total" | bc) s"
  rm -f "$scratch"/read-*
done
