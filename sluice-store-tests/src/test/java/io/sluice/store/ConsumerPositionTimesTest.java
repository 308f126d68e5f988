package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each consumer position carries when it was last committed, kept across a reopen, and a group none of whose
 * positions was committed since a cutoff can be forgotten in one step.
 */
@ExtendWith(NoLeaks.class)
class ConsumerPositionTimesTest {

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    private StoreConfig config() {
        return TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC).clock(clock).build();
    }

    @Test
    void commitTimesAreKeptAcrossAReopenAndAnIdleGroupIsForgotten() throws Exception {
        long first = now.get();
        try (Store store = Store.open(dir, config())) {
            store.commitOffset("old", "t", 0, 5);
            store.commitOffset("busy", "t", 0, 1);
            now.addAndGet(10_000);
            store.commitOffset("busy", "t", 1, 2);
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.consumerPositions()).extracting(ConsumerPosition::group, ConsumerPosition::queueId,
                    ConsumerPosition::committedMillis).containsExactly(
                            org.assertj.core.groups.Tuple.tuple("busy", 0, first),
                            org.assertj.core.groups.Tuple.tuple("busy", 1, first + 10_000),
                            org.assertj.core.groups.Tuple.tuple("old", 0, first));
            assertThat(store.removeConsumerGroupIfIdle("old", first)).as("committed at the cutoff").isFalse();
            assertThat(store.removeConsumerGroupIfIdle("busy", first + 1)).as("one position is newer").isFalse();
            assertThat(store.removeConsumerGroupIfIdle("old", first + 1)).isTrue();
            assertThat(store.removeConsumerGroupIfIdle("never", first + 1)).isFalse();
            assertThat(store.committedOffset("old", "t", 0)).isEmpty();
            assertThat(store.committedOffset("busy", "t", 0)).hasValue(1);
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.consumerPositions()).extracting(ConsumerPosition::group).containsExactly("busy", "busy");
        }
    }

    /**
     * A commit of the same offset refreshes its time; the new time is saved once it is a minute past the saved one,
     * however often the offset is committed in between (auto-commit every 5 s), not at every commit.
     */
    @Test
    void recommittingAnOffsetRefreshesItsTime() throws Exception {
        long first = now.get();
        try (Store store = Store.open(dir, config())) {
            store.commitOffset("g", "t", 0, 5);
        }
        try (Store store = Store.open(dir, config())) {
            for (int i = 0; i < 16; i++) {
                now.addAndGet(5_000);
                store.commitOffset("g", "t", 0, 5);
            }
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.consumerPositions().getFirst().committedMillis()).isEqualTo(first + 80_000);
        }
    }

    /** A positions file written without commit times reads as committed when the store opened. */
    @Test
    void positionsSavedWithoutTimesCountAsCommittedAtOpen() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.commitOffset("g", "t", 0, 1);
        }
        byte[] group = "g".getBytes(StandardCharsets.US_ASCII);
        byte[] topic = "t".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer file = ByteBuffer.allocate(12 + 2 + group.length + 2 + topic.length + 4 + 8 + 4)
                .order(ByteOrder.LITTLE_ENDIAN);
        file.putInt(0x534C434F).putShort((short) 1).putShort((short) 0).putInt(1);
        file.putShort((short) group.length).put(group).putShort((short) topic.length).put(topic).putInt(3).putLong(42);
        CRC32C crc = new CRC32C();
        crc.update(file.array(), 0, file.position());
        file.putInt((int) crc.getValue());
        Files.write(dir.resolve("consumers"), file.array());
        now.addAndGet(3_600_000);
        try (Store store = Store.open(dir, config())) {
            assertThat(store.consumerPositions()).singleElement().satisfies(position -> {
                assertThat(position.queueId()).isEqualTo(3);
                assertThat(position.nextOffset()).isEqualTo(42);
                assertThat(position.committedMillis()).isEqualTo(now.get());
            });
        }
        long opened = now.get();
        now.addAndGet(3_600_000);
        try (Store store = Store.open(dir, config())) {
            assertThat(store.consumerPositions().getFirst().committedMillis())
                    .as("rewritten with its time at the first open").isEqualTo(opened);
        }
    }
}
