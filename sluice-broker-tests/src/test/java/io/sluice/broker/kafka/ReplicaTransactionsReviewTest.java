package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Partition;
import io.sluice.broker.local.LocalPartitions;
import io.sluice.store.Durability;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The transaction state the log cleaner bounds and filters a cleaning with ({@code ProducerStates.forCleaning}), on a
 * replica that does not lead its partition: LogCleaner cleans every replica hosted here
 * ({@code Partition.hostedHere}), but a follower's batches reach its store through the Raft apply, which never tells
 * ProducerStates. Its state is read from the log once (the cleaner's first round) and kept for the leader epoch, so
 * a transaction opened or aborted later is unknown to it: the follower's cleaner cleans past an open transaction's
 * first offset, maps an aborted record's key as the latest (dropping the committed record before it) and keeps the
 * aborted record. After a failover to that replica, a read_committed consumer sees neither value of the key.
 */
class ReplicaTransactionsReviewTest {

    @TempDir
    Path dir;

    /** Appends as a follower's Raft apply does: straight into the store (PartitionStore.appendCopied and the like). */
    private static long appendAsReplica(Store store, MemoryRecords records) {
        MemorySegment batch = MemorySegment.ofBuffer(records.buffer());
        int count = records.batches().iterator().next().countOrNull();
        return store.appendOpaqueToDeclared("t", 0, batch, count, Durability.FLUSH_MODE).join().firstQueueOffset();
    }

    private static SimpleRecord record(String key, String value) {
        return new SimpleRecord(key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }

    /** The partition as a follower's broker sees it: it does not lead. */
    private static Partition following(Partition partition) {
        return (Partition) java.lang.reflect.Proxy.newProxyInstance(Partition.class.getClassLoader(),
                new Class<?>[] {Partition.class}, (proxy, method, args) -> {
                    if (method.getName().equals("leads")) {
                        return false;
                    }
                    try {
                        return method.invoke(partition, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void aReplicaThatDoesNotLeadKnowsTheTransactionsItsLogHolds() {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            Partition partition = following(new LocalPartitions(store, 0).partition("t", 0));
            ProducerStates states = new ProducerStates();
            appendAsReplica(store, MemoryRecords.withRecords(Compression.NONE, record("k", "committed")));
            // The cleaner's first round on this replica: no transaction yet.
            assertThat(states.forCleaning(partition, store.maxOffset("t", 0)).lastStable()).isEqualTo(1);

            long first = appendAsReplica(store, MemoryRecords.withTransactionalRecords(Compression.NONE, 9L,
                    (short) 0, 0, record("k", "aborted")));
            assertThat(states.forCleaning(partition, store.maxOffset("t", 0)).lastStable())
                    .as("the last stable offset with producer 9's transaction open from offset %d", first)
                    .isEqualTo(first);

            appendAsReplica(store, MemoryRecords.withEndTransactionMarker(0L, 0L, 0, 9L, (short) 0,
                    new EndTransactionMarker(ControlRecordType.ABORT, 0)));
            assertThat(states.forCleaning(partition, store.maxOffset("t", 0)).aborted())
                    .as("the transactions aborted in the log").hasSize(1);
        }
    }
}
