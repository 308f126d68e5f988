#!/usr/bin/env bash
# Where three Sluice brokers' CPU goes under a steady stock producer: runs scripts/cluster-steady.sh, attaches
# async-profiler (tools.profiler:async-profiler from Maven Central, fetched once into ~/.cache/sluice) to each broker
# after a warm-up, samples on-CPU stacks of every thread for a while, and prints scripts/profile-summary.py's table
# (threads, kernel and user time, the frames that lead). Usage: scripts/cluster-profile.sh [records] [warm-up s]
# [profile s] (defaults 2000000, 60, 40: the run must outlast warm-up + profile). Extra arguments after those go to
# the summary (frame names whose share of the samples to print). The stacks stay in the directory printed first.
# Used for the cluster's CPU breakdown in docs/benchmarks.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
records="${1:-2000000}"
warmup="${2:-60}"
seconds="${3:-40}"
shift $(( $# < 3 ? $# : 3 ))
version=4.2
cache="${HOME}/.cache/sluice/async-profiler-$version"
lib="$cache/linux-x64/libasyncProfiler.so"
if [ ! -f "$lib" ]; then
  mkdir -p "$cache"
  curl -fsSL -o "$cache/ap.jar" \
    "https://repo1.maven.org/maven2/tools/profiler/async-profiler/$version/async-profiler-$version.jar"
  (cd "$cache" && unzip -q -o ap.jar 'linux-x64/*')
fi
out="$(mktemp -d)"
echo "stacks in $out"
"$here/scripts/cluster-steady.sh" "$records" > "$out/steady.txt" 2>&1 &
steady=$!
sleep "$warmup"
pids=$(pgrep -f io.sluice.cluster.ClusterBroker)
for p in $pids; do
  # jcmd parses name=value pairs: the agent's options go quoted, as one argument.
  jcmd "$p" JVMTI.agent_load "$lib" "\"start,event=cpu,interval=1ms,threads\"" > /dev/null
done
sleep "$seconds"
for p in $pids; do
  jcmd "$p" JVMTI.agent_load "$lib" "\"stop,collapsed,file=$out/broker-$p.collapsed\"" > /dev/null
done
wait "$steady"
cat "$out/steady.txt"
python3 "$here/scripts/profile-summary.py" "$out"/broker-*.collapsed -- "$@"
