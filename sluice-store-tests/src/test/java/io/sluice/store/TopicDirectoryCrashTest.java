package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A crash while a store or a topic's own log directory was being created leaves a directory with nothing but
 * an unfinished creation (a {@code lock} file, a temporary {@code sluice.meta.tmp}): the store opens and the
 * topic works.
 */
class TopicDirectoryCrashTest {

    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().segmentSizeBytes(256 * 1024).maxMessageBytes(32 * 1024)
                .queueIndexEntriesPerFile(1024).keyIndexSlotsPerFile(256).keyIndexEntriesPerFile(4096).build();
    }

    /** What a crash during {@code StoreDirectory.open} of the topic's first append leaves. */
    private static void unfinishedLogDirectory(Path logDirectory, int tempBytes) throws IOException {
        Files.createDirectories(logDirectory);
        Files.createFile(logDirectory.resolve("lock"));
        if (tempBytes >= 0) {
            // A prefix of the identity file: magic "SLMD" (little-endian), version 1, then what was written.
            byte[] meta = new byte[tempBytes];
            byte[] prefix = {0x44, 0x4D, 0x4C, 0x53, 1, 0, 0, 0};
            System.arraycopy(prefix, 0, meta, 0, Math.min(prefix.length, tempBytes));
            Files.write(logDirectory.resolve("sluice.meta.tmp"), meta);
        }
    }

    /**
     * @param layout TOPIC or QUEUE
     * @param tempBytes bytes of {@code sluice.meta.tmp} left (-1: none, the crash came before it was created)
     */
    @ParameterizedTest(name = "{0} layout, sluice.meta.tmp of {1} bytes")
    @CsvSource({"TOPIC, 20", "TOPIC, 0", "QUEUE, 20", "QUEUE, 0", "TOPIC, -1", "QUEUE, -1"})
    void theStoreOpensAfterACrashWhileATopicLogDirectoryWasBeingCreated(TopicLayout layout, int tempBytes)
            throws IOException {
        Path root = dir.resolve("store");
        try (Store store = Store.open(root, config())) {
            store.createTopic("shared-topic", TopicLayout.SHARED);
            store.append("shared-topic", 0, Message.of(bytes("before"))).join();
            store.createTopic("t", layout);
        }
        Path logDirectory = root.resolve("logs").resolve("t");
        unfinishedLogDirectory(layout == TopicLayout.QUEUE ? logDirectory.resolve("0") : logDirectory, tempBytes);

        try (Store store = Store.open(root, config())) {
            assertThat(store.layout("t")).isEqualTo(layout);
            store.append("t", 0, Message.of(bytes("after the crash"))).join();
            assertThat(body(store, "t", 0)).isEqualTo("after the crash");
            assertThat(body(store, "shared-topic", 0)).isEqualTo("before");
        }
        try (Store store = Store.open(root, config())) {
            assertThat(body(store, "t", 0)).isEqualTo("after the crash");
        }
    }

    /** The same crash in the store's own directory, during the very first open of a new store. */
    @ParameterizedTest(name = "sluice.meta.tmp of {0} bytes")
    @CsvSource({"20", "0", "-1"})
    void aNewStoreOpensAfterACrashDuringItsFirstOpen(int tempBytes) throws IOException {
        Path root = dir.resolve("store");
        unfinishedLogDirectory(root, tempBytes);

        try (Store store = Store.open(root, config())) {
            store.append("t", 0, Message.of(bytes("first"))).join();
            assertThat(body(store, "t", 0)).isEqualTo("first");
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String body(Store store, String topic, long offset) {
        try (ReadResult result = store.read(topic, 0, offset, 1, 1 << 20)) {
            assertThat(result.messages()).as("%s-0 at offset %d: %s", topic, offset, result.status()).hasSize(1);
            return new String(result.messages().getFirst().bodyBytes(), StandardCharsets.UTF_8);
        }
    }
}
