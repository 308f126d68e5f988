package io.sluice.broker.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.ClusterView;
import io.sluice.sim.CrashModel;
import io.sluice.sim.ManualScheduler;
import io.sluice.sim.SimClock;
import io.sluice.sim.SimFileSystem;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A broker alone's transaction coordinator state (its saves to {@code __transaction_state}) and a committed
 * transaction's group offsets, under power cuts of the simulated file system at each file operation, under every crash
 * model, with the store SYNC: after the cut, each transactional id's state is the last whose save was acknowledged or
 * one saved after it (never an older one, never one not saved), and offsets committed for a transaction are there once
 * the commit returned.
 */
class TransactionStatePowerCutTest {

    private static final Path ROOT = Path.of("/store");
    private static final List<CrashModel> MODELS = List.of(CrashModel.UNIFORM, CrashModel.LOSE_ALL,
            CrashModel.KEEP_ALL, CrashModel.MOSTLY_KEPT, CrashModel.HOLE);
    private static final int SAVES = 12;
    private static final int IDS = 3;

    private final List<SimFileSystem> systems = new ArrayList<>();
    private final SimClock clock = new SimClock(1_700_000_000_000L);

    @AfterEach
    void release() {
        systems.forEach(SimFileSystem::release);
    }

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.MMAP)
                .flushMode(FlushMode.SYNC).maxMessageBytes(4096).flushIntervalMillis(1_000_000)
                .flushDirtyBytes(1 << 30).checkpointIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler)
                .clock(clock).build();
    }

    private static LocalCluster cluster(Store store) {
        return new LocalCluster(store, new LocalPartitions(store, 0), new ClusterView.Node(0, "127.0.0.1", 9092),
                TopicLayout.BATCHES);
    }

    /** @return the state saved at step {@code i}: its step in its text, padded so that saves cross segments */
    private static byte[] state(int i) {
        return ("state-" + i + "-" + "x".repeat(300)).getBytes(StandardCharsets.US_ASCII);
    }

    private static int step(byte[] state) {
        String text = new String(state, StandardCharsets.US_ASCII);
        return Integer.parseInt(text.substring("state-".length(), text.indexOf('-', "state-".length())));
    }

    @Test
    void aCutAtAnyOperationLeavesEachIdAtItsLastAcknowledgedStateOrALaterOne() throws Exception {
        SplittableRandom random = new SplittableRandom(17);
        int cuts = 0;
        for (CrashModel model : MODELS) {
            // Every 11th operation, from an offset of the model's own: the models together cover five residues of 11,
            // and the suite's time stays a few seconds (every operation, 6,490 cuts, took 39 s).
            for (long cutAt = 1 + MODELS.indexOf(model) * 2L; ; cutAt += 11) {
                SimFileSystem fs = new SimFileSystem();
                systems.add(fs);
                ManualScheduler scheduler = new ManualScheduler(clock);
                Store store = Store.open(ROOT, config(fs, scheduler));
                store.createTopic("in", TopicLayout.BATCHES, 1);
                LocalCluster cluster = cluster(store);
                Map<String, Integer> acknowledged = new HashMap<>();
                Map<String, Integer> lastBegun = new HashMap<>();
                long offsetAcknowledged = -1;
                fs.armPowerCut(cutAt, random, model);
                try {
                    for (int i = 0; i < SAVES; i++) {
                        String id = "tx-" + (i % IDS);
                        lastBegun.put(id, i);
                        CompletableFuture<Void> saved = cluster.saveTransaction(id, state(i), 0);
                        scheduler.settle(new SplittableRandom(i), 100);
                        if (!saved.isDone() || saved.isCompletedExceptionally()) {
                            break; // the power went
                        }
                        acknowledged.put(id, i);
                        if (i % 6 == 5) {
                            // A commit's offsets, committed once its markers are in.
                            CompletableFuture<Void> committed = cluster.commitTransactionOffsets("g",
                                    List.of(new ClusterView.CommittedOffset("in", 0, i)));
                            if (committed.isCompletedExceptionally()) {
                                break;
                            }
                            offsetAcknowledged = i;
                        }
                    }
                } catch (RuntimeException e) {
                    // The power went while a save or a commit ran.
                }
                SimFileSystem after = fs.afterPowerCut();
                fs.disarmPowerCut();
                if (after == null) {
                    store.close();
                    break; // every save returned before the cut: this model is done
                }
                cuts++;
                systems.add(after);
                try {
                    store.close();
                } catch (RuntimeException e) {
                    // The file system is gone: closing only frees the dead process's memory.
                }
                try (Store recovered = Store.open(ROOT, config(after, new ManualScheduler(clock)))) {
                    Map<String, byte[]> saved = cluster(recovered).savedTransactions();
                    for (String id : lastBegun.keySet()) {
                        byte[] state = saved.get(id);
                        Integer floor = acknowledged.get(id);
                        String what = model.name() + ", cut at operation " + cutAt + ", " + id;
                        if (floor != null) {
                            assertThat(state).as(what + ": acknowledged at step " + floor).isNotNull();
                        }
                        if (state != null) {
                            int step = step(state);
                            assertThat(step % IDS).as(what + ": a state of this id").isEqualTo(
                                    Integer.parseInt(id.substring(3)));
                            assertThat(step).as(what + ": not older than acknowledged, not past the last begun")
                                    .isBetween(floor == null ? 0 : floor, lastBegun.get(id));
                        }
                    }
                    OptionalLong offset = recovered.committedOffset("g", "in", 0);
                    if (offsetAcknowledged >= 0) {
                        assertThat(offset).as(model.name() + ", cut at operation " + cutAt
                                + ": the transaction's offset").isPresent();
                        assertThat(offset.getAsLong()).isGreaterThanOrEqualTo(offsetAcknowledged);
                    }
                }
                // Each cut's file systems go at once: thousands held to the end would exhaust the memory.
                systems.remove(fs);
                systems.remove(after);
                fs.release();
                after.release();
            }
        }
        System.out.println("transaction state power cuts: " + cuts);
        assertThat(cuts).as("power cuts during the saves").isGreaterThan(400);
    }
}
