package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Message;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The reading commands ({@code consume}, {@code stat}, {@code lookup}, {@code verify}) create, delete and change
 * no file of the store: no recovery, no checkpoint, no clean-shutdown marker, no retention. Commands that do open
 * a store for writing ({@code retention}, {@code produce}, {@code consume --group}) keep the store's own segment
 * size and retention unless told otherwise.
 *
 * <p>{@code consume} is run without {@code --group} throughout: registering a group position is a write the
 * user asks for.
 */
class ReadOnlyCommandsTest {

    /** Store timestamps of the store's messages: long before the default retention of 72 hours. */
    private static final Instant LONG_AGO = Instant.parse("2020-01-01T00:00:00Z");
    private static final int MESSAGES = 300;
    private static final String FIRST_SEGMENT = "log/00000000000000000000";

    @TempDir
    Path dir;

    /**
     * The owner's settings: 64 KiB segments, messages kept forever, and a clock in the past (as if the
     * messages had been written years ago).
     */
    private static StoreConfig ownersConfig() {
        return StoreConfig.builder().segmentSizeBytes(64 * 1024).maxMessageBytes(16 * 1024)
                .queueIndexEntriesPerFile(1024).keyIndexSlotsPerFile(256).keyIndexEntriesPerFile(4096)
                .retention(RetentionPolicy.defaults().withRetentionMillis(Long.MAX_VALUE))
                .clock(InstantSource.fixed(LONG_AGO)).build();
    }

    private static byte[] body(int i) {
        StringBuilder text = new StringBuilder("message-" + i + "-");
        while (text.length() < 500) {
            text.append('x');
        }
        return text.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** Creates the store (three-odd segments of keyed messages, stamped in 2020) and closes it cleanly. */
    private Path createStore() {
        Path store = dir.resolve("store");
        try (Store s = Store.open(store, ownersConfig())) {
            for (int i = 0; i < MESSAGES; i++) {
                s.append("t", 0, Message.builder().keys("key-" + (i % 10)).body(body(i)).build()).join();
            }
        }
        assertThat(store.resolve("log/00000000000000131072")).as("the store spans several segments").exists();
        return store;
    }

    private static String[] command(String name, Path store) {
        String path = store.toString();
        return switch (name) {
            case "consume" -> new String[] {"consume", "--dir", path, "--topic", "t", "--queue", "0"};
            case "consume-json" -> new String[] {"consume", "--dir", path, "--topic", "t", "--queue", "0", "--json"};
            case "stat" -> new String[] {"stat", "--dir", path};
            case "stat-json" -> new String[] {"stat", "--dir", path, "--json"};
            case "lookup" -> new String[] {"lookup", "--dir", path, "--topic", "t", "--key", "key-3"};
            case "verify" -> new String[] {"verify", "--dir", path};
            default -> throw new IllegalArgumentException(name);
        };
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"consume", "consume-json", "stat", "stat-json", "lookup", "verify"})
    void aReadingCommandLeavesACleanlyClosedStoreExactlyAsItWas(String name) {
        Path store = createStore();
        Map<String, String> before = CliRun.fingerprint(store);

        CliRun run = CliRun.run("", command(name, store));

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(CliRun.fingerprint(store)).as("files of the store after '%s'", name)
                .containsExactlyInAnyOrderEntriesOf(before);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"consume", "stat", "lookup", "verify"})
    void aReadingCommandDoesNotRecoverACrashedStore(String name) throws IOException {
        Path store = createStore();
        Files.delete(store.resolve("clean-shutdown"));
        Map<String, String> before = CliRun.fingerprint(store);

        CliRun run = CliRun.run("", command(name, store));

        assertThat(CliRun.fingerprint(store)).as("files of the crashed store after '%s' (exit %d, stderr: %s)", name,
                run.exit(), run.err()).containsExactlyInAnyOrderEntriesOf(before);
    }

    @Test
    void consumeDoesNotCutATornTailOffACrashedStore() throws IOException {
        Path store = dir.resolve("store");
        TornTail.create(store, ownersConfig(), MESSAGES, i -> Message.builder().keys("key-" + (i % 10))
                .body(body(i)).build());
        Map<String, String> before = CliRun.fingerprint(store);

        CliRun run = CliRun.run("", command("consume", store));

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(CliRun.fingerprint(store)).as("files of the torn store after consume")
                .containsExactlyInAnyOrderEntriesOf(before);
        assertThat(run.out().lines()).as("the messages below the durable position").hasSize(MESSAGES - 1);
    }

    /**
     * A writable open with the command line's defaults (72-hour retention) must not apply them to a store whose
     * owner keeps messages forever: the store's own retention holds, so a retention pass deletes nothing.
     */
    @Test
    void aRetentionPassKeepsTheStoresOwnRetention() {
        Path store = createStore();
        Map<String, String> segments = logFiles(store);

        CliRun run = CliRun.run("", "retention", "--dir", store.toString());

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(logFiles(store).keySet()).containsAll(segments.keySet());
        try (Store reopened = Store.open(store, ownersConfig())) {
            assertThat(reopened.minOffset("t", 0)).isZero();
        }
    }

    /** Given on the command line, a retention replaces the store's: the old segments go. */
    @Test
    void aRetentionGivenOnTheCommandLineReplacesTheStores() {
        Path store = createStore();

        CliRun run = CliRun.run("", "retention", "--dir", store.toString(), "--retention-hours", "1");

        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(store.resolve(FIRST_SEGMENT)).doesNotExist();
        CliRun again = CliRun.run("", "retention", "--dir", store.toString());
        assertThat(again.exit()).as(again.err()).isZero();
        try (Store reopened = Store.open(store, StoreConfig.defaults())) {
            assertThat(reopened.config().retention().retentionMillis()).as("the saved retention")
                    .isEqualTo(3_600_000L);
        }
    }

    private static Map<String, String> logFiles(Path store) {
        Map<String, String> files = new java.util.TreeMap<>(CliRun.fingerprint(store));
        files.keySet().removeIf(name -> !name.startsWith("log/"));
        return files;
    }
}
