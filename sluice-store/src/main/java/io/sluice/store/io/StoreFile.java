package io.sluice.store.io;

import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;

/**
 * One open file of the store: every operation the store performs on a file goes through here, so a test
 * can replace it with one that fails (EIO, ENOSPC) on purpose. Implementations must be safe for one writer
 * and concurrent readers and forcers, as {@link FileChannel} is.
 */
public interface StoreFile extends Closeable {

    /** @return the file's path */
    Path path();

    /** @return the file's current size in bytes @throws IOException on an I/O error */
    long size() throws IOException;

    /**
     * Makes the file {@code size} bytes long with its blocks reserved, so writes (and mapped stores) into it
     * cannot fail for lack of space.
     *
     * @param size the size in bytes
     * @param zeroFill write zeros instead of asking the filesystem to reserve unwritten extents
     * @throws IOException on an I/O error; ENOSPC has the JDK's "No space left on device" message
     */
    void allocate(long size, boolean zeroFill) throws IOException;

    /**
     * Writes all of {@code source}'s remaining bytes at {@code position}.
     *
     * @param source bytes to write
     * @param position file offset
     * @throws IOException on an I/O error
     */
    void writeFully(ByteBuffer source, long position) throws IOException;

    /**
     * Writes whole blocks bypassing the page cache ({@code O_DIRECT}). {@code source}'s address, its length
     * and {@code position} must all be multiples of {@link io.sluice.store.StoreConfig#DIRECT_BLOCK_BYTES}.
     * Where the filesystem refuses {@code O_DIRECT}, the bytes are written through the page cache instead
     * (logged once); either way they then need {@link #force()} to be durable.
     *
     * @param source aligned bytes to write
     * @param position aligned file offset
     * @throws IOException on an I/O error
     */
    void writeDirect(MemorySegment source, long position) throws IOException;

    /**
     * What {@link #writeDirect} requires of its arguments.
     *
     * @throws IllegalArgumentException unless the source's address and size and the position are multiples of
     *     {@link io.sluice.store.StoreConfig#DIRECT_BLOCK_BYTES}
     */
    static void requireDirectAlignment(MemorySegment source, long position) {
        long block = io.sluice.store.StoreConfig.DIRECT_BLOCK_BYTES;
        if (source.address() % block != 0 || source.byteSize() % block != 0 || position % block != 0) {
            throw new IllegalArgumentException("direct write of " + source.byteSize() + " bytes at " + position
                    + " from address " + source.address() + " is not aligned to " + block + " bytes");
        }
    }

    /**
     * Reads up to {@code target}'s remaining bytes from {@code position}.
     *
     * @param target where to put them
     * @param position file offset
     * @return bytes read, or -1 at end of file
     * @throws IOException on an I/O error
     */
    int read(ByteBuffer target, long position) throws IOException;

    /**
     * Sends {@code count} bytes from {@code position} to {@code target} without copying them through the
     * Java heap ({@link FileChannel#transferTo}: {@code sendfile} to a socket or pipe). Loops until all are
     * sent, since one call moves at most 2 GiB, and a call may move fewer bytes than asked.
     *
     * @param position file offset
     * @param count bytes to send
     * @param target a blocking channel
     * @throws IOException on an I/O error, or if the file ends first
     */
    void transferTo(long position, long count, WritableByteChannel target) throws IOException;

    /**
     * Starts writeback of the range's dirty pages without waiting for it ({@code sync_file_range} with
     * {@code SYNC_FILE_RANGE_WRITE}). Makes nothing durable: only {@link #force()} does.
     *
     * @return false where the call is unavailable (logged once); the kernel then writes back on its own
     * @throws IOException if the file cannot be opened for the call
     */
    boolean startWriteback(long offset, long length) throws IOException;

    /**
     * Forces the file's written data and its size to the device (fdatasync): until this returns, a power cut
     * may lose, keep or tear any of them (see {@link FileIO}'s durability contract).
     *
     * @throws IOException on an I/O error; the data is then of unknown durability and must never be retried into
     *     a success
     */
    void force() throws IOException;

    /**
     * Makes the range read as zeros, keeping the file's size (durable once forced). Used to erase what lies
     * past a cut, so old bytes can never come back. Cheap where the filesystem can do it without writing
     * ({@code fallocate(FALLOC_FL_ZERO_RANGE)}); otherwise zeros are written.
     *
     * @param offset file offset
     * @param length bytes
     * @throws IOException on an I/O error
     */
    void zeroRange(long offset, long length) throws IOException;

    /**
     * Where data may lie at or after {@code offset} ({@code lseek(SEEK_DATA)}): every byte from {@code offset} to
     * the returned position reads as zeros. Lets recovery skip erasing what is already blank, without reading it.
     * A file system that cannot tell answers {@code offset} itself.
     *
     * @param offset file offset
     * @return the first position at or after {@code offset} that may hold a non-zero byte, or -1 if none before
     *     the end of the file
     * @throws IOException on an I/O error
     */
    default long nextData(long offset) throws IOException {
        return offset < size() ? offset : -1;
    }

    /**
     * Maps a region of the file.
     *
     * @param mode read-only or read-write
     * @param offset file offset
     * @param size bytes to map
     * @param arena the arena whose closing unmaps it
     * @return the mapping
     * @throws IOException on an I/O error
     */
    MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException;

    /** @param size the new size @throws IOException on an I/O error */
    void truncate(long size) throws IOException;
}
