"""confluent-kafka (librdkafka) and kafka-python against a secured listener of a Sluice broker (SSL, SASL_PLAINTEXT or
SASL_SSL; PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512): one check per run, each asserting what it gets.

Usage: secure_clients.py CLIENT CHECK --bootstrap HOST:PORT --security-protocol P [options]

Clients: confluent (confluent-kafka, librdkafka's binding), kafka-python.

Checks:
  round-trip  the client's admin creates --topic (1 partition) and sees it in the metadata; a producer sends
              --records records there (acks=all); a consumer of group --group reads every one back once, in order,
              and commits; the group's committed offset is then --records. Each client connects over the listener
              the options describe, and to the addresses the broker advertises there.
  long-lived  a producer sends a record to --topic (made beforehand) every 50 ms for --produce-seconds over one
              connection, each delivered (acks=all); on a listener with connections.max.reauth.ms shorter than that,
              the client re-authenticates on the way (KIP-368) and loses nothing
  refused     an admin (and, for confluent, a producer) with the options given (a wrong password, an unknown user,
              a CA that did not sign the broker's certificate, no client certificate where one is required) cannot
              get the metadata, and the client reports why: --expect authentication (librdkafka's _AUTHENTICATION,
              "Authentication failed"; kafka-python's authentication error) or --expect ssl (librdkafka's _SSL or
              a certificate verify failure; kafka-python's ssl error).

Security options: --security-protocol, --mechanism, --user, --password, --ca (the CA's certificate, PEM), and for a
client certificate --keystore (PKCS12, confluent) with --keystore-password, or --cert and --key (PEM, kafka-python).

Prints "ok: ..." lines and exits 0 when every assertion holds; prints "FAIL: ..." and exits 1 at the first that does
not, 2 on a bad command line, 3 when it runs out of --seconds.
"""

import argparse
import logging
import signal
import sys
import time


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def ok(message):
    print("ok: " + message, flush=True)


class Confluent:
    """The checks through confluent-kafka."""

    def __init__(self):
        import confluent_kafka
        self.kafka = confluent_kafka
        print(f"confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}",
              flush=True)

    @staticmethod
    def config(args, errors=None):
        config = {"bootstrap.servers": args.bootstrap, "security.protocol": args.security_protocol,
                  "socket.timeout.ms": 10000}
        if args.mechanism:
            config.update({"sasl.mechanisms": args.mechanism, "sasl.username": args.user,
                           "sasl.password": args.password})
        if args.ca:
            config["ssl.ca.location"] = args.ca
        if args.keystore:
            config.update({"ssl.keystore.location": args.keystore, "ssl.keystore.password": args.keystore_password})
        if errors is not None:
            config["error_cb"] = errors.append
        return config

    def round_trip(self, args):
        from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient(self.config(args))
        try:
            admin.create_topics([NewTopic(args.topic, num_partitions=1, replication_factor=1)],
                                request_timeout=30)[args.topic].result(timeout=60)
        except KafkaException as e:
            fail(f"create_topics of {args.topic} failed: {e.args[0]}")
        deadline = time.monotonic() + 30
        while True:
            metadata = admin.list_topics(timeout=20)
            topic = metadata.topics.get(args.topic)
            if topic is not None and topic.error is None and len(topic.partitions) == 1:
                break
            check(time.monotonic() < deadline, f"{args.topic} not in the metadata within 30 s: {topic}")
            time.sleep(0.2)
        advertised = sorted(f"{b.host}:{b.port}" for b in metadata.brokers.values())
        check(advertised == [args.bootstrap], f"brokers advertised {advertised}, not the listener {args.bootstrap}")
        ok(f"created {args.topic}; the broker advertises {advertised[0]}")

        delivered = []
        errors = []

        def on_delivery(error, message):
            if error is not None:
                errors.append(str(error))
            else:
                delivered.append(message.offset())

        producer = Producer({**self.config(args), "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                             "message.timeout.ms": 60000})
        for i in range(args.records):
            producer.produce(args.topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(),
                             on_delivery=on_delivery)
            producer.poll(0)
        left = producer.flush(60)
        check(left == 0 and not errors, f"{left} records not delivered within 60 s; errors {errors[:5]}")
        check(sorted(delivered) == list(range(args.records)), f"offsets delivered {sorted(delivered)[:10]}...")
        ok(f"produced {args.records} records at offsets 0 to {args.records - 1}")

        consumer = Consumer({**self.config(args), "group.id": args.group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe([args.topic])
        read = []
        deadline = time.monotonic() + 60
        while len(read) < args.records and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            check(message.error() is None, f"consumer error: {message.error()}")
            read.append((message.offset(), message.value().decode()))
        check(read == [(i, f"value-{i}") for i in range(args.records)],
              f"read {len(read)} of {args.records} records, or out of order: {read[:5]}...")
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(args.topic, 0)], timeout=30)[0].offset
        check(committed == args.records, f"committed offset {committed}, not {args.records}")
        consumer.close()
        ok(f"group {args.group} read the {args.records} records in order and committed {committed}")

    def long_lived(self, args):
        from confluent_kafka import Producer
        delivered, errors = [], []

        def on_delivery(error, message):
            (errors if error is not None else delivered).append(error or message.offset())

        producer = Producer({**self.config(args), "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 30000})
        sent = 0
        end = time.monotonic() + args.produce_seconds
        while time.monotonic() < end:
            producer.produce(args.topic, value=f"value-{sent}".encode(), on_delivery=on_delivery)
            sent += 1
            producer.poll(0.05)
        left = producer.flush(30)
        check(left == 0 and not errors, f"{left} of {sent} records undelivered; errors {errors[:5]}")
        check(sorted(delivered) == list(range(sent)), f"offsets delivered {sorted(delivered)[:10]}...")
        ok(f"{sent} records delivered over {args.produce_seconds} s")

    def refused(self, args):
        from confluent_kafka import KafkaError, KafkaException, Producer
        from confluent_kafka.admin import AdminClient
        # The producer's error callback says why its connections fail; then the admin is refused the metadata.
        errors = []
        producer = Producer(self.config(args, errors))
        producer.produce("refused", value=b"x")
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        producer.purge()
        admin = AdminClient(self.config(args))
        try:
            metadata = admin.list_topics(timeout=3)
            fail(f"the metadata was given: brokers {sorted(metadata.brokers)}")
        except KafkaException as e:
            ok(f"list_topics refused: {e.args[0]}")
        described = [f"{e.name()}: {e.str()}" for e in errors]
        if args.expect == "authentication":
            matching = [e for e in errors if e.code() == KafkaError._AUTHENTICATION
                        and "Authentication failed" in e.str()]
            check(matching, f"no _AUTHENTICATION error saying 'Authentication failed' among {described}")
        else:
            # An untrusted broker: _SSL, "certificate verify failed"; no client certificate where one is required:
            # the broker's TLS alert (certificate_required on TLS 1.3), as the transport's failure.
            matching = [e for e in errors if e.code() == KafkaError._SSL or "SSL routines" in e.str()
                        or "SSL handshake failed" in e.str()]
            check(matching, f"no _SSL error among {described}")
            check(not [e for e in errors if e.code() == KafkaError._AUTHENTICATION],
                  f"an _AUTHENTICATION error over a refused TLS handshake: {described}")
        ok(f"the client reports {matching[0].name()}: {matching[0].str()}")


class KafkaPython:
    """The checks through kafka-python."""

    def __init__(self):
        import kafka
        self.kafka = kafka
        print(f"kafka-python {kafka.__version__}", flush=True)

    @staticmethod
    def config(args):
        config = {"bootstrap_servers": args.bootstrap, "security_protocol": args.security_protocol,
                  "request_timeout_ms": 30000}
        if args.mechanism:
            config.update({"sasl_mechanism": args.mechanism, "sasl_plain_username": args.user,
                           "sasl_plain_password": args.password})
        if args.security_protocol.endswith("SSL"):
            config["ssl_cafile"] = args.ca
            if args.cert:
                config.update({"ssl_certfile": args.cert, "ssl_keyfile": args.key})
        return config

    def round_trip(self, args):
        from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
        from kafka.admin import NewTopic
        admin = KafkaAdminClient(**self.config(args))
        admin.create_topics([NewTopic(args.topic, num_partitions=1, replication_factor=1)])
        check(args.topic in admin.list_topics(), f"{args.topic} not listed after its creation")
        ok(f"created {args.topic}")

        producer = KafkaProducer(acks="all", linger_ms=5, **self.config(args))
        futures = [producer.send(args.topic, key=f"key-{i}".encode(), value=f"value-{i}".encode())
                   for i in range(args.records)]
        producer.flush(timeout=60)
        offsets = sorted(future.get(timeout=1).offset for future in futures)
        check(offsets == list(range(args.records)), f"offsets delivered {offsets[:10]}...")
        producer.close()
        ok(f"produced {args.records} records at offsets 0 to {args.records - 1}")

        consumer = KafkaConsumer(args.topic, group_id=args.group, auto_offset_reset="earliest",
                                 enable_auto_commit=False, **self.config(args))
        read = []
        deadline = time.monotonic() + 60
        while len(read) < args.records and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                read.extend((record.offset, record.value.decode()) for record in records)
        check(read == [(i, f"value-{i}") for i in range(args.records)],
              f"read {len(read)} of {args.records} records, or out of order: {read[:5]}...")
        consumer.commit()
        committed = consumer.committed(TopicPartition(args.topic, 0))
        check(committed == args.records, f"committed offset {committed}, not {args.records}")
        consumer.close()
        admin.close()
        ok(f"group {args.group} read the {args.records} records in order and committed {committed}")

    def long_lived(self, args):
        from kafka import KafkaProducer
        producer = KafkaProducer(acks="all", **self.config(args))
        sent = 0
        end = time.monotonic() + args.produce_seconds
        while time.monotonic() < end:
            offset = producer.send(args.topic, value=f"value-{sent}".encode()).get(timeout=30).offset
            check(offset == sent, f"record {sent} delivered at offset {offset}")
            sent += 1
            time.sleep(0.05)
        producer.close()
        ok(f"{sent} records delivered over {args.produce_seconds} s")

    def refused(self, args):
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError
        # kafka-python logs why a connection failed, and raises only that it could not bootstrap: its log tells.
        records = []

        class Keep(logging.Handler):
            def emit(self, record):
                if record.levelno >= logging.WARNING:
                    records.append(record.getMessage())

        logging.getLogger("kafka").addHandler(Keep())
        logging.getLogger("kafka").setLevel(logging.WARNING)
        try:
            admin = KafkaAdminClient(**{**self.config(args), "request_timeout_ms": 5000,
                                        "bootstrap_timeout_ms": 5000})
            topics = admin.list_topics()
            fail(f"the topics were listed: {topics}")
        except KafkaError as e:
            raised = f"{type(e).__name__}: {e}"
        expected = "SaslAuthenticationFailedError: Authentication failed" if args.expect == "authentication" \
            else "CERTIFICATE_VERIFY_FAILED"
        said = [line for line in records if expected in line]
        check(said, f"kafka-python raised {raised} and logged no {expected!r}; its log: {records[-10:]}")
        ok(f"kafka-python raised {raised}; it logged: {said[0]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("client", choices=["confluent", "kafka-python"])
    parser.add_argument("check", choices=["round-trip", "long-lived", "refused"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--security-protocol", required=True,
                        choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
    parser.add_argument("--mechanism", choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--ca")
    parser.add_argument("--keystore")
    parser.add_argument("--keystore-password")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--topic", default="secure")
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--group", default="secure-readers")
    parser.add_argument("--produce-seconds", type=float, default=5)
    parser.add_argument("--expect", choices=["authentication", "ssl"], default="authentication")
    parser.add_argument("--seconds", type=int, default=150)
    args = parser.parse_args()

    def out_of_time(signum, frame):
        print(f"FAIL: {args.client} {args.check} still running after {args.seconds} s", flush=True)
        sys.exit(3)

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(args.seconds)
    client = Confluent() if args.client == "confluent" else KafkaPython()
    print(f"{args.check} against {args.bootstrap} over {args.security_protocol}"
          + (f" with {args.mechanism} as {args.user}" if args.mechanism else ""), flush=True)
    getattr(client, args.check.replace("-", "_"))(args)


if __name__ == "__main__":
    main()
