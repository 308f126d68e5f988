#!/usr/bin/env bash
# Runs the benchmark matrix of docs/benchmarks.md three times; feed its output to scripts/perf-medians.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
D=${1:-/tmp/sluice-perf}
for run in 1 2 3; do
  for wp in mmap write-buffer channel; do
    echo "== run $run async 1KiB $wp"; ./sluice perf --dir "$D" --flush async --write-path $wp --size 1024 --seconds 10 --read
  done
  # DIRECT leaves nothing in the page cache, so its read-back would time the disk; it is not read back.
  echo "== run $run async 1KiB direct"; ./sluice perf --dir "$D" --flush async --write-path direct --size 1024 --seconds 10
  for wp in write-buffer direct; do
    echo "== run $run async 100B $wp"; ./sluice perf --dir "$D" --flush async --write-path $wp --size 100 --seconds 10
  done
  for wp in write-buffer channel direct; do
    echo "== run $run sync 64p 1KiB $wp"; ./sluice perf --dir "$D" --flush sync --write-path $wp --size 1024 --seconds 10 --producers 64 --queues 4
  done
done
