package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StoreFile#nextData} on the default file seam: where the file system tells (lseek SEEK_DATA), allocated
 * but unwritten and erased ranges read as holes, and written ones as data.
 */
@ExtendWith(NoLeaks.class)
class NextDataTest {

    private static final int K = 1024;

    @TempDir
    Path dir;

    @Test
    void writtenRangesAreDataAndAllocatedOrErasedOnesAreNot() throws IOException {
        try (StoreFile file = FileIO.DEFAULT.open(dir.resolve("f"), FileIO.OpenMode.CREATE)) {
            file.allocate(1024 * K, false);
            assumeTrue(file.nextData(0) != 0, "this file system does not tell where data lies");
            assertThat(file.nextData(0)).as("allocated, never written").isEqualTo(-1);

            file.writeFully(ByteBuffer.wrap(new byte[] {1, 2, 3}), 512 * K);
            assertThat(file.nextData(0)).isEqualTo(512 * K);
            assertThat(file.nextData(512 * K + 1)).isEqualTo(512 * K + 1);
            assertThat(file.nextData(516 * K)).isEqualTo(-1);

            file.zeroRange(512 * K, 4 * K);
            assertThat(file.nextData(0)).as("erased").isEqualTo(-1);
            assertThat(file.nextData(2048 * K)).as("past the end").isEqualTo(-1);
        }
    }
}
