package io.sluice.broker.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import org.apache.kafka.common.protocol.Errors;

/**
 * Walks the records of a v2 record batch, uncompressed (straight from the request's buffer) or compressed (through
 * a decompressing stream), and checks each one as Kafka's log validator does before it takes a batch: a record's
 * length, attributes, timestamp delta, offset delta (which must be its index in the batch), key, value and headers
 * must exactly fill it, and exactly the batch's count of records must fill the batch. Keys, values and header bytes
 * are skipped, never copied or kept.
 *
 * <p>A compressed batch is read with a bound on the bytes it decompresses to: a record that claims more than is left
 * of the bound is refused before it is read ({@link Errors#MESSAGE_TOO_LARGE}), so a batch of a few kilobytes that
 * claims a value of gigabytes, or decompresses to gigabytes of zeros, costs at most the bound's decompression. Every
 * other fault answers {@link Errors#INVALID_RECORD}, Kafka's answer to a batch whose records do not parse.
 *
 * <p>Not thread-safe: one walk per instance at a time.
 */
final class RecordWalker {

    /** Reads the bytes of the records, one at a time or by skipping. */
    private interface Input {
        /** @return the next byte (0-255), or -1 at the end */
        int read() throws IOException;

        /** Skips exactly {@code bytes}; @return false if the end came first */
        boolean skip(long bytes) throws IOException;
    }

    /** Reads a buffer's bytes from its position to its limit. */
    private static final class BufferInput implements Input {
        private final ByteBuffer buffer;
        private int at;

        BufferInput(ByteBuffer buffer) {
            this.buffer = buffer;
            this.at = buffer.position();
        }

        @Override
        public int read() {
            return at < buffer.limit() ? buffer.get(at++) & 0xFF : -1;
        }

        @Override
        public boolean skip(long bytes) {
            if (bytes > buffer.limit() - at) {
                return false;
            }
            at += (int) bytes;
            return true;
        }
    }

    /** Reads a decompressing stream, skipping through a scratch buffer so that every skipped byte is really there. */
    private static final class StreamInput implements Input {
        private final InputStream stream;
        private final byte[] scratch;

        StreamInput(InputStream stream, byte[] scratch) {
            this.stream = stream;
            this.scratch = scratch;
        }

        @Override
        public int read() throws IOException {
            return stream.read();
        }

        @Override
        public boolean skip(long bytes) throws IOException {
            long left = bytes;
            while (left > 0) {
                int read = stream.read(scratch, 0, (int) Math.min(left, scratch.length));
                if (read < 0) {
                    return false;
                }
                left -= read;
            }
            return true;
        }
    }

    private final byte[] scratch = new byte[8192];
    private Input input;
    /** Bytes of records read so far. */
    private long position;
    /** The most bytes the records may take. */
    private long limit;
    /** Whether the limit is a decompression bound (else the batch's end). */
    private boolean bounded;
    /** The smallest and largest timestamp delta of the records read so far. */
    private long minTimestampDelta;
    private long maxTimestampDelta;
    /** Whether a record read so far has a null key. */
    private boolean keyless;

    /**
     * Walks the uncompressed records of a batch.
     *
     * @param records the bytes after the batch header, from its position to its limit
     * @param count the records the batch claims
     * @throws BatchRefusedException if the records do not exactly fill the bytes with {@code count} well-formed records
     */
    void walk(ByteBuffer records, int count) {
        try {
            walk(new BufferInput(records), count, records.remaining(), false);
        } catch (IOException e) {
            throw new IllegalStateException("a buffer read failed", e);
        }
    }

    /**
     * Walks the records of a compressed batch through its decompressing stream.
     *
     * @param decompressed the decompressing stream over the batch's records
     * @param count the records the batch claims
     * @param maxDecompressedBytes the most bytes the records may decompress to
     * @throws BatchRefusedException if a record is malformed, the stream does not end after {@code count} records, the
     *     stream cannot be decompressed, or the records would pass {@code maxDecompressedBytes}
     */
    void walk(InputStream decompressed, int count, long maxDecompressedBytes) {
        try {
            walk(new StreamInput(decompressed, scratch), count, maxDecompressedBytes, true);
        } catch (BatchRefusedException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            // The decompressor's own faults (a damaged frame, a bad magic) surface as I/O or runtime exceptions.
            throw invalid("the batch's compressed records cannot be read: " + e);
        }
    }

    /** @return the smallest timestamp delta of the last batch walked (its records' earliest time, less the base) */
    long minTimestampDelta() {
        return minTimestampDelta;
    }

    /** @return the largest timestamp delta of the last batch walked */
    long maxTimestampDelta() {
        return maxTimestampDelta;
    }

    /** @return true if a record of the last batch walked has no key (a null one) */
    boolean keyless() {
        return keyless;
    }

    private void walk(Input in, int count, long maxBytes, boolean decompressionBound) throws IOException {
        this.input = in;
        this.position = 0;
        this.minTimestampDelta = Long.MAX_VALUE;
        this.maxTimestampDelta = Long.MIN_VALUE;
        this.keyless = false;
        this.limit = maxBytes;
        this.bounded = decompressionBound;
        try {
            for (int i = 0; i < count; i++) {
                record(i);
            }
            if (in.read() >= 0) {
                throw invalid("the batch holds bytes past its " + count + " records");
            }
        } finally {
            this.input = null;
        }
    }

    /** Reads record {@code index} whole. */
    private void record(int index) throws IOException {
        int length = varint(index, "length");
        if (length < 1) {
            throw invalid("record " + index + " of the batch claims " + length + " bytes");
        }
        if (length > limit - position) {
            throw bounded
                    ? new BatchRefusedException(Errors.MESSAGE_TOO_LARGE, "record " + index + " of the batch claims "
                            + length + " bytes, past the " + limit + " its records may decompress to")
                    : invalid("record " + index + " of the batch claims " + length + " bytes, past the batch's end");
        }
        long end = position + length;
        readByte(index, "attributes");
        long timestampDelta = varlong(index);
        minTimestampDelta = Math.min(minTimestampDelta, timestampDelta);
        maxTimestampDelta = Math.max(maxTimestampDelta, timestampDelta);
        int offsetDelta = varint(index, "offset delta");
        if (offsetDelta != index) {
            throw invalid("record " + index + " of the batch has offset delta " + offsetDelta);
        }
        keyless |= !field(index, end, "key", true);
        field(index, end, "value", true);
        int headers = varint(index, "header count");
        if (headers < 0 || headers > end - position) {
            throw invalid("record " + index + " of the batch claims " + headers + " headers");
        }
        for (int h = 0; h < headers; h++) {
            field(index, end, "header key", false);
            field(index, end, "header value", true);
        }
        if (position != end) {
            throw invalid("record " + index + " of the batch is " + (position > end ? "overrun" : "not filled")
                    + " by its fields");
        }
    }

    /**
     * Skips a length-prefixed field of record {@code index}, which ends at {@code end}; -1 (null) if nullable.
     *
     * @return false if it is null
     */
    private boolean field(int index, long end, String name, boolean nullable) throws IOException {
        int length = varint(index, name + " length");
        if (length == -1 && nullable) {
            return false;
        }
        if (length < 0 || length > end - position) {
            throw invalid("the " + name + " of record " + index + " of the batch claims " + length + " bytes");
        }
        if (!input.skip(length)) {
            throw invalid("the batch ends inside the " + name + " of record " + index);
        }
        position += length;
        return true;
    }

    private int readByte(int index, String name) throws IOException {
        int b = input.read();
        if (b < 0) {
            throw invalid("the batch ends inside the " + name + " of record " + index);
        }
        position++;
        return b;
    }

    /** Kafka's zig-zag varint (at most 5 bytes). */
    private int varint(int index, String name) throws IOException {
        int value = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            int b = readByte(index, name);
            value |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return (value >>> 1) ^ -(value & 1);
            }
        }
        throw invalid("the " + name + " of record " + index + " of the batch is not a varint");
    }

    /** Kafka's zig-zag varlong (at most 10 bytes): a record's timestamp delta. */
    private long varlong(int index) throws IOException {
        long value = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            int b = readByte(index, "timestamp delta");
            value |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return (value >>> 1) ^ -(value & 1);
            }
        }
        throw invalid("the timestamp delta of record " + index + " of the batch is not a varlong");
    }

    private static BatchRefusedException invalid(String message) {
        return new BatchRefusedException(Errors.INVALID_RECORD, message);
    }
}
