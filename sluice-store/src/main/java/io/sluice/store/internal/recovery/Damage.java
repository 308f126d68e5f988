package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.LogWalker;
import io.sluice.store.internal.log.Segment;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What damage in a log means, by where it lies relative to the durable position (rows 3, 4, 5 and 7 of
 * {@link Recovery}'s decision table): the tail of an interrupted write, which the log may end at, or corruption,
 * which refuses the open unless truncating is allowed. A dry run refuses nothing and keeps, as its problem, why a
 * plain open would. Not thread-safe; used by one recovery.
 */
final class Damage {

    private static final Logger LOG = LoggerFactory.getLogger(Damage.class);

    private final Recovery.Target target;
    private final boolean truncateOnCorruption;
    /** A dry run: why a plain open would refuse the log, or null. */
    private String problem;

    Damage(Recovery.Target target, boolean truncateOnCorruption) {
        this.target = target;
        this.truncateOnCorruption = truncateOnCorruption;
    }

    /** @return why a plain open would refuse the log (a dry run finds it), or null */
    String problem() {
        return problem;
    }

    /**
     * Row 7 below the scan: a segment missing (or short) below the durable position is corruption; past it, the
     * scan meets the gap and cuts there.
     *
     * @return where the scan must start from: the durable position, or the gap if truncating through it
     */
    long checkGapsBelow(List<Segment> segments, long durable) {
        for (int i = 1; i < segments.size(); i++) {
            long gap = segments.get(i - 1).end();
            if (segments.get(i).base() != gap && gap < durable) {
                String message = "commit log corrupt: log positions " + gap + " to " + segments.get(i).base()
                        + " are missing (no segment holds them), below the durable position " + durable + " in "
                        + target.logDirectory();
                if (target.dryRun()) {
                    problem = message;
                } else if (!truncateOnCorruption) {
                    throw new StoreCorruptedException(message + "; truncateOnCorruption (sluice recover --truncate)"
                            + " drops everything from " + gap, target.logDirectory(), gap);
                }
                LOG.error("{}; dropping everything from {}", message, gap);
                return gap;
            }
        }
        return durable;
    }

    /**
     * Rows 3, 4, 5 and 7: returns if the log may end where the walk stopped, else throws.
     *
     * @return {@code walk}
     * @throws StoreCorruptedException if it stopped at corruption and truncating is not allowed
     */
    LogWalker.Walk decide(LogWalker walker, LogWalker.Walk walk) {
        long position = walk.invalidAt();
        if (position < 0) {
            return walk;
        }
        List<Segment> segments = walker.segments();
        int segmentIndex = walk.segmentIndex();
        long durable = target.durablePosition();
        String where = where(segments, segmentIndex, position);
        String corruption;
        if (durable != Recovery.UNKNOWN) {
            if (position >= durable) {
                LOG.warn("{}: the record at {} fails validation, at or past the durable position {}: the tail of an"
                        + " interrupted write; the log ends there", target.root(), where, durable);
                return walk;
            }
            corruption = "commit log corrupt: the record at " + where + " fails validation below the durable position "
                    + durable + ", which was forced before the last checkpoint";
        } else {
            long follower = walker.findValidAfter(Math.min(segmentIndex, segments.size() - 1), position,
                    Math.max(0, walk.nextFirst()));
            if (follower < 0) {
                LOG.warn("{}: torn tail at {}; the log ends there", target.root(), where);
                return walk;
            }
            corruption = "commit log corrupt: the record at " + where + " fails validation, but a valid record follows"
                    + " at log position " + follower;
        }
        if (target.dryRun()) {
            problem = corruption;
        }
        if (truncateOnCorruption || target.dryRun()) {
            LOG.error("{}; {}dropping every record from log position {}", corruption,
                    target.dryRun() ? "a truncating recovery would be " : "truncateOnCorruption is set: ", position);
            return walk;
        }
        Path file = segmentIndex < segments.size() ? segments.get(segmentIndex).file().path() : target.logDirectory();
        throw new StoreCorruptedException(corruption + "; sluice recover --dry-run shows what truncating would drop,"
                + " and truncateOnCorruption (sluice recover --truncate) drops everything from " + position, file,
                position);
    }

    private static String where(List<Segment> segments, int segmentIndex, long position) {
        if (segmentIndex < 0 || segmentIndex >= segments.size() || segments.get(segmentIndex).base() > position) {
            return "log position " + position + " (no segment holds it)";
        }
        Segment segment = segments.get(segmentIndex);
        return "log position " + position + " (segment " + segment.file().path() + ", offset "
                + (position - segment.base()) + ")";
    }

    /**
     * For a dry run: every valid record past where the walk stopped, by queue ("t-0: offsets 31..39 (9 messages in 9
     * records)"), found by searching byte by byte as for a follower (row 5).
     */
    static List<String> describeDropped(LogWalker walker, LogWalker.Walk walk) {
        List<Segment> segments = walker.segments();
        LogFormat format = walker.format();
        Map<String, long[]> queues = new TreeMap<>();
        long leastFirst = Math.max(0, walk.nextFirst());
        long at = walk.invalidAt();
        int index = Math.min(Math.max(walk.segmentIndex(), 0), segments.size() - 1);
        while (index >= 0 && (at = walker.findValidAfter(index, at, leastFirst)) >= 0) {
            Segment segment = walker.segmentAt(at);
            index = segments.indexOf(segment);
            MemorySegment data = segment.mapping();
            long offset = at - segment.base();
            long length = format.find(data, offset, at, leastFirst);
            if (format.frame(data, offset, at, -1) != LogFormat.SEGMENT_END) {
                MemorySegment record = data.asSlice(offset, length);
                long first = format.firstOffset(record);
                int count = format.offsetCount(record);
                leastFirst = first + count;
                long[] range = queues.computeIfAbsent(format.topic(record) + "-" + format.queueId(record),
                        queue -> new long[] {first, first + count - 1, 0, 0});
                range[0] = Math.min(range[0], first);
                range[1] = Math.max(range[1], first + count - 1);
                range[2] += count;
                range[3]++;
            }
            at += length - 1;
        }
        List<String> lines = new ArrayList<>();
        queues.forEach((queue, range) -> lines.add(queue + ": offsets " + range[0] + ".." + range[1] + " (" + range[2]
                + " messages in " + range[3] + " records)"));
        return lines;
    }
}
