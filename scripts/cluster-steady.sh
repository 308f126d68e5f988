#!/usr/bin/env bash
# Three Sluice brokers started as the cluster race starts them (child JVMs on 127.0.0.1, ASYNC stores) and one stock
# producer (io.sluice.bench.tools.SteadyProduce) sending a number of records; prints the producer's rate every 10 s, the
# brokers' CPU per record over the whole run (from /proc/<pid>/stat), and how many elections started (a follower that
# stopped hearing its leader) and how many leaders were elected meanwhile. Used for the before/after figures of the
# cluster sections of docs/benchmarks.md. Usage: scripts/cluster-steady.sh [records] (default 800000). Build first
# (./sluice builds on first use); JAR= names another sluice-bench.jar (another checkout's build) to compare, or
# BROKER_CP= another class path for the brokers alone (a sluice-cli.jar, which holds the cluster), the load the same; KEEP=1
# keeps the brokers' directory and logs; BROKER_OPTS= adds JVM options to the brokers ({node} and {dir} in them name
# the broker's id and the run's directory: a profiler's output file, say).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
records="${1:-800000}"
jar="${JAR:-$here/sluice-bench/target/sluice-bench.jar}"
dir="$(mktemp -d)"
ports=(19092 19093 19094 19192 19193 19194)
spec="1@127.0.0.1:${ports[0]}/${ports[3]},2@127.0.0.1:${ports[1]}/${ports[4]},3@127.0.0.1:${ports[2]}/${ports[5]}"
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
for id in 1 2 3; do
  opts="${BROKER_OPTS:-}"
  opts="${opts//\{node\}/$id}"
  opts="${opts//\{dir\}/$dir}"
  # shellcheck disable=SC2086
  java $opts -Xms1g -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
    --enable-native-access=ALL-UNNAMED -Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl.FollowerState=info \
    -Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl.RoleInfo=info \
    -cp "${BROKER_CP:-$jar}" io.sluice.cluster.ClusterBroker "$dir/node-$id" "$spec" "$id" \
    steady async > "$dir/node-$id.log" 2>&1 &
  pids+=($!)
done
for id in 1 2 3; do
  until grep -q "ready $id" "$dir/node-$id.log"; do
    kill -0 "${pids[$((id - 1))]}" || { cat "$dir/node-$id.log"; exit 1; }
    sleep 0.2
  done
done
ticks() { local sum=0; for p in "${pids[@]}"; do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $sum; }
elections() { cat "$dir"/node-*.log | grep -c "change to CANDIDATE" || true; }
leaders() { cat "$dir"/node-*.log | grep -c "LeaderStateImpl$" || true; }
# The metadata group's first leader before the run, so that the run's count of leaders is the new topic's first one
# and any change of leader.
for _ in $(seq 300); do [ "$(leaders)" -ge 1 ] && break; sleep 0.1; done
before=$(ticks)
elections_before=$(elections)
leaders_before=$(leaders)
java -cp "$jar" io.sluice.bench.tools.SteadyProduce "127.0.0.1:${ports[0]}" steady "$records" 2>&1 | grep -v WARN
after=$(ticks)
echo "during the run: $(( $(elections) - elections_before )) elections started, $(( $(leaders) - leaders_before ))" \
  "leaders elected (the topic's first one among them)"
hz=$(getconf CLK_TCK)
awk -v t=$((after - before)) -v hz="$hz" -v n="$records" \
  'BEGIN { printf "broker CPU: %.1f s, %.0f us per record\n", t / hz, t / hz / n * 1e6 }'
