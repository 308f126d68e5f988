package io.sluice.broker.kafka;

import io.sluice.broker.net.TlsChannel;
import io.sluice.store.FillableChannel;
import io.sluice.store.OpaqueSlice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.network.TransferableChannel;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.RecordsSend;

/**
 * The records of one partition of a Fetch response, as the store holds them: slices of stored batches, sent from
 * the page cache with {@code sendfile} ({@link OpaqueSlice#transferTo}) and never copied through the Java heap, and
 * batches built in memory for records the store API appended as messages. Its size is known before anything is
 * sent, so the response's length fields are written first.
 */
final class StoreRecords implements BaseRecords {

    private final List<Object> parts = new ArrayList<>();
    private long size;

    void add(OpaqueSlice slice) {
        parts.add(slice);
        size += slice.bytes();
    }

    void add(ByteBuffer batches) {
        parts.add(batches);
        size += batches.remaining();
    }

    boolean isEmpty() {
        return parts.isEmpty();
    }

    @Override
    public int sizeInBytes() {
        return (int) size;
    }

    @Override
    public RecordsSend<? extends BaseRecords> toSend() {
        return new RecordsSend<>(this, sizeInBytes()) {
            @Override
            protected int writeTo(TransferableChannel channel, int previouslyWritten, int remaining)
                    throws IOException {
                if (previouslyWritten != 0 || !(channel instanceof SocketTransfer socket)) {
                    throw new IOException("store records are written whole to a socket");
                }
                if (socket.channel instanceof TlsChannel tls) {
                    FillableChannel fillable = filling(tls);
                    // TLS: the bytes are encrypted in memory anyway; the store reads them into its buffer.
                    for (Object part : parts) {
                        if (part instanceof OpaqueSlice slice) {
                            slice.transferTo(fillable);
                        } else {
                            ByteBuffer buffer = ((ByteBuffer) part).duplicate();
                            while (buffer.hasRemaining()) {
                                fillable.write(buffer);
                            }
                        }
                    }
                    return remaining;
                }
                if (!(socket.channel instanceof SocketChannel)) {
                    // Another channel that is not a socket: gather the bytes in large writes, since a file region
                    // copied to it comes in 8 KiB pieces.
                    Coalescing coalescing = new Coalescing(socket.channel);
                    for (Object part : parts) {
                        if (part instanceof OpaqueSlice slice) {
                            slice.transferTo(coalescing);
                        } else {
                            coalescing.write(((ByteBuffer) part).duplicate());
                        }
                    }
                    coalescing.flush();
                    return remaining;
                }
                for (Object part : parts) {
                    if (part instanceof OpaqueSlice slice) {
                        slice.transferTo(socket.channel);
                    } else {
                        ByteBuffer buffer = ((ByteBuffer) part).duplicate();
                        while (buffer.hasRemaining()) {
                            socket.channel.write(buffer);
                        }
                    }
                }
                return remaining;
            }
        };
    }

    /** A TLS channel as the store sees a target it may read file bytes straight into. */
    private static FillableChannel filling(TlsChannel tls) {
        return new FillableChannel() {
            @Override
            public ByteBuffer room() throws IOException {
                return tls.room();
            }

            @Override
            public int write(ByteBuffer source) throws IOException {
                return tls.write(source);
            }

            @Override
            public boolean isOpen() {
                return tls.isOpen();
            }

            @Override
            public void close() {
                // the connection's, not this response's, to close
            }
        };
    }

    /** Writes through a 64 KiB buffer to a blocking channel. */
    private static final class Coalescing implements java.nio.channels.WritableByteChannel {
        private final java.nio.channels.WritableByteChannel target;
        private final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);

        Coalescing(java.nio.channels.WritableByteChannel target) {
            this.target = target;
        }

        @Override
        public int write(ByteBuffer source) throws IOException {
            int taken = source.remaining();
            while (source.hasRemaining()) {
                if (!buffer.hasRemaining()) {
                    flush();
                }
                int n = Math.min(buffer.remaining(), source.remaining());
                buffer.put(source.slice(source.position(), n));
                source.position(source.position() + n);
            }
            return taken;
        }

        void flush() throws IOException {
            buffer.flip();
            while (buffer.hasRemaining()) {
                target.write(buffer);
            }
            buffer.clear();
        }

        @Override
        public boolean isOpen() {
            return target.isOpen();
        }

        @Override
        public void close() {
        }
    }

    /**
     * The socket under Kafka's channel interface; record slices go to the {@link SocketChannel} itself, so that
     * {@link FileChannel#transferTo} sees a socket and uses {@code sendfile}.
     */
    static final class SocketTransfer implements TransferableChannel {

        final java.nio.channels.GatheringByteChannel channel;

        SocketTransfer(java.nio.channels.GatheringByteChannel channel) {
            this.channel = channel;
        }

        @Override
        public boolean hasPendingWrites() {
            return false;
        }

        @Override
        public long transferFrom(FileChannel file, long position, long count) throws IOException {
            return file.transferTo(position, count, channel);
        }

        @Override
        public long write(ByteBuffer[] sources, int offset, int length) throws IOException {
            long total = 0;
            for (int i = offset; i < offset + length; i++) {
                total += sources[i].remaining();
            }
            long written = 0;
            while (written < total) {
                written += channel.write(sources, offset, length);
            }
            return written;
        }

        @Override
        public long write(ByteBuffer[] sources) throws IOException {
            return write(sources, 0, sources.length);
        }

        @Override
        public int write(ByteBuffer source) throws IOException {
            int written = 0;
            while (source.hasRemaining()) {
                written += channel.write(source);
            }
            return written;
        }

        @Override
        public boolean isOpen() {
            return channel.isOpen();
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
