# Sourced by the single-message scripts (single-message-forces.sh, single-message-layouts.sh): singles_measure runs the
# broker race's single-message scenario (ListenerLoadMain singles) for 20 s against a broker while `perf stat` counts
# its fdatasync, fsync, msync and syncfs calls, and prints one line: the label, acknowledgements per second, p50 and p99,
# forces, records per force and the broker's CPU per million records. Needs $lab (the bench jar) and $scratch with an
# empty plaintext.properties in it. SINGLES_ERRORS names a file that takes the load's standard error (else dropped).
# usage: singles_measure <label> <broker pid> <host:port> <producers> <partitions>
singles_measure() {
  local label=$1 pid=$2 address=$3 producers=$4 partitions=$5 cpu0 cpu1 out records rate forces counter
  cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync,syscalls:sys_enter_syncfs -p "$pid" \
    -o "$scratch/perf-$producers.csv" &
  counter=$!
  out=$(java -Xmx2g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain singles "$address" \
    "$scratch/plaintext.properties" "singles-$producers" "$producers" "$partitions" \
    2>>"${SINGLES_ERRORS:-/dev/null}" | tail -2)
  kill -INT $counter; wait $counter || true
  cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  records=$(echo "$out" | tail -1 | awk '{print $1}')
  rate=$(echo "$out" | tail -1 | awk '{print $(NF-1)}')
  forces=$(awk -F, '/syscalls/ {n += $1} END {print n}' "$scratch/perf-$producers.csv")
  echo "$label $producers producers, $partitions partitions: $rate records/s ($(echo "$out" | head -1))," \
    "$forces forces" \
    "(fdatasync+fsync+msync+syncfs, the producers' connecting included), $(echo "scale=2; $records / $forces" | bc)" \
    "records per force, broker CPU per M records $(echo "scale=2; ($cpu1 - $cpu0) * 10000 / $records" | bc) s"
}

# The unmeasured warm-up run of 64 producers (the compilers'). usage: singles_warm_up <host:port> <partitions>
singles_warm_up() {
  java -Xmx2g -cp "$lab" io.sluice.bench.broker.ListenerLoadMain singles "$1" "$scratch/plaintext.properties" \
    warm-up 64 "$2" > /dev/null 2>&1
}
