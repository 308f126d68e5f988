package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.io.FileTree;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A recovery killed after it erased an index tail but before it forced the erasure leaves cached zeros over
 * durable stale entries. The next recovery reads zeros, so it erases nothing; it must still make the file
 * durable before it claims anything, or a later power cut brings the stale entries back as phantom offsets.
 */
class KilledRecoveryTest {

    private static final Path DIRECTORY = Path.of("/sim/killed/index/t/0");
    private static final IndexGeometry GEOMETRY = new IndexGeometry(64, 64);

    private final List<SimFileSystem> systems = new ArrayList<>();

    @AfterEach
    void release() {
        systems.forEach(SimFileSystem::release);
    }

    private static QueueIndex open(SimFileSystem fs, DurabilityLedger ledger) throws IOException {
        return QueueIndex.open("t", 0, DIRECTORY, fs, GEOMETRY, ledger, false);
    }

    @Test
    void aTailFoundBlankAfterAKilledRecoveryIsMadeDurable() throws IOException {
        SimFileSystem fs = new SimFileSystem();
        systems.add(fs);
        FileTree.createDirectories(fs, DIRECTORY);
        DurabilityLedger ledger = new DurabilityLedger(fs);
        QueueIndex index = open(fs, ledger);
        index.ensureCapacity(10);
        for (int i = 0; i < 10; i++) {
            index.put(i, 1_000 + 100L * i, 1_700_000_000_000L, 100, 1, 0);
        }
        index.publish(10);
        ledger.forceAll(); // entries 0..9 durable

        index.truncateFrom(5); // recovery 1 erases past a cut at offset 5, then is killed before it forces
        index.close();

        DurabilityLedger second = new DurabilityLedger(fs); // recovery 2: the killed process's cache survives
        QueueIndex again = open(fs, second);
        assertThat(again.nextOffset()).as("what the cache shows").isEqualTo(5);
        again.truncateFrom(5); // blank already: nothing to erase
        second.forceAll(); // what recovery 2 claims durable before it writes its checkpoint
        again.close();

        SimFileSystem afterCut = fs.crash(new SplittableRandom(7), CrashModel.LOSE_ALL);
        systems.add(afterCut);
        QueueIndex reopened = open(afterCut, new DurabilityLedger(afterCut));
        assertThat(reopened.nextOffset()).as("entries 5..9 must not come back").isEqualTo(5);
        reopened.close();
    }
}
