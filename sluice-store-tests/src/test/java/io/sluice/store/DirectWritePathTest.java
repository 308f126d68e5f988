package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The DIRECT write path's block handling: page heads, padded tails, restarts mid-block and the fallback. */
@ExtendWith(NoLeaks.class)
class DirectWritePathTest {

    @TempDir
    Path dir;

    /** Small pages so records cross page boundaries inside a block again and again. */
    private static StoreConfig config(FlushMode mode) {
        return TestStores.small(WritePath.DIRECT, mode)
                .writeBufferBytes(16 * 1024)
                .maxMessageBytes(4 * 1024)
                .build();
    }

    private static int size(int i) {
        return 37 + (i * 131) % 3000;
    }

    @ParameterizedTest
    @EnumSource(FlushMode.class)
    void restartsInsideABlockKeepTheBlocksEarlierRecords(FlushMode mode) throws IOException {
        int perSession = 700;
        for (int session = 0; session < 3; session++) {
            try (Store store = Store.open(dir, config(mode))) {
                for (int i = session * perSession; i < (session + 1) * perSession; i++) {
                    store.append("d", 0, Message.of(TestStores.body(3, 0, i, size(i)))).join();
                }
                // The case under test: the log ends inside a block, so the next session's first page must
                // carry the block's earlier bytes.
                assertThat(store.status().writePosition() % StoreConfig.DIRECT_BLOCK_BYTES).isNotZero();
            }
        }
        try (Store store = Store.open(dir, config(mode))) {
            long offset = 0;
            while (offset < 3 * perSession) {
                try (ReadResult result = store.read("d", 0, offset, 100, 1 << 20)) {
                    for (StoredMessage m : result.messages()) {
                        int i = (int) m.queueOffset();
                        assertThat(i).isEqualTo(offset++);
                        assertThat(m.bodyBytes()).isEqualTo(TestStores.body(3, 0, i, size(i)));
                    }
                }
            }
            assertThat(store.maxOffset("d", 0)).isEqualTo(3 * perSession);
        }
        StoreVerifier.Report report = StoreVerifier.verify(dir);
        assertThat(report.faults()).isEmpty();
        assertThat(report.messages()).isEqualTo(3 * perSession);
    }

    @Test
    void thePartialTailBlockIsPaddedWithZerosOnDisk() throws IOException {
        long end;
        try (Store store = Store.open(dir, config(FlushMode.SYNC))) {
            for (int i = 0; i < 50; i++) {
                store.append("d", 0, Message.of(TestStores.body(5, 0, i, size(i)))).join();
            }
            end = store.status().writePosition();
        }
        Path segment;
        try (var files = Files.list(dir.resolve("log"))) {
            segment = files.filter(p -> p.getFileName().toString().matches("\\d{20}")).sorted().findFirst().orElseThrow();
        }
        long blockEnd = end + StoreConfig.DIRECT_BLOCK_BYTES - end % StoreConfig.DIRECT_BLOCK_BYTES;
        byte[] padding = new byte[(int) (blockEnd - end)];
        try (var channel = java.nio.channels.FileChannel.open(segment)) {
            ByteBuffer buffer = ByteBuffer.wrap(padding);
            while (buffer.hasRemaining()) {
                assertThat(channel.read(buffer, end + buffer.position())).isPositive();
            }
        }
        assertThat(padding).containsOnly((byte) 0);
    }

    @Test
    void misalignedDirectWritesAreRefused() throws IOException {
        try (StoreFile file = FileIO.DEFAULT.open(dir.resolve("f"), FileIO.OpenMode.CREATE); Arena arena = Arena.ofConfined()) {
            MemorySegment aligned = arena.allocate(8192, 4096);
            assertThatThrownBy(() -> file.writeDirect(aligned.asSlice(0, 100), 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not aligned");
            assertThatThrownBy(() -> file.writeDirect(aligned.asSlice(0, 4096), 10))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not aligned");
            assertThatThrownBy(() -> file.writeDirect(aligned.asSlice(512, 4096), 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not aligned");
            aligned.fill((byte) 9);
            file.writeDirect(aligned, 4096);
            assertThat(file.size()).isEqualTo(4096 + 8192);
        }
    }

    /** tmpfs refuses O_DIRECT; the store must fall back to buffered writes and keep every message. */
    @Test
    void whereODirectIsRefusedCommitsFallBackToBufferedWrites() throws IOException {
        Path shm = Path.of("/dev/shm");
        assumeTrue(Files.isDirectory(shm) && Files.isWritable(shm)
                && "tmpfs".equals(Files.getFileStore(shm).type()), "needs a writable tmpfs at /dev/shm");
        Path store = Files.createTempDirectory(shm, "sluice-direct-");
        try {
            try (Store s = Store.open(store, config(FlushMode.SYNC))) {
                for (int i = 0; i < 200; i++) {
                    s.append("d", 0, Message.of(TestStores.body(9, 0, i, size(i)))).join();
                }
                assertThat(s.status().state()).isEqualTo(StoreStatus.State.OPEN);
            }
            try (Store s = Store.open(store, config(FlushMode.SYNC)); ReadResult all = s.read("d", 0, 0, 1000, 1 << 24)) {
                assertThat(all.messages()).hasSize(200);
                for (StoredMessage m : all.messages()) {
                    assertThat(m.bodyBytes()).isEqualTo(TestStores.body(9, 0, m.queueOffset(), size((int) m.queueOffset())));
                }
            }
        } finally {
            try (var walk = Files.walk(store)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
