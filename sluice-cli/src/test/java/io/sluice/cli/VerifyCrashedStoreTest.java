package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code sluice verify} on a store that crashed and was not reopened yet: index entries past the log's valid end
 * (entries for records torn off the tail, which opening the store drops as it cuts the torn tail) are notes on
 * what opening will repair, not faults; exit 0. Only damage opening cannot repair is a FAULT.
 */
class VerifyCrashedStoreTest {

    private static final int SEGMENT_BYTES = 64 * 1024;
    private static final int MESSAGES = 50;

    @TempDir
    Path dir;

    private static StoreConfig config(FlushMode mode) {
        return StoreConfig.builder().flushMode(mode).segmentSizeBytes(SEGMENT_BYTES).maxMessageBytes(16 * 1024)
                .queueIndexEntriesPerFile(1024).keyIndexSlotsPerFile(256).keyIndexEntriesPerFile(4096).build();
    }

    private Path crashedStoreWithATornTail(FlushMode mode) throws IOException {
        Path store = dir.resolve("store");
        TornTail.create(store, config(mode), MESSAGES, i -> Message.builder().keys("key-" + i)
                .body(("message " + i).getBytes(StandardCharsets.UTF_8)).build());
        return store;
    }

    @ParameterizedTest
    @EnumSource(FlushMode.class)
    void verifyReportsWhatOpeningWillRepairAsNotesNotFaults(FlushMode mode) throws IOException {
        Path store = crashedStoreWithATornTail(mode);

        CliRun text = CliRun.run("", "verify", "--dir", store.toString());
        CliRun json = CliRun.run("", "verify", "--dir", store.toString(), "--json");

        assertThat(text.out()).doesNotContain("FAULT");
        assertThat(text.exit()).as(text.out()).isZero();
        List<String> notes = text.out().lines().filter(line -> line.startsWith("note: ")).toList();
        assertThat(notes).anyMatch(note -> note.contains("interrupted write") && note.contains("cuts the log"));
        assertThat(notes).as("a note on the index entries of the torn records, which opening drops")
                .anyMatch(note -> note.contains("index") && !note.contains("entries checked"));
        assertThat(json.exit()).isZero();
        assertThat(json.out()).contains("\"ok\":true").contains("\"faults\":[]");
    }

    /** The state above is one opening repairs: after an open and a close, verify finds nothing. */
    @ParameterizedTest
    @EnumSource(FlushMode.class)
    void openingTheCrashedStoreRepairsIt(FlushMode mode) throws IOException {
        Path store = crashedStoreWithATornTail(mode);
        try (Store s = Store.open(store, config(mode))) {
            assertThat(s.maxOffset("t", 0)).isEqualTo(MESSAGES - 1);
        }

        CliRun verify = CliRun.run("", "verify", "--dir", store.toString());

        assertThat(verify.exit()).as(verify.out()).isZero();
        assertThat(verify.out()).doesNotContain("FAULT");
    }
}
