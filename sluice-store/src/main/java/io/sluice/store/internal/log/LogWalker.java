package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Walks a log's valid records, segment by segment, as recovery and the verifier read a log: the one place that
 * decides where a log's valid records end. What a record is comes from the log's {@link LogFormat}.
 *
 * <p>A walk passes each valid record in log order and stops at the first position where none is: a record that fails
 * its format's checks, or a gap between segments (a segment must start where the one before it ends). A filler, or
 * fewer than {@link RecordFormat#FILLER_BYTES} bytes left, ends a segment, and the walk goes on at the next one's
 * start. Each record is framed with the queue offset after the one before it, which a batch log's chain needs.
 *
 * <p>The segments' mappings must stay open for the walker's use. Not thread-safe.
 */
public final class LogWalker {

    private final List<Segment> segments;
    private final LogFormat format;

    /**
     * @param segments the log's segments, oldest first
     * @param format what the log's records are
     */
    public LogWalker(List<Segment> segments, LogFormat format) {
        this.segments = segments;
        this.format = format;
    }

    /** Told each valid record a walk passes. */
    @FunctionalInterface
    public interface Visitor {
        /**
         * @param record the record's bytes, exactly
         * @param position its log position
         */
        void visit(MemorySegment record, long position) throws IOException;
    }

    /** Why a walk stopped. */
    public enum Stop {
        /** It passed the last segment. */
        END,
        /** It reached the limit it was given. */
        LIMIT,
        /** A record at {@link Walk#stoppedAt} fails its format's checks. */
        INVALID,
        /** No segment holds {@link Walk#stoppedAt}, but a later segment starts past it. */
        GAP
    }

    /**
     * Where a walk stopped.
     *
     * @param end where the valid records it passed end: the next record's position
     * @param records how many it passed (fillers not counted)
     * @param stop why it stopped
     * @param segmentIndex for {@link Stop#INVALID} and {@link Stop#GAP}, the segment it stopped in (after a gap, the
     *     segment past it)
     * @param nextFirst the queue offset after the last record passed, or -1 if none was
     */
    public record Walk(long end, long records, Stop stop, int segmentIndex, long nextFirst) {

        /** @return the position of the invalid record or the gap the walk stopped at, or -1 if it stopped at neither */
        public long invalidAt() {
            return stop == Stop.INVALID || stop == Stop.GAP ? end : -1;
        }
    }

    /** @return the log's segments, oldest first */
    public List<Segment> segments() {
        return segments;
    }

    /** @return what the log's records are */
    public LogFormat format() {
        return format;
    }

    /**
     * Walks the valid records from {@code from}, telling {@code visitor} (if any) each one.
     *
     * @param from where to start: a record's position (or a segment's start)
     * @param limit stop before a record at or past this position ({@link Long#MAX_VALUE}: no limit)
     * @param visitor told each valid record, or null
     * @return where and why it stopped
     * @throws IOException if the visitor throws it
     */
    public Walk walk(long from, long limit, Visitor visitor) throws IOException {
        long position = from;
        long records = 0;
        long nextFirst = -1;
        int first = segmentIndexFor(from);
        for (int index = Math.max(first, 0); first >= 0 && index < segments.size(); index++) {
            Segment segment = segments.get(index);
            if (position >= limit) {
                return new Walk(position, records, Stop.LIMIT, index, nextFirst);
            }
            if (segment.base() > position || (index > first && segment.base() != position)) {
                return new Walk(position, records, Stop.GAP, index, nextFirst);
            }
            MemorySegment data = segment.mapping();
            while (true) {
                if (position >= limit) {
                    return new Walk(position, records, Stop.LIMIT, index, nextFirst);
                }
                long offset = position - segment.base();
                long length = segment.size() - offset < RecordFormat.FILLER_BYTES ? LogFormat.SEGMENT_END
                        : format.frame(data, offset, position, nextFirst);
                if (length == LogFormat.SEGMENT_END) {
                    break;
                }
                if (length == LogFormat.INVALID) {
                    return new Walk(position, records, Stop.INVALID, index, nextFirst);
                }
                MemorySegment record = data.asSlice(offset, length);
                if (visitor != null) {
                    visitor.visit(record, position);
                }
                nextFirst = format.firstOffset(record) + format.offsetCount(record);
                records++;
                position += length;
            }
            position = segment.end();
        }
        return new Walk(position, records, Stop.END, -1, nextFirst);
    }

    /**
     * Searches past damage, byte by byte, for a valid record that could follow it: one that proves the damage is
     * not a torn tail.
     *
     * @param segmentIndex the segment to start in (clamped to the first)
     * @param position search from the byte after it
     * @param leastFirst the least first offset a batch found may carry ({@link LogFormat#find})
     * @return the position of the first such record (or filler), or -1
     */
    public long findValidAfter(int segmentIndex, long position, long leastFirst) {
        for (int i = Math.max(segmentIndex, 0); i < segments.size(); i++) {
            Segment segment = segments.get(i);
            MemorySegment data = segment.mapping();
            long last = segment.size() - RecordFormat.FILLER_BYTES;
            for (long offset = Math.max(0, position - segment.base() + 1); offset <= last; offset++) {
                if (format.find(data, offset, segment.base() + offset, leastFirst) > 0) {
                    return segment.base() + offset;
                }
            }
        }
        return -1;
    }

    /** @return the index of the first segment that ends past {@code position}, or -1 if none does */
    public int segmentIndexFor(long position) {
        for (int i = 0; i < segments.size(); i++) {
            if (position < segments.get(i).end()) {
                return i;
            }
        }
        return -1;
    }

    /** @return the segment holding {@code position}, or null */
    public Segment segmentAt(long position) {
        for (Segment segment : segments) {
            if (segment.base() <= position && position < segment.end()) {
                return segment;
            }
        }
        return null;
    }
}
