package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What hostile clients can make the broker remember is bounded: groups, member ids, producers. */
class BoundedStateTest {

    @TempDir
    Path dir;

    private static JoinGroupRequestData join(String group, String member) {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[1]));
        return new JoinGroupRequestData().setGroupId(group).setMemberId(member).setSessionTimeoutMs(10_000)
                .setRebalanceTimeoutMs(1_000).setProtocolType("consumer").setProtocols(protocols);
    }

    @Test
    void emptyGroupsAreForgottenAndMemberIdsPerGroupAreCapped() throws Exception {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        try {
            GroupCoordinator coordinator = new GroupCoordinator(timer);
            for (int i = 0; i < 500; i++) {
                String id = coordinator.join(join("g" + i, ""), (short) 5, "c", "h").get().memberId();
                CompletableFuture<?> joined = coordinator.join(join("g" + i, id), (short) 5, "c", "h");
                assertThat(joined.get()).isNotNull();
                assertThat(coordinator.leave("g" + i, id, null)).isEqualTo(Errors.NONE);
            }
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (!coordinator.groups().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(coordinator.groups()).as("empty groups are dropped").isEmpty();

            Errors last = Errors.NONE;
            for (int i = 0; i <= GroupCoordinator.MAX_MEMBERS; i++) {
                last = Errors.forCode(coordinator.join(join("crowd", ""), (short) 5, "c", "h").get().errorCode());
            }
            assertThat(last).isEqualTo(Errors.GROUP_MAX_SIZE_REACHED);
        } finally {
            timer.shutdownNow();
        }
    }

    @Test
    void producersPerPartitionAreCappedLeastRecentlySeenFirst() {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.QUEUE, 1);
            ProducerStates.Producers partition = new ProducerStates()
                    .of(new io.sluice.broker.local.LocalPartitions(store, 0).partition("t", 0));
            synchronized (partition.lock) {
                for (long id = 0; id <= ProducerStates.MAX_PRODUCERS; id++) {
                    partition.record(id, (short) 0, 0, 0, CompletableFuture.completedFuture(id));
                }
                // Producer 0 was forgotten: its first batch again is taken as from an unknown producer.
                assertThat(partition.check(0, (short) 0, 0, 0)).isEqualTo(ProducerStates.Verdict.APPEND);
                // Producer 1 is remembered: the same batch is a retry of its first.
                assertThat(partition.check(1, (short) 0, 0, 0).duplicateOf()).isNotNull();
            }
        }
    }

    @Test
    void aLongPollLeavesNothingBehindForThePartitionsItNamed() {
        PartitionWatch watch = new PartitionWatch();
        java.util.List<CompletableFuture<Void>> waiters = new java.util.ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            waiters.add(watch.register(java.util.List.of(java.util.Map.entry("t" + i, i), java.util.Map.entry("t", 0))));
        }
        assertThat(watch.watched()).isEqualTo(1_001);
        watch.signal("t", 0);
        assertThat(waiters).allMatch(CompletableFuture::isDone);
        assertThat(watch.watched()).as("every emptied set is dropped").isZero();
    }
}
