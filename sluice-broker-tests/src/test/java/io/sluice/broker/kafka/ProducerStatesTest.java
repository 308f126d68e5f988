package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An idempotent producer's batches per partition: the order of sequences, retries, and a producer not known yet. */
class ProducerStatesTest {

    @TempDir
    Path dir;

    /**
     * At a change of leader, a producer's second batch reached the new leader before its first (refused by the old
     * one): taken, it made the first one's retry out of order for good ("expected sequence 415, got 0"). A producer
     * the partition knows nothing of starts at 0; the client retries the refused batch after the first.
     */
    @Test
    void aProducerNotKnownHereStartsAtSequenceZero() {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.QUEUE, 1);
            ProducerStates.Producers partition = new ProducerStates()
                    .of(new io.sluice.broker.local.LocalPartitions(store, 0).partition("t", 0));
            synchronized (partition.lock) {
                ProducerStates.Verdict second = partition.check(7, (short) 0, 83, 165);
                assertThat(second.error()).isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
                assertThat(second.message()).contains("must start at sequence 0, not 83");
                assertThat(partition.check(7, (short) 0, 0, 82)).isEqualTo(ProducerStates.Verdict.APPEND);
                partition.record(7, (short) 0, 0, 82, CompletableFuture.completedFuture(0L));
                assertThat(partition.check(7, (short) 0, 83, 165)).isEqualTo(ProducerStates.Verdict.APPEND);
                assertThat(partition.check(7, (short) 0, 0, 82).duplicateOf()).as("a retry of the first")
                        .isCompletedWithValue(0L);
            }
        }
    }
}
