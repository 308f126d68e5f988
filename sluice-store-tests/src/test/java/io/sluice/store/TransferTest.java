package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.log.RecordFormat;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link Store#transferTo}: whole records, as stored, by sendfile or from write-buffer pages. */
@ExtendWith(NoLeaks.class)
class TransferTest {

    private static final long SEED = 0x5EED_7A45L;

    @TempDir
    Path dir;

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    /** The messages (queue offset, body) found in the records a transfer sent, checked record by record. */
    private record Received(long offset, byte[] body) {
    }

    private static List<Received> parse(byte[] bytes, String topic, int queueId) {
        MemorySegment data = MemorySegment.ofArray(bytes);
        List<Received> messages = new ArrayList<>();
        long at = 0;
        while (at < bytes.length) {
            MemorySegment header = data.asSlice(at);
            long position = RecordFormat.logPosition(header);
            long length = RecordFormat.validate(data, at, position);
            assertThat(length).as("record at %d of the transfer validates (CRC32C)", at).isPositive();
            MemorySegment record = data.asSlice(at, length);
            assertThat(RecordFormat.topic(record)).isEqualTo(topic);
            assertThat(RecordFormat.queueId(record)).isEqualTo(queueId);
            long first = RecordFormat.firstQueueOffset(record);
            long m = RecordFormat.firstMessageOffset(record);
            for (int i = 0; i < RecordFormat.messageCount(record); i++, m = RecordFormat.nextMessageOffset(record, m)) {
                messages.add(new Received(first + i, RecordFormat.body(record, m).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
            }
            at += length;
        }
        return messages;
    }

    private static byte[] body(int queue, long offset) {
        return TestStores.body(SEED, queue, offset, 100 + (int) (offset % 7) * 300);
    }

    /** Two queues interleaved (so records of one queue are not all adjacent), singles and batches of 3. */
    private static void fill(Store store, int messagesPerQueue) throws Exception {
        long[] next = new long[2];
        List<CompletableFuture<AppendResult>> pending = new ArrayList<>();
        while (next[0] < messagesPerQueue) {
            for (int q = 0; q < 2; q++) {
                if (next[q] % 10 == 4) {
                    List<Message> batch = new ArrayList<>();
                    for (int i = 0; i < 3; i++) {
                        batch.add(Message.of(body(q, next[q] + i)));
                    }
                    pending.add(store.appendBatch("t", q, batch));
                    next[q] += 3;
                } else {
                    pending.add(store.append("t", q, Message.of(body(q, next[q]))));
                    next[q]++;
                }
            }
        }
        for (CompletableFuture<AppendResult> f : pending) {
            f.get();
        }
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void sendsEveryMessageOfAQueueInRecordsThatValidate(WritePath path, FlushMode mode) throws Exception {
        try (Store store = Store.open(dir, TestStores.small(path, mode).build())) {
            fill(store, 1500);
            long end = store.maxOffset("t", 1);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            var channel = Channels.newChannel(sink);
            long offset = 0;
            int calls = 0;
            while (offset < end) {
                TransferResult result = store.transferTo("t", 1, offset, 64 * 1024, channel);
                assertThat(result.status()).isEqualTo(ReadResult.Status.FOUND);
                assertThat(result.nextOffset()).isGreaterThan(offset);
                offset = result.nextOffset();
                calls++;
            }
            assertThat(calls).isGreaterThan(1);
            List<Received> received = parse(sink.toByteArray(), "t", 1);
            assertThat(received).hasSize((int) end);
            for (Received message : received) {
                assertThat(message.body()).isEqualTo(body(1, message.offset()));
            }
            assertThat(store.transferTo("t", 1, end, 1024, channel).status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
        }
    }

    @Test
    void startsAtTheRecordHoldingTheOffsetAndSendsAtLeastOneRecord() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            fill(store, 30);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            // Offset 5 is the middle of the batch holding 4, 5 and 6.
            TransferResult result = store.transferTo("t", 0, 5, 1, Channels.newChannel(sink));
            assertThat(result.records()).isEqualTo(1);
            assertThat(result.nextOffset()).isEqualTo(7);
            assertThat(parse(sink.toByteArray(), "t", 0)).extracting(Received::offset).containsExactly(4L, 5L, 6L);
            assertThat(result.bytes()).isEqualTo(sink.size());
        }
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = WritePath.class, names = {"WRITE_BUFFER", "DIRECT"})
    void sendsBytesStillOnlyInTheWriteBufferFromThePage(WritePath path) throws Exception {
        StoreConfig config = TestStores.small(path, FlushMode.ASYNC).commitIntervalMillis(3_600_000)
                .commitMinBytes(Long.MAX_VALUE).flushDirtyBytes(Long.MAX_VALUE).flushIntervalMillis(3_600_000).build();
        try (Store store = Store.open(dir, config)) {
            fill(store, 20);
            assertThat(store.status().committedPosition()).isLessThan(store.status().writePosition());
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            TransferResult result = store.transferTo("t", 0, 0, 1 << 20, Channels.newChannel(sink));
            assertThat(result.nextOffset()).isEqualTo(store.maxOffset("t", 0));
            List<Received> received = parse(sink.toByteArray(), "t", 0);
            assertThat(received).hasSize((int) store.maxOffset("t", 0));
            for (Received message : received) {
                assertThat(message.body()).isEqualTo(body(0, message.offset()));
            }
        }
    }

    @Test
    void sendsToALoopbackSocket() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.WRITE_BUFFER, FlushMode.ASYNC).build());
             ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            fill(store, 600);
            CompletableFuture<byte[]> drained = CompletableFuture.supplyAsync(() -> {
                try (Socket peer = server.accept(); InputStream in = peer.getInputStream()) {
                    return in.readAllBytes();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            long end = store.maxOffset("t", 0);
            try (SocketChannel socket = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                    server.getLocalPort()))) {
                long offset = 0;
                while (offset < end) {
                    offset = store.transferTo("t", 0, offset, 1 << 20, socket).nextOffset();
                }
            }
            List<Received> received = parse(drained.get(), "t", 0);
            assertThat(received).hasSize((int) end);
            assertThat(received.getLast().body()).isEqualTo(body(0, end - 1));
        }
    }

    @Test
    void reportsQueuesAndOffsetsItCannotSendAndRefusesBadArguments() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            fill(store, 10);
            var channel = Channels.newChannel(new ByteArrayOutputStream());
            assertThat(store.transferTo("none", 0, 0, 10, channel).status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
            assertThat(store.transferTo("t", 0, 99, 10, channel).status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
            assertThatThrownBy(() -> store.transferTo("t", 0, -1, 10, channel))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fromOffset");
            assertThatThrownBy(() -> store.transferTo("t", 0, 0, 0, channel))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBytes");
            var closed = Channels.newChannel(new ByteArrayOutputStream());
            closed.close();
            assertThatThrownBy(() -> store.transferTo("t", 0, 0, 10, closed)).isInstanceOf(StoreException.class);
            try (ReadResult intact = store.read("t", 0, 0, 100, 1 << 20)) {
                assertThat(intact.messages()).hasSize(10);
            }
        }
    }
}
