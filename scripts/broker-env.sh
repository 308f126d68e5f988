# Sourced by the scripts that run a broker and Kafka's tools: the JDK (java-env.sh), $here (the repository), a
# $scratch directory removed at exit (with PROFILE=1 only the broker's data goes, perf.data stays), the process in
# $broker_pid stopped with SIGTERM at exit, Kafka's tools classpath in $tools_cp, and a loopback $port.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
scratch="$(mktemp -d)"
broker_pid=""
cleanup() {
  if [ -n "$broker_pid" ] && kill -0 "$broker_pid" 2>/dev/null; then kill -TERM "$broker_pid"; wait "$broker_pid" || true; fi
  if [ "${PROFILE:-0}" = 1 ]; then rm -rf "$scratch/store" "$scratch/broker"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
(cd "$here" && ./mvnw -q -B -f scripts/kafka-tools/pom.xml dependency:build-classpath \
  -Dmdep.outputFile="$scratch/tools.cp") >&2
tools_cp="$(cat "$scratch/tools.cp")"
port=$((20000 + RANDOM % 20000))
# Starts a broker as the bench lab's races start it (LabBrokerMain <sluice|kafka> <dir> [--tls|--durable]), its output
# in $scratch/lab.out, and waits (up to 3 min) for it to serve: sets $broker_pid (stopped at exit), $lab_bootstrap
# (host:port) and $lab_pid (the broker's own process, whose CPU the scripts read). Needs the bench jar.
# usage: lab_broker <sluice|kafka> <dir> [LabBrokerMain options...]
lab_broker() {
  java -Xmx256m -cp "$here/sluice-bench/target/sluice-bench.jar" io.sluice.bench.broker.LabBrokerMain "$@" \
    > "$scratch/lab.out" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 900); do grep -q "^bootstrap " "$scratch/lab.out" 2>/dev/null && break; sleep 0.2; done
  read -r _ lab_bootstrap _ lab_pid < <(grep "^bootstrap " "$scratch/lab.out") \
    || { cat "$scratch/lab.out" >&2; exit 1; }
}
