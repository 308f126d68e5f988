package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A topic's configs: kept durably with the topic in the registry, replaced as a whole, and read by retention
 * ({@code retention.ms}, {@code retention.bytes}, {@code cleanup.policy}) for the topic's own logs only.
 */
@ExtendWith(NoLeaks.class)
class TopicConfigsTest {

    private static final long HOUR = TimeUnit.HOURS.toMillis(1);

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    private StoreConfig config() {
        FaultyFileIO io = new FaultyFileIO();
        io.reportDiskUse(0.10);
        return TestStores.small(WritePath.MMAP, FlushMode.SYNC).clock(clock).fileIO(io).maxQueuesPerTopic(8)
                .retention(RetentionPolicy.defaults().withRetentionHours(72).withCheckIntervalMillis(3_600_000))
                .build();
    }

    private static void fill(Store store, String topic, int count) {
        for (int i = 0; i < count; i++) {
            store.append(topic, 0, Message.of(new byte[1000])).join();
        }
    }

    @Test
    void configsAreKeptWithTheTopicAcrossReopeningAndReplacedWhole() throws Exception {
        try (Store store = Store.open(dir, config())) {
            assertThat(store.createTopic("orders", TopicLayout.QUEUE, 2,
                    Map.of("retention.ms", "1000", "max.message.bytes", "2000000", "note", "ünïcode value"))).isTrue();
            assertThat(store.createTopic("orders", TopicLayout.QUEUE, 2, Map.of("retention.ms", "5")))
                    .as("a second creation changes nothing").isFalse();
            store.createTopic("plain", TopicLayout.QUEUE, 1);
            store.increaseQueueCount("orders", 3);
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.topicConfigs("orders")).containsExactly(Map.entry("max.message.bytes", "2000000"),
                    Map.entry("note", "ünïcode value"), Map.entry("retention.ms", "1000"));
            assertThat(store.queueCount("orders")).as("growing keeps the configs").isEqualTo(3);
            assertThat(store.topicConfigs("plain")).isEmpty();
            assertThat(store.topicConfigs("unknown")).isEmpty();
            store.setTopicConfigs("orders", Map.of("cleanup.policy", "compact"));
            assertThat(store.topicConfigs("orders")).containsExactly(Map.entry("cleanup.policy", "compact"));
            assertThatThrownBy(() -> store.setTopicConfigs("unknown", Map.of("a", "b")))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("queue count");
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.topicConfigs("orders")).containsExactly(Map.entry("cleanup.policy", "compact"));
            store.deleteTopic("orders");
            store.createTopic("orders", TopicLayout.QUEUE, 1);
            assertThat(store.topicConfigs("orders")).as("a topic created again starts without").isEmpty();
        }
    }

    /** A registry written before configs existed (version 2) still opens: its topics have none. */
    @Test
    void aVersionTwoRegistryStillOpens() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.append("warm", 0, Message.of(new byte[10])).join();
        }
        byte[] name = "legacy".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer file = ByteBuffer.allocate(12 + 2 + name.length + 1 + 4 + 4).order(ByteOrder.LITTLE_ENDIAN);
        file.putInt(0x534C5450).putShort((short) 2).putShort((short) 0).putInt(1)
                .putShort((short) name.length).put(name).put((byte) 2).putInt(4);
        CRC32C crc = new CRC32C();
        crc.update(file.array(), 0, file.position());
        file.putInt((int) crc.getValue());
        Files.write(dir.resolve("topics"), file.array());
        try (Store store = Store.open(dir, config())) {
            assertThat(store.queueCount("legacy")).isEqualTo(4);
            assertThat(store.topicConfigs("legacy")).isEmpty();
            store.setTopicConfigs("legacy", Map.of("retention.ms", "1"));
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.topicConfigs("legacy")).containsExactly(Map.entry("retention.ms", "1"));
        }
    }

    @Test
    void retentionReadsEachTopicsOwnLimits() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("short", TopicLayout.QUEUE, 1, Map.of("retention.ms", String.valueOf(HOUR)));
            store.createTopic("store-default", TopicLayout.QUEUE, 1);
            store.createTopic("compacted", TopicLayout.QUEUE, 1,
                    Map.of("cleanup.policy", "compact", "retention.ms", "1"));
            store.createTopic("forever", TopicLayout.QUEUE, 1, Map.of("retention.ms", "-1"));
            store.createTopic("small", TopicLayout.QUEUE, 1, Map.of("retention.bytes", String.valueOf(300 * 1024)));
            store.createTopic("unreadable", TopicLayout.QUEUE, 1, Map.of("retention.ms", "soon"));
            for (String topic : new String[] {"short", "store-default", "compacted", "forever", "small", "unreadable"}) {
                fill(store, topic, 1000); // about four 256 KiB segments each
            }
            now.addAndGet(2 * HOUR);
            for (String topic : new String[] {"short", "store-default", "compacted", "forever", "unreadable"}) {
                fill(store, topic, 1); // a young record past the old segments
            }

            store.enforceRetention();

            assertThat(store.minOffset("short", 0)).as("an hour's retention, two hours on").isGreaterThan(0);
            assertThat(store.minOffset("small", 0)).as("kept under its retention.bytes").isGreaterThan(0);
            assertThat(store.minOffset("store-default", 0)).as("the store's 72 hours").isZero();
            assertThat(store.minOffset("compacted", 0)).as("cleanup.policy without delete").isZero();
            assertThat(store.minOffset("forever", 0)).as("retention.ms -1").isZero();
            assertThat(store.minOffset("unreadable", 0)).as("an unreadable value leaves the store's").isZero();

            store.setTopicConfigs("compacted", Map.of("cleanup.policy", "compact,delete", "retention.ms", "1"));
            store.enforceRetention();
            assertThat(store.minOffset("compacted", 0)).as("compact,delete deletes by age").isGreaterThan(0);
        }
    }
}
