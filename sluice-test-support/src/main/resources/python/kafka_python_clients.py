"""kafka-python (a Kafka client written in Python alone) against a Sluice broker: one check per run, each asserting
what it gets.

Usage: kafka_python_clients.py CHECK --bootstrap HOST:PORT[,...] --brokers N --replicas N [options]

Checks:
  transactions      a transactional KafkaProducer (--transactional-id) commits and aborts transactions of --records
                    records over the 2 partitions of --topic (made beforehand), each flushed before it ends; a newer
                    producer of the id aborts the open transaction of the older and fences it (its
                    commit_transaction fails with ProducerFencedError, its send with InvalidProducerEpochError); a
                    read_committed KafkaConsumer reads every committed record once and no aborted one, a
                    read_uncommitted one reads all; a consumer of --group reads the committed records and
                    send_offsets_to_transaction commits its positions with a commit, not with an abort
  compacted         a KafkaConsumer reads partition 0 of --topic (made beforehand with CompactedTopic of
                    sluice-test-support: --records updates over --keys keys and --deleted keys deleted, then
                    compacted, so that its offsets jump where the cleaner dropped batches) from its start to its end:
                    it gets there (no stall at a gap), its offsets only increase, each record is the one produced at
                    its offset, each key's last record is its latest (a deleted key's a tombstone, a None value), and
                    it reads fewer than a quarter of the records produced

Prints "ok: ..." lines and exits 0 when every assertion holds; prints "FAIL: ..." and exits 1 at the first that does
not, 2 on a bad command line, 3 when it runs out of --seconds.
"""

import argparse
import signal
import sys
import time

import kafka
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata, TopicPartition


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def ok(message):
    print("ok: " + message, flush=True)


# A committed or aborted transaction of the first producer: its label, its partitions, and whether it commits. One of
# them writes to a single partition, so that the other gets no marker of it.
TRANSACTIONS = [("c0", (0, 1), True), ("a1", (0, 1), False), ("c2", (0, 1), True), ("a3", (1,), False),
                ("c4", (0, 1), True), ("a5", (0, 1), False)]


def transactional_producer(args):
    return KafkaProducer(bootstrap_servers=args.bootstrap, transactional_id=args.transactional_id,
                         transaction_timeout_ms=60000, linger_ms=5, request_timeout_ms=30000)


def produce_transaction(producer, args, delivered, label, partitions):
    """Sends --records records of a transaction, spread over its partitions, and flushes them to the log; each key's
    (partition, offset) goes into delivered."""
    futures = {}
    for i in range(args.records):
        key = f"{label}-{i}"
        futures[key] = producer.send(args.topic, key=key.encode(), value=("value-" + key).encode(),
                                     partition=partitions[i % len(partitions)])
    producer.flush(timeout=60)
    for key, future in futures.items():
        check(future.is_done, f"{key} of transaction {label} not sent within 60 s")
        check(future.succeeded(), f"{key} of transaction {label} failed: {future.exception!r}")
        delivered[key] = (future.value.partition, future.value.offset)
    return list(futures)


def expect_refused(what, call, *errors):
    """Calls a fenced producer's operation, which must fail with one of the errors given."""
    try:
        call()
    except KafkaError as e:
        check(isinstance(e, errors), f"{what} of the fenced producer failed with {e!r}, not"
              f" {' or '.join(error.__name__ for error in errors)}")
        ok(f"{what} of the fenced producer failed: {type(e).__name__}: {e}")
        return
    fail(f"{what} of the fenced producer succeeded")


def read_to_end(args, isolation):
    """Every record of --topic's partitions from their start to their end (for read_committed, the last stable
    offset), as a consumer of the isolation reads them: key to (partition, offset). Fails on a record read twice."""
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=None, isolation_level=isolation,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    ends = consumer.end_offsets(partitions)
    read = {}
    deadline = time.monotonic() + 60
    while any(consumer.position(tp) < ends[tp] for tp in partitions):
        check(time.monotonic() < deadline, f"{isolation}: not at the ends {ends} within 60 s; {len(read)} records"
              f" read, at {[consumer.position(tp) for tp in partitions]}")
        for records in consumer.poll(timeout_ms=500).values():
            for record in records:
                key = record.key.decode()
                check(key not in read, f"{isolation}: {key} read twice")
                check(record.value == ("value-" + key).encode(), f"{isolation}: {key} read with {record.value!r}")
                read[key] = (record.partition, record.offset)
    consumer.close()
    return read


def transactions(args):
    check(args.partitions == 2, "transactions runs over 2 partitions")
    delivered = {}
    committed, aborted = set(), set()
    first = transactional_producer(args)
    first.init_transactions()
    for label, partitions, commit in TRANSACTIONS:
        first.begin_transaction()
        # Flushed first, so that even the aborted records reach the log.
        keys = produce_transaction(first, args, delivered, label, partitions)
        if commit:
            first.commit_transaction()
            committed.update(keys)
        else:
            first.abort_transaction()
            aborted.update(keys)
    ok(f"{sum(c for _, _, c in TRANSACTIONS)} transactions committed and {sum(not c for _, _, c in TRANSACTIONS)}"
       f" aborted, {len(committed)} and {len(aborted)} records sent")

    # A newer producer of the transactional id, each time while the older one has a transaction open with records in
    # the log: that transaction is aborted, and the older producer's next call to the broker is refused. First its
    # EndTxn (the coordinator's check), then its Produce (the partition's).
    first.begin_transaction()
    aborted.update(produce_transaction(first, args, delivered, "fenced-1", (0, 1)))
    second = transactional_producer(args)
    second.init_transactions()
    ok("a second producer of the transactional id initialized while the first had a transaction open")
    expect_refused("commit_transaction", first.commit_transaction, kafka.errors.ProducerFencedError)
    first.close(timeout=5)
    second.begin_transaction()
    aborted.update(produce_transaction(second, args, delivered, "fenced-2", (0, 1)))
    third = transactional_producer(args)
    third.init_transactions()
    ok("a third producer of the transactional id initialized while the second had a transaction open")
    late = second.send(args.topic, key=b"late", value=b"value-late", partition=0)
    second.flush(timeout=30)
    check(late.is_done and late.failed(), f"the fenced producer's record was stored at {late.value}")
    check(isinstance(late.exception, kafka.errors.InvalidProducerEpochError),
          f"the fenced producer's record failed with {late.exception!r}, not InvalidProducerEpochError")
    ok(f"send of the fenced producer failed: {type(late.exception).__name__}: {late.exception}")
    # kafka-python takes the refused send as a cue to bump its epoch, and refuses to end the transaction before that
    # (its own state error, raised by Apache Kafka 4.3.1 the same way).
    expect_refused("commit_transaction after the refused send", second.commit_transaction, KafkaError)
    second.close(timeout=5)
    third.begin_transaction()
    committed.update(produce_transaction(third, args, delivered, "third", (0, 1)))
    third.commit_transaction()
    ok("the third producer committed a transaction")

    expected = {key: delivered[key] for key in committed}
    read = read_to_end(args, "read_committed")
    check(not (set(read) & aborted), f"read_committed read aborted records: {sorted(set(read) & aborted)[:10]}")
    check(set(read) == committed, f"read_committed missed committed records: {sorted(committed - set(read))[:10]}")
    check(read == expected, "read_committed read records at other offsets than sent")
    ok(f"read_committed read each of the {len(committed)} committed records once, none of the {len(aborted)} aborted")
    everything = {key: delivered[key] for key in committed | aborted}
    read = read_to_end(args, "read_uncommitted")
    check(read == everything, f"read_uncommitted read {len(read)} records, not the {len(everything)} written;"
          f" missing {sorted(set(everything) - set(read))[:10]}")
    ok(f"read_uncommitted read all {len(read)} records, committed and aborted, once each")
    offsets_with_transactions(args, third, len(committed))
    third.close(timeout=5)


def offsets_with_transactions(args, producer, records):
    """A consumer of --group reads the committed records; their offsets, sent with a transaction, commit with a
    commit only."""
    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=args.group,
                             isolation_level="read_committed", auto_offset_reset="earliest",
                             enable_auto_commit=False)
    read = 0
    deadline = time.monotonic() + 60
    while read < records:
        check(time.monotonic() < deadline, f"the group's consumer read {read} of {records} records in 60 s")
        read += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
    check(read == records, f"the group's consumer read {read} records, not {records}")
    assignment = consumer.assignment()
    check(len(assignment) == args.partitions, f"the group's consumer was assigned {assignment}")
    positions = {tp: consumer.position(tp) for tp in assignment}
    sent = dict(sorted((tp.partition, offset) for tp, offset in positions.items()))
    ok(f"group {args.group} read the {records} committed records, positions {sent}")
    offsets = {tp: OffsetAndMetadata(offset, "", -1) for tp, offset in positions.items()}

    def committed_offsets():
        return {tp.partition: consumer.committed(tp) for tp in sorted(assignment)}

    producer.begin_transaction()
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.abort_transaction()
    got = committed_offsets()
    check(all(offset is None for offset in got.values()), f"offsets sent with an aborted transaction were committed:"
          f" {got}")
    ok("offsets sent with an aborted transaction are not committed")
    producer.begin_transaction()
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.commit_transaction()
    got = committed_offsets()
    check(got == sent, f"offsets committed with the transaction: {got}, sent {sent}")
    ok(f"offsets sent with a committed transaction are committed: {got}")
    consumer.close()


class Compacted:
    """What CompactedTopic (sluice-test-support) produced: each offset's key and value, a function of the offset."""

    PADDING = "x" * 400

    def __init__(self, updates, keys, deleted):
        self.updates, self.keys, self.deleted = updates, keys, deleted

    def records(self):
        return self.updates + 2 * self.deleted

    def key(self, offset):
        deletion = offset - self.updates // 2
        if deletion < 0:
            return f"k{offset % self.keys}"
        return f"d{deletion // 2}" if deletion < 2 * self.deleted else f"k{offset % (self.keys // 2)}"

    def value(self, offset):
        deletion = offset - self.updates // 2
        if 0 <= deletion < 2 * self.deleted:
            return "doomed" if deletion % 2 == 0 else None
        return f"v{offset}{self.PADDING}"

    def latest(self):
        """Each key's latest offset."""
        return {self.key(offset): offset for offset in range(self.records())}


def check_compacted(produced, read):
    """Checks the records read of a compacted partition, (offset, key, value) in the order read, against what was
    produced."""
    check(read, "no record read")
    for (before, _, _), (after, _, _) in zip(read, read[1:]):
        check(before < after, f"offset {after} read after {before}")
    check(read[-1][0] == produced.records() - 1, f"the last record read is at {read[-1][0]}, not at the end"
          f" {produced.records() - 1}")
    for offset, key, value in read:
        check((key, value) == (produced.key(offset), produced.value(offset)),
              f"offset {offset} read as {key}={value!r:.20}, produced as {produced.key(offset)}="
              f"{produced.value(offset)!r:.20}")
    last = {key: offset for offset, key, _ in read}
    latest = produced.latest()
    check(last == latest, "keys whose last record read is not their latest: "
          + str({key: (last.get(key), offset) for key, offset in latest.items() if last.get(key) != offset}))
    check(len(read) < produced.records() / 4, f"{len(read)} records read of the {produced.records()} produced:"
          " not compacted")
    ok(f"read {len(read)} of the {produced.records()} records produced, offsets {read[0][0]} to {read[-1][0]}, each"
       f" as produced, each of the {len(latest)} keys' latest, {sum(v is None for _, _, v in read)} tombstones")


def compacted(args):
    produced = Compacted(args.records, args.keys, args.deleted)
    partition = TopicPartition(args.topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    end = consumer.end_offsets([partition])[partition]
    check(end == produced.records(), f"the end offset is {end}, not {produced.records()}")
    read = []
    deadline = time.monotonic() + 60
    while consumer.position(partition) < end:
        check(time.monotonic() < deadline, f"not at the end {end} within 60 s: at {consumer.position(partition)},"
              f" {len(read)} records read")
        for records in consumer.poll(timeout_ms=500).values():
            for record in records:
                value = record.value
                read.append((record.offset, record.key.decode(), None if value is None else value.decode()))
    check(consumer.position(partition) == end, f"the position {consumer.position(partition)} is past the end {end}")
    ok(f"at the end {end} of {args.topic}")
    check_compacted(produced, read)
    consumer.close()


CHECKS = {"compacted": compacted, "transactions": transactions}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--brokers", type=int, required=True)
    parser.add_argument("--replicas", type=int, required=True)
    parser.add_argument("--cluster-id", default="sluice-cluster")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--records", type=int, default=20)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--deleted", type=int, default=10)
    parser.add_argument("--group", default="kafka-python-transactions")
    parser.add_argument("--transactional-id", default="kafka-python-transactions")
    parser.add_argument("--seconds", type=int, default=150)
    args = parser.parse_args()

    def out_of_time(signum, frame):
        print(f"FAIL: {args.check} still running after {args.seconds} s", flush=True)
        sys.exit(3)

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.seconds)
    print(f"kafka-python {kafka.__version__}: {args.check} against {args.bootstrap}", flush=True)
    CHECKS[args.check](args)


if __name__ == "__main__":
    main()
