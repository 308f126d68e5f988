package io.sluice.bench.experiments;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.bench.lab.Progress;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** io-copy's transferTo loop copies files past the 2 GiB a single transferTo call can move. */
class TransferLoopTest {

    @TempDir
    Path temporary;

    @Test
    void copiesAFileLargerThanTwoGibibytes() throws IOException {
        long size = (2L << 30) + (1 << 20) + 7;
        Path source = temporary.resolve("source");
        Path target = temporary.resolve("target");
        // Sparse but for markers at the start, around 2 GiB and at the very end: quick to make and to copy.
        long[] markers = {0, (2L << 30) - 3, 2L << 30, size - 1};
        try (FileChannel channel = FileChannel.open(source, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (long position : markers) {
                channel.write(ByteBuffer.wrap(new byte[] {(byte) (position % 251 + 1)}), position);
            }
        }
        assertThat(IoCopy.transferTo(source, target, size, Long.MAX_VALUE, Progress.NONE)).isEqualTo(size);
        try (FileChannel copy = FileChannel.open(target, StandardOpenOption.READ)) {
            assertThat(copy.size()).isEqualTo(size);
            for (long position : markers) {
                ByteBuffer one = ByteBuffer.allocate(1);
                copy.read(one, position);
                assertThat(one.get(0)).as("byte at %d", position).isEqualTo((byte) (position % 251 + 1));
            }
            ByteBuffer between = ByteBuffer.allocate(1);
            copy.read(between, 1L << 30);
            assertThat(between.get(0)).isZero();
        }
    }
}
