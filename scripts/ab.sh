#!/usr/bin/env bash
# Interleaved A/B of two builds of the CLI over the scenarios of docs/benchmarks.md's target table: three
# rounds; in each round every scenario runs on both builds back to back, the order alternating between rounds.
# Usage: scripts/ab.sh OLD.jar NEW.jar [DIR] > ab.log; then python3 scripts/ab-medians.py ab.log.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
old=$1
new=$2
D=${3:-/tmp/sluice-ab}
scenarios=(
  "async 1KiB direct|--flush async --write-path direct --size 1024 --seconds 10"
  "async 100B direct|--flush async --write-path direct --size 100 --seconds 10"
  "sync 64p 1KiB write-buffer|--flush sync --write-path write-buffer --size 1024 --seconds 10 --producers 64 --queues 4"
  "sync 64p 1KiB direct|--flush sync --write-path direct --size 1024 --seconds 10 --producers 64 --queues 4"
  "sync 64p 1KiB write-buffer queue layout|--flush sync --write-path write-buffer --size 1024 --seconds 10 --producers 64 --queues 4 --layout queue"
  "async 1KiB mmap read|--flush async --write-path mmap --size 1024 --seconds 10 --read"
  "async 1KiB write-buffer read|--flush async --write-path write-buffer --size 1024 --seconds 10 --read"
  "keyed 100B mmap lookups|--flush async --write-path mmap --size 100 --seconds 12 --keyed --lookups 100000"
  "tail reads direct|--flush async --write-path direct --size 1024 --seconds 10 --read --read-tail"
  "transfer mmap|--flush async --write-path mmap --size 1024 --seconds 10 --transfer"
  "sustained 60s direct|--flush async --write-path direct --size 1024 --seconds 60"
)
for run in 1 2 3; do
  if [ $((run % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
  for scenario in "${scenarios[@]}"; do
    name=${scenario%%|*}
    args=${scenario#*|}
    for build in $order; do
      jar=$old
      [ "$build" = new ] && jar=$new
      echo "== run $run $build $name"
      # shellcheck disable=SC2086
      "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" perf --dir "$D" $args
    done
  done
done
