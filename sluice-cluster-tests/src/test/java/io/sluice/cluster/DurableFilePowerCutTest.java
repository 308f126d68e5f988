package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.sim.CrashModel;
import io.sluice.sim.SimFileSystem;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node's small files (identity, markers, snapshots) under power cuts of the simulated file system: a cut at any
 * operation of a write, under every crash model, leaves the old content or the new one whole, and once the write
 * returned, the new one.
 */
class DurableFilePowerCutTest {

    private static final Path DIR = Path.of("/raft");
    private static final Path FILE = DIR.resolve("snapshot.3_600");
    private static final Path TEMP = DIR.resolve("partition-snapshot.tmp");

    private final List<SimFileSystem> systems = new ArrayList<>();

    @AfterEach
    void release() {
        systems.forEach(SimFileSystem::release);
    }

    private SimFileSystem track(SimFileSystem fs) {
        systems.add(fs);
        return fs;
    }

    /** A file system with the directory, durable, and {@code old} written through a durable write if not null. */
    private SimFileSystem withOld(String old) throws IOException {
        SimFileSystem fs = track(new SimFileSystem());
        fs.createDirectory(DIR);
        fs.syncDirectory(Path.of("/"));
        if (old != null) {
            DurableFile.write(fs, FILE, TEMP, old);
        }
        return fs;
    }

    private static Optional<String> read(FileIO fs, Path path) throws IOException {
        if (!fs.exists(path)) {
            return Optional.empty();
        }
        try (StoreFile file = fs.open(path, FileIO.OpenMode.READ_ONLY)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
            while (buffer.hasRemaining() && file.read(buffer, buffer.position()) >= 0) {
                // reads until full
            }
            return Optional.of(new String(buffer.array(), StandardCharsets.UTF_8));
        }
    }

    /** What a node does on a file system. */
    private interface Step {
        void run(SimFileSystem fs) throws IOException;
    }

    /** Whether a step returned before the power cut, and the file system after the cut. */
    private record Cut(boolean returned, SimFileSystem after) {
    }

    /** Runs a step with the power cut at its operation {@code cutAt} (after it, if it has fewer). */
    private Cut cut(SimFileSystem fs, long cutAt, SplittableRandom random, CrashModel model, Step step) {
        fs.armPowerCut(cutAt, random, model);
        boolean returned;
        try {
            step.run(fs);
            returned = true;
        } catch (IOException cut) {
            returned = false;
        }
        SimFileSystem after = fs.afterPowerCut();
        if (after == null) {
            after = fs.crash(random, model);
        }
        return new Cut(returned, track(after));
    }

    /** Text of {@code length} characters over several 4 KiB pages, so pages can be lost or torn apart. */
    private static String text(int length, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        StringBuilder text = new StringBuilder(length);
        while (text.length() < length) {
            text.append((char) ('a' + random.nextInt(26)));
        }
        return text.toString();
    }

    @Test
    void aPowerCutAtAnyStepLeavesTheOldFileOrTheNewOneWhole() throws IOException {
        String longer = text(3 * SimFileSystem.PAGE_BYTES + 100, 1);
        String shorter = text(SimFileSystem.PAGE_BYTES + 7, 2);
        // Old and new: none then one, a longer one replaced by a shorter one, and the reverse.
        String[][] cases = {{null, shorter}, {longer, shorter}, {shorter, longer}};
        int cuts = 0;
        int newFound = 0;
        int oldFound = 0;
        for (String[] pair : cases) {
            String old = pair[0];
            String next = pair[1];
            SimFileSystem counting = withOld(old);
            long before = counting.operations();
            DurableFile.write(counting, FILE, TEMP, next);
            long steps = counting.operations() - before;
            assertThat(steps).as("operations of one write").isGreaterThan(3);
            for (long seed = 0; seed < 20; seed++) {
                for (long cutAt = 1; cutAt <= steps + 1; cutAt++) {
                    SplittableRandom random = new SplittableRandom(seed * 1_000 + cutAt);
                    CrashModel model = CrashModel.pick(random);
                    SimFileSystem fs = withOld(old);
                    Cut cut = cut(fs, cutAt, random, model, on -> DurableFile.write(on, FILE, TEMP, next));
                    boolean returned = cut.returned();
                    SimFileSystem after = cut.after();
                    Optional<String> found = read(after, FILE);
                    String where = "cut at operation " + cutAt + " of " + steps + ", seed " + seed + ", "
                            + model.name() + ", old " + (old == null ? "none" : old.length() + " chars");
                    if (returned) {
                        assertThat(found).as("after the write returned; " + where).contains(next);
                    } else if (found.isEmpty()) {
                        assertThat(old).as("no file, " + where).isNull();
                    } else {
                        assertThat(found.get()).as(where).isIn(old, next);
                    }
                    cuts++;
                    newFound += found.isPresent() && found.get().equals(next) ? 1 : 0;
                    oldFound += found.isPresent() && found.get().equals(old) ? 1 : 0;
                }
            }
        }
        // Both outcomes of an interrupted write occurred, so the cuts fell inside it.
        assertThat(oldFound).as("cuts that left the old file").isPositive();
        assertThat(newFound).as("cuts that left the new file").isGreaterThan(oldFound / 10);
        assertThat(cuts).isGreaterThan(300);
    }

    @Test
    void aLeftoverTemporaryFileFromACutDoesNotStopTheNextWrite() throws IOException {
        SimFileSystem fs = withOld("old\n");
        // A longer leftover from an earlier, interrupted write.
        try (StoreFile leftover = fs.open(TEMP, FileIO.OpenMode.CREATE)) {
            leftover.writeFully(ByteBuffer.wrap(text(5_000, 3).getBytes(StandardCharsets.UTF_8)), 0);
        }
        DurableFile.write(fs, FILE, TEMP, "new\n");
        SimFileSystem after = track(fs.crash(new SplittableRandom(4), CrashModel.LOSE_ALL));
        assertThat(read(after, FILE)).contains("new\n");
    }

    /**
     * A first start writes the node's identity into a Raft directory it creates; a power cut at any operation leaves
     * either no identity (a first start again) or the whole one, and once the start's check returned, the whole one:
     * a node whose directory name was lost would count as one that lost its Raft data.
     */
    @Test
    void aFirstStartsIdentityOutlivesAPowerCut() throws IOException {
        Path node = Path.of("/node");
        Path raft = node.resolve("raft");
        String identity = "cluster.id=c1\nnode.id=2\n";
        SimFileSystem counting = track(new SimFileSystem());
        counting.createDirectory(node);
        counting.syncDirectory(Path.of("/"));
        long before = counting.operations();
        NodeIdentity.check(counting, raft, "c1", 2);
        long steps = counting.operations() - before;
        int whole = 0;
        for (long seed = 0; seed < 20; seed++) {
            for (long cutAt = 1; cutAt <= steps + 1; cutAt++) {
                SplittableRandom random = new SplittableRandom(seed * 1_000 + cutAt);
                CrashModel model = CrashModel.pick(random);
                SimFileSystem fs = track(new SimFileSystem());
                fs.createDirectory(node);
                fs.syncDirectory(Path.of("/"));
                Cut cut = cut(fs, cutAt, random, model, on -> NodeIdentity.check(on, raft, "c1", 2));
                boolean returned = cut.returned();
                SimFileSystem after = cut.after();
                Optional<String> found = read(after, raft.resolve(NodeIdentity.FILE));
                String where = "cut at operation " + cutAt + " of " + steps + ", seed " + seed + ", " + model.name();
                if (returned) {
                    assertThat(found).as("after the check returned; " + where).contains(identity);
                } else if (found.isPresent()) {
                    assertThat(found.get()).as(where).isEqualTo(identity);
                }
                whole += found.isPresent() ? 1 : 0;
                // The next start on what is left writes the identity, or finds it.
                NodeIdentity.check(after, raft, "c1", 2);
                assertThat(read(after, raft.resolve(NodeIdentity.FILE))).as(where).contains(identity);
            }
        }
        assertThat(whole).as("cuts that left the identity").isPositive();
    }
}
