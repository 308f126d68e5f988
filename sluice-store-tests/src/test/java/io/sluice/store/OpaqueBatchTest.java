package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.StoreDirectory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Opaque batches ({@link Store#appendOpaque}): kept as appended with their first offset stamped into their
 * first 8 bytes, indexed one entry per offset, read back whole, sliced and sent without their store framing,
 * and rebuilt by recovery like any record.
 */
@ExtendWith(NoLeaks.class)
class OpaqueBatchTest {

    @TempDir
    Path dir;

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    /** What was appended at one queue offset: an opaque batch of {@code count} offsets, or one message. */
    private record Appended(long first, int count, byte[] bytes, boolean opaque) {
    }

    /** A body whose first 8 bytes are junk the store must overwrite with the first offset. */
    private static byte[] batchBody(Random random, int size) {
        byte[] body = new byte[size];
        random.nextBytes(body);
        return body;
    }

    private static byte[] stamped(byte[] body, long first) {
        byte[] copy = body.clone();
        ByteBuffer.wrap(copy).putLong(0, first);
        return copy;
    }

    /** Mostly opaque batches of 1-5 offsets, with a plain message every seventh append. */
    private static List<Appended> fill(Store store, String topic, int queue, int appends, long seed)
            throws Exception {
        Random random = new Random(seed);
        List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();
        List<Boolean> kinds = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            boolean opaque = i % 7 != 3;
            byte[] body = batchBody(random, 8 + random.nextInt(opaque ? 3000 : 200));
            bodies.add(body);
            kinds.add(opaque);
            futures.add(opaque
                    ? store.appendOpaque(topic, queue, MemorySegment.ofArray(body), 1 + random.nextInt(5))
                    : store.append(topic, queue, Message.of(body)));
        }
        List<Appended> appended = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            AppendResult result = futures.get(i).get();
            appended.add(new Appended(result.firstQueueOffset(), result.messageCount(),
                    kinds.get(i) ? stamped(bodies.get(i), result.firstQueueOffset()) : bodies.get(i), kinds.get(i)));
        }
        return appended;
    }

    /** A {@link FillableChannel} over a stream, whose small buffer makes the store fill it in many pieces. */
    private static final class SmallFillable implements FillableChannel {
        private final ByteBuffer buffer = ByteBuffer.allocate(777);
        private final ByteArrayOutputStream sink;
        int rooms;

        SmallFillable(ByteArrayOutputStream sink) {
            this.sink = sink;
        }

        @Override
        public ByteBuffer room() {
            if (!buffer.hasRemaining()) {
                drain();
            }
            rooms++;
            return buffer;
        }

        void drain() {
            sink.write(buffer.array(), 0, buffer.position());
            buffer.clear();
        }

        @Override
        public int write(ByteBuffer source) {
            int taken = source.remaining();
            while (source.hasRemaining()) {
                if (!buffer.hasRemaining()) {
                    drain();
                }
                int n = Math.min(buffer.remaining(), source.remaining());
                buffer.put(source.slice(source.position(), n));
                source.position(source.position() + n);
            }
            return taken;
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {
            drain();
        }
    }

    private static Appended holding(List<Appended> appended, long offset) {
        return appended.stream().filter(a -> a.first() <= offset && offset < a.first() + a.count()).findFirst()
                .orElseThrow();
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void readsAndSlicesReturnEachBatchAsAppendedWithItsFirstOffsetStamped(WritePath path, FlushMode mode)
            throws Exception {
        try (Store store = Store.open(dir, TestStores.small(path, mode).build())) {
            List<Appended> appended = fill(store, "t", 0, 400, 11);
            Appended last = appended.getLast();
            assertThat(store.maxOffset("t", 0)).isEqualTo(last.first() + last.count());
            // Every offset reads back the record holding it.
            for (long offset = 0; offset < last.first() + last.count(); offset += 3) {
                Appended expected = holding(appended, offset);
                try (ReadResult read = store.read("t", 0, offset, 1, Long.MAX_VALUE)) {
                    StoredMessage message = read.messages().getFirst();
                    assertThat(message.opaque()).isEqualTo(expected.opaque());
                    assertThat(message.bodyBytes()).isEqualTo(expected.bytes());
                    if (expected.opaque()) {
                        assertThat(message.queueOffset()).isEqualTo(expected.first());
                        assertThat(message.opaqueCount()).isEqualTo(expected.count());
                        assertThat(read.nextOffset()).isEqualTo(expected.first() + expected.count());
                    } else {
                        assertThat(message.queueOffset()).isEqualTo(offset);
                    }
                }
            }
            // Slicing from every batch start: the bodies of the following batches up to the next message.
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            var channel = Channels.newChannel(sink);
            SmallFillable fillable = new SmallFillable(sink);
            long offset = 0;
            List<byte[]> expectedBodies = new ArrayList<>();
            int slices = 0;
            while (offset < last.first() + last.count()) {
                OpaqueSlice slice = store.sliceOpaque("t", 0, offset, 8 * 1024);
                assertThat(slice.status()).isEqualTo(ReadResult.Status.FOUND);
                Appended here = holding(appended, offset);
                if (slice.batches() == 0) {
                    assertThat(slice.messagesNext()).isTrue();
                    assertThat(here.opaque()).isFalse();
                    offset++;
                    continue;
                }
                assertThat(slice.firstOffset()).isEqualTo(here.first());
                long bytes = 0;
                for (Appended a : appended) {
                    if (a.first() >= slice.firstOffset() && a.first() < slice.nextOffset()) {
                        assertThat(a.opaque()).isTrue();
                        expectedBodies.add(a.bytes());
                        bytes += a.bytes().length;
                    }
                }
                assertThat(slice.bytes()).isEqualTo(bytes);
                assertThat(slice.batches() == 1 || bytes <= 8 * 1024).isTrue();
                if (slices % 2 == 0) {
                    slice.transferTo(channel);
                } else {
                    slice.transferTo(fillable); // read into its buffer, in pieces of at most 777 bytes
                    fillable.drain();
                }
                offset = slice.nextOffset();
                slices++;
            }
            assertThat(slices).isGreaterThan(10);
            if (path == WritePath.MMAP) {
                // Read from the files (the buffered paths send pages they hold as writes, no room asked).
                assertThat(fillable.rooms).as("rooms the store filled").isGreaterThan(slices);
            }
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            expectedBodies.forEach(expected::writeBytes);
            assertThat(sink.toByteArray()).isEqualTo(expected.toByteArray());
            assertThat(store.sliceOpaque("t", 0, offset, 1024).status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
            assertThat(store.sliceOpaque("t", 9, 0, 1024).status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
        }
    }

    @Test
    void aSliceSentToASocketArrivesWhole() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC).build());
             ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             var executor = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Appended> appended = fill(store, "t", 0, 200, 12);
            long end = appended.getLast().first() + appended.getLast().count();
            Future<byte[]> received = executor.submit(() -> {
                try (Socket socket = server.accept(); InputStream in = socket.getInputStream()) {
                    return in.readAllBytes();
                }
            });
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            try (SocketChannel socket = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    server.getLocalPort()))) {
                long offset = 0;
                while (offset < end) {
                    OpaqueSlice slice = store.sliceOpaque("t", 0, offset, 64 * 1024);
                    if (slice.batches() == 0) {
                        offset++;
                        continue;
                    }
                    // Sent from a virtual thread, as a broker's connection handler does.
                    executor.submit(() -> {
                        slice.transferTo(socket);
                        return null;
                    }).get();
                    for (Appended a : appended) {
                        if (a.first() >= slice.firstOffset() && a.first() < slice.nextOffset()) {
                            expected.writeBytes(a.bytes());
                        }
                    }
                    offset = slice.nextOffset();
                }
            }
            assertThat(received.get()).isEqualTo(expected.toByteArray());
        }
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(WritePath.class)
    void aRebuiltIndexHasOneEntryPerOffsetOfEachBatch(WritePath path) throws Exception {
        List<Appended> appended;
        StoreConfig config = TestStores.small(path, FlushMode.SYNC).build();
        try (Store store = Store.open(dir, config)) {
            appended = fill(store, "t", 2, 300, 13);
        }
        Files.deleteIfExists(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        Files.delete(dir.resolve(Checkpoint.FILE_NAME));
        try (Stream<Path> files = Files.walk(dir.resolve("index"))) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(store.recoveryReports().values()).anySatisfy(
                    r -> assertThat(r.mode()).isEqualTo(RecoveryReport.Mode.REBUILD));
            for (Appended a : appended) {
                long probe = a.first() + a.count() - 1;
                try (ReadResult read = store.read("t", 2, probe, 1, Long.MAX_VALUE)) {
                    StoredMessage message = read.messages().getFirst();
                    assertThat(message.bodyBytes()).isEqualTo(a.bytes());
                    assertThat(message.opaqueCount()).isEqualTo(a.opaque() ? a.count() : 0);
                }
            }
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = WritePath.class, names = {"CHANNEL", "WRITE_BUFFER", "DIRECT"})
    void aForcedAppendUnderAsyncCompletesOnlyAfterItsForce(WritePath path) throws Exception {
        java.util.concurrent.CountDownLatch forceGate = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger forcesHeld = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
        HookedFileIO io = new HookedFileIO().hook((op, file) -> {
            // Segment creation forces too: only the forces after the plain append are held.
            if (op == HookedFileIO.Op.FORCE && HookedFileIO.isSegment(file) && armed.get()) {
                forcesHeld.incrementAndGet();
                HookedFileIO.awaitBounded(forceGate);
            }
        });
        // Nothing would force for an hour but a forced append.
        StoreConfig config = TestStores.small(path, FlushMode.ASYNC).fileIO(io).flushIntervalMillis(3_600_000)
                .commitIntervalMillis(3_600_000).checkpointIntervalMillis(3_600_000).flushDirtyBytes(Long.MAX_VALUE)
                .commitMinBytes(Long.MAX_VALUE).build();
        try (Store store = Store.open(dir, config)) {
            MemorySegment body = MemorySegment.ofArray(new byte[200]);
            CompletableFuture<AppendResult> plain = store.appendOpaque("t", 0, body, 2);
            assertThat(plain).isCompleted();
            armed.set(true);
            CompletableFuture<AppendResult> forced = store.appendOpaque("t", 0, body, 3, Durability.FORCED);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (forcesHeld.get() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(forcesHeld.get()).as("a force was started for the forced append").isPositive();
            Thread.sleep(100);
            assertThat(forced).as("not acknowledged while its force is held").isNotDone();
            forceGate.countDown();
            assertThat(forced.get(10, java.util.concurrent.TimeUnit.SECONDS).firstQueueOffset()).isEqualTo(2);
        } finally {
            forceGate.countDown();
        }
    }

    @Test
    void badBatchesAreRefusedAndStoreNothing() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            MemorySegment seven = MemorySegment.ofArray(new byte[7]);
            assertThatThrownBy(() -> store.appendOpaque("t", 0, seven, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 8 bytes");
            MemorySegment fine = MemorySegment.ofArray(new byte[100]);
            assertThatThrownBy(() -> store.appendOpaque("t", 0, fine, 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 or more offsets");
            MemorySegment huge = MemorySegment.ofArray(new byte[32 * 1024 + 1]);
            assertThatThrownBy(() -> store.appendOpaque("t", 0, huge, 3))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxMessageBytes");
            assertThat(store.maxOffset("t", 0)).isZero();
            assertThat(store.appendOpaque("t", 0, fine, 4).get().messageCount()).isEqualTo(4);
            assertThat(store.maxOffset("t", 0)).isEqualTo(4);
        }
    }

    @Test
    void aDamagedStampIsAnInvalidRecord() throws IOException, Exception {
        // The stamp is checked by validation: a record whose body does not start with its first offset is not
        // one the store wrote.
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build();
        AppendResult result;
        try (Store store = Store.open(dir, config)) {
            store.appendOpaque("t", 0, MemorySegment.ofArray(new byte[64]), 2).get();
            result = store.appendOpaque("t", 0, MemorySegment.ofArray(new byte[64]), 2).get();
        }
        Path segment;
        try (Stream<Path> files = Files.list(dir.resolve("log"))) {
            segment = files.findFirst().orElseThrow();
        }
        MemorySegment record = MemorySegment.ofArray(Files.readAllBytes(segment))
                .asSlice(result.logPosition(), result.recordBytes());
        assertThat(io.sluice.store.internal.log.RecordFormat.validate(record, 0, result.logPosition()))
                .isEqualTo(result.recordBytes());
        long stampAt = io.sluice.store.internal.log.RecordFormat.firstMessageOffset(record);
        assertThat(record.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(
                java.nio.ByteOrder.BIG_ENDIAN), stampAt)).isEqualTo(2);
        // Same bytes with a different stamp and a recomputed CRC: the structure check refuses it.
        MemorySegment copy = MemorySegment.ofArray(record.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        copy.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN),
                stampAt, 3);
        copy.set(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN),
                io.sluice.store.internal.log.RecordFormat.CRC_OFFSET,
                io.sluice.store.internal.log.RecordFormat.checksum(copy, 12, copy.byteSize() - 12));
        assertThat(io.sluice.store.internal.log.RecordFormat.validate(copy, 0, result.logPosition())).isEqualTo(-1);
    }
}
