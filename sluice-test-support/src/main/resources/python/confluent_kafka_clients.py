"""confluent-kafka (librdkafka) against a Sluice broker or cluster: one check per run, each asserting what it gets.

Usage: confluent_kafka_clients.py CHECK --bootstrap HOST:PORT[,...] --brokers N --replicas N [options]

Checks:
  list-topics       list_topics(): the brokers, the controller, and the topic given with --topic (made beforehand,
                    --partitions of them), asked for among every topic
  create-topics     create_topics() of --topic with --partitions; the topic then has them, each partition led with
                    --replicas replicas; a second create is answered TOPIC_ALREADY_EXISTS
  describe-configs  describe_configs() of --topic (made beforehand, without configs of its own): each --config
                    NAME=VALUE as given, Kafka's 33 topic configs, none read-only, each from the broker's static
                    configuration or Kafka's defaults; a topic that does not exist is refused
  alter-configs     create_topics() of --topic with configs, then incremental_alter_configs() (SET, DELETE, and a
                    bad value refused with INVALID_CONFIG) and alter_configs() (the whole set replaced), each change
                    seen by describe_configs() as the topic's own
  round-trip        an idempotent acks=all Producer sends --records records over the --partitions partitions of
                    --topic (made beforehand); a Consumer of group --group (of --group-protocol) reads every one
                    back once, at the offset the delivery report gave, and commits
  transactions      a transactional Producer (--transactional-id) commits and aborts transactions of --records records
                    over the 2 partitions of --topic (made beforehand), each flushed before it ends; a newer producer
                    of the id aborts the open transaction of the older and fences it (its commit_transaction, then its
                    produce, fail with a fatal _FENCED); a read_committed Consumer reads every committed record once
                    and no aborted one, a read_uncommitted one reads all; a Consumer of --group reads the committed
                    records and send_offsets_to_transaction commits its positions with a commit, not with an abort
  compacted         a Consumer reads partition 0 of --topic (made beforehand with CompactedTopic of
                    sluice-test-support: --records updates over --keys keys and --deleted keys deleted, then
                    compacted, so that its offsets jump where the cleaner dropped batches) from its start to its end:
                    it gets there (no stall at a gap), its offsets only increase, each record is the one produced at
                    its offset, each key's last record is its latest (a deleted key's a tombstone, a null value), and
                    it reads fewer than a quarter of the records produced (or at most --most-read, for a log the
                    cleaner compacted only in part)

Prints "ok: ..." lines and exits 0 when every assertion holds; prints "FAIL: ..." and exits 1 at the first that does
not, 2 on a bad command line, 3 when it runs out of --seconds.
"""

import argparse
import signal
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                  NewTopic, ResourceType)


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def ok(message):
    print("ok: " + message, flush=True)


def admin(args):
    return AdminClient({"bootstrap.servers": args.bootstrap, "socket.timeout.ms": 10000})


def bootstrap_ports(args):
    return sorted(int(server.rsplit(":", 1)[1]) for server in args.bootstrap.split(","))


def await_topic(client, args, deadline_seconds=30):
    """Metadata of --topic once it has --partitions partitions, each with a leader and --replicas replicas."""
    deadline = time.monotonic() + deadline_seconds
    seen = None
    while time.monotonic() < deadline:
        metadata = client.list_topics(topic=args.topic, timeout=10)
        seen = metadata.topics.get(args.topic)
        if (seen is not None and seen.error is None and len(seen.partitions) == args.partitions
                and all(p.error is None and p.leader in metadata.brokers and len(p.replicas) == args.replicas
                        and len(p.isrs) == args.replicas for p in seen.partitions.values())):
            return metadata, seen
        time.sleep(0.2)
    described = None if seen is None else (seen.error, {i: (p.leader, p.replicas, p.isrs, p.error)
                                                         for i, p in seen.partitions.items()})
    fail(f"topic {args.topic} did not get {args.partitions} partitions led with {args.replicas} replicas each"
         f" within {deadline_seconds} s; last seen: {described}")


def list_topics(args):
    metadata = admin(args).list_topics(timeout=20)
    brokers = metadata.brokers
    check(len(brokers) == args.brokers, f"expected {args.brokers} brokers, got {brokers}")
    check(all(b.host == "127.0.0.1" for b in brokers.values()), f"brokers not on 127.0.0.1: {brokers}")
    check(sorted(b.port for b in brokers.values()) == bootstrap_ports(args),
          f"broker ports {sorted(b.port for b in brokers.values())} are not the bootstrap's {bootstrap_ports(args)}")
    check(metadata.controller_id in brokers, f"controller {metadata.controller_id} is none of {sorted(brokers)}")
    check(metadata.cluster_id == args.cluster_id, f"cluster id {metadata.cluster_id!r}, expected {args.cluster_id!r}")
    ok(f"{len(brokers)} brokers, controller {metadata.controller_id}, cluster {metadata.cluster_id}")
    topic = metadata.topics.get(args.topic)
    check(topic is not None, f"topic {args.topic} not listed among every topic: {sorted(metadata.topics)}")
    check(topic.error is None, f"topic {args.topic} listed with error {topic.error}")
    check(sorted(topic.partitions) == list(range(args.partitions)),
          f"topic {args.topic} has partitions {sorted(topic.partitions)}, expected {args.partitions}")
    for partition in topic.partitions.values():
        check(partition.error is None and partition.leader in brokers and len(partition.replicas) == args.replicas,
              f"partition {partition.id}: leader {partition.leader}, replicas {partition.replicas},"
              f" error {partition.error}")
    ok(f"topic {args.topic} listed with {len(topic.partitions)} partitions among {len(metadata.topics)} topics")


def create_topics(args):
    client = admin(args)
    futures = client.create_topics([NewTopic(args.topic, num_partitions=args.partitions,
                                             replication_factor=args.replicas)], request_timeout=30)
    check(set(futures) == {args.topic}, f"futures for {sorted(futures)}")
    try:
        check(futures[args.topic].result(timeout=60) is None, "create_topics result is not None")
    except KafkaException as e:
        fail(f"create_topics of {args.topic} failed: {e.args[0]}")
    ok(f"created {args.topic} with {args.partitions} partitions")
    await_topic(client, args)
    ok(f"{args.topic} has {args.partitions} partitions, each led with {args.replicas} replicas")
    again = client.create_topics([NewTopic(args.topic, num_partitions=args.partitions,
                                           replication_factor=args.replicas)], request_timeout=30)
    try:
        again[args.topic].result(timeout=60)
        fail(f"a second create of {args.topic} succeeded")
    except KafkaException as e:
        error = e.args[0]
        check(error.code() == KafkaError.TOPIC_ALREADY_EXISTS,
              f"a second create of {args.topic} failed with {error}, not TOPIC_ALREADY_EXISTS")
        ok(f"a second create is answered {error.name()}")


def describe_configs(args):
    client = admin(args)
    resource = ConfigResource(ResourceType.TOPIC, args.topic)
    try:
        entries = client.describe_configs([resource], request_timeout=30)[resource].result(timeout=60)
    except KafkaException as e:
        fail(f"describe_configs of {args.topic} failed: {e.args[0]}")
    check(len(args.config) > 0, "no --config given to check")
    for expected in args.config:
        name, value = expected.split("=", 1)
        check(name in entries, f"no config {name} among {sorted(entries)}")
        check(entries[name].value == value, f"config {name} is {entries[name].value!r}, expected {value!r}")
    check(len(entries) == 33, f"{len(entries)} topic configs, not Kafka's 33: {sorted(entries)}")
    not_own = (ConfigSource.STATIC_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value)
    for entry in entries.values():
        check(not entry.is_read_only and source(entry) in not_own,
              f"config {entry.name}: read-only {entry.is_read_only}, source {entry.source}")
    ok(f"{len(entries)} configs of {args.topic}, {len(args.config)} of them as expected")
    missing = ConfigResource(ResourceType.TOPIC, args.topic + "-missing")
    try:
        client.describe_configs([missing], request_timeout=30)[missing].result(timeout=60)
        fail(f"describe_configs of the missing topic {missing.name} succeeded")
    except KafkaException as e:
        check(e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART,
              f"describe_configs of a missing topic failed with {e.args[0]}, not UNKNOWN_TOPIC_OR_PART")
        ok(f"a missing topic is refused with {e.args[0].name()}")


def source(entry):
    return entry.source.value if hasattr(entry.source, "value") else entry.source


def own_configs(client, topic):
    """The configs the topic has of its own (DYNAMIC_TOPIC_CONFIG), by name."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = client.describe_configs([resource], request_timeout=30)[resource].result(timeout=60)
    return {name: entry.value for name, entry in entries.items()
            if source(entry) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def alter_configs(args):
    client = admin(args)
    created = {"cleanup.policy": "compact", "retention.ms": "1000"}
    futures = client.create_topics([NewTopic(args.topic, num_partitions=1, replication_factor=args.replicas,
                                             config=created)], request_timeout=30)
    try:
        futures[args.topic].result(timeout=60)
    except KafkaException as e:
        fail(f"create_topics of {args.topic} with {created} failed: {e.args[0]}")
    wait_for(lambda: own_configs(client, args.topic) == created, f"the configs {created} of {args.topic}")
    ok(f"created {args.topic} with {created}")

    resource = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=[
        ConfigEntry("retention.ms", "2000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE)])
    try:
        client.incremental_alter_configs([resource], request_timeout=30)[resource].result(timeout=60)
    except KafkaException as e:
        fail(f"incremental_alter_configs of {args.topic} failed: {e.args[0]}")
    wait_for(lambda: own_configs(client, args.topic) == {"retention.ms": "2000"}, "retention.ms=2000 alone")
    ok("incremental_alter_configs set retention.ms and deleted cleanup.policy")

    bad = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    try:
        client.incremental_alter_configs([bad], request_timeout=30)[bad].result(timeout=60)
        fail("retention.ms=soon was taken")
    except KafkaException as e:
        check(e.args[0].code() == KafkaError.INVALID_CONFIG, f"retention.ms=soon refused with {e.args[0]}")
        ok(f"retention.ms=soon refused with {e.args[0].name()}: {e.args[0].str()}")
    check(own_configs(client, args.topic) == {"retention.ms": "2000"}, "a refused change changed the configs")

    whole = ConfigResource(ResourceType.TOPIC, args.topic, set_config={"retention.bytes": "100000"})
    try:
        client.alter_configs([whole], request_timeout=30)[whole].result(timeout=60)
    except KafkaException as e:
        fail(f"alter_configs of {args.topic} failed: {e.args[0]}")
    wait_for(lambda: own_configs(client, args.topic) == {"retention.bytes": "100000"}, "retention.bytes alone")
    ok("alter_configs replaced the whole set")


def wait_for(condition, what, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            fail(f"not within {seconds} s: {what}")
        time.sleep(0.2)


def round_trip(args):
    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60000})
    delivered = {}
    errors = []

    def on_delivery(error, message):
        if error is not None:
            errors.append(f"{message.key()}: {error}")
        else:
            delivered[message.key().decode()] = (message.partition(), message.offset())

    for i in range(args.records):
        producer.produce(args.topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(),
                         partition=i % args.partitions, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(60)
    check(left == 0, f"{left} records not delivered within 60 s")
    check(not errors, f"delivery errors: {errors[:10]}")
    check(len(delivered) == args.records, f"{len(delivered)} delivery reports for {args.records} records")
    per_partition = {}
    for partition, offset in delivered.values():
        per_partition.setdefault(partition, []).append(offset)
    for partition, offsets in per_partition.items():
        check(sorted(offsets) == list(range(len(offsets))),
              f"partition {partition}: offsets {sorted(offsets)[:10]}... are not 0 to {len(offsets) - 1}")
    ok(f"produced {args.records} records to {len(per_partition)} partitions")

    consumer_config = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
                       "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if args.group_protocol is not None:
        consumer_config["group.protocol"] = args.group_protocol
    consumer = Consumer(consumer_config)
    consumer.subscribe([args.topic])
    read = {}
    deadline = time.monotonic() + 60
    while len(read) < args.records and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        check(message.error() is None, f"consumer error: {message.error()}")
        key = message.key().decode()
        check(key not in read, f"{key} read twice")
        check(message.value() == ("value-" + key[len("key-"):]).encode(),
              f"{key} read with value {message.value()!r}")
        read[key] = (message.partition(), message.offset())
    check(len(read) == args.records, f"read {len(read)} of {args.records} records within 60 s")
    check(read == delivered, "records read at other partitions or offsets than delivered: "
          + str({k: (delivered.get(k), v) for k, v in read.items() if delivered.get(k) != v}))
    ok(f"consumed all {args.records} records once, each where its delivery report put it")
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(args.topic, p) for p in range(args.partitions)], timeout=30)
    got = {tp.partition: tp.offset for tp in committed}
    expected = {p: len(per_partition.get(p, [])) for p in range(args.partitions)}
    check(got == expected, f"committed offsets {got}, expected {expected}")
    ok(f"group {args.group} committed {got}")
    consumer.close()


# A committed or aborted transaction of the first producer: its label, its partitions, and whether it commits. One of
# them writes to a single partition, so that the other gets no marker of it.
TRANSACTIONS = [("c0", (0, 1), True), ("a1", (0, 1), False), ("c2", (0, 1), True), ("a3", (1,), False),
                ("c4", (0, 1), True), ("a5", (0, 1), False)]


def transactional_producer(args):
    return Producer({"bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id,
                     "transaction.timeout.ms": 60000, "linger.ms": 5, "message.timeout.ms": 60000})


class Deliveries:
    """The delivery reports of a producer's records: each key's partition and offset, or its error."""

    def __init__(self):
        self.delivered = {}
        self.errors = {}

    def __call__(self, error, message):
        key = message.key().decode()
        if error is not None:
            self.errors[key] = error
        else:
            self.delivered[key] = (message.partition(), message.offset())


def produce_transaction(producer, args, deliveries, label, partitions):
    """Produces --records records of a transaction, spread over its partitions, and flushes them to the log."""
    keys = []
    for i in range(args.records):
        key = f"{label}-{i}"
        producer.produce(args.topic, key=key.encode(), value=("value-" + key).encode(),
                         partition=partitions[i % len(partitions)], on_delivery=deliveries)
        keys.append(key)
    left = producer.flush(60)
    check(left == 0, f"{left} records of transaction {label} not delivered within 60 s")
    check(set(keys) <= set(deliveries.delivered), f"records of transaction {label} not delivered:"
          f" {dict(list(deliveries.errors.items())[:10])}")
    return keys


def kafka_error(exception):
    """The KafkaError a call raised, or None. confluent-kafka raises a fatal error from the poll or flush that serves
    it: a KafkaException, a KafkaError itself, or (when a delivery report is served in the same call) a SystemError
    caused by one of those."""
    while exception is not None:
        if isinstance(exception, KafkaException):
            return exception.args[0]
        if isinstance(exception, KafkaError):
            return exception
        exception = exception.__cause__
    return None


def expect_fenced(what, call):
    """Calls a fenced producer's operation, which must fail as librdkafka fails a producer fenced by a newer one: a
    fatal _FENCED error."""
    try:
        call()
    except (SystemExit, KeyboardInterrupt):
        raise
    except:  # noqa: E722 - confluent-kafka may raise the fatal error as a KafkaError, which is no Exception
        e = sys.exc_info()[1]
        error = kafka_error(e)
        check(error is not None, f"{what} of the fenced producer raised {e!r}, not a KafkaException")
        check(error.code() == KafkaError._FENCED and error.fatal(),
              f"{what} of the fenced producer failed with {error}, not a fatal _FENCED")
        ok(f"{what} of the fenced producer failed: {error.name()} (fatal): {error.str()}")
        return
    fail(f"{what} of the fenced producer succeeded")


def read_to_end(args, isolation, group):
    """Every record of --topic's partitions from their start to their end, as a consumer of the isolation reads them:
    key to (partition, offset). Fails on a record read twice."""
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": group, "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(args.topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(args.partitions)])
    read = {}
    at_end = set()
    deadline = time.monotonic() + 60
    while len(at_end) < args.partitions:
        check(time.monotonic() < deadline, f"{isolation}: not at the end of every partition within 60 s;"
              f" {len(read)} records read, at the end of {sorted(at_end)}")
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            check(message.error().code() == KafkaError._PARTITION_EOF, f"{isolation} consumer error: {message.error()}")
            at_end.add(message.partition())
            continue
        key = message.key().decode()
        check(key not in read, f"{isolation}: {key} read twice")
        check(message.value() == ("value-" + key).encode(), f"{isolation}: {key} read with {message.value()!r}")
        read[key] = (message.partition(), message.offset())
    consumer.close()
    return read


def transactions(args):
    check(args.partitions == 2, "transactions runs over 2 partitions")
    deliveries = Deliveries()
    committed, aborted = set(), set()
    first = transactional_producer(args)
    first.init_transactions(30)
    for label, partitions, commit in TRANSACTIONS:
        first.begin_transaction()
        # Flushed first, so that even the aborted records reach the log (abort_transaction drops those not yet sent).
        keys = produce_transaction(first, args, deliveries, label, partitions)
        if commit:
            first.commit_transaction(30)
            committed.update(keys)
        else:
            first.abort_transaction(30)
            aborted.update(keys)
    check(not deliveries.errors, f"delivery errors: {dict(list(deliveries.errors.items())[:10])}")
    ok(f"{sum(c for _, _, c in TRANSACTIONS)} transactions committed and {sum(not c for _, _, c in TRANSACTIONS)}"
       f" aborted, {len(committed)} and {len(aborted)} records delivered")

    # A newer producer of the transactional id, each time while the older one has a transaction open with records in
    # the log: that transaction is aborted, and the older producer's next call to the broker is refused. First its
    # EndTxn (the coordinator's check), then its Produce (the partition's).
    first.begin_transaction()
    aborted.update(produce_transaction(first, args, deliveries, "fenced-1", (0, 1)))
    second = transactional_producer(args)
    second.init_transactions(30)
    ok("a second producer of the transactional id initialized while the first had a transaction open")
    expect_fenced("commit_transaction", lambda: first.commit_transaction(30))
    second.begin_transaction()
    aborted.update(produce_transaction(second, args, deliveries, "fenced-2", (0, 1)))
    third = transactional_producer(args)
    third.init_transactions(30)
    ok("a third producer of the transactional id initialized while the second had a transaction open")

    def produce_late():
        second.produce(args.topic, key=b"late", value=b"value-late", partition=0, on_delivery=deliveries)
        second.flush(30)

    expect_fenced("produce", produce_late)
    check("late" not in deliveries.delivered, f"the fenced producer's record was stored at"
          f" {deliveries.delivered.get('late')}")
    third.begin_transaction()
    committed.update(produce_transaction(third, args, deliveries, "third", (0, 1)))
    third.commit_transaction(30)
    ok("the third producer committed a transaction")

    expected = {key: deliveries.delivered[key] for key in committed}
    read = read_to_end(args, "read_committed", args.group + "-committed")
    check(not (set(read) & aborted), f"read_committed read aborted records: {sorted(set(read) & aborted)[:10]}")
    check(set(read) == committed, f"read_committed missed committed records: {sorted(committed - set(read))[:10]}")
    check(read == expected, "read_committed read records at other offsets than delivered")
    ok(f"read_committed read each of the {len(committed)} committed records once, none of the {len(aborted)} aborted")
    everything = {key: deliveries.delivered[key] for key in committed | aborted}
    read = read_to_end(args, "read_uncommitted", args.group + "-uncommitted")
    check(read == everything, f"read_uncommitted read {len(read)} records, not the {len(everything)} written;"
          f" missing {sorted(set(everything) - set(read))[:10]}")
    ok(f"read_uncommitted read all {len(read)} records, committed and aborted, once each")
    offsets_with_transactions(args, third, len(committed))


def offsets_with_transactions(args, producer, records):
    """A consumer of --group reads the committed records; their offsets, sent with a transaction, commit with a
    commit only."""
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "isolation.level":
                         "read_committed", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([args.topic])
    read = 0
    deadline = time.monotonic() + 60
    while read < records:
        check(time.monotonic() < deadline, f"the group's consumer read {read} of {records} records in 60 s")
        message = consumer.poll(0.5)
        if message is None:
            continue
        check(message.error() is None, f"consumer error: {message.error()}")
        read += 1
    assignment = consumer.assignment()
    check(len(assignment) == args.partitions, f"the group's consumer was assigned {assignment}")
    positions = consumer.position(assignment)
    sent = {tp.partition: tp.offset for tp in positions}
    ok(f"group {args.group} read the {records} committed records, positions {sent}")
    partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]

    def committed_offsets():
        return {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=30)}

    producer.begin_transaction()
    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
    producer.abort_transaction(30)
    got = committed_offsets()
    check(all(offset == confluent_kafka.OFFSET_INVALID for offset in got.values()),
          f"offsets sent with an aborted transaction were committed: {got}")
    ok("offsets sent with an aborted transaction are not committed")
    producer.begin_transaction()
    producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
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


def check_compacted(produced, read, most_read=None):
    """Checks the records read of a compacted partition, (offset, key, value) in the order read, against what was
    produced: fewer than a quarter of them read, or at most most_read."""
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
    if most_read is None:
        check(len(read) < produced.records() / 4, f"{len(read)} records read of the {produced.records()} produced:"
              " not compacted")
    else:
        check(len(read) <= most_read, f"{len(read)} records read of the {produced.records()} produced, more than the"
              f" {most_read} expected at most")
    ok(f"read {len(read)} of the {produced.records()} records produced, offsets {read[0][0]} to {read[-1][0]}, each"
       f" as produced, each of the {len(latest)} keys' latest, {sum(v is None for _, _, v in read)} tombstones")


def compacted(args):
    produced = Compacted(args.records, args.keys, args.deleted)
    partition = TopicPartition(args.topic, 0)
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    low, high = consumer.get_watermark_offsets(partition, timeout=30)
    check((low, high) == (0, produced.records()), f"watermarks {low} to {high}, not 0 to {produced.records()}")
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    read = []
    deadline = time.monotonic() + 60
    while True:
        check(time.monotonic() < deadline, f"not at the end {high} within 60 s: {len(read)} records read, the last"
              f" at {read[-1][0] if read else None}")
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            check(message.error().code() == KafkaError._PARTITION_EOF, f"consumer error: {message.error()}")
            break
        value = message.value()
        read.append((message.offset(), message.key().decode(), None if value is None else value.decode()))
    position = consumer.position([partition])[0].offset
    check(position == high, f"at the end of the partition, the position is {position}, not {high}")
    ok(f"at the end {high} of {args.topic}")
    check_compacted(produced, read, args.most_read)
    consumer.close()


CHECKS = {"compacted": compacted, "list-topics": list_topics, "create-topics": create_topics, "describe-configs": describe_configs,
          "alter-configs": alter_configs, "round-trip": round_trip, "transactions": transactions}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--brokers", type=int, required=True)
    parser.add_argument("--replicas", type=int, required=True)
    parser.add_argument("--cluster-id", default="sluice-cluster")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--deleted", type=int, default=10)
    parser.add_argument("--most-read", type=int)
    parser.add_argument("--group", default="confluent-round-trip")
    parser.add_argument("--group-protocol", choices=["classic", "consumer"],
                        help="round-trip: the consumer's group.protocol (librdkafka's default if not given)")
    parser.add_argument("--transactional-id", default="confluent-transactions")
    parser.add_argument("--seconds", type=int, default=150)
    args = parser.parse_args()

    def out_of_time(signum, frame):
        print(f"FAIL: {args.check} still running after {args.seconds} s", flush=True)
        sys.exit(3)

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.seconds)
    print(f"confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}: {args.check}"
          f" against {args.bootstrap}", flush=True)
    CHECKS[args.check](args)


if __name__ == "__main__":
    main()
