package io.sluice.store.internal.log;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.KafkaBatch;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** Recovery takes no batch an append would have refused, whatever its CRC says. */
class BatchFormatTest {

    /** A three-record batch at {@code first}, with {@code lastOffsetDelta} put in and its CRC32C made to match. */
    private static MemorySegment batch(long first, int lastOffsetDelta) {
        byte[] bytes = KafkaBatch.of(1_700_000_000_000L, List.of(new byte[20], new byte[20], new byte[20]));
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        buffer.putLong(0, first).putInt(23, lastOffsetDelta);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 21, bytes.length - 21);
        buffer.putInt(17, (int) crc.getValue());
        return MemorySegment.ofArray(bytes);
    }

    @Test
    void aWellFormedBatchIsValidAtItsOwnOffsetOnly() {
        MemorySegment batch = batch(7, 2);
        assertThat(BatchFormat.validate(batch, 0, -1)).isEqualTo(batch.byteSize());
        assertThat(BatchFormat.validate(batch, 0, 7)).isEqualTo(batch.byteSize());
        assertThat(BatchFormat.validate(batch, 0, 8)).isEqualTo(-1);
        assertThat(BatchFormat.problem(batch, 3)).isNull();
        assertThat(BatchFormat.checksumMatches(batch)).isTrue();
    }

    @Test
    void moreOffsetsThanBytesOrOffsetsPastLongMaxAreInvalidThoughTheCrcMatches() {
        MemorySegment many = batch(0, 1_000_000);
        assertThat(BatchFormat.checksumMatches(many)).isTrue();
        assertThat(BatchFormat.validate(many, 0, -1)).as("a million offsets in %d bytes", many.byteSize())
                .isEqualTo(-1);
        MemorySegment overflowing = batch(Long.MAX_VALUE - 1, 2);
        assertThat(BatchFormat.checksumMatches(overflowing)).isTrue();
        assertThat(BatchFormat.validate(overflowing, 0, -1)).isEqualTo(-1);
        assertThat(BatchFormat.validate(batch(0, -1), 0, -1)).isEqualTo(-1);
        assertThat(BatchFormat.validate(batch(0, Integer.MAX_VALUE), 0, -1)).isEqualTo(-1);
    }
}
