package io.sluice.broker.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.ProducerHistory;
import io.sluice.sim.CrashModel;
import io.sluice.sim.ManualScheduler;
import io.sluice.sim.SimClock;
import io.sluice.sim.SimFileSystem;
import io.sluice.store.Durability;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The producers a broker alone keeps at a clean close, under power cuts of the simulated file system at each operation
 * of the close, under every crash model: whatever survives, the next start's producers are those the recovered log
 * shows (the file claims nothing the store may have lost, and is used whole or not at all), and once the close
 * returned, they are taken from the file, nothing read back.
 */
class LocalProducersPowerCutTest {

    private static final Path ROOT = Path.of("/store");
    private static final List<CrashModel> MODELS = List.of(CrashModel.UNIFORM, CrashModel.LOSE_ALL,
            CrashModel.KEEP_ALL, CrashModel.MOSTLY_KEPT, CrashModel.HOLE);

    private final List<SimFileSystem> systems = new ArrayList<>();
    private final SimClock clock = new SimClock(1_700_000_000_000L);

    @AfterEach
    void release() {
        systems.forEach(SimFileSystem::release);
    }

    private StoreConfig config(SimFileSystem fs) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).maxMessageBytes(4096).fileIO(fs)
                .scheduler(new ManualScheduler(clock)).clock(clock).build();
    }

    /** What the recovered log shows: its producers read back. */
    private static Map<Long, ProducerHistory.Producer> readBack(Store store) {
        return ProducerHistory.readBack((offset, max, bytes) -> store.read("t", 0, offset, max, bytes),
                store.minOffset("t", 0), store.maxOffset("t", 0)).producers();
    }

    @Test
    void aCutAtAnyOperationOfTheCloseLeavesProducersThatTheRecoveredLogShows() throws Exception {
        SplittableRandom random = new SplittableRandom(11);
        int cuts = 0;
        for (CrashModel model : MODELS) {
            for (long cutAt = 1; ; cutAt++) {
                SimFileSystem fs = new SimFileSystem();
                systems.add(fs);
                Store store = Store.open(ROOT, config(fs));
                store.createTopic("t", TopicLayout.BATCHES, 1);
                LocalPartitions partitions = new LocalPartitions(store, 0);
                partitions.partition("t", 0).producerHistory();
                for (int i = 0; i < 12; i++) {
                    partitions.partition("t", 0).append(LocalProducersTest.batch(1 + i % 3, (i / 3) * 2),
                            Durability.FLUSH_MODE).stored().join();
                }
                fs.armPowerCut(cutAt, random, model);
                try {
                    partitions.close();
                } catch (RuntimeException e) {
                    // The power went while the close ran.
                }
                SimFileSystem after = fs.afterPowerCut();
                fs.disarmPowerCut();
                if (after == null) {
                    // The close returned before the cut: a clean start takes the producers it kept.
                    store.close();
                    try (Store reopened = Store.open(ROOT, config(fs))) {
                        LocalPartitions next = new LocalPartitions(reopened, 0);
                        assertThat(next.partition("t", 0).producerHistory().producers()).as(model.name())
                                .isEqualTo(readBack(reopened));
                        assertThat(next.producerRebuilds()).as("rebuilds after a close that returned").isZero();
                    }
                    break;
                }
                cuts++;
                systems.add(after);
                try {
                    store.close();
                } catch (RuntimeException e) {
                    // The file system is gone: closing only frees the dead process's memory.
                }
                try (Store recovered = Store.open(ROOT, config(after))) {
                    LocalPartitions next = new LocalPartitions(recovered, 0);
                    assertThat(next.partition("t", 0).producerHistory().producers())
                            .as("%s, cut at operation %d of the close", model.name(), cutAt)
                            .isEqualTo(readBack(recovered));
                }
            }
        }
        assertThat(cuts).as("power cuts during the close").isGreaterThan(10);
    }
}
