package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checked Kafka record batch: its checks in Kafka's order, its fields, and the store's append of one. */
class KafkaBatchTest {

    @TempDir
    Path dir;

    private static byte[] batch(int records) {
        List<byte[]> values = new java.util.ArrayList<>();
        for (int i = 0; i < records; i++) {
            values.add(("v" + i).getBytes(StandardCharsets.UTF_8));
        }
        return KafkaBatch.of(1_700_000_000_000L, values);
    }

    /** Rewrites the CRC over the bytes it covers, as a producer would after changing them. */
    private static void reseal(byte[] bytes) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes, KafkaBatch.CRC_START, bytes.length - KafkaBatch.CRC_START);
        ByteBuffer.wrap(bytes).putInt(KafkaBatch.CRC, (int) crc.getValue());
    }

    @Test
    void aWellFormedBatchIsCheckedOnceAndShowsItsFields() {
        byte[] bytes = batch(3);
        ByteBuffer.wrap(bytes).putLong(KafkaBatch.PRODUCER_ID, 42).putShort(KafkaBatch.PRODUCER_EPOCH, (short) 7)
                .putInt(KafkaBatch.BASE_SEQUENCE, Integer.MAX_VALUE - 1);
        reseal(bytes);
        KafkaBatch checked = KafkaBatch.check(MemorySegment.ofArray(bytes));
        assertThat(checked.offsetCount()).isEqualTo(3);
        assertThat(checked.size()).isEqualTo(bytes.length);
        assertThat(checked.producerId()).isEqualTo(42);
        assertThat(checked.producerEpoch()).isEqualTo((short) 7);
        assertThat(checked.baseSequence()).isEqualTo(Integer.MAX_VALUE - 1);
        assertThat(checked.lastSequence()).as("sequences wrap past Integer.MAX_VALUE to 0").isZero();
        assertThat(checked.maxTimestamp()).isEqualTo(1_700_000_000_000L);
    }

    @Test
    void aBatchWithNoSequenceHasNoLastSequence() {
        // KafkaBatch.of writes baseSequence -1: no producer.
        KafkaBatch checked = KafkaBatch.check(MemorySegment.ofArray(batch(4)));
        assertThat(checked.producerId()).isEqualTo(-1);
        assertThat(checked.lastSequence()).isEqualTo(-1);
    }

    @Test
    void theCrcIsCheckedBeforeTheFieldsItCoversAndAfterTheFrame() {
        byte[] badOffsetsAndCrc = batch(2);
        ByteBuffer.wrap(badOffsetsAndCrc).putInt(KafkaBatch.LAST_OFFSET_DELTA, -5);
        assertThatThrownBy(() -> KafkaBatch.check(MemorySegment.ofArray(badOffsetsAndCrc)))
                .isInstanceOfSatisfying(KafkaBatch.InvalidBatchException.class,
                        e -> assertThat(e.checksum()).as("a CRC fault, found first").isTrue());

        reseal(badOffsetsAndCrc);
        assertThatThrownBy(() -> KafkaBatch.check(MemorySegment.ofArray(badOffsetsAndCrc)))
                .isInstanceOfSatisfying(KafkaBatch.InvalidBatchException.class,
                        e -> assertThat(e.checksum()).as("the offsets, once the CRC matches").isFalse())
                .hasMessageContaining("lastOffsetDelta (-5)");

        byte[] badMagic = batch(1);
        badMagic[KafkaBatch.MAGIC] = 1;
        assertThatThrownBy(() -> KafkaBatch.check(MemorySegment.ofArray(badMagic)))
                .isInstanceOfSatisfying(KafkaBatch.InvalidBatchException.class,
                        e -> assertThat(e.checksum()).isFalse())
                .hasMessageContaining("magic is 1");

        assertThatThrownBy(() -> KafkaBatch.check(MemorySegment.ofArray(new byte[KafkaBatch.HEADER_BYTES - 1])))
                .hasMessageContaining("shorter than a record batch header");
        assertThat(KafkaBatch.problem(MemorySegment.ofArray(batch(1)))).isNull();
    }

    @Test
    void theLeaderEpochIsSetOutsideTheCrcAndACopyIsItsOwn() {
        byte[] bytes = batch(2);
        KafkaBatch checked = KafkaBatch.check(MemorySegment.ofArray(bytes));
        KafkaBatch copy = checked.copy();
        copy.setPartitionLeaderEpoch(9);
        assertThat(ByteBuffer.wrap(bytes).getInt(KafkaBatch.PARTITION_LEADER_EPOCH)).as("the original's epoch")
                .isZero();
        assertThat(copy.buffer().getInt(KafkaBatch.PARTITION_LEADER_EPOCH)).isEqualTo(9);
        assertThat(KafkaBatch.problem(copy.bytes())).as("still a valid batch").isNull();
        assertThat(copy.offsetCount()).isEqualTo(2);
    }

    @Test
    void eachDurabilityForcesWhereItsModeAndWritePathNeedIt() {
        for (WritePath path : WritePath.values()) {
            StoreConfig sync = StoreConfig.builder().writePath(path).flushMode(FlushMode.SYNC).build();
            StoreConfig async = StoreConfig.builder().writePath(path).flushMode(FlushMode.ASYNC).build();
            for (Durability durability : Durability.values()) {
                assertThat(durability.forces(sync)).as(durability + " under SYNC on " + path).isTrue();
            }
            assertThat(Durability.FLUSH_MODE.forces(async)).as("FLUSH_MODE under ASYNC on " + path).isFalse();
            assertThat(Durability.FORCED.forces(async)).as("FORCED under ASYNC on " + path).isTrue();
            assertThat(Durability.ACKNOWLEDGED.forces(async)).as("ACKNOWLEDGED under ASYNC on " + path)
                    .isEqualTo(path.buffered());
        }
    }

    @Test
    void aCheckedBatchGoesIntoABatchesTopicAtItsOffsetsAndReadsBackAsSent() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            byte[] first = batch(3);
            byte[] second = batch(2);
            assertThat(store.appendKafkaBatch("t", 0, KafkaBatch.check(MemorySegment.ofArray(first)),
                    Durability.ACKNOWLEDGED).join().firstQueueOffset()).isZero();
            assertThat(store.appendKafkaBatch("t", 0, KafkaBatch.check(MemorySegment.ofArray(second)),
                    Durability.FORCED).join().firstQueueOffset()).isEqualTo(3);
            try (ReadResult read = store.read("t", 0, 3, 10, 1 << 20)) {
                byte[] stored = read.messages().getFirst().bodyBytes();
                assertThat(ByteBuffer.wrap(stored).getLong(KafkaBatch.BASE_OFFSET)).isEqualTo(3);
                assertThat(java.util.Arrays.copyOfRange(stored, 8, stored.length))
                        .isEqualTo(java.util.Arrays.copyOfRange(second, 8, second.length));
            }
            assertThat(store.appendKafkaBatch("never", 0, KafkaBatch.check(MemorySegment.ofArray(batch(1))),
                    Durability.FLUSH_MODE)).as("a topic not created").isCompletedExceptionally();
        }
    }
}
