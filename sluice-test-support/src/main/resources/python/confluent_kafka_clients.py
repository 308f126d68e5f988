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
                    --topic (made beforehand); a Consumer of group --group reads every one back once, at the offset
                    the delivery report gave, and commits

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

    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
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


CHECKS = {"list-topics": list_topics, "create-topics": create_topics, "describe-configs": describe_configs,
          "alter-configs": alter_configs, "round-trip": round_trip}


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
    parser.add_argument("--group", default="confluent-round-trip")
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
