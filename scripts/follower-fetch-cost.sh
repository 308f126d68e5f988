#!/usr/bin/env bash
# The CPU of a replication data path where followers fetch, as Kafka's do, measured with a prototype: one Sluice
# broker started as the bench lab's race starts it (LabBrokerMain: ASYNC store), two followers
# (io.sluice.bench.tools.FollowerFetchMain: each fetches the partition from the broker with Fetch v12 and appends
# every batch as it came to a store of its own, ASYNC, in a JVM with the cluster brokers' settings), and the cluster
# scripts' stock producer (SteadyProduce: acks=all, linger 5 ms, 16 KiB batches, 1 KiB records, one partition, here
# replication factor 1, the broker alone acknowledging). Prints the producer's rate, the three processes' CPU per
# record over the produce (from /proc/<pid>/stat, as scripts/cluster-steady.sh counts its three brokers') and each
# follower's log end. The prototype keeps no high watermark from the followers' fetches and elects nothing: it
# measures moving the bytes, not the protocol around them.
# Needs the build: ./mvnw -B -o install -DskipTests
# usage: scripts/follower-fetch-cost.sh [records] (default 800000)
set -euo pipefail
records="${1:-800000}"
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
lab="$here/sluice-bench/target/sluice-bench.jar"
lab_broker sluice "$scratch/leader"
bootstrap=$lab_bootstrap; pid=$lab_pid
followers=()
for id in 1 2; do
  java -Xms1g -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    --enable-native-access=ALL-UNNAMED -cp "$lab" io.sluice.bench.tools.FollowerFetchMain "$bootstrap" \
    "$scratch/follower-$id" steady 0 > "$scratch/follower-$id.log" 2>&1 &
  followers+=($!)
done
stop_followers() { kill -TERM "${followers[@]}" 2>/dev/null || true; wait "${followers[@]}" 2>/dev/null || true; }
trap 'stop_followers; cleanup' EXIT
ticks() { local sum=0; for p in "$pid" "${followers[@]}"; do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $sum; }
sleep 2
before=$(ticks)
java -cp "$lab" io.sluice.bench.tools.SteadyProduce "$bootstrap" steady "$records" 1 2>&1 | grep -v WARN
sleep 2
after=$(ticks)
stop_followers
for id in 1 2; do echo "follower $id: $(tail -1 "$scratch/follower-$id.log")"; done
hz=$(getconf CLK_TCK)
awk -v t=$((after - before)) -v hz="$hz" -v n="$records" \
  'BEGIN { printf "leader and followers CPU: %.1f s, %.0f us per record\n", t / hz, t / hz / n * 1e6 }'
