package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice recover}: the dry run changes nothing and says what a recovery would drop; --truncate cuts. */
class RecoverCommandTest {

    private static final int SEGMENT_BYTES = 64 * 1024;
    private static final int MESSAGES = 40;

    @TempDir
    Path dir;

    private final List<AppendResult> appended = new ArrayList<>();

    private static StoreConfig config() {
        return StoreConfig.builder().segmentSizeBytes(SEGMENT_BYTES).maxMessageBytes(16 * 1024)
                .queueIndexEntriesPerFile(1024).keyIndexSlotsPerFile(256).keyIndexEntriesPerFile(4096).build();
    }

    /** Closed cleanly (so the checkpoint claims every record durable), then its marker removed. */
    private Path crashedStore() throws IOException {
        Path store = dir.resolve("store");
        try (Store s = Store.open(store, config())) {
            for (int i = 0; i < MESSAGES; i++) {
                appended.add(s.append("t", 0, Message.of(("message " + i).getBytes(StandardCharsets.UTF_8))).join());
            }
        }
        Files.delete(store.resolve("clean-shutdown"));
        return store;
    }

    /** Flips a byte inside the body of record {@code i}: its CRC fails. */
    private void damage(Path store, int i) throws IOException {
        AppendResult record = appended.get(i);
        try (RandomAccessFile segment = new RandomAccessFile(store.resolve("log/00000000000000000000").toFile(),
                "rw")) {
            long at = record.logPosition() + record.recordBytes() - 3;
            segment.seek(at);
            int b = segment.read();
            segment.seek(at);
            segment.write(b ^ 0x5a);
        }
    }

    @Test
    void aCrashedStoreIsPlannedWithoutChangeThenRecovered() throws IOException {
        Path store = crashedStore();
        Map<String, String> before = CliRun.fingerprint(store);

        CliRun plan = CliRun.run("", "recover", "--dir", store.toString(), "--dry-run");

        assertThat(plan.exit()).as(plan.err()).isZero();
        assertThat(plan.out()).contains("shared log: would validate " + MESSAGES + " records")
                .contains("nothing changed (dry run)").doesNotContain("REFUSED");
        assertThat(CliRun.fingerprint(store)).containsExactlyInAnyOrderEntriesOf(before);

        CliRun recover = CliRun.run("", "recover", "--dir", store.toString());

        assertThat(recover.exit()).as(recover.err()).isZero();
        assertThat(recover.out()).contains("shared log: validate " + MESSAGES + " records").contains("recovered");
        assertThat(store.resolve("clean-shutdown")).exists();
        assertThat(StoreVerifier.verify(store).ok()).isTrue();
    }

    @Test
    void damageBelowTheDurablePositionIsRefusedAndTheDryRunShowsWhatTruncatingDrops() throws IOException {
        Path store = crashedStore();
        damage(store, 30);
        Map<String, String> before = CliRun.fingerprint(store);

        CliRun plan = CliRun.run("", "recover", "--dir", store.toString(), "--dry-run");
        CliRun json = CliRun.run("", "recover", "--dir", store.toString(), "--dry-run", "--json");
        CliRun refused = CliRun.run("", "recover", "--dir", store.toString());

        assertThat(plan.exit()).isEqualTo(1);
        assertThat(plan.out()).contains("would cut at " + String.format("%,d", appended.get(30).logPosition()))
                .contains("valid records past the cut: t-0: offsets 31..39 (9 messages in 9 records)")
                .contains("REFUSED: commit log corrupt");
        Map<String, Object> parsed = CliOutputTest.StrictJson.parseObject(json.out().strip());
        assertThat(parsed).containsEntry("ok", false).containsEntry("dryRun", true);
        assertThat(json.exit()).isEqualTo(1);
        assertThat(refused.exit()).isEqualTo(1);
        assertThat(refused.err()).contains("below the durable position").contains("sluice recover");
        assertThat(CliRun.fingerprint(store)).as("neither the plan nor the refused recovery changed anything")
                .containsExactlyInAnyOrderEntriesOf(before);

        CliRun truncated = CliRun.run("", "recover", "--dir", store.toString(), "--truncate");

        assertThat(truncated.exit()).as(truncated.err()).isZero();
        try (Store s = Store.openReadOnly(store, config())) {
            assertThat(s.maxOffset("t", 0)).isEqualTo(30);
            try (ReadResult read = s.read("t", 0, 29, 1, 1 << 20)) {
                assertThat(read.messages().getFirst().bodyBytes()).asString(StandardCharsets.UTF_8)
                        .isEqualTo("message 29");
            }
        }
        assertThat(StoreVerifier.verify(store).ok()).isTrue();
    }

    @Test
    void dryRunAndTruncateTogetherAreBadUsage() throws IOException {
        Path store = crashedStore();

        CliRun run = CliRun.run("", "recover", "--dir", store.toString(), "--dry-run", "--truncate");

        assertThat(run.exit()).isEqualTo(2);
        assertThat(run.err()).contains("mutually exclusive");
    }
}
