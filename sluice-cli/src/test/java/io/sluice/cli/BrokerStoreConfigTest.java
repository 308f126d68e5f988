package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Broker;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The store options of {@code sluice broker}: a broker's defaults under ASYNC, the user's choice always honoured. */
class BrokerStoreConfigTest {

    private static StoreConfig parsed(String... args) {
        BrokerCommand command = new BrokerCommand();
        new CommandLine(command).parseArgs(args);
        return command.storeConfig();
    }

    @Test
    void asyncTakesTheChannelPathAndForcesOnceASecond() {
        StoreConfig config = parsed("--dir", "d");
        assertThat(config.flushMode()).isEqualTo(FlushMode.ASYNC);
        assertThat(config.writePath()).isEqualTo(WritePath.CHANNEL);
        assertThat(config.flushIntervalMillis()).isEqualTo(Broker.ASYNC_FLUSH_INTERVAL_MILLIS);
    }

    @Test
    void syncKeepsTheMappedPathAndAGivenPathIsTaken() {
        assertThat(parsed("--dir", "d", "--flush", "sync").writePath()).isEqualTo(WritePath.MMAP);
        assertThat(parsed("--dir", "d", "--write-path", "mmap").writePath()).isEqualTo(WritePath.MMAP);
        assertThat(parsed("--dir", "d", "--flush", "sync", "--write-path", "channel").writePath())
                .isEqualTo(WritePath.CHANNEL);
    }
}
