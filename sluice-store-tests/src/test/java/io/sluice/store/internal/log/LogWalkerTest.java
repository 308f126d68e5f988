package io.sluice.store.internal.log;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.KafkaBatch;
import io.sluice.store.Message;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The walk recovery and the verifier share: where a log's valid records end, for both formats. Segments are written
 * by hand, as the log would have left them.
 */
class LogWalkerTest {

    private static final int SEGMENT_BYTES = 64 * 1024;
    private static final byte[] TOPIC = "t".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dir;

    private final List<Segment> segments = new ArrayList<>();

    @AfterEach
    void close() throws IOException {
        for (Segment segment : segments) {
            segment.close();
        }
    }

    private Segment segment(long base) throws IOException {
        Segment segment = Segment.create(FileIO.DEFAULT, dir, base, SEGMENT_BYTES, SegmentAllocation.ZERO_FILL, true);
        segments.add(segment);
        return segment;
    }

    /** Writes a store record of one message at {@code position}; returns the position after it. */
    private static long record(Segment segment, long position, int queueId, long firstOffset) {
        PreparedMessage[] messages = {PreparedMessage.prepare(Message.of(new byte[100]), 1 << 20)};
        long size = RecordFormat.recordSize(TOPIC.length, messages);
        RecordFormat.encode(segment.mapping().asSlice(position - segment.base(), size), position, 1_000, firstOffset,
                queueId, TOPIC, messages);
        return position + size;
    }

    /** Writes a batch of three records starting at {@code firstOffset}; returns the position after it. */
    private static long batch(Segment segment, long position, long firstOffset) {
        byte[] body = KafkaBatch.of(1_000, List.of(new byte[10], new byte[10], new byte[10]));
        BatchFormat.encode(segment.mapping().asSlice(position - segment.base(), body.length), firstOffset,
                MemorySegment.ofArray(body));
        return position + body.length;
    }

    private static void filler(Segment segment, long position) {
        RecordFormat.encodeFiller(segment.mapping().asSlice(position - segment.base(), RecordFormat.FILLER_BYTES),
                position, (int) (segment.end() - position));
    }

    @Test
    void storeRecordsAreWalkedAcrossAFillerToWhereTheWrittenBytesEnd() throws IOException {
        Segment first = segment(0);
        long position = 0;
        for (int i = 0; i < 10; i++) {
            position = record(first, position, i % 2, i / 2);
        }
        filler(first, position);
        Segment second = segment(SEGMENT_BYTES);
        long end = record(second, record(second, SEGMENT_BYTES, 0, 5), 1, 5);
        LogWalker walker = new LogWalker(segments, LogFormat.records());
        List<Long> seen = new ArrayList<>();

        LogWalker.Walk walk = walker.walk(0, Long.MAX_VALUE, (record, at) -> seen.add(at));

        assertThat(walk.records()).isEqualTo(12);
        assertThat(seen).hasSize(12).contains((long) SEGMENT_BYTES);
        assertThat(walk.stop()).as("zeros past the last record").isEqualTo(LogWalker.Stop.INVALID);
        assertThat(walk.invalidAt()).isEqualTo(end);
        assertThat(walk.segmentIndex()).isEqualTo(1);
        assertThat(walker.findValidAfter(walk.segmentIndex(), end, 0)).as("nothing follows the end").isEqualTo(-1);
    }

    @Test
    void aWalkStopsAtItsLimitAndAtAGapBetweenSegments() throws IOException {
        Segment first = segment(0);
        long second = record(first, 0, 0, 0);
        filler(first, record(first, second, 0, 1));
        segment(2L * SEGMENT_BYTES); // the segment at SEGMENT_BYTES is missing
        LogWalker walker = new LogWalker(segments, LogFormat.records());

        LogWalker.Walk limited = walker.walk(0, second, null);
        assertThat(limited.stop()).isEqualTo(LogWalker.Stop.LIMIT);
        assertThat(limited.end()).isEqualTo(second);
        assertThat(limited.records()).isEqualTo(1);

        LogWalker.Walk gap = walker.walk(0, Long.MAX_VALUE, null);
        assertThat(gap.stop()).isEqualTo(LogWalker.Stop.GAP);
        assertThat(gap.invalidAt()).isEqualTo(SEGMENT_BYTES);
        assertThat(gap.segmentIndex()).as("the segment past the gap").isEqualTo(1);
        assertThat(gap.nextFirst()).isEqualTo(2);
    }

    @Test
    void aBatchMustContinueTheOffsetChainAndASearchPastItSkipsBatchesThatCannotFollow() throws IOException {
        Segment segment = segment(0);
        long position = 0;
        for (long first = 0; first < 9; first += 3) {
            position = batch(segment, position, first);
        }
        long stale = position;
        long following = batch(segment, stale, 0);
        batch(segment, following, 9);
        LogWalker walker = new LogWalker(segments, LogFormat.batches("t", 0));

        LogWalker.Walk walk = walker.walk(0, Long.MAX_VALUE, null);

        assertThat(walk.records()).isEqualTo(3);
        assertThat(walk.stop()).isEqualTo(LogWalker.Stop.INVALID);
        assertThat(walk.invalidAt()).as("a valid batch that does not continue the chain").isEqualTo(stale);
        assertThat(walk.nextFirst()).isEqualTo(9);
        assertThat(walker.findValidAfter(0, stale, walk.nextFirst())).as("the batch at offset 9, not the stale one")
                .isEqualTo(following);
        assertThat(new LogWalker(segments, LogFormat.records()).walk(0, Long.MAX_VALUE, null).invalidAt())
                .as("batches are no store records").isZero();
    }

    @Test
    void aFillerEndsABatchLogsSegment() throws IOException {
        Segment first = segment(0);
        filler(first, batch(first, batch(first, 0, 0), 3));
        Segment second = segment(SEGMENT_BYTES);
        long end = batch(second, SEGMENT_BYTES, 6);
        LogWalker walker = new LogWalker(segments, LogFormat.batches("t", 0));

        LogWalker.Walk walk = walker.walk(0, Long.MAX_VALUE, null);

        assertThat(walk.records()).isEqualTo(3);
        assertThat(walk.invalidAt()).isEqualTo(end);
        assertThat(walk.nextFirst()).isEqualTo(9);
    }
}
