package io.sluice.store;

import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.internal.verify.LogVerifier;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a store directory without changing it: every record's length, magic, position and CRC32C, and every
 * queue-index and key-index entry against the record it points to, in the shared log and in every log of its
 * own. It judges a crashed store as recovery would: damage below a log's durable position (what the
 * checkpoint claims was forced) is a fault; what a power cut leaves past it (a torn tail, index entries for
 * records that did not survive, entries not yet written) is what opening the store repairs, reported as
 * notes. Each log is walked as recovery walks it ({@code LogVerifier}). Meant for a closed store (an open one may be
 * mid-append at its tail). Stateless; thread-safe.
 */
public final class StoreVerifier {

    private StoreVerifier() {
    }

    /**
     * What verification found.
     *
     * @param faults one line per problem opening the store cannot repair; empty means the store is sound
     * @param notes findings that are not faults, among them what opening the store will repair
     * @param segments segment files checked
     * @param records valid records
     * @param messages messages in them
     * @param logEnd the position after the last valid record of the shared log
     * @param queueMessages messages per queue ("topic-queueId"), as counted in the log
     * @param indexEntries index entries checked
     */
    public record Report(List<String> faults, List<String> notes, int segments, long records, long messages, long logEnd,
                         Map<String, Long> queueMessages, long indexEntries) {
        /** @return true if no fault was found */
        public boolean ok() {
            return faults.isEmpty();
        }
    }

    /**
     * @param directory a store directory
     * @return the findings
     * @throws IOException if the directory cannot be read at all
     */
    public static Report verify(Path directory) throws IOException {
        return verify(directory, FileIO.DEFAULT);
    }

    /**
     * @param directory a store directory
     * @param io the file seam to read it through
     * @return the findings
     * @throws IOException if the directory cannot be read at all
     */
    public static Report verify(Path directory, FileIO io) throws IOException {
        if (!io.exists(directory.resolve(StoreDirectory.META_FILE))) {
            return new Report(List.of(directory + " has no " + StoreDirectory.META_FILE + ": not a Sluice store"),
                    List.of(), 0, 0, 0, 0, Map.of(), 0);
        }
        IndexGeometry geometry;
        try (StoreDirectory store = StoreDirectory.open(directory, io, IndexGeometry.growingTo(64),
                KeyGeometry.growingTo(16, 16), true)) {
            geometry = store.indexGeometry();
        } catch (StoreException e) {
            return new Report(List.of(e.getMessage()), List.of(), 0, 0, 0, 0, Map.of(), 0);
        }
        Checkpoint checkpoint = Checkpoint.read(io, directory);
        boolean clean = checkpoint != null && io.exists(directory.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        List<String> notes = new ArrayList<>();
        if (checkpoint == null) {
            notes.add("the store has no valid checkpoint: opening it rebuilds every index from the log");
        } else if (!clean) {
            notes.add("the store was not closed cleanly: opening it recovers each log from its durable position");
        }
        Map<String, LogDirectories.LogRoot> logs = LogDirectories.of(io, directory, TopicRegistry.load(io, directory));
        Report report = null;
        for (Map.Entry<String, LogDirectories.LogRoot> log : logs.entrySet()) {
            Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(log.getKey());
            long durable = checkpoint == null ? Recovery.UNKNOWN : positions == null ? 0 : positions.durablePosition();
            Report part = new LogVerifier(io, log.getValue().directory(), geometry, durable,
                    positions == null ? -1 : positions.start(), clean, log.getValue().format()).run();
            String prefix = log.getKey().isEmpty() ? "" : "logs/" + log.getKey() + ": ";
            report = report == null ? prefixed(part, prefix, notes) : merge(report, prefixed(part, prefix, List.of()));
        }
        return report;
    }

    private static Report prefixed(Report part, String prefix, List<String> leading) {
        List<String> faults = part.faults().stream().map(f -> prefix + f).toList();
        List<String> notes = new ArrayList<>(leading);
        part.notes().forEach(n -> notes.add(prefix + n));
        return new Report(faults, notes, part.segments(), part.records(), part.messages(), part.logEnd(),
                part.queueMessages(), part.indexEntries());
    }

    private static Report merge(Report a, Report b) {
        List<String> faults = new ArrayList<>(a.faults());
        faults.addAll(b.faults());
        List<String> notes = new ArrayList<>(a.notes());
        notes.addAll(b.notes());
        Map<String, Long> queues = new TreeMap<>(a.queueMessages());
        b.queueMessages().forEach((queue, count) -> queues.merge(queue, count, Long::sum));
        return new Report(faults, notes, a.segments() + b.segments(), a.records() + b.records(),
                a.messages() + b.messages(), a.logEnd(), queues, a.indexEntries() + b.indexEntries());
    }
}
