package io.sluice.store.internal.io;

import io.sluice.store.io.StoreIOException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Linux calls the JDK does not offer, made through FFM: {@code fallocate(2)}, {@code madvise(2)}, {@code
 * mlock(2)}/{@code munlock(2)} and {@code sync_file_range(2)}.
 *
 * <p>Every call degrades instead of failing where the call is missing (another OS, a filesystem without
 * support, no permission): it returns false and logs once, and the caller takes its fallback. Only errors
 * that mean something to the caller (ENOSPC) become exceptions. Thread-safe.
 */
// "restricted": linking native functions is what this class is for; the launchers pass
// --enable-native-access so the JVM does not warn at run time either.
@SuppressWarnings("restricted")
public final class NativeIO {

    private static final Logger LOG = LoggerFactory.getLogger(NativeIO.class);

    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int ENOSPC = 28;
    private static final int FALLOC_FL_KEEP_SIZE = 0x01;
    private static final int FALLOC_FL_ZERO_RANGE = 0x10;
    /** {@code MADV_WILLNEED}: read ahead the range. */
    public static final int MADV_WILLNEED = 3;
    /** {@code MADV_SEQUENTIAL}: aggressive read-ahead, early reclaim behind. */
    public static final int MADV_SEQUENTIAL = 2;
    /** {@code MADV_POPULATE_READ} (Linux 5.14): fault the range in readable, without dirtying it. */
    public static final int MADV_POPULATE_READ = 22;
    /** {@code MADV_POPULATE_WRITE} (Linux 5.14): fault the range in writable (which dirties shared file pages). */
    public static final int MADV_POPULATE_WRITE = 23;
    /** {@code SYNC_FILE_RANGE_WRITE}: start writeback of the range's dirty pages, do not wait. */
    public static final int SYNC_FILE_RANGE_WRITE = 2;

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle MADVISE;
    private static final MethodHandle STRERROR;
    private static final MethodHandle MLOCK;
    private static final MethodHandle MUNLOCK;
    private static final MethodHandle SYNC_FILE_RANGE;
    private static final MethodHandle MINCORE;

    private static final AtomicBoolean FALLOCATE_WARNED = new AtomicBoolean();
    private static final AtomicBoolean ZERO_RANGE_WARNED = new AtomicBoolean();
    private static final AtomicBoolean MADVISE_WARNED = new AtomicBoolean();
    private static final AtomicBoolean MLOCK_WARNED = new AtomicBoolean();
    private static final AtomicBoolean SYNC_FILE_RANGE_WARNED = new AtomicBoolean();

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle fallocate = null;
        MethodHandle madvise = null;
        MethodHandle strerror = null;
        MethodHandle mlock = null;
        MethodHandle munlock = null;
        MethodHandle syncFileRange = null;
        MethodHandle mincore = null;
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            Linker.Option errno = Linker.Option.captureCallState("errno");
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                    errno, Linker.Option.firstVariadicArg(2));
            close = linker.downcallHandle(libc.find("close").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            fallocate = linker.downcallHandle(libc.find("fallocate").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), errno);
            madvise = linker.downcallHandle(libc.find("madvise").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT), errno);
            strerror = linker.downcallHandle(libc.find("strerror").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            FunctionDescriptor range = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_LONG);
            mlock = linker.downcallHandle(libc.find("mlock").orElseThrow(), range, errno);
            munlock = linker.downcallHandle(libc.find("munlock").orElseThrow(), range, errno);
            syncFileRange = linker.downcallHandle(libc.find("sync_file_range").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT), errno);
            mincore = linker.downcallHandle(libc.find("mincore").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS), errno);
        } catch (RuntimeException | LinkageError e) {
            LOG.warn("native calls unavailable ({}); using portable fallbacks", e.toString());
        }
        OPEN = open;
        CLOSE = close;
        FALLOCATE = fallocate;
        MADVISE = madvise;
        STRERROR = strerror;
        MLOCK = mlock;
        MUNLOCK = munlock;
        SYNC_FILE_RANGE = syncFileRange;
        MINCORE = mincore;
    }

    /**
     * Tells whether every page of a page-aligned mapped range is resident in memory ({@code mincore}).
     *
     * @return true if all are, false if any is not
     * @throws UnsupportedOperationException where the call is unavailable
     */
    public static boolean isResident(MemorySegment mapping) {
        if (MINCORE == null) {
            throw new UnsupportedOperationException("mincore is unavailable");
        }
        long pages = (mapping.byteSize() + 4095) / 4096;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            MemorySegment vector = arena.allocate(Math.max(1, pages));
            int rc = (int) MINCORE.invokeExact(state, mapping, mapping.byteSize(), vector);
            if (rc != 0) {
                throw new IllegalStateException("mincore failed: " + strerror(errno(state)));
            }
            for (long page = 0; page < pages; page++) {
                if ((vector.get(ValueLayout.JAVA_BYTE, page) & 1) == 0) {
                    return false;
                }
            }
            return true;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    private NativeIO() {
    }

    /**
     * Reserves {@code size} bytes of blocks for the file with {@code fallocate(fd, 0, 0, size)}.
     *
     * @param path the file (it must exist)
     * @param size bytes to reserve from offset 0; the file grows to this size
     * @return true if done, false if fallocate is unavailable here (the caller should write zeros)
     * @throws IOException with "No space left on device" on ENOSPC, or another failure
     */
    public static boolean fallocate(Path path, long size) throws IOException {
        return fallocate(path, 0, 0, size, "reserving " + size + " bytes");
    }

    /**
     * Makes a range of the file read as zeros without writing it ({@code fallocate(FALLOC_FL_ZERO_RANGE |
     * FALLOC_FL_KEEP_SIZE)}): the filesystem marks the blocks unwritten.
     *
     * @return true if done, false where the call is unavailable or the filesystem refuses it (write zeros)
     * @throws IOException on ENOSPC or an I/O error
     */
    public static boolean zeroRange(Path path, long offset, long length) throws IOException {
        return fallocate(path, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, offset, length,
                "zeroing " + length + " bytes at " + offset);
    }

    private static boolean fallocate(Path path, int mode, long offset, long length, String what) throws IOException {
        if (FALLOCATE == null) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path.toString()), O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                throw new IOException("open " + path + ": " + strerror(errno(state)));
            }
            try {
                int rc = (int) FALLOCATE.invokeExact(state, fd, mode, offset, length);
                if (rc == 0) {
                    return true;
                }
                int err = errno(state);
                if (err == ENOSPC) {
                    throw new StoreIOException("No space left on device: fallocate " + path + ", " + what, ENOSPC);
                }
                AtomicBoolean warned = mode == 0 ? FALLOCATE_WARNED : ZERO_RANGE_WARNED;
                if (warned.compareAndSet(false, true)) {
                    LOG.warn("fallocate refused ({}) on {}, {}; writing zeros instead (warned once)", strerror(err),
                            path, what);
                }
                return false;
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
                assert ignored == 0 || ignored == -1;
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    /**
     * Gives the kernel advice on a mapped range.
     *
     * @param mapping the mapped range
     * @param advice one of the {@code MADV_*} constants
     * @return true if the kernel took it; false (logged once) where it did not
     */
    public static boolean madvise(MemorySegment mapping, int advice) {
        if (MADVISE == null || mapping.byteSize() == 0) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) MADVISE.invokeExact(state, mapping, mapping.byteSize(), advice);
            if (rc == 0) {
                return true;
            }
            if (MADVISE_WARNED.compareAndSet(false, true)) {
                LOG.warn("madvise({}) failed: {}; continuing without it", advice, strerror(errno(state)));
            }
            return false;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    /**
     * Locks a mapped range in memory ({@code mlock}), so the kernel never evicts it.
     *
     * @param mapping the range
     * @return true if locked; false (logged once) where not permitted (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) or
     *     not available
     */
    public static boolean mlock(MemorySegment mapping) {
        return lockCall(MLOCK, mapping, "mlock");
    }

    /** Unlocks a range locked with {@link #mlock}. @return true if done */
    public static boolean munlock(MemorySegment mapping) {
        return lockCall(MUNLOCK, mapping, "munlock");
    }

    private static boolean lockCall(MethodHandle call, MemorySegment mapping, String name) {
        if (call == null || mapping.byteSize() == 0) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) call.invokeExact(state, mapping, mapping.byteSize());
            if (rc == 0) {
                return true;
            }
            if (MLOCK_WARNED.compareAndSet(false, true)) {
                LOG.warn("{} of {} bytes failed: {}; continuing without locked memory", name, mapping.byteSize(),
                        strerror(errno(state)));
            }
            return false;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    /**
     * Opens a file read-only and returns its descriptor, for calls that need one ({@link #syncFileRange}).
     *
     * @return the descriptor, or -1 (logged once by the caller's call) if native calls are unavailable
     * @throws IOException if the file cannot be opened
     */
    public static int open(Path path) throws IOException {
        if (OPEN == null) {
            return -1;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(path.toString()), O_CLOEXEC);
            if (fd < 0) {
                throw new IOException("open " + path + ": " + strerror(errno(state)));
            }
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    /** Closes a descriptor from {@link #open(Path)}. */
    public static void close(int fd) {
        if (CLOSE == null || fd < 0) {
            return;
        }
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
            assert ignored == 0 || ignored == -1;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    /**
     * Starts writeback of a file range's dirty pages without waiting ({@code sync_file_range(fd, offset,
     * length, SYNC_FILE_RANGE_WRITE)}). It makes nothing durable; it only keeps dirty pages from piling up.
     *
     * @param fd a descriptor of the file (any descriptor works: the call acts on the file's page cache)
     * @return true if done; false (logged once) where the call is unavailable or the filesystem refuses it
     */
    public static boolean syncFileRange(int fd, long offset, long length) {
        if (SYNC_FILE_RANGE == null || fd < 0) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE_LAYOUT);
            int rc = (int) SYNC_FILE_RANGE.invokeExact(state, fd, offset, length, SYNC_FILE_RANGE_WRITE);
            if (rc == 0) {
                return true;
            }
            if (SYNC_FILE_RANGE_WARNED.compareAndSet(false, true)) {
                LOG.warn("sync_file_range failed: {}; leaving writeback to the kernel", strerror(errno(state)));
            }
            return false;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed", t);
        }
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static String strerror(int errno) {
        try {
            MemorySegment text = (MemorySegment) STRERROR.invokeExact(errno);
            return text.reinterpret(256).getString(0) + " (errno " + errno + ")";
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
