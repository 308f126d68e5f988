#!/usr/bin/env bash
# One kafka-producer-perf-test run (3,000,000 records of 1 KiB unless given, acks as given) against `sluice broker` on a fresh
# store with the given write path, on 127.0.0.1; prints records/s, p99 and the broker's CPU seconds per million
# records (/proc/<pid>/stat, from topic creation to the end of the run). CLI_JAR= names another sluice-cli.jar (another
# checkout's build) to compare builds, run by run in turn. With PROFILE=1 it also records the
# broker with `perf record -g` for 8 s into <scratch>/perf.data (start the JVM's perf map with jcmd). With CONSUME=1
# kafka-consumer-perf-test then reads the records back from the page cache, and the consumer's records/s and the
# broker's CPU seconds per million records read are printed too.
# usage: scripts/broker-write-path.sh <mmap|channel|write-buffer|direct> [acks] [record bytes] [records]
set -euo pipefail
path=$1; acks=${2:-1}; size=${3:-1024}; records=${4:-3000000}
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
java -Xms1g -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+PreserveFramePointer --enable-native-access=ALL-UNNAMED \
  -jar "${CLI_JAR:-$here/sluice-cli/target/sluice-cli.jar}" broker --dir "$scratch/store" --listen "127.0.0.1:$port" \
  --write-path "$path" > "$scratch/broker.out" 2>&1 &
broker_pid=$!
for _ in $(seq 1 100); do grep -q "started in" "$scratch/broker.out" 2>/dev/null && break; sleep 0.1; done
java -cp "$tools_cp" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --create --topic p \
  --partitions 1 --replication-factor 1 > /dev/null 2>&1
ticks() { awk '{print $14 + $15}' "/proc/$broker_pid/stat"; }
before=$(ticks)
java -cp "$tools_cp" org.apache.kafka.tools.ProducerPerformance --topic p --num-records $records --record-size $size \
  --throughput -1 --command-property "bootstrap.servers=127.0.0.1:$port" "acks=$acks" > "$scratch/perf.out" 2>&1 &
load=$!
if [ "${PROFILE:-0}" = 1 ]; then
  sleep 6
  jcmd "$broker_pid" Compiler.perfmap > /dev/null
  perf record -F 499 -g -p "$broker_pid" -o "$scratch/perf.data" -- sleep 8 > /dev/null 2>&1
  jcmd "$broker_pid" Compiler.perfmap > /dev/null
  echo "profile: perf report -i $scratch/perf.data --no-children --sort sym"
fi
wait $load
after=$(ticks)
line=$(grep "records sent" "$scratch/perf.out" | tail -1)
echo "$path acks=$acks ${size} B: $(echo "$line" | sed -E 's/.*sent, ([0-9.]+) records.*/\1/') records/s," \
  "p99 $(echo "$line" | sed -E 's/.* ([0-9]+) ms 99th.*/\1/') ms," \
  "broker CPU $(echo "scale=2; ($after - $before) / 100 / ($records / 1000000)" | bc) s per M records"
if [ "${CONSUME:-0}" = 1 ]; then
  before=$(ticks)
  java -cp "$tools_cp" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "127.0.0.1:$port" --topic p \
    --num-records "$records" --timeout 120000 > "$scratch/consume.out" 2>&1
  after=$(ticks)
  # The data line: start, end, MB, MB/s, records, records/s, ...
  rate=$(awk -F, '/^[0-9][0-9][0-9][0-9]-/ { gsub(/ /, "", $6); print $6 }' "$scratch/consume.out" | tail -1)
  echo "consume ${size} B: ${rate} records/s, broker CPU $(echo "scale=2; ($after - $before) / 100 / ($records / 1000000)" | bc) s per M records"
fi
