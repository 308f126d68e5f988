package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Topic ids kept in the topic registry: given at creation or once later (a store from before ids), kept across
 * reopens and every later change of the topic, refused for a second topic, and forgotten with the topic.
 */
@ExtendWith(NoLeaks.class)
class TopicIdsTest {

    private static final UUID FIRST = new UUID(0x0123_4567_89AB_CDEFL, 0x1122_3344_5566_7788L);
    private static final UUID SECOND = new UUID(-2L, 42L);

    @TempDir
    Path dir;

    private Store open() {
        return Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build());
    }

    @Test
    void aTopicCreatedWithAnIdKeepsItAcrossChangesAndReopens() {
        try (Store store = open()) {
            assertThat(store.createTopic("orders", TopicLayout.BATCHES, 2, Map.of("retention.ms", "1000"), FIRST))
                    .isTrue();
            store.increaseQueueCount("orders", 3);
            store.setTopicConfigs("orders", Map.of("retention.ms", "2000"));
            assertThat(store.topicId("orders")).isEqualTo(FIRST);
            assertThat(store.topicWithId(FIRST)).isEqualTo("orders");
            // A second creation changes nothing, the id included.
            assertThat(store.createTopic("orders", TopicLayout.BATCHES, 5, Map.of(), SECOND)).isFalse();
        }
        try (Store store = open()) {
            assertThat(store.topicId("orders")).isEqualTo(FIRST);
            assertThat(store.topicWithId(FIRST)).isEqualTo("orders");
            assertThat(store.queueCount("orders")).isEqualTo(3);
            assertThat(store.topicConfigs("orders")).containsEntry("retention.ms", "2000");
            assertThat(store.topicIds()).containsExactly(Map.entry("orders", FIRST));
        }
    }

    @Test
    void anIdIsNeverZeroNorAnotherTopics() {
        try (Store store = open()) {
            store.createTopic("a", TopicLayout.BATCHES, 1, Map.of(), FIRST);
            assertThatThrownBy(() -> store.createTopic("b", TopicLayout.BATCHES, 1, Map.of(), FIRST))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topic a's");
            assertThatThrownBy(() -> store.createTopic("b", TopicLayout.BATCHES, 1, Map.of(), new UUID(0, 0)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("zero");
            assertThat(store.queueCount("b")).isZero();
            store.createTopic("b", TopicLayout.BATCHES, 1);
            assertThatThrownBy(() -> store.setTopicIds(Map.of("b", FIRST)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> store.setTopicIds(Map.of("a", SECOND)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already");
            assertThatThrownBy(() -> store.setTopicIds(Map.of("undeclared", SECOND)))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(store.topicId("b")).isNull();
            assertThat(store.topicWithId(SECOND)).isNull();
        }
    }

    @Test
    void aTopicWithoutAnIdGetsOneOnceAndKeepsIt() {
        try (Store store = open()) {
            store.createTopic("plain", TopicLayout.BATCHES, 2);
            store.createTopic("other", TopicLayout.QUEUE, 1);
            assertThat(store.topicId("plain")).isNull();
            store.setTopicIds(Map.of("plain", FIRST, "other", SECOND));
            // The same ids again change nothing.
            store.setTopicIds(Map.of("plain", FIRST));
        }
        try (Store store = open()) {
            assertThat(store.topicId("plain")).isEqualTo(FIRST);
            assertThat(store.topicId("other")).isEqualTo(SECOND);
            assertThat(store.topicWithId(SECOND)).isEqualTo("other");
        }
    }

    @Test
    void aDeletedTopicTakesItsIdAlongAndANewOneOfTheNameHasItsOwn() {
        try (Store store = open()) {
            store.createTopic("gone", TopicLayout.BATCHES, 1, Map.of(), FIRST);
            assertThat(store.deleteTopic("gone")).isTrue();
            assertThat(store.topicId("gone")).isNull();
            assertThat(store.topicWithId(FIRST)).isNull();
            store.createTopic("gone", TopicLayout.BATCHES, 1, Map.of(), SECOND);
        }
        try (Store store = open()) {
            assertThat(store.topicId("gone")).isEqualTo(SECOND);
            assertThat(store.topicWithId(FIRST)).isNull();
        }
    }

    @Test
    void aRegistryFromBeforeIdsIsReadAsTopicsWithoutOneAndWrittenAnewWithThem() throws Exception {
        try (Store store = open()) {
            store.createTopic("seed", TopicLayout.TOPIC);
        }
        // Version 3, as written before ids: one BATCHES topic of two queues with a config.
        byte[] topic = "old".getBytes(StandardCharsets.US_ASCII);
        byte[] name = "cleanup.policy".getBytes(StandardCharsets.UTF_8);
        byte[] value = "compact".getBytes(StandardCharsets.UTF_8);
        ByteBuffer file = ByteBuffer.allocate(12 + 2 + topic.length + 1 + 4 + 2 + 2 + name.length + 4 + value.length
                + 4).order(ByteOrder.LITTLE_ENDIAN);
        file.putInt(0x534C5450).putShort((short) 3).putShort((short) 0).putInt(1);
        file.putShort((short) topic.length).put(topic).put((byte) 3).putInt(2).putShort((short) 1);
        file.putShort((short) name.length).put(name).putInt(value.length).put(value);
        CRC32C crc = new CRC32C();
        crc.update(file.array(), 0, file.position());
        file.putInt((int) crc.getValue());
        Path registry = dir.resolve("topics");
        Files.write(registry, file.array());

        try (Store store = open()) {
            assertThat(store.queueCount("old")).isEqualTo(2);
            assertThat(store.topicConfigs("old")).containsEntry("cleanup.policy", "compact");
            assertThat(store.topicId("old")).isNull();
            assertThat(store.topicIds()).isEmpty();
            store.setTopicIds(Map.of("old", FIRST));
        }
        byte[] written = Files.readAllBytes(registry);
        assertThat(ByteBuffer.wrap(written).order(ByteOrder.LITTLE_ENDIAN).getShort(4)).isEqualTo((short) 4);
        try (Store store = open()) {
            assertThat(store.topicId("old")).isEqualTo(FIRST);
            assertThat(store.queueCount("old")).isEqualTo(2);
            assertThat(store.topicConfigs("old")).containsEntry("cleanup.policy", "compact");
        }
    }
}
