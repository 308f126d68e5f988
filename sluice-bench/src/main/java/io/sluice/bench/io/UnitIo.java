package io.sluice.bench.io;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Moves a file's bytes in fixed-size units, through a mapping or through {@code FileChannel} calls, and stops
 * early at a deadline so that the slowest cases (one system call per byte) can be extrapolated instead of
 * waited for. Each method returns the bytes it moved. Not thread-safe: one caller per buffer.
 */
public final class UnitIo {

    /** How the deadline is checked: after about this many bytes, so the clock is not read per byte. */
    private static final long CHECK_BYTES = 1 << 20;

    private UnitIo() {
    }

    /** A point in {@link System#nanoTime()} after which a loop stops; {@link #NONE} never stops it. */
    public record Deadline(long nanoTime) {
        /** No deadline. */
        public static final Deadline NONE = new Deadline(Long.MAX_VALUE);

        /** @return a deadline {@code seconds} from now */
        public static Deadline in(double seconds) {
            return new Deadline(System.nanoTime() + (long) (seconds * 1e9));
        }

        boolean passed() {
            return nanoTime != Long.MAX_VALUE && System.nanoTime() - nanoTime > 0;
        }
    }

    /** Copies {@code source} (one unit) into {@code mapping} unit after unit, from offset 0 to its end. */
    public static long mappedWrite(MemorySegment mapping, MemorySegment source, Deadline deadline) {
        long size = mapping.byteSize();
        long unit = source.byteSize();
        long every = Math.max(1, CHECK_BYTES / unit);
        long position = 0;
        long count = 0;
        if (unit == 1) {
            byte value = source.get(ValueLayout.JAVA_BYTE, 0);
            for (; position < size; position++) {
                mapping.set(ValueLayout.JAVA_BYTE, position, value);
                if (++count % every == 0 && deadline.passed()) {
                    return position + 1;
                }
            }
            return position;
        }
        while (position < size) {
            long length = Math.min(unit, size - position);
            MemorySegment.copy(source, 0, mapping, position, length);
            position += length;
            if (++count % every == 0 && deadline.passed()) {
                break;
            }
        }
        return position;
    }

    /** Copies {@code mapping} into {@code target} (one unit) unit after unit; returns bytes read. */
    public static long mappedRead(MemorySegment mapping, MemorySegment target, Deadline deadline) {
        long size = mapping.byteSize();
        long unit = target.byteSize();
        long every = Math.max(1, CHECK_BYTES / unit);
        long position = 0;
        long count = 0;
        if (unit == 1) {
            byte sink = 0;
            for (; position < size; position++) {
                sink ^= mapping.get(ValueLayout.JAVA_BYTE, position);
                if (++count % every == 0 && deadline.passed()) {
                    position++;
                    break;
                }
            }
            // Stored so the loads cannot be optimised away.
            target.set(ValueLayout.JAVA_BYTE, 0, sink);
            return position;
        }
        while (position < size) {
            long length = Math.min(unit, size - position);
            MemorySegment.copy(mapping, position, target, 0, length);
            position += length;
            if (++count % every == 0 && deadline.passed()) {
                break;
            }
        }
        return position;
    }

    /**
     * Writes {@code source} (one unit; direct or heap) at positions 0, unit, 2 x unit ... up to {@code size},
     * one positional write call per unit.
     */
    public static long channelWrite(FileChannel channel, ByteBuffer source, long size, Deadline deadline)
            throws IOException {
        int unit = source.capacity();
        long every = Math.max(1, CHECK_BYTES / unit);
        long position = 0;
        long count = 0;
        while (position < size) {
            source.clear().limit((int) Math.min(unit, size - position));
            while (source.hasRemaining()) {
                position += channel.write(source, position);
            }
            if (++count % every == 0 && deadline.passed()) {
                break;
            }
        }
        return position;
    }

    /** Reads the file into {@code target} (one unit) unit after unit, one positional read call per unit. */
    public static long channelRead(FileChannel channel, ByteBuffer target, long size, Deadline deadline)
            throws IOException {
        int unit = target.capacity();
        long every = Math.max(1, CHECK_BYTES / unit);
        long position = 0;
        long count = 0;
        while (position < size) {
            target.clear().limit((int) Math.min(unit, size - position));
            while (target.hasRemaining()) {
                int read = channel.read(target, position);
                if (read < 0) {
                    throw new IOException("file ended at " + position + " of " + size);
                }
                position += read;
            }
            if (++count % every == 0 && deadline.passed()) {
                break;
            }
        }
        return position;
    }
}
