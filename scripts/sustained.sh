#!/usr/bin/env bash
# The sustained-load runs of docs/benchmarks.md, three rounds; feed the output to scripts/perf-medians.py.
# Each 60-s ASYNC run appends 1 KiB messages far past the kernel's dirty limits (a DIRECT run writes about
# 75 GB). The CLI jar is copied first, so editing sources while this runs cannot change what is measured.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
D=${1:-/tmp/sluice-perf}
./sluice --version >/dev/null 2>&1 || ./sluice --help >/dev/null
jar="$(mktemp -d)/sluice-cli.jar"
cp sluice-cli/target/sluice-cli.jar "$jar"
perf() { "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" perf --dir "$D" "$@"; }
MiB8=8388608
for run in 1 2 3; do
  echo "== run $run 60s direct"; perf --flush async --write-path direct --size 1024 --seconds 60
  for wp in mmap write-buffer channel; do
    echo "== run $run 60s $wp writeback-off"
    perf --flush async --write-path $wp --size 1024 --seconds 60 --pre-touch none --writeback-distance 0
    echo "== run $run 60s $wp writeback-8MiB"
    perf --flush async --write-path $wp --size 1024 --seconds 60 --pre-touch none --writeback-distance $MiB8
  done
  echo "== run $run 60s mmap writeback-8MiB pre-touch-read"
  perf --flush async --write-path mmap --size 1024 --seconds 60 --pre-touch read --writeback-distance $MiB8
  echo "== run $run transfer mmap 10s"
  perf --flush async --write-path mmap --size 1024 --seconds 10 --transfer
done
