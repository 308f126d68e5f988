package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads and writes of heap buffers through the default {@link FileIO}, which carries their bytes through native
 * buffers it keeps between calls: many threads at once, lengths on both sides of the kept buffers' size, and buffers
 * whose position is not zero, each read checked byte for byte against what its thread wrote.
 */
class HeapBufferFileIoTest {

    private static final int THREADS = 6;
    private static final int ROUNDS = 300;
    /** Each thread's own region of the file: larger than the largest write. */
    private static final long REGION = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void concurrentHeapReadsAndWritesReturnEachThreadsOwnBytes() throws Exception {
        try (StoreFile file = FileIO.DEFAULT.open(dir.resolve("heap-io"), FileIO.OpenMode.CREATE);
             ExecutorService pool = Executors.newFixedThreadPool(THREADS)) {
            List<Future<Long>> checked = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                checked.add(pool.submit(() -> writeAndReadBack(file, thread)));
            }
            long bytes = 0;
            for (Future<Long> f : checked) {
                bytes += f.get();
            }
            assertThat(bytes).isGreaterThan((long) THREADS * ROUNDS * 1024);
        }
    }

    private static long writeAndReadBack(StoreFile file, int thread) throws Exception {
        SplittableRandom random = new SplittableRandom(thread);
        long base = thread * REGION;
        long checked = 0;
        for (int round = 0; round < ROUNDS; round++) {
            // Up to 300 KiB: most fit a kept buffer (128 KiB), some do not.
            int length = 1 + random.nextInt(round % 5 == 0 ? 300 * 1024 : 64 * 1024);
            long at = base + random.nextLong(REGION - length);
            byte[] bytes = new byte[length];
            random.nextBytes(bytes);
            int skip = random.nextInt(16);
            ByteBuffer source = ByteBuffer.allocate(skip + length).position(skip);
            source.put(bytes).position(skip);
            file.writeFully(source, at);
            assertThat(source.hasRemaining()).isFalse();

            ByteBuffer target = ByteBuffer.allocate(skip + length + 7).position(skip).limit(skip + length);
            while (target.hasRemaining()) {
                int n = file.read(target, at + target.position() - skip);
                assertThat(n).isPositive();
            }
            byte[] read = new byte[length];
            target.position(skip).get(read);
            assertThat(Arrays.mismatch(read, bytes)).as("first byte that differs: thread %d round %d, %d bytes at %d",
                    thread, round, length, at).isEqualTo(-1);
            checked += length;
        }
        return checked;
    }
}
