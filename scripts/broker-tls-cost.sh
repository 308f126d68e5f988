#!/usr/bin/env bash
# What each listener costs a broker: starts <broker> as the TLS race starts it (LabBrokerMain --tls: PLAINTEXT, SSL
# and SASL_SSL/SCRAM-SHA-512 listeners, TLS 1.3 with TLS_AES_256_GCM_SHA384 only, certificates made at start), then
# for each listener named (default all three) produces <records> x 1 KiB (acks=1) to a topic of its own and reads it
# back twice, with the race's own client (ListenerLoadMain: the stock producer as the race sets it, an assigned
# consumer), printing the records/s and the broker's CPU per million records, user and system apart
# (/proc/<pid>/stat). Each listener first carries an unmeasured produce and read of $WARM records (default 200,000).
# With PROFILE=1, one more produce and read over each listener is recorded with `perf record -g` (Java frames named
# through the JIT's perf map) into <scratch>/perf-<listener>-{produce,consume}.data (kept).
# Needs the build: ./mvnw -B -o -pl sluice-bench -am package -DskipTests
# usage: scripts/broker-tls-cost.sh <sluice|kafka> [records] [listener...]
set -euo pipefail
broker=$1; records=${2:-1000000}; shift $(( $# < 2 ? $# : 2 ))
listeners=("$@"); [ ${#listeners[@]} -gt 0 ] || listeners=(PLAINTEXT SSL SASL_SSL)
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
lab_broker "$broker" "$scratch/broker" --tls
pid=$lab_pid
ticks() { awk '{print $14, $15}' "/proc/$pid/stat"; }
load() { # produce|consume address config topic count
  java -Xmx1g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain "$@" 2>/dev/null | tail -1
}
produce() { load produce "${@:2}"; }
consume() { load consume "${@:2}"; }
measure() { # what listener address config topic
  local what=$1; shift
  read -r user0 sys0 < <(ticks)
  local line; line=$("$what" "$@")
  read -r user1 sys1 < <(ticks)
  local rate; rate=$(echo "$line" | awk '{print $(NF-1)}')
  echo "$broker $1 $what: $rate records/s, broker CPU per M records: user" \
    "$(echo "scale=3; ($user1 - $user0) / 100 / ($5 / 1000000)" | bc) s, system" \
    "$(echo "scale=3; ($sys1 - $sys0) / 100 / ($5 / 1000000)" | bc) s"
}
for listener in "${listeners[@]}"; do
  read -r _ _ address config < <(grep "^listener $listener " "$scratch/lab.out")
  topic="p-$listener"
  produce "$listener" "$address" "$config" "warm-$listener" "${WARM:-200000}" > /dev/null
  consume "$listener" "$address" "$config" "warm-$listener" "${WARM:-200000}" > /dev/null
  measure produce "$listener" "$address" "$config" "$topic" "$records"
  measure consume "$listener" "$address" "$config" "$topic" "$records"
  measure consume "$listener" "$address" "$config" "$topic" "$records"
done
if [ "${PROFILE:-0}" = 1 ]; then
  for listener in "${listeners[@]}"; do
    read -r _ _ address config < <(grep "^listener $listener " "$scratch/lab.out")
    for what in produce consume; do
      data="$scratch/perf-$listener-$what.data"
      jcmd "$pid" Compiler.perfmap > /dev/null
      perf record -F 999 -g -p "$pid" -o "$data" > /dev/null 2>&1 &
      recorder=$!
      topic="p-$listener"; [ "$what" = consume ] || topic="profiled-$listener"
      "$what" "$listener" "$address" "$config" "$topic" "$records" > /dev/null
      kill -INT $recorder; wait $recorder || true
    done
  done
  jcmd "$pid" Compiler.perfmap > /dev/null
  echo "profiles: perf report -i $scratch/perf-<listener>-<produce|consume>.data --no-children --sort dso,sym"
fi
