package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.kafka.ProtocolFuzzer;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A short round of the protocol fuzzer (the long one is {@code sluice fuzz}): nothing but answers and refusals. */
class ProtocolFuzzTest {

    @TempDir
    Path dir;

    @Test
    void randomAndMutatedFramesAreAnsweredOrRefusedNeverAnythingElse() {
        try (Store store = Store.open(dir, StoreConfig.builder().maxQueuesPerTopic(16).build())) {
            ProtocolFuzzer.Report report = ProtocolFuzzer.run(store, 50_000, 20261123L, done -> { });
            assertThat(report.findings()).isEmpty();
            assertThat(report.answered()).as("most mutations still parse and are answered").isGreaterThan(5_000);
            assertThat(report.refused()).isGreaterThan(5_000);
        }
    }
}
