package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.testsupport.KafkaWire;
import java.lang.foreign.MemorySegment;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Produce on a broker of a cluster, against a {@link Replication} that stands for the cluster in this JVM (appends go
 * to the local store): leadership decides who takes a batch, and an idempotent producer's sequences stay in order
 * around a leader's first moments.
 */
class ReplicatedProduceTest {

    private static final short VERSION = 9;
    private static final long PRODUCER = 4242;

    @TempDir
    Path dir;

    /**
     * One broker's view of a one-broker "cluster": it leads once {@link #ready} is set; appends go to the store at once,
     * and are committed at once, or, with {@link #holdCommits}, when {@link #commitAll} says.
     */
    static final class LocalReplication implements Replication {
        final Store store;
        final AtomicBoolean ready = new AtomicBoolean();
        final AtomicBoolean elected = new AtomicBoolean(true);
        final AtomicBoolean controllerReady = new AtomicBoolean(true);
        final AtomicBoolean holdCommits = new AtomicBoolean();
        final AtomicInteger appends = new AtomicInteger();
        final java.util.concurrent.atomic.AtomicLong highWatermark = new java.util.concurrent.atomic.AtomicLong();
        final List<Runnable> held = new java.util.concurrent.CopyOnWriteArrayList<>();
        int self = 1;
        List<Node> nodes = List.of(new Node(1, "127.0.0.1", 0));
        /** Topic creation never completes (a cluster that cannot take the command). */
        final AtomicBoolean createHeld = new AtomicBoolean();
        /** Topic creation answers that the cluster has the topic already, and this broker has not applied it yet. */
        final AtomicBoolean createdElsewhere = new AtomicBoolean();

        /** Commits every append held back: the high watermark moves to the store's end. */
        void commitAll() {
            highWatermark.set(store.maxOffset("t", 0));
            held.forEach(Runnable::run);
            held.clear();
            changed();
        }

        private final List<BiConsumer<String, Integer>> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

        /** Tells the listeners partition t-0 changed, as the cluster does when its leader is ready or it commits. */
        void changed() {
            listeners.forEach(listener -> listener.accept("t", 0));
        }

        /** This broker, elected, becomes ready to take appends, and says so. */
        void ready() {
            ready.set(true);
            changed();
        }

        @Override
        public boolean controllerReady() {
            return controllerReady.get();
        }

        LocalReplication(Store store) {
            this.store = store;
        }

        @Override
        public int self() {
            return self;
        }

        @Override
        public List<Node> brokers() {
            return nodes;
        }

        /** The controller's node id; -1 while none is known (an election, or this broker not joined yet). */
        final AtomicInteger controller = new AtomicInteger(1);

        @Override
        public int controller() {
            return controller.get();
        }

        /** The leader this broker knows of, once {@link #elected}. */
        final AtomicInteger leader = new AtomicInteger(1);
        /** This broker cannot name the leader with confidence (it may have died). */
        final AtomicBoolean inDoubt = new AtomicBoolean();
        /** How many views to come name no leader, whatever {@link #leader} says (a replica elected, not named yet). */
        final AtomicInteger namelessViews = new AtomicInteger();

        @Override
        public PartitionView partition(String topic, int partition) {
            boolean nameless = namelessViews.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
            return new PartitionView(elected.get() && !nameless ? leader.get() : -1, 1, List.of(1), List.of(1));
        }

        @Override
        public boolean leaderInDoubt(String topic, int partition) {
            return inDoubt.get();
        }

        /** Whether {@link #leads} fails, as a cluster part-way through closing might. */
        final AtomicBoolean failing = new AtomicBoolean();

        @Override
        public boolean leads(String topic, int partition) {
            if (failing.get()) {
                throw new IllegalStateException("the cluster is closing");
            }
            return elected.get() && ready.get();
        }

        @Override
        public Appended append(String topic, int partition, io.sluice.store.KafkaBatch batch) {
            appends.incrementAndGet();
            CompletableFuture<Long> offset = store.appendOpaque(topic, partition, batch.bytes(), batch.offsetCount())
                    .thenApply(AppendResult::firstQueueOffset);
            if (!holdCommits.get()) {
                offset.join();
                highWatermark.set(store.maxOffset(topic, partition));
                return new Appended(offset, offset);
            }
            CompletableFuture<Long> committed = new CompletableFuture<>();
            held.add(() -> committed.complete(offset.join()));
            return new Appended(offset, committed);
        }

        @Override
        public long highWatermark(String topic, int partition) {
            return highWatermark.get();
        }

        /** The store's own first offset is the log start here ({@link #deleteRecords}). */
        @Override
        public long logStartOffset(String topic, int partition) {
            return 0;
        }

        @Override
        public CompletableFuture<Long> deleteRecords(String topic, int partition, long offset) {
            return CompletableFuture.completedFuture(store.deleteRecords(topic, partition, offset));
        }

        @Override
        public CompletableFuture<Void> deleteTopic(String topic) {
            return store.deleteTopic(topic) ? CompletableFuture.completedFuture(null) : CompletableFuture.failedFuture(
                    new IllegalArgumentException("topic " + topic + " does not exist"));
        }

        @Override
        public CompletableFuture<Void> alterTopicConfigs(String topic,
                                                         java.util.function.UnaryOperator<Map<String, String>> change) {
            store.setTopicConfigs(topic, change.apply(store.topicConfigs(topic)));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                                   Map<String, String> configs) {
            if (createHeld.get()) {
                return new CompletableFuture<>();
            }
            if (createdElsewhere.get()) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic
                        + " already exists"));
            }
            store.createTopic(topic, TopicLayout.BATCHES, partitions, configs);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
            offsets.forEach(o -> store.commitOffset(group, o.topic(), o.partition(), o.offset()));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> addPartitions(String topic, int partitions) {
            store.increaseQueueCount(topic, partitions);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public GroupsCoordination groupsCoordination() {
            return new GroupsCoordination(controller.get() == self ? 1 : -1, 0);
        }

        @Override
        public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision) {
            store.removeConsumerGroup(group);
            return CompletableFuture.completedFuture(true);
        }

        @Override
        public int defaultReplicationFactor() {
            return 1;
        }

        @Override
        public void onChange(BiConsumer<String, Integer> listener) {
            listeners.add(listener);
        }
    }

    private static ProduceRequestData request(int firstSequence, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(1_000L + firstSequence + i, null,
                    ("r" + (firstSequence + i)).getBytes(StandardCharsets.UTF_8));
        }
        MemoryRecords batch = MemoryRecords.withIdempotentRecords(Compression.NONE, PRODUCER, (short) 0,
                firstSequence, records);
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName("t").setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(batch))));
        return new ProduceRequestData().setAcks((short) -1).setTimeoutMs(10_000).setTopicData(topics);
    }

    private static ProduceResponseData.PartitionProduceResponse produce(Socket socket, ProduceRequestData request)
            throws Exception {
        return new ProduceResponseData(KafkaWire.exchange(socket, ApiKeys.PRODUCE, VERSION, request), VERSION)
                .responses().iterator().next().partitionResponses().getFirst();
    }

    /**
     * A broker just elected, not ready to append yet, used to answer the producer's first batch NOT_LEADER_OR_FOLLOWER
     * and take its second a moment later, as a new producer's first batch: the first one's retry was then refused as
     * out of order for good. It now holds the first batch until it is ready.
     */
    @Test
    void aLeaderNotReadyYetHoldsTheBatchRatherThanRefuseIt() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    cluster.ready();
                });
                ProduceResponseData.PartitionProduceResponse first = produce(socket, request(0, 3));
                assertThat(Errors.forCode(first.errorCode())).isEqualTo(Errors.NONE);
                assertThat(first.baseOffset()).isZero();
                ProduceResponseData.PartitionProduceResponse second = produce(socket, request(3, 2));
                assertThat(Errors.forCode(second.errorCode())).isEqualTo(Errors.NONE);
                assertThat(second.baseOffset()).isEqualTo(3);
            }
        }
    }

    /**
     * A batch that timed out waiting for its commit is retried: the retry must not be answered until the original is
     * committed. The timeout used to fail the append's own future, which made the producer state be rebuilt from the
     * store, where the uncommitted batch was, and the retry was answered at once as a duplicate.
     */
    @Test
    void aRetryOfABatchStoredButNotCommittedIsAnsweredOnlyOnceItIsCommitted() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.ready.set(true);
            cluster.holdCommits.set(true);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                ProduceRequestData batch = request(0, 3).setTimeoutMs(300);
                assertThat(Errors.forCode(produce(socket, batch).errorCode())).isEqualTo(Errors.REQUEST_TIMED_OUT);
                ProduceResponseData.PartitionProduceResponse retry = produce(socket, request(0, 3).setTimeoutMs(300));
                assertThat(Errors.forCode(retry.errorCode())).as("a retry before the commit")
                        .isEqualTo(Errors.REQUEST_TIMED_OUT);
                cluster.commitAll();
                ProduceResponseData.PartitionProduceResponse committed = produce(socket, request(0, 3));
                assertThat(Errors.forCode(committed.errorCode())).isEqualTo(Errors.NONE);
                assertThat(committed.baseOffset()).isZero();
                assertThat(cluster.appends).as("stored once").hasValue(1);
            }
        }
    }

    /**
     * A controller just elected has not applied its predecessors' metadata (committed offsets) yet: it answers for
     * groups with COORDINATOR_LOAD_IN_PROGRESS until it has, and clients retry.
     */
    @Test
    void aControllerNotReadyYetDoesNotAnswerForGroups() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.controllerReady.set(false);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                var request = new org.apache.kafka.common.message.HeartbeatRequestData().setGroupId("g")
                        .setMemberId("m").setGenerationId(1);
                var answer = new org.apache.kafka.common.message.HeartbeatResponseData(KafkaWire.exchange(socket,
                        ApiKeys.HEARTBEAT, (short) 4, request), (short) 4);
                assertThat(Errors.forCode(answer.errorCode())).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
                cluster.controllerReady.set(true);
                answer = new org.apache.kafka.common.message.HeartbeatResponseData(KafkaWire.exchange(socket,
                        ApiKeys.HEARTBEAT, (short) 4, request), (short) 4);
                assertThat(Errors.forCode(answer.errorCode())).isNotEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            }
        }
    }

    /**
     * Any broker takes CreateTopics and carries it to the cluster, which elects a metadata leader if it has none: the
     * request waits for that, within its own timeout, rather than being answered NOT_CONTROLLER, which librdkafka's
     * AdminClient does not retry (a user's first command right after a cluster started failed so). While no leader is
     * known, Metadata names this broker, which takes the request.
     */
    @Test
    void createTopicsWithNoControllerKnownIsCarriedToTheClusterByTheBrokerMetadataNames() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            LocalReplication cluster = new LocalReplication(store);
            cluster.controller.set(-1);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                var metadata = new org.apache.kafka.common.message.MetadataResponseData(KafkaWire.exchange(socket,
                        ApiKeys.METADATA, (short) 12, new org.apache.kafka.common.message.MetadataRequestData()
                                .setTopics(List.of())), (short) 12);
                assertThat(metadata.controllerId()).as("this broker, which takes CreateTopics").isEqualTo(1);
                assertThat(Errors.forCode(createTopic(socket, "n", 10_000).errorCode())).isEqualTo(Errors.NONE);
                assertThat(store.queueCount("n")).isEqualTo(1);
                // A cluster that does not create it within the request's timeout: REQUEST_TIMED_OUT, as Kafka answers.
                cluster.createHeld.set(true);
                long start = System.nanoTime();
                var late = createTopic(socket, "late", 300);
                assertThat(Errors.forCode(late.errorCode())).isEqualTo(Errors.REQUEST_TIMED_OUT);
                assertThat((System.nanoTime() - start) / 1e9).as("answered once its own timeout passed").isLessThan(10);
            }
        }
    }

    private static org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResult createTopic(
            Socket socket, String name, int timeoutMs) throws IOException {
        var topics = new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopicCollection();
        topics.add(new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(1).setReplicationFactor((short) 1));
        var request = new org.apache.kafka.common.message.CreateTopicsRequestData().setTopics(topics)
                .setTimeoutMs(timeoutMs);
        return new org.apache.kafka.common.message.CreateTopicsResponseData(KafkaWire.exchange(socket,
                ApiKeys.CREATE_TOPICS, (short) 7, request), (short) 7).topics().find(name);
    }

    /**
     * A well-formed request whose handling fails in a way no handler foresaw is answered with the API's error response
     * (UNKNOWN_SERVER_ERROR, as Kafka's broker answers an unexpected error), and the connection goes on; before, it was
     * closed, and the client saw a transport failure.
     */
    @Test
    void aFaultNoHandlerForesawIsAnsweredNotAClosedConnection() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.ready.set(true);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                cluster.failing.set(true);
                var request = new org.apache.kafka.common.message.ListOffsetsRequestData().setReplicaId(-1)
                        .setTopics(List.of(new org.apache.kafka.common.message.ListOffsetsRequestData.ListOffsetsTopic()
                                .setName("t").setPartitions(List.of(new org.apache.kafka.common.message
                                        .ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0)
                                        .setTimestamp(-1)))));
                var failed = new org.apache.kafka.common.message.ListOffsetsResponseData(KafkaWire.exchange(socket,
                        ApiKeys.LIST_OFFSETS, (short) 7, request), (short) 7);
                assertThat(Errors.forCode(failed.topics().getFirst().partitions().getFirst().errorCode()))
                        .isEqualTo(Errors.UNKNOWN_SERVER_ERROR);
                cluster.failing.set(false);
                var answered = new org.apache.kafka.common.message.ListOffsetsResponseData(KafkaWire.exchange(socket,
                        ApiKeys.LIST_OFFSETS, (short) 7, request), (short) 7);
                assertThat(Errors.forCode(answered.topics().getFirst().partitions().getFirst().errorCode()))
                        .as("the same connection goes on").isEqualTo(Errors.NONE);
            }
        }
    }

    /** ListOffsets by time answers no offset at or past the high watermark (not committed, perhaps cut later). */
    @Test
    void listOffsetsByTimeStopsAtTheHighWatermark() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.ready.set(true);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                assertThat(Errors.forCode(produce(socket, request(0, 3)).errorCode())).isEqualTo(Errors.NONE);
                cluster.holdCommits.set(true);
                produce(socket, request(3, 2).setTimeoutMs(200)); // stored, not committed: the watermark stays at 3
                var topics = List.of(new org.apache.kafka.common.message.ListOffsetsRequestData.ListOffsetsTopic()
                        .setName("t").setPartitions(List.of(new org.apache.kafka.common.message.ListOffsetsRequestData
                                .ListOffsetsPartition().setPartitionIndex(0).setTimestamp(-3))));
                var listed = new org.apache.kafka.common.message.ListOffsetsResponseData(KafkaWire.exchange(socket,
                        ApiKeys.LIST_OFFSETS, (short) 7, new org.apache.kafka.common.message.ListOffsetsRequestData()
                                .setReplicaId(-1).setTopics(topics)), (short) 7)
                        .topics().getFirst().partitions().getFirst();
                assertThat(listed.offset()).as("the record of the largest timestamp below the high watermark")
                        .isLessThan(3);
                var latest = new org.apache.kafka.common.message.ListOffsetsResponseData(KafkaWire.exchange(socket,
                        ApiKeys.LIST_OFFSETS, (short) 7, new org.apache.kafka.common.message.ListOffsetsRequestData()
                                .setReplicaId(-1).setTopics(List.of(topics.getFirst().duplicate()
                                        .setPartitions(List.of(topics.getFirst().partitions().getFirst().duplicate()
                                                .setTimestamp(-1)))))), (short) 7)
                        .topics().getFirst().partitions().getFirst();
                assertThat(latest.offset()).isEqualTo(3);
            }
        }
    }

    /**
     * Producer ids are unique across a cluster's brokers: nodes 1 and 65 used to hand out ids equal modulo 64 (each
     * took its node id modulo 64), so two producers could get the same id.
     */
    @Test
    void brokersOfOneClusterNeverHandOutTheSameProducerIds() throws Exception {
        List<Replication.Node> nodes = List.of(new Replication.Node(1, "127.0.0.1", 0),
                new Replication.Node(65, "127.0.0.1", 0));
        List<Long> ids = new java.util.ArrayList<>();
        for (Replication.Node node : nodes) {
            try (Store store = Store.open(dir.resolve("n" + node.id()), StoreConfig.builder().build())) {
                LocalReplication cluster = new LocalReplication(store);
                cluster.self = node.id();
                cluster.nodes = nodes;
                try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(node.id()),
                        cluster); Socket socket = new Socket("127.0.0.1", broker.port())) {
                    var answer = new org.apache.kafka.common.message.InitProducerIdResponseData(
                            KafkaWire.exchange(socket, ApiKeys.INIT_PRODUCER_ID, (short) 4,
                                    new org.apache.kafka.common.message.InitProducerIdRequestData()
                                            .setTransactionalId(null).setTransactionTimeoutMs(-1).setProducerId(-1)
                                            .setProducerEpoch((short) -1)), (short) 4);
                    ids.add(answer.producerId());
                }
            }
        }
        assertThat(Math.floorMod(ids.get(0), 64)).isNotEqualTo(Math.floorMod(ids.get(1), 64));
    }

    /**
     * A producer asks a broker that has not applied a topic's creation yet (made through another broker) for its
     * metadata, allowing auto-creation: the cluster says it exists. That answered INVALID_TOPIC_EXCEPTION, which ends a
     * Kafka producer; it is LEADER_NOT_AVAILABLE now, and the client asks again (seen in ClusterKillRoundsTest).
     */
    @Test
    void aTopicCreatedElsewhereAndNotAppliedHereYetIsNotAvailableRatherThanInvalid() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            LocalReplication cluster = new LocalReplication(store);
            cluster.createdElsewhere.set(true);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                var topics = new java.util.ArrayList<org.apache.kafka.common.message.MetadataRequestData
                        .MetadataRequestTopic>();
                topics.add(new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic().setName("k"));
                var answer = new org.apache.kafka.common.message.MetadataResponseData(KafkaWire.exchange(socket,
                        ApiKeys.METADATA, (short) 12, new org.apache.kafka.common.message.MetadataRequestData()
                                .setTopics(topics).setAllowAutoTopicCreation(true)), (short) 12);
                assertThat(Errors.forCode(answer.topics().find("k").errorCode()))
                        .isEqualTo(Errors.LEADER_NOT_AVAILABLE);
            }
        }
    }

    /** A broker that is not the leader (none elected) answers NOT_LEADER_OR_FOLLOWER and appends nothing. */
    @Test
    void aBrokerThatDoesNotLeadRefusesAndStoresNothing() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.elected.set(false);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                ProduceResponseData.PartitionProduceResponse answer = produce(socket, request(0, 3));
                assertThat(Errors.forCode(answer.errorCode())).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
                assertThat(cluster.appends).hasValue(0);
                assertThat(store.maxOffset("t", 0)).isZero();
            }
        }
    }

    private static org.apache.kafka.common.message.MetadataResponseData metadata(Socket socket, String topic)
            throws Exception {
        var topics = new java.util.ArrayList<org.apache.kafka.common.message.MetadataRequestData
                .MetadataRequestTopic>();
        topics.add(new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic().setName(topic));
        return new org.apache.kafka.common.message.MetadataResponseData(KafkaWire.exchange(socket, ApiKeys.METADATA,
                (short) 12, new org.apache.kafka.common.message.MetadataRequestData().setTopics(topics)), (short) 12);
    }

    /** Partition 0 of topic "t" as a Metadata answer gave it, and how long the answer took. */
    private record Answered(org.apache.kafka.common.message.MetadataResponseData.MetadataResponsePartition partition,
                            long waitedMillis) {
    }

    /**
     * Asks broker 1 of a two-broker view for the metadata of topic "t" while its leader is in doubt, with leader
     * {@code leader} named; {@code change}, if any, runs {@code afterMillis} into the wait.
     */
    private Answered metadataInDoubt(int leader, long afterMillis, java.util.function.Consumer<LocalReplication> change)
            throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.nodes = List.of(new Replication.Node(1, "127.0.0.1", 0), new Replication.Node(2, "127.0.0.1", 1));
            cluster.leader.set(leader);
            cluster.inDoubt.set(true);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                if (change != null) {
                    Thread.ofVirtual().start(() -> {
                        try {
                            Thread.sleep(afterMillis);
                        } catch (InterruptedException e) {
                            return;
                        }
                        change.accept(cluster);
                    });
                }
                long start = System.nanoTime();
                var answer = metadata(socket, "t");
                return new Answered(answer.topics().find("t").partitions().getFirst(),
                        (System.nanoTime() - start) / 1_000_000);
            }
        }
    }

    /**
     * Right after a leader dies the other replicas still name it until they elect another: a Metadata answer waits
     * while the leader is in doubt and names the successor, rather than send the client to the dead broker.
     */
    @Test
    void aMetadataAnswerWaitsWhileTheLeaderIsInDoubtAndNamesTheNextOne() throws Exception {
        Answered answered = metadataInDoubt(2, 300, cluster -> {
            cluster.leader.set(1);
            cluster.inDoubt.set(false);
        });

        assertThat(answered.partition().leaderId()).isEqualTo(1);
        assertThat(answered.waitedMillis()).isBetween(250L, 1_400L);
    }

    /**
     * A replica just elected is a leader a moment before it names itself (Ratis sets the role first): a doubt that
     * clears with no leader named yet waits on for the name, rather than answer LEADER_NOT_AVAILABLE, after which a
     * client backs off before it asks again.
     */
    @Test
    void aMetadataAnswerWaitsForTheNameOfALeaderJustElected() throws Exception {
        Answered answered = metadataInDoubt(2, 200, cluster -> {
            // The next two views (the wait's, then the answer's if the wait ends on the first) name none.
            cluster.namelessViews.set(2);
            cluster.leader.set(1);
            cluster.inDoubt.set(false);
        });

        assertThat(answered.partition().errorCode()).isZero();
        assertThat(answered.partition().leaderId()).isEqualTo(1);
    }

    /** A doubt that runs out with no leader named (none can be elected) ends the wait as soon as any calm does. */
    @Test
    void aDoubtThatEndsWithNoLeaderNamedEndsTheWaitSoon() throws Exception {
        Answered answered = metadataInDoubt(1, 200, cluster -> {
            cluster.elected.set(false);
            cluster.inDoubt.set(false);
        });

        assertThat(answered.partition().errorCode()).isEqualTo(Errors.LEADER_NOT_AVAILABLE.code());
        assertThat(answered.waitedMillis()).isBetween(150L, 1_000L);
    }

    /** A doubt that does not clear holds a Metadata answer for a bounded time only; then it names what it knows. */
    @Test
    void aMetadataAnswerWaitsForADoubtfulLeaderABoundedTime() throws Exception {
        Answered answered = metadataInDoubt(1, 0, null);

        assertThat(answered.partition().leaderId()).isEqualTo(1);
        assertThat(answered.waitedMillis()).isBetween(1_400L, 10_000L);
    }
}
