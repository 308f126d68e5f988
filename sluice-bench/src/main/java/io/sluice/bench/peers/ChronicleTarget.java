package io.sluice.bench.peers;

import io.sluice.bench.race.Target;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ChronicleQueue;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

/**
 * Chronicle Queue (open source), one queue written through its memory mapping. It has no synchronous flush:
 * an append is acknowledged once it is in the mapping and the kernel writes it back when it chooses, so it
 * only races ASYNC. It has no partitions either: every producer writes the one queue, and the queue number is
 * only in the message body. Appenders belong to one thread each, so every producer thread gets its own.
 */
public final class ChronicleTarget implements Target {

    private final ChronicleQueue queue;
    private final ThreadLocal<ExcerptAppender> appenders;
    private final Queue<ExcerptAppender> opened = new ConcurrentLinkedQueue<>();

    /** Opens (creates) a queue in {@code directory}. */
    public ChronicleTarget(Path directory) {
        this.queue = SingleChronicleQueueBuilder.single(directory.toFile()).build();
        this.appenders = ThreadLocal.withInitial(() -> {
            ExcerptAppender appender = queue.createAppender();
            opened.add(appender);
            return appender;
        });
    }

    @Override
    public void send(int queueNumber, List<byte[]> bodies) {
        // No batch append: a batch is that many documents in a row from one appender.
        ExcerptAppender appender = appenders.get();
        for (byte[] body : bodies) {
            try (DocumentContext document = appender.writingDocument()) {
                document.wire().bytes().write(body);
            }
        }
    }

    @Override
    public long count(long acknowledged) {
        long count = 0;
        try (ExcerptTailer tailer = queue.createTailer()) {
            while (true) {
                try (DocumentContext document = tailer.readingDocument()) {
                    if (!document.isPresent()) {
                        return count;
                    }
                    count++;
                }
            }
        }
    }

    @Override
    public byte[] first(int queueNumber) {
        Bytes<?> bytes = Bytes.allocateElasticOnHeap();
        try (ExcerptTailer tailer = queue.createTailer()) {
            while (true) {
                try (DocumentContext document = tailer.readingDocument()) {
                    if (!document.isPresent()) {
                        return null;
                    }
                    bytes.clear();
                    document.wire().bytes().read(bytes);
                    byte[] body = bytes.toByteArray();
                    if (body.length >= 4 && ByteBuffer.wrap(body).getInt(0) % QUEUES == queueNumber) {
                        return body;
                    }
                }
            }
        } finally {
            bytes.releaseLast();
        }
    }

    @Override
    public void close() {
        opened.forEach(ExcerptAppender::close);
        queue.close();
    }
}
