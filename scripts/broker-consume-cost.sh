#!/usr/bin/env bash
# Broker CPU of consuming from the page cache: 2,000,000 x 1 KiB records are produced (acks=1) into one partition of
# a fresh broker on 127.0.0.1, then kafka-consumer-perf-test reads them all, <rounds> times. Prints, per round, the
# consumer's records/s, the broker's CPU seconds per million records (/proc/<pid>/stat) and the TCP segments sent
# on the machine meanwhile (nstat TcpOutSegs). <broker> is sluice or kafka, started as the bench lab's broker race
# starts them (LabBrokerMain: the Sluice broker under ASYNC, or Apache Kafka, KRaft, one node; same JVM settings).
# With PROFILE=1 one more round is recorded whole with `perf record -g` into <scratch>/perf.data (kept). With IDLE=1
# the broker's CPU in the 3 s after the produce (before any consumer) is printed first.
# Needs the build: ./mvnw -B install -DskipTests
# usage: scripts/broker-consume-cost.sh <sluice|kafka> [rounds]
set -euo pipefail
broker=$1; rounds=${2:-3}; records=2000000
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
lab_broker "$broker" "$scratch/broker"
bootstrap=$lab_bootstrap; pid=$lab_pid
java -cp "$tools_cp" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic p \
  --partitions 1 --replication-factor 1 > /dev/null 2>&1
java -cp "$tools_cp" org.apache.kafka.tools.ProducerPerformance --topic p --num-records $records --record-size 1024 \
  --throughput -1 --command-property "bootstrap.servers=$bootstrap" acks=1 > "$scratch/produce.out" 2>&1
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
if [ "${IDLE:-0}" = 1 ]; then
  idle=$(ticks); sleep 3
  echo "$broker after the produce: $(( $(ticks) - idle )) ticks of broker CPU in 3 s"
fi
consume() {
  java -cp "$tools_cp" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bootstrap" --topic p \
    --num-records $records --timeout 60000 2>/dev/null
}
for round in $(seq 1 "$rounds"); do
  nstat -n > /dev/null
  before=$(ticks)
  rate=$(consume | tail -1 | awk -F, '{gsub(/ /, "", $6); print $6}')
  after=$(ticks)
  segments=$(nstat -z TcpOutSegs | awk '/TcpOutSegs/ {print $2}')
  echo "$broker round $round: $rate records/s, broker CPU" \
    "$(echo "scale=3; ($after - $before) / 100 / ($records / 1000000)" | bc) s per M records, $segments TCP segments"
done
if [ "${PROFILE:-0}" = 1 ]; then
  profile="$(mktemp -d)"
  jcmd "$pid" Compiler.perfmap > /dev/null
  perf record -F 1999 -g -p "$pid" -o "$profile/perf.data" > /dev/null 2>&1 &
  recorder=$!
  consume > /dev/null
  kill -INT $recorder; wait $recorder || true
  jcmd "$pid" Compiler.perfmap > /dev/null
  echo "profile: perf report -i $profile/perf.data --children --sort sym -g none"
fi
