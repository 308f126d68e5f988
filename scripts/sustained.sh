#!/usr/bin/env bash
# The 60-second sustained ASYNC runs of docs/benchmarks.md ("Sustained appends"), three rounds, plus the
# transferTo run; feed the output to scripts/perf-medians.py. Each 60-s DIRECT run writes about 70 GB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
D=${1:-/tmp/sluice-perf}
MiB8=8388608
for run in 1 2 3; do
  echo "== run $run 60s direct"; ./sluice perf --dir "$D" --flush async --write-path direct --size 1024 --seconds 60
  for wp in mmap write-buffer channel; do
    echo "== run $run 60s $wp writeback-off"
    ./sluice perf --dir "$D" --flush async --write-path $wp --size 1024 --seconds 60 --pre-touch none --writeback-distance 0
    echo "== run $run 60s $wp writeback-8MiB"
    ./sluice perf --dir "$D" --flush async --write-path $wp --size 1024 --seconds 60 --pre-touch none --writeback-distance $MiB8
  done
  echo "== run $run 60s mmap writeback-8MiB pre-touch-read"
  ./sluice perf --dir "$D" --flush async --write-path mmap --size 1024 --seconds 60 --pre-touch read --writeback-distance $MiB8
  echo "== run $run transfer mmap 10s"
  ./sluice perf --dir "$D" --flush async --write-path mmap --size 1024 --seconds 10 --transfer
done
