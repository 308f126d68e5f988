package io.sluice.store.internal.log;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.SegmentAllocation;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A segment's mapping leaves the mapping window once its readers let go, however many arrive meanwhile. */
class SegmentMappingTest {

    @TempDir
    Path dir;

    @Test
    void anUnmappedSegmentTakesNoNewMappingReadersAndUnmapsWhenTheLastLetsGo() throws IOException {
        Segment segment = Segment.create(FileIO.DEFAULT, dir, 0, 64 * 1024, SegmentAllocation.FALLOCATE, false);
        try {
            assertThat(segment.tryRetain()).isTrue();
            MemorySegment held = segment.pinMapping();
            assertThat(held).isNotNull();

            segment.unmap();

            assertThat(segment.mapped()).isFalse();
            assertThat(segment.tryRetain()).isTrue();
            assertThat(segment.pinMapping()).as("a reader arriving after unmap() reads positionally").isNull();
            segment.release();
            assertThat(held.scope().isAlive()).as("still held by the first reader").isTrue();
            segment.unpinMapping();
            segment.release();
            assertThat(held.scope().isAlive()).as("unmapped once the last reader let go").isFalse();
        } finally {
            segment.close();
        }
    }
}
