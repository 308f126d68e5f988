package io.sluice.broker.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Partition;
import io.sluice.broker.ProducerHistory;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A broker alone keeps each partition's idempotent producers across a clean restart, and reads them back otherwise. */
class LocalProducersTest {

    @TempDir
    Path dir;

    /** A checked batch of two records of producer {@code id} (epoch 0), from {@code sequence} on. */
    static KafkaBatch batch(long id, int sequence) {
        byte[] batch = KafkaBatch.of(1_700_000_000_000L, List.of(new byte[] {1}, new byte[] {2}));
        ByteBuffer.wrap(batch).putLong(KafkaBatch.PRODUCER_ID, id).putShort(KafkaBatch.PRODUCER_EPOCH, (short) 0)
                .putInt(KafkaBatch.BASE_SEQUENCE, sequence);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(batch, KafkaBatch.CRC_START, batch.length - KafkaBatch.CRC_START);
        ByteBuffer.wrap(batch).putInt(KafkaBatch.CRC, (int) crc.getValue());
        return KafkaBatch.check(MemorySegment.ofArray(batch));
    }

    private static StoreConfig config() {
        return StoreConfig.builder().build();
    }

    /** Asks for the producers (as the Kafka layer does before a partition's first idempotent batch), then appends. */
    private static Map<Long, ProducerHistory.Producer> produce(LocalPartitions partitions, int from, int batches) {
        Partition partition = partitions.partition("t", 0);
        partition.producerHistory();
        for (int i = from; i < from + batches; i++) {
            partition.append(batch(1 + i % 3, (i / 3) * 2), Durability.ACKNOWLEDGED).stored().join();
        }
        return partition.producerHistory().producers();
    }

    @Test
    void aCleanRestartTakesTheProducersItsCloseKeptAndReadsNothingBack() throws Exception {
        Map<Long, ProducerHistory.Producer> before;
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalPartitions partitions = new LocalPartitions(store, 0);
            before = produce(partitions, 0, 12);
            assertThat(partitions.producerRebuilds()).as("the first ask reads the (empty) log back").isOne();
            partitions.close();
        }
        assertThat(dir.resolve(LocalPartitions.PRODUCERS_DIRECTORY).resolve("t-0")).exists();
        try (Store store = Store.open(dir, config())) {
            // A batch stored while the broker was down (by another program on the store) is added to them.
            long extra = store.appendKafkaBatch("t", 0, batch(2, 8), Durability.FLUSH_MODE).join().firstQueueOffset();
            LocalPartitions partitions = new LocalPartitions(store, 0);
            assertThat(dir.resolve(LocalPartitions.PRODUCERS_DIRECTORY).resolve("t-0")).as("taken at the start")
                    .doesNotExist();
            Map<Long, ProducerHistory.Producer> after = partitions.partition("t", 0).producerHistory().producers();
            assertThat(partitions.producerRebuilds()).as("producers read back after a clean close").isZero();
            assertThat(after.get(1L)).isEqualTo(before.get(1L));
            assertThat(after.get(3L)).isEqualTo(before.get(3L));
            assertThat(after.get(2L).recent().getLast()).isEqualTo(new ProducerHistory.Batch(8, 9, extra));
            assertThat(after.get(2L).recent().subList(0, 4)).isEqualTo(before.get(2L).recent());
        }
    }

    @Test
    void withoutACleanCloseTheProducersAreReadBackFromTheLog() throws Exception {
        Map<Long, ProducerHistory.Producer> before;
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            before = produce(new LocalPartitions(store, 0), 0, 9);
            // No close of the partitions: as after a crash, nothing is kept.
        }
        try (Store store = Store.open(dir, config())) {
            LocalPartitions partitions = new LocalPartitions(store, 0);
            assertThat(partitions.partition("t", 0).producerHistory().producers()).isEqualTo(before);
            assertThat(partitions.producerRebuilds()).isOne();
        }
    }

    @Test
    void aTopicDeletedAfterTheStartLeavesNoProducersForItsNamesake() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalPartitions partitions = new LocalPartitions(store, 0);
            produce(partitions, 0, 6);
            partitions.close();
        }
        try (Store store = Store.open(dir, config())) {
            LocalPartitions partitions = new LocalPartitions(store, 0);
            store.deleteTopic("t");
            partitions.changed("t", -1);
            store.createTopic("t", TopicLayout.BATCHES, 1);
            assertThat(partitions.partition("t", 0).producerHistory().producers()).as("the new topic's").isEmpty();
            assertThat(Files.exists(dir.resolve(LocalPartitions.PRODUCERS_DIRECTORY).resolve("t-0"))).isFalse();
        }
    }
}
