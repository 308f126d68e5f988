package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Topics created with a declared queue count (Kafka's partition count): recorded durably, enforced on append. */
@ExtendWith(NoLeaks.class)
class DeclaredQueuesTest {

    @TempDir
    Path dir;

    private StoreConfig config() {
        return TestStores.small(WritePath.MMAP, FlushMode.SYNC).maxQueuesPerTopic(64).build();
    }

    /** A message, or in a BATCHES topic (which takes record batches only) a batch of one record. */
    private static java.util.concurrent.CompletableFuture<AppendResult> appendOne(Store store, TopicLayout layout,
                                                                                  int queue) {
        return layout == TopicLayout.BATCHES
                ? store.appendOpaque("orders", queue, java.lang.foreign.MemorySegment.ofArray(
                        KafkaBatch.of(0, java.util.List.of(new byte[10]))), 1)
                : store.append("orders", queue, Message.of(new byte[10]));
    }

    @ParameterizedTest
    @EnumSource(TopicLayout.class)
    void aDeclaredCountBoundsAppendsAndSurvivesReopening(TopicLayout layout) throws Exception {
        try (Store store = Store.open(dir, config())) {
            assertThat(store.createTopic("orders", layout, 3)).isTrue();
            assertThat(store.createTopic("orders", layout, 5)).as("a second creation changes nothing").isFalse();
            assertThat(store.queueCount("orders")).isEqualTo(3);
            appendOne(store, layout, 2).join();
            assertThatThrownBy(() -> appendOne(store, layout, 3))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 3 queues");
            assertThat(store.queueCount("elsewhere")).isZero();
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.queueCount("orders")).isEqualTo(3);
            assertThat(store.layout("orders")).isEqualTo(layout);
            assertThat(store.declaredTopics()).isEqualTo(Map.of("orders", 3));
            assertThat(store.maxOffset("orders", 2)).isEqualTo(1);
        }
    }

    @Test
    void countsOnlyGrow() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.QUEUE, 2);
            store.increaseQueueCount("t", 4);
            assertThat(store.queueCount("t")).isEqualTo(4);
            store.append("t", 3, Message.of(new byte[10])).join();
            assertThatThrownBy(() -> store.increaseQueueCount("t", 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("must be larger");
            assertThatThrownBy(() -> store.increaseQueueCount("never", 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not created with a queue count");
            assertThatThrownBy(() -> store.increaseQueueCount("t", 65)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("maxQueuesPerTopic");
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.queueCount("t")).isEqualTo(4);
        }
    }

    @Test
    void aCountBelowAQueueThatHoldsMessagesIsRefused() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.append("old", 5, Message.of(new byte[10])).join();
            assertThatThrownBy(() -> store.createTopic("old", TopicLayout.SHARED, 5))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("queue 5");
            assertThatThrownBy(() -> store.createTopic("old", TopicLayout.QUEUE, 8))
                    .as("a topic with messages in the shared log keeps its layout")
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("SHARED");
            assertThat(store.createTopic("old", TopicLayout.SHARED, 6)).isTrue();
            assertThat(store.queueCount("old")).isEqualTo(6);
            assertThatThrownBy(() -> store.createTopic("x", TopicLayout.SHARED, 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("between 1 and");
        }
    }

    @Test
    void aTopicCreatedWithoutACountCanBeGivenOneLater() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("mine", TopicLayout.TOPIC);
            assertThat(store.queueCount("mine")).isZero();
            assertThat(store.createTopic("mine", TopicLayout.TOPIC, 2)).isTrue();
            store.createTopic("other", TopicLayout.TOPIC);
            assertThatThrownBy(() -> store.createTopic("other", TopicLayout.QUEUE, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("layout TOPIC");
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.layout("mine")).isEqualTo(TopicLayout.TOPIC);
            assertThat(store.queueCount("mine")).isEqualTo(2);
        }
    }

    /** A registry written before queue counts existed (version 1) still opens: its topics have no declared count. */
    @Test
    void aVersionOneRegistryStillOpens() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.append("warm", 0, Message.of(new byte[10])).join();
        }
        byte[] name = "legacy".getBytes(StandardCharsets.US_ASCII);
        ByteBuffer file = ByteBuffer.allocate(12 + 2 + name.length + 1 + 4).order(ByteOrder.LITTLE_ENDIAN);
        file.putInt(0x534C5450).putShort((short) 1).putShort((short) 0).putInt(1)
                .putShort((short) name.length).put(name).put((byte) 2);
        CRC32C crc = new CRC32C();
        crc.update(file.array(), 0, file.position());
        file.putInt((int) crc.getValue());
        Files.write(dir.resolve("topics"), file.array());
        try (Store store = Store.open(dir, config())) {
            assertThat(store.layout("legacy")).isEqualTo(TopicLayout.QUEUE);
            assertThat(store.queueCount("legacy")).isZero();
            store.append("legacy", 9, Message.of(new byte[10])).join();
        }
    }
}
