package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.ClusterView;
import io.sluice.broker.local.LocalCluster;
import io.sluice.broker.local.LocalPartitions;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut at every file system operation of a change of a broker's security record (its SCRAM credentials, its
 * ACLs), under each crash model: after it the record holds exactly its old text or its new one (the new for certain if
 * the change completed), never a torn one; and a change made over what the cut left survives a second cut.
 */
class SecurityRecordsPowerCutTest {

    private static final Path ROOT = Path.of("/sim/security");
    /** Longer than a page, so that a torn write would show. */
    private static final String OLD = "v1\n" + "old credential line\n".repeat(300);
    private static final String NEW = "v1\n" + "new credential line\n".repeat(400);
    private static final String AFTER = "v1\nafter\n";

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).maxMessageBytes(4096)
                .flushMode(FlushMode.SYNC)
                .flushIntervalMillis(1_000_000).checkpointIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler)
                .clock(clock).build();
    }

    private static LocalCluster cluster(Store store) {
        return new LocalCluster(store, new LocalPartitions(store, 1), new ClusterView.Node(1, "127.0.0.1", 9092),
                TopicLayout.BATCHES);
    }

    private SimFileSystem populated() {
        SimFileSystem fs = new SimFileSystem();
        Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock)));
        assertThat(cluster(store).alterSecurityRecord("scram", text -> OLD)).isCompleted();
        store.close();
        return fs;
    }

    @ParameterizedTest
    @EnumSource(TopicConfigsPowerCutTest.Model.class)
    void aPowerCutAtEveryStepOfAChangeLeavesTheOldTextOrTheNew(TopicConfigsPowerCutTest.Model model) {
        int cuts = 0;
        for (int at = 1; ; at++) {
            SimFileSystem fs = populated();
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler));
            LocalCluster cluster = cluster(store);
            cluster.securityRecord("scram");
            fs.armPowerCut(at, new SplittableRandom(at), model.model);
            CompletableFuture<Void> change = cluster.alterSecurityRecord("scram", text -> NEW);
            boolean returned = !change.isCompletedExceptionally();
            SimFileSystem survived = fs.afterPowerCut();
            boolean struck = survived != null;
            if (!struck) {
                assertThat(change).as("a change fails only for the cut").isCompleted();
                fs.disarmPowerCut();
                survived = fs.crash(new SplittableRandom(at), model.model);
            } else {
                cuts++;
            }
            scheduler.discardAll();
            closeQuietly(store);
            String where = "cut at operation " + at + ", " + model;
            Store reopened = Store.open(ROOT, config(survived, new ManualScheduler(clock)));
            SimFileSystem second = null;
            try {
                String found = cluster(reopened).securityRecord("scram");
                if (returned) {
                    assertThat(found).as(where + ": a change that completed is durable").isEqualTo(NEW);
                } else {
                    assertThat(found).as(where + ": the old text or the new, whole").isIn(OLD, NEW);
                }
                assertThat(cluster(reopened).alterSecurityRecord("scram", text -> AFTER)).isCompleted();
                second = survived.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
                closeQuietly(reopened);
                reopened = Store.open(ROOT, config(second, new ManualScheduler(clock)));
                assertThat(cluster(reopened).securityRecord("scram")).as(where + ", then a change and a second cut")
                        .isEqualTo(AFTER);
            } finally {
                closeQuietly(reopened);
                if (second != null) {
                    second.release();
                }
            }
            fs.release();
            survived.release();
            if (!struck) {
                break;
            }
        }
        // Write aside (open, truncate, write, force), rename, directory sync: each cut once.
        assertThat(cuts).as("operations a change performs, each cut once").isGreaterThanOrEqualTo(6);
    }

    private static void closeQuietly(Store store) {
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system may be gone
        }
    }
}
