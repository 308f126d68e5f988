cd "$(dirname "${BASH_SOURCE[0]}")/.."
D=${1:-/tmp/sluice-perf}
for run in 1 2 3; do
  for wp in mmap write-buffer channel; do
    echo "== run $run async 1KiB $wp"; ./sluice perf --dir $D --flush async --write-path $wp --size 1024 --seconds 10 --read
  done
  echo "== run $run async 100B mmap"; ./sluice perf --dir $D --flush async --write-path mmap --size 100 --seconds 10
  echo "== run $run async 100B write-buffer"; ./sluice perf --dir $D --flush async --write-path write-buffer --size 100 --seconds 10
  for wp in mmap write-buffer channel; do
    echo "== run $run sync 64p 1KiB $wp"; ./sluice perf --dir $D --flush sync --write-path $wp --size 1024 --seconds 10 --producers 64 --queues 4
  done
done
