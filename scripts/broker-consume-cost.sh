#!/usr/bin/env bash
# Broker CPU of consuming from the page cache: 2,000,000 x 1 KiB records are produced (acks=1) into one partition of
# a fresh broker on 127.0.0.1, then kafka-consumer-perf-test reads them all, <rounds> times. Prints, per round, the
# consumer's records/s, the broker's CPU seconds per million records (/proc/<pid>/stat) and the TCP segments sent
# on the machine meanwhile (nstat TcpOutSegs). <broker> is sluice (the bench lab's SluiceBrokerMain, ASYNC) or
# kafka (Apache Kafka from the bench lab's classpath, KRaft, one node). With PROFILE=1 one more round is recorded
# with `perf record -g` into <scratch>/perf.data.
# Needs the build: ./mvnw -B install -DskipTests
# usage: scripts/broker-consume-cost.sh <sluice|kafka> [rounds]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
broker=$1; rounds=${2:-3}; records=2000000
scratch="$(mktemp -d)"
broker_pid=""
cleanup() {
  if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then kill -TERM "$broker_pid"; wait "$broker_pid" || true; fi
  rm -rf "$scratch/store" "$scratch/kafka"
}
trap cleanup EXIT
(cd "$here" && ./mvnw -q -B -f scripts/kafka-tools/pom.xml dependency:build-classpath \
  -Dmdep.outputFile="$scratch/tools.cp") >&2
tools="$(cat "$scratch/tools.cp")"
lab="$here/sluice-bench/target/sluice-bench.jar:$(ls "$here"/sluice-bench/target/lib/*.jar | tr '\n' ':')"
port=$((20000 + RANDOM % 20000))
jvm=(-Xms1g -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+PreserveFramePointer)
case "$broker" in
  sluice)
    java "${jvm[@]}" --enable-native-access=ALL-UNNAMED -cp "$lab" io.sluice.bench.broker.SluiceBrokerMain \
      "$scratch/store" "$port" async > "$scratch/broker.out" 2>&1 &
    broker_pid=$!
    for _ in $(seq 1 100); do grep -q ready "$scratch/broker.out" 2>/dev/null && break; sleep 0.1; done
    ;;
  kafka)
    mkdir -p "$scratch/kafka"
    cat > "$scratch/kafka/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$((port + 1))
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$scratch/kafka/logs
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    java -Xmx256m -cp "$lab" kafka.tools.StorageTool format -t "$(tr -d '-' < /proc/sys/kernel/random/uuid | head -c 22)" \
      -c "$scratch/kafka/server.properties" > "$scratch/format.out" 2>&1
    java "${jvm[@]}" -cp "$lab" kafka.Kafka "$scratch/kafka/server.properties" > "$scratch/broker.out" 2>&1 &
    broker_pid=$!
    ;;
  *) echo "usage: $0 <sluice|kafka> [rounds]" >&2; exit 2 ;;
esac
for _ in $(seq 1 60); do
  java -cp "$tools" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" --create --topic p \
    --partitions 1 --replication-factor 1 > /dev/null 2>&1 && break
  sleep 1
done
java -cp "$tools" org.apache.kafka.tools.ProducerPerformance --topic p --num-records $records --record-size 1024 \
  --throughput -1 --command-property "bootstrap.servers=127.0.0.1:$port" acks=1 > "$scratch/produce.out" 2>&1
ticks() { awk '{print $14 + $15}' "/proc/$broker_pid/stat"; }
consume() {
  java -cp "$tools" org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "127.0.0.1:$port" --topic p \
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
  consume > /dev/null &
  load=$!
  sleep 2
  jcmd "$broker_pid" Compiler.perfmap > /dev/null
  perf record -F 999 -g -p "$broker_pid" -o "$scratch/perf.data" -- sleep 4 > /dev/null 2>&1
  jcmd "$broker_pid" Compiler.perfmap > /dev/null
  wait $load || true
  echo "profile: perf report -i $scratch/perf.data --children --sort sym -g none"
fi
