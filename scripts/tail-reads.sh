#!/usr/bin/env bash
# The tail-read runs of docs/benchmarks.md ("Reads"): DIRECT appends for 10 s, then one consumer reads the
# newest messages (half the read cache) 5 times untimed and once timed; three rounds. Feed the output to
# scripts/perf-medians.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
D=${1:-/tmp/sluice-perf}
./sluice --version >/dev/null
jar="$(mktemp -d)/sluice-cli.jar"
cp sluice-cli/target/sluice-cli.jar "$jar"
for run in 1 2 3; do
  echo "== run $run tail-read direct 10s"
  "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" perf --dir "$D" --flush async \
      --write-path direct --size 1024 --seconds 10 --read --read-tail
done
