package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.ratis.protocol.RaftGroupId;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeleteTopics on a cluster of three, through the stock Admin client: the deletion goes through the metadata group, so
 * every broker stops the topic's Raft groups, deletes their directories, the topic's data and its groups' committed
 * offsets, and Metadata lists it no more; created again under its name it is another topic (another id, other Raft
 * groups, empty, offsets from 0). A broker stopped during a deletion comes back without the deleted topic's groups and
 * data and serves the topic created again: once by replaying the deletion from the metadata log, once, the metadata
 * log purged past it, by installing the metadata's snapshot, which lacks the topic. What neither reaches (a topic the
 * broker's metadata does not name, or names another topic of its name) goes once the broker has caught up.
 */
class ClusterDeleteTopicsTest {

    /** Snapshots (of the metadata too) every 50 entries, so that offset commits purge the metadata log. */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(50, 4096, 1);

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000));
    }

    /** Creates {@code t}, two partitions of three replicas; @return its id */
    private Uuid createT() throws Exception {
        try (Admin admin = admin()) {
            return admin.createTopics(List.of(new NewTopic("t", 2, (short) 3))).topicId("t").get(60, TimeUnit.SECONDS);
        }
    }

    /** Sends {@code <label>-<i>} for i below {@code count} to t-0, acknowledged. */
    private void produce(String label, int count) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 120_000,
                30_000)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>("t", 0, null, (label + "-" + i).getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
        }
    }

    /** Commits group {@code group}'s offsets of t-0 and t-1 (and of other-0), {@code times} times. */
    private void commit(String group, int times) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(), ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new StringDeserializer(), new StringDeserializer())) {
            for (int i = 1; i <= times; i++) {
                consumer.commitSync(Map.of(new TopicPartition("t", 0), new OffsetAndMetadata(i),
                        new TopicPartition("t", 1), new OffsetAndMetadata(1), new TopicPartition("other", 0),
                        new OffsetAndMetadata(i)));
            }
        }
    }

    /** @return the directories of the Raft groups of t's two partitions in node {@code id}'s Raft directory */
    private List<Path> groupDirectories(int id) {
        List<Path> directories = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            RaftGroupId group = cluster.broker(id).node().groupId(new ClusterNode.PartitionId("t", p));
            directories.add(cluster.directory(id).resolve("raft").resolve(group.getUuid().toString()));
        }
        return directories;
    }

    private static UUID uuid(Uuid id) {
        return new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits());
    }

    /** Waits until node {@code id}'s store holds t with {@code topicId}, its groups' directories and 5 records. */
    private void awaitServes(int id, Uuid topicId) throws Exception {
        await("node " + id + " holds t with the id " + topicId, 60,
                () -> uuid(topicId).equals(cluster.broker(id).store().topicId("t")));
        for (Path directory : groupDirectories(id)) {
            await("node " + id + "'s group directory " + directory, 60, () -> Files.isDirectory(directory));
        }
        await("node " + id + "'s replica of t-0 holds the 5 records", 60, () -> {
            try {
                return cluster.replica(id, "t").highWatermark() == 5;
            } catch (IOException e) {
                return false; // not hosted yet
            }
        });
    }

    @Test
    void aDeletedTopicGoesFromEveryBrokerAndABrokerAwayComesBackWithoutIt() throws Exception {
        cluster = new InProcessCluster(dir, TUNING);
        cluster.startAll();
        cluster.awaitMembers();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("other", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        Uuid first = createT();
        produce("first", 50);
        commit("g", 1);

        // A broker stopped while t is deleted and created again comes back by replaying the deletion.
        int away = 3;
        List<Path> firstGroups = groupDirectories(away);
        for (Path directory : firstGroups) {
            assertThat(directory).isDirectory();
        }
        cluster.stop(away);
        try (Admin admin = admin()) {
            admin.deleteTopics(List.of("t")).all().get(60, TimeUnit.SECONDS);
            assertThat(admin.listTopics().names().get(60, TimeUnit.SECONDS)).containsExactly("other");
            assertThat(admin.listConsumerGroupOffsets("g").partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS))
                    .as("the deleted topic's committed offsets").containsOnlyKeys(new TopicPartition("other", 0));
        }
        // The deletion is answered once the metadata group committed it; each broker applies it when its replica of
        // the metadata log gets there, as Kafka's brokers apply a deletion from the controller's log.
        for (int id = 1; id <= 2; id++) {
            int node = id;
            await("node " + id + " applied the deletion", 30, () -> cluster.broker(node).store().queueCount("t") == 0
                    && cluster.broker(node).store().committedOffset("g", "t", 0).isEmpty());
            for (Path directory : groupDirectories(id)) {
                await("node " + id + "'s group directory " + directory + " gone", 30, () -> !Files.exists(directory));
            }
        }
        Uuid second = createT();
        assertThat(second).isNotEqualTo(first);
        produce("second", 5);
        assertThat(cluster.readValues("t", 5)).as("the topic created again holds only its own records")
                .containsExactly("second-0", "second-1", "second-2", "second-3", "second-4");
        cluster.start(away);
        awaitServes(away, second);
        for (Path directory : firstGroups) {
            assertThat(directory).as("the first topic's group directory on node %d", away).doesNotExist();
        }
        assertThat(cluster.broker(away).store().committedOffset("g", "t", 0)).isEmpty();

        // Another broker stopped while t (by its id) is deleted and created again, and while the metadata log is
        // purged past the deletion: it installs the metadata's snapshot, which lacks the topic, and sweeps what is
        // left of it once it has caught up.
        away = 2;
        commit("g", 1);
        List<Path> secondGroups = groupDirectories(away);
        long awayEnd = cluster.broker(away).node().metadataDivision().getRaftLog().getLastEntryTermIndex().getIndex();
        cluster.stop(away);
        try (Admin admin = admin()) {
            admin.deleteTopics(TopicCollection.ofTopicIds(List.of(second))).all().get(60, TimeUnit.SECONDS);
            assertThat(admin.listTopics().names().get(60, TimeUnit.SECONDS)).containsExactly("other");
        }
        Uuid third = createT();
        produce("third", 5);
        commit("h", 150);
        int stopped = away;
        await("the controller's metadata log purged past node " + away + "'s end", 60, () -> {
            for (int id = 1; id <= 3; id++) {
                try {
                    if (id != stopped && cluster.broker(id).node().isController() && cluster.broker(id).node()
                            .metadataDivision().getRaftLog().getStartIndex() > awayEnd + 1) {
                        return true;
                    }
                } catch (IOException e) {
                    return false;
                }
            }
            return false;
        });
        cluster.start(away);
        awaitServes(away, third);
        for (Path directory : secondGroups) {
            await("the second topic's group directory on node " + away + " gone", 60, () -> !Files.exists(directory));
        }
        assertThat(cluster.broker(away).store().committedOffset("g", "t", 0)).isEmpty();

        // The broker back serves the topic: it leads t-0 once the others stop leading it.
        for (int attempt = 0; attempt < 6 && cluster.leaderOf("t") != away; attempt++) {
            int leader = cluster.leaderOf("t");
            cluster.stop(leader);
            cluster.leaderOf("t");
            cluster.start(leader);
        }
        assertThat(cluster.leaderOf("t")).isEqualTo(away);
        produce("more", 3);
        assertThat(cluster.readValues("t", 8)).containsExactly("third-0", "third-1", "third-2", "third-3", "third-4",
                "more-0", "more-1", "more-2");

        // Left in a broker's store as by deletions it never heard of (its metadata does not say they were deleted): a
        // topic the metadata does not name, and a topic named as one created while the broker was stopped, with
        // another id (whose groups the broker does not host). Both go once it has caught up, and it then hosts the
        // topic created meanwhile.
        int swept = 1;
        cluster.stop(swept);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("fresh", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        try (Store store = Store.open(cluster.directory(swept).resolve("store"), StoreConfig.builder()
                .writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build())) {
            store.createTopic("leftover", TopicLayout.BATCHES, 1, Map.of(), UUID.randomUUID());
            store.createTopic("fresh", TopicLayout.BATCHES, 1, Map.of(), UUID.randomUUID());
        }
        cluster.start(swept);
        Store back = cluster.broker(swept).store();
        await("the topic no metadata names goes", 60, () -> back.queueCount("leftover") == 0);
        await("fresh hosted with its id", 60, () -> {
            try {
                return cluster.replica(swept, "fresh").isLeader() || cluster.replica(swept, "fresh").leader().isPresent();
            } catch (IOException e) {
                return false;
            }
        });
        assertThat(back.topicId("fresh")).isEqualTo(uuid(freshId()));
    }

    /** @return the id of the topic fresh, as the cluster answers it */
    private Uuid freshId() throws Exception {
        try (Admin admin = admin()) {
            return admin.describeTopics(List.of("fresh")).allTopicNames().get(60, TimeUnit.SECONDS).get("fresh")
                    .topicId();
        }
    }
}
