package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.io.FileIO;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The producers a log shows: what each stored batch adds, and the same read back from a store. */
class ProducerHistoryTest {

    @TempDir
    Path dir;

    /** A batch of {@code records} records of producer {@code id}, its CRC sealed over the fields set. */
    private static byte[] batch(long id, short epoch, int sequence, int records) {
        List<byte[]> values = new java.util.ArrayList<>();
        for (int i = 0; i < records; i++) {
            values.add(new byte[] {(byte) i});
        }
        byte[] batch = KafkaBatch.of(1_700_000_000_000L, values);
        ByteBuffer.wrap(batch).putLong(KafkaBatch.PRODUCER_ID, id).putShort(KafkaBatch.PRODUCER_EPOCH, epoch)
                .putInt(KafkaBatch.BASE_SEQUENCE, sequence);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(batch, KafkaBatch.CRC_START, batch.length - KafkaBatch.CRC_START);
        ByteBuffer.wrap(batch).putInt(KafkaBatch.CRC, (int) crc.getValue());
        return batch;
    }

    @Test
    void eachProducerKeepsItsLastFiveBatchesOfItsNewestEpoch() {
        ProducerHistory history = new ProducerHistory();
        long offset = 0;
        for (int sequence = 0; sequence < 21; sequence += 3) {
            history.stored(MemorySegment.ofArray(batch(1, (short) 0, sequence, 3)), offset);
            offset += 3;
        }
        history.stored(MemorySegment.ofArray(KafkaBatch.of(0, List.of(new byte[1]))), offset++);
        ProducerHistory.Producer one = history.producers().get(1L);
        assertThat(one.epoch()).isZero();
        assertThat(one.recent()).extracting(ProducerHistory.Batch::firstSequence).containsExactly(6, 9, 12, 15, 18);
        assertThat(one.recent().getLast()).isEqualTo(new ProducerHistory.Batch(18, 20, 18));
        assertThat(history.size()).as("a batch with no producer id adds none").isOne();

        history.stored(MemorySegment.ofArray(batch(1, (short) 1, 0, 2)), offset);
        history.stored(MemorySegment.ofArray(batch(1, (short) 0, 21, 1)), offset + 2);
        one = history.producers().get(1L);
        assertThat(one.epoch()).as("a new epoch starts over").isEqualTo((short) 1);
        assertThat(one.recent()).as("an older epoch's batch is passed over")
                .containsExactly(new ProducerHistory.Batch(0, 1, offset));
    }

    @Test
    void theProducersAreACopyTheLogsLaterBatchesLeaveAlone() {
        ProducerHistory history = new ProducerHistory();
        history.stored(MemorySegment.ofArray(batch(5, (short) 0, 0, 1)), 0);
        Map<Long, ProducerHistory.Producer> before = history.producers();
        history.stored(MemorySegment.ofArray(batch(5, (short) 0, 1, 1)), 1);
        assertThat(before.get(5L).recent()).hasSize(1);
        assertThat(history.producers().get(5L).recent()).hasSize(2);
    }

    @Test
    void aSavedHistoryIsTakenBackWholeOnceAndADamagedOneNotAtAll() throws Exception {
        ProducerHistory history = new ProducerHistory();
        long offset = 0;
        for (int i = 0; i < 20; i++) {
            history.stored(MemorySegment.ofArray(batch(10 + i % 4, (short) (i % 4), i, 2)), offset);
            offset += 2;
        }
        Path file = dir.resolve("producers");
        history.save(FileIO.DEFAULT, file, offset);
        ProducerHistory.Saved taken = ProducerHistory.take(FileIO.DEFAULT, file);
        assertThat(taken.end()).isEqualTo(offset);
        assertThat(taken.history().producers()).isEqualTo(history.producers());
        assertThat(List.copyOf(taken.history().producers().keySet())).as("least recently seen first, as saved")
                .isEqualTo(List.copyOf(history.producers().keySet()));
        assertThat(java.nio.file.Files.exists(file)).as("taken once: the file goes").isFalse();
        assertThat(ProducerHistory.take(FileIO.DEFAULT, file)).isNull();

        history.save(FileIO.DEFAULT, file, offset);
        byte[] bytes = java.nio.file.Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 1;
        java.nio.file.Files.write(file, bytes);
        assertThat(ProducerHistory.take(FileIO.DEFAULT, file)).as("a damaged file is not taken").isNull();
        assertThat(java.nio.file.Files.exists(file)).isFalse();
    }

    @Test
    void theProducersReadBackFromAStoreAreThoseItsBatchesShow() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            ProducerHistory kept = new ProducerHistory();
            for (int i = 0; i < 30; i++) {
                byte[] batch = batch(100 + i % 3, (short) 0, (i / 3) * 2, 2);
                long base = store.appendKafkaBatch("t", 0, KafkaBatch.check(MemorySegment.ofArray(batch)),
                        Durability.FLUSH_MODE).join().firstQueueOffset();
                kept.stored(MemorySegment.ofArray(batch), base);
            }
            ProducerHistory read = ProducerHistory.readBack((offset, max, bytes) -> store.read("t", 0, offset, max,
                    bytes), store.minOffset("t", 0), store.maxOffset("t", 0));
            assertThat(read.producers()).isEqualTo(kept.producers());
            assertThat(ProducerHistory.readBack((offset, max, bytes) -> store.read("t", 0, offset, max, bytes), 0, 10)
                    .producers().get(100L).recent()).as("only the batches below the end asked for")
                    .extracting(ProducerHistory.Batch::baseOffset).containsExactly(0L, 6L);
        }
    }
}
