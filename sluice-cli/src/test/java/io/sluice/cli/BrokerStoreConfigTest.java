package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The store options of {@code sluice broker}: a broker's defaults under ASYNC, the user's choice always honoured; and
 * the broker's own settings from a broker.properties file.
 */
class BrokerStoreConfigTest {

    @TempDir
    Path dir;

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

    /**
     * The largest message the store takes caps every topic's max.message.bytes: given, a broker takes topics and
     * batches larger than the default 4 MiB (franz-go's suite makes a topic of 10 MiB and produces 5 MiB).
     */
    @Test
    void theLargestMessageIsTheUsersToSet() {
        assertThat(parsed("--dir", "d").maxMessageBytes()).isEqualTo(StoreConfig.builder().build().maxMessageBytes());
        assertThat(parsed("--dir", "d", "--max-message-bytes", "16777216").maxMessageBytes()).isEqualTo(16 << 20);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parsed("--dir", "d", "--segment-size", "16777216",
                        "--max-message-bytes", "16777216"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxMessageBytes");
    }

    @Test
    void theOpenLogBudgetIsTheUsersToSet() {
        assertThat(parsed("--dir", "d").resolvedMaxOpenLogs()).isBetween(StoreConfig.MIN_AUTO_OPEN_LOGS,
                StoreConfig.MAX_AUTO_OPEN_LOGS);
        assertThat(parsed("--dir", "d", "--max-open-logs", "64").resolvedMaxOpenLogs()).isEqualTo(64);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parsed("--dir", "d", "--max-open-logs", "-1"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxOpenLogs");
    }

    @Test
    void forcingTogetherIsOffUnlessTurnedOn() {
        assertThat(parsed("--dir", "d", "--flush", "sync").forceTogether()).isFalse();
        assertThat(parsed("--dir", "d", "--flush", "sync", "--force-together").forceTogether()).isTrue();
        assertThat(parsed("--dir", "d", "--flush", "sync", "--no-force-together").forceTogether()).isFalse();
    }

    @Test
    void syncKeepsTheMappedPathAndAGivenPathIsTaken() {
        assertThat(parsed("--dir", "d", "--flush", "sync").writePath()).isEqualTo(WritePath.MMAP);
        assertThat(parsed("--dir", "d", "--write-path", "mmap").writePath()).isEqualTo(WritePath.MMAP);
        assertThat(parsed("--dir", "d", "--flush", "sync", "--write-path", "channel").writePath())
                .isEqualTo(WritePath.CHANNEL);
    }

    @Test
    void aBrokersRetentionIsKafkasAndReplacesWhatTheStoreSaved() {
        StoreConfig config = parsed("--dir", "d");
        assertThat(config.retention().retentionMillis()).as("Kafka's 7 days")
                .isEqualTo(java.util.concurrent.TimeUnit.HOURS.toMillis(168));
        assertThat(config.retention().consumersHoldRetention()).as("committed offsets hold nothing").isFalse();
        assertThat(config.retention().diskCleanRatio()).as("no deletion for disk use").isEqualTo(1.0);
        assertThat(config.retention().diskEmergencyRatio()).isEqualTo(1.0);
        assertThat(config.retention().diskHardRatio()).as("appends refused when full").isEqualTo(0.90);
        assertThat(config.overrideStoreSettings()).isTrue();
        assertThat(parsed("--dir", "d", "--retention-hours", "5").retention().retentionMillis())
                .isEqualTo(java.util.concurrent.TimeUnit.HOURS.toMillis(5));
    }

    @Test
    void offsetsRetentionComesFromThePropertiesFileOrKafkasDefault() throws Exception {
        Path file = dir.resolve("broker.properties");
        Files.writeString(file, "offsets.retention.minutes=90\nnum.partitions=3\n");
        BrokerConfig config = BrokerCommand.config(file, null);
        assertThat(config.offsetsRetentionMinutes()).isEqualTo(90);
        assertThat(config.defaultPartitions()).isEqualTo(3);
        assertThat(BrokerCommand.config(null, null).offsetsRetentionMinutes()).isEqualTo(7 * 24 * 60);
        Files.writeString(file, "offsets.retention.minutes=0\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("offsetsRetentionMinutes");
    }

    @Test
    void theLeaderImbalanceCheckTakesKafkasTwoKeys() throws Exception {
        Path file = dir.resolve("broker.properties");
        assertThat(BrokerCommand.config(null, null).leaderImbalanceCheckSeconds()).isEqualTo(300);
        Files.writeString(file, "leader.imbalance.check.interval.seconds=30\n");
        assertThat(BrokerCommand.config(file, null).leaderImbalanceCheckSeconds()).isEqualTo(30);
        Files.writeString(file, "auto.leader.rebalance.enable=false\nleader.imbalance.check.interval.seconds=30\n");
        assertThat(BrokerCommand.config(file, null).leaderImbalanceCheckSeconds()).as("off").isZero();
        Files.writeString(file, "leader.imbalance.check.interval.seconds=0\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leader.imbalance.check.interval.seconds must be at least 1");
        Files.writeString(file, "auto.leader.rebalance.enable=maybe\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("auto.leader.rebalance.enable");
    }

    @Test
    void theLogCleanerTakesKafkasKeys() throws Exception {
        Path file = dir.resolve("broker.properties");
        assertThat(BrokerCommand.config(null, null).cleaner()).isEqualTo(io.sluice.broker.CleanerSettings.DEFAULTS);
        Files.writeString(file, "log.cleaner.enable=false\nlog.cleaner.backoff.ms=100\n"
                + "log.cleaner.dedupe.buffer.size=8388608\nlog.cleaner.io.max.bytes.per.second=1048576\n");
        io.sluice.broker.CleanerSettings cleaner = BrokerCommand.config(file, null).cleaner();
        assertThat(cleaner.enabled()).isFalse();
        assertThat(cleaner.backoffMillis()).isEqualTo(100);
        assertThat(cleaner.dedupeBufferBytes()).isEqualTo(8 << 20);
        assertThat(cleaner.ioMaxBytesPerSecond()).isEqualTo(1 << 20);
        Files.writeString(file, "log.cleaner.dedupe.buffer.size=10\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("log.cleaner.dedupe.buffer.size must be at least 1048576");
        Files.writeString(file, "log.cleaner.threads=2\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("log.cleaner.threads must be 1");
    }

    @Test
    void kafkasSecurityKeysAreTakenAndUnknownOnesRefused() throws Exception {
        Path file = dir.resolve("broker.properties");
        Files.writeString(file, "listeners=SASL_SSL://127.0.0.1:9093\nsasl.enabled.mechanisms=PLAIN\n"
                + "listener.name.sasl_ssl.plain.sasl.jaas.config=x\nssl.keystore.location=/k.p12\n"
                + "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
                + "super.users=User:admin\nmax.connections.per.ip=50\nraft.security.protocol=SSL\n");
        assertThat(BrokerCommand.config(file, null).security()).containsEntry("listeners",
                "SASL_SSL://127.0.0.1:9093").containsEntry("super.users", "User:admin").hasSize(8);
        Files.writeString(file, "ssl.keystore.locaton=/k.p12\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ssl.keystore.locaton");
        Files.writeString(file, "listeners=PLAINTEXT://127.0.0.1:9092\n");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> BrokerCommand.config(file, "127.0.0.1:9093"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("do not go together");
    }
}
