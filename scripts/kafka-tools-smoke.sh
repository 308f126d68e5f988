#!/usr/bin/env bash
# Kafka's own command-line tools (the pinned kafka-tools from Maven Central) against `sluice broker` on
# 127.0.0.1: topics (create, list, describe, delete, configs), console producer and consumer, consumer groups (the
# classic protocol and KIP-848's), a
# preferred leader election, producer and consumer perf tests, kafka-configs, kafka-delete-records, kafka-transactions
# (an open transaction listed, described, its producer described, aborted). Each step's output is checked; the
# script stops at the first that fails. Usage: kafka-tools-smoke.sh [broker|cluster]: against `sluice broker` (the
# default), or against `sluice cluster` (three brokers, topics of replication factor 3).
set -euo pipefail
mode="${1:-broker}"
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
tool() { java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$tools_cp" "$@"; }

if [ "$mode" = cluster ]; then
  bootstrap="127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))"
  replicas=3
  "$here/sluice" cluster --dir "$scratch/store" --port "$port" --raft-port "$((port + 100))" > "$scratch/broker.out" 2>&1 &
  started="Sluice cluster of 3 brokers"
  # Each node's store: where a deleted topic's files must be gone and a clean close leaves its marker.
  stores=("$scratch/store/node-1/store" "$scratch/store/node-2/store" "$scratch/store/node-3/store")
elif [ "$mode" = broker ]; then
  bootstrap="127.0.0.1:$port"
  replicas=1
  "$here/sluice" broker --dir "$scratch/store" --listen "$bootstrap" > "$scratch/broker.out" 2>&1 &
  started="started in"
  stores=("$scratch/store")
else
  echo "usage: kafka-tools-smoke.sh [broker|cluster]" >&2
  exit 2
fi
broker_pid=$!
for _ in $(seq 1 150); do
  grep -q "$started" "$scratch/broker.out" 2>/dev/null && break
  sleep 0.2
done
grep "$started" "$scratch/broker.out" || { echo "kafka-tools smoke: the $mode did not start" >&2; cat "$scratch/broker.out" >&2; exit 1; }
echo "== against a $mode: $bootstrap"

step() { echo "== $*"; }
fail() { echo "kafka-tools smoke: $*" >&2; exit 1; }

step kafka-topics --create, --list, --describe
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic smoke --partitions 3 \
  --replication-factor "$replicas"
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --list | tee "$scratch/list"
grep -qx smoke "$scratch/list" || fail "kafka-topics --list does not show the topic"
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic smoke | tee "$scratch/describe"
grep -q "PartitionCount: 3" "$scratch/describe" || fail "kafka-topics --describe does not show 3 partitions"

step kafka-console-producer, then kafka-console-consumer in a group
seq 1 1000 | sed 's/^/line-/' > "$scratch/sent"
tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" --topic smoke < "$scratch/sent"
tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic smoke \
  --group smoke-group --from-beginning --max-messages 1000 --timeout-ms 30000 > "$scratch/received"
sort "$scratch/sent" > "$scratch/sent.sorted"
sort "$scratch/received" > "$scratch/received.sorted"
cmp -s "$scratch/sent.sorted" "$scratch/received.sorted" || fail "the console consumer did not get the 1000 lines sent"
echo "1000 lines sent and received"

step kafka-consumer-groups --list, --describe
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --list | tee "$scratch/groups"
grep -qx smoke-group "$scratch/groups" || fail "kafka-consumer-groups --list does not show the group"
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --describe \
  --group smoke-group | tee "$scratch/group"
# Every partition committed to its end: lag 0 on each of the 3 rows.
[ "$(awk '$1 == "smoke-group" && $2 == "smoke" && $6 == "0"' "$scratch/group" | wc -l)" = 3 ] \
  || fail "kafka-consumer-groups --describe does not show 3 partitions with lag 0"

step "kafka-console-consumer with group.protocol=consumer (KIP-848), kafka-consumer-groups --describe --members, --state"
tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic smoke \
  --group smoke-848 --from-beginning --consumer-property group.protocol=consumer --timeout-ms 60000 \
  > "$scratch/received-848" 2> "$scratch/consumer-848.err" &
consumer_pid=$!
for _ in $(seq 1 150); do
  tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --describe \
    --group smoke-848 --members > "$scratch/members" 2>/dev/null || true
  [ "$(awk '$1 == "smoke-848" && $5 == "3"' "$scratch/members" | wc -l)" = 1 ] && break
  sleep 0.2
done
cat "$scratch/members"
[ "$(awk '$1 == "smoke-848" && $5 == "3"' "$scratch/members" | wc -l)" = 1 ] \
  || fail "kafka-consumer-groups --describe --members does not show one member holding the 3 partitions"
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --describe \
  --group smoke-848 --state | tee "$scratch/state"
grep -Eq "^smoke-848 .* uniform +Stable +1 *$" "$scratch/state" \
  || fail "kafka-consumer-groups --describe --state does not show a Stable group of 1 member with the uniform assignor"
kill "$consumer_pid"; wait "$consumer_pid" || true
grep '^line-' "$scratch/received-848" | sort > "$scratch/received-848.sorted"
cmp -s "$scratch/sent.sorted" "$scratch/received-848.sorted" || fail "the KIP-848 console consumer did not get the 1000 lines"

step kafka-consumer-groups --delete-offsets
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --delete-offsets \
  --group smoke-group --topic smoke:0 | tee "$scratch/deleted"
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$bootstrap" --describe \
  --group smoke-group | tee "$scratch/group"
# Partition 0's offset gone (no row with a current offset for it), the two others kept.
[ "$(awk '$1 == "smoke-group" && $2 == "smoke" && $3 == "0" && $4 ~ /^[0-9]+$/' "$scratch/group" | wc -l)" = 0 ] \
  || fail "kafka-consumer-groups --delete-offsets did not remove partition 0's offset"
[ "$(awk '$1 == "smoke-group" && $2 == "smoke" && $6 == "0"' "$scratch/group" | wc -l)" = 2 ] \
  || fail "kafka-consumer-groups --delete-offsets removed more than partition 0's offset"

step kafka-producer-perf-test
tool org.apache.kafka.tools.ProducerPerformance --topic perf --num-records 200000 --record-size 1024 \
  --throughput -1 --command-property "bootstrap.servers=$bootstrap" acks=all | tee "$scratch/pperf"
grep -q "200000 records sent" "$scratch/pperf" || fail "the producer perf test did not send 200000 records"

step kafka-consumer-perf-test
tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bootstrap" --topic perf \
  --num-records 200000 --timeout 60000 | tee "$scratch/cperf"
awk -F, '/^[0-9][0-9][0-9][0-9]-/ { gsub(/ /, "", $5); n = $5 + 0 } END { if (n != 200000) exit 1 }' "$scratch/cperf" \
  || fail "the consumer perf test did not consume 200000 records"

step kafka-leader-election --election-type preferred
# A broker alone is every partition's preferred (and only) replica: nothing to elect. On a cluster the preferred
# replica leads already, or is elected.
tool org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$bootstrap" --election-type preferred \
  --topic smoke --partition 0 | tee "$scratch/election"
grep -Eq "Valid replica already elected for partitions smoke-0|Successfully completed leader election \(PREFERRED\) for partitions smoke-0" \
  "$scratch/election" || fail "kafka-leader-election did not find smoke-0 led by its preferred replica"
if [ "$mode" = broker ]; then
  grep -q "Valid replica already elected" "$scratch/election" || fail "a broker alone elected a leader"
fi

step kafka-delete-records
# perf has one partition of 200000 records (the producer perf test's).
echo '{"partitions":[{"topic":"perf","partition":0,"offset":1000}],"version":1}' > "$scratch/delete.json"
tool org.apache.kafka.tools.DeleteRecordsCommand --bootstrap-server "$bootstrap" \
  --offset-json-file "$scratch/delete.json" | tee "$scratch/deleted"
grep -q "perf-0.*low_watermark: 1000" "$scratch/deleted" || fail "kafka-delete-records did not move perf-0's start to 1000"
tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bootstrap" --topic perf --partitions 0 \
  --time -2 | tee "$scratch/earliest"
grep -qx "perf:0:1000" "$scratch/earliest" || fail "the earliest offset of perf-0 is not 1000 after kafka-delete-records"

step kafka-topics --create --config, kafka-configs --alter and --describe
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic configured --partitions 1 \
  --replication-factor "$replicas" --config cleanup.policy=compact --config retention.ms=86400000
tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --entity-type topics --entity-name configured \
  --alter --add-config max.message.bytes=2000000,retention.ms=3600000 --delete-config cleanup.policy
tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --entity-type topics --entity-name configured \
  --describe | tee "$scratch/configs"
grep -q "max.message.bytes=2000000" "$scratch/configs" || fail "kafka-configs --describe does not show max.message.bytes"
grep -q "retention.ms=3600000" "$scratch/configs" || fail "kafka-configs --describe does not show retention.ms"
grep -q "cleanup.policy" "$scratch/configs" && fail "kafka-configs --delete-config left cleanup.policy"
if tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --entity-type topics \
  --entity-name configured --alter --add-config retention.ms=soon > "$scratch/bad-config" 2>&1; then
  fail "kafka-configs took retention.ms=soon"
fi
grep -q "Invalid value soon for configuration retention.ms" "$scratch/bad-config" \
  || fail "kafka-configs did not print Kafka's refusal of retention.ms=soon: $(cat "$scratch/bad-config")"
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic configured \
  | tee "$scratch/describe-configured"
grep -q "retention.ms=3600000" "$scratch/describe-configured" || fail "kafka-topics --describe does not show the configs"

step kafka-transactions list, describe, describe-producers, abort
# A transaction left open: Kafka's console producer is not transactional, so a small producer (Java's source launcher,
# on the tools' classpath) writes 3 records to txn-0 in a transaction and exits without ending it.
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic txn --partitions 1 \
  --replication-factor "$replicas"
tool "$here/scripts/kafka-tools/OpenTransaction.java" "$bootstrap" smoke-tx txn 0 3 | tee "$scratch/open"
grep -qx "sent txn-0@2" "$scratch/open" || fail "the transactional producer did not write 3 records to txn-0"
transactions() { tool org.apache.kafka.tools.TransactionsCommand --bootstrap-server "$bootstrap" "$@"; }
# has_row FILE CONDITION: some row of the tool's table (columns split on blanks) meets the awk condition, in which
# $id is the producer id.
has_row() { awk -v id="${producer_id:-}" "$2 { found = 1 } END { exit !found }" "$1"; }
transactions list | tee "$scratch/transactions"
producer_id="$(awk '$1 == "smoke-tx" && $4 == "Ongoing" { print $3 }' "$scratch/transactions")"
[ -n "$producer_id" ] || fail "kafka-transactions list does not show smoke-tx Ongoing"
transactions describe --transactional-id smoke-tx | tee "$scratch/transaction"
# CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState TransactionTimeoutMs ... TopicPartitions
has_row "$scratch/transaction" '$2 == "smoke-tx" && $3 == id && $5 == "Ongoing" && $6 == "600000" && $9 == "txn-0"' \
  || fail "kafka-transactions describe does not show smoke-tx Ongoing on txn-0"
transactions describe-producers --topic txn --partition 0 | tee "$scratch/producers"
# ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
has_row "$scratch/producers" '$1 == id && $2 == "0" && $4 == "2" && $6 == "0"' \
  || fail "kafka-transactions describe-producers does not show the producer's transaction open from offset 0"
# abort writes the ABORT marker itself, with WriteTxnMarkers to the partition's leader (how an operator ends a
# transaction whose coordinator lost track of it): the partition's transaction ends after its 3 records, and the
# coordinator still holds it Ongoing, as Kafka's does.
transactions abort --topic txn --partition 0 --start-offset 0
transactions describe-producers --topic txn --partition 0 | tee "$scratch/producers"
has_row "$scratch/producers" '$1 == id && $2 == "0" && $6 == "None"' \
  || fail "kafka-transactions describe-producers still shows a transaction open on txn-0 after abort"
tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bootstrap" --topic txn --time -1 | tee "$scratch/end"
grep -qx "txn:0:4" "$scratch/end" || fail "txn-0 does not end after its 3 records and the abort marker"
transactions list | tee "$scratch/transactions"
has_row "$scratch/transactions" '$1 == "smoke-tx" && $3 == id && $4 == "Ongoing"' \
  || fail "the coordinator no longer holds smoke-tx Ongoing after kafka-transactions abort"
# A new producer of the transactional id (writing nothing) fences the old one, and the coordinator aborts its
# transaction: an ABORT marker at offset 4, of the bumped epoch 1; the new producer gets epoch 2.
tool "$here/scripts/kafka-tools/OpenTransaction.java" "$bootstrap" smoke-tx txn 0 0
transactions describe --transactional-id smoke-tx | tee "$scratch/transaction"
has_row "$scratch/transaction" '$2 == "smoke-tx" && $3 == id && $4 == "2" && $5 == "Empty"' \
  || fail "kafka-transactions describe does not show smoke-tx Empty at epoch 2 after the new producer"
transactions describe-producers --topic txn --partition 0 | tee "$scratch/producers"
has_row "$scratch/producers" '$1 == id && $2 == "1" && $6 == "None"' \
  || fail "kafka-transactions describe-producers does not show the producer at epoch 1 with no transaction open"
tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bootstrap" --topic txn --time -1 | tee "$scratch/end"
grep -qx "txn:0:5" "$scratch/end" || fail "txn-0 does not end after the coordinator's abort marker"
# A marker of an epoch the producer has left behind would end a transaction of its newer epoch: refused, as Kafka
# refuses it, and nothing written.
if transactions abort --topic txn --partition 0 --producer-id "$producer_id" --producer-epoch 0 \
  --coordinator-epoch 0 > "$scratch/stale-abort" 2>&1; then
  fail "kafka-transactions abort took a marker of epoch 0 from a producer at epoch 1"
fi
cat "$scratch/stale-abort"
grep -q "failed due an invalid producer epoch" "$scratch/stale-abort" \
  || fail "kafka-transactions abort of epoch 0 failed otherwise than for the epoch: $(cat "$scratch/stale-abort")"
tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bootstrap" --topic txn --time -1 | tee "$scratch/end"
grep -qx "txn:0:5" "$scratch/end" || fail "a refused marker was written to txn-0"

step kafka-topics --delete
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --delete --topic perf
# The broker that answers the deletion has applied it; on a cluster the others apply it a moment later (as Kafka's
# brokers learn it from the controller's log), and the list may come from any of them: the list and the stores are
# looked at until the topic is gone from all, for up to 30 s.
deadline=$((SECONDS + 30))
while :; do
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --list > "$scratch/list"
  gone=1
  grep -qx perf "$scratch/list" && gone=0
  for store in "${stores[@]}"; do [ ! -e "$store/logs/perf" ] || gone=0; done
  [ "$gone" = 1 ] || [ "$SECONDS" -ge "$deadline" ] && break
  sleep 1
done
cat "$scratch/list"
grep -qx perf "$scratch/list" && fail "kafka-topics --list still shows the deleted topic after 30 s"
grep -qx smoke "$scratch/list" || fail "kafka-topics --delete took another topic with it"
for store in "${stores[@]}"; do
  [ ! -e "$store/logs/perf" ] || fail "the deleted topic's files are still in $store after 30 s"
done

kill -TERM "$broker_pid"
wait "$broker_pid" || true
broker_pid=""
for store in "${stores[@]}"; do
  test -f "$store/clean-shutdown" || fail "the $mode did not close $store cleanly on SIGTERM"
done
echo "kafka-tools smoke ($mode): OK"
