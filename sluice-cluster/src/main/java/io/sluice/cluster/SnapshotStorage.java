package io.sluice.cluster;

import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.SnapshotRetentionPolicy;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;

/**
 * The snapshot files of a group on this node, for both state machines (a partition's, the metadata's).
 *
 * <p>Ratis's snapshot storage lists its directory each time it is asked for the latest snapshot while it knows
 * none, and a follower asks at each append it takes: until a partition's first snapshot (its first
 * {@code snapshotEveryEntries} entries) every append opened and read that directory, a share of the brokers' CPU
 * under a steady producer that docs/benchmarks.md gives. This one lists it when the group starts and when told to load
 * again ({@link #loadLatestSnapshot}, after an install); every snapshot after that is one its machine wrote or
 * installed, which it is told of ({@link #updateLatestSnapshot}). Thread-safe.
 */
final class SnapshotStorage extends SimpleStateMachineStorage {

    private final AtomicReference<SingleFileSnapshotInfo> known = new AtomicReference<>();
    /** The directory was listed since the group started: no snapshot known means none. */
    private volatile boolean listed;
    private volatile Path directory;

    @Override
    public void init(RaftStorage storage) throws IOException {
        super.init(storage);
        directory = storage.getStorageDir().getStateMachineDir().toPath();
        loadLatestSnapshot();
    }

    @Override
    public SingleFileSnapshotInfo getLatestSnapshot() {
        SingleFileSnapshotInfo latest = known.get();
        return latest != null || listed ? latest : loadLatestSnapshot();
    }

    @Override
    public SingleFileSnapshotInfo loadLatestSnapshot() {
        SingleFileSnapshotInfo found = super.loadLatestSnapshot();
        // Ratis's listing logs a failure and finds nothing: only a listing that worked is taken for the answer.
        Path dir = directory;
        if (dir != null) {
            listed = readable(dir);
        }
        return found == null ? known.get() : keep(found);
    }

    private static boolean readable(Path directory) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
            files.forEach(file -> { });
            return true;
        } catch (IOException | DirectoryIteratorException e) {
            return false;
        }
    }

    @Override
    public SingleFileSnapshotInfo updateLatestSnapshot(SingleFileSnapshotInfo info) {
        return keep(super.updateLatestSnapshot(info));
    }

    private SingleFileSnapshotInfo keep(SingleFileSnapshotInfo info) {
        if (info == null) {
            return known.get();
        }
        return known.accumulateAndGet(info, (previous, next) -> previous == null
                || next.getIndex() > previous.getIndex() ? next : previous);
    }

    /**
     * Keeps the latest snapshots the policy names and deletes older ones. Ratis's counts only snapshots with an MD5
     * file beside them, which a partition's (a few bytes, with their own CRC32C) do not have: it deleted none, and
     * every 100,000 entries left one more file in the directory.
     */
    @Override
    public void cleanupOldSnapshots(SnapshotRetentionPolicy policy) throws IOException {
        int retained = policy == null ? SnapshotRetentionPolicy.DEFAULT_ALL_SNAPSHOTS_RETAINED
                : policy.getNumSnapshotsRetained();
        Path dir = directory;
        if (retained <= 0 || dir == null) {
            return;
        }
        TreeMap<Long, Path> byIndex = new TreeMap<>(Comparator.reverseOrder());
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path file : files) {
                Matcher name = SNAPSHOT_REGEX.matcher(file.getFileName().toString());
                if (name.matches()) {
                    byIndex.put(Long.parseLong(name.group(2)), file);
                }
            }
        }
        SingleFileSnapshotInfo latest = known.get();
        int seen = 0;
        for (Map.Entry<Long, Path> snapshot : byIndex.entrySet()) {
            if (++seen > retained && (latest == null || snapshot.getKey() < latest.getIndex())) {
                Files.deleteIfExists(snapshot.getValue());
            }
        }
    }
}
